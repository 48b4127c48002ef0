"""rollout_buffer_growth, rollout_starved, weight_sync_lag, nccl_p2p_hang on reference-format lines."""

from __future__ import annotations

from detector_helpers import (
    ROLLOUT_UUID,
    config_dump,
    cosmos,
    recipe_config,
    run_logs,
    stat,
    steady_run,
    step,
)

from a1x_diagnostics.findings import CheckState


def _growing_controller(new_stat: bool) -> list[str]:
    """Pending climbs by 24 every fetch while the policy takes 48 per step every 30 s (§15)."""
    lines = []
    samples, pending = 0, 0
    n = 0
    for i in range(40):
        t = 100 + i * 5
        samples += 48
        pending += 48
        lines.append(stat(t, samples, pending, in_flight=pending + 96 if new_stat else None))
        if i % 6 == 5:
            n += 1
            pending -= 48
            lines.append(step(t + 1, n, 40, it=25.0))
    return lines


def test_buffer_growth_747d1bd_stat_shape() -> None:
    r = run_logs(
        {"controller.log": _growing_controller(new_stat=False), "policy_0.log": [config_dump(1, recipe_config())]}
    )
    f = r.one("rollout_buffer_growth")
    assert "pending rollouts rose" in f.explanation
    assert "Stat:" in f.evidence[0].text
    assert any(fx.path == "rollout.batch_size" and fx.current == 2 and fx.proposed == 1 for fx in f.fixes)


def test_buffer_growth_new_stat_shape_with_long_throttle() -> None:
    lines = _growing_controller(new_stat=True)
    lines.append(
        cosmos(290, "[Controller] Soft throttle still engaged after 185.3s: samples_on_the_fly=2448 threshold=2448")
    )
    r = run_logs({"controller.log": lines})
    f = r.one("rollout_buffer_growth")
    assert "soft throttle stayed engaged for 150 s while the policy trained" in f.explanation  # steps 1-6: 126-276 s
    assert any("Soft throttle still engaged" in e.text for e in f.evidence)


def test_buffer_held_back_by_the_throttle_for_many_steps_747d1bd() -> None:
    # allowed_outdated_steps = 4, B = 48: after every dispatch 3+ steps of completions stay buffered (§13.1)
    config = recipe_config(train__train_policy__allowed_outdated_steps=4)
    lines = steady_run(14, 40, pending=[160, 184])
    r = run_logs({"controller.log": lines, "policy_0.log": [config_dump(1, config)]})
    f = r.one("rollout_buffer_growth")
    assert "held back by the soft throttle" in f.explanation
    assert f.data["saturated_steps"] >= 10


def test_buffer_held_back_0_4_4_staleness_at_the_limit_and_rollouts_ahead() -> None:
    lines = []
    for i in range(1, 15):
        t = 100 + 10 * i
        lines += [
            stat(t - 5, 48 * i, 32, in_flight=40),
            cosmos(
                t - 4,
                "[Controller] weight staleness: accepted p50=4 p99=4 max=4, discarded=0/4 "
                "(allowed_outdated_steps=4, sync_weight_interval=1)",
            ),
            step(t, i, 40),
        ]
    ahead = [
        cosmos(
            100 + 10 * i + 2,
            f"[Rollout rank=0] prompt rejected: prompt.weight_version={i + 4} current_weight_version={i - 1} "
            f"allowed_outdated=4 ceiling={i + 3}; head-of-queue will be re-checked until "
            "current_weight_version advances",
            rank=0,
        )
        for i in range(2, 12)
    ]
    r = run_logs({"controller.log": lines, "rollout_0.log": ahead})
    f = r.one("rollout_buffer_growth")
    assert "refused prompts meant for 4 steps ahead" in f.explanation
    assert "weight_sync_lag" not in r.ids  # fresh weights: the rollouts are ahead, not behind


def test_short_run_at_the_throttle_is_not_growth() -> None:
    config = recipe_config(train__train_policy__allowed_outdated_steps=4)
    r = run_logs({"controller.log": steady_run(8, 8, pending=[160, 184]), "policy_0.log": [config_dump(1, config)]})
    assert "rollout_buffer_growth" not in r.ids


def test_balanced_run_has_no_buffer_finding() -> None:
    r = run_logs({"controller.log": steady_run(30, 30)})
    assert "rollout_buffer_growth" not in r.ids
    assert r.state("rollout_buffer_growth") is CheckState.OK


def test_buffer_blind_without_stat_lines_and_skipped_in_colocated_mode() -> None:
    r = run_logs({"policy_0.log": [config_dump(1, recipe_config())]})
    assert r.state("rollout_buffer_growth") is CheckState.BLIND
    r = run_logs({"policy_0.log": [config_dump(1, recipe_config(mode="colocated"))]})
    assert r.state("rollout_buffer_growth") is CheckState.SKIPPED


def test_rollout_starved_when_policy_idles() -> None:
    # 40 s steps of which 4 s compute; the buffer never holds a batch.
    lines = steady_run(12, 40, step_every=40.0, pending=[0, 0, 24, 0], it=4.0)
    r = run_logs({"controller.log": lines, "policy_0.log": [config_dump(1, recipe_config())]})
    f = r.one("rollout_starved")
    assert "waits for rollouts" in f.explanation
    assert any(fx.path == "rollout.parallelism.n_init_replicas" and fx.proposed == 2 for fx in f.fixes)


def test_busy_policy_is_not_starved() -> None:
    lines = steady_run(12, 40, step_every=10.0, pending=[0, 24], it=9.0)
    assert "rollout_starved" not in run_logs({"controller.log": lines}).ids


def _rejections(n: int) -> list[str]:
    return [
        cosmos(
            200 + 5 * i,
            "[Rollout rank=0] prompt rejected: prompt.weight_version=6 current_weight_version=2 allowed_outdated=1 "
            "ceiling=3; head-of-queue will be re-checked until current_weight_version advances",
            rank=0,
        )
        for i in range(n)
    ]


def test_weight_sync_lag_from_prompt_rejections_0_4_4() -> None:
    staleness = cosmos(
        150,
        "[Controller] weight staleness: accepted p50=1 p99=1 max=1, discarded=8/16 "
        "(allowed_outdated_steps=1, sync_weight_interval=4)",
    )
    r = run_logs({"controller.log": [*steady_run(5, 40), staleness], "rollout_0.log": _rejections(6)})
    f = r.one("weight_sync_lag")
    assert "refused to generate 6 times" in f.explanation and "gap 4 > allowed 1" in f.explanation
    assert "prompt rejected" in f.evidence[0].text
    paths = {fx.path: fx for fx in f.fixes}
    assert paths["train.sync_weight_interval"].proposed == 2
    assert paths["train.train_policy.allowed_outdated_steps"].proposed == 5


def test_weight_sync_lag_from_p2r_step_gap_747d1bd() -> None:
    recv = cosmos(
        105,
        "[Rollout] All 1490 at step 2 recv operations finished in 3.871 seconds with 19834.2421875 MB received. "
        "While 0 non-trainable splitted params skipped and 1490 trainable splitted params transferred.",
        rank=0,
    )
    config = recipe_config(train__sync_weight_interval=1, train__train_policy__allowed_outdated_steps=1)
    r = run_logs(
        {"controller.log": steady_run(12, 40), "rollout_0.log": [recv], "policy_0.log": [config_dump(1, config)]}
    )
    f = r.one("weight_sync_lag")
    assert "last weights a rollout received are from step 2" in f.explanation


def test_a_few_rejections_are_not_lag() -> None:
    r = run_logs({"controller.log": steady_run(5, 40), "rollout_0.log": _rejections(1)})
    assert "weight_sync_lag" not in r.ids


RECV_START = "[Rollout] Starting to execute 1490; 1490, 1490 weight sync receives ..."


def _recv_done(t: float, s: int) -> str:
    return cosmos(
        t,
        f"[Rollout] All 1490 at step {s} recv operations finished in 4.000 seconds with 19834.2 MB received. "
        "While 0 non-trainable splitted params skipped and 1490 trainable splitted params transferred.",
        rank=0,
    )


def test_p2p_hang_receive_started_never_finished() -> None:
    rollout = [cosmos(100, RECV_START, rank=0), _recv_done(104, 2), cosmos(200, RECV_START, rank=0)]
    controller = [
        *steady_run(3, 40),
        cosmos(1200, "[Controller] No valid rollout replicas found, skip PolicyToRolloutUnicastCommand"),
    ]
    r = run_logs({"controller.log": controller, "rollout_0.log": rollout})
    f = r.one("nccl_p2p_hang")
    assert "Starting to execute" in f.evidence[0].text
    assert "NCCL_P2P_DISABLE=1" in (f.action or "")


def test_p2p_receive_in_progress_is_not_a_hang_yet() -> None:
    rollout = [cosmos(100, RECV_START, rank=0), _recv_done(104, 2), cosmos(200, RECV_START, rank=0)]
    r = run_logs({"controller.log": steady_run(3, 40), "rollout_0.log": rollout})
    assert "nccl_p2p_hang" not in r.ids


def test_p2p_hang_blind_without_sync_lines() -> None:
    r = run_logs({"controller.log": steady_run(3, 40)})
    assert r.state("nccl_p2p_hang") is CheckState.BLIND
    assert ROLLOUT_UUID  # the helper's ids stay importable for other tests
