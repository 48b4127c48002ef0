"""Follow a Slurm job from the login node: its id, state, nodes, pending reason, exit code, requeues.

Parsers are pure functions over the text the commands print (recorded from a real Slurm in
``tests/slurm/recorded/``): ``sbatch`` (``--parsable`` or not), ``squeue --json`` (OpenAPI v0.0.38
and the later shapes), ``squeue -h -o SQUEUE_FORMAT``, ``sacct -P -n -o SACCT_FIELDS`` and
``scontrol show job`` (multi-line or ``-o``). ``query_job`` runs the targeted ones through a
``Runner``, falling back when the job has left slurmctld's memory or accounting is off (``sacct``:
"Slurm accounting storage is disabled").

What the job's folder holds (its parts and runs, role logs, the monitor's lines) is read by
``a1x_diagnostics.parsing`` (``read_slurm_layout``, ``role_logs``, ``parse_monitor_log``), the one owner
of the Cosmos-RL run layout.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

# Slurm job states; a job in one of TERMINAL has ended (squeue(1) "JOB STATE CODES").
TERMINAL = frozenset(
    {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "DEADLINE",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "REVOKED",
        "SPECIAL_EXIT",
        "TIMEOUT",
    }
)
ACTIVE = frozenset({"RUNNING", "COMPLETING", "CONFIGURING", "SIGNALING", "STAGE_OUT", "RESIZING", "SUSPENDED"})
WAITING = frozenset({"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "STOPPED"})

SQUEUE_FORMAT = "%i|%T|%N|%r|%j"  # name last: it may contain the separator
SACCT_FIELDS = "JobID,State,ExitCode,NodeList,Reason"

# Reasons a user can act on, in words for the dashboard and `status` (squeue(1) "JOB REASON CODES").
PENDING_REASONS: dict[str, str] = {
    "Resources": "waiting for nodes to become free",
    "Priority": "other jobs have higher priority",
    "BeginTime": "not allowed to start yet (a requeued job waits about two minutes)",
    "Dependency": "waiting for another job",
    "JobHeldUser": "held by the user (scontrol release)",
    "JobHeldAdmin": "held by an administrator",
    "PartitionConfig": "the partition cannot give this request (nodes, GPUs or time): it will never start",
    "PartitionNodeLimit": "more nodes than the partition allows",
    "PartitionTimeLimit": "longer than the partition's time limit",
    "QOSMaxNodePerJobLimit": "more nodes than the QOS allows",
    "ReqNodeNotAvail": "a requested node is unavailable",
    "AssocGrpGRES": "the account's GPU limit is reached",
    "AssocMaxJobsLimit": "the account's job limit is reached",
}


@dataclass(frozen=True, slots=True)
class SubmitResult:
    job_id: str
    cluster: str | None = None


@dataclass(frozen=True, slots=True)
class JobInfo:
    """One job as Slurm reports it. ``state`` is the base state (``CANCELLED by 0`` → ``CANCELLED``)."""

    job_id: str
    state: str
    reason: str | None = None
    nodes: str | None = None  # compressed node list, e.g. node[001-080]
    exit_code: int | None = None
    signal: int | None = None
    restarts: int | None = None
    name: str | None = None
    source: str = ""

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL

    @property
    def pending(self) -> bool:
        return self.state in WAITING

    @property
    def reason_text(self) -> str | None:
        """The pending reason with its meaning, for a pending job; ``None`` otherwise."""
        if not self.pending or not self.reason or self.reason == "None":
            return None
        meaning = PENDING_REASONS.get(self.reason)
        return f"{self.reason}: {meaning}" if meaning else self.reason

    @property
    def succeeded(self) -> bool:
        return self.state == "COMPLETED" and not self.exit_code


class SlurmParseError(ValueError):
    """The command printed something that is not its documented output; the message quotes it."""


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


# ----------------------------------------------------------------------------- sbatch

_SUBMITTED = re.compile(r"Submitted batch job (\d+)(?: on cluster (\S+))?")
_PARSABLE = re.compile(r"^(\d+(?:_\d+)?)(?:;(\S+))?$")


def parse_sbatch(text: str) -> SubmitResult:
    """The job id from ``sbatch`` or ``sbatch --parsable`` (``jobid`` or ``jobid;cluster``)."""
    for line in text.splitlines():
        line = line.strip()
        m = _SUBMITTED.search(line) or _PARSABLE.match(line)
        if m:
            return SubmitResult(m.group(1), m.group(2))
    raise SlurmParseError(f"no job id in the sbatch output: {_first_line(text)!r}")


def job_id_from_dispatch_output(text: str) -> SubmitResult | None:
    """dispatch_job.py lets sbatch print ``Submitted batch job N``; ``None`` if it never did."""
    m = _SUBMITTED.search(text)
    return SubmitResult(m.group(1), m.group(2)) if m else None


def run_dir_from_dispatch_output(text: str) -> Path | None:
    """HEAD's dispatch_job.py logs ``Output directory: <run dir>`` before it submits (§11.1)."""
    m = re.search(r"Output directory: (\S.*?)\s*$", text, re.MULTILINE)
    return Path(m.group(1)) if m else None


# ----------------------------------------------------------------------------- squeue / sacct / scontrol


def _base_state(raw: str) -> str:
    # "CANCELLED by 0", "RUNNING+" , "CANCELLED+" (sacct truncation marker)
    return raw.split()[0].rstrip("+").upper() if raw.strip() else "UNKNOWN"


def _exit_pair(text: str) -> tuple[int | None, int | None]:
    m = re.fullmatch(r"\s*(\d+):(\d+)\s*", text or "")
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


def _number(value: Any) -> int | None:
    """An int from OpenAPI's plain numbers and from v0.0.40's ``{"set": .., "number": ..}`` objects."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, Mapping):
        if value.get("set") is False or value.get("infinite") is True:
            return None
        return _number(value.get("number"))
    return None


def _json_exit(value: Any) -> tuple[int | None, int | None]:
    """v0.0.38: a wait status (exit << 8 | signal); v0.0.39+: an object with return_code and signal."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value >> 8) & 0xFF, value & 0x7F
    if isinstance(value, Mapping):
        code = _number(value.get("return_code"))
        sig = value.get("signal")
        sig_id = _number(sig.get("id")) if isinstance(sig, Mapping) else _number(sig)
        return code, sig_id
    return None, None


def parse_squeue_json(text: str) -> list[JobInfo]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        raise SlurmParseError(f"squeue --json printed no JSON: {_first_line(text)!r}") from None
    jobs = doc.get("jobs") if isinstance(doc, Mapping) else None
    if not isinstance(jobs, list):
        raise SlurmParseError("squeue --json: no 'jobs' list")
    out = []
    for job in jobs:
        if not isinstance(job, Mapping):
            continue
        state = job.get("job_state")
        if isinstance(state, list):  # v0.0.40+: ["RUNNING"] or ["PENDING", "REQUEUED"]
            state = state[0] if state else ""
        code, sig = _json_exit(job.get("exit_code"))
        nodes = job.get("nodes")
        reason = job.get("state_reason")
        out.append(
            JobInfo(
                job_id=str(_number(job.get("job_id")) if _number(job.get("job_id")) is not None else job.get("job_id")),
                state=_base_state(str(state or "")),
                reason=str(reason) if reason not in (None, "") else None,
                nodes=str(nodes) if nodes else None,
                exit_code=code,
                signal=sig,
                restarts=_number(job.get("restart_cnt")),
                name=str(job.get("name")) if job.get("name") is not None else None,
                source="squeue-json",
            )
        )
    return out


def parse_squeue_text(text: str) -> list[JobInfo]:
    """Lines of ``squeue -h -o '%i|%T|%N|%r|%j'``."""
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = line.split("|", 4)
        if len(parts) != 5:
            raise SlurmParseError(f"squeue: not the {SQUEUE_FORMAT} format: {line.strip()!r}")
        job_id, state, nodes, reason, name = (p.strip() for p in parts)
        out.append(
            JobInfo(
                job_id=job_id,
                state=_base_state(state),
                reason=reason or None,
                nodes=nodes or None,
                name=name or None,
                source="squeue",
            )
        )
    return out


def parse_sacct(text: str) -> list[JobInfo]:
    """Job records of ``sacct -P -n -o JobID,State,ExitCode,NodeList,Reason`` (steps are skipped).

    With ``--duplicates`` a requeued job has one record per start; the last one is current, and
    ``restarts`` counts the earlier ones.
    """
    records: dict[str, list[JobInfo]] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = line.split("|")
        if len(parts) < 5:
            raise SlurmParseError(f"sacct: not the {SACCT_FIELDS} format: {line.strip()!r}")
        job_id, state, exit_code, nodes, reason = (p.strip() for p in parts[:5])
        if "." in job_id:  # 123.batch, 123.extern, 123.0: steps
            continue
        code, sig = _exit_pair(exit_code)
        records.setdefault(job_id, []).append(
            JobInfo(
                job_id=job_id,
                state=_base_state(state),
                reason=reason or None,
                nodes=nodes if nodes and nodes != "None assigned" else None,
                exit_code=code,
                signal=sig,
                source="sacct",
            )
        )
    out = []
    for recs in records.values():
        last = recs[-1]
        out.append(
            JobInfo(
                job_id=last.job_id,
                state=last.state,
                reason=last.reason,
                nodes=last.nodes,
                exit_code=last.exit_code,
                signal=last.signal,
                restarts=len(recs) - 1,
                source="sacct",
            )
        )
    return out


_KV = re.compile(r"(?:^|\s)([A-Za-z][\w/:]*)=(\S*)")


def parse_scontrol_jobs(text: str) -> list[JobInfo]:
    """``scontrol show job`` (one block per job, blank-line separated) or ``scontrol -o show job``."""
    blocks: list[str] = []
    current: list[str] = []
    for line in text.splitlines():
        if line.startswith("JobId=") and current:
            blocks.append(" ".join(current))
            current = []
        if line.strip():
            current.append(line.strip())
    if current:
        blocks.append(" ".join(current))
    out = []
    for block in blocks:
        if not block.startswith("JobId="):
            continue
        fields = dict(_KV.findall(block))
        code, sig = _exit_pair(fields.get("ExitCode", ""))
        nodes = fields.get("NodeList")
        restarts = fields.get("Restarts")
        name = re.search(r"JobName=(.*?)(?:\s+UserId=|$)", block)
        out.append(
            JobInfo(
                job_id=fields["JobId"],
                state=_base_state(fields.get("JobState", "")),
                reason=fields.get("Reason") or None,
                nodes=nodes if nodes and nodes != "(null)" else None,
                exit_code=code,
                signal=sig,
                restarts=int(restarts) if restarts and restarts.isdigit() else None,
                name=name.group(1) if name else None,
                source="scontrol",
            )
        )
    return out


def invalid_job(text: str) -> bool:
    """slurmctld no longer (or never) knew the job: ``slurm_load_jobs error: Invalid job id specified``."""
    return "Invalid job id specified" in text


def accounting_disabled(text: str) -> bool:
    return "accounting storage is disabled" in text.lower()


# ----------------------------------------------------------------------------- running the commands


@dataclass(frozen=True, slots=True)
class CommandResult:
    returncode: int
    stdout: str
    stderr: str = ""

    @property
    def text(self) -> str:
        return self.stdout + self.stderr


class Runner(Protocol):
    def __call__(self, argv: Sequence[str]) -> CommandResult: ...


def run_command(argv: Sequence[str], timeout_s: float = 30.0) -> CommandResult:
    """The default ``Runner``: a subprocess with a timeout; a missing program is rc 127, not an exception."""
    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout_s, check=False)
    except FileNotFoundError:
        return CommandResult(127, "", f"{argv[0]}: command not found")
    except subprocess.TimeoutExpired:
        return CommandResult(124, "", f"{argv[0]}: no answer after {timeout_s:.0f} s")
    return CommandResult(proc.returncode, proc.stdout, proc.stderr)


def _pick(jobs: list[JobInfo], job_id: str) -> JobInfo | None:
    for job in jobs:
        if job.job_id == job_id:
            return job
    return None


def query_job(job_id: str, runner: Runner = run_command) -> JobInfo | None:
    """The job's state from the first source that knows it; ``None`` when none does.

    Order: ``scontrol -o show job ID`` (state, reason, nodes, exit code and restarts in one targeted
    call), ``sacct -D`` (after the job left slurmctld's memory, MinJobAge; needs accounting), then
    ``squeue -h -o``. ``squeue --json`` is not polled: Slurm 22.05 ignores ``-j`` with ``--json`` and
    prints every job of the cluster (seen on the test cluster), too much to ask every few seconds.
    """
    res = runner(["scontrol", "-o", "show", "job", job_id])
    if res.returncode == 0 and not invalid_job(res.text):
        found = _pick(parse_scontrol_jobs(res.stdout), job_id)
        if found is not None:
            return found
    res = runner(["sacct", "-P", "-n", "-D", "-o", SACCT_FIELDS, "-j", job_id])
    if res.returncode == 0 and not accounting_disabled(res.text):
        found = _pick(parse_sacct(res.stdout), job_id)
        if found is not None:
            return found
    res = runner(["squeue", "-h", "-t", "all", "-j", job_id, "-o", SQUEUE_FORMAT])
    if res.returncode == 0 and not invalid_job(res.text):
        return _pick(parse_squeue_text(res.stdout), job_id)
    return None


def cancel_job(job_id: str, runner: Runner = run_command, *, signal: str | None = None) -> CommandResult:
    """``scancel JOB`` (Slurm sends SIGTERM, then SIGKILL after KillWait); ``signal`` only signals it."""
    argv = ["scancel"]
    if signal is not None:
        argv += ["--batch", f"--signal={signal}"]
    return runner([*argv, job_id])
