"""The run's outcome and the concluding findings on the smallest runs that show each case."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

from detector_helpers import T0, cosmos, dump_config, recipe_config, run_logs, stat, steady_run, step

from a1x_diagnostics.detectors._errors import BENIGN, benign_reason, signature
from a1x_diagnostics.findings import Outcome, Severity

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "cosmos"


def death_signal(t: float) -> str:
    """torchrun's agent, as 747d1bd/policy_stopped/policy_0.log ends (glog stamp, no year)."""
    stamp = T0.timestamp() + t
    from datetime import datetime

    d = datetime.fromtimestamp(stamp)
    return (f"W{d:%m%d %H:%M:%S}.830000 1399 torch/distributed/elastic/agent/server/api.py:739] Received 15 death "
            "signal, shutting down workers")


def test_completed_and_clean_is_ok() -> None:
    r = run_logs({"controller.log": steady_run(3, 3)})
    assert r.outcome.state is Outcome.COMPLETED and not r.findings


def test_logs_that_stop_short_of_the_total_are_a_warning_that_says_what_to_check() -> None:
    # post-mortem, nothing says it still runs, nothing shows a failure: not OK, and not CRITICAL either
    r = run_logs({"controller.log": steady_run(2, 40)})
    assert r.outcome.state is Outcome.INCOMPLETE and r.outcome.data["ended"] == "no_end_line"
    f = r.one("run_incomplete")
    assert f.severity is Severity.WARNING and "step 2/40" in f.explanation and "no end line" in f.explanation
    assert "scheduler" in (f.action or "") and all(x.severity is Severity.WARNING for x in r.findings)


def test_a_job_that_ended_itself_short_of_the_total_is_critical() -> None:
    # positive evidence: the controller finalized at step 2 of 40 (docs/reference/cosmos-rl.md §4.7)
    lines = [*steady_run(2, 40), cosmos(130, "[Controller] All replicas are finished (clean unregister of x); "
                                              "finalizing -- shutting down controller.")]
    r = run_logs({"controller.log": lines})
    assert r.outcome.state is Outcome.INCOMPLETE and r.one("run_incomplete").severity is Severity.CRITICAL


def test_the_same_logs_while_being_written_are_running() -> None:
    lines = steady_run(2, 40)
    now = T0.timestamp() + 100 + 2 * 10 + 5  # 5 s after the last step
    r = run_logs({"controller.log": lines}, now=now)
    assert r.outcome.state is Outcome.RUNNING and not r.findings


def test_a_stop_from_outside_before_the_end_is_terminated() -> None:
    policy = [cosmos(105, "[Policy] Building lr schedulers for total steps 40", rank=0), death_signal(125)]
    r = run_logs({"controller.log": steady_run(2, 40), "policy_0.log": policy})
    assert r.outcome.state is Outcome.TERMINATED
    f = r.one("run_incomplete")
    assert "stopped from outside" in f.explanation and any("death signal" in e.text for e in f.evidence)


def test_a_stall_then_a_stop_reports_both() -> None:
    # steps every 10 s, then 4 minutes of nothing, then SIGTERM: 747d1bd/policy_stopped in miniature
    policy = [cosmos(105, "[Policy] Building lr schedulers for total steps 40", rank=0), death_signal(120 + 240)]
    r = run_logs({"controller.log": steady_run(2, 40), "policy_0.log": policy})
    assert r.outcome.state is Outcome.STALLED and "then the job was stopped from outside" in r.outcome.summary
    f = r.one("stalled")
    assert f.data["stopped_from_outside"] is True and "until the job was stopped from outside" in f.explanation
    assert any("death signal" in e.text for e in f.evidence)


def test_a_hang_before_the_first_step_is_stalled() -> None:
    controller = [cosmos(0, "Successfully loaded configuration from /tmp/t.toml"),
                  cosmos(20, "[Controller] All atoms of ROLLOUT Replica abc has been set.")]
    policy = [cosmos(30, "POLICY Replica started at global rank 0, with replica name: p-1", rank=0),
              death_signal(30 + 300)]
    r = run_logs({"controller.log": controller, "policy_0.log": policy})
    assert r.outcome.state is Outcome.STALLED
    assert "before any step" in r.one("stalled").explanation


def test_a_crash_at_import_is_process_crashed_with_the_user_frame() -> None:
    controller = [
        "Traceback (most recent call last):",
        '  File "/home/me/entry.py", line 3, in <module>',
        "    import reward_lib",
        "ModuleNotFoundError: No module named 'reward_lib'",
    ]
    launcher = [cosmos(5, "Process 1234 exited with code 1. Exiting.", level="ERROR")]
    r = run_logs({"controller.log": controller, "run.out": launcher})
    assert r.outcome.state is Outcome.CRASHED
    f = r.one("process_crashed")
    assert "ModuleNotFoundError: No module named 'reward_lib'" in f.explanation
    assert "/home/me/entry.py:3 in <module>: import reward_lib" in f.explanation
    assert {e.file for e in f.evidence} == {"controller.log", "run.out"}


def test_a_caught_generation_error_is_no_crash() -> None:
    rollout = [
        cosmos(110, "[Rollout] Failed in rollout generation: boom", level="ERROR", rank=0),
        "[rank0]:Traceback (most recent call last):",
        '[rank0]:  File "/x/vllm_rollout.py", line 700, in rollout_generation',
        "[rank0]:RuntimeError: boom",
    ]
    r = run_logs({"controller.log": steady_run(3, 3), "rollout_0.log": rollout})
    assert r.outcome.state is Outcome.COMPLETED
    assert "process_crashed" not in r.ids and "replica_died" not in r.ids


def test_an_error_no_check_explains_is_reported_with_its_count_and_processes() -> None:
    policy = [cosmos(100 + 10 * i, "[Policy] gradient hook raised: bad shape 3x7", level="ERROR", rank=0)
              for i in range(1, 4)]
    rollout = [cosmos(125, "[Rollout] gradient hook raised: bad shape 5x9", level="ERROR", rank=0)]
    r = run_logs({"controller.log": steady_run(3, 3), "policy_0.log": policy, "rollout_0.log": rollout})
    assert r.outcome.state is Outcome.COMPLETED
    f = r.one("unexplained_error")
    assert f.severity is Severity.WARNING
    group = f.data["groups"][0]
    assert group["count"] == 3 and group["processes"] == ["policy_0"]
    assert group["first"].endswith(":1") and group["last"].endswith(":3")
    assert sum(g["count"] for g in f.data["groups"]) == 4


def test_benign_error_lines_are_not_reported() -> None:
    benign = cosmos(101, "Failed to import VLLM Rollout. Please make sure vllm is installed. Error: No module "
                    "named 'vllm'", level="ERROR", rank=0)
    r = run_logs({"controller.log": steady_run(3, 3), "rollout_0.log": [benign]})
    assert "unexplained_error" not in r.ids


def test_every_benign_entry_has_a_reason_and_matches_a_recorded_line() -> None:
    """The benign list is held to what real runs print: no entry that never matched a genuine line."""
    lines = [ln for p in FIXTURES.rglob("*.log") for ln in p.read_bytes().decode("utf-8", "replace").splitlines()]
    for b in BENIGN:
        assert len(b.reason) > 40, b.pattern.pattern
        assert any(b.pattern.search(ln) for ln in lines), f"{b.pattern.pattern} matches no recorded line"
    assert benign_reason("ValueError: No available memory for the cache blocks") is None


def test_errors_of_one_kind_share_a_signature() -> None:
    a = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has 1.2 GiB free"
    b = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has 0.4 GiB free"
    assert signature(a) == signature(b)
    assert signature("No module named 'x' at /a/b/c.py:12") == signature("No module named 'x' at /d/e.py:99")
    assert signature("ValueError: a") != signature("KeyError: a")


def test_an_error_a_finding_quotes_is_not_also_unexplained() -> None:
    rollout = [cosmos(115, "[Rollout] Failed in rollout generation: CUDA out of memory. Tried to allocate 2 GiB",
                      level="ERROR", rank=0)]
    r = run_logs({"controller.log": steady_run(3, 3), "rollout_0.log": rollout})
    assert "unexplained_error" not in r.ids and r.ids & {"vllm_oom", "rollout_generation_failed"}


def test_the_outcome_says_which_step_a_crash_happened_at() -> None:
    rollout = ["[rank0]:Traceback (most recent call last):", '[rank0]:  File "/x/reward.py", line 9, in score',
               "[rank0]:RuntimeError: reward failed"]
    rollout.insert(0, cosmos(121, "[Rollout] x", rank=0))
    r = run_logs({"controller.log": steady_run(5, 40), "rollout_0.log": rollout})
    assert r.outcome.state is Outcome.CRASHED
    assert re.search(r"crashed at step 2/40: it raised RuntimeError: reward failed \(training went on to step 5\)",
                     r.outcome.summary), r.outcome.summary


def test_a_checkpoint_being_saved_is_a_pause_not_a_stall() -> None:
    """A run checked while the policy writes a checkpoint (minutes for a 10B model on a network file system)."""
    saving = cosmos(131, "[Policy] Saving cosmos checkpoint at step 3...", rank=0)
    now = T0.timestamp() + 131 + 600  # ten minutes into the save, steps were 10 s apart
    lines = steady_run(3, 40)
    r = run_logs({"controller.log": lines, "policy_0.log": [saving]}, now=now)
    assert r.outcome.state is Outcome.RUNNING and "stalled" not in r.ids
    r = run_logs({"controller.log": lines, "policy_0.log": [saving]}, now=now + 1800)
    assert r.outcome.state is Outcome.STALLED  # a save does not excuse half an hour more


# --- issue 34: stalls by the run's own pace, deaths by role, the user's stop -----------------------------------
def _fast_run(steps: int, total: int, pending: int = 32) -> list[str]:
    """Steps every 0.7 s (a tiny model), then the controller's last Stat with ``pending`` rollouts."""
    lines = steady_run(steps, total, step_every=0.7, it=0.5)
    last = 100.0 + steps * 0.7
    return [*lines, stat(last + 0.2, 24 * 2 * steps + 24, pending, in_flight=pending + 8)]


BATCH_8 = dump_config(recipe_config(train__train_batch_per_replica=8))


def test_a_fast_run_that_goes_silent_for_150_s_then_is_stopped_is_a_hang_and_a_stop() -> None:
    # the case: steps of 0.7 s, then 150 s of silence in every log, then SIGTERM. The limit follows the
    # run's pace (10 x the step, at least 60 s), not a fixed 3 minutes; the stop is reported too, as a warning.
    last_step = 100.0 + 2 * 0.7
    policy = [cosmos(99, "[Policy] Building lr schedulers for total steps 40", rank=0), death_signal(last_step + 150)]
    rollout = [cosmos(last_step, "[Rollout] All 27 at step 2 recv operations finished in 0.01 seconds", rank=0),
               death_signal(last_step + 150)]
    r = run_logs({"controller.log": _fast_run(2, 40), "policy_0.log": policy, "rollout_0.log": rollout},
                 config=BATCH_8)
    assert r.outcome.state is Outcome.STALLED and "then the job was stopped from outside" in r.outcome.summary
    stalled = r.one("stalled")
    assert stalled.severity is Severity.CRITICAL and stalled.data["limit_s"] == 60.0
    assert "a step usually takes 0.7 s" in stalled.explanation and "at least 60 s" in stalled.explanation
    # 32 rollouts pending, a step needs 8: the policy is the one that stopped; the rollouts waited on it
    assert stalled.data["quiet_first"] == "policy_0" and "Quiet first: policy_0" in stalled.explanation
    assert "enough for a step (8)" in stalled.explanation
    stop = r.one("run_incomplete")
    assert stop.severity is Severity.WARNING and "stopped from outside" in stop.explanation
    assert [f.id for f in r.findings if f.severity is Severity.CRITICAL] == ["stalled"]


def test_a_stop_within_the_runs_own_limit_is_a_stop_not_a_hang() -> None:
    last_step = 100.0 + 2 * 0.7
    policy = [cosmos(99, "[Policy] Building lr schedulers for total steps 40", rank=0), death_signal(last_step + 45)]
    r = run_logs({"controller.log": _fast_run(2, 40), "policy_0.log": policy}, config=BATCH_8)
    assert r.outcome.state is Outcome.TERMINATED and "stalled" not in r.ids


def test_rollouts_that_stop_coming_are_named_when_the_buffer_cannot_fill_a_step() -> None:
    last_step = 100.0 + 3 * 0.7
    rollout = [cosmos(100, "[Rollout] All 27 at step 1 recv operations finished in 0.01 seconds", rank=0),
               death_signal(last_step + 200)]
    policy = [cosmos(99, "[Policy] Building lr schedulers for total steps 40", rank=0), death_signal(last_step + 200)]
    r = run_logs({"controller.log": _fast_run(3, 40, pending=2), "policy_0.log": policy, "rollout_0.log": rollout},
                 config=BATCH_8)
    stalled = r.one("stalled")
    assert stalled.data["quiet_first"] == "rollout_0" and "fewer than the 8 a step needs" in stalled.explanation


def test_a_replica_that_died_explains_the_silence_after_it() -> None:
    # the controller trains on from pending rollouts, then nothing for minutes: the death is the story, not a hang
    rollout = [
        cosmos(100, "[Rollout] All 27 at step 1 recv operations finished in 0.01 seconds", rank=0),
        "Traceback (most recent call last):",
        '  File "/work/reward.py", line 9, in reward',
        "    raise RuntimeError('boom')",
        "RuntimeError: boom",
    ]
    policy = [cosmos(99, "[Policy] Building lr schedulers for total steps 40", rank=0), death_signal(400)]
    r = run_logs({"controller.log": _fast_run(3, 40), "rollout_0.log": rollout, "policy_0.log": policy})
    assert "replica_died" in r.ids and "stalled" not in r.ids


LAUNCH = [
    cosmos(0, "Launching process with command: /s/cosmos_rl/launcher/launch_controller.sh --config /tmp/t.toml "
              "--port 8100 --script /w/entry.py"),
    cosmos(20, "Controller is ready at localhost:8100"),
    cosmos(20, "Launching process with command: /s/cosmos_rl/launcher/launch_replica.sh --type policy --ngpus 1 "
               "--backend vllm --config /tmp/t.toml"),
    cosmos(20, "Launching process with command: /s/cosmos_rl/launcher/launch_replica.sh --type rollout --ngpus 1 "
               "--backend vllm --config /tmp/t.toml"),
]


def test_a_sigkilled_controller_is_named_with_its_signal_and_where_to_look() -> None:
    # launch_all.py:984-993 (docs/reference/cosmos-rl.md §2.7): position 0 is the controller, whose failure alone
    # makes the launcher kill the rest
    launcher = [*LAUNCH, cosmos(131, "Process 0 failed with return code 137", level="ERROR"),
                cosmos(131, "Terminated all processes due to failure", level="ERROR")]
    r = run_logs({"controller.log": steady_run(3, 40), "run.out": launcher,
                  "policy_0.log": [cosmos(99, "[Policy] Building lr schedulers for total steps 40", rank=0)]})
    assert r.outcome.state is Outcome.CRASHED and r.outcome.summary.startswith("controller died at step 3/40")
    crashed = r.one("process_crashed")
    assert crashed.data["process"] == "controller" and crashed.data["return_code"] == 137
    assert "killed by SIGKILL (return code 137)" in crashed.explanation
    assert "terminated every process" in crashed.explanation and "No traceback" in crashed.explanation
    assert "dmesg" in (crashed.action or "") and "traceback" not in (crashed.action or "").lower()
    assert "replica_died" not in r.ids


def test_the_launchers_position_names_the_replica_that_failed() -> None:
    # controller (0), policy (1), rollout (2): the rollout's failure is 'Process 2'; after the policy's clean exit
    # the list is [controller, rollout] and the rollout is 'Process 1'
    for lines, name in (
        ([cosmos(131, "Process 2 failed with return code 1", level="ERROR")], "rollout_0"),
        ([cosmos(130, "Process 1 completed successfully"), cosmos(131, "Process 1 failed with return code -9",
                                                                   level="ERROR")], "rollout_0"),
        ([cosmos(131, "Process 1 failed with return code 1", level="ERROR")], "policy_0"),
    ):
        r = run_logs({"controller.log": steady_run(3, 40), "run.out": [*LAUNCH, *lines]})
        died = r.one("replica_died")
        assert died.data["replica"] == name, (lines, died.explanation)
        assert "process_crashed" not in r.ids


def test_a_run_the_user_stopped_through_a1x_tui_is_stopped_not_stopped_from_outside(tmp_path: Path) -> None:
    import json

    from a1x_diagnostics.engine import check

    run = tmp_path / "run"
    logs = run / "logs" / "logs_20250611-090000"
    logs.mkdir(parents=True)
    (run / "run.toml").write_text('compute = "local"\n')
    stop_at = 100 + 3 * 10 + 5  # the supervisor's SIGTERM, 5 s after step 3
    (logs / "controller.log").write_text("\n".join(steady_run(3, 40)) + "\n")
    policy = [cosmos(99, "[Policy] Building lr schedulers for total steps 40", rank=0), death_signal(stop_at + 1),
              "[rank0]: Traceback (most recent call last):", "[rank0]: RuntimeError: killed while training"]
    (logs / "policy_0.log").write_text("\n".join(policy) + "\n")
    stamp = (T0 + timedelta(seconds=stop_at)).astimezone().isoformat(timespec="milliseconds")
    (run / "stages").mkdir()
    (run / "stages" / "train.log").write_text(
        f"{stamp} [a1x-tui] stopping: SIGTERM to process group 4242, SIGKILL after 30s\n")
    state = {"run_id": "r", "run_dir": str(run), "status": "stopped", "stages": [
        {"name": "train", "status": "stopped", "reason": "stop requested by a client", "ended_at": stamp}]}
    (run / "state.json").write_text(json.dumps(state))
    report = check(run)
    assert report.outcome is not None and report.outcome.state is Outcome.STOPPED
    assert "stopped by you at step 3/40 (stop requested by a client)" in report.outcome.summary
    assert not [f for f in report.findings if f.severity is Severity.CRITICAL], report.summary
    stop = next(f for f in report.findings if f.id == "run_incomplete")
    assert "You stopped the run" in stop.explanation and "from outside" not in stop.explanation


def test_a_rollout_that_went_quiet_while_the_policy_trained_on_its_buffer_is_named_so() -> None:
    # the rollout's last line at step 1; the controller trains steps 2-4 from pending rollouts, then nothing
    rollout = [cosmos(100.8, "[Rollout] All 27 at step 1 recv operations finished in 0.01 seconds", rank=0),
               death_signal(100 + 4 * 0.7 + 300)]
    r = run_logs({"controller.log": _fast_run(4, 40, pending=0), "rollout_0.log": rollout}, config=BATCH_8)
    stalled = r.one("stalled")
    assert stalled.data["quiet_first"] == "rollout_0"
    assert "the policy trained on from rollouts already buffered, to step 4" in stalled.explanation


def test_steps_that_come_in_bursts_set_the_limit_by_their_longest_gap() -> None:
    # weight-sync gating (docs/reference/cosmos-rl.md §15): fast steps from the buffer, then a long wait for
    # rollouts made with the new weights; a pause as long as the run's own longest recent one is not a hang
    lines = []
    t = 100.0
    for n in range(1, 13):
        t += 100.0 if n % 4 == 0 else 1.0  # every fourth step waits 100 s
        lines.append(step(t, n, 40, it=0.5))
    policy = [cosmos(99, "[Policy] Building lr schedulers for total steps 40", rank=0), death_signal(t + 150)]
    r = run_logs({"controller.log": lines, "policy_0.log": policy})
    assert r.outcome.state is Outcome.TERMINATED and "stalled" not in r.ids  # 150 s < 2 x 100 s
    policy[-1] = death_signal(t + 260)
    r = run_logs({"controller.log": lines, "policy_0.log": policy})
    assert r.outcome.state is Outcome.STALLED and r.one("stalled").data["limit_s"] == 200.0
