"""Helpers for the GPU monitor tests (imported as ``gpu_helpers``): a scripted /proc and snapshots built by hand."""

from __future__ import annotations

from collections.abc import Iterable

from a1x_diagnostics.gpu import DeviceSample, GpuSnapshot, ProcessRole, ProcessSample, ProcInfo, RoleKind
from a1x_diagnostics.gpu.samples import FOREIGN_LABEL

GIB = 1 << 30
H200_TOTAL = 143771 << 20


class FakeInspector:
    """A /proc of our own making: pid -> ProcInfo. Missing pids are 'not visible'."""

    def __init__(self, infos: Iterable[ProcInfo] = ()) -> None:
        self.infos = {i.pid: i for i in infos}
        self.reads = 0

    def add(self, info: ProcInfo) -> None:
        self.infos[info.pid] = info

    def info(self, pid: int) -> ProcInfo | None:
        self.reads += 1
        return self.infos.get(pid)

    def create_time(self, pid: int) -> float | None:
        info = self.infos.get(pid)
        return None if info is None else info.create_time


def proc(
    pid: int, ppid: int | None, *cmd: str, env: dict[str, str] | None = None, stdout: str | None = None
) -> ProcInfo:
    return ProcInfo(
        pid=pid, ppid=ppid, cmdline=tuple(cmd), environ=env or {}, user="alice", create_time=1000.0 + pid, stdout=stdout
    )


def role(label: str, kind: RoleKind, **kw: object) -> ProcessRole:
    return ProcessRole(label=label, kind=kind, source="test", **kw)  # type: ignore[arg-type]


FOREIGN = role(FOREIGN_LABEL, RoleKind.FOREIGN, command="python leftover.py", user="alice")
POLICY0 = role("policy_0", RoleKind.POLICY)
ROLLOUT0 = role("rollout_0", RoleKind.ROLLOUT)


def device(index: int = 0, used: int = 0, util: int = 0, total: int = H200_TOTAL) -> DeviceSample:
    return DeviceSample(
        index=index,
        name="NVIDIA H200",
        memory_total=total,
        memory_used=used,
        memory_free=total - used,
        gpu_utilization=util,
        memory_utilization=0,
        temperature=30,
        power_usage=80_000,
    )


def snapshot(
    ts: float,
    devices: Iterable[DeviceSample],
    processes: Iterable[tuple[int, int, int, ProcessRole | None]] | None = None,
) -> GpuSnapshot:
    """``processes``: (gpu, pid, bytes, role)."""
    procs = None
    if processes is not None:
        procs = tuple(ProcessSample(gpu=g, pid=p, memory_used=b, role=r) for g, p, b, r in processes)
    return GpuSnapshot(ts=ts, host="node1", devices=tuple(devices), processes=procs, processes_ts=ts if procs else None)
