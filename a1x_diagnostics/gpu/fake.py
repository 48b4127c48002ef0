"""A scripted NVML for tests, the benchmark's CPU mode and the demo: no GPU, no driver.

``FakeBackend`` holds per-GPU readings that a test sets and changes; ``FakeBackend.from_samples``
loads frames from a samples file recorded on a real GPU (``tests/gpu/fixtures/``), so the CPU tests
replay what an H200 reported. It counts calls per method, so tests can prove the tiers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from a1x_diagnostics.gpu.backend import (
    MemoryReading,
    NvmlCallError,
    NvmlUnavailable,
    ProcessReading,
    UtilizationReading,
)
from a1x_diagnostics.gpu.na import NA, MaybeInt, MaybeStr
from a1x_diagnostics.gpu.samples import DeviceInfo, DeviceSample, GpuSnapshot


@dataclass(slots=True)
class FakeDevice:
    """One GPU's current readings (bytes, percent, C, mW); ``NA`` where the GPU cannot say."""

    name: MaybeStr = "NVIDIA H200"
    uuid: MaybeStr = NA
    memory_total: MaybeInt = 150_754_820_096
    memory_used: MaybeInt = 0
    gpu_utilization: MaybeInt = 0
    memory_utilization: MaybeInt = 0
    temperature: MaybeInt = 30
    power_usage: MaybeInt = 75_000
    power_limit: MaybeInt = 700_000
    processes: list[ProcessReading] = field(default_factory=list)
    lost: bool = False  # every call fails, as for a GPU that fell off the bus

    @property
    def memory_free(self) -> MaybeInt:
        if self.memory_total is NA or self.memory_used is NA:
            return NA
        return self.memory_total - self.memory_used


@dataclass(slots=True)
class Frame:
    """One recorded moment: device readings and (when recorded then) the process list."""

    devices: list[DeviceSample]
    processes: dict[int, list[ProcessReading]] | None


class FakeBackend:
    """Implements ``NvmlBackend`` from in-memory readings."""

    def __init__(
        self,
        devices: Sequence[FakeDevice] = (),
        *,
        unavailable: NvmlUnavailable | None = None,
        driver: str = "580.159.04",
    ) -> None:
        self.devices = list(devices)
        self.unavailable = unavailable
        self.driver = driver
        self.calls: Counter[str] = Counter()
        self.initialised = False
        self.frames: list[Frame] = []
        self.frame_index = -1

    # -- recorded frames -----------------------------------------------------------------------
    @classmethod
    def from_samples(cls, path: str | Path) -> FakeBackend:
        """Frames from a samples file (``store.read_samples``); device 0's memory read moves to the next."""
        from a1x_diagnostics.gpu.store import read_log

        log = read_log(Path(path))
        if not log.snapshots:
            raise ValueError(f"{path}: no samples to replay")
        first = log.snapshots[0]
        backend = cls(
            [
                FakeDevice(
                    name=info.name,
                    uuid=info.uuid,
                    memory_total=info.memory_total,
                    power_limit=info.power_limit,
                )
                for info in (log.infos[i] for i in sorted(log.infos))
            ]
            or [FakeDevice() for _ in first.devices]
        )
        backend.frames = [_frame(s) for s in log.snapshots]
        backend._apply(0)
        return backend

    def _apply(self, k: int) -> None:
        self.frame_index = k
        frame = self.frames[k]
        for sample in frame.devices:
            if sample.index >= len(self.devices):
                continue
            d = self.devices[sample.index]
            d.memory_total = sample.memory_total
            d.memory_used = sample.memory_used
            d.gpu_utilization = sample.gpu_utilization
            d.memory_utilization = sample.memory_utilization
            d.temperature = sample.temperature
            d.power_usage = sample.power_usage
        if frame.processes is not None:
            for i, d in enumerate(self.devices):
                d.processes = list(frame.processes.get(i, []))

    def advance(self) -> bool:
        """Go to the next recorded frame; ``False`` when the recording is over (it stays on the last)."""
        if self.frame_index + 1 >= len(self.frames):
            return False
        self._apply(self.frame_index + 1)
        return True

    # -- NvmlBackend ---------------------------------------------------------------------------
    def _device(self, index: int, what: str) -> FakeDevice:
        self.calls[what] += 1
        if not self.initialised:
            self.init()
        if index >= len(self.devices):
            raise NvmlCallError("Invalid Argument")
        d = self.devices[index]
        if d.lost:
            raise NvmlCallError("GPU is lost")
        return d

    def init(self) -> None:
        self.calls["init"] += 1
        if self.unavailable is not None:
            raise self.unavailable
        self.initialised = True

    def shutdown(self) -> None:
        self.calls["shutdown"] += 1
        self.initialised = False

    def driver_version(self) -> MaybeStr:
        self.calls["driver_version"] += 1
        return self.driver

    def device_count(self) -> int:
        self.calls["device_count"] += 1
        return len(self.devices)

    def device_info(self, index: int) -> DeviceInfo:
        d = self._device(index, "device_info")
        return DeviceInfo(index=index, name=d.name, uuid=d.uuid, memory_total=d.memory_total, power_limit=d.power_limit)

    def memory(self, index: int) -> MemoryReading:
        d = self._device(index, "memory")
        return MemoryReading(d.memory_total, d.memory_used, d.memory_free)

    def utilization(self, index: int) -> UtilizationReading:
        d = self._device(index, "utilization")
        return UtilizationReading(d.gpu_utilization, d.memory_utilization)

    def temperature(self, index: int) -> MaybeInt:
        return self._device(index, "temperature").temperature

    def power_usage(self, index: int) -> MaybeInt:
        return self._device(index, "power_usage").power_usage

    def processes(self, index: int) -> list[ProcessReading]:
        return list(self._device(index, "processes").processes)


def _frame(snapshot: GpuSnapshot) -> Frame:
    procs: dict[int, list[ProcessReading]] | None = None
    if snapshot.processes is not None:
        procs = {}
        for p in snapshot.processes:
            procs.setdefault(p.gpu, []).append(ProcessReading(p.pid, p.memory_used))
    return Frame(list(snapshot.devices), procs)


def fake_h200(count: int = 1, processes: Iterable[tuple[int, int, int]] = ()) -> FakeBackend:
    """``count`` idle H200s; ``processes`` as (gpu, pid, bytes)."""
    backend = FakeBackend([FakeDevice(uuid=f"GPU-fake-{i}") for i in range(count)])
    for gpu, pid, used in processes:
        d = backend.devices[gpu]
        d.processes.append(ProcessReading(pid, used))
        if d.memory_used is not NA:
            d.memory_used += used
    return backend
