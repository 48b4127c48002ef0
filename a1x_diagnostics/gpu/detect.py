"""GPU findings: a pure function from sample history (with roles) to findings, and a helper for ``--check``.

Same contract as every detector (``a1x_diagnostics.findings``): each finding has catalog id, evidence
and, where a TOML change helps, a ``Fix``; ``action`` says what to do otherwise. Evidence for GPU
findings cites ``nvml:<gpu index>`` (a live reading) or the samples file and its JSONL line.

- ``gpu_orphan``: memory held by processes not part of this run (a vLLM engine left from a killed
  run, another user's job); the action is the command that stops them.
- ``vllm_oom_risk``: before the rollout engine starts, a rollout GPU has less free memory than
  ``rollout.gpu_memory_utilization`` x total. docs/reference/cosmos-rl.md §6 (vLLM OOM): vLLM then refuses to start
  with "Free memory on device (...) on startup is less than desired GPU memory utilization".
- ``gpu_idle``: a policy or rollout replica's GPU at (near) 0 % utilisation for a long stretch.
- ``gpu_memory_near_limit``: used memory above a fraction of total (a rollout GPU is allowed the
  ``gpu_memory_utilization`` share vLLM takes on purpose).
- ``gpu_unavailable``: NVML cannot be used where GPUs are expected.
"""

from __future__ import annotations

import getpass
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from a1x_diagnostics.catalog import entry
from a1x_diagnostics.findings import CheckResult, CheckState, Evidence, Finding, Fix, Severity
from a1x_diagnostics.gpu.backend import NvmlBackend
from a1x_diagnostics.gpu.na import MIB, NA, to_mib
from a1x_diagnostics.gpu.roles import RoleResolver
from a1x_diagnostics.gpu.sampler import GpuSampler
from a1x_diagnostics.gpu.samples import DeviceSample, GpuSnapshot, ProcessRole, ProcessSample, RoleKind
from a1x_diagnostics.gpu.store import read_log, samples_path

GIB = 1024 * MIB
CHECK_IDS = ("gpu_orphan", "vllm_oom_risk", "gpu_idle", "gpu_memory_near_limit")


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuCheckOptions:
    """Thresholds and run facts the GPU checks need; the defaults suit an Alpamayo RL run."""

    gpu_memory_utilization: float | None = None  # rollout.gpu_memory_utilization from the TOML
    rollout_started: bool | None = None  # True once '[Rollout] Engine initialized.' was logged
    rollout_gpus: Sequence[int] | None = None  # NVML indices the rollout will use; None: every GPU
    idle_after_s: float = 600.0
    idle_utilization_pct: int = 5
    max_gap_s: float = 60.0  # a longer gap between samples breaks an idle stretch (agent was down)
    near_limit_fraction: float = 0.95
    orphan_min_bytes: int = 256 * MIB
    engine_min_bytes: int = 4 * GIB  # a rollout process holding more has its vLLM engine up


@dataclass(slots=True)
class GpuAssessment:
    """Findings plus one ``CheckResult`` per GPU check and the notes a report should carry."""

    findings: list[Finding] = field(default_factory=list)
    checks: list[CheckResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    snapshot: GpuSnapshot | None = None  # the latest snapshot examined


def assess(
    history: Sequence[GpuSnapshot],
    *,
    roles: Mapping[int, ProcessRole] | None = None,
    options: GpuCheckOptions | None = None,
    role_note: str | None = None,
) -> GpuAssessment:
    """Findings from snapshots (oldest first). Pure: no NVML, no /proc, no clock.

    ``roles`` overrides the roles the snapshots carry (pid -> role); ``role_note`` is the join's
    note (PID namespaces) to pass on.
    """
    opts = options or GpuCheckOptions()
    out = GpuAssessment(snapshot=history[-1] if history else None)
    if not history:
        for cid in CHECK_IDS:
            out.checks.append(CheckResult(id=cid, state=CheckState.BLIND, note="no GPU samples"))
        return out
    if role_note:
        out.notes.append(role_note)
    latest = history[-1]
    procs_snap = _latest_with_processes(history)
    procs = _with_roles(procs_snap.processes or (), roles) if procs_snap is not None else None
    _check_orphans(out, procs_snap, procs, opts)
    _check_oom_risk(out, latest, procs, opts)
    _check_idle(out, history, procs, opts)
    _check_near_limit(out, latest, procs, opts)
    return out


def unavailable_assessment(reason: str, *, expected: bool) -> GpuAssessment:
    """NVML cannot be used: a ``gpu_unavailable`` finding where GPUs are expected, else skipped checks."""
    out = GpuAssessment()
    if not expected:
        out.notes.append(f"GPU checks skipped: {reason}")
        for cid in CHECK_IDS:
            out.checks.append(CheckResult(id=cid, state=CheckState.SKIPPED, note=reason))
        return out
    out.findings.append(
        Finding(
            id="gpu_unavailable",
            severity=Severity.WARNING,
            title=entry("gpu_unavailable").title,
            explanation=(
                "a1x-tui cannot read the GPUs here, so it cannot see orphaned processes, free memory or idle "
                "GPUs. Everything else (logs, config, supervision) keeps working. If this node should have "
                "GPUs, nvidia-smi will most likely fail the same way."
            ),
            evidence=[Evidence(file="nvml", line=None, text=reason)],
            action="run `nvidia-smi` on this node; install or reload the NVIDIA driver, or run a1x-tui on the GPU node",
            data={"reason": reason},
        )
    )
    out.checks.append(CheckResult(id="gpu_unavailable", state=CheckState.FINDING, note=reason))
    for cid in CHECK_IDS:
        out.checks.append(CheckResult(id=cid, state=CheckState.BLIND, note=reason))
    return out


def gpu_findings_now(
    *,
    run_dir: str | Path | None = None,
    known_pids: Mapping[int, str] | None = None,
    options: GpuCheckOptions | None = None,
    expect_gpu: bool = False,
    controller_host: str | None = None,
    backend: NvmlBackend | None = None,
) -> GpuAssessment:
    """One live reading of this node's GPUs (plus this host's samples in ``run_dir``, if any) -> findings.

    Cheap and safe where there is no GPU: NVML absent gives skipped checks (or ``gpu_unavailable``
    with ``expect_gpu``), never an exception. For ``--check`` run on the node.
    """
    opts = options or GpuCheckOptions()
    sampler = GpuSampler(backend, resolver=RoleResolver(known_pids, controller_host=controller_host), history_size=1)
    try:
        snap = sampler.sample(processes=True)
    finally:
        sampler.stop()
    if snap is None:
        return unavailable_assessment(sampler.unavailable or "NVML unavailable", expected=expect_gpu)
    history: list[GpuSnapshot] = []
    if run_dir is not None:
        path = samples_path(run_dir, sampler.host)
        if path.is_file():
            # Enough tail for the idle stretch: a line is ~250 bytes per GPU.
            lines = int(opts.idle_after_s * 1.5) + 10
            log = read_log(path, tail_bytes=lines * (250 * max(1, len(snap.devices)) + 200))
            history = [s for s in log.snapshots if s.ts < snap.ts]
    history.append(snap)
    return assess(history, options=opts, role_note=sampler.state.role_note)


# -- checks ------------------------------------------------------------------------------------


def _check_orphans(
    out: GpuAssessment,
    snap: GpuSnapshot | None,
    procs: tuple[ProcessSample, ...] | None,
    opts: GpuCheckOptions,
) -> None:
    if snap is None or procs is None:
        out.checks.append(CheckResult(id="gpu_orphan", state=CheckState.BLIND, note="no per-process sample yet"))
        return
    if procs and all(p.role is None for p in procs):
        out.checks.append(
            CheckResult(id="gpu_orphan", state=CheckState.BLIND, note="GPU processes were not joined to roles")
        )
        return
    orphans = [
        p
        for p in procs
        if p.role is not None
        and p.role.kind is RoleKind.FOREIGN
        and (p.memory_used is NA or p.memory_used >= opts.orphan_min_bytes)
    ]
    hidden = [p for p in procs if p.role is not None and p.role.kind is RoleKind.HIDDEN]
    if not orphans:
        note = f"{len(hidden)} GPU process(es) not visible in /proc" if hidden else None
        state = CheckState.BLIND if hidden and len(hidden) == len(procs) else CheckState.OK
        out.checks.append(CheckResult(id="gpu_orphan", state=state, note=note))
        return
    pids = sorted({p.pid for p in orphans})
    known_bytes = sum(p.memory_used for p in orphans if p.memory_used is not NA)
    me = _current_user()
    others = any(p.role and p.role.user and me and p.role.user != me for p in orphans)
    sudo = "sudo " if others and me != "root" else ""
    pid_text = " ".join(str(p) for p in pids)
    action = (
        f"{sudo}kill {pid_text}   # SIGTERM; if they are still listed by nvidia-smi after 10 s: "
        f"{sudo}kill -9 {pid_text}"
    )
    gpus = sorted({p.gpu for p in orphans})
    out.findings.append(
        Finding(
            id="gpu_orphan",
            severity=Severity.CRITICAL,
            title=entry("gpu_orphan").title,
            explanation=(
                f"{len(pids)} process(es) not part of this run hold {to_mib(known_bytes)} MiB on GPU(s) "
                f"{', '.join(map(str, gpus))}. A vLLM engine or trainer left from a killed run keeps its memory "
                "until it is stopped; the next rollout then fails to start (vLLM OOM) or training runs "
                "out of memory."
            ),
            evidence=[_process_evidence(snap, p) for p in orphans],
            action=action,
            data={
                "pids": pids,
                "gpus": gpus,
                "memory_bytes": known_bytes,
                "processes": [
                    {
                        "pid": p.pid,
                        "gpu": p.gpu,
                        "memory_used": None if p.memory_used is NA else p.memory_used,
                        "command": p.role.command if p.role else None,
                        "user": p.role.user if p.role else None,
                        "detail": p.role.detail if p.role else None,
                    }
                    for p in orphans
                ],
            },
        )
    )
    out.checks.append(CheckResult(id="gpu_orphan", state=CheckState.FINDING))


def _check_oom_risk(
    out: GpuAssessment, snap: GpuSnapshot, procs: tuple[ProcessSample, ...] | None, opts: GpuCheckOptions
) -> None:
    util = opts.gpu_memory_utilization
    if util is None:
        out.checks.append(
            CheckResult(id="vllm_oom_risk", state=CheckState.SKIPPED, note="rollout.gpu_memory_utilization not given")
        )
        return
    if opts.rollout_started:
        out.checks.append(
            CheckResult(id="vllm_oom_risk", state=CheckState.SKIPPED, note="the rollout engine already started")
        )
        return
    gpus = list(opts.rollout_gpus) if opts.rollout_gpus is not None else [d.index for d in snap.devices]
    risky: list[tuple[DeviceSample, int]] = []
    blind: list[int] = []
    for index in gpus:
        dev = snap.device(index)
        if dev is None or dev.memory_free is NA or dev.memory_total is NA:
            blind.append(index)
            continue
        if procs is not None and any(
            p.gpu == index
            and p.role is not None
            and p.role.kind is RoleKind.ROLLOUT
            and p.memory_used is not NA
            and p.memory_used >= opts.engine_min_bytes
            for p in procs
        ):
            continue  # the engine is already up on this GPU
        required = math.ceil(util * _usable_total(dev))
        if dev.memory_free < required:
            risky.append((dev, required))
    if not risky:
        state = CheckState.BLIND if blind and len(blind) == len(gpus) else CheckState.OK
        note = f"no memory reading for GPU(s) {', '.join(map(str, blind))}" if blind else None
        out.checks.append(CheckResult(id="vllm_oom_risk", state=state, note=note))
        return
    worst_free = min(dev.memory_free / _usable_total(dev) for dev, _ in risky if dev.memory_free is not NA)
    fixes: list[Fix] = []
    proposed = math.floor(worst_free * 100 - 2) / 100
    if proposed >= 0.3:
        fixes.append(
            Fix(
                path="rollout.gpu_memory_utilization",
                current=util,
                proposed=proposed,
                why=f"vLLM asks for {util:.2f} x total at start; only {worst_free:.2f} x total is free now. "
                "Lowering it leaves less KV cache: fewer concurrent sequences.",
            )
        )
    holders = [p for p in procs or () if p.gpu in {dev.index for dev, _ in risky}]
    evidence = [_device_evidence(snap, dev) for dev, _ in risky]
    evidence += [_process_evidence(snap, p) for p in holders][:8]
    first, required = risky[0]
    out.findings.append(
        Finding(
            id="vllm_oom_risk",
            severity=Severity.CRITICAL,
            title=entry("vllm_oom_risk").title,
            explanation=(
                f"The rollout's vLLM engine will ask for gpu_memory_utilization={util:.2f} of each GPU "
                f"({to_mib(required)} MiB on GPU {first.index}) but only {_mib(first.memory_free)} MiB is free. "
                "vLLM then refuses to start ('Free memory on device ... is less than desired GPU memory "
                "utilization') and the run hangs without rollouts."
            ),
            evidence=evidence,
            fixes=fixes,
            action="free the memory first: stop the processes listed (see gpu_orphan), or give the rollout other GPUs",
            data={
                "gpu_memory_utilization": util,
                "gpus": [
                    {
                        "gpu": dev.index,
                        "free": dev.memory_free,
                        "total": dev.memory_total,
                        "required": req,
                    }
                    for dev, req in risky
                ],
            },
        )
    )
    out.checks.append(CheckResult(id="vllm_oom_risk", state=CheckState.FINDING))


def _check_idle(
    out: GpuAssessment,
    history: Sequence[GpuSnapshot],
    procs: tuple[ProcessSample, ...] | None,
    opts: GpuCheckOptions,
) -> None:
    if len(history) < 2:
        out.checks.append(
            CheckResult(
                id="gpu_idle",
                state=CheckState.SKIPPED,
                note="needs samples over time (a1x-tui gpu-agent RUN_DIR writes them)",
            )
        )
        return
    if procs is None:
        out.checks.append(CheckResult(id="gpu_idle", state=CheckState.BLIND, note="no per-process sample yet"))
        return
    replica_gpus: dict[int, set[str]] = {}
    for p in procs:
        if p.role is not None and p.role.kind.replica:
            replica_gpus.setdefault(p.gpu, set()).add(p.role.label)
    if not replica_gpus:
        out.checks.append(CheckResult(id="gpu_idle", state=CheckState.OK, note="no training replica on the GPUs"))
        return
    found = False
    for gpu in sorted(replica_gpus):
        stretch = _idle_stretch(history, gpu, opts, since=_replica_since(history, gpu))
        if stretch is None:
            continue
        first, last = stretch
        seconds = last.ts - first.ts
        if seconds < opts.idle_after_s:
            continue
        found = True
        labels = ", ".join(sorted(replica_gpus[gpu]))
        first_dev, last_dev = first.device(gpu), last.device(gpu)
        assert first_dev is not None and last_dev is not None
        out.findings.append(
            Finding(
                id="gpu_idle",
                severity=Severity.WARNING,
                title=entry("gpu_idle").title,
                explanation=(
                    f"GPU {gpu} ({labels}) has stayed at or below {opts.idle_utilization_pct}% utilisation for "
                    f"{_duration(seconds)}. The replica is alive but not computing: it waits for rollouts, "
                    "weights or the controller, or it hangs (compare the logs: last Step/Stat line)."
                ),
                evidence=[_device_evidence(first, first_dev), _device_evidence(last, last_dev)],
                action="check the run's logs for the last Step:/Stat: line (a1x-tui --check RUN_DIR)",
                data={"gpu": gpu, "replicas": sorted(replica_gpus[gpu]), "idle_seconds": round(seconds, 1)},
            )
        )
    out.checks.append(CheckResult(id="gpu_idle", state=CheckState.FINDING if found else CheckState.OK))


def _replica_since(history: Sequence[GpuSnapshot], gpu: int) -> float:
    """When a replica process was first seen on ``gpu`` without interruption up to the latest process sample."""
    since = history[-1].ts
    for snap in reversed(history):
        if snap.processes is None:
            continue
        if not any(p.gpu == gpu and p.role is not None and p.role.kind.replica for p in snap.processes):
            break
        since = snap.ts
    return since


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} minutes"
    return f"{seconds / 3600:.1f} hours"


def _idle_stretch(
    history: Sequence[GpuSnapshot], gpu: int, opts: GpuCheckOptions, *, since: float
) -> tuple[GpuSnapshot, GpuSnapshot] | None:
    """The trailing run of samples (not before ``since``) where ``gpu`` stayed idle, without gaps."""
    last: GpuSnapshot | None = None
    first: GpuSnapshot | None = None
    for snap in reversed(history):
        if snap.ts < since:
            break
        dev = snap.device(gpu)
        if dev is None or dev.gpu_utilization is NA or dev.gpu_utilization > opts.idle_utilization_pct:
            break
        if first is not None and first.ts - snap.ts > opts.max_gap_s:
            break
        if last is None:
            last = snap
        first = snap
    if first is None or last is None:
        return None
    return first, last


def _check_near_limit(
    out: GpuAssessment, snap: GpuSnapshot, procs: tuple[ProcessSample, ...] | None, opts: GpuCheckOptions
) -> None:
    found = False
    for dev in snap.devices:
        if dev.memory_used is NA or dev.memory_total is NA or dev.memory_total <= 0:
            continue
        fraction = dev.memory_used / dev.memory_total
        limit = opts.near_limit_fraction
        holders = [p for p in procs or () if p.gpu == dev.index]
        rollout_only = bool(holders) and all(p.role is not None and p.role.kind is RoleKind.ROLLOUT for p in holders)
        if rollout_only and opts.gpu_memory_utilization is not None:
            # vLLM takes gpu_memory_utilization x total on purpose.
            limit = max(limit, min(0.995, opts.gpu_memory_utilization + 0.03))
        if fraction < limit:
            continue
        found = True
        out.findings.append(
            Finding(
                id="gpu_memory_near_limit",
                severity=Severity.WARNING,
                title=entry("gpu_memory_near_limit").title,
                explanation=(
                    f"GPU {dev.index} uses {fraction:.0%} of its memory ({_mib(dev.memory_used)} of "
                    f"{_mib(dev.memory_total)} MiB). The next allocation spike (a longer sequence, a weight "
                    "sync buffer) can end in CUDA out of memory."
                ),
                evidence=[_device_evidence(snap, dev), *[_process_evidence(snap, p) for p in holders][:8]],
                action="lower the per-GPU load (smaller rollout batch or model_max_length, more dp_shard), "
                "or stop what else holds memory on this GPU",
                data={
                    "gpu": dev.index,
                    "used": dev.memory_used,
                    "total": dev.memory_total,
                    "fraction": round(fraction, 4),
                },
            )
        )
    out.checks.append(CheckResult(id="gpu_memory_near_limit", state=CheckState.FINDING if found else CheckState.OK))


# -- helpers -----------------------------------------------------------------------------------


def _usable_total(dev: DeviceSample) -> int:
    """The total vLLM multiplies by ``gpu_memory_utilization``: CUDA's, i.e. used + free without reserved.

    Seen on the H200: torch.cuda.mem_get_info() total = NVML v2 used + free = 143155 MiB, while
    NVML's total (143771 MiB) includes the 615 MiB the driver reserves (docs/gpu.md).
    """
    if dev.memory_used is not NA and dev.memory_free is not NA:
        return dev.memory_used + dev.memory_free
    assert dev.memory_total is not NA
    return dev.memory_total


def _latest_with_processes(history: Sequence[GpuSnapshot]) -> GpuSnapshot | None:
    for snap in reversed(history):
        if snap.processes is not None:
            return snap
    return None


def _with_roles(procs: tuple[ProcessSample, ...], roles: Mapping[int, ProcessRole] | None) -> tuple[ProcessSample, ...]:
    if not roles:
        return procs
    return tuple(
        ProcessSample(gpu=p.gpu, pid=p.pid, memory_used=p.memory_used, role=roles.get(p.pid, p.role)) for p in procs
    )


def _device_evidence(snap: GpuSnapshot, dev: DeviceSample) -> Evidence:
    if snap.path is not None:
        return Evidence(file=snap.path, line=snap.line, text=dev.render())
    return Evidence(file=f"nvml:{dev.index}", line=None, text=dev.render())


def _process_evidence(snap: GpuSnapshot, proc: ProcessSample) -> Evidence:
    text = proc.render()
    if proc.role is not None and proc.role.detail:
        text = f"{text} ({proc.role.detail})"
    if snap.path is not None:
        return Evidence(file=snap.path, line=snap.line, text=text)
    return Evidence(file=f"nvml:{proc.gpu}", line=None, text=text)


def _mib(value: int | object) -> str:
    return str(to_mib(value)) if isinstance(value, int) else "N/A"


def _current_user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None
