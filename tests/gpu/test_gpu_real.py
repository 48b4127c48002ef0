"""On a real NVIDIA GPU (marker ``gpu``; skipped where NVML or the driver is missing).

Our readings against nvidia-smi, and a torch process that allocates a known amount: seen per
process, joined to its role from its environment and log file, reported as an orphan when the
supervisor does not know it, and gone once killed. Needs torch for the second test.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from a1x_diagnostics.gpu import GpuSampler, NvmlUnavailable, PynvmlBackend, RoleKind, RoleResolver, assess

pytestmark = pytest.mark.gpu
MIB = 1 << 20


@pytest.fixture(scope="module")
def backend() -> Iterator[PynvmlBackend]:
    b = PynvmlBackend()
    try:
        b.init()
    except NvmlUnavailable as exc:
        pytest.skip(f"no usable GPU: {exc}")
    yield b
    b.shutdown()


def _smi(query: str) -> list[list[str]]:
    if shutil.which("nvidia-smi") is None:
        pytest.skip("nvidia-smi not on PATH")
    out = subprocess.run(
        ["nvidia-smi", query, "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=30, check=True
    ).stdout
    return [[c.strip() for c in line.split(",")] for line in out.strip().splitlines() if line.strip()]


def test_device_readings_match_nvidia_smi(backend: PynvmlBackend) -> None:
    snap = GpuSampler(backend).sample(processes=True)
    assert snap is not None and snap.devices
    rows = {int(r[0]): r for r in _smi("--query-gpu=index,memory.total,memory.used")}
    for dev in snap.devices:
        assert isinstance(dev.memory_total, int) and isinstance(dev.memory_used, int)
        assert dev.memory_total // MIB == int(rows[dev.index][1])
        assert abs(dev.memory_used // MIB - int(rows[dev.index][2])) <= 64
        assert dev.gpu_utilization is not None and dev.error is None


def test_torch_allocation_is_seen_joined_and_released(backend: PynvmlBackend, tmp_path: Path) -> None:
    probe = subprocess.run([sys.executable, "-c", "import torch; assert torch.cuda.is_available()"], check=False)
    if probe.returncode != 0:
        pytest.skip("torch with CUDA is not importable here")
    logs = tmp_path / "logs_1"
    logs.mkdir()
    status = tmp_path / "ready.json"
    code = (
        "import json, os, sys, torch\n"
        "x = torch.empty(2 << 30, dtype=torch.uint8, device='cuda'); torch.cuda.synchronize()\n"
        f"open({str(status)!r}, 'w').write(json.dumps({{'pid': os.getpid()}}))\n"
        "sys.stdin.read()\n"
    )
    env = dict(os.environ, COSMOS_ROLE="Rollout", LOCAL_RANK="0")
    with open(logs / "rollout_5.log", "wb") as log:
        child = subprocess.Popen([sys.executable, "-c", code], env=env, stdin=subprocess.PIPE, stdout=log)
    try:
        deadline = time.time() + 120
        while not status.exists() and time.time() < deadline and child.poll() is None:
            time.sleep(0.1)
        assert json.loads(status.read_text())["pid"] == child.pid
        sampler = GpuSampler(backend, resolver=RoleResolver())
        snap = sampler.sample(processes=True)
        assert snap is not None and snap.processes is not None
        ours = [p for p in snap.processes if p.pid == child.pid]
        assert ours, f"pid {child.pid} not in NVML's process list: {snap.processes}"
        proc = ours[0]
        assert isinstance(proc.memory_used, int) and proc.memory_used >= 2 << 30
        apps = {int(r[0]): int(r[1]) for r in _smi("--query-compute-apps=pid,used_memory") if r[0].isdigit()}
        assert abs(proc.memory_used // MIB - apps[child.pid]) <= 2
        assert proc.role is not None and proc.role.label == "rollout_5" and proc.role.kind is RoleKind.ROLLOUT
        supervised = RoleResolver({1: "train"}).join([child.pid])  # our supervisor did not start it
        orphan = {f.id: f for f in assess([snap], roles=supervised.roles).findings}["gpu_orphan"]
        assert child.pid in orphan.data["pids"]
    finally:
        child.kill()
        child.wait()
    deadline = time.time() + 15
    while time.time() < deadline:
        snap = GpuSampler(backend).sample(processes=True)
        if snap is not None and child.pid not in {p.pid for p in snap.processes or ()}:
            break
        time.sleep(0.5)
    else:
        pytest.fail(f"pid {child.pid} still listed by NVML 15 s after it was killed")
