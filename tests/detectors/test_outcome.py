"""The run's outcome and the concluding findings on the smallest runs that show each case."""

from __future__ import annotations

import re
from pathlib import Path

from detector_helpers import T0, cosmos, run_logs, steady_run

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


def test_logs_that_stop_short_of_the_total_are_incomplete_not_ok() -> None:
    r = run_logs({"controller.log": steady_run(2, 40)})  # post-mortem: nothing says it still runs
    assert r.outcome.state is Outcome.INCOMPLETE
    f = r.one("run_incomplete")
    assert f.severity is Severity.CRITICAL and "step 2/40" in f.explanation


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
