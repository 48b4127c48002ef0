"""The runs the start screen lists: run folders only, newest first, with their state and liveness."""

from __future__ import annotations

import json
import os
from pathlib import Path

from a1x_tui.ui.feeds.runs import list_runs


def make_run(root: Path, name: str, state: dict[str, object] | None, pid: int | None = None) -> Path:
    run = root / name
    run.mkdir(parents=True)
    (run / "run.toml").write_text("# spec\n", encoding="utf-8")
    if state is not None:
        base = {"run_id": name, "run_dir": str(run)}
        (run / "state.json").write_text(json.dumps({**base, **state}), encoding="utf-8")
    if pid is not None:
        (run / "supervisor.pid").write_text(f"{pid}\n", encoding="utf-8")
    return run


def test_runs_are_listed_newest_first_with_their_state(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    make_run(root, "old", {"status": "failed", "message": "train failed", "updated_at": "2026-01-01T00:00:00+00:00"})
    make_run(
        root,
        "new",
        {"status": "running", "current_stage": "train", "updated_at": "2026-02-01T00:00:00+00:00"},
        pid=os.getpid(),
    )
    make_run(root, "empty", None)
    (root / "not-a-run").mkdir()
    runs = list_runs([root, tmp_path / "missing"])
    assert [r.run_dir.name for r in runs][:2] == ["new", "old"]
    by_name = {r.run_dir.name: r for r in runs}
    assert by_name["new"].live and by_name["new"].current_stage == "train"
    assert not by_name["old"].live and by_name["old"].message == "train failed"
    assert by_name["empty"].status == "unknown"
    assert "not-a-run" not in by_name
