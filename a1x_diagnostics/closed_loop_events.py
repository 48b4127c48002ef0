"""Typed events of a closed-loop AlpaGym run: what an AlpaGym, AlpaSim or host line says.

Every closed-loop line that matters becomes one ``ClosedLoop`` event: provenance and raw text like
every ``a1x_diagnostics.events.Event`` (so a finding can quote it), a ``kind`` from ``CL`` and a small
``fields`` mapping (listed per kind below). Episodes are named by their session UUID, the key that
AlpaGym's rollout worker, AlpaSim's runtime and the policy's packer all print
(docs/reference/alpagym.md §3).

These events never reach the open-loop ``EventStore`` routes (it keeps no closed-loop state): the
``a1x_diagnostics.alpagym.state.ClosedLoopState`` takes them; the open-loop engine sees the generic
``Signal`` events the closed-loop parser emits beside them (``ERROR_LINE`` for an error line no
closed-loop rule names, ``PROCESS_COMPLETED`` for ``Cosmos launcher completed``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from a1x_diagnostics.events import Event


class CL(str, Enum):
    """Closed-loop line kinds; ``fields`` keys in the comments (docs/reference/alpagym.md §4)."""

    # --- the host (alpagym_host.cli / run_lifecycle), §4.1 ---
    RUN_STARTED = "run_started"  # backend, run_dir, policy_replicas:int, rollout_replicas:int
    WIZARD_STARTED = "wizard_started"  # runtime_index:int, host
    RUNTIME_READY = "runtime_ready"  # endpoint
    RUNTIME_PUBLISHED = "runtime_published"  # id, host, port:int, capacity:int
    COSMOS_STARTED = "cosmos_started"
    COSMOS_COMPLETED = "cosmos_completed"
    WIZARD_STOPPING = "wizard_stopping"  # count:int
    BRINGUP_FAILED = "bringup_failed"  # reason: wizard_exited|runtime_timeout|no_scenes|scene_lists_differ|
    #                                    no_docker|driver_too_old|grpc_stubs_missing|nccl_master_missing; code
    HOST_CONFIG_REJECTED = "host_config_rejected"  # reason: model_path|batch_geometry|gpu_capacity|dataset|
    #                                                transport|slurm|mounts; message
    HORIZON_MISMATCH = "horizon_mismatch"  # where: config|packer; n_sim_steps, expected_valid_steps, produced
    NUREC_ACCESS = "nurec_access"  # reason: no_token|denied|unreachable; http:int|None
    CONTROLLER_PORT = "controller_port"  # port:int (the port the Cosmos launcher chose)
    PORT_IN_USE = "port_in_use"  # what: sim_ports|bind; port:int|None
    # --- the rollout worker (alpagym_runtime), §4.2 ---
    BACKEND_READY = "backend_ready"  # runtime, max_concurrent:int
    GENERATION = "generation"  # payloads:int, validation:bool
    SESSION_STARTED = "session_started"  # uuid, seed:int
    SESSION_CLOSED = "session_closed"  # uuid, recorded_steps:int
    EPISODE_RETRY = "episode_retry"  # uuid, scene, attempt:int, retries_left:int, error
    EPISODE_DROPPED = "episode_dropped"  # uuid, scene, error
    PAYLOAD_EXHAUSTED = "payload_exhausted"  # prompt_idx:int, collected:int, target:int
    NONFINITE = "nonfinite"  # what: trajectory_retry|trajectory|log_probs|old_logprobs|kl_div|grad; attempt:int
    ENGINE_FAILED = "engine_failed"  # 'InferenceEngine forward pass failed; killing process'
    # --- the policy's trainer and packer, §4.3 ---
    TRAINER_STEP_START = "trainer_step_start"  # step:int, total:int, received:int, group_size:int
    TRAINER_STEP_END = "trainer_step_end"  # step:int, loss_avg, kl_avg, clip_fraction, grad_norm, lr (floats)
    PACKED = "packed"  # uuid, valid_steps:int, padded_steps:int, reward:float
    STALE_USED = "stale_used"  # stale:int, kept:int, min_allowed:int
    NO_SAMPLES = "no_samples"  # step:int
    # --- AlpaSim's runtime worker (txt-logs/runtime_worker_<N>.log), §4.4 ---
    SIM_STARTED = "sim_started"  # uuid, scene, steps:int
    SIM_COMPLETED = "sim_completed"  # uuid, scene, sim_s, wall_s, total_s (floats)
    SIM_FAILED = "sim_failed"  # uuid, scene, error, exc (the exception line of the traceback after it)
    SIM_WORKER_DIED = "sim_worker_died"  # worker:int, code:int
    SIM_EVAL_FAILED = "sim_eval_failed"  # uuid
    SIM_METRICS = "sim_metrics"  # uuid, metrics: dict[str, float]


# Marks (``FileFacts.marks``, set by ``state.ClosedLoopState``) that the outcome counts as start-up and as
# progress (``a1x_diagnostics.detectors.outcome``): a closed-loop step can take many minutes of episodes.
STARTUP_MARKS: tuple[str, ...] = tuple(f"cl:{k.value}" for k in (
    CL.RUN_STARTED, CL.WIZARD_STARTED, CL.RUNTIME_READY, CL.RUNTIME_PUBLISHED, CL.COSMOS_STARTED, CL.BACKEND_READY))
PROGRESS_MARKS: tuple[str, ...] = (*STARTUP_MARKS, *(f"cl:{k.value}" for k in (
    CL.GENERATION, CL.SESSION_CLOSED, CL.SIM_COMPLETED, CL.PACKED, CL.TRAINER_STEP_END)))


@dataclass(frozen=True, slots=True, kw_only=True)
class ClosedLoop(Event):
    """One closed-loop line. ``clock``: AlpaSim's time of day (``HH:MM:SS.mmm``; its lines carry no
    date, so ``ts`` stays None: a neighbour's date is never borrowed)."""

    kind: CL
    fields: Mapping[str, Any] = field(default_factory=dict)
    clock: str | None = None


@dataclass(frozen=True, slots=True)
class EpisodeArtifact:
    """What one ``artifacts/<scene>_<uuid>_<hex>.json`` says of its episode (§3.3): the head and tail
    of the file only, its policy outputs (megabytes of tensors) are never read."""

    path: str  # as displayed (relative to the run folder)
    uuid: str
    scene: str | None
    num_steps: int | None
    reward: float | None
    terms: Mapping[str, float]  # reward.report_metrics: each term's raw value by name
    metrics: Mapping[str, float]  # metrics.aggregated: AlpaSim's scores (collision_any, offroad, progress...)
    valid: bool | None


__all__ = ["CL", "PROGRESS_MARKS", "STARTUP_MARKS", "ClosedLoop", "EpisodeArtifact"]
