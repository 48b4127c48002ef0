"""What a dashboard watches: a run directory of ours (with control), or any Cosmos-RL log directory.

A run directory of ours holds ``run.toml`` (docs/supervisor.md, "The run directory"); its
supervisor answers on ``supervisor.sock`` and its training TOML is ``config/train.toml``. Anything
else the log parser recognises (a ``--log-dir``, one ``logs_<ts>``, a replica folder, a SLURM job,
one log file) is watched read-only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from a1x_tui.remote.session import RemoteRun


class TargetError(Exception):
    """The path cannot be watched; ``str()`` is one line naming it and the problem."""


# Whose GPUs the panel shows when the run directory holds no samples (``<run>/gpu/``): this machine's
# ("local": a local run of ours), this machine's while the logs say the run is running ("if-running": a
# log folder attached read-only, live here or recorded elsewhere), or none (a demo, a cluster job: their
# samples come as files, and until then ``gpu_note`` says why there are none).
GpuSource = Literal["local", "if-running", "files"]


@dataclass(frozen=True, slots=True)
class RunTarget:
    follow: Path  # what the log follower follows
    run_dir: Path | None  # our run directory: state, socket, stage logs; None when attached read-only
    config: Path | None  # the TOML fixes are applied to
    note: str | None = None
    gpus: GpuSource | None = None  # None: "local" for a run of ours, "if-running" for a log folder
    gpu_note: str | None = None  # gpus == "files": what the panel says while no sample is there
    remote: RemoteRun | None = None  # attach HOST:PATH: the paths above are the far side's

    @property
    def gpu_source(self) -> GpuSource:
        return self.gpus or ("local" if self.run_dir is not None else "if-running")

    @property
    def where(self) -> str:
        """How the user names it: ``RUN`` or ``HOST:RUN``."""
        path = str(self.run_dir or self.follow)
        return f"{self.remote.host}:{path}" if self.remote is not None else path

    @property
    def controllable(self) -> bool:
        return self.run_dir is not None

    @property
    def name(self) -> str:
        return (self.run_dir or self.follow).name


def _our_run_dir(path: Path) -> Path | None:
    for candidate in (path, *list(path.parents)[:3]):
        if (candidate / "run.toml").is_file() and any(
            (candidate / name).exists() for name in ("state.json", "supervisor.lock", "stages", "logs")
        ):
            return candidate
    return None


def resolve_target(path: Path, config: Path | None = None) -> RunTarget:
    """The target for ``a1x-tui attach PATH [--config TOML]``. Raises ``TargetError``."""
    path = path.expanduser()
    if not path.exists():
        raise TargetError(f"{path}: no such file or folder")
    if config is not None and not config.expanduser().is_file():
        raise TargetError(f"{config}: --config is not a file")
    path = path.resolve()
    run_dir = _our_run_dir(path) if path.is_dir() else None
    if run_dir is None:
        return RunTarget(path, None, config.expanduser().resolve() if config else None)
    from a1x_supervisor.rundir import RunDir
    from a1x_supervisor.spec import RunSpec, SpecError, load_spec

    layout = RunDir(run_dir)
    follow, note = run_dir, None
    spec: RunSpec | None = None
    try:
        spec = load_spec(layout.spec_path)
    except SpecError as exc:
        note = f"run.toml not read ({exc}); following the run folder"
    else:
        log_dir = layout.log_dir(spec)
        if spec.closed_loop:  # the newest AlpaGym run folder there, read closed-loop
            follow, note = log_dir, f"AlpaGym run folders are in {log_dir}; stage logs are not shown"
        elif log_dir.resolve() != (run_dir / "logs").resolve():
            follow, note = log_dir, f"Cosmos-RL logs are in {log_dir}; stage logs are not shown"
    toml = config.expanduser().resolve() if config else layout.train_toml
    gpus: GpuSource | None = None
    gpu_note = None
    if spec is not None and spec.pipeline.startswith("demo"):  # a1x_tui.demo.pipeline: no GPU of this machine
        gpus = "files"
        gpu_note = (
            "the demo's simulated GPUs appear when its train stage starts (no GPU of this machine is used)"
            if spec.pipeline == "demo"
            else "the closed-loop demo simulates no GPUs (no GPU of this machine is used)"
        )
    elif spec is not None and spec.on_slurm:
        gpus, gpu_note = "files", "the job's nodes write their GPU samples once it runs (gpu-agent on every node)"
    return RunTarget(follow, run_dir, toml, note, gpus=gpus, gpu_note=gpu_note)


def remote_target(remote: RemoteRun) -> RunTarget:
    """The target of ``attach HOST:PATH``, as the far side resolved it (its ``target`` line)."""
    t = remote.target

    def far(key: str) -> Path | None:
        value = t.get(key)
        return Path(PurePosixPath(str(value))) if value else None

    follow = far("follow") or Path(remote.where.path)
    return RunTarget(follow, far("run_dir"), far("config"), t.get("note"), remote=remote, gpus="files",
                     gpu_note="the far side's GPU samples, where its supervisor records them")
