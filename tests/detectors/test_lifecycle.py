"""replica_died, stalled, shutdown_hang, premature_end on reference-format lines (both generations)."""

from __future__ import annotations

from detector_helpers import (
    POLICY_UUID,
    ROLLOUT_UUID,
    T0,
    cosmos,
    run_logs,
    steady_run,
    step,
)

from a1x_diagnostics.findings import Severity


def child_failed(at: str = "09:01:55") -> list[str]:
    """torchrun's failure summary; ``at`` is its local failure time."""
    return [
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "cosmos_rl.rollout.rollout_entry FAILED",
        "------------------------------------------------------------",
        "Failures:",
        "  <NO_OTHER_FAILURES>",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        f"  time      : 2025-06-11_{at}",
        "  host      : node",
        "  rank      : 0 (local_rank: 0)",
        "  exitcode  : -9 (pid: 4242)",
        "  error_file: <N/A>",
        "  traceback : Signal 9 (SIGKILL) received by PID 4242",
        "============================================================",
    ]


def rollout_killed() -> list[str]:
    return [
        cosmos(50, f"ROLLOUT Replica started at global rank 0, with replica name: {ROLLOUT_UUID}", rank=0),
        cosmos(120, "[Rollout] Engine initialized.", rank=0),
        *child_failed(),
    ]


def test_replica_killed_launcher_kept_going_747d1bd() -> None:
    # §15.1: the rollout is killed at step 2; the controller trains on to 6/40 and goes silent.
    controller = steady_run(6, 40)
    r = run_logs(
        {
            "controller.log": controller,
            "rollout_0.log": rollout_killed(),
            "launcher.log": ["Process 2 failed with return code 1"],
        }
    )
    f = r.one("replica_died")
    assert f.severity is Severity.CRITICAL
    assert "rollout_0 died" in f.explanation and "SIGKILL" in f.explanation
    assert "trained on to step 6/40" in f.explanation
    assert any("exitcode  : -9" in e.text for e in f.evidence)
    assert any("failed with return code 1" in e.text for e in f.evidence)


def test_controller_dead_line_maps_to_the_replica_file_once() -> None:
    dead = cosmos(400, f"[Controller] Rollout {ROLLOUT_UUID} is dead", "WARNING")
    r = run_logs({"controller.log": [*steady_run(6, 40), dead], "rollout_0.log": rollout_killed()})
    assert len(r.of("replica_died")) == 1
    f = r.one("replica_died")
    assert any("is dead" in e.text for e in f.evidence)
    assert "heartbeat timeout" in f.explanation


def test_two_dead_replicas_give_two_findings() -> None:
    policy_dead = cosmos(500, f"[Controller] Policy {POLICY_UUID} is dead", "WARNING")
    policy = [cosmos(40, f"POLICY Replica started at global rank 0, with replica name: {POLICY_UUID}", rank=0)]
    r = run_logs(
        {"controller.log": [*steady_run(6, 40), policy_dead], "rollout_0.log": rollout_killed(), "policy_0.log": policy}
    )
    assert {f.data["replica"] for f in r.of("replica_died")} == {"rollout_0", "policy_0"}


def test_crash_reported_as_success_0_4_4() -> None:
    controller = [
        *steady_run(2, 40, new_stat=True),
        cosmos(300, "[Controller] Job phase RUNNING -> DRAINING at frozen horizon 2"),
    ]
    launcher = ["Process 0 (controller) exited via the coordinated shutdown path (rc=143); treating as success"]
    r = run_logs({"controller.log": controller, "launcher.log": launcher})
    f = r.one("replica_died")
    assert "training stopped at step 2 of 40" in f.explanation
    assert any("treating as success" in e.text for e in f.evidence)


def test_healthy_end_is_not_a_death() -> None:
    controller = [
        *steady_run(10, 10),
        cosmos(210, f"[Controller] Received rollout end signal from {ROLLOUT_UUID}"),
        cosmos(212, "[Controller] All replicas are finished, finalizing..."),
        cosmos(213, "[NCCL] Aborted communicator idx=0", "WARNING"),
    ]
    launcher = [f"Process {i} completed successfully" for i in range(3)]
    r = run_logs(
        {
            "controller.log": controller,
            "launcher.log": launcher,
            "rollout_0.log": [cosmos(211, "[Rollout] execute: entering destroy_worker()", rank=0)],
        }
    )
    assert r.ids == set(), [f.id for f in r.findings]


def test_stalled_when_logs_go_on_without_steps() -> None:
    controller = [
        *steady_run(5, 40),
        cosmos(1200, "[Controller] No valid rollout replicas found, skip PolicyToRolloutUnicastCommand"),
    ]
    r = run_logs({"controller.log": controller})
    f = r.one("stalled")
    assert "No progress for 18 min" in f.explanation and "controller kept logging" in f.explanation
    assert f.data["live"] is False


def test_stalled_silent_run_counts_the_silence_since_the_last_write() -> None:
    controller = steady_run(5, 40)
    last = T0.timestamp() + 150  # the last Step line, log clock
    r = run_logs({"controller.log": controller}, now=last + 2000, mtimes={"controller.log": last + 1})
    f = r.one("stalled")
    assert f.data["stalled_s"] == 2000.0  # the log clock against now: the file's mtime plays no part
    assert "nothing has been written for 33 min" in f.explanation
    # the same files looked at a week later: an old run, not a stall in progress
    r = run_logs({"controller.log": controller}, now=last + 7 * 86400, mtimes={"controller.log": last + 1})
    assert "stalled" not in r.ids


def test_not_stalled_while_steps_come() -> None:
    assert "stalled" not in run_logs({"controller.log": steady_run(20, 40)}).ids


def test_shutdown_hang_when_a_rollout_outlives_the_final_step() -> None:
    controller = steady_run(10, 10)
    rollout = [cosmos(1400, "[Rollout] Main loop of x finished", rank=0)]
    r = run_logs({"controller.log": controller, "rollout_0.log": rollout})
    f = r.one("shutdown_hang")
    assert f.severity is Severity.WARNING
    assert "training finished (step 10/10)" in f.explanation
    assert "replica_died" not in r.ids and "stalled" not in r.ids


def test_shutdown_hang_from_abnormal_checkout_gate() -> None:
    controller = [
        *steady_run(10, 10, new_stat=True),
        cosmos(
            420,
            "[ABNORMAL shutdown] Rollout checkout gate timed out after 200s: only 0/1 rollout replicas posted end.  "
            "A rollout likely wedged while still heartbeating; forcing controller shutdown.",
            "WARNING",
        ),
    ]
    f = run_logs({"controller.log": controller}).one("shutdown_hang")
    assert "never checked out" in f.explanation


def test_premature_end_after_early_rollout_end_0_4_4() -> None:
    controller = [
        *steady_run(3, 40, new_stat=True),
        cosmos(140, f"[Controller] Received rollout end signal from {ROLLOUT_UUID} rank=0"),
        cosmos(141, "[Controller] Job phase RUNNING -> DRAINING at frozen horizon 3"),
        cosmos(
            150,
            "[Controller] All replicas are finished (clean unregister of x); finalizing -- shutting down controller.",
        ),
    ]
    f = run_logs({"controller.log": controller}).one("premature_end")
    assert "step 3 of 40" in f.explanation


def test_premature_end_747d1bd_recompute_with_shrunk_total() -> None:
    controller = [
        *steady_run(3, 40),
        cosmos(140, "[Controller] All rollouts have ended, recompute total steps with 24 remaining rollouts..."),
        step(150, 4, 4),
    ]
    f = run_logs({"controller.log": controller}).one("premature_end")
    assert "recomputed the total to 4" in f.explanation


def test_rollout_end_with_enough_buffered_data_is_fine() -> None:
    controller = [
        *steady_run(8, 10, pending=[96, 120]),
        cosmos(185, f"[Controller] Received rollout end signal from {ROLLOUT_UUID}"),
    ]
    assert "premature_end" not in run_logs({"controller.log": controller}).ids


def test_replica_killed_after_the_final_step_is_not_a_death() -> None:
    # 747d1bd (§15.1): the rollout outlives the run and is killed later; training was complete.
    rollout = [cosmos(600, "[Rollout] Main loop of x finished", rank=0), *child_failed("09:10:05")]
    r = run_logs({"controller.log": steady_run(10, 10), "rollout_0.log": rollout})
    assert "replica_died" not in r.ids
    assert "shutdown_hang" in r.ids


def test_healthy_0_4_4_run_with_alarming_lines_has_no_finding() -> None:
    # §15: healthy runs print ERROR/WARNING lines at start-up and abort NCCL communicators at shutdown.
    controller = [
        cosmos(5, "Wandb is not available. Please install it to use wandb logging features.", "WARNING"),
        *steady_run(10, 10, new_stat=True),
        cosmos(
            150,
            "[Controller] weight staleness: accepted p50=0 p99=1 max=1, discarded=0/24 "
            "(allowed_outdated_steps=4, sync_weight_interval=1)",
        ),
        cosmos(160, "[Controller] Soft throttle RELEASED after 3.2s: samples_on_the_fly=40 < threshold=240"),
        cosmos(201, f"[Controller] Received rollout end signal from {ROLLOUT_UUID} rank=0"),
        cosmos(202, "[Controller] Job phase RUNNING -> DRAINING at frozen horizon 10"),
        cosmos(203, "[Controller] Policy side finished; broadcasting STOP to 1 rollout replica(s)."),
        cosmos(
            205,
            "[Controller] All replicas are finished (clean unregister of x); finalizing -- shutting down controller.",
        ),
    ]
    policy = [
        cosmos(
            1, "Failed to import VLLM Rollout. Please make sure vllm is installed. Error: no module", "ERROR", rank=0
        ),
        cosmos(2, "[Controller] train_ack for step=1 found no dispatch record", "WARNING", rank=0),
        cosmos(200, "[Policy] Training complete at global step 10, skip training.", rank=0),
        cosmos(
            204,
            f"[ABNORMAL teardown] policy_P2R[{ROLLOUT_UUID}@step10]: in-flight GPU work exceeded 120.0s; "
            "a peer likely departed unexpectedly mid-collective (crash/OOM/network) -- this is NOT the normal "
            "coordinated-exit path.  Aborting NCCL communicators to unblock teardown.",
            "WARNING",
            rank=0,
        ),
        cosmos(204, "[NCCL] Aborted communicator idx=0", "WARNING", rank=0),
    ]
    rollout = [cosmos(204, "Failed to send heartbeat to controller http://localhost:8000: refused", "WARNING", rank=0)]
    launcher = [
        "Process 0 completed successfully",
        "Process 1 completed successfully",
        "Process 2 completed successfully",
    ]
    r = run_logs(
        {"controller.log": controller, "policy_0.log": policy, "rollout_0.log": rollout, "launcher.log": launcher}
    )
    assert r.ids == set(), [(f.id, f.explanation) for f in r.findings]


def test_a_caught_generation_failure_with_its_traceback_is_not_a_death() -> None:
    # §6.3: '[Rollout] Failed in rollout generation: ...' then traceback.print_exc(); the batch is
    # discarded and the replica goes on. The traceback right after that line is no evidence of a death.
    oom = "CUDA out of memory. Tried to allocate 2.00 GiB."
    rollout = [
        cosmos(50, f"ROLLOUT Replica started at global rank 0, with replica name: {ROLLOUT_UUID}", rank=0),
        cosmos(120, "[Rollout] Engine initialized.", rank=0),
        cosmos(200, f"[Rollout] Failed in rollout generation: {oom}", level="ERROR", rank=0),
        "[rank0]:Traceback (most recent call last):",
        '[rank0]:  File "vllm_rollout.py", line 720, in rollout_generation',
        "[rank0]:    outputs = self.engine.generate(prompts)",
        f"[rank0]:torch.OutOfMemoryError: {oom}",
        cosmos(210, "[Rollout] Setting vLLM VLLM_DISABLE_COMPILE_CACHE to 1", rank=0),
    ]
    r = run_logs({"controller.log": steady_run(30, 40), "rollout_0.log": rollout})
    assert "replica_died" not in r.ids
    assert "vllm_oom" in r.ids  # the OOM itself is still reported, mid-run


def test_caught_failures_judged_live_while_the_next_traceback_is_still_open() -> None:
    # Live, the detectors run while the second traceback's group is still open (no line after it yet):
    # the last closed traceback then follows an older announcing line than the newest one.
    from detector_helpers import source_of

    from a1x_diagnostics.engine import Collector
    from a1x_diagnostics.parsing import LineParser

    oom = "CUDA out of memory. Tried to allocate 2.00 GiB."
    lines = [
        cosmos(50, f"ROLLOUT Replica started at global rank 0, with replica name: {ROLLOUT_UUID}", rank=0),
        cosmos(120, "[Rollout] Engine initialized.", rank=0),
    ]
    for t in (200, 260):
        lines += [
            cosmos(t, f"[Rollout] Failed in rollout generation: {oom}", level="ERROR", rank=0),
            "[rank0]:Traceback (most recent call last):",
            '[rank0]:  File "vllm_rollout.py", line 720, in rollout_generation',
            f"[rank0]:torch.OutOfMemoryError: {oom}",
        ]
    collector = Collector()
    controller = source_of("controller.log")
    from a1x_diagnostics.parsing import parse_lines

    collector.extend(parse_lines(steady_run(30, 40), controller))
    parser = LineParser(source_of("rollout_0.log"))
    for n, text in enumerate(lines, 1):
        collector.extend(parser.feed(n, text))  # no flush: the second traceback is still open
    ids = {f.id for f in collector.assess(None, None).findings}
    assert "replica_died" not in ids
