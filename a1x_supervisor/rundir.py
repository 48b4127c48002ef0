"""Where everything of one run lives, under its run directory.

::

    <run>/run.toml            the run spec (absolute paths, no secrets)
    <run>/state.json          the supervisor's state, rewritten atomically (temp file + os.replace)
    <run>/events.jsonl        one JSON object per event, appended
    <run>/findings.jsonl      diagnostics findings raised (and cleared) during the run
    <run>/supervisor.sock     the daemon's Unix socket (mode 0600), JSON lines
    <run>/supervisor.pid      the daemon's pid
    <run>/supervisor.lock     held (fcntl.flock) by the daemon that owns the run
    <run>/supervisor.log      the daemon's own stdout/stderr
    <run>/stages/<stage>.log  each stage's output, one timestamped line per line
    <run>/config/             the training TOML, the entry-script copy, configure.json
    <run>/evaluate/           evaluation.json: minADE per clip of the exported and the base model
    <run>/logs/               cosmos-rl --log-dir (unless the spec names another)
    <run>/alpagym/            pipeline = "alpagym": the AlpaGym host's run_root, one run folder per attempt
    <run>/slurm/              compute = "cluster": the Slurm job's layout (part_<N>/run_<M>/, latest_run);
                              a link to dispatch_job.py's run directory for method = "cosmos-dispatch"
    <run>/supervisor/         pids.json ({"pid": "label"} for the GPU agent), gpu-agent.log
    <run>/gpu/                the GPU agent's samples, <hostname>.jsonl
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from a1x_supervisor.runfiles import RunDirError, check_owner
from a1x_supervisor.spec import RunSpec

__all__ = ["RunDir", "RunDirError", "check_owner", "make_private", "trusted_run"]


def make_private(run_dir: Path) -> None:
    """Give the run directory mode 0700, as docs/supervisor.md says: it holds the run's commands,
    logs and socket. A directory of another user that others can read is refused."""
    st = run_dir.stat()
    mode = stat.S_IMODE(st.st_mode)
    if not mode & 0o077 and mode & 0o700 == 0o700:
        return
    try:
        os.chmod(run_dir, 0o700)
    except OSError as exc:
        raise RunDirError(
            f"{run_dir}: mode {mode:04o}, readable by others, and it cannot be made 0700 ({exc.strerror or exc}): "
            "a run directory must be private; use one of your own"
        ) from None


@dataclass(frozen=True, slots=True)
class RunDir:
    """Where each file of one supervised run lives under ``run_dir`` (the table above). Not to be
    confused with ``a1x_diagnostics.parsing.RunLayout``: the log files a reader found for a run."""

    run_dir: Path

    @property
    def spec_path(self) -> Path:
        return self.run_dir / "run.toml"

    @property
    def state_path(self) -> Path:
        return self.run_dir / "state.json"

    @property
    def events_path(self) -> Path:
        return self.run_dir / "events.jsonl"

    @property
    def findings_path(self) -> Path:
        return self.run_dir / "findings.jsonl"

    @property
    def socket_path(self) -> Path:
        return self.run_dir / "supervisor.sock"

    @property
    def pid_path(self) -> Path:
        return self.run_dir / "supervisor.pid"

    @property
    def lock_path(self) -> Path:
        return self.run_dir / "supervisor.lock"

    @property
    def daemon_log(self) -> Path:
        return self.run_dir / "supervisor.log"

    @property
    def stages_dir(self) -> Path:
        return self.run_dir / "stages"

    def stage_log(self, stage: str) -> Path:
        return self.stages_dir / f"{stage}.log"

    @property
    def config_dir(self) -> Path:
        return self.run_dir / "config"

    @property
    def train_toml(self) -> Path:
        return self.config_dir / "train.toml"

    @property
    def configure_record(self) -> Path:
        return self.config_dir / "configure.json"

    @property
    def evaluation_path(self) -> Path:
        return self.run_dir / "evaluate" / "evaluation.json"

    def log_dir(self, spec: RunSpec) -> Path:
        """Where the training logs are: the Slurm layout for cluster runs, the AlpaGym run folders of a
        closed-loop run, else cosmos-rl's --log-dir."""
        if spec.on_slurm:
            return self.slurm_dir
        if spec.closed_loop:  # the AlpaGym run folders: the closed-loop reader picks the newest
            return self.closed_loop_dir
        return spec.paths.log_dir if spec.paths.log_dir is not None else self.run_dir / "logs"

    @property
    def closed_loop_dir(self) -> Path:
        return self.run_dir / "alpagym"

    @property
    def slurm_dir(self) -> Path:
        return self.run_dir / "slurm"

    @property
    def helper_dir(self) -> Path:
        """``<run>/supervisor/``: files the supervisor keeps for its helper processes."""
        return self.run_dir / "supervisor"

    @property
    def pids_path(self) -> Path:
        return self.helper_dir / "pids.json"

    @property
    def gpu_agent_log(self) -> Path:
        return self.helper_dir / "gpu-agent.log"

    def is_run_dir(self) -> bool:
        return self.spec_path.is_file()


def trusted_run(path: Path) -> RunDir:
    """The run directory at ``path`` for a command that acts on it (stop, restart, status, attach):
    ``RunDirError`` with one line when it is not a run directory, or not one this user may trust
    (``runfiles.check_owner``)."""
    rundir = RunDir(path.resolve())
    try:
        found = rundir.is_run_dir() or rundir.state_path.is_file()
    except OSError as exc:  # a folder we may not read (mode 000, another user's)
        check_owner(rundir.run_dir)
        raise RunDirError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if not found:
        raise RunDirError(f"{path}: not a run directory (no run.toml or state.json)")
    check_owner(rundir.run_dir)
    return rundir
