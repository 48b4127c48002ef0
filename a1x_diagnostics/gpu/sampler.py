"""The GPU sampler: NVML read in tiers, in a thread of its own, never in the caller's way.

Tiers (style.md, nvitop: "caches with a time-to-live per field: cheap NVML reads every second,
costly ones on a slower tier"):

- static, once per sampler: name, UUID, total memory, power limit, driver version;
- fast, every ``interval_s`` (1 s): memory, utilisation, temperature, power of each GPU;
- processes, every ``process_interval_s`` (5 s): per-process memory, then the role join (psutil,
  cached per process);
- never in the loop: PCIe throughput and other counters that cost tens of milliseconds
  (``benchmarks/gpu_sampler.py`` measures each tier).

NVML is initialised lazily, on the sampler's own thread when it runs as one, so a slow driver
never blocks a UI. When NVML cannot be used, ``unavailable`` holds the one-line reason and the
sampler stops; nothing is raised at the caller.
"""

from __future__ import annotations

import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from a1x_diagnostics.gpu.backend import NvmlBackend, NvmlCallError, NvmlUnavailable, PynvmlBackend
from a1x_diagnostics.gpu.na import NA, MaybeInt
from a1x_diagnostics.gpu.roles import RoleJoin, RoleResolver
from a1x_diagnostics.gpu.samples import DeviceInfo, DeviceSample, GpuSnapshot, ProcessSample
from a1x_diagnostics.gpu.store import SampleWriter

Listener = Callable[[GpuSnapshot], None]


@dataclass(frozen=True, slots=True)
class SamplerState:
    """What a UI shows about the sampler itself."""

    running: bool
    unavailable: str | None  # the one-line reason NVML cannot be used
    driver: str | None
    devices: tuple[DeviceInfo, ...]
    role_note: str | None  # PID namespace hides processes
    errors: int  # sampling passes that failed (the thread keeps going)


class GpuSampler:
    """Reads NVML in tiers; ``sample()`` for one reading, ``start()`` for a background thread.

    ``history`` keeps the last ``history_size`` snapshots (thread-safe copies via ``history_list``).
    ``listeners`` are called on the sampler thread with each new snapshot: keep them short (post a
    message to the UI, do not render there).
    """

    def __init__(
        self,
        backend: NvmlBackend | None = None,
        *,
        interval_s: float = 1.0,
        process_interval_s: float = 5.0,
        resolver: RoleResolver | None = None,
        writer: SampleWriter | None = None,
        history_size: int = 3600,
        host: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.backend: NvmlBackend = backend if backend is not None else PynvmlBackend()
        self.interval_s = max(0.05, interval_s)
        self.process_interval_s = max(self.interval_s, process_interval_s)
        self.resolver = resolver if resolver is not None else RoleResolver()
        self.writer = writer
        self.host = host or socket.gethostname()
        self._clock = clock
        self._lock = threading.Lock()  # guards state read by other threads
        self._sample_lock = threading.Lock()  # one sampling pass at a time (thread and caller)
        self._history: deque[GpuSnapshot] = deque(maxlen=max(1, history_size))
        self._listeners: list[Listener] = []
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._ready = False
        self._infos: tuple[DeviceInfo, ...] = ()
        self._driver: str | None = None
        self._unavailable: str | None = None
        self._last_processes_at: float | None = None
        self._processes: tuple[ProcessSample, ...] = ()
        self._role_note: str | None = None
        self._errors = 0

    # -- state ---------------------------------------------------------------------------------
    @property
    def unavailable(self) -> str | None:
        return self._unavailable

    @property
    def state(self) -> SamplerState:
        with self._lock:
            return SamplerState(
                running=self._thread is not None and self._thread.is_alive(),
                unavailable=self._unavailable,
                driver=self._driver,
                devices=self._infos,
                role_note=self._role_note,
                errors=self._errors,
            )

    @property
    def latest(self) -> GpuSnapshot | None:
        with self._lock:
            return self._history[-1] if self._history else None

    def history_list(self) -> list[GpuSnapshot]:
        with self._lock:
            return list(self._history)

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    # -- sampling ------------------------------------------------------------------------------
    def open(self) -> bool:
        """Initialise NVML and read the static tier; ``False`` (and ``unavailable`` set) when it cannot."""
        if self._ready:
            return True
        if self._unavailable is not None:
            return False
        try:
            self.backend.init()
            count = self.backend.device_count()
            infos = tuple(self.backend.device_info(i) for i in range(count))
            driver = self.backend.driver_version()
        except NvmlUnavailable as exc:
            self._unavailable = exc.reason
            if self.writer is not None:
                self.writer.write_event("unavailable", host=self.host, reason=exc.reason, code=exc.code)
            return False
        except NvmlCallError as exc:
            self._unavailable = f"NVML failed while listing GPUs: {exc}"
            return False
        with self._lock:
            self._infos = infos
            self._driver = None if driver is NA else str(driver)
        self._ready = True
        if self.writer is not None:
            self.writer.write_start(
                host=self.host, driver=self._driver, devices=list(infos), interval_s=self.interval_s
            )
        return True

    def sample(self, *, processes: bool | None = None) -> GpuSnapshot | None:
        """Take one snapshot now (on the caller's thread). ``processes``: force (or skip) the process tier.

        Returns ``None`` when NVML is unavailable.
        """
        with self._sample_lock:
            snapshot = self._sample(processes)
        if snapshot is not None:
            for listener in list(self._listeners):
                listener(snapshot)
        return snapshot

    def _sample(self, processes: bool | None) -> GpuSnapshot | None:
        if not self.open():
            return None
        now = self._clock()
        devices = tuple(self._read_device(info) for info in self._infos)
        due = processes
        if due is None:
            due = self._last_processes_at is None or now - self._last_processes_at >= self.process_interval_s - 1e-3
        procs: tuple[ProcessSample, ...] | None = None
        if due:
            procs = self._read_processes()
            self._last_processes_at = now
        snapshot = GpuSnapshot(
            ts=now,
            host=self.host,
            devices=devices,
            processes=procs,
            processes_ts=now if procs is not None else None,
        )
        with self._lock:
            self._history.append(snapshot)
        if self.writer is not None:
            self.writer.write_sample(snapshot)
        return snapshot

    @property
    def processes(self) -> tuple[ProcessSample, ...]:
        """The last process tier read (with roles)."""
        with self._lock:
            return self._processes

    def _read_device(self, info: DeviceInfo) -> DeviceSample:
        i = info.index
        try:
            mem = self.backend.memory(i)
            util = self.backend.utilization(i)
            temp = self.backend.temperature(i)
            power = self.backend.power_usage(i)
        except NvmlCallError as exc:
            return DeviceSample(index=i, name=info.name, memory_total=info.memory_total, error=str(exc))
        return DeviceSample(
            index=i,
            name=info.name,
            memory_total=mem.total if mem.total is not NA else info.memory_total,
            memory_used=mem.used,
            memory_free=mem.free,
            gpu_utilization=util.gpu,
            memory_utilization=util.memory,
            temperature=temp,
            power_usage=power,
        )

    def _read_processes(self) -> tuple[ProcessSample, ...]:
        readings: list[tuple[int, int, MaybeInt]] = []
        for info in self._infos:
            try:
                for p in self.backend.processes(info.index):
                    readings.append((info.index, p.pid, p.memory_used))
            except NvmlCallError:
                continue  # that GPU's fast tier already carries the error
        join: RoleJoin = self.resolver.join(pid for _, pid, _ in readings)
        procs = tuple(
            ProcessSample(gpu=gpu, pid=pid, memory_used=used, role=join.roles.get(pid)) for gpu, pid, used in readings
        )
        with self._lock:
            self._processes = procs
            self._role_note = join.note
        return procs

    # -- thread --------------------------------------------------------------------------------
    def start(self) -> None:
        """Sample on a daemon thread until ``stop()``. Returns at once."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="a1x-gpu-sampler", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = 5.0) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        if self._ready:
            self.backend.shutdown()
            self._ready = False

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the thread ends (NVML unavailable, or stopped); ``True`` if it ended."""
        thread = self._thread
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def _run(self) -> None:
        if not self.open():
            return
        next_at = time.monotonic()
        while not self._stop.is_set():
            try:
                self.sample()
            except Exception:  # a broken listener or disk must not end monitoring
                with self._lock:
                    self._errors += 1
            next_at += self.interval_s
            delay = next_at - time.monotonic()
            if delay < 0:  # fell behind (suspended laptop, slow disk): do not burst to catch up
                next_at = time.monotonic()
                delay = 0.0
            if self._stop.wait(delay):
                break
