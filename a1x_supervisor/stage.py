"""What a stage runs, kept apart from how it runs (``a1x_supervisor.executor``).

A ``StageSpec`` names the commands of one pipeline stage, the environment they need, how to tell
from the filesystem that the stage's outputs are there (``verify``), and how to read progress from
its output. The supervisor calls ``verify`` before running a stage (resume: outputs that verify are
not produced again) and after it: an exit code alone never makes a stage succeed
(docs/reference/alpamayo-recipe.md §5: "download_pai.py can exit 0 without downloading").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

STAGE_NAMES: tuple[str, ...] = (
    "env",
    "convert",
    "download",
    "curate",
    "grader",
    "p2p",
    "configure",
    "train",
    "export",
    "verify",
    "evaluate",
)
"""Every stage in pipeline order. ``curate`` is for motion data, ``grader`` for a reward that grades the
reasoning; ``p2p`` (the NCCL peer-to-peer check) is the alpagym pipeline's only (docs/supervisor.md "The
alpagym pipeline"), ``evaluate`` the Alpamayo pipeline's (docs/supervisor.md "Evaluate")."""


class StageError(Exception):
    """A stage cannot start or cannot be judged; ``str(exc)`` is the one line to show.

    ``findings`` (``Finding.model_dump(mode="json")`` dicts) are the reasons as diagnostics
    findings, e.g. a Slurm submission refused by the node plan; the supervisor records them in
    ``findings.jsonl``.
    """

    def __init__(self, message: str, *, findings: Sequence[Mapping[str, Any]] = ()) -> None:
        super().__init__(message)
        self.findings = [dict(f) for f in findings]


@dataclass(frozen=True, slots=True)
class VerifyResult:
    """The verdict of a verification, with the one line that explains it."""

    ok: bool
    reason: str
    data: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def passed(cls, reason: str, **data: Any) -> VerifyResult:
        return cls(True, reason, data)

    @classmethod
    def failed(cls, reason: str, **data: Any) -> VerifyResult:
        return cls(False, reason, data)


@dataclass(frozen=True, slots=True, kw_only=True)
class Command:
    """One program a stage runs. Secrets are named here and read only when the command starts."""

    argv: tuple[str, ...]
    cwd: Path
    env: Mapping[str, str] = field(default_factory=dict)  # additions; never a secret
    path_prepend: tuple[str, ...] = ()  # PATH entries put in front (a venv's bin/)
    secrets: tuple[str, ...] = ()  # names from a1x_supervisor.secrets.SECRET_NAMES
    label: str = ""
    executor: Literal["local", "slurm"] = "local"  # slurm: argv submits a job (SlurmExecutor follows it)
    findings: tuple[Mapping[str, Any], ...] = ()  # warnings found while preparing it, for findings.jsonl

    def record(self) -> dict[str, Any]:
        """What state.json keeps about the command: no secret values, by construction."""
        return {
            "label": self.label,
            "argv": list(self.argv),
            "cwd": str(self.cwd),
            "env": dict(self.env),
            "path_prepend": list(self.path_prepend),
            "secrets": list(self.secrets),
            "executor": self.executor,
        }


@dataclass(frozen=True, slots=True)
class Progress:
    """How far a stage is. ``current``/``total`` may be unknown; ``text`` is always a short line."""

    text: str
    current: float | None = None
    total: float | None = None
    unit: str = ""

    @property
    def percent(self) -> float | None:
        if self.current is None or not self.total:
            return None
        return max(0.0, min(100.0, 100.0 * self.current / self.total))

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "current": self.current,
            "total": self.total,
            "unit": self.unit,
            "percent": self.percent,
        }


class ProgressParser(Protocol):
    """Reads a stage's output lines (split on ``\\r`` and ``\\n``); returns new progress or None."""

    def feed(self, line: str) -> Progress | None: ...


@dataclass(frozen=True, slots=True)
class AfterFailure:
    """What a stage's retry policy makes of a failed attempt: run the stage again in ``retry_in_s``
    seconds (``reason`` says so meanwhile), or, with ``retry_in_s`` None, fail with ``reason``."""

    reason: str
    retry_in_s: float | None = None
    line: str = ""  # the output line it read


class RetryPolicy(Protocol):
    """Reads a failed attempt's output (``attempt`` counts from 1); None: no opinion, the stage fails
    with its own reason. ``monitor_stopped``: the train monitor ended the attempt (a dead replica)."""

    def after_failure(self, output: str, attempt: int, *, monitor_stopped: bool) -> AfterFailure | None: ...


StageKind = Literal["process", "train", "check"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StageSpec:
    """What one stage runs and how its success is judged.

    ``prepare`` is called when the stage starts (it may read what earlier stages wrote, e.g. the
    export stage finds the latest complete checkpoint) and raises ``StageError`` when the stage
    cannot run. A stage of kind ``check`` runs nothing: its verdict is ``verify``. Kind ``train``
    is watched by the train monitor (diagnostics, step and checkpoint conditions).
    """

    name: str
    title: str
    prepare: Callable[[], Sequence[Command]]
    verify: Callable[[], VerifyResult]
    progress: Callable[[], ProgressParser] | None = None
    kind: StageKind = "process"
    skip_if_verified: bool = True
    retry: RetryPolicy | None = None  # e.g. a1x_supervisor.hf_errors.HfRetry: Hub 429s retried, gated repos explained
    after_success: Callable[[], None] | None = None
    # A train stage whose program makes its own run folder (AlpaGym's host CLI): the run folders there,
    # oldest first. The train monitor follows the first one this attempt makes, and the stage's
    # ``verify`` judges it (not the Cosmos-RL checkpoint rule of ``a1x_supervisor.stages.train``).
    run_folders: Callable[[], Sequence[Path]] | None = None
    # Called after every attempt, once its processes are gone (stopped, failed or done): ends what they
    # leave outside their process tree (AlpaSim's docker containers); the lines go to the stage log.
    cleanup: Callable[[], Sequence[str]] | None = None
    # A train stage run here gets `a1x-tui gpu-agent` beside it (a1x_supervisor.gpu_agents); False for one
    # that samples GPUs of its own (the demo's simulated GPUs: an agent there would only report no NVML).
    gpu_agent: bool = True
