"""The NVML boundary: a small protocol, the real ``pynvml`` implementation, and the one-line reasons.

Everything above this module sees readings (``int`` or ``NA``) and two exceptions:
``NvmlUnavailable`` (NVML cannot be used at all on this host: no library, no driver, a driver and
library of different versions, no GPU) and ``NvmlCallError`` (one call failed for a reason other
than "not supported", e.g. the GPU fell off the bus). "Not supported" is never an exception here:
it is ``NA`` (style.md, nvitop: "Not available" is a value, not an exception).

``pynvml`` is imported on first use, so importing this package costs nothing on a laptop.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol, TypeVar

from a1x_diagnostics.gpu.na import NA, MaybeInt, MaybeStr
from a1x_diagnostics.gpu.samples import DeviceInfo

T = TypeVar("T")

# NVML return codes (nvml.h); the numbers are stable across driver releases.
_NOT_SUPPORTED = 3
_NO_PERMISSION = 4
_DRIVER_NOT_LOADED = 9
_LIBRARY_NOT_FOUND = 12
_FUNCTION_NOT_FOUND = 13
_GPU_IS_LOST = 15
_LIB_RM_VERSION_MISMATCH = 18
# A reading these codes refuse is a value the GPU cannot give, not a failure.
_NA_CODES = frozenset({_NOT_SUPPORTED, _NO_PERMISSION, _FUNCTION_NOT_FOUND})


class NvmlUnavailable(Exception):
    """NVML cannot be used on this host. ``str(exc)`` is the one line to show the user."""

    def __init__(self, reason: str, *, code: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code  # not_installed | no_library | no_driver | mismatch | no_permission | no_gpu | error


class NvmlCallError(Exception):
    """One NVML call failed for a reason other than 'not supported' (``str(exc)`` says which)."""


@dataclass(frozen=True, slots=True)
class MemoryReading:
    total: MaybeInt
    used: MaybeInt
    free: MaybeInt


@dataclass(frozen=True, slots=True)
class UtilizationReading:
    gpu: MaybeInt
    memory: MaybeInt


@dataclass(frozen=True, slots=True)
class ProcessReading:
    pid: int
    memory_used: MaybeInt


class NvmlBackend(Protocol):
    """What the sampler needs from NVML. Indices are NVML's (all GPUs, not CUDA_VISIBLE_DEVICES')."""

    def init(self) -> None:
        """Load and initialise; raise ``NvmlUnavailable`` with a one-line reason."""

    def shutdown(self) -> None: ...

    def driver_version(self) -> MaybeStr: ...

    def device_count(self) -> int: ...

    def device_info(self, index: int) -> DeviceInfo: ...

    def memory(self, index: int) -> MemoryReading: ...

    def utilization(self, index: int) -> UtilizationReading: ...

    def temperature(self, index: int) -> MaybeInt: ...

    def power_usage(self, index: int) -> MaybeInt: ...

    def processes(self, index: int) -> list[ProcessReading]: ...


def unavailable_from_code(code: int, detail: str) -> NvmlUnavailable:
    """The one line for an ``nvmlInit`` failure, by NVML return code."""
    if code == _LIBRARY_NOT_FOUND:
        return NvmlUnavailable(
            "NVML library (libnvidia-ml.so.1) not found: no NVIDIA driver on this host", code="no_library"
        )
    if code == _DRIVER_NOT_LOADED:
        return NvmlUnavailable("the NVIDIA kernel driver is not loaded (nvidia-smi fails too)", code="no_driver")
    if code == _LIB_RM_VERSION_MISMATCH:
        return NvmlUnavailable(
            "NVIDIA driver/library version mismatch: the NVML library does not match the loaded kernel "
            "driver (usually after a driver upgrade; reboot or reload the nvidia module)",
            code="mismatch",
        )
    if code == _NO_PERMISSION:
        return NvmlUnavailable("no permission to open the NVIDIA devices (/dev/nvidia*)", code="no_permission")
    return NvmlUnavailable(f"NVML failed to initialise: {detail}", code="error")


class PynvmlBackend:
    """The real NVML, through nvidia-ml-py's ``pynvml`` module (imported lazily, in ``init``)."""

    def __init__(self, module_name: str = "pynvml") -> None:
        self._module_name = module_name
        self._nv: ModuleType | None = None
        self._handles: dict[int, Any] = {}
        self._memory_v2: bool | None = None  # None: not tried yet

    # -- lifecycle -----------------------------------------------------------------------------
    def init(self) -> None:
        if self._nv is not None:
            return
        try:
            nv = importlib.import_module(self._module_name)
        except ImportError:
            raise NvmlUnavailable(
                "nvidia-ml-py is not installed (the pynvml module is missing): pip install nvidia-ml-py",
                code="not_installed",
            ) from None
        try:
            nv.nvmlInit()
        except nv.NVMLError as exc:
            raise unavailable_from_code(int(getattr(exc, "value", -1)), str(exc)) from None
        except OSError as exc:  # a broken library file fails in dlopen before NVML answers
            raise NvmlUnavailable(f"NVML library could not be loaded: {exc}", code="no_library") from None
        self._nv = nv
        try:
            count = int(nv.nvmlDeviceGetCount())
        except nv.NVMLError as exc:
            self.shutdown()
            raise unavailable_from_code(int(getattr(exc, "value", -1)), str(exc)) from None
        if count == 0:
            self.shutdown()
            raise NvmlUnavailable("NVML found no NVIDIA GPU on this host", code="no_gpu")

    def shutdown(self) -> None:
        nv, self._nv = self._nv, None
        self._handles.clear()
        if nv is not None:
            with contextlib.suppress(nv.NVMLError):
                nv.nvmlShutdown()

    # -- calls ---------------------------------------------------------------------------------
    def _module(self) -> ModuleType:
        if self._nv is None:
            self.init()
        assert self._nv is not None
        return self._nv

    def _call(self, fn: Callable[[], T]) -> T:
        """Run one NVML call; 'not supported' and friends become ``NotSupported``, others ``NvmlCallError``."""
        nv = self._module()
        try:
            return fn()
        except nv.NVMLError as exc:
            if int(getattr(exc, "value", -1)) in _NA_CODES:
                raise _NotSupported from None
            raise NvmlCallError(str(exc)) from None

    def _read(self, fn: Callable[[], T]) -> T | None:
        """``_call`` with ``None`` for a reading the device cannot give."""
        try:
            return self._call(fn)
        except _NotSupported:
            return None

    def _handle(self, index: int) -> Any:
        handle = self._handles.get(index)
        if handle is None:
            nv = self._module()
            try:
                handle = self._call(lambda: nv.nvmlDeviceGetHandleByIndex(index))
            except _NotSupported:
                raise NvmlCallError(f"no handle for GPU {index}") from None
            self._handles[index] = handle
        return handle

    def driver_version(self) -> MaybeStr:
        nv = self._module()
        value = self._read(nv.nvmlSystemGetDriverVersion)
        return NA if value is None else _text(value)

    def device_count(self) -> int:
        nv = self._module()
        return int(self._call(nv.nvmlDeviceGetCount))

    def device_info(self, index: int) -> DeviceInfo:
        nv = self._module()
        h = self._handle(index)
        name = self._read(lambda: nv.nvmlDeviceGetName(h))
        uuid = self._read(lambda: nv.nvmlDeviceGetUUID(h))
        limit = self._read(lambda: nv.nvmlDeviceGetEnforcedPowerLimit(h))
        memory = self.memory(index)
        return DeviceInfo(
            index=index,
            name=NA if name is None else _text(name),
            uuid=NA if uuid is None else _text(uuid),
            memory_total=memory.total,
            power_limit=NA if limit is None else int(limit),
        )

    def memory(self, index: int) -> MemoryReading:
        """Memory as nvidia-smi shows it: the v2 call, whose ``used`` leaves out driver-reserved memory."""
        nv = self._module()
        h = self._handle(index)
        if self._memory_v2 is not False and hasattr(nv, "nvmlMemory_v2"):
            try:
                info = self._call(lambda: nv.nvmlDeviceGetMemoryInfo(h, version=nv.nvmlMemory_v2))
                self._memory_v2 = True
                return MemoryReading(int(info.total), int(info.used), int(info.free))
            except (_NotSupported, NvmlCallError, TypeError):
                if self._memory_v2:
                    raise
                self._memory_v2 = False
        v1 = self._read(lambda: nv.nvmlDeviceGetMemoryInfo(h))
        if v1 is None:
            return MemoryReading(NA, NA, NA)
        return MemoryReading(int(v1.total), int(v1.used), int(v1.free))

    def utilization(self, index: int) -> UtilizationReading:
        nv = self._module()
        h = self._handle(index)
        rates = self._read(lambda: nv.nvmlDeviceGetUtilizationRates(h))
        if rates is None:
            return UtilizationReading(NA, NA)
        return UtilizationReading(int(rates.gpu), int(rates.memory))

    def temperature(self, index: int) -> MaybeInt:
        nv = self._module()
        h = self._handle(index)
        value = self._read(lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))
        return NA if value is None else int(value)

    def power_usage(self, index: int) -> MaybeInt:
        nv = self._module()
        h = self._handle(index)
        value = self._read(lambda: nv.nvmlDeviceGetPowerUsage(h))
        return NA if value is None else int(value)

    def processes(self, index: int) -> list[ProcessReading]:
        """Compute and graphics processes on one GPU, one entry per pid (memory summed)."""
        nv = self._module()
        h = self._handle(index)
        found: dict[int, MaybeInt] = {}
        for name in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
            for proc in self._process_list(nv, name, h):
                used: MaybeInt = NA if proc.usedGpuMemory is None else int(proc.usedGpuMemory)
                pid = int(proc.pid)
                before = found.get(pid)
                if before is None or before is NA:
                    found[pid] = used
                elif used is not NA:
                    found[pid] = before + used
        return [ProcessReading(pid, used) for pid, used in found.items()]

    def _process_list(self, nv: ModuleType, name: str, handle: Any) -> list[Any]:
        # Newest struct first; older drivers only know _v2 (pynvml's unversioned name assumes _v3).
        for suffix in ("_v3", "_v2", ""):
            fn: Callable[[Any], list[Any]] | None = getattr(nv, name + suffix, None)
            if fn is None:
                continue
            try:
                return list(self._call(functools.partial(fn, handle)))
            except _NotSupported:
                continue
            except NvmlCallError:
                raise
            except Exception as exc:  # pynvml's NVMLLibraryMismatchError for a missing symbol
                if type(exc).__name__ != "NVMLLibraryMismatchError":
                    raise
        return []


class _NotSupported(Exception):
    """Internal: the reading is ``NA``."""


def _text(value: object) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)
