"""The sampler: tiers, NA, a lost GPU, NVML unavailable, and a thread that never blocks its caller."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from gpu_helpers import GIB, FakeInspector, proc

from a1x_diagnostics.gpu import (
    NA,
    FakeBackend,
    FakeDevice,
    GpuSampler,
    GpuSnapshot,
    NvmlUnavailable,
    RoleKind,
    RoleResolver,
    SampleWriter,
    read_log,
)
from a1x_diagnostics.gpu.backend import ProcessReading, unavailable_from_code
from a1x_diagnostics.gpu.fake import fake_h200


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _sampler(backend: FakeBackend, clock: Clock, **kw: object) -> GpuSampler:
    return GpuSampler(
        backend,
        clock=clock,
        resolver=RoleResolver(inspector=FakeInspector()),
        interval_s=1,
        **kw,  # type: ignore[arg-type]
    )


def test_device_tier_every_call_process_tier_only_when_due() -> None:
    backend = fake_h200(2, [(0, 11, GIB)])
    clock = Clock()
    s = _sampler(backend, clock, process_interval_s=5)
    taken = []
    for _ in range(11):
        snap = s.sample()
        assert snap is not None
        taken.append(snap.processes is not None)
        clock.now += 1
    assert taken == [True, False, False, False, False, True, False, False, False, False, True]
    assert backend.calls["memory"] == 22 and backend.calls["power_usage"] == 22
    assert backend.calls["processes"] == 6  # 3 process passes x 2 GPUs
    assert backend.calls["device_info"] == 2  # static tier: once per GPU
    assert backend.calls["init"] == 1


def test_not_supported_is_na_and_a_lost_gpu_does_not_stop_the_others() -> None:
    backend = FakeBackend([FakeDevice(power_usage=NA, temperature=NA), FakeDevice(memory_used=5 * GIB)])
    s = _sampler(backend, Clock())
    assert s.open()
    backend.devices[1].lost = True
    snap = s.sample()
    assert snap is not None
    gpu0, gpu1 = snap.devices
    assert gpu0.power_usage is NA and gpu0.temperature is NA and gpu0.error is None
    assert "N/A" in gpu0.render()
    assert gpu1.error == "GPU is lost" and gpu1.memory_used is NA
    assert gpu1.memory_total == backend.devices[1].memory_total  # static tier still known


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (12, "libnvidia-ml.so.1"),
        (9, "driver is not loaded"),
        (18, "version mismatch"),
        (4, "permission"),
        (999, "failed to initialise"),
    ],
)
def test_unavailable_is_one_line_and_no_exception(tmp_path: Path, code: int, words: str) -> None:
    writer = SampleWriter(tmp_path / "gpu" / "n.jsonl")
    s = GpuSampler(FakeBackend(unavailable=unavailable_from_code(code, "Unknown Error")), writer=writer)
    assert s.sample() is None
    assert s.unavailable is not None and words in s.unavailable and "\n" not in s.unavailable
    s.start()
    assert s.wait(2.0)  # the thread ends on its own
    assert read_log(writer.path).unavailable == s.unavailable


def test_missing_pynvml_is_unavailable_too() -> None:
    from a1x_diagnostics.gpu import PynvmlBackend

    missing = GpuSampler(PynvmlBackend(module_name="pynvml_that_is_not_installed"))
    assert missing.sample() is None
    assert missing.unavailable is not None and "pip install nvidia-ml-py" in missing.unavailable


def test_processes_are_joined_to_roles() -> None:
    insp = FakeInspector([proc(11, 1, "python", "leftover.py"), proc(12, 5, "python", env={"COSMOS_ROLE": "Policy"})])
    insp.add(proc(5, 1, "torchrun", stdout="/r/logs/policy_0.log"))
    backend = fake_h200(1, [(0, 11, GIB), (0, 12, 2 * GIB)])
    backend.devices[0].processes.append(ProcessReading(13, NA))  # MIG: memory unknown
    s = GpuSampler(backend, resolver=RoleResolver(inspector=insp))
    snap = s.sample(processes=True)
    assert snap is not None and snap.processes is not None
    roles = {p.pid: p.role for p in snap.processes}
    assert roles[11] is not None and roles[11].kind is RoleKind.FOREIGN
    assert roles[12] is not None and roles[12].label == "policy_0"
    assert roles[13] is not None and roles[13].kind is RoleKind.HIDDEN
    assert s.state.role_note is not None and "13" in s.state.role_note


class _BlockingBackend(FakeBackend):
    def __init__(self) -> None:
        super().__init__([FakeDevice()])
        self.release = threading.Event()

    def init(self) -> None:
        self.release.wait(5)
        super().init()


def test_start_returns_at_once_while_nvml_initialises_on_the_thread() -> None:
    backend = _BlockingBackend()
    s = GpuSampler(backend, interval_s=0.01, resolver=RoleResolver(inspector=FakeInspector()))
    got = threading.Event()
    s.add_listener(lambda snap: got.set())
    s.start()  # would hang here if init ran on the caller's thread
    assert s.latest is None and s.state.running
    backend.release.set()
    assert got.wait(2.0)
    s.stop()
    assert not s.state.running
    assert backend.calls["shutdown"] == 1


def test_a_failing_listener_does_not_end_monitoring() -> None:
    s = GpuSampler(fake_h200(), interval_s=0.01, resolver=RoleResolver(inspector=FakeInspector()))
    seen: list[GpuSnapshot] = []
    done = threading.Event()

    def bad(snap: GpuSnapshot) -> None:
        seen.append(snap)
        if len(seen) >= 3:
            done.set()
        raise RuntimeError("listener bug")

    s.add_listener(bad)
    s.start()
    assert done.wait(2.0)
    s.stop()
    assert s.state.errors >= 3
    assert len(s.history_list()) >= 3


def test_replay_of_a_recorded_file_steps_frame_by_frame(tmp_path: Path) -> None:
    w = SampleWriter(tmp_path / "rec.jsonl")
    src = GpuSampler(fake_h200(1, [(0, 11, GIB)]), writer=w, resolver=RoleResolver(inspector=FakeInspector()))
    src.open()
    for used in (1, 2, 3):
        assert isinstance(src.backend, FakeBackend)
        src.backend.devices[0].memory_used = used * GIB
        src.sample(processes=True)
    replay = FakeBackend.from_samples(w.path)
    seen = []
    while True:
        seen.append(replay.memory(0).used)
        if not replay.advance():
            break
    assert seen == [GIB, 2 * GIB, 3 * GIB]
    assert replay.processes(0)[0].pid == 11


def test_unavailable_exception_carries_its_code() -> None:
    exc = unavailable_from_code(18, "x")
    assert isinstance(exc, NvmlUnavailable) and exc.code == "mismatch"
