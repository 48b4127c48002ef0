"""Replays what the H200 reported during the device proof (docs/gpu.md), without a GPU.

``fixtures/h200_proof_samples.jsonl`` is the background sampler's file from that run: an 8 GiB
holder not part of the run (pid 463), a Cosmos-RL rollout reparented to PID 1 holding 4 GiB (465),
and policy_0 (466) allocating 20 + 60 GiB, then freeing; the two others killed by the finding's
action. ``fixtures/h200_proof_procinfo.json`` is what /proc said about those processes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gpu_helpers import FakeInspector

from a1x_diagnostics.gpu import (
    NA,
    FakeBackend,
    GpuCheckOptions,
    GpuSampler,
    ProcInfo,
    RoleKind,
    RoleResolver,
    assess,
    read_log,
)
from a1x_diagnostics.gpu.na import to_mib

FIXTURES = Path(__file__).parent / "fixtures"
SAMPLES = FIXTURES / "h200_proof_samples.jsonl"
OPTIONS = GpuCheckOptions(gpu_memory_utilization=0.8, rollout_started=False, rollout_gpus=[0], idle_after_s=20)


def _inspector() -> FakeInspector:
    chains = json.loads((FIXTURES / "h200_proof_procinfo.json").read_text())["chains"]
    insp = FakeInspector()
    for chain in chains.values():
        for c in chain:
            insp.add(
                ProcInfo(
                    pid=c["pid"],
                    ppid=c["ppid"],
                    cmdline=tuple(c["cmdline"]),
                    environ=c["environ"],
                    user=c["user"],
                    create_time=float(c["pid"]),
                    stdout=c["stdout"],
                )
            )
    return insp


def test_the_recording_reads_back_as_the_h200_reported_it() -> None:
    log = read_log(SAMPLES)
    assert log.driver == "580.159.04" and log.stopped and log.bad_lines == 0
    assert len(log.snapshots) == 36
    first = log.snapshots[0].devices[0]
    assert first.name == "NVIDIA H200"
    assert first.memory_total is not NA and to_mib(first.memory_total) == 143771
    peak = max(s.devices[0].memory_used for s in log.snapshots if s.devices[0].memory_used is not NA)
    assert to_mib(peak) == 95784  # nvidia-smi said 95784 MiB at the same moment


def test_replayed_through_the_sampler_the_role_join_matches_the_h200() -> None:
    backend = FakeBackend.from_samples(SAMPLES)
    sampler = GpuSampler(backend, resolver=RoleResolver(inspector=_inspector()), history_size=100)
    labels: dict[int, str] = {}
    while True:
        snap = sampler.sample(processes=True)
        assert snap is not None
        for p in snap.processes or ():
            assert p.role is not None
            labels[p.pid] = p.role.label if p.role.kind.part_of_run else p.role.kind.value
        if not backend.advance():
            break
    assert labels == {463: "foreign", 465: "foreign", 466: "policy_0"}
    recorded = [s.devices[0].memory_used for s in read_log(SAMPLES).snapshots]
    assert [s.devices[0].memory_used for s in sampler.history_list()] == recorded


def test_findings_on_the_recording() -> None:
    history = read_log(SAMPLES).snapshots
    at_peak = [s for s in history if s.ts <= history[0].ts + 30]  # before the OOM attempt and the kill
    out = assess(at_peak, roles=RoleResolver(inspector=_inspector()).join([463, 465, 466]).roles, options=OPTIONS)
    found = {f.id: f for f in out.findings}
    assert set(found) == {"gpu_orphan", "vllm_oom_risk", "gpu_idle"}
    orphan = found["gpu_orphan"]
    assert orphan.data["pids"] == [463, 465]
    assert to_mib(orphan.data["memory_bytes"]) == 8710 + 4614
    assert orphan.action is not None and orphan.action.startswith("kill 463 465")
    assert orphan.evidence[0].file == str(SAMPLES) and orphan.evidence[0].line is not None
    risk = found["vllm_oom_risk"].data["gpus"][0]
    assert to_mib(risk["free"]) == 47372  # nvidia-smi's memory.free at that moment
    assert to_mib(risk["required"]) == pytest.approx(0.8 * 143156, abs=1)  # torch's total, not NVML's
    assert found["vllm_oom_risk"].fixes[0].proposed == 0.31
    assert found["gpu_idle"].data["replicas"] == ["policy_0"]


def test_after_the_kill_the_orphans_are_gone() -> None:
    history = read_log(SAMPLES).snapshots
    out = assess(history, options=OPTIONS)
    assert "gpu_orphan" not in {f.id for f in out.findings}
    last = [s for s in history if s.processes is not None][-1]
    assert last.processes == ()
    assert {p.role.kind for s in history for p in s.processes or () if p.role} <= {RoleKind.FOREIGN, RoleKind.POLICY}
