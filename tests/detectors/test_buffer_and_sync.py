"""rollout_buffer_growth, rollout_starved, weight_sync_lag, nccl_p2p_hang on reference-format lines."""

from __future__ import annotations

from detector_helpers import (
    ROLLOUT_UUID,
    config_dump,
    cosmos,
    dump_config,
    recipe_config,
    run_logs,
    stat,
    steady_run,
    step,
    train_report,
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
    r = run_logs({"controller.log": lines, "policy_0.log": [config_dump(1, recipe_config())]})
    f = r.one("rollout_buffer_growth")
    # the spell began at 290 - 185.3 = 104.7 s, after step 1's start (126 - 25 = 101 s, its Step line minus its
    # Iteration time); the last step ended at 276 s: 171 s of it while the policy trained
    assert "soft throttle stayed engaged for 171 s while the policy trained" in f.explanation
    assert any("Soft throttle still engaged" in e.text for e in f.evidence)


def test_buffer_growth_needs_the_batch_size() -> None:
    """Steps of data in the buffer need B: without a config or a Train report the check says it cannot see."""
    r = run_logs({"controller.log": _growing_controller(new_stat=True)})
    assert r.state("rollout_buffer_growth") is CheckState.BLIND
    assert "train_batch_per_replica" in (r.note("rollout_buffer_growth") or "")


def _pinned(steps: int, allowed: int, *, batch: int = 48, stale: bool = False, every: float = 10.0,
            it: float = 9.0) -> list[str]:
    """Controller lines of a run whose buffer sits at allowed_outdated_steps × B from the first step (§13.1)."""
    lines = []
    samples = 0
    for i in range(1, steps + 1):
        t = 100 + i * every
        samples += batch
        if stale:
            lines.append(cosmos(t - 3, f"[Controller] weight staleness: accepted p50={allowed} p99={allowed} "
                                f"max={allowed}, discarded=0/8 (allowed_outdated_steps={allowed}, "
                                "sync_weight_interval=1)"))
        lines.append(stat(t - 3, samples, allowed * batch, in_flight=(allowed + 1) * batch if stale else None))
        lines.append(step(t, i, 40, it=it))
    return lines


def test_buffer_at_the_default_ceiling_is_the_throttle_working_747d1bd() -> None:
    """allowed_outdated_steps = 4 (the default): pending pinned at 4 × B is the designed bound, not growth (§15)."""
    config = recipe_config(train__train_policy__allowed_outdated_steps=4)
    r = run_logs({"controller.log": steady_run(14, 40, pending=[160, 184]),
                  "policy_0.log": [config_dump(1, config)]})
    assert "rollout_buffer_growth" not in r.ids
    assert "designed bound" in (r.note("rollout_buffer_growth") or "")


def test_buffer_pinned_at_a_raised_ceiling_747d1bd() -> None:
    """747d1bd logs no staleness or throttle line: pending pinned at A × B for a raised A is the evidence."""
    config = recipe_config(train__train_policy__allowed_outdated_steps=16)
    r = run_logs({"controller.log": _pinned(6, 16), "policy_0.log": [config_dump(1, config)]})
    f = r.one("rollout_buffer_growth")
    assert "at every step" in f.explanation and "16 steps of data" in f.explanation
    assert f.data["saturated_steps"] == 6
    assert [(fx.path, fx.current, fx.proposed) for fx in f.fixes] == [
        ("train.train_policy.allowed_outdated_steps", 16, 4)
    ]
    assert "trade-off" in f.fixes[0].why


def test_buffer_pinned_for_two_steps_is_enough() -> None:
    """Any step count: a run of two steps, both held at a raised ceiling, shows it."""
    config = recipe_config(train__train_policy__allowed_outdated_steps=16)
    r = run_logs({"controller.log": _pinned(2, 16), "policy_0.log": [config_dump(1, config)]})
    assert "rollout_buffer_growth" in r.ids
    r = run_logs({"controller.log": _pinned(1, 16), "policy_0.log": [config_dump(1, config)]})
    assert "rollout_buffer_growth" not in r.ids  # one step cannot show a buffer pinned


def test_buffer_held_back_0_4_4_staleness_at_the_limit_and_rollouts_ahead() -> None:
    config = recipe_config(train__train_policy__allowed_outdated_steps=12, train__train_batch_per_replica=8)
    lines = _pinned(14, 12, batch=8, stale=True)
    ahead = [
        cosmos(
            100 + 10 * i + 2,
            f"[Rollout rank=0] prompt rejected: prompt.weight_version={i + 13} current_weight_version={i - 1} "
            f"allowed_outdated=12 ceiling={i + 11}; head-of-queue will be re-checked until "
            "current_weight_version advances",
            rank=0,
        )
        for i in range(2, 12)
    ]
    r = run_logs({"controller.log": lines, "rollout_0.log": ahead, "policy_0.log": [config_dump(1, config)]})
    f = r.one("rollout_buffer_growth")
    assert "accepted rollouts were up to 12 steps stale" in f.explanation
    assert "refused prompts meant for 13 steps ahead" in f.explanation
    assert "weight_sync_lag" not in r.ids  # the weights those prompts need are not trained yet: ahead, not behind


def test_staleness_at_the_default_limit_is_healthy_0_4_4() -> None:
    """What every recorded healthy 0.4.4 run shows: staleness = allowed = 4, pending 4 × B (§15)."""
    config = recipe_config(train__train_policy__allowed_outdated_steps=4, train__train_batch_per_replica=8)
    r = run_logs({"controller.log": _pinned(14, 4, batch=8, stale=True),
                  "policy_0.log": [config_dump(1, config)]})
    assert "rollout_buffer_growth" not in r.ids


def _smoke(allowed: int, discards_in_step_1: int) -> list[str]:
    """6 steps of 5 s (Iteration time 4.5 s), pending pinned at allowed × 8 from the first step; the rollouts
    discarded in step 1 come before its Step line but after its start (the line is written when it ends)."""
    batch, lines, samples = 8, [], 0
    for i in range(1, 7):
        t = 100 + i * 5.0
        for j in range(2):
            samples += 8
            dropped = discards_in_step_1 if (i, j) == (1, 0) else 0
            lines.append(cosmos(t - 2 + j, f"[Controller] weight staleness: accepted p50={allowed} p99={allowed} "
                                f"max={allowed}, discarded={dropped}/8 (allowed_outdated_steps={allowed}, "
                                "sync_weight_interval=1)"))
            lines.append(stat(t - 2 + j, samples, allowed * batch, in_flight=(allowed + 1) * batch, outdated=dropped))
        lines.append(cosmos(t - 0.5, f"[Controller] Soft throttle ENGAGED: samples_on_the_fly={(allowed + 1) * batch}"
                            f" >= threshold={(allowed + 1) * batch} (allowed_outdated_steps={allowed}, "
                            f"rollouts_per_global_batch={batch}); rollout workers will receive empty payload lists "
                            "until the counter drops."))
        lines.append(step(t, i, 6, it=4.5))
        lines.append(train_report(t, i, 6, rollouts=batch))
    return lines


def test_a_smoke_test_held_at_a_raised_throttle_ceiling_is_buffer_growth() -> None:
    """The genuine 6-step run of tests/fixtures/real-runs/cosmos-rl-0.4.4/rollout_buffer_growth, in small."""
    r = run_logs({"controller.log": _smoke(16, discards_in_step_1=8)})
    f = r.one("rollout_buffer_growth")
    assert "at every step, from step 1's start" in f.explanation
    assert "8 rollouts were discarded as outdated" in f.explanation  # during step 1, before its Step line
    assert f.data["saturated_steps"] == 6


def test_a_smoke_test_at_the_default_ceiling_is_healthy_even_with_discards() -> None:
    r = run_logs({"controller.log": _smoke(4, discards_in_step_1=2)})
    assert "rollout_buffer_growth" not in r.ids
    assert "designed bound" in (r.note("rollout_buffer_growth") or "")


def test_a_healthy_smoke_test_at_the_bound_is_not_buffer_growth() -> None:
    """What every recorded tiny healthy run shows in its first steps (tests/fixtures/cosmos/*/healthy)."""
    lines = []
    for i in range(1, 5):
        t = 100 + i * 5.0
        lines.append(stat(t - 1, 8 * i, 28, in_flight=36))
        lines.append(cosmos(t - 0.5, "[Controller] Soft throttle ENGAGED: samples_on_the_fly=40 >= threshold=40 "
                            "(allowed_outdated_steps=4, rollouts_per_global_batch=8); rollout workers will receive "
                            "empty payload lists until the counter drops."))
        lines.append(step(t, i, 4))
        lines.append(train_report(t, i, 4, rollouts=8))
    assert "rollout_buffer_growth" not in run_logs({"controller.log": lines}).ids


def test_short_run_at_the_throttle_is_not_growth() -> None:
    config = recipe_config(train__train_policy__allowed_outdated_steps=4)
    r = run_logs({"controller.log": steady_run(8, 8, pending=[160, 184]), "policy_0.log": [config_dump(1, config)]})
    assert "rollout_buffer_growth" not in r.ids


def test_a_buffer_drained_after_every_prompt_was_handed_out_is_still_pinned() -> None:
    """Once every epoch is fetched the buffer drains by design: those last steps do not break 'every step'."""
    config = recipe_config(train__train_policy__allowed_outdated_steps=16)
    lines = _pinned(6, 16)
    lines.append(cosmos(161, "[Controller] All epochs finished fetching, waiting for all rollouts to finish..."))
    for i, pending in enumerate([700, 500, 300, 100], start=7):
        lines += [stat(100 + i * 10 - 3, 48 * (i + 10), pending), step(100 + i * 10, i, 10, it=9.0)]
    r = run_logs({"controller.log": lines, "policy_0.log": [config_dump(1, config)]})
    assert "rollout_buffer_growth" in r.ids


def test_balanced_run_has_no_buffer_finding() -> None:
    r = run_logs({"controller.log": steady_run(30, 30), "policy_0.log": [config_dump(1, recipe_config())]})
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
    launcher = [cosmos(2, "Detected 8 GPUs: 0,1,2,3,4,5,6,7")]
    r = run_logs({"controller.log": lines, "policy_0.log": [config_dump(1, recipe_config())], "run.out": launcher})
    f = r.one("rollout_starved")
    assert "waits for rollouts" in f.explanation
    # 1 policy x 4 GPUs + 1 rollout x 1 = 5 of 8: one more rollout replica fits; the batch size is never touched
    assert [(fx.path, fx.proposed) for fx in f.fixes] == [("rollout.parallelism.n_init_replicas", 2)]
    assert "6 of the 8 GPUs" in f.fixes[0].why


def test_rollout_starved_without_the_gpu_count_proposes_no_layout() -> None:
    lines = steady_run(12, 40, step_every=40.0, pending=[0, 0, 24, 0], it=4.0)
    f = run_logs({"controller.log": lines, "policy_0.log": [config_dump(1, recipe_config())]}).one("rollout_starved")
    assert f.fixes == []
    assert "do not say how many GPUs" in (f.action or "")
    launcher = [cosmos(2, "Detected 4 GPUs: 0,1,2,3")]  # 4 + 1 = 5 already: no room
    f = run_logs({"controller.log": lines, "policy_0.log": [config_dump(1, recipe_config())],
                  "run.out": launcher}).one("rollout_starved")
    assert f.fixes == [] and "this node has 4 GPUs and the replicas use 5" in (f.action or "")


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
    assert "refused to generate 6 times while they waited for weights the policy had already trained" in f.explanation
    assert "prompt rejected" in f.evidence[0].text
    # one fix, on the cause: a sync within the 1 step the gate accepts; raising the gate is the alternative
    assert [(fx.path, fx.proposed) for fx in f.fixes] == [("train.sync_weight_interval", 1)]
    assert "trade-off: 4× as many weight transfers" in f.fixes[0].why
    assert "allowed_outdated_steps" in (f.action or "")


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


def _rejected(t: float, prompt: int, current: int, allowed: int) -> str:
    return cosmos(t, f"[Rollout rank=0] prompt rejected: prompt.weight_version={prompt} current_weight_version="
                     f"{current} allowed_outdated={allowed} ceiling={current + allowed}; head-of-queue will be "
                     "re-checked until current_weight_version advances", rank=0)


RAISED = ("allowed_outdated_steps is less than sync_weight_interval - 1, setting allowed_outdated_steps to 2.")


def _gated_run(total: int = 12) -> dict[str, list[str]]:
    """The genuine weight_sync_lag run's shape (tests/fixtures/real-runs/cosmos-rl-0.4.4/weight_sync_lag): k = 3, A
    raised 0 -> 2, weights received at steps 3, 6, 9, staleness saw-tooth up to 2, rejections one step after a sync."""
    controller = [cosmos(50, RAISED, level="WARNING")]
    for i in range(1, total + 1):
        t = 100 + 10 * i
        stale = (i - 1) % 3
        controller += [cosmos(t - 4, f"[Controller] weight staleness: accepted p50={stale} p99={stale} max={stale}, "
                                     "discarded=0/4 (allowed_outdated_steps=2, sync_weight_interval=3)"),
                       stat(t - 4, 8 * i, 4, in_flight=16), step(t, i, total, it=0.3)]
    rollout = [_recv_done(100 + 10 * s + 2, s) for s in (3, 6, 9)]
    rollout += [_rejected(111, 3, 0, 2), _rejected(201, 12, 9, 2)]
    return {"controller.log": controller, "rollout_0.log": rollout}


def test_weight_sync_lag_when_rollouts_wait_between_syncs() -> None:
    """One step behind is lag when the next sync is steps away (k = 3): the rollouts wait for it (§6.3, §13.2)."""
    r = run_logs(_gated_run())
    f = r.one("weight_sync_lag")
    assert "refused to generate 2 times" in f.explanation
    assert "weights reached the rollouts every 3 steps" in f.explanation
    assert "sync_weight_interval = 3 while allowed_outdated_steps = 2 (raised to that by the loader" in f.explanation
    assert any("setting allowed_outdated_steps to 2" in e.text for e in f.evidence)  # the config cause, quoted
    assert [(fx.path, fx.proposed) for fx in f.fixes] == [("train.sync_weight_interval", 1)]
    assert "outdated_steps_below_sync" in r.ids


def test_the_sync_interval_fix_keeps_the_users_tolerance_when_the_toml_gives_it() -> None:
    """TOML allowed_outdated_steps = 2 with k = 4 (the loader runs 3): a sync every 2 steps ends the wait (§8.6)."""
    run = recipe_config(train__sync_weight_interval=4, train__train_policy__allowed_outdated_steps=3)
    toml = dump_config({"train": {"sync_weight_interval": 4, "train_policy": {"allowed_outdated_steps": 2}}})
    rollout = [_recv_done(100 + 10 * s + 1, s) for s in (4, 8, 12, 16)]
    r = run_logs({"controller.log": steady_run(20, 20), "rollout_0.log": rollout,
                  "policy_0.log": [config_dump(1, run)]}, config=toml)
    f = r.one("weight_sync_lag")
    assert [(fx.path, fx.current, fx.proposed) for fx in f.fixes] == [("train.sync_weight_interval", 4, 2)]
    assert "within the 2 steps" in f.fixes[0].why


def test_747d1bd_lag_from_the_receive_steps_alone() -> None:
    """747d1bd's gate is silent (§6.3): receives every 4 steps with A = 3 are the trace (§15 weight_sync_gating)."""
    config = recipe_config(train__sync_weight_interval=4, train__train_policy__allowed_outdated_steps=3)
    rollout = [_recv_done(100 + 10 * s + 1, s) for s in (4, 8, 12, 16)]
    r = run_logs({"controller.log": steady_run(20, 20), "rollout_0.log": rollout,
                  "policy_0.log": [config_dump(1, config)]})
    f = r.one("weight_sync_lag")
    assert "every 4 steps" in f.explanation and "4 such cycles" in f.explanation


def test_a_sync_every_step_or_a_gate_wider_than_the_interval_is_not_lag() -> None:
    rollout = [_recv_done(100 + 10 * s + 1, s) for s in range(1, 12)]
    r = run_logs({"controller.log": steady_run(12, 12), "rollout_0.log": rollout,
                  "policy_0.log": [config_dump(1, recipe_config(train__sync_weight_interval=1,
                                                                 train__train_policy__allowed_outdated_steps=0))]})
    assert "weight_sync_lag" not in r.ids  # on-policy by choice: waiting for each step's weights is the design
    rollout = [_recv_done(100 + 10 * s + 1, s) for s in (2, 4, 6, 8, 10)]
    staleness = [cosmos(100 + 10 * i - 4, "[Controller] weight staleness: accepted p50=4 p99=4 max=4, "
                        "discarded=0/4 (allowed_outdated_steps=4, sync_weight_interval=2)") for i in range(1, 12)]
    r = run_logs({"controller.log": [*steady_run(12, 12), *staleness], "rollout_0.log": rollout})
    assert "weight_sync_lag" not in r.ids  # k = 2 within A = 4: staleness at 4 is the buffer, not the sync


def test_rejections_for_weights_not_trained_yet_are_not_lag() -> None:
    rollout = [_rejected(100 + 10 * i + 2, i + 6, i - 1, 4) for i in range(2, 10)]  # needs i + 2 > step i
    r = run_logs({"controller.log": steady_run(12, 40), "rollout_0.log": rollout})
    assert "weight_sync_lag" not in r.ids


def test_growing_receive_times_are_lag() -> None:
    rollout = [cosmos(100 + 10 * s + 1, f"[Rollout] All 1490 at step {s} recv operations finished in "
                      f"{2.0 if s < 6 else 40.0:.3f} seconds with 19834.2 MB received. While 0 non-trainable "
                      "splitted params skipped and 1490 trainable splitted params transferred.", rank=0)
               for s in range(1, 11)]
    r = run_logs({"controller.log": steady_run(12, 40), "rollout_0.log": rollout})
    f = r.one("weight_sync_lag")
    assert "weight receives slowed from about 2 s to 40 s" in f.explanation


def test_rejections_after_the_final_step_are_the_shutdown() -> None:
    files = _gated_run()
    files["rollout_0.log"] = [*files["rollout_0.log"][:3], _rejected(230, 12, 9, 2), _rejected(236, 12, 9, 2)]
    r = run_logs(files)
    f = r.one("weight_sync_lag")  # still lag from the receive steps...
    assert "refused to generate" not in f.explanation  # ...but the rejections after step 12/12 do not count


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
