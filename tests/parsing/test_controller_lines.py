"""Controller lines (docs/reference/cosmos-rl.md §4), in the three generations (§14)."""

from __future__ import annotations

import math

import pytest
from parsing_helpers import TS, UUID, T, cosmos, interesting, one, parse, signal

from a1x_diagnostics.events import (
    DynamicSampling,
    LogLine,
    Role,
    SignalKind,
    Staleness,
    Stat,
    Step,
    Throttle,
    ThrottleState,
    TrainReport,
)

STAT_NEW = (
    "[Controller] Stat: 120 samples, 45123 completion tokens, 24 pending rollouts, 96 in-flight, "
    "3 filtered (outdated), 12.34s elapsed"
)
STAT_747 = "[Controller] Stat: 120 samples, 45123 completion tokens, 24 pending rollouts, 12.345678901 seconds elapsed"


@pytest.mark.parametrize("rank", [None, 0])
def test_cosmos_prefix_with_and_without_torchrun_rank(rank: int | None) -> None:
    stat = one(cosmos(STAT_NEW, rank=rank), Stat)
    assert stat.ts == T and stat.level == "INFO" and stat.rank == rank and stat.line == 1
    assert stat.source.path == "controller.log"
    assert stat.text == cosmos(STAT_NEW, rank=rank)


@pytest.mark.parametrize(("generation", "msg"), [("v0.4.4", STAT_NEW), ("0.4.7", STAT_NEW), ("747d1bd", STAT_747)])
def test_stat_line_both_shapes(generation: str, msg: str) -> None:
    stat = one(cosmos(msg), Stat)
    assert (stat.samples, stat.completion_tokens, stat.pending) == (120, 45123, 24)
    if generation == "747d1bd":
        assert stat.in_flight is None and stat.outdated_filtered is None
        assert stat.elapsed_s == pytest.approx(12.345678901)
    else:
        assert (stat.in_flight, stat.outdated_filtered, stat.elapsed_s) == (96, 3, 12.34)


GRPO_STEP = (
    "Step: 37/60, Reward Mean: -0.2100, Reward Std: 0.0500, Reward Max: 0.0000, Reward Min: -1.0000, "
    "Completion Length Mean: 1.00, Completion Length Max: 1.00, Average loss: 0.01234, Max loss: 0.05000, "
    "Learning rate: 2.00000e-06, Entropy: 0.51234, Effective Entropy: 0.41234, Grad Norm: 0.12345, "
    "KL Loss Avg: 0.00000, KL Loss Max: 0.00000, Iteration time: 5.12s."
)


@pytest.mark.parametrize("generation", ["747d1bd", "v0.4.4", "0.4.7"])  # identical text in all three (§4.5)
def test_grpo_step_line(generation: str) -> None:
    step = one(cosmos(GRPO_STEP), Step)
    assert (step.step, step.total) == (37, 60)
    assert step.reward_mean == -0.21 and step.reward_std == 0.05 and step.reward_min == -1.0
    assert step.completion_length_mean == 1.0 and step.loss_avg == 0.01234 and step.loss_max == 0.05
    assert step.learning_rate == 2e-6 and step.entropy == 0.51234 and step.effective_entropy == 0.41234
    assert step.grad_norm == 0.12345 and step.kl_loss_avg == 0.0 and step.iteration_time_s == 5.12


def test_step_line_with_nan_values() -> None:
    step = one(cosmos(GRPO_STEP.replace("Reward Std: 0.0500", "Reward Std: nan").replace("0.12345", "nan")), Step)
    assert math.isnan(step.reward_std or 0.0) and math.isnan(step.grad_norm or 0.0)
    assert step.reward_mean == -0.21


def test_sft_step_line_shapes() -> None:
    step = one(cosmos("Step: 5/100, Loss: 0.12345, Max Loss 0.20000, Grad norm: 1.50000, Iteration time: 0.80s."), Step)
    assert (step.step, step.total, step.loss_avg, step.loss_max, step.grad_norm, step.iteration_time_s) == (
        5, 100, 0.12345, 0.2, 1.5, 0.8
    )
    assert step.reward_mean is None
    # the upstream doc example (an older SFT shape), torchrun-prefixed
    old = one(f"[rank0]:[cosmos] {TS} - cosmos - INFO - Step: 1/4670, Loss: 0.00000", Step)
    assert (old.step, old.total, old.loss_avg, old.rank) == (1, 4670, 0.0, 0)


def test_checkpoint_line_is_not_a_step_line() -> None:
    events = interesting(parse(cosmos("[Policy] Step: 50, checkpoint saved successfully at /o/20250609/checkpoints/"
                                      "step_50/policy."), Role.POLICY))
    assert [type(e).__name__ for e in events] == ["Checkpoint"]


def test_train_report_pairs_tolerate_commas_in_values() -> None:
    msg = (
        "[Controller] Train report data from total 48 rollouts: train_step: 3.0, train/reward_mean: -0.28, "
        "train/traj_L2: 1.5, custom/note: a, b, c, rollout/advantage_std: 0.0, train/comfort_reward: -0.1"
    )
    report = one(cosmos(msg), TrainReport)
    assert report.rollouts == 48
    assert report.metrics == {
        "train_step": 3.0,
        "train/reward_mean": -0.28,
        "train/traj_L2": 1.5,
        "custom/note": "a, b, c",
        "rollout/advantage_std": 0.0,
        "train/comfort_reward": -0.1,
    }


def test_validation_report_is_not_a_train_report() -> None:
    events = interesting(parse(cosmos("[Controller] Validation report data from total 8 rollouts: val/reward_avg: 1")))
    assert events == []


@pytest.mark.parametrize(
    ("text", "counts"),
    [
        ("{'outdated': 0}", {"outdated": 0}),
        ("{'outdated': 4, 'rollout_failed': 2}", {"outdated": 4, "rollout_failed": 2}),
        ("{'sampled': 10, 'filtered_positive': 3, 'filtered_negative': 5, 'outdated': 0}",
         {"sampled": 10, "filtered_positive": 3, "filtered_negative": 5, "outdated": 0}),
        ("defaultdict(<class 'int'>, {'outdated': 7})", {"outdated": 7}),
    ],
)
def test_dynamic_sampling_counts(text: str, counts: dict[str, int]) -> None:
    ev = one(cosmos(f"Dynamic sampling rewards distribution so far: {text}."), DynamicSampling)
    assert ev.counts == counts


def test_staleness_line() -> None:
    msg = ("[Controller] weight staleness: accepted p50=1 p99=3 max=4, discarded=8/16 "
           "(allowed_outdated_steps=4, sync_weight_interval=2)")
    ev = one(cosmos(msg), Staleness)
    assert (ev.p50, ev.p99, ev.max, ev.discarded, ev.total, ev.allowed_outdated_steps, ev.sync_weight_interval) == (
        1, 3, 4, 8, 16, 4, 2
    )


def test_soft_throttle_lines() -> None:
    lines = [
        cosmos("[Controller] Soft throttle ENGAGED: samples_on_the_fly=480 >= threshold=480 (allowed_outdated_steps=4, "
               "rollouts_per_global_batch=96); rollout workers will receive empty payload lists until the counter "
               "drops."),
        cosmos("[Controller] Soft throttle still engaged after 35.2s: samples_on_the_fly=500 threshold=480"),
        cosmos("[Controller] Soft throttle RELEASED after 61.0s: samples_on_the_fly=400 < threshold=480"),
        cosmos("[Controller] Current pending rollouts 200 is larger than the allowed outdated version count 4. "
               "Generate with batch 8", "WARNING"),
    ]
    got = [e for e in interesting(parse(lines)) if isinstance(e, Throttle)]
    assert [(e.state, e.in_flight, e.threshold, e.seconds) for e in got[:3]] == [
        (ThrottleState.ENGAGED, 480, 480, None),
        (ThrottleState.STILL_ENGAGED, 500, 480, 35.2),
        (ThrottleState.RELEASED, 400, 480, 61.0),
    ]
    assert (got[3].state, got[3].pending, got[3].batch, got[3].level) == (
        ThrottleState.PENDING_OVER_ALLOWED, 200, 8, "WARNING"
    )


def test_registration_and_liveness_signals() -> None:
    cases = [
        (cosmos(f"[Controller] All atoms of POLICY Replica {UUID} has been set."), SignalKind.REPLICA_ATOMS_SET,
         {"role": "POLICY", "uuid": UUID}),
        (cosmos("Waiting for 3 more replicas to arrive"), SignalKind.WAITING_FOR_REPLICAS, {"count": 3}),
        (cosmos("[Controller] No valid rollout replicas found, skip PolicyToRolloutUnicastCommand"),
         SignalKind.NO_VALID_ROLLOUT, {}),
        (cosmos(f"[Controller] Rollout {UUID} is dead", "WARNING"), SignalKind.REPLICA_DEAD,
         {"role": "Rollout", "uuid": UUID}),
        (cosmos(f"[Controller] Unregistering replica {UUID}"), SignalKind.REPLICA_UNREGISTERING, {"uuid": UUID}),
        (cosmos(f"[Controller] Replica {UUID} is stopping."), SignalKind.REPLICA_STOPPING, {"uuid": UUID}),
        (cosmos(f"[Controller] will clean hang replicas: ['{UUID}']"), SignalKind.HANG_REPLICAS_CLEANED,
         {"replicas": f"['{UUID}']"}),
        (cosmos("[Controller] No policy replicas registered. Assuming training is finished; signaling end of "
                "rollouts.", "WARNING"), SignalKind.NO_POLICY_REPLICAS, {}),
        (cosmos("[Controller] Job phase RUNNING -> DRAINING at frozen horizon 40"), SignalKind.JOB_DRAINING,
         {"horizon": 40}),
        (cosmos("[Controller] All epochs finished fetching rollout prompts, wait for rollouts generation and training "
                "to complete."), SignalKind.ALL_EPOCHS_FETCHED, {}),
        (cosmos("[Controller] Policy side finished; broadcasting STOP to 2 rollout replica(s)."),
         SignalKind.POLICY_SIDE_FINISHED, {"rollouts": 2}),
        (cosmos("[ABNORMAL shutdown] Rollout checkout gate timed out after 200s: only 1/2 rollout replicas posted end."
                "  A rollout likely wedged while still heartbeating; forcing controller shutdown.", "WARNING"),
         SignalKind.CONTROLLER_SHUTDOWN_ABNORMAL, {"posted": 1, "expected": 2, "reason": "checkout_gate_timeout"}),
        (cosmos("Successfully loaded configuration from /tmp/tmpab12.toml"), SignalKind.CONFIG_LOADED,
         {"path": "/tmp/tmpab12.toml"}),
        (cosmos("Wandb is not available. Please install it to use wandb logging features.", "WARNING"),
         SignalKind.WANDB_UNAVAILABLE, {}),
    ]
    for line, kind, fields in cases:
        sig = signal(line, kind)
        for k, v in fields.items():
            assert sig.fields[k] == v, (line, k, sig.fields)


@pytest.mark.parametrize(
    ("generation", "msg", "fields"),
    [
        ("v0.4.4", f"[Controller] Received rollout end signal from {UUID} rank=0", {"uuid": UUID, "rank": 0}),
        ("747d1bd", f"[Controller] Received rollout end signal from {UUID}", {"uuid": UUID, "rank": None}),
    ],
)
def test_rollout_end_signal_both_texts(generation: str, msg: str, fields: dict[str, object]) -> None:
    assert signal(cosmos(msg), SignalKind.ROLLOUT_END_SIGNAL).fields == fields


@pytest.mark.parametrize(
    ("msg", "reason"),
    [
        ("[Controller] All replicas are finished (heartbeat-death reap); finalizing -- shutting down controller.",
         "heartbeat-death reap"),
        (f"[Controller] All replicas are finished (clean unregister of {UUID}); finalizing -- shutting down "
         "controller.",
         f"clean unregister of {UUID}"),
        ("[Controller] All replicas are finished, finalizing...", None),  # 747d1bd
    ],
)
def test_all_replicas_finished_both_texts(msg: str, reason: str | None) -> None:
    assert signal(cosmos(msg), SignalKind.ALL_REPLICAS_FINISHED).fields["reason"] == reason


def test_747d1bd_end_of_data_lines() -> None:
    lines = [
        cosmos("[Controller] All rollouts have ended, recompute total steps with 37 remaining rollouts..."),
        cosmos("[Controller] There are still remaining steps, no op required"),
        cosmos("[Controller] No remaining steps, policy and rollouts happen to finish at the same time"),
        cosmos("[Controller] Clear the rollout buffer, and trigger an extra `DataFetch`"),
    ]
    got = [(s.fields["phase"], s.fields["remaining"]) for s in interesting(parse(lines))
           if getattr(s, "kind", None) is SignalKind.ALL_ROLLOUTS_ENDED]
    assert got == [("recompute", 37), ("steps_remain", None), ("finished_together", None), ("extra_fetch", None)]


def test_debug_noise_and_unknown_lines_stay_loglines() -> None:
    lines = [
        cosmos("[Controller samples_on_the_fly] source=train_ack before=96 delta=-48 after=48", "DEBUG"),
        cosmos("[Controller] Filtered out outdated rollout with version 3, current step 9, estimated step 9, pending "
               "rollouts 12, preceeding rollouts in this batch 0, allowed_outdated_steps 4", "DEBUG"),
        "INFO:     Started server process [4242]",
        "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
    ]
    events = parse(lines)
    assert all(isinstance(e, LogLine) for e in events)
    assert [e.family for e in events] == ["cosmos", "cosmos", "uvicorn", "uvicorn"]  # type: ignore[attr-defined]
    assert events[0].level == "DEBUG" and events[2].level == "INFO"
