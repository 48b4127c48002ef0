"""Metric series from reference-format lines, and the Collector's bounded memory."""

from __future__ import annotations

from detector_helpers import cosmos, run_logs, stat, steady_run, step, train_report

from a1x_diagnostics.engine import Collector
from a1x_diagnostics.events import Role, Source, Stat
from a1x_diagnostics.metrics import Series


def test_summary_from_step_stat_and_report_lines() -> None:
    lines = [
        stat(100.0, 0, 0, in_flight=48),
        stat(120.0, 480, 12, in_flight=60, outdated=3),
        train_report(121, 1, 40, **{"train/traj_L2": 1.42, "train/reasoning_score": -0.3}),
        step(121, 1, 40, reward=-0.21, std=0.12, it=5.0),
        train_report(131, 2, 40),
        step(131, 2, 40, reward=-0.20, std=0.11, it=5.5),
        cosmos(
            140,
            "[Controller] weight staleness: accepted p50=1 p99=2 max=3, discarded=0/48 "
            "(allowed_outdated_steps=4, sync_weight_interval=2)",
        ),
    ]
    rejected = cosmos(
        150,
        "[Rollout rank=0] prompt rejected: prompt.weight_version=9 current_weight_version=4 allowed_outdated=4 "
        "ceiling=8; head-of-queue will be re-checked until current_weight_version advances",
        rank=0,
    )
    r = run_logs({"controller.log": lines, "rollout_0.log": [rejected]})
    s = r.collector.metrics.summary()
    assert (s["step"], s["total_steps"]) == (2, 40)
    assert s["reward_mean"] == -0.2 and s["reward_std"] == 0.11
    assert s["traj_l2"] == 1.5 and s["reasoning_score"] == -0.3  # the recipe's reward components (§10)
    assert s["step_time_s"] == 10.0 and s["iteration_time_s"] == 5.5
    assert (s["pending_rollouts"], s["in_flight"], s["filtered_outdated"]) == (12, 60, 3)
    assert s["samples_per_s"] == 24.0 and s["tokens_per_s"] == 1200.0  # Δ over Δelapsed (§7.4)
    assert s["weight_staleness_max"] == 3 and s["prompt_version_gap"] == 5
    assert s["weight_version_gap"] == 3  # the staleness of accepted rollouts


def test_train_report_alone_gives_step_metrics_and_recipe_components() -> None:
    lines = [train_report(100 + 10 * i, i, 60, **{"train/traj_L2": 1.6 - 0.01 * i}) for i in range(1, 4)]
    s = run_logs({"controller.log": lines}).collector.metrics.summary()
    assert (s["step"], s["total_steps"]) == (3, 60)
    assert s["traj_l2"] == 1.57 and s["comfort_reward"] == -0.15 and s["advantage_std"] == 0.87
    assert s["step_time_s"] == 10.0


def test_repeated_and_old_step_lines_do_not_rewind() -> None:
    lines = [*steady_run(5, 10), step(400, 3, 10)]
    m = run_logs({"controller.log": lines}).collector.metrics
    assert m.step == 5
    series = m.get("step")
    assert series is not None and series.seen == 5


def test_series_decimates_but_keeps_the_exact_last_value() -> None:
    series = Series("x", capacity=64)
    for i in range(10_000):
        series.append(float(i), ts=float(i))
    assert len(series) <= 64
    assert series.last_value == 9999.0
    assert series.tail(3)[-1] == 9999.0
    values = [v for _, _, v in series.points()]
    assert values == sorted(values) and values[0] == 0.0 and values[-1] == 9999.0


def test_collector_memory_is_bounded_on_a_long_stream() -> None:
    collector = Collector(series_capacity=256)
    source = Source("controller.log", Role.CONTROLLER)
    for i in range(50_000):
        collector.add(
            Stat(
                source=source,
                line=i + 1,
                text="",
                samples=i,
                completion_tokens=i,
                pending=i % 97,
                in_flight=None,
                outdated_filtered=None,
                elapsed_s=float(i),
            )
        )
    assert collector.store.stats.count == 50_000
    assert len(collector.store.stats.items()) <= 2 * collector.store.k
    assert all(len(s) <= 256 for s in collector.metrics.series.values())
    assert collector.metrics.last("pending_rollouts") == 49_999 % 97


def test_the_step_gap_follows_the_latest_receive_however_many_there_were() -> None:
    """A long run receives weights hundreds of thousands of times: the last one counts, not the first 64 k."""
    from datetime import datetime, timedelta

    from a1x_diagnostics.events import SyncPhase, WeightSync

    collector = Collector()
    rollout = Source("rollout_0.log", Role.ROLLOUT, 0)
    start = datetime(2025, 6, 9, 12, 0, 0)
    for i in range(70000):
        collector.add(WeightSync(source=rollout, line=i + 1, text="", ts=start + timedelta(seconds=i),
                                 phase=SyncPhase.RECV_DONE, step=i // 100, seconds=0.5))
    collector.metrics.step = 700
    assert collector.metrics.recv_gap() == (700, 699, (start + timedelta(seconds=69999)).timestamp())
    assert collector.metrics.summary()["p2r_step_gap"] == 1
