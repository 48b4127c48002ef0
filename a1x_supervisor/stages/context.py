"""What every stage of one run reads: its spec, its run directory, the outputs stages share, the venv."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping

from a1x_supervisor.cosmos_logs import expected_ranks
from a1x_supervisor.hf_errors import HfRetry
from a1x_supervisor.rundir import RunDir
from a1x_supervisor.spec import RunSpec
from a1x_supervisor.stage import Command
from a1x_supervisor.stagelog import read_since


class StageContext:
    """One run's stages share it. ``outputs`` is shared state kept in ``state.json``: the checkpoint
    the export stage chose and the folder it exported to."""

    def __init__(self, spec: RunSpec, rundir: RunDir, outputs: MutableMapping[str, str]) -> None:
        self.spec = spec
        self.rundir = rundir
        self.outputs = outputs
        self.paths = spec.paths
        self.workspace = spec.paths.workspace
        self.venv = spec.paths.venv_dir
        self.venv_bin = self.venv / "bin"
        # commands run with the venv active (docs/reference/alpamayo-recipe.md §2.1)
        self.python = str(self.venv_bin / "python")
        self.venv_env = {"VIRTUAL_ENV": str(self.venv)}
        self.log_dir = rundir.log_dir(spec)

    def stage_log_text(self, name: str) -> str:
        return read_since(self.rundir.stage_log(name), 0)

    def ranks(self) -> int | None:
        """How many ranks write a policy checkpoint, from the rendered TOML (None before configure)."""
        return expected_ranks(self.rundir.train_toml)

    def venv_command(
        self,
        argv: tuple[str, ...],
        *,
        label: str,
        env: Mapping[str, str] | None = None,
        secrets: tuple[str, ...] = (),
    ) -> Command:
        """A command run in the workspace with the venv's ``bin/`` first on ``PATH``."""
        return Command(
            argv=argv,
            cwd=self.workspace,
            env=self.venv_env if env is None else env,
            path_prepend=(str(self.venv_bin),),
            secrets=secrets,
            label=label,
        )

    def hf_retry(self, stage: str, *, rate_limits: bool = True) -> HfRetry:
        """The Hub retry policy with this run's ``hf_retries`` and ``hf_backoff_s``."""
        return HfRetry(
            run_dir=str(self.rundir.run_dir),
            stage=stage,
            retries=self.spec.supervisor.hf_retries,
            backoff_s=self.spec.supervisor.hf_backoff_s,
            retry_rate_limits=rate_limits,
        )
