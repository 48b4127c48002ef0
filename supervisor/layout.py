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
    <run>/logs/               cosmos-rl --log-dir (unless the spec names another)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from supervisor.spec import RunSpec


@dataclass(frozen=True, slots=True)
class RunLayout:
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

    def log_dir(self, spec: RunSpec) -> Path:
        return spec.paths.log_dir if spec.paths.log_dir is not None else self.run_dir / "logs"

    def is_run_dir(self) -> bool:
        return self.spec_path.is_file()
