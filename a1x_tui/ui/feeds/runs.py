"""The runs the start screen lists: run directories under the known roots, with their state.

Roots: ``<workspace>/runs`` of the default workspace (``a1x-tui run`` creates runs there,
docs/supervisor.md) and the demo workspace's ``runs``. A run's state is read from ``state.json``;
its supervisor is alive when the pid in ``supervisor.pid`` is (the run's lock is not touched: a
probe of it, every few seconds, could race a supervisor that is starting).
"""

from __future__ import annotations

import os
from pathlib import Path

from a1x_tui.ui.messages import RunSummary

MAX_RUNS = 200


def default_roots() -> list[Path]:
    from a1x_supervisor.spec import default_paths
    from a1x_tui.demo.setup import default_root

    workspace = Path(os.environ.get("A1X_TUI_WORKSPACE") or default_paths()["workspace"]).expanduser()
    return [workspace / "runs", default_root() / "runs"]


def _alive(run_dir: Path) -> bool:
    from a1x_supervisor.launch import pid_alive
    from a1x_supervisor.recovery import read_pid
    from a1x_supervisor.rundir import RunDir

    pid = read_pid(RunDir(run_dir).pid_path)
    return pid is not None and pid_alive(pid)


def list_runs(roots: list[Path]) -> list[RunSummary]:
    """Newest first; a folder without ``run.toml`` is not a run."""
    from a1x_supervisor.state import load_state

    found: list[RunSummary] = []
    for root in roots:
        try:
            entries = [p for p in root.iterdir() if (p / "run.toml").is_file()]
        except OSError:
            continue
        for run_dir in entries:
            state = load_state(run_dir / "state.json")
            live = _alive(run_dir)
            if state is None:
                found.append(RunSummary(run_dir, "starting" if live else "unknown", "no state.json", live=live))
                continue
            found.append(
                RunSummary(
                    run_dir=run_dir,
                    status=state.status,
                    message=state.message,
                    current_stage=state.current_stage,
                    updated_at=state.updated_at,
                    live=live,
                )
            )
    found.sort(key=lambda r: r.updated_at or "", reverse=True)
    return found[:MAX_RUNS]
