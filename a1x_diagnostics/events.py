"""Typed events: what one or more log lines say, and where they were read.

Every parser in this package turns lines into these events; every metric and detector reads
only these events. An event always knows its file, its first line number, the timestamp the
line carried (if any), the log level (if the line family has one), the torchrun local rank
prefix (if any) and its raw text, so any finding built on it can quote it as evidence.

Rich, metric-carrying line families get their own class (``Stat``, ``Step``, ...). The many
one-off lines that only matter as a signal (a replica declared dead, an OOM message, a missing
environment variable) are ``Signal`` events with a ``kind`` from ``SignalKind`` and a small
``fields`` mapping. Lines no parser recognises become ``LogLine`` events: kept, never errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any


class Role(str, Enum):
    """Which process wrote a log file."""

    CONTROLLER = "controller"
    POLICY = "policy"
    ROLLOUT = "rollout"
    REFERENCE = "reference"
    LAUNCHER = "launcher"  # cosmos-rl's own stdout/stderr, a SLURM .out, a pasted console
    STAGE = "stage"  # one of our pipeline stages (stages/<stage>.log)
    SIMULATOR = "simulator"  # AlpaSim's runtime worker in a closed-loop run (docs/reference/alpagym.md §3.2)
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Source:
    """A log file as users name it: ``policy_0`` lives in ``logs_<ts>/policy_0.log``."""

    path: str
    role: Role
    index: int | None = None

    @property
    def replica(self) -> str:
        """``policy_0``, ``rollout_3``, ``controller``, ``launcher``..."""
        if self.index is None:
            return self.role.value
        return f"{self.role.value}_{self.index}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """Base of every event: provenance plus the raw first line."""

    source: Source
    line: int  # 1-based number of the (first) line in ``source.path``
    text: str  # the raw line, without its newline
    ts: datetime | None = None
    level: str | None = None  # DEBUG/INFO/WARNING/ERROR/CRITICAL where the family has one
    rank: int | None = None  # the torchrun ``[rank<N>]:`` prefix


@dataclass(frozen=True, slots=True, kw_only=True)
class LogLine(Event):
    """A line no specific parser claimed. ``family`` says what shape it had.

    Families: ``cosmos`` (the ``[cosmos] ts - logger - LEVEL - msg`` format), ``vllm``,
    ``uvicorn``, ``torchelastic``, ``prefetch`` (unrecognised prefetch event), ``slurm``,
    ``tqdm``, ``plain`` (anything else).
    """

    family: str
    msg: str
    logger: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Stat(Event):
    """Controller ``[Controller] Stat: ...`` line (both shapes; docs/reference/cosmos-rl.md §4.3).

    ``in_flight`` and ``outdated_filtered`` are ``None`` in the 747d1bd shape.
    """

    samples: int
    completion_tokens: int
    pending: int
    in_flight: int | None
    outdated_filtered: int | None
    elapsed_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Step(Event):
    """Controller per-step ``Step: n/N, ...`` line (GRPO or SFT shape; docs/reference/cosmos-rl.md §4.5).

    Values may be ``nan``. Fields the SFT shape lacks are ``None``.
    """

    step: int
    total: int
    reward_mean: float | None = None
    reward_std: float | None = None
    reward_max: float | None = None
    reward_min: float | None = None
    completion_length_mean: float | None = None
    completion_length_max: float | None = None
    loss_avg: float | None = None
    loss_max: float | None = None
    learning_rate: float | None = None
    entropy: float | None = None
    effective_entropy: float | None = None
    grad_norm: float | None = None
    kl_loss_avg: float | None = None
    kl_loss_max: float | None = None
    iteration_time_s: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainReport(Event):
    """``[Controller] Train report data from total N rollouts: k: v, ...`` (all step metrics).

    Keys are the metric names as logged (``train/reward_std``, ``train/traj_L2``,
    ``rollout/advantage_std``...). Values that are not numbers stay strings.
    """

    rollouts: int
    metrics: Mapping[str, float | str]


@dataclass(frozen=True, slots=True, kw_only=True)
class DynamicSampling(Event):
    """``Dynamic sampling rewards distribution so far: {...}`` counts since the last report."""

    counts: Mapping[str, int]


@dataclass(frozen=True, slots=True, kw_only=True)
class Staleness(Event):
    """``[Controller] weight staleness: accepted p50=.. p99=.. max=.., discarded=a/b (...)``."""

    p50: int
    p99: int
    max: int
    discarded: int
    total: int
    allowed_outdated_steps: int
    sync_weight_interval: int


class ThrottleState(str, Enum):
    ENGAGED = "engaged"
    STILL_ENGAGED = "still_engaged"
    RELEASED = "released"
    PENDING_OVER_ALLOWED = "pending_over_allowed"  # 'Current pending rollouts .. Generate with batch n'


@dataclass(frozen=True, slots=True, kw_only=True)
class Throttle(Event):
    """Controller soft-throttle lines and the 'Current pending rollouts ...' warning."""

    state: ThrottleState
    in_flight: int | None = None
    threshold: int | None = None
    seconds: float | None = None  # how long it has been engaged (still/released)
    pending: int | None = None  # PENDING_OVER_ALLOWED only
    batch: int | None = None  # PENDING_OVER_ALLOWED only


class SyncPhase(str, Enum):
    RECV_START = "recv_start"  # '[Rollout] Starting to execute N; P, R weight sync receives ...'
    RECV_DONE = "recv_done"  # '[Rollout] All N at step S recv operations finished in T seconds ...'
    BROADCAST_START = "broadcast_start"
    BROADCAST_DONE = "broadcast_done"
    SYNCED_AFTER_BROADCAST = "synced_after_broadcast"
    ASYNC_ENQUEUED = "async_enqueued"  # [WeightSyncThread] Enqueued P2R/R2R
    ASYNC_DONE = "async_done"  # [WeightSyncThread] P2R/R2R done
    BARRIER_TIMEOUT = "barrier_timeout"  # [R2R Barrier] Timed out
    POLICY_SEND_DONE = "policy_send_done"  # policy DEBUG '[Policy] All N at step S send operations ...'


@dataclass(frozen=True, slots=True, kw_only=True)
class WeightSync(Event):
    phase: SyncPhase
    step: int | None = None  # None for the initial load ('at step None')
    seconds: float | None = None
    megabytes: float | None = None
    queue_depth: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptRejected(Event):
    """``[Rollout rank=r] prompt rejected: prompt.weight_version=P current_weight_version=C ...``."""

    prompt_version: int
    current_version: int
    allowed_outdated: int
    ceiling: int


class CheckpointPhase(str, Enum):
    SAVING = "saving"  # '[Policy] Saving cosmos checkpoint at step N...'
    SAVED = "saved"  # '[Policy] Step: N, checkpoint saved successfully at PATH.'
    INCOMPLETE = "incomplete"  # 'Checkpoint complete marker for rank r not found at PATH ...'
    FAILED = "failed"  # 'Async checkpoint save/upload failed: e'
    PRUNED = "pruned"  # 'Pruned corrupted checkpoint: dir'


@dataclass(frozen=True, slots=True, kw_only=True)
class Checkpoint(Event):
    phase: CheckpointPhase
    step: int | None = None
    path: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Traceback(Event):
    """A Python traceback with all its lines (``lines[0]`` is 'Traceback (most recent call last):').

    ``exc_type`` / ``exc_message`` come from the final ``Type: message`` line when present.
    """

    lines: tuple[str, ...]
    exc_type: str | None = None
    exc_message: str | None = None

    @property
    def last_line(self) -> int:
        return self.line + len(self.lines) - 1


@dataclass(frozen=True, slots=True, kw_only=True)
class Prefetch(Event):
    """The recipe's ``[AlpamayoPrefetch][lvl] ts pid=N event k=v ...`` line (recipe §9.3)."""

    prefetch_level: str  # off/error/warn/info/debug/trace as printed
    pid: int | None
    event: str
    fields: Mapping[str, str]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigDump(Event):
    """``[Policy] Loaded configuration: {...}`` / ``[Rollout] Loaded rollout configuration: {...}``.

    ``config`` is the literal-evaluated dict, or ``None`` if it could not be evaluated
    (truncated line).
    """

    config: Mapping[str, Any] | None
    scope: str  # "full" (policy) or "rollout"


class SignalKind(str, Enum):
    """One-off lines that matter. ``fields`` keys per kind are listed in the comment."""

    # --- launcher (docs/reference/cosmos-rl.md §2) ---
    GPUS_DETECTED = "gpus_detected"  # count:int
    REPLICAS_PLANNED = "replicas_planned"  # role:str, count:int, gpus_each:int
    WORKERS_REQUIRED = "workers_required"  # count:int
    MULTIPLE_WORKERS = "multiple_workers"  # 'Multiple worker nodes will be used...'
    CONTROLLER_READY = "controller_ready"  # url:str
    PROCESS_PLANNED = "process_planned"  # path:str ('Appending command: ... output files: PATH': its log, §3.1)
    PROCESS_LAUNCHED = "process_launched"  # role: controller|policy|rollout|reference, in launch order (§2.7)
    PROCESS_FAILED = "process_failed"  # process:str (index or pid), rc:int
    PROCESS_COMPLETED = "process_completed"  # process:str, rc:int|None (0.4.7: a pid and its rc, 143 included)
    PROCESS_REGISTERED = "process_registered"  # pid:str, role: policy ('Registering policy process P ...', 0.4.7)
    COORDINATED_SUCCESS = "coordinated_success"  # process:str, rc:int ('treating as success')
    TERMINATED_ALL = "terminated_all"
    PROCESS_EXITED_EARLY = "process_exited_early"  # pid:str, rc:int|None ('Process P exited ... Exiting.')
    GPU_LAYOUT_ERROR = "gpu_layout_error"  # reason: larger_than_node|not_enough|no_gpus|bad_per_node|bad_bundle|pending
    CONTROLLER_PORT_BUSY = "controller_port_busy"
    CONFIG_READ_ERROR = "config_read_error"  # error:str ('Error reading config file ...')
    # --- registration and lifecycle (controller/replicas, §3.6, §4.2, §4.7) ---
    REPLICA_STARTED = "replica_started"  # role:str (POLICY/ROLLOUT/REFERENCE), global_rank:int, uuid:str
    REPLICA_REGISTERED = "replica_registered"  # role:str, uuid:str
    REPLICA_ATOMS_SET = "replica_atoms_set"  # role:str, uuid:str
    WAITING_FOR_REPLICAS = "waiting_for_replicas"  # count:int
    NO_VALID_ROLLOUT = "no_valid_rollout"  # 'No valid rollout replicas found, skip ...'
    REPLICA_DEAD = "replica_dead"  # role:str (Policy/Rollout), uuid:str
    REPLICA_UNREGISTERING = "replica_unregistering"  # uuid:str
    REPLICA_STOPPING = "replica_stopping"  # uuid:str
    HANG_REPLICAS_CLEANED = "hang_replicas_cleaned"  # replicas:str
    NO_POLICY_REPLICAS = "no_policy_replicas"  # 'No policy replicas registered. Assuming training ...'
    ROLLOUT_END_SIGNAL = "rollout_end_signal"  # uuid:str
    JOB_DRAINING = "job_draining"  # horizon:int
    ALL_EPOCHS_FETCHED = "all_epochs_fetched"
    ALL_ROLLOUTS_ENDED = "all_rollouts_ended"  # remaining:int (747d1bd)
    POLICY_SIDE_FINISHED = "policy_side_finished"
    ALL_REPLICAS_FINISHED = "all_replicas_finished"  # reason:str|None
    CONTROLLER_SHUTDOWN_ABNORMAL = "controller_shutdown_abnormal"  # rollout checkout gate timed out
    CONTROLLER_TERMINAL = "controller_terminal"  # source: monitor|publication|settlement, error:str (0.4.7, exit 86)
    STOP_REQUESTED = "stop_requested"  # reason:str ('Application requested successful stop': a normal end, 0.4.7)
    DATASET_EXHAUSTED = "dataset_exhausted"  # capacity:str, batch:int (the data ran out: a normal end, 0.4.7)
    RESUME_FRESH_START = "resume_fresh_start"  # 'No committed checkpoint found; starting from HuggingFace.'
    TRAINING_STARTED = "training_started"  # total_steps:int ('[Policy] Building lr schedulers ...')
    VALIDATION = "validation"  # phase: start|finished, step:int (training dispatch pauses meanwhile, §4.6)
    TRAINING_COMPLETE = "training_complete"  # step:int ('[Policy] Training complete at global step')
    ENGINE_INITIALIZED = "engine_initialized"  # '[Rollout] Engine initialized.'
    ROLLOUT_MAIN_LOOP_FINISHED = "rollout_main_loop_finished"
    ROLLOUT_DESTROY_WORKER = "rollout_destroy_worker"  # '[Rollout] execute: entering destroy_worker()'
    CONFIG_LOADED = "config_loaded"  # path:str ('Successfully loaded configuration from ...')
    CONFIG_ADJUSTED = "config_adjusted"  # key:str, value:str (silent auto-adjust warnings, §8.6)
    LAUNCH_SCRIPT = "launch_script"  # role:str; a launch script's first lines in its process's log (§2.8): begun
    # --- failures ---
    CONFIG_LOAD_FAILED = "config_load_failed"  # path:str, error:str
    RESUME_FAILED = "resume_failed"  # reason: load_failed|no_checkpoint|metadata_missing|mismatch, path:str (0.4.7)
    ROLLOUT_GENERATION_FAILED = "rollout_generation_failed"  # error:str
    OOM = "oom"  # kind: no_cache_blocks|kv_cache|free_memory|cuda_oom|max_model_len|prompt_too_long
    NCCL_ERROR = "nccl_error"  # kind: host_call_timeout|async_error|enqueue_timeout|watchdog|aborted|
    #                           abnormal_teardown|ha_recovering|ha_failed|comm_timeout|torch_watchdog|
    #                           torch_watchdog_stuck|store_timeout|socket_timeout|socket_connect|
    #                           ib_completion_error|collective_timeout|collective_failed|mesh_build_timeout|
    #                           rollout_reported|r2r_cancelled|p2r_send_failed
    HTTP_FAILURE = "http_failure"  # kind: heartbeat|register|communicate|fetch_prompt|send_rollout|
    #                               train_ack|query_commands
    REDIS_FAILURE = "redis_failure"  # rc:int|None, error:str
    CHILD_FAILED = "child_failed"  # torchrun ChildFailedError summary: exitcode:int|None, signal:str|None
    DEATH_SIGNAL = "death_signal"  # torchrun agent 'Received 15 death signal, shutting down workers': sig:int
    STOPPED_BY_USER = "stopped_by_user"  # reason:str; our supervisor's record of a1x-tui stop / the dashboard's Stop
    JOB_CANCELLED = "job_cancelled"  # slurmstepd '*** JOB N ON host CANCELLED AT t [DUE TO TIME LIMIT] ***': reason
    FATAL_SIGNAL = "fatal_signal"  # what: segfault|abort|bus_error|killed|fatal_python|transport_fatal|
    #                               worker_fatal|engine_core_failed (a process died hard)
    WEIGHT_UPDATE = "weight_update"  # another stack's trainer -> rollout weight update under way (name:str)
    GROUPS_ZERO_STD = "groups_zero_std"  # another stack's step metric: fraction:float of GRPO groups whose rewards
    #                                      were all equal, metric:str, constant_reward:bool|None (one reward for all)
    ERROR_LINE = "error_line"  # an ERROR/CRITICAL line or an 'XxxError: ...' line no rule classified: message:str
    INVALID_PARALLEL_DIMS = "invalid_parallel_dims"  # text of the assertion
    BATCH_NOT_DIVISIBLE = "batch_not_divisible"  # train_batch_per_replica .. divisible by ..
    WANDB_UNAVAILABLE = "wandb_unavailable"  # 'Wandb is not available...' (benign alone)
    WANDB_INIT_FAILED = "wandb_init_failed"  # error:str, forbidden:bool
    # --- recipe (docs/reference/alpamayo-recipe.md §8, §14) ---
    MISSING_ENV_VAR = "missing_env_var"  # name:str
    HYDRA_NONE_STRING = "hydra_none_string"  # path:str
    GRADER_MISSING = "grader_missing"  # path:str
    GATED_REPO = "gated_repo"  # url:str
    RATE_LIMITED = "rate_limited"  # HTTP 429
    HUB_FETCH_PROGRESS = "hub_fetch_progress"  # done:int, total:int (huggingface_hub's 'Fetching N files' bar)
    PTH_LOAD_FAILED = "pth_load_failed"  # loading model_rank_*.pth directly
    MODEL_TYPE_UNSUPPORTED = "model_type_unsupported"  # model_type:str
    RECIPE_UNSUPPORTED_PARALLELISM = "recipe_unsupported_parallelism"  # what: tp|cp|pp|compile
    MINI_PARQUET_MISSING = "mini_parquet_missing"  # path:str
    VLLM_REGISTER_FAILED = "vllm_register_failed"  # error:str
    # --- AlpaGym's host (docs/reference/alpagym.md §4.5) ---
    HOST_CONFIG_REJECTED = "host_config_rejected"  # reason: model_path|gpu_capacity|batch_geometry|dataset|slurm|
    #                                                transport|mounts|backend|missing_choice; message:str
    HF_EXPORT_DISABLED = "hf_export_disabled"  # benign, expected once


@dataclass(frozen=True, slots=True, kw_only=True)
class Signal(Event):
    kind: SignalKind
    fields: Mapping[str, Any] = field(default_factory=dict)


EVENT_TYPES: tuple[type[Event], ...] = (
    LogLine,
    Stat,
    Step,
    TrainReport,
    DynamicSampling,
    Staleness,
    Throttle,
    WeightSync,
    PromptRejected,
    Checkpoint,
    Traceback,
    Prefetch,
    ConfigDump,
    Signal,
)


def epoch(ts: datetime | None) -> float | None:
    """A log timestamp as seconds since the epoch (naive stamps are the host's local time)."""
    if ts is None:
        return None
    try:
        return ts.timestamp()
    except (OverflowError, OSError, ValueError):
        return None
