"""What a Slurm job's folder holds now: its parts and runs, the latest run, the job logs, each task's
role log, and the lines of the batch script's monitor.

Cosmos-RL's Slurm layout (docs/reference/cosmos-rl.md §11.1), which our sbatch script keeps too:
``slurm/part_<N>/run_<M>/<role>_<t>.{out,err}``, ``latest_run`` / ``latest_part``,
``remaining-retries`` and the monitor's ``[<time>][<tag>]: message`` lines in ``slurm_<jobid>.log``;
and the 747d1bd layout of §11.2. Read again at every call (polling-friendly: no caching).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from a1x_diagnostics.parsing._runs import PINNED_LOG_RE, numbered
from a1x_diagnostics.signatures.entry import Monitor
from a1x_diagnostics.signatures.launcher import MONITOR

_ROLE_LOG = re.compile(r"^(?P<name>[a-z][a-z-]*(?:_[a-z][a-z-]*)*)_(?P<t>\d+)\.(?P<stream>out|err)$")
_MONITOR = re.compile(r"^\[(?P<ts>[^\]]+)\]\[(?P<tag>[\w-]+)\]: (?P<msg>.*)$")


@dataclass(frozen=True, slots=True)
class RoleLog:
    """``policy_3.err``: the stderr of srun task 3 of the policy node set (all its replicas, interleaved)."""

    path: Path
    name: str  # controller, policy, rollout, reference, gpu_agent, policy-rollout, ...
    task: int
    stream: str  # out | err


@dataclass(frozen=True, slots=True)
class Part:
    index: int
    path: Path
    runs: tuple[int, ...]
    remaining_retries: int | None


@dataclass(frozen=True, slots=True)
class SlurmLayout:
    """What ``<run>/slurm`` holds now. Empty parts mean the job has not started yet."""

    root: Path
    parts: tuple[Part, ...] = ()
    latest_run: Path | None = None
    job_logs: tuple[Path, ...] = ()  # slurm_<jobid>.log
    aborted: bool = False  # ABORT-AUTORESUME exists next to slurm/
    # The step the latest start resumed from (its resume-step file, written by our sbatch script):
    # 0 = it trains from the beginning, None = not known (Cosmos-RL's own template writes none).
    resumed_from_step: int | None = None

    @property
    def current_part(self) -> int | None:
        return self.parts[-1].index if self.parts else None

    @property
    def current_run(self) -> int | None:
        return self.parts[-1].runs[-1] if self.parts and self.parts[-1].runs else None

    @property
    def starts(self) -> int:
        """How many times the batch script started (each start makes one run directory)."""
        return sum(len(p.runs) for p in self.parts)


def read_slurm_layout(slurm_dir: Path) -> SlurmLayout:
    """Parts, runs, the latest run and the job logs under ``slurm_dir``."""
    parts = []
    for n, part in numbered(slurm_dir, "part"):
        retries: int | None = None
        try:
            retries = int((part / "remaining-retries").read_text().strip())
        except (OSError, ValueError):
            retries = None
        parts.append(Part(n, part, tuple(m for m, _ in numbered(part, "run")), retries))
    latest: Path | None = None
    link = slurm_dir / "latest_run"
    if link.is_symlink() or link.is_dir():
        target = link.resolve()
        # Cosmos-RL writes absolute links; on a login node that mounts the filesystem elsewhere
        # they dangle, so fall back to the newest run we can see.
        latest = target if target.is_dir() else None
    if latest is None and parts and parts[-1].runs:
        latest = parts[-1].path / f"run_{parts[-1].runs[-1]}"
    logs = tuple(sorted(slurm_dir.glob("slurm_*.log"), key=lambda p: _job_number(p.name)))
    resumed: int | None = None
    if latest is not None:
        try:
            resumed = int((latest / "resume-step").read_text().strip())
        except (OSError, ValueError):
            resumed = None
    aborted = (slurm_dir.parent / "ABORT-AUTORESUME").exists()
    return SlurmLayout(slurm_dir, tuple(parts), latest, logs, aborted, resumed)


def _job_number(name: str) -> int:
    m = re.search(r"(\d+)", name)
    return int(m.group(1)) if m else -1


def role_logs(run_dir: Path) -> list[RoleLog]:
    """The ``<role>_<t>.{out,err}`` files of one ``part_<N>/run_<M>`` directory, in name order."""
    out = []
    try:
        entries = sorted(run_dir.iterdir())
    except OSError:
        return []
    for p in entries:
        m = _ROLE_LOG.match(p.name)
        if m:
            out.append(RoleLog(p, m.group("name"), int(m.group("t")), m.group("stream")))
        elif p.name in ("controller.out", "controller.err"):
            out.append(RoleLog(p, "controller", 0, p.suffix[1:]))
    return out


def pinned_role_logs(output_root: Path, job_name: str, job_id: str) -> list[RoleLog]:
    """747d1bd's layout (§11.2): ``<root>/<job-name>/<jobid>/<role>/<t>.{out,err}`` plus ``<root>/<jobid>/x.*``."""
    out = []
    base = output_root / job_name / job_id
    for role in ("controller", "policy", "rollout"):
        for p in sorted((base / role).glob("*.*")):
            m = PINNED_LOG_RE.fullmatch(p.name)
            if m:
                out.append(RoleLog(p, role, int(m.group(1)), m.group(2)))
    for stream in ("out", "err"):
        p = output_root / job_id / f"x.{stream}"
        if p.exists():
            out.append(RoleLog(p, "sbatch", 0, stream))
    return out


@dataclass(frozen=True, slots=True)
class MonitorLine:
    """A line of the sbatch monitor in ``slurm_<jobid>.log`` (``[<time>][cosmos-rl-sbatch]: msg``)."""

    line: int
    ts: str
    tag: str
    msg: str
    kind: str  # started, new_run, resume, resume_skipped, retry, no_retries, autoresume, step_failed, final, ...
    data: Mapping[str, Any] = field(default_factory=dict)


# The monitor's messages: the catalog's entries (a1x_diagnostics/signatures/launcher.py MONITOR), first match wins.
_MONITOR_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (sig.event.value, re.compile(sig.pattern, sig.flags)) for sig in MONITOR if isinstance(sig.event, Monitor))


def _maybe_int(value: str | None) -> int | str | None:
    return int(value) if value is not None and re.fullmatch(r"-?\d+", value) else value


def parse_monitor_log(text: str) -> list[MonitorLine]:
    """The monitor lines of ``slurm_<jobid>.log``; other output in the file (srun, echo) is skipped."""
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        m = _MONITOR.match(line)
        if not m:
            continue
        msg = m.group("msg")
        kind, data = "other", {}
        for name, pattern in _MONITOR_KINDS:
            km = pattern.search(msg)
            if km:
                kind = name
                data = {k: _maybe_int(v) for k, v in km.groupdict().items()}
                break
        out.append(MonitorLine(n, m.group("ts"), m.group("tag"), msg, kind, data))
    return out
