"""What the alpagym stages share: the ``uv run`` commands of the AlpaGym checkout, its venv, and the
AlpaGym run folders the host CLI makes under this run (docs/reference/alpagym.md §3.1)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from a1x_supervisor.rundir import RunDir
from a1x_supervisor.spec import AlpaGymSpec, RunSpec
from a1x_supervisor.stage import Command, StageError
from a1x_supervisor.stages.context import StageContext

ALPAMAYO_1_5 = "nvidia/Alpamayo-1.5-10B"  # the only model AlpaGym trains (docs/reference/alpagym.md §2.3)
LOCAL_BIN = str(Path("~/.local/bin").expanduser())  # where uv's installer puts uv


def settings(spec: RunSpec) -> AlpaGymSpec:
    if spec.alpagym is None:  # the spec's validator makes this impossible for pipeline = "alpagym"
        raise StageError('the run spec has no [alpagym] section (pipeline = "alpagym" needs one)')
    return spec.alpagym


def runs_root(rundir: RunDir) -> Path:
    """``<run>/alpagym``: the host CLI's ``run_root``, so each run folder there is one of this run's attempts."""
    return rundir.closed_loop_dir


def run_folders(rundir: RunDir) -> list[Path]:
    """The AlpaGym run folders of this run, oldest first (``<YYYYmmddTHHMMSSZ>-<hex>`` sorts by time)."""
    from a1x_diagnostics.parsing.alpagym_layout import is_run_folder

    try:
        found = [p for p in runs_root(rundir).iterdir() if p.is_dir() and is_run_folder(p)]
    except OSError:
        return []
    return sorted(found, key=lambda p: p.name)


def latest_run(rundir: RunDir) -> Path | None:
    folders = run_folders(rundir)
    return folders[-1] if folders else None


def venv_python(ctx: StageContext) -> Path:
    """The checkout's own venv, which ``uv sync`` makes (``<checkout>/.venv``)."""
    return ctx.workspace / ".venv" / "bin" / "python"


def uv_run(
    ctx: StageContext,
    *args: str,
    label: str,
    env: Mapping[str, str] | None = None,
    secrets: tuple[str, ...] = (),
) -> Command:
    """``uv run --no-sync ARGS`` in the checkout, as AlpaGym's onboarding runs every step (docs/reference/
    docs/reference/alpagym.md §1.1): the venv ``env`` synced once, never re-resolved per command."""
    return Command(
        argv=("uv", "run", "--no-sync", *args),
        cwd=ctx.workspace,
        env=dict(env or {}),
        path_prepend=(LOCAL_BIN,),
        secrets=secrets,
        label=label,
    )
