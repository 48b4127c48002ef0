# ruff: noqa: E501 - verbatim log lines
"""nccl_timeout, checkpoint_incomplete, config_load_failed, controller_unreachable, rollout_generation_failed,
prefetch_misconfig and the recipe failure-table rows, on reference-format lines."""

from __future__ import annotations

import pytest
from detector_helpers import config_dump, cosmos, recipe_config, run_logs, steady_run

from a1x_diagnostics.findings import CheckState


def tb(exc_line: str, rank: int | None = 0) -> list[str]:
    p = f"[rank{rank}]:" if rank is not None else ""
    return [
        f"{p}Traceback (most recent call last):",
        f'{p}  File "/workspace/x.py", line 10, in main',
        f"{p}    run()",
        f"{p}{exc_line}",
    ]


def test_nccl_timeout_before_the_end() -> None:
    policy = [
        cosmos(
            300,
            "NCCL: raw host call exceeded 600000 ms for task policy_allreduce; aborting communicator idx=3",
            "ERROR",
            rank=0,
        ),
        cosmos(301, "[Watchdog] NCCL block exceeded 600000 ms. Aborting its communicators.", "ERROR", rank=0),
    ]
    r = run_logs({"controller.log": steady_run(5, 40), "policy_0.log": policy})
    f = r.one("nccl_timeout")
    assert "host_call_timeout" in f.explanation and "watchdog" in f.explanation


def test_communicator_aborted_at_shutdown_is_normal() -> None:
    # §15: disaggregated runs warn that an NCCL communicator was aborted at shutdown.
    rollout = [cosmos(200, "[NCCL] Aborted communicator idx=0", "WARNING", rank=0)]
    r = run_logs({"controller.log": steady_run(10, 10), "rollout_0.log": rollout})
    assert "nccl_timeout" not in r.ids


def test_checkpoint_incomplete_marker_missing() -> None:
    policy = [
        cosmos(100, "[Policy] Saving cosmos checkpoint at step 50...", rank=0),
        cosmos(
            101, "[Policy] Step: 50, checkpoint saved successfully at ./outputs/x/checkpoints/step_50/policy.", rank=0
        ),
        cosmos(
            900,
            "Checkpoint complete marker for rank 1 not found at ./outputs/x/checkpoints/step_50/policy. Marking checkpoint as incomplete.",
            "WARNING",
            rank=0,
        ),
    ]
    f = run_logs({"policy_0.log": policy}).one("checkpoint_incomplete")
    assert "incomplete ×1" in f.explanation


def test_checkpoint_save_that_never_finished() -> None:
    policy = [cosmos(100, "[Policy] Saving cosmos checkpoint at step 60...", rank=0)]
    f = run_logs({"policy_0.log": policy, "controller.log": steady_run(3, 60)}).one("checkpoint_incomplete")
    assert "step 60" in f.explanation


def test_saved_checkpoints_are_fine() -> None:
    policy = [
        cosmos(100, "[Policy] Saving cosmos checkpoint at step 50...", rank=0),
        cosmos(
            101, "[Policy] Step: 50, checkpoint saved successfully at ./outputs/x/checkpoints/step_50/policy.", rank=0
        ),
    ]
    assert "checkpoint_incomplete" not in run_logs({"policy_0.log": policy}).ids


def test_config_load_failed_quotes_the_cause() -> None:
    controller = tb(
        "RuntimeError: Failed to load or parse config file /tmp/tmpk3v9.toml: variant must be one of "
        "['grpo', 'dapo', 'gspo'].",
        rank=None,
    )
    launcher = ["Process 48213 exited with code 1. Exiting."]
    f = run_logs({"controller.log": controller, "launcher.log": launcher}).one("config_load_failed")
    assert "variant must be one of" in f.explanation


def test_controller_unreachable_fetch_failures() -> None:
    rollout = [
        cosmos(
            300,
            "[Rollout] Failed in fetching next prompt from controller after retries Connection refused.",
            "ERROR",
            rank=0,
        ),
    ]
    f = run_logs({"controller.log": steady_run(5, 40), "rollout_0.log": rollout}).one("controller_unreachable")
    assert "fetch_prompt" in f.explanation


def test_one_heartbeat_failure_is_not_unreachable_nor_after_the_controller_ended() -> None:
    rollout = [cosmos(130, "Failed to send heartbeat to controller: timed out", "ERROR", rank=0)]
    assert "controller_unreachable" not in run_logs({"controller.log": steady_run(5, 40), "rollout_0.log": rollout}).ids
    late = [cosmos(300 + i, "Failed to send heartbeat to controller: refused", "ERROR", rank=0) for i in range(5)]
    controller = [*steady_run(10, 10), cosmos(205, "[Controller] All replicas are finished, finalizing...")]
    assert "controller_unreachable" not in run_logs({"controller.log": controller, "rollout_0.log": late}).ids


def test_rollout_generation_failed_prompt_too_long_proposes_lengths() -> None:
    rollout = [
        cosmos(
            300,
            "[Rollout] Failed in rollout generation: The decoder prompt (length 5012) is longer than the maximum model "
            "length of 4096. Make sure that `max_model_len` is no smaller than the number of text tokens.",
            "ERROR",
            rank=0,
        )
    ]
    r = run_logs(
        {
            "controller.log": steady_run(5, 40),
            "rollout_0.log": rollout,
            "policy_0.log": [config_dump(1, recipe_config())],
        }
    )
    f = r.one("rollout_generation_failed")
    assert "747d1bd" in f.explanation  # old Stat shape: the in-flight leak is mentioned
    assert {fx.path: fx.proposed for fx in f.fixes}["policy.model_max_length"] == 6144
    assert "vllm_oom" not in r.ids


def test_prefetch_runtime_errors() -> None:
    policy = [
        "[AlpamayoPrefetch][warn] 2025-06-11 09:01:00 pid=4242 client_rpc_timeout socket='/tmp/a.sock' recv_timeout_s=30.0 payload='get'",
        *tb("RuntimeError: Failed to RPC to node prefetch server"),
    ]
    r = run_logs({"policy_0.log": [config_dump(1, recipe_config()), *policy]})
    f = r.one("prefetch_misconfig")
    assert any(fx.path == "custom.alpamayo.prefetch.num_workers" for fx in f.fixes)
    assert f.severity.value == "critical"


def test_prefetch_configured_but_never_started() -> None:
    r = run_logs({"policy_0.log": [config_dump(1, recipe_config())], "controller.log": steady_run(5, 40)})
    f = r.one("prefetch_misconfig")
    assert "capacity = 16" in f.explanation


def test_prefetch_working_is_fine_and_non_recipe_runs_are_skipped() -> None:
    ok = "[AlpamayoPrefetch][info] 2025-06-11 09:00:10 pid=42 server_init socket='/tmp/a.sock' dataset_len=16 capacity=16"
    r = run_logs({"policy_0.log": [config_dump(1, recipe_config()), ok], "controller.log": steady_run(5, 40)})
    assert "prefetch_misconfig" not in r.ids
    r = run_logs({"controller.log": steady_run(5, 40)})
    assert r.state("prefetch_misconfig") is CheckState.SKIPPED


RECIPE_ROWS = [
    (
        "missing_env_var",
        "RuntimeError: Missing required env var ALPAMAYO_PAI_LOCAL_DIR (expected PAI dataset root, e.g. /path/to/PAI_mini).",
        "ALPAMAYO_PAI_LOCAL_DIR",
    ),
    (
        "hydra_none_string",
        "FileNotFoundError: [Errno 2] No such file or directory: '/data/pai/reasoning/None'",
        "/None",
    ),
    (
        "grader_missing",
        "FileNotFoundError: Reasoning grading model directory does not exist: '/models/lingo'. ",
        "/models/lingo",
    ),
    (
        "gated_repo",
        "huggingface_hub.errors.GatedRepoError: 403 Client Error. Cannot access gated repo for url https://huggingface.co/nvidia/Alpamayo-R1-10B/resolve/main/config.json.",
        "gated",
    ),
    (
        "hf_rate_limit",
        "huggingface_hub.errors.HfHubHTTPError: 429 Client Error: Too Many Requests for url: https://huggingface.co/api/datasets/x",
        "429",
    ),
    (
        "pth_loaded_directly",
        "OSError: /out/20250611/checkpoints/step_60/policy does not appear to have a file named config.json.",
        "export",
    ),
    (
        "redis_missing",
        "RuntimeError: Failed to start redis server with command: redis-server /tmp/redis.conf with return code 127",
        "redis",
    ),
    (
        "mini_parquet_missing",
        "FileNotFoundError: [Errno 2] No such file or directory: '/data/pai/clip_index_mini.parquet'",
        "clip index",
    ),
    ("model_not_converted", "ValueError: Model type alpamayo1_5 not supported for vLLM rollout.", "alpamayo1_5"),
    ("recipe_parallelism_unsupported", "AssertionError: TP not supported for ReasoningVLACosmos", "TP"),
    (
        "export_rank_mismatch",
        "RuntimeError: Rank key mismatch: rank0=1200 rank1=1188 missing(sample)=['a'] extra(sample)=[]",
        "shards",
    ),
]


@pytest.mark.parametrize(("finding_id", "exc", "said"), RECIPE_ROWS, ids=[r[0] for r in RECIPE_ROWS])
def test_recipe_failure_rows(finding_id: str, exc: str, said: str) -> None:
    # every rank prints the same traceback: one finding, one evidence line per file
    lines = [*tb(exc, rank=0), *tb(exc, rank=1)]
    r = run_logs({"policy_0.log": [config_dump(1, recipe_config(policy={"parallelism": {"tp_size": 2}})), *lines]})
    f = r.one(finding_id)
    assert said in f.explanation + " ".join(e.text for e in f.evidence) + (f.action or "")
    assert len(f.evidence) == 1


def test_recipe_parallelism_fix_and_wandb_forbidden() -> None:
    lines = tb("AssertionError: TP not supported for ReasoningVLACosmos")
    config = recipe_config(policy={"parallelism": {"tp_size": 2}}, logging={"logger": ["console", "wandb"]})
    wandb = cosmos(30, "Failed to initialize wandb: 403 Forbidden: upsertBucket permission denied", "ERROR")
    r = run_logs({"policy_0.log": [config_dump(1, config), *lines], "controller.log": [wandb]})
    fx = r.one("recipe_parallelism_unsupported").fixes[0]
    assert (fx.path, fx.current, fx.proposed) == ("policy.parallelism.tp_size", 2, 1)
    fx = r.one("wandb_forbidden").fixes[0]
    assert (fx.path, fx.proposed) == ("logging.logger", ["console"])


def test_wandb_not_available_alone_is_not_a_finding() -> None:
    line = cosmos(30, "Wandb is not available. Please install it to use wandb logging features.", "WARNING")
    assert "wandb_forbidden" not in run_logs({"controller.log": [line]}).ids


def test_runtime_config_errors_use_the_linter_ids() -> None:
    policy = [
        config_dump(1, recipe_config(rollout__parallelism__tp_size=2)),
        cosmos(10, "setting allowed_outdated_steps to 1.", "WARNING", rank=0),
        cosmos(
            11,
            "allowed_outdated_steps is less than sync_weight_interval - 1, setting allowed_outdated_steps to 1.",
            "WARNING",
            rank=0,
        ),
        *tb(
            "AssertionError: train_batch_per_replica(50) of grpo must be divisible by dp_shard_size(4) * mini_batch(1)"
        ),
    ]
    rollout = tb(
        "AssertionError: Invalid parallel dims: dp_replicate(1) * dp_shard(1) * cp(1) * tp(2) * pp(1) != WORLD_SIZE(1)"
    )
    r = run_logs({"policy_0.log": policy, "rollout_0.log": rollout})
    fx = r.one("batch_not_divisible").fixes[0]
    assert (fx.path, fx.proposed) == ("policy.parallelism.dp_shard_size", 2)  # the batch (50) is the algorithm's
    fx = r.one("tp_size_implicit").fixes[0]
    assert (fx.path, fx.current, fx.proposed) == ("rollout.parallelism.tp_size", 2, 1)
    f = r.one("outdated_steps_below_sync")
    assert "raised allowed_outdated_steps to 1" in f.explanation
