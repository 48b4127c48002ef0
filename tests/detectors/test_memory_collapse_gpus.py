"""vllm_oom, policy_oom, grpo_collapse, logging_blind, insufficient_gpus on reference-format lines."""

from __future__ import annotations

from detector_helpers import (
    ROLLOUT_UUID,
    config_dump,
    cosmos,
    recipe_config,
    run_logs,
    steady_run,
    step,
    train_report,
)

from a1x_diagnostics.findings import CheckState


def traceback(exc_line: str, rank: int | None = 0) -> list[str]:
    p = f"[rank{rank}]:" if rank is not None else ""
    return [
        f"{p}Traceback (most recent call last):",
        f'{p}  File "/workspace/cosmos-rl/cosmos_rl/rollout/vllm_rollout/vllm_rollout.py", line 298, in init_engine',
        f"{p}    self.rollout_engine = LLM(",
        f"{p}{exc_line}",
    ]


def registered_rollout() -> list[str]:
    return [
        cosmos(50, f"ROLLOUT Replica started at global rank 0, with replica name: {ROLLOUT_UUID}", rank=0),
        cosmos(51, f"ROLLOUT Replica {ROLLOUT_UUID} registered to controller", rank=0),
    ]


def test_vllm_oom_at_engine_start_kv_cache_proposes_max_len() -> None:
    exc = (
        "ValueError: To serve at least one request with the model's max seq len (8192), (4.50 GiB KV cache is needed, "
        "which is larger than the available KV cache memory (2.10 GiB). Based on the available memory, the estimated "
        "maximum model length is 3808. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
        "initializing the engine."
    )
    rollout = [*registered_rollout(), cosmos(120, "[Rollout] Initializing engine for rank: 0", rank=0), *traceback(exc)]
    r = run_logs({"rollout_0.log": rollout, "policy_0.log": [config_dump(1, recipe_config())]})
    f = r.one("vllm_oom")
    assert "at engine start-up" in f.explanation and "before any training step" in f.explanation
    assert f.data["phase"] == "engine_start"
    # one fix, what vLLM itself says fits; the other way (more of the GPU) is an alternative in words
    assert [(fx.path, fx.proposed) for fx in f.fixes] == [("policy.model_max_length", 3808)]
    assert "trade-off" in f.fixes[0].why
    assert "gpu_memory_utilization to 0.9" in (f.action or "")


def test_vllm_oom_free_memory_lowers_utilization() -> None:
    exc = (
        "ValueError: Free memory on device (55.0/79.19 GiB) on startup is less than desired GPU memory utilization "
        "(0.8, 63.35 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes."
    )
    r = run_logs({"rollout_0.log": [*registered_rollout(), *traceback(exc)]})
    f = r.one("vllm_oom")
    fixes = {fx.path: fx for fx in f.fixes}
    assert fixes["rollout.gpu_memory_utilization"].proposed == 0.64
    assert "another process" in (f.action or "")


def test_vllm_oom_mid_run_after_engine_initialized() -> None:
    rollout = [
        *registered_rollout(),
        cosmos(120, "[Rollout] Engine initialized.", rank=0),
        cosmos(
            300,
            "[Rollout] Failed in rollout generation: CUDA out of memory. Tried to allocate 1.53 GiB. GPU 0 has a total "
            "capacity of 79.19 GiB of which 1.02 GiB is free.",
            "ERROR",
            rank=0,
        ),
    ]
    r = run_logs({"controller.log": steady_run(5, 40), "rollout_0.log": rollout})
    f = r.one("vllm_oom")
    assert f.data["phase"] == "runtime"
    assert "mid-run (1 generation batch(es) failed" in f.explanation
    assert "rollout_generation_failed" not in r.ids  # the OOM is the one story, told once


def _policy_oom(config: dict, launcher: list[str] | None = None) -> object:
    policy = ["[rank0]:Traceback (most recent call last):",
              '[rank0]:  File "/x/cosmos_rl/policy/trainer/llm_trainer/grpo_trainer.py", line 1190, in step_training',
              "[rank0]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB."]
    files = {"policy_0.log": [config_dump(1, config), *policy]}
    if launcher is not None:
        files["run.out"] = launcher
    return run_logs(files).one("policy_oom")


def detected(n: int) -> str:
    return cosmos(2, f"Detected {n} GPUs: {','.join(str(i) for i in range(n))}")


def test_policy_oom_proposes_one_fix_without_more_gpus_when_the_gpus_are_unknown() -> None:
    """The recipe's policy (dp_shard_size 4, mini_batch 1, checkpointing on) with no launcher output: more
    sharding needs GPUs nobody said exist, so the one fix is offloading, and the action says why."""
    f = _policy_oom(recipe_config(train__fsdp_offload=False))
    assert [(fx.path, fx.proposed) for fx in f.fixes] == [("train.fsdp_offload", True)]
    assert "do not say how many this node has" in (f.action or "")


def test_policy_oom_on_a_one_gpu_run_never_proposes_more_gpus() -> None:
    """A one-GPU colocated_separated run (the genuine fixtures' shape, backend example_hf)."""
    config = recipe_config(mode="colocated_separated", rollout__backend="example_hf",
                           policy__parallelism__dp_shard_size=1, train__train_policy__mini_batch=2,
                           policy__model_gradient_checkpointing=True)
    f = _policy_oom(config, launcher=[detected(1)])
    assert [(fx.path, fx.proposed) for fx in f.fixes] == [("train.train_policy.mini_batch", 1)]
    assert "dp_shard_size" not in (f.action or "")  # two GPUs are not there: not even an alternative
    assert "gpu_memory_utilization" not in (f.action or "")  # example_hf does not read it


def test_policy_oom_raises_sharding_only_where_the_node_has_the_gpus() -> None:
    # 1 policy x 4 + 1 rollout x 1 = 5 GPUs now, 8 + 1 = 9 with the policy sharded over 8: not on an 8-GPU node
    config = recipe_config(train__train_policy__mini_batch=1, train__fsdp_offload=False)
    f = _policy_oom(config, launcher=[detected(8)])
    assert [(fx.path, fx.proposed) for fx in f.fixes] == [("train.fsdp_offload", True)]  # 8 + 1 > 8 GPUs
    assert "dp_shard_size" not in (f.action or "")
    config = recipe_config(train__train_policy__mini_batch=1, mode="colocated_separated",
                           rollout__backend="example_hf")
    f = _policy_oom(config, launcher=[detected(8)])  # rollouts share the policy's GPUs: 8 fit
    assert [(fx.path, fx.proposed) for fx in f.fixes] == [("policy.parallelism.dp_shard_size", 8)]
    assert "8 of the 8" in f.fixes[0].why


def test_policy_oom_turns_checkpointing_on_first() -> None:
    f = _policy_oom(recipe_config(policy__model_gradient_checkpointing=False), launcher=[detected(8)])
    assert [(fx.path, fx.proposed) for fx in f.fixes] == [("policy.model_gradient_checkpointing", True)]


def test_policy_oom_colocated_vllm_lowers_the_engine_share() -> None:
    f = _policy_oom(recipe_config(mode="colocated", rollout__backend="vllm", rollout__gpu_memory_utilization=0.6))
    assert [(fx.path, fx.proposed) for fx in f.fixes] == [("rollout.gpu_memory_utilization", 0.4)]


def _rollout_oom(config: dict | None, engine_up: bool = True) -> object:
    rollout = [*registered_rollout()]
    if engine_up:
        rollout.append(cosmos(120, "[Rollout] Engine initialized.", rank=0))
    rollout += ["[rank0]:Traceback (most recent call last):",
                '[rank0]:  File "/x/cosmos_rl/rollout/rollout_control.py", line 1699, in one_step_generation',
                "[rank0]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 MiB."]
    files = {"controller.log": steady_run(5, 40), "rollout_0.log": rollout}
    if config is not None:
        files["policy_0.log"] = [config_dump(1, config)]
    return run_logs(files).one("vllm_oom")


def test_rollout_oom_never_changes_the_group_size() -> None:
    f = _rollout_oom(recipe_config(rollout__backend="vllm", rollout__batch_size=4, rollout__n_generation=16))
    assert all(fx.path != "rollout.n_generation" for fx in f.fixes)
    assert [(fx.path, fx.proposed) for fx in f.fixes] == [("rollout.gpu_memory_utilization", 0.7)]
    assert "n_generation" not in (f.action or "")


def test_rollout_oom_of_an_engine_without_gpu_memory_utilization_proposes_no_vllm_key() -> None:
    """The genuine fixtures' backend, example_hf, never reads gpu_memory_utilization (§9)."""
    f = _rollout_oom(recipe_config(rollout__backend="example_hf", rollout__batch_size=4))
    assert [(fx.path, fx.proposed) for fx in f.fixes] == [("rollout.batch_size", 2)]
    assert "example_hf does not read gpu_memory_utilization" in (f.action or "")
    f = _rollout_oom(recipe_config(rollout__backend="example_hf", rollout__batch_size=1))
    assert f.fixes == []


def test_rollout_oom_with_an_unknown_backend_says_so() -> None:
    f = _rollout_oom(None)
    assert all("gpu_memory_utilization" not in fx.path for fx in f.fixes)
    assert "backend is unknown" in (f.action or "")


def test_grpo_collapse_with_a_constant_reward_blames_the_reward_function() -> None:
    """Reward Max = Reward Min at every step (the genuine grpo_collapse runs: 0.5 always): no sampling change."""
    lines = [step(100 + 10 * i, i, 40, reward=0.5, std=0.0, loss=0.0, grad=0.0, rmax=0.5, rmin=0.5)
             for i in range(1, 6)]
    r = run_logs({"controller.log": lines, "policy_0.log": [config_dump(1, recipe_config())]})
    f = r.one("grpo_collapse")
    assert "5 consecutive steps (1–5)" in f.explanation
    assert "the same reward, 0.5000, at every step" in f.explanation and "reward function" in f.explanation
    assert f.fixes == []  # no temperature, no n_generation: they cannot change a constant
    assert "reward function" in (f.action or "")
    assert "Step: 5/40" in f.evidence[0].text and "Reward Max: 0.5000, Reward Min: 0.5000" in f.evidence[0].text
    assert f.data["constant_reward"] is True


def test_grpo_collapse_at_the_recipe_gate_blames_the_outputs_not_the_sampling() -> None:
    lines = [step(100 + 10 * i, i, 40, reward=-1.0, std=0.0, loss=0.0, grad=0.0, rmax=-1.0, rmin=-1.0)
             for i in range(1, 6)]
    f = run_logs({"controller.log": lines, "policy_0.log": [config_dump(1, recipe_config())]}).one("grpo_collapse")
    assert f.fixes == [] and "−1" in (f.action or "")


def test_grpo_collapse_within_groups_keeps_the_sampling_fix() -> None:
    """Rewards differ across groups (Reward Std > 0, Max > Min) but no group has a spread: zero loss and grad."""
    lines = [step(100 + 10 * i, i, 40, reward=0.4, std=0.3, loss=0.0, grad=0.0, rmax=1.0, rmin=0.0)
             for i in range(1, 6)]
    r = run_logs({"controller.log": lines, "policy_0.log": [config_dump(1, recipe_config())]})
    f = r.one("grpo_collapse")
    assert "within a group" in f.explanation
    assert [(fx.path, fx.current, fx.proposed) for fx in f.fixes] == [
        ("rollout.sampling_config.temperature", 0.6, 1.0)]  # the recipe's trainer temperature (1.0) differs already
    assert "trade-off" in f.fixes[0].why
    assert "n_generation" in (f.action or "") and "algorithm" in (f.action or "")


def test_the_trainer_temperature_follows_the_sampling_one_when_they_agree() -> None:
    """§8.7 rule 9: the trainer recomputes log-probs at train_policy.temperature: a dependent edit, one bundle."""
    config = recipe_config(train__train_policy__temperature=0.6)
    lines = [step(100 + 10 * i, i, 40, reward=0.4, std=0.3, loss=0.0, grad=0.0, rmax=1.0, rmin=0.0)
             for i in range(1, 6)]
    f = run_logs({"controller.log": lines, "policy_0.log": [config_dump(1, config)]}).one("grpo_collapse")
    assert [(fx.path, fx.proposed) for fx in f.fixes] == [
        ("rollout.sampling_config.temperature", 1.0), ("train.train_policy.temperature", 1.0)]


def test_grpo_collapse_from_train_report_advantage_std() -> None:
    lines = [train_report(100 + 10 * i, i, 40, adv_std=0.0) for i in range(1, 5)]
    r = run_logs({"controller.log": lines})
    f = r.one("grpo_collapse")
    assert "advantage std 0" in f.explanation


def test_learning_run_is_not_collapsed_and_recovered_dips_are_ignored() -> None:
    lines = steady_run(10, 40)
    lines.append(step(300, 11, 40, std=0.0, loss=0.0, grad=0.0))
    lines.append(step(310, 12, 40))
    r = run_logs({"controller.log": lines})
    assert "grpo_collapse" not in r.ids


def test_grpo_collapse_blind_without_step_lines_says_how_to_enable() -> None:
    r = run_logs({"policy_0.log": [config_dump(1, recipe_config(logging={"logger": []}))]})
    assert r.state("grpo_collapse") is CheckState.BLIND
    assert 'logger = ["console"]' in (r.note("grpo_collapse") or "")


def test_logging_blind_when_steps_happen_without_step_lines() -> None:
    recv = cosmos(
        400,
        "[Rollout] All 1490 at step 6 recv operations finished in 3.871 seconds with 19834.2 MB received. "
        "While 0 non-trainable splitted params skipped and 1490 trainable splitted params transferred.",
        rank=0,
    )
    files = {"policy_0.log": [config_dump(1, recipe_config(logging={"logger": []}))], "rollout_0.log": [recv]}
    # without controller.log nothing can be said: the Step lines would be there
    assert run_logs(files).state("logging_blind") is CheckState.SKIPPED
    r = run_logs({**files, "controller.log": [cosmos(5, "Successfully loaded configuration from /tmp/x.toml")]})
    f = r.one("logging_blind")
    fx = f.fixes[0]
    assert (fx.path, fx.current, fx.proposed) == ("logging.logger", [], ["console"])
    assert "step 6" in f.explanation


def test_logging_not_blind_before_the_first_step() -> None:
    r = run_logs({"policy_0.log": [config_dump(1, recipe_config(logging={"logger": []}))]})
    assert "logging_blind" not in r.ids


def test_insufficient_gpus_misleading_lepton_error_with_arithmetic() -> None:
    launcher = [
        "Detected 2 GPUs: 0, 1",
        "Number of policy replicas: 1 with 4 gpus each",
        "Number of rollout replicas: 1 with 1 gpus each",
        "Traceback (most recent call last):",
        '  File "/usr/local/bin/cosmos-rl", line 8, in <module>',
        "RuntimeError: Replica with GPUs larger than 8 occurs but not on Lepton job, please specify --node-ip-list to "
        "provide the IPs of all nodes to enable conenctions to each Rendezvous head node.",
    ]
    r = run_logs({"launcher.log": launcher})
    f = r.one("insufficient_gpus")
    assert "policy 1 × 4 + rollout 1 × 1 = 5 GPUs, and this node shows 2" in f.explanation
    assert "Replica with GPUs larger than 8" in f.evidence[0].text


def test_insufficient_gpus_shrinks_the_policy_to_what_the_node_has_never_more() -> None:
    lepton = ["Traceback (most recent call last):",
              "RuntimeError: Replica with GPUs larger than 8 occurs but not on Lepton job, please specify "
              "--node-ip-list to provide the IPs of all nodes to enable conenctions to each Rendezvous head node."]
    config = recipe_config(train__train_batch_per_replica=48, train__train_policy__mini_batch=1)
    f = run_logs({"launcher.log": ["Detected 2 GPUs: 0, 1", *lepton],
                  "policy_0.log": [config_dump(1, config)]}).one("insufficient_gpus")
    # disaggregated: 1 policy x d + 1 rollout x 1 <= 2 GPUs -> d = 1
    assert [(fx.path, fx.proposed) for fx in f.fixes] == [("policy.parallelism.dp_shard_size", 1)]
    assert "2 of the 2 GPUs" in f.fixes[0].why and "trade-off" in f.fixes[0].why
    config = recipe_config(mode="colocated_separated", train__train_batch_per_replica=48)
    f = run_logs({"launcher.log": ["Detected 2 GPUs: 0, 1", *lepton],
                  "policy_0.log": [config_dump(1, config)]}).one("insufficient_gpus")
    assert [(fx.path, fx.proposed) for fx in f.fixes] == [("policy.parallelism.dp_shard_size", 2)]  # shared GPUs
    config = recipe_config(mode="colocated_separated", train__train_batch_per_replica=9,
                           train__train_policy__mini_batch=1)
    f = run_logs({"launcher.log": ["Detected 2 GPUs: 0, 1", *lepton],
                  "policy_0.log": [config_dump(1, config)]}).one("insufficient_gpus")
    assert [(fx.path, fx.proposed) for fx in f.fixes] == [("policy.parallelism.dp_shard_size", 1)]  # 9 % 2 != 0
    f = run_logs({"launcher.log": lepton, "policy_0.log": [config_dump(1, config)]}).one("insufficient_gpus")
    assert f.fixes == []  # the node's GPU count is not in the logs: no layout is proposed


def test_insufficient_gpus_hang_without_error() -> None:
    launcher = [
        "Detected 1 GPUs: 0",
        "Number of policy replicas: 1 with 1 gpus each",
        "Number of rollout replicas: 1 with 1 gpus each",
        "Number of workers required: 2",
        "Multiple worker nodes will be used. Ensure that the launch script is excuted on all worker nodes.",
    ]
    controller = [
        cosmos(10, "Waiting for 1 more replicas to arrive"),
        cosmos(400, "Waiting for 1 more replicas to arrive"),
    ]
    r = run_logs(
        {
            "launcher.log": launcher,
            "controller.log": controller,
            "policy_0.log": [cosmos(20, "Config checked successfully", rank=0)],
        }
    )
    f = r.one("insufficient_gpus")
    assert "planned 2 worker nodes" in f.explanation
    assert "= 2 GPUs, and this node shows 1" in f.explanation


def test_real_multi_node_run_that_trains_is_fine() -> None:
    launcher = [
        "Number of workers required: 2",
        "Multiple worker nodes will be used. Ensure that the launch script is excuted on all worker nodes.",
    ]
    r = run_logs({"launcher.log": launcher, "controller.log": steady_run(5, 40)})
    assert "insufficient_gpus" not in r.ids
