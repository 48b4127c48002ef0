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
    fixes = {fx.path: fx for fx in f.fixes}
    assert fixes["policy.model_max_length"].proposed == 3808
    assert fixes["rollout.gpu_memory_utilization"].current == 0.8


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


def test_policy_oom_in_policy_log() -> None:
    policy = traceback("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB.", rank=0)
    r = run_logs({"policy_0.log": [config_dump(1, recipe_config()), *policy]})
    f = r.one("policy_oom")
    assert "vllm_oom" not in r.ids
    assert {fx.path: fx.proposed for fx in f.fixes}["policy.parallelism.dp_shard_size"] == 8


def test_grpo_collapse_from_step_lines() -> None:
    lines = [step(100 + 10 * i, i, 40, reward=-1.0, std=0.0, loss=0.0, grad=0.0) for i in range(1, 6)]
    r = run_logs({"controller.log": lines, "policy_0.log": [config_dump(1, recipe_config())]})
    f = r.one("grpo_collapse")
    assert "5 consecutive steps (1–5)" in f.explanation
    assert "−1 gate" in f.explanation
    temp = next(fx for fx in f.fixes if fx.path == "rollout.sampling_config.temperature")
    assert (temp.current, temp.proposed) == (0.6, 1.0)
    assert "Step: 5/40" in f.evidence[0].text


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
