"""Simulated GPUs for the demo: the real sampler and role join over ``a1x_diagnostics.gpu``'s fake NVML.

The demo launcher runs this while its replicas play. Two H200s named "(simulated)" with the driver
"simulated (a1x-tui demo)" are sampled by the real ``GpuSampler`` into ``<run>/gpu/simulated.jsonl``,
the file a ``gpu-agent`` writes on a real node; the processes on them are the demo's own replica
processes, so the real role join names them ``policy_0`` and ``rollout_0`` from their environment.
"""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path

from a1x_diagnostics.gpu import FakeBackend, FakeDevice, GpuSampler, RoleResolver, SampleWriter, samples_path
from a1x_diagnostics.gpu.backend import ProcessReading
from a1x_tui.demo.scenario import OOM_STEPS, Trouble, end_time, step_time

SIMULATED_DRIVER = "simulated (a1x-tui demo)"
SIMULATED_HOST = "simulated"
GIB = 1024**3


class SimulatedGpus:
    """GPU 0 holds the policy, GPU 1 the rollout's vLLM engine; readings follow the scenario clock."""

    def __init__(self, run_dir: Path, trouble: Trouble, *, speed: float, t0: float, vllm_fraction: float = 0.8) -> None:
        self.trouble = trouble
        self.vllm_fraction = vllm_fraction  # the TOML's rollout.gpu_memory_utilization: the vllm_oom fix lowers it
        self.speed = max(0.05, speed)
        self.t0 = t0
        devices = [FakeDevice(name="NVIDIA H200 (simulated)", uuid=f"GPU-simulated-{i}") for i in range(2)]
        self.backend = FakeBackend(devices, driver=SIMULATED_DRIVER)
        self.sampler = GpuSampler(
            self.backend,
            interval_s=1.0,
            process_interval_s=2.0,
            resolver=RoleResolver(),
            writer=SampleWriter(samples_path(run_dir, SIMULATED_HOST)),
            host=SIMULATED_HOST,
        )
        self.pids: dict[int, int] = {}  # gpu -> pid
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="a1x-demo-gpus", daemon=True)

    def start(self) -> None:
        self._update()
        self._thread.start()
        self.sampler.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(2.0)
        self.sampler.stop()

    def _run(self) -> None:
        while not self._stop.wait(0.25):
            self._update()

    def _scenario_time(self) -> float:
        return (time.time() - self.t0) * self.speed

    def _update(self) -> None:
        t = self._scenario_time()
        training = step_time(1) - 1.0 <= t <= end_time()
        policy, rollout = self.backend.devices
        total = int(policy.memory_total) if isinstance(policy.memory_total, int) else 150 * GIB
        wave = 0.5 + 0.5 * math.sin(t * 2.1)
        # The policy: weights and optimizer state after loading, busy while it trains.
        policy.memory_used = int(min(1.0, max(0.0, t / 2.0)) * 61.7 * GIB) if t < end_time() else 0
        policy.gpu_utilization = int(62 + 33 * wave) if training else (5 if 0 < t < end_time() else 0)
        policy.memory_utilization = int(policy.gpu_utilization * 0.6)
        policy.temperature = 34 + int(28 * min(1.0, max(0.0, t / 10.0)))
        policy.power_usage = int((120 + 420 * policy.gpu_utilization / 100) * 1000)
        # The rollout: vLLM reserves gpu_memory_utilization of the GPU when its engine starts (§6.1).
        engine = 3.5 <= t < end_time()
        used = int(self.vllm_fraction * total + 2.1 * GIB) if engine else (int(1.3 * GIB) if 0 < t < 3.5 else 0)
        if self.trouble.vllm_oom and any(abs(t - (step_time(k) - 0.7)) < 0.9 for k in OOM_STEPS):
            used = total - int(0.4 * GIB)  # the failed generation batch filled the card
        rollout.memory_used = used
        rollout.gpu_utilization = int(85 + 14 * (1 - wave)) if training else (3 if engine else 0)
        rollout.memory_utilization = int(rollout.gpu_utilization * 0.7)
        rollout.temperature = 33 + int(31 * min(1.0, max(0.0, (t - 3.0) / 8.0)))
        rollout.power_usage = int((110 + 480 * rollout.gpu_utilization / 100) * 1000)
        for gpu, device in enumerate(self.backend.devices):
            pid = self.pids.get(gpu)
            used_now = device.memory_used if isinstance(device.memory_used, int) else 0
            device.processes = [ProcessReading(pid, used_now)] if pid is not None and used_now > 0 else []
