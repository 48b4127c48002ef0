"""Findings and the report: the public contract that agents match on.

A ``Finding`` is what a detector (log, config or GPU) concludes, always with the evidence that
proves it and, where a TOML change helps, the ``Fix``. A ``Report`` is what ``--check``,
``lint``, ``preflight`` and ``watch`` print. Change field names, finding ids or exit codes only
on purpose, and bump ``SCHEMA_VERSION`` when you do.
"""

from __future__ import annotations

from datetime import datetime, timezone
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = "1.3"  # 1.1: the run outcome (``Report.outcome``); OK only for a completed or healthy running run
# 1.2: closed-loop (AlpaGym) runs: eight finding ids (docs/findings.md "Closed-loop runs"), the ``closed_loop``
# metrics (episodes, collision and offroad rates...) and ``simulator`` as a log role; nothing removed or renamed
# 1.3: toml_rejected and toml_misread (a TOML Cosmos-RL's own parser refuses is toml_rejected, no longer
# invalid_value), export_regressed (the evaluate stage), python_version_mismatch, nvcc_missing and
# nvcc_cuda_mismatch (preflight), alpagym_env_incomplete (preflight), replica_logs_missing; the outcome
# ``stopped`` (the user's stop through a1x-tui) and the launcher's ``process_planned`` / ``process_launched``
# signals; config findings the logs refute move to ``notes``; resume_failed (cosmos-rl 0.4.7's resume errors) and
# the signals of 0.4.7 and other stacks' shapes (``process_registered``, ``controller_terminal``,
# ``stop_requested``, ``dataset_exhausted``, ``resume_failed``, ``resume_fresh_start``, ``weight_update``; new
# ``kind``/``what``/``reason`` values of ``nccl_error``, ``oom``, ``fatal_signal``, ``gpu_layout_error``); nothing
# removed or renamed (docs/findings.md)


class Severity(str, Enum):
    WARNING = "warning"
    CRITICAL = "critical"


class Status(str, Enum):
    """Overall status, as monitoring plugins use it."""

    OK = "ok"
    WARNING = "warning"
    CRITICAL = "critical"
    UNKNOWN = "unknown"

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self]


EXIT_CODES: dict[Status, int] = {
    Status.OK: 0,
    Status.WARNING: 1,
    Status.CRITICAL: 2,
    Status.UNKNOWN: 3,
}


class Evidence(BaseModel):
    """A line that proves a finding. ``line`` is ``None`` for non-file evidence (an NVML sample)."""

    model_config = ConfigDict(frozen=True)

    file: str
    line: int | None = None
    text: str


class Fix(BaseModel):
    """A TOML change that cures (or mitigates) a finding."""

    model_config = ConfigDict(frozen=True)

    path: str = Field(description="dotted TOML path, e.g. 'rollout.gpu_memory_utilization'")
    current: Any = Field(default=None, description="value in the given TOML, or null when unknown/unset")
    proposed: Any = Field(description="the value to set; null means 'remove the key'")
    why: str


class Finding(BaseModel):
    """One conclusion, with the lines that prove it."""

    id: str = Field(description="stable id from the catalog, e.g. 'rollout_buffer_growth'")
    severity: Severity
    title: str
    explanation: str = Field(description="a few plain sentences: what happens, why it matters")
    evidence: list[Evidence] = Field(min_length=1)
    fixes: list[Fix] = Field(default_factory=list)
    action: str | None = Field(default=None, description="what to do when no TOML change cures it")
    data: dict[str, Any] = Field(default_factory=dict, description="numbers behind the finding")


class Outcome(str, Enum):
    """How the run ended, or where it stands, decided from its logs (docs/findings.md "Run outcome")."""

    COMPLETED = "completed"  # the last step equals the total
    RUNNING = "running"  # being written and progressing within its usual step time
    STALLED = "stalled"  # no progress for many step times (before the first step: minutes after start-up)
    CRASHED = "crashed"  # a process ended on an uncaught error, a failure summary or a fatal signal
    TERMINATED = "terminated"  # stopped from outside (SIGTERM, SIGINT, scancel) before its last step
    STOPPED = "stopped"  # stopped by its user through a1x-tui (stop, the dashboard's Stop) before its last step
    INCOMPLETE = "incomplete"  # ended, or its logs stop, at a step short of the total any other way
    NOT_STARTED = "not_started"  # no training step, and the logs stop before training began


class RunOutcome(BaseModel):
    """The run's outcome with the lines that show it."""

    model_config = ConfigDict(frozen=True)

    state: Outcome
    summary: str = Field(description="one sentence: what the logs show")
    step: int | None = None
    total_steps: int | None = None
    evidence: list[Evidence] = Field(default_factory=list)
    data: dict[str, Any] = Field(default_factory=dict)


class CheckState(str, Enum):
    OK = "ok"
    FINDING = "finding"
    BLIND = "blind"  # the detector cannot see: its input is missing from the logs or config
    SKIPPED = "skipped"  # not applicable to this input (e.g. GPU checks off the node)


class CheckResult(BaseModel):
    """One detector's verdict, shown as a ``[+]``/``[-]`` line in the text report."""

    id: str
    state: CheckState
    note: str | None = None


class Report(BaseModel):
    """What ``a1x-tui --check`` (and ``lint``, ``preflight``) prints with ``--format json``."""

    schema_version: Literal["1.3"] = "1.3"
    tool: str = "a1x-tui"
    kind: Literal["check", "lint", "preflight", "watch"] = "check"
    target: str = Field(description="the path that was examined")
    run: str | None = Field(default=None, description="the logs_<ts> folder or run id examined")
    generated_at: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))
    status: Status
    exit_code: int
    summary: str = Field(description="the first line of the text report, without perfdata")
    outcome: RunOutcome | None = Field(default=None, description="how the run ended (check and watch reports)")
    findings: list[Finding] = Field(default_factory=list)
    checks: list[CheckResult] = Field(default_factory=list)
    metrics: dict[str, float | int | str | None] = Field(default_factory=dict)
    files: list[str] = Field(default_factory=list, description="log files read")
    notes: list[str] = Field(default_factory=list, description="things the user should know")


def overall_status(findings: list[Finding]) -> Status:
    """Worst severity wins; no finding is OK."""
    if any(f.severity is Severity.CRITICAL for f in findings):
        return Status.CRITICAL
    if findings:
        return Status.WARNING
    return Status.OK


def report_json_schema() -> dict[str, Any]:
    return Report.model_json_schema()
