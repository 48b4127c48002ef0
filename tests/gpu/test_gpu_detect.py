"""GPU findings from sample history: orphans, vLLM OOM risk, idle replicas, memory near the limit."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpu_helpers import FOREIGN, GIB, H200_TOTAL, POLICY0, ROLLOUT0, device, role, snapshot

from a1x_diagnostics.catalog import CATALOG
from a1x_diagnostics.findings import CheckResult, CheckState, Finding
from a1x_diagnostics.gpu import (
    CHECK_IDS,
    FakeBackend,
    GpuCheckOptions,
    GpuSnapshot,
    NvmlUnavailable,
    RoleKind,
    SampleWriter,
    assess,
    gpu_findings_now,
    read_log,
    samples_path,
    unavailable_assessment,
)
from a1x_diagnostics.gpu.fake import fake_h200


def _by_id(findings: list[Finding]) -> dict[str, Finding]:
    return {f.id: f for f in findings}


def _state(checks: list[CheckResult], cid: str) -> CheckState:
    return next(c.state for c in checks if c.id == cid)


def test_orphan_names_pids_commands_memory_and_the_stop_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("a1x_diagnostics.gpu.detect._current_user", lambda: "alice")
    snap = snapshot(
        10.0,
        [device(used=60 * GIB)],
        [(0, 4242, 50 * GIB, FOREIGN), (0, 100, 9 * GIB, POLICY0), (0, 4243, 1 << 20, FOREIGN)],
    )
    out = assess([snap])
    f = _by_id(out.findings)["gpu_orphan"]
    assert f.severity.value == CATALOG["gpu_orphan"].severity.value
    assert f.data["pids"] == [4242]  # 1 MiB is below the threshold: not worth a kill
    assert f.data["memory_bytes"] == 50 * GIB
    assert f.action is not None and f.action.startswith("kill 4242") and "kill -9 4242" in f.action
    assert f.evidence[0].file == "nvml:0" and f.evidence[0].line is None
    assert "leftover.py" in f.evidence[0].text and "51200 MiB" in f.evidence[0].text


def test_other_users_processes_need_sudo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("a1x_diagnostics.gpu.detect._current_user", lambda: "bob")
    snap = snapshot(1.0, [device(used=GIB)], [(0, 7, GIB, FOREIGN)])
    f = _by_id(assess([snap]).findings)["gpu_orphan"]
    assert f.action is not None and f.action.startswith("sudo kill 7")
    monkeypatch.setattr("a1x_diagnostics.gpu.detect._current_user", lambda: "root")
    f = _by_id(assess([snap]).findings)["gpu_orphan"]
    assert f.action is not None and f.action.startswith("kill 7")


def test_no_orphan_when_every_process_is_part_of_the_run() -> None:
    snap = snapshot(1.0, [device(used=20 * GIB)], [(0, 1, 10 * GIB, POLICY0), (0, 2, 10 * GIB, ROLLOUT0)])
    out = assess([snap])
    assert out.findings == []
    assert _state(out.checks, "gpu_orphan") is CheckState.OK


def test_hidden_processes_make_the_orphan_check_blind() -> None:
    hidden = role("not visible", RoleKind.HIDDEN)
    out = assess([snapshot(1.0, [device(used=GIB)], [(0, 5, GIB, hidden)])], role_note="PID namespace")
    assert _state(out.checks, "gpu_orphan") is CheckState.BLIND
    assert out.notes == ["PID namespace"]


def test_vllm_oom_risk_before_the_rollout_starts_with_a_fix() -> None:
    # 80 GiB held by the policy on the GPU the rollout will share (colocated_separated)
    snap = snapshot(1.0, [device(used=80 * GIB), device(1)], [(0, 1, 80 * GIB, POLICY0)])
    opts = GpuCheckOptions(gpu_memory_utilization=0.8, rollout_started=False, rollout_gpus=[0])
    f = _by_id(assess([snap], options=opts).findings)["vllm_oom_risk"]
    assert [g["gpu"] for g in f.data["gpus"]] == [0]
    g = f.data["gpus"][0]
    assert g["required"] == pytest.approx(0.8 * H200_TOTAL, abs=1)
    assert g["free"] == H200_TOTAL - 80 * GIB
    fix = f.fixes[0]
    assert fix.path == "rollout.gpu_memory_utilization" and fix.current == 0.8
    assert fix.proposed < (H200_TOTAL - 80 * GIB) / H200_TOTAL
    assert "Free memory on device" in f.explanation


@pytest.mark.parametrize(
    ("opts", "state"),
    [
        (GpuCheckOptions(), CheckState.SKIPPED),  # utilisation unknown
        (GpuCheckOptions(gpu_memory_utilization=0.8, rollout_started=True), CheckState.SKIPPED),
        (GpuCheckOptions(gpu_memory_utilization=0.4), CheckState.OK),  # 0.44 free > 0.4
    ],
)
def test_vllm_oom_risk_skips_or_passes(opts: GpuCheckOptions, state: CheckState) -> None:
    snap = snapshot(1.0, [device(used=80 * GIB)], [(0, 1, 80 * GIB, POLICY0)])
    out = assess([snap], options=opts)
    assert "vllm_oom_risk" not in _by_id(out.findings)
    assert _state(out.checks, "vllm_oom_risk") is state


def test_a_running_engine_is_not_an_oom_risk() -> None:
    snap = snapshot(1.0, [device(used=115 * GIB)], [(0, 9, 115 * GIB, ROLLOUT0)])
    out = assess([snap], options=GpuCheckOptions(gpu_memory_utilization=0.8))
    assert "vllm_oom_risk" not in _by_id(out.findings)


def _idle_history(seconds: int, util_tail: int = 0, gap_at: int | None = None) -> list[GpuSnapshot]:
    history = []
    ts = 0.0
    for i in range(seconds + 1):
        if gap_at is not None and i == gap_at:
            ts += 300
        procs = [(0, 1, 40 * GIB, POLICY0), (1, 2, 100 * GIB, ROLLOUT0)] if i % 5 == 0 else None
        util0 = 100 if i < 5 else util_tail
        history.append(snapshot(ts, [device(0, 40 * GIB, util0), device(1, 100 * GIB, 90)], procs))
        ts += 1
    return history


def test_idle_training_gpu_after_a_long_stretch() -> None:
    history = _idle_history(700)
    f = _by_id(assess(history).findings)["gpu_idle"]
    assert f.data["gpu"] == 0 and f.data["replicas"] == ["policy_0"]
    assert f.data["idle_seconds"] == pytest.approx(695)
    assert "12 minutes" in f.explanation
    assert "util 0%" in f.evidence[0].text


def test_short_or_broken_idle_stretches_are_fine() -> None:
    assert "gpu_idle" not in _by_id(assess(_idle_history(300)).findings)
    assert "gpu_idle" not in _by_id(assess(_idle_history(700, util_tail=30)).findings)
    # the agent was down for 5 minutes: the stretch before the gap does not count
    assert "gpu_idle" not in _by_id(assess(_idle_history(700, gap_at=400)).findings)


def test_idle_needs_history() -> None:
    out = assess([snapshot(1.0, [device()], [])])
    assert _state(out.checks, "gpu_idle") is CheckState.SKIPPED


def test_memory_near_limit_but_vllm_share_is_allowed() -> None:
    full = snapshot(1.0, [device(used=int(0.97 * H200_TOTAL))], [(0, 1, int(0.97 * H200_TOTAL), POLICY0)])
    f = _by_id(assess([full]).findings)["gpu_memory_near_limit"]
    assert f.data["fraction"] == pytest.approx(0.97, abs=0.001)
    vllm = snapshot(1.0, [device(used=int(0.96 * H200_TOTAL))], [(0, 1, int(0.96 * H200_TOTAL), ROLLOUT0)])
    opts = GpuCheckOptions(gpu_memory_utilization=0.95)
    assert "gpu_memory_near_limit" not in _by_id(assess([vllm], options=opts).findings)


def test_evidence_from_a_samples_file_cites_its_line(tmp_path: Path) -> None:
    w = SampleWriter(samples_path(tmp_path, "n1"))
    w.write_sample(snapshot(1.0, [device(used=GIB)], [(0, 7, GIB, FOREIGN)]))
    f = _by_id(assess(read_log(w.path).snapshots).findings)["gpu_orphan"]
    assert f.evidence[0].file == str(w.path) and f.evidence[0].line == 1


def test_every_id_is_in_the_catalog() -> None:
    assert set(CHECK_IDS) | {"gpu_unavailable"} <= set(CATALOG)
    assert all("gpu" in CATALOG[cid].origins for cid in CHECK_IDS)


def test_unavailable_only_warns_where_gpus_are_expected() -> None:
    quiet = unavailable_assessment("NVML library (libnvidia-ml.so.1) not found", expected=False)
    assert quiet.findings == [] and {c.state for c in quiet.checks} == {CheckState.SKIPPED}
    assert quiet.notes == ["GPU checks skipped: NVML library (libnvidia-ml.so.1) not found"]
    loud = unavailable_assessment("the NVIDIA kernel driver is not loaded", expected=True)
    (f,) = loud.findings
    assert f.id == "gpu_unavailable" and f.evidence[0].file == "nvml"


def test_findings_now_is_safe_without_nvml() -> None:
    no_nvml = FakeBackend(unavailable=NvmlUnavailable("NVML library not found", code="no_library"))
    out = gpu_findings_now(backend=no_nvml)
    assert out.findings == [] and out.notes and out.snapshot is None


def test_findings_now_joins_the_live_reading_to_this_hosts_history(tmp_path: Path) -> None:
    import os
    import socket
    import time

    w = SampleWriter(samples_path(tmp_path, socket.gethostname()))
    history = _idle_history(700)
    shift = time.time() - history[-1].ts - 1
    for s in history:
        w.write_sample(GpuSnapshot(ts=s.ts + shift, host=s.host, devices=s.devices, processes=s.processes))
    backend = fake_h200(2, [(0, os.getpid(), 40 * GIB)])  # this test process plays policy_0, live
    out = gpu_findings_now(run_dir=tmp_path, backend=backend, known_pids={os.getpid(): "policy_0"})
    f = _by_id(out.findings)["gpu_idle"]
    assert f.data["idle_seconds"] > 600
    assert f.evidence[0].file == str(w.path) and f.evidence[0].line is not None  # start of the stretch, on disk
    assert f.evidence[1].file == "nvml:0"  # the live reading
    assert "gpu_orphan" not in _by_id(out.findings)
