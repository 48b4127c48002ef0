"""Follow a Slurm job from the login node: its id, state, nodes, pending reason, exit code, requeues.

Parsers are pure functions over the text the commands print (recorded from a real Slurm in
``tests/slurm/recorded/``): ``sbatch`` (``--parsable`` or not), ``squeue --json`` (OpenAPI v0.0.38
and the later shapes), ``squeue -h -o SQUEUE_FORMAT``, ``sacct -P -n -o SACCT_FIELDS`` and
``scontrol show job`` (multi-line or ``-o``). ``query_job`` runs the targeted ones through a
``Runner``, falling back when the job has left slurmctld's memory or accounting is off (``sacct``:
"Slurm accounting storage is disabled").

The run-directory side reads Cosmos-RL's Slurm layout (cosmos-rl.md §11.1), which our sbatch
script keeps too: ``slurm/part_<N>/run_<M>/<role>_<t>.{out,err}``, ``latest_run`` /
``latest_part``, ``remaining-retries`` and the monitor's ``[<time>][<tag>]: message`` lines in
``slurm_<jobid>.log``; and the 747d1bd layout of §11.2.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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


# ----------------------------------------------------------------------------- the run directory

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


def _numbered(parent: Path, prefix: str) -> list[tuple[int, Path]]:
    found = []
    try:
        entries = list(parent.iterdir())
    except OSError:
        return []
    for p in entries:
        m = re.fullmatch(rf"{prefix}_(\d+)", p.name)
        if m and p.is_dir() and not p.is_symlink():
            found.append((int(m.group(1)), p))
    return sorted(found)


def read_layout(slurm_dir: Path) -> SlurmLayout:
    """Parts, runs, the latest run and the job logs under ``slurm_dir`` (polling-friendly: no caching)."""
    parts = []
    for n, part in _numbered(slurm_dir, "part"):
        retries: int | None = None
        try:
            retries = int((part / "remaining-retries").read_text().strip())
        except (OSError, ValueError):
            retries = None
        parts.append(Part(n, part, tuple(m for m, _ in _numbered(part, "run")), retries))
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
            m = re.fullmatch(r"(\d+)\.(out|err)", p.name)
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


_MONITOR_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("retry", re.compile(r"^Job failed with status (?P<status>-?\d+)\. Retries remaining: (?P<left>\d+)\. Requeuing")),
    ("no_retries", re.compile(r"^Job failed with status (?P<status>-?\d+)\. No retries remaining")),
    ("autoresume", re.compile(r"^Received signal (?P<signal>\S+), will requeue for autoresume")),
    ("step_failed", re.compile(r"^(?P<step>[\w-]+) failed with exit code (?P<code>-?\d+)\. Terminating other")),
    ("final", re.compile(r"^Final exit status: (?P<status>-?\d+)")),
    ("new_run", re.compile(r"^New run dir: (?P<path>\S+)")),
    ("resume", re.compile(r"^Resuming from checkpoint step (?P<step>\d+): (?P<path>\S+)")),
    ("resume_skipped", re.compile(r"^Checkpoint of step (?P<step>\d+) is not complete, not resuming from it")),
    ("signal", re.compile(r"^Signal (?P<signal>\S+) caught")),
    ("abort", re.compile(r"^Abort file detected")),
    ("started", re.compile(r"^Job (?:(?P<job>\d+) )?started on (?P<host>\S+)")),
)


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
            km = pattern.match(msg)
            if km:
                kind = name
                data = {k: _maybe_int(v) for k, v in km.groupdict().items()}
                break
        out.append(MonitorLine(n, m.group("ts"), m.group("tag"), msg, kind, data))
    return out
