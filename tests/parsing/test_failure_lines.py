"""Failure and launcher lines: docs/reference/cosmos-rl.md §2.3-§2.8, §4.1, §5.5, §6.7, §8.6, §13.6, §14 and the
recipe's failure table (docs/reference/alpamayo-recipe.md §14), as cosmos lines, exception lines and plain output."""

from __future__ import annotations

from typing import Any

import pytest
from parsing_helpers import UUID, cosmos, interesting, parse, signal, signals

from a1x_diagnostics.events import Role, SignalKind, Traceback

S = SignalKind


def tb(exc_line: str, rank: int | None = None) -> list[str]:
    body = ["Traceback (most recent call last):", '  File "/opt/x.py", line 1, in <module>', "    main()", exc_line]
    return [f"[rank{rank}]:{b}" for b in body] if rank is not None else body


LAUNCHER_CASES: list[tuple[str, SignalKind, dict[str, Any]]] = [
    (cosmos("Detected 8 GPUs: 0, 1, 2, 3, 4, 5, 6, 7"), S.GPUS_DETECTED, {"count": 8}),
    (cosmos("Number of policy replicas: 1 with 4 gpus each"), S.REPLICAS_PLANNED,
     {"role": "policy", "count": 1, "gpus_each": 4}),
    (cosmos("Number of rollout replicas: 2 with 1 gpus each"), S.REPLICAS_PLANNED,
     {"role": "rollout", "count": 2, "gpus_each": 1}),
    (cosmos("Number of workers required: 2"), S.WORKERS_REQUIRED, {"count": 2}),
    (cosmos("Multiple worker nodes will be used. Ensure that the launch script is excuted on all worker nodes."),
     S.MULTIPLE_WORKERS, {}),
    (cosmos("Controller is ready at http://localhost:8001"), S.CONTROLLER_READY, {"url": "http://localhost:8001"}),
    (cosmos("Process 1 failed with return code 1", "ERROR"), S.PROCESS_FAILED, {"process": 1, "rc": 1}),
    (cosmos("Process 48213 failed with return code -9", "ERROR"), S.PROCESS_FAILED, {"process": 48213, "rc": -9}),
    (cosmos("Process 0 completed successfully"), S.PROCESS_COMPLETED, {"process": 0}),
    (cosmos("Process 0 (controller) exited via the coordinated shutdown path (rc=143); treating as success"),
     S.COORDINATED_SUCCESS, {"process": 0, "role": "controller", "rc": 143}),
    (cosmos("Terminated all processes due to failure", "ERROR"), S.TERMINATED_ALL, {}),
    (cosmos("Process 4242 exited with code 1. Exiting.", "ERROR"), S.PROCESS_EXITED_EARLY, {"pid": 4242, "rc": 1}),
    (cosmos("Process 4242 exited as soon as launched. Exiting.", "ERROR"), S.PROCESS_EXITED_EARLY,
     {"pid": 4242, "rc": None}),
    ("RuntimeError: Replica with GPUs larger than 8 occurs but not on Lepton job, please specify --node-ip-list to "
     "provide the IPs of all nodes to enable conenctions to each Rendezvous head node.", S.GPU_LAYOUT_ERROR,
     {"reason": "larger_than_node"}),
    ("AssertionError: Not enough GPUs available. Required: 12, Available: 8", S.GPU_LAYOUT_ERROR,
     {"reason": "not_enough", "required": 12, "available": 8}),
    ("RuntimeError: No GPUs available. Please check your GPU configuration.", S.GPU_LAYOUT_ERROR,
     {"reason": "no_gpus"}),
    ("AssertionError: Number of GPUs per node must be 1, 2, 4, or 8", S.GPU_LAYOUT_ERROR, {"reason": "bad_per_node"}),
    ("RuntimeError: Controller port 8000 from --url 10.0.0.1:8000 is already in use on this node. It cannot be "
     "substituted because all workers connect to this exact endpoint.", S.CONTROLLER_PORT_BUSY,
     {"port": 8000, "url": "10.0.0.1:8000"}),
    ("RuntimeError: Controller port 8000 is already in use. It cannot be substituted because workers connect to this "
     "exact endpoint.", S.CONTROLLER_PORT_BUSY, {"port": 8000}),
    (cosmos("Error reading config file /x/run.toml: Duplicate keys!", "ERROR"), S.CONFIG_READ_ERROR,
     {"path": "/x/run.toml", "error": "Duplicate keys!"}),
    ("[2025-06-09 01:02:03.456 PM UTC][cosmos-rl-sbatch]: Rollout failed with exit code 137. Terminating other "
     "processes.", S.PROCESS_FAILED, {"process": "Rollout", "rc": 137}),
]


@pytest.mark.parametrize(("line", "kind", "fields"), LAUNCHER_CASES)
def test_launcher_lines(line: str, kind: SignalKind, fields: dict[str, Any]) -> None:
    sig = signal(line, kind, Role.LAUNCHER)
    assert {k: sig.fields.get(k) for k in fields} == fields


def test_slurm_sbatch_line_time_is_12_hour_clock() -> None:
    (ev,) = parse("[2025-06-09 01:02:03.456 PM UTC][cosmos-rl-sbatch]: Final exit status: 0", Role.LAUNCHER)
    assert ev.ts is not None and (ev.ts.hour, ev.ts.minute, ev.ts.microsecond) == (13, 2, 456000)
    assert ev.family == "slurm" and ev.msg == "Final exit status: 0"  # type: ignore[attr-defined]


def test_gpu_layout_error_inside_a_launcher_traceback() -> None:
    events = interesting(parse(tb("RuntimeError: Replica with GPUs larger than 8 occurs but not on Lepton job, please "
                                  "specify --node-ip-list"), Role.LAUNCHER))
    assert isinstance(events[0], Traceback) and events[0].exc_type == "RuntimeError"
    assert events[1].kind is S.GPU_LAYOUT_ERROR and events[1].line == 4  # type: ignore[attr-defined]


OOM_TEXTS = [
    ("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
     "initializing the engine.", "no_cache_blocks"),
    ("ValueError: To serve at least one request with the model's max seq len (8192), (4.00 GiB KV cache is needed, "
     "which is larger than the available KV cache memory (2.00 GiB). Based on the available memory, the estimated "
     "maximum model length is 4096. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
     "initializing the engine.", "kv_cache"),
    ("ValueError: To serve at least one request with the models's max seq len (8192), (4.00 GiB KV cache is needed, "
     "which is larger than the available KV cache memory (2.00 GiB).", "kv_cache"),
    ("ValueError: The model's max seq len (8192) is larger than the maximum number of tokens that can be stored in KV "
     "cache (4096). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the "
     "engine.", "max_model_len"),
    ("ValueError: Free memory on device (10.5/79.1 GiB) on startup is less than desired GPU memory utilization (0.8, "
     "63.3 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.", "free_memory"),
    ("ValueError: Free memory on device cuda:0 (10.5/79.1 GiB) on startup is less than desired GPU memory "
     "utilization (0.8, 63.3 GiB).", "free_memory"),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.1 GiB",
     "cuda_oom"),
    ("ValueError: The decoder prompt (length 9000) is longer than the maximum model length of 8192. Make sure that "
     "`max_model_len` is no smaller than the number of text tokens.", "prompt_too_long"),
]


@pytest.mark.parametrize(("exc", "kind"), OOM_TEXTS)
@pytest.mark.parametrize("rank", [None, 0])
def test_vllm_oom_in_a_rollout_traceback(exc: str, kind: str, rank: int | None) -> None:
    events = interesting(parse(tb(exc, rank), Role.ROLLOUT))
    assert isinstance(events[0], Traceback) and events[0].rank == rank
    ooms = [e for e in events[1:] if e.kind is S.OOM]  # type: ignore[attr-defined]
    assert len(ooms) == 1 and ooms[0].fields["kind"] == kind and ooms[0].line == 4


def test_runtime_generation_failure_carries_its_oom_cause() -> None:
    line = cosmos("[Rollout] Failed in rollout generation: CUDA out of memory. Tried to allocate 1.00 GiB", "ERROR", 0)
    kinds = [s.kind for s in signals(line, Role.ROLLOUT)]
    assert kinds == [S.ROLLOUT_GENERATION_FAILED, S.OOM]
    gen = signal(cosmos("[Rollout] Failed in rollout generation: boom", "ERROR", 0), S.ROLLOUT_GENERATION_FAILED,
                 Role.ROLLOUT)
    assert gen.fields["error"] == "boom"


NCCL_CASES = [
    ("NCCL: raw host call exceeded 600000 ms for task p2r_send; aborting communicator idx=2", "ERROR",
     "host_call_timeout"),
    ("NCCL: async error detected (err=5), task allreduce failed", "ERROR", "async_error"),
    ("NCCL: non-blocking enqueue timed out for task broadcast", "WARNING", "enqueue_timeout"),
    ("[Watchdog] NCCL block exceeded 600000 ms. Aborting its communicators.", "ERROR", "watchdog"),
    ("[NCCL] Aborted communicator idx=3", "WARNING", "aborted"),
    ("[NCCL] nccl_abort_all aborted 2 communicator(s)", "WARNING", "aborted"),
    (f"[ABNORMAL teardown] policy_P2R[{UUID}@step12]: in-flight GPU work exceeded 120.0s; a peer likely departed "
     "unexpectedly mid-collective (crash/OOM/network) -- this is NOT the normal coordinated-exit path.  Aborting NCCL "
     "communicators to unblock teardown.", "WARNING", "abnormal_teardown"),
    ("[ABNORMAL teardown] WeightSyncThread[rollout_0] queue did not drain within 120.0s; aborting NCCL before shutdown",
     "ERROR", "abnormal_teardown"),
    (f"[HA_NCCL][global_rank 0, replica_rank 1] {UUID} recovering nccl op 'allreduce' with kwargs {{'op': 'sum'}} "
     "after attempt 1/3: NCCL error: unhandled system error", "ERROR", "ha_recovering"),  # HEAD / 0.4.7 text
    (f"[HA_NCCL][global_rank 0, replica_rank 1] {UUID} recovering nccl op 'allreduce' with kwargs {{}} after 2 "
     "retries: timeout", "ERROR", "ha_recovering"),  # 747d1bd text
    (f"[HA_NCCL][global_rank 0, replica_rank 1] {UUID} nccl op 'allreduce' failed after 3 attempts.", "ERROR",
     "ha_failed"),
    (f"[HA_NCCL][global_rank 0, replica_rank 1] {UUID} failed in create nccl comm , report to controller: bad",
     "ERROR", "ha_failed"),
]


@pytest.mark.parametrize(("msg", "level", "kind"), NCCL_CASES)
def test_nccl_lines(msg: str, level: str, kind: str) -> None:
    assert signal(cosmos(msg, level, 0), S.NCCL_ERROR, Role.POLICY).fields["kind"] == kind


def test_torch_watchdog_glog_line_and_comm_timeout() -> None:
    line = ("[rank3]:[E609 22:14:29.123456789 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=42, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 "
            "milliseconds before timing out.")
    sig = signal(line, S.NCCL_ERROR, Role.POLICY)
    assert sig.fields["kind"] == "torch_watchdog" and sig.rank == 3 and sig.level == "ERROR"
    exc = (f"TimeoutError: [HA_NCCL][global_rank 0, replica_rank 1] {UUID} wait for nccl comm ready timeout, current "
           "time: 100, start time: 0, timeout: 60")
    assert signal(tb(exc, 0), S.NCCL_ERROR, Role.POLICY).fields["kind"] == "comm_timeout"


@pytest.mark.parametrize(
    ("msg", "level", "kind"),
    [
        ("Failed to send heartbeat to controller: ConnectionError", "ERROR", "heartbeat"),  # 747d1bd / HEAD
        # 0.4.7 names the controller
        ("Failed to send heartbeat to controller http://10.0.0.1:8000: ConnectionError", "WARNING", "heartbeat"),
        ("Failed to register to controller: 503", "ERROR", "register"),
        ("Failed to communicate with controller after attempts: ReadTimeout", "ERROR", "communicate"),
        ("[Rollout] Failed in fetching next prompt from controller after retries ReadTimeout.", "ERROR",
         "fetch_prompt"),
        ("[Rollout] Failed in sending rollout completion to controller after retries ReadTimeout.", "ERROR",
         "send_rollout"),
        ("[Policy] Failed in in send train ack to controller after retries ReadTimeout.", "ERROR", "train_ack"),
        (f"[Rollout] Failed in query commands from controller for replica {UUID}", "ERROR", "query_commands"),
    ],
)
def test_controller_unreachable_lines(msg: str, level: str, kind: str) -> None:
    assert signal(cosmos(msg, level, 0), S.HTTP_FAILURE, Role.ROLLOUT).fields["kind"] == kind


def test_redis_failures() -> None:
    exc = ("RuntimeError: Failed to start redis server with command: redis-server /tmp/redis.conf --dbfilename "
           "cosmos_rl_x.rdb --save \"\" with return code 127")
    assert signal(tb(exc), S.REDIS_FAILURE).fields["rc"] == 127
    assert signal(tb("RuntimeError: Redis server failed to start after 10 attempts, starting from port 12800. Check "
                     "/tmp/redis.log for details."), S.REDIS_FAILURE).fields["rc"] is None
    stream = cosmos("[Redis] Failed to write to Redis stream abc_command: Connection refused", "ERROR")
    assert signal(stream, S.REDIS_FAILURE).fields["error"].startswith("write to Redis stream")


def test_config_load_failure_wraps_its_cause() -> None:
    exc = ("RuntimeError: Failed to load or parse config file /tmp/tmpx.toml: Missing required env var "
           "ALPAMAYO_PAI_LOCAL_DIR (expected PAI dataset root, e.g. /path/to/PAI_mini).")
    kinds = {s.kind: s.fields for s in signals(tb(exc))}
    assert kinds[S.CONFIG_LOAD_FAILED]["path"] == "/tmp/tmpx.toml"
    assert kinds[S.MISSING_ENV_VAR] == {"name": "ALPAMAYO_PAI_LOCAL_DIR"}


def test_pydantic_validation_error_is_one_traceback() -> None:
    lines = [
        *tb("pydantic_core._pydantic_core.ValidationError: 1 validation error for Config"),
        "policy.parallelism",
        "  Value error, tp_size must be greater than 0 [type=value_error, input_value={}, input_type=dict]",
        "    For further information visit https://errors.pydantic.dev/2.6/v/value_error",
    ]
    (trace,) = interesting(parse(lines))
    assert isinstance(trace, Traceback) and len(trace.lines) == 7 and trace.exc_type.endswith("ValidationError")


@pytest.mark.parametrize(
    ("msg", "key", "value"),
    [
        ("allowed_outdated_steps is less than sync_weight_interval - 1, setting allowed_outdated_steps to 4.",
         "allowed_outdated_steps", 4),
        ("on_policy is enabled, so allowed_outdated_steps is set to 0.", "allowed_outdated_steps", 0),
        ("max_inflight_steps (2) is below allowed_outdated_steps + 1 (5); raising to 5.", "max_inflight_steps", 5),
        ("coalesce_weight_sync requires off-policy training with allowed_outdated_steps > 0 (on_policy=True, "
         "allowed_outdated_steps=0); disabling it.", "coalesce_weight_sync", "False"),
        ("DAPO is enabled, so outdated_rollout_fetch_batch_size is set to 128 as a large value.",
         "outdated_rollout_fetch_batch_size", 128),
        ("dataloader_batch_size is not positive so disable it as None.", "dataloader_batch_size", "None"),
        ("Decoupled loss is enabled, so rollout_as_token_ids is set to True.", "rollout_as_token_ids", "True"),
        ("use_rollout_logprobs_for_loss is enabled, so collect_rollout_logprobs is set to True.",
         "collect_rollout_logprobs", "True"),
        ("Seed is negative, setting to 42", "seed", 42),
    ],
)
def test_config_auto_adjust_warnings(msg: str, key: str, value: object) -> None:
    sig = signal(cosmos(msg, "WARNING", 0), S.CONFIG_ADJUSTED, Role.POLICY)
    assert (sig.fields["key"], sig.fields["value"]) == (key, value)


RECIPE_CASES: list[tuple[list[str], SignalKind, dict[str, Any]]] = [
    (tb("RuntimeError: Missing required env var ALPAMAYO_PAI_REASONING_LOCAL_DIR (expected PAI reasoning dataset "
        "root, e.g. /path/to/PAI_Reasoning_mini)."), S.MISSING_ENV_VAR, {"name": "ALPAMAYO_PAI_REASONING_LOCAL_DIR"}),
    (tb("FileNotFoundError: [Errno 2] No such file or directory: '/data/pai/None/clip_index_mini.parquet'"),
     S.HYDRA_NONE_STRING, {"path": "/data/pai/None/clip_index_mini.parquet"}),
    (tb("FileNotFoundError: [Errno 2] Failed to open local file '/data/pai/clip_index_reasoning_mini.parquet'. "
        "Detail: [errno 2] No such file or directory"), S.MINI_PARQUET_MISSING,
     {"path": "/data/pai/clip_index_reasoning_mini.parquet"}),
    ([*tb("huggingface_hub.errors.GatedRepoError: 403 Client Error. (Request ID: Root=1-abc)"), "",
      "Cannot access gated repo for url https://huggingface.co/nvidia/Alpamayo-1.5-10B/resolve/main/config.json.",
      "Access to model nvidia/Alpamayo-1.5-10B is restricted."], S.GATED_REPO,
     {"url": "https://huggingface.co/nvidia/Alpamayo-1.5-10B/resolve/main/config.json"}),
    (tb("huggingface_hub.errors.HfHubHTTPError: 429 Client Error: Too Many Requests for url: https://hf.co/api/x"),
     S.RATE_LIMITED, {}),
    (tb("ValueError: Reasoning grading model directory does not exist: '/models/lingo_judge'."), S.GRADER_MISSING,
     {"path": "/models/lingo_judge"}),
    (tb("ValueError: Model type alpamayo1_5 not supported for vLLM rollout."), S.MODEL_TYPE_UNSUPPORTED,
     {"model_type": "alpamayo1_5"}),
    (tb("AssertionError: TP not supported for ReasoningVLACosmos"), S.RECIPE_UNSUPPORTED_PARALLELISM, {"what": "tp"}),
    (tb("AssertionError: CP not supported for ReasoningVLACosmos"), S.RECIPE_UNSUPPORTED_PARALLELISM, {"what": "cp"}),
    (tb("AssertionError: Compile not supported for ReasoningVLACosmos"), S.RECIPE_UNSUPPORTED_PARALLELISM,
     {"what": "compile"}),
    (tb("AssertionError: Pipeline Parallel is not supported for Reasoning VLA"), S.RECIPE_UNSUPPORTED_PARALLELISM,
     {"what": "pp"}),
    (tb("OSError: Could not load model_rank_0.pth from /o/20250609/checkpoints/step_50/policy"), S.PTH_LOAD_FAILED, {}),
    (tb("AssertionError: Invalid parallel dims: dp_replicate(1) * dp_shard(1) * cp(1) * tp(2) * pp(1) != "
        "WORLD_SIZE(1)"), S.INVALID_PARALLEL_DIMS, {}),
    (tb("AssertionError: train_batch_per_replica(48) of grpo must be divisible by dp_shard_size(5) * mini_batch(1)"),
     S.BATCH_NOT_DIVISIBLE, {"batch": 48, "dp_shard": 5, "mini_batch": 1}),
    ([cosmos("Failed to initialize wandb: 403 Client Error: upsertBucket permission denied", "ERROR")],
     S.WANDB_INIT_FAILED, {"forbidden": True}),
    ([cosmos("Failed to initialize wandb: network unreachable", "ERROR")], S.WANDB_INIT_FAILED, {"forbidden": False}),
    (["wandb: ERROR Error while calling W&B API: permission denied (<Response [403]>)"], S.WANDB_INIT_FAILED,
     {"forbidden": True}),
    ([cosmos("Failed to register ReasoningVLA model with vLLM: No module named 'vllm'", "WARNING", 0)],
     S.VLLM_REGISTER_FAILED, {"error": "No module named 'vllm'"}),
]


@pytest.mark.parametrize(("lines", "kind", "fields"), RECIPE_CASES)
def test_recipe_failures(lines: list[str], kind: SignalKind, fields: dict[str, Any]) -> None:
    found = [s for s in signals(lines) if s.kind is kind]
    assert found, signals(lines)
    assert any({k: s.fields.get(k) for k in fields} == fields for s in found), found


def test_gated_repo_error_gives_the_exception_and_its_url_line() -> None:
    lines = [*tb("huggingface_hub.errors.GatedRepoError: 403 Client Error."), "", "Cannot access gated repo for url https://huggingface.co/x/y/resolve/main/config.json."]
    assert [(s.line, s.fields["url"]) for s in signals(lines, Role.ROLLOUT)] == [
        (4, None), (6, "https://huggingface.co/x/y/resolve/main/config.json")]


def test_transient_wandb_error_is_not_an_init_failure() -> None:
    assert signals("wandb: ERROR Network error (ReadTimeout), entering retry loop.", Role.LAUNCHER) == []


@pytest.mark.parametrize("role", [Role.ROLLOUT, Role.POLICY, Role.LAUNCHER, Role.STAGE])
def test_child_failed_summary(role: Role) -> None:
    lines = [
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "cosmos_rl.rollout.rollout_entry FAILED",
        "------------------------------------------------------------",
        "Failures:",
        "  <NO_OTHER_FAILURES>",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2025-06-09_22:14:29",
        "  host      : node-1",
        "  rank      : 0 (local_rank: 0)",
        "  exitcode  : -9 (pid: 48213)",
        "  error_file: <N/A>",
        "  traceback : Signal 9 (SIGKILL) received by PID 48213",
        "============================================================",
    ]
    sig = signal(lines, S.CHILD_FAILED, role)
    assert sig.line == 13 and "exitcode  : -9" in sig.text
    assert {k: sig.fields[k] for k in ("exitcode", "signal", "pid", "host", "local_rank")} == {
        "exitcode": -9, "signal": "SIGKILL", "pid": 48213, "host": "node-1", "local_rank": 0
    }


def test_child_failed_without_signal_line_derives_the_signal() -> None:
    lines = ["Root Cause (first observed failure):", "[0]:", "  rank      : 1 (local_rank: 1)",
             "  exitcode  : -6 (pid: 7)", "  traceback : To enable traceback see: https://pytorch.org/docs/errors"]
    sig = signal(lines, S.CHILD_FAILED, Role.ROLLOUT)
    assert (sig.fields["exitcode"], sig.fields["signal"], sig.fields["global_rank"]) == (-6, "SIGABRT", 1)
    ok = signal(["Root Cause (first observed failure):", "[0]:", "  exitcode  : 1 (pid: 7)"], S.CHILD_FAILED,
                Role.ROLLOUT)
    assert (ok.fields["exitcode"], ok.fields["signal"]) == (1, None)


def test_distillation_noise_is_not_a_config_adjustment() -> None:
    lines = [cosmos("Distillation is not enabled, so top_k is set to 0.", "WARNING"),
             cosmos("top_k is not set for distillation, so trainer_token_ids_from_teacher is set to False.", "WARNING")]
    assert signals(lines, Role.LAUNCHER) == [] and signals(lines) == []
