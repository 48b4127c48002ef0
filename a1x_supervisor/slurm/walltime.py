"""The checkpoint interval against the job's time limit, checked before submission and in preflight.

A job that reaches its time limit keeps only what its last complete checkpoint holds: the next part
resumes from there (our sbatch script; docs/slurm.md "Resuming"), and at 747d1bd, whose
``dispatch_job.py`` does not requeue at all, the run simply ends. A part trains from its start until
the pre-timeout signal (``pre_timeout_signal_s``, default 1200 s, before the limit; docs/reference/cosmos-rl.md
§11.1). ``checkpoint_after_time_limit`` is raised when no part can save a checkpoint in that time:

- the signal comes at or before the start (``pre_timeout_signal_s`` ≥ the time limit);
- checkpointing is off (``train.ckpt.enable_checkpoint``, default false, docs/reference/cosmos-rl.md §5.3) while
  the job is requeued at its limit: every part starts again from step 0;
- with ``step_time_s`` in the cluster spec: ``save_freq`` steps take longer than a part trains
  (a checkpoint is saved at every ``save_freq``-th step, docs/reference/alpamayo-recipe.md §8.6).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from a1x_diagnostics.findings import Evidence, Fix
from a1x_supervisor.slurm.plan import CosmosRev, toml_get
from a1x_supervisor.slurm.sbatch import DEFAULT_PRE_TIMEOUT_S
from a1x_supervisor.slurm.spec import ClusterSpec

DISPATCH_DEFAULT_TIME_S = 4 * 3600  # dispatch_job.py: --slurm-job-time 04:00:00 (747d1bd), --duration 4 (HEAD)
SAVE_FREQ_DEFAULT = 20  # docs/reference/cosmos-rl.md §8.4 [train.ckpt] save_freq
_TIME = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


def slurm_seconds(value: str) -> int | None:
    """sbatch --time in seconds (M, M:S, H:M:S, D-H, D-H:M, D-H:M:S); None for UNLIMITED."""
    m = _TIME.match(value.strip())
    if not m:
        return None
    days, a, b, c = m.group(1), int(m.group(2)), m.group(3), m.group(4)
    if days is not None:  # D-H[:M[:S]]
        return int(days) * 86400 + a * 3600 + int(b or 0) * 60 + int(c or 0)
    if b is None:
        return a * 60  # M
    if c is None:
        return a * 60 + int(b)  # M:S
    return a * 3600 + int(b) * 60 + int(c)  # H:M:S


def duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s" if seconds % 60 else f"{seconds // 60} min"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


@dataclass(frozen=True, slots=True)
class WallTimeProblem:
    """``checkpoint_after_time_limit``: what the finding says, where it points, and the fix."""

    explanation: str
    key: str  # the TOML key (evidence), or "" when the cluster spec alone is at fault
    evidence: str
    action: str
    fixes: tuple[Fix, ...] = ()
    data: Mapping[str, Any] | None = None

    def evidence_at(self, locate: Any, file: str) -> Evidence:
        found = locate(self.key) if locate is not None and self.key else None
        return Evidence(file=file, line=found.line if found is not None else None, text=self.evidence)


def requeued_at_limit(spec: ClusterSpec) -> bool:
    """Whether the job is requeued into a new part at its time limit (747d1bd's dispatch_job.py never is)."""
    if spec.method == "cosmos-dispatch" and spec.cosmos_rev is CosmosRev.PINNED:
        return False
    return spec.autoresume is not False


def wall_time_problems(spec: ClusterSpec, data: Mapping[str, Any]) -> tuple[list[WallTimeProblem], str]:
    """The problems, and one line saying what was compared (for a check's note)."""
    if spec.time is not None:
        limit = slurm_seconds(spec.time)
    elif spec.method == "cosmos-dispatch":
        limit = DISPATCH_DEFAULT_TIME_S
    else:
        return [], "no time in [cluster]: the partition's default limit applies, unknown here"
    if limit is None:
        return [], f"time = {spec.time!r}: no limit"
    requeued = requeued_at_limit(spec)
    pre = 0
    if requeued:
        pre = spec.pre_timeout_signal_s if spec.pre_timeout_signal_s is not None else DEFAULT_PRE_TIMEOUT_S
    usable = limit - pre
    shown = spec.time or f"{duration(limit)} (dispatch_job.py's default)"
    problems: list[WallTimeProblem] = []
    if requeued and usable <= 0:
        problems.append(
            WallTimeProblem(
                explanation=(
                    f"The pre-timeout signal comes {pre} s before the time limit of {shown}: the job is signalled "
                    "and requeued as soon as it starts, so no part trains a step."
                ),
                key="",
                evidence=f"time = {shown}, pre_timeout_signal_s = {pre}",
                action=f"lower [cluster] pre_timeout_signal_s (well under {limit} s) or raise [cluster] time",
                data={"time_s": limit, "pre_timeout_s": pre},
            )
        )
        return problems, ""
    enabled = toml_get(data, "train.ckpt.enable_checkpoint", False) is True
    if requeued and not enabled:
        problems.append(
            WallTimeProblem(
                explanation=(
                    f"train.ckpt.enable_checkpoint is not true: a part that reaches the time limit of {shown} leaves "
                    "no checkpoint, so the requeued part starts again from step 0 and a training longer than "
                    f"{duration(usable)} never finishes (docs/reference/cosmos-rl.md §5.3)."
                ),
                key="train.ckpt.enable_checkpoint",
                evidence=f"train.ckpt.enable_checkpoint = {toml_get(data, 'train.ckpt.enable_checkpoint', False)!r}",
                action="set train.ckpt.enable_checkpoint = true",
                fixes=(
                    Fix(
                        path="train.ckpt.enable_checkpoint",
                        current=toml_get(data, "train.ckpt.enable_checkpoint"),
                        proposed=True,
                        why="a requeued part resumes from the last checkpoint",
                    ),
                ),
                data={"time_s": limit, "pre_timeout_s": pre},
            )
        )
    freq = toml_get(data, "train.ckpt.save_freq", SAVE_FREQ_DEFAULT)
    in_epoch = toml_get(data, "train.ckpt.save_freq_in_epoch", 0)
    note = f"a part trains {duration(usable)} ({shown}" + (f" minus the {pre} s pre-timeout signal)" if pre else ")")
    if not enabled:
        return problems, note + "; checkpointing is off"
    if isinstance(in_epoch, int) and in_epoch > 0:
        return problems, note + f"; a checkpoint every {in_epoch} epoch(s): the interval is not compared"
    if spec.step_time_s is None or not isinstance(freq, int) or isinstance(freq, bool) or freq < 1:
        return problems, note + "; no step_time_s in [cluster]: the checkpoint interval is not compared"
    interval = freq * spec.step_time_s
    note += f"; save_freq {freq} x {spec.step_time_s:g} s = a checkpoint every {duration(interval)}"
    if interval >= usable:
        proposed = max(1, int(usable // (2 * spec.step_time_s)))
        problems.append(
            WallTimeProblem(
                explanation=(
                    f"At {spec.step_time_s:g} s per step, train.ckpt.save_freq = {freq} saves a checkpoint every "
                    f"{duration(interval)}, but a part trains only {duration(usable)} before "
                    + ("it is signalled and requeued" if requeued else "the job ends at its time limit")
                    + ": no part saves a checkpoint, so the training never gets past the start "
                    "(a checkpoint is saved every save_freq steps, docs/reference/alpamayo-recipe.md §8.6)."
                ),
                key="train.ckpt.save_freq",
                evidence=f"train.ckpt.save_freq = {freq}; step_time_s = {spec.step_time_s:g}; {note}",
                action=f"set train.ckpt.save_freq = {proposed} (two checkpoints per part), or raise [cluster] time",
                fixes=(
                    Fix(
                        path="train.ckpt.save_freq",
                        current=freq,
                        proposed=proposed,
                        why="two checkpoints before each part's time limit",
                    ),
                ),
                data={"time_s": limit, "pre_timeout_s": pre, "interval_s": interval, "step_time_s": spec.step_time_s},
            )
        )
    return problems, note
