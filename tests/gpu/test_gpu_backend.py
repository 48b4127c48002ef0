"""The real ``PynvmlBackend`` against a scripted ``pynvml`` module: error codes, NA, API fallbacks."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest

from a1x_diagnostics.gpu import NA, GpuSampler, NvmlCallError, NvmlUnavailable, PynvmlBackend


class NVMLError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return {3: "Not Supported", 15: "GPU is lost", 13: "Function Not Found"}.get(self.value, f"code {self.value}")


def _module(**overrides: Any) -> types.ModuleType:
    m = types.ModuleType("fake_pynvml")
    m.NVMLError = NVMLError  # type: ignore[attr-defined]
    m.NVML_TEMPERATURE_GPU = 0  # type: ignore[attr-defined]
    m.nvmlMemory_v2 = 0x02000028  # type: ignore[attr-defined]
    mem = types.SimpleNamespace(total=100 << 20, used=30 << 20, free=70 << 20, reserved=5 << 20)
    proc = types.SimpleNamespace(pid=42, usedGpuMemory=10 << 20)
    funcs: dict[str, Any] = {
        "nvmlInit": lambda: None,
        "nvmlShutdown": lambda: None,
        "nvmlDeviceGetCount": lambda: 1,
        "nvmlDeviceGetHandleByIndex": lambda i: f"h{i}",
        "nvmlDeviceGetName": lambda h: b"NVIDIA H200",
        "nvmlDeviceGetUUID": lambda h: "GPU-1",
        "nvmlDeviceGetEnforcedPowerLimit": lambda h: 700_000,
        "nvmlSystemGetDriverVersion": lambda: "580.159.04",
        "nvmlDeviceGetMemoryInfo": lambda h, version=None: mem,
        "nvmlDeviceGetUtilizationRates": lambda h: types.SimpleNamespace(gpu=97, memory=40),
        "nvmlDeviceGetTemperature": lambda h, s: 45,
        "nvmlDeviceGetPowerUsage": _raise(3),
        "nvmlDeviceGetComputeRunningProcesses_v3": lambda h: [proc],
        "nvmlDeviceGetGraphicsRunningProcesses_v3": lambda h: [],
    }
    funcs.update(overrides)
    for name, fn in funcs.items():
        if fn is not None:
            setattr(m, name, fn)
    return m


def _raise(code: int) -> Any:
    def fn(*args: Any, **kwargs: Any) -> Any:
        raise NVMLError(code)

    return fn


@pytest.fixture
def install() -> Iterator[Any]:
    def put(**overrides: Any) -> PynvmlBackend:
        sys.modules["fake_pynvml"] = _module(**overrides)
        return PynvmlBackend(module_name="fake_pynvml")

    yield put
    sys.modules.pop("fake_pynvml", None)


def test_readings_and_not_supported_as_na(install: Any) -> None:
    b = install()
    b.init()
    info = b.device_info(0)
    assert (info.name, info.uuid, info.memory_total, info.power_limit) == ("NVIDIA H200", "GPU-1", 100 << 20, 700_000)
    assert b.memory(0).used == 30 << 20
    assert b.utilization(0).gpu == 97
    assert b.temperature(0) == 45
    assert b.power_usage(0) is NA  # 'Not Supported' is a value
    assert [(p.pid, p.memory_used) for p in b.processes(0)] == [(42, 10 << 20)]
    assert b.driver_version() == "580.159.04"


@pytest.mark.parametrize(
    ("code", "expected"), [(12, "no_library"), (9, "no_driver"), (18, "mismatch"), (4, "no_permission"), (1, "error")]
)
def test_init_failures_become_one_line(install: Any, code: int, expected: str) -> None:
    b = install(nvmlInit=_raise(code))
    with pytest.raises(NvmlUnavailable) as err:
        b.init()
    assert err.value.code == expected
    assert "\n" not in str(err.value)


def test_zero_gpus_is_unavailable(install: Any) -> None:
    b = install(nvmlDeviceGetCount=lambda: 0)
    s = GpuSampler(b)
    assert s.sample() is None
    assert s.unavailable == "NVML found no NVIDIA GPU on this host"


def test_lost_gpu_is_a_call_error_not_na(install: Any) -> None:
    b = install(nvmlDeviceGetUtilizationRates=_raise(15))
    with pytest.raises(NvmlCallError, match="GPU is lost"):
        b.utilization(0)


def test_old_driver_falls_back_to_v1_memory_and_v2_process_list(install: Any) -> None:
    v1 = types.SimpleNamespace(total=100, used=35, free=65)

    def memory(h: str, version: int | None = None) -> Any:
        if version is not None:
            raise NVMLError(13)  # nvmlDeviceGetMemoryInfo_v2 missing
        return v1

    b = install(
        nvmlDeviceGetMemoryInfo=memory,
        nvmlDeviceGetComputeRunningProcesses_v3=_raise(13),
        nvmlDeviceGetComputeRunningProcesses_v2=lambda h: [types.SimpleNamespace(pid=7, usedGpuMemory=None)],
    )
    assert b.memory(0).used == 35
    assert b.memory(0).used == 35  # remembered: v2 not tried again
    assert [(p.pid, p.memory_used) for p in b.processes(0)] == [(7, NA)]
