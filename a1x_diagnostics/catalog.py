"""The finding catalog: every finding id a1x-tui can raise, in one place.

Ids are a public contract (agents match on them). ``docs/findings.md`` lists the same ids; a
test keeps the two in step. ``origin`` says which kind of input raises it: ``logs`` (``--check``,
``watch``), ``config`` (``lint``, ``--check --config``), ``gpu`` (NVML, on the node) or
``preflight`` (before a run) or ``stage`` (a supervised stage's verification).
"""

from __future__ import annotations

from dataclasses import dataclass

from a1x_diagnostics.findings import Severity

W = Severity.WARNING
C = Severity.CRITICAL


@dataclass(frozen=True)
class CatalogEntry:
    id: str
    severity: Severity  # the usual severity; a detector may raise or lower it with reason
    title: str
    origins: tuple[str, ...]

    @property
    def modules(self) -> tuple[str, ...]:
        """The modules that raise it (``RAISED_IN``), the log detector's first."""
        return RAISED_IN[self.id]


def _e(id_: str, severity: Severity, title: str, *origins: str) -> CatalogEntry:
    return CatalogEntry(id_, severity, title, origins)


_ENTRIES: tuple[CatalogEntry, ...] = (
    # --- the five pathologies and run health (issue: diagnostics engine) ---
    _e("rollout_buffer_growth", W, "Rollouts outpace the policy: pending rollouts keep growing", "logs", "config"),
    _e("rollout_starved", W, "The policy waits for rollouts: pending rollouts stay at zero", "logs"),
    _e("weight_sync_lag", W, "Rollouts generate with weights that are too old", "logs", "config"),
    _e("prefetch_misconfig", W, "Prefetch is misconfigured or failing", "logs", "config"),
    _e("vllm_oom", C, "A rollout replica ran out of GPU memory", "logs"),
    _e("policy_oom", C, "A policy replica ran out of GPU memory", "logs"),
    _e("grpo_collapse", W, "GRPO groups collapsed: identical rewards, zero advantage, no learning", "logs"),
    _e("insufficient_gpus", C, "The replicas need more GPUs than this node has", "logs", "config"),
    _e("stalled", C, "The run is alive but not progressing", "logs"),
    _e("replica_died", C, "A policy or rollout replica died while the launcher kept going", "logs"),
    _e("shutdown_hang", W, "Training finished but the job does not exit", "logs"),
    _e("nccl_timeout", C, "A NCCL or torch.distributed operation timed out or was aborted", "logs"),
    _e("nccl_p2p_hang", C, "A weight-sync receive started and never finished", "logs"),
    _e("premature_end", C, "Rollouts ended while training is far from its last step", "logs"),
    _e("checkpoint_incomplete", W, "A checkpoint is incomplete or failed to save", "logs"),
    _e("resume_failed", C, "The run could not resume from its checkpoint", "logs"),
    _e("config_load_failed", C, "Cosmos-RL could not load the TOML", "logs"),
    _e("controller_unreachable", C, "Replicas cannot reach the controller", "logs"),
    _e("rollout_generation_failed", W, "Rollout generation batches fail and are discarded", "logs"),
    _e("logging_blind", W, "Per-step metrics are not logged: the console logger is off", "logs", "config"),
    _e("replica_logs_missing", W, "Only the launcher's output was read: the process logs it wrote are not here",
       "logs"),
    # --- the run's outcome when no specific finding explains it (docs/findings.md "Run outcome") ---
    _e("process_crashed", C, "A process of the run ended on an error", "logs"),
    _e("run_incomplete", C, "The run ended before its last step", "logs"),
    _e("unexplained_error", W, "Errors in the logs that no check explains", "logs"),
    # --- failure table rows (docs/reference/alpamayo-recipe.md §14) ---
    _e("hydra_none_string", C, "Hydra turned None into the string 'None'", "logs"),
    _e("gated_repo", C, "Hugging Face refused a gated repository", "logs", "preflight"),
    _e("hf_rate_limit", W, "Hugging Face rate limit (HTTP 429)", "logs", "preflight"),
    _e("grader_missing", C, "The Lingo-Judge reasoning grader is not on disk", "logs", "config", "preflight"),
    _e("mini_parquet_missing", C, "The curated clip index parquet is missing", "logs", "preflight"),
    _e("missing_env_var", C, "A required environment variable is not set", "logs", "preflight"),
    _e("pth_loaded_directly", C, "A Cosmos policy checkpoint was loaded without export", "logs"),
    _e("policy_oom_config", W, "Policy memory pressure: too little sharding", "config"),
    _e("wandb_forbidden", W, "W&B refused the run (403 / permission denied)", "logs"),
    _e("redis_missing", C, "redis-server is not installed", "logs", "preflight"),
    _e("model_not_converted", C, "model_name_or_path is not a converted training checkpoint", "logs"),
    _e("recipe_parallelism_unsupported", C, "The recipe does not support TP/CP/PP or compile", "logs", "config"),
    _e("duplicate_samples", W, "Multi-node run without data_dispatch_as_rank_in_mesh", "config"),
    _e("wrong_alpamayo_version", C, "Hydra config does not match the converted Alpamayo version", "config"),
    _e("download_empty", C, "A download 'succeeded' without the expected files", "preflight"),
    _e("dangling_model_symlinks", C, "The converted model's weight symlinks are dangling", "preflight"),
    _e("export_rank_mismatch", C, "The exporter found mismatched rank shards", "logs"),
    _e("unknown_toml_key", W, "A TOML key Cosmos-RL does not know is silently ignored", "config"),
    # --- config lint (issue: TOML model and lint) ---
    _e("placeholder_path", C, "A placeholder path (/path/to/...) is still in the TOML", "config"),
    _e("batch_not_divisible", C, "train_batch_per_replica is not divisible by dp_shard_size x mini_batch", "config"),
    _e("grpo_became_sft", C, "The GRPO section silently becomes SFT", "config"),
    _e("no_group_signal", C, "n_generation < 2: GRPO has no group to compare", "config"),
    _e("gpu_memory_utilization_range", W, "gpu_memory_utilization is out of range", "config"),
    _e("wandb_key_missing", W, "W&B logger requested but WANDB_API_KEY is not set", "config", "preflight"),
    _e("outdated_steps_below_sync", W, "allowed_outdated_steps below sync_weight_interval - 1 is raised", "config"),
    _e("tp_size_implicit", W, "tp_size is not set explicitly (launcher and schema disagree)", "config"),
    _e("checkpointing_disabled", W, "Checkpointing is disabled: the run will leave nothing to export", "config"),
    _e("recommended_value", W, "A value differs from the recipe's recommended local/cluster value", "config"),
    _e("invalid_value", C, "A TOML value is invalid", "config"),
    # --- the TOML as Cosmos-RL's own parser reads it (issue 38; docs/reference/cosmos-rl.md §8.1) ---
    _e("toml_rejected", C, "Cosmos-RL's TOML parser (toml 0.10.2) refuses the file", "config"),
    _e("toml_misread", C, "Cosmos-RL's TOML parser reads a value differently from the file", "config"),
    # --- closed-loop runs: AlpaGym + AlpaSim (issue 19; docs/reference/alpagym.md) ---
    _e("alpasim_bringup_failed", C, "The AlpaSim simulator did not come up", "logs"),
    _e("episode_failures", W, "Simulator episodes fail and are retried or dropped", "logs"),
    _e("nonfinite_values", C, "Non-finite trajectories, log-probs or gradients", "logs"),
    _e("horizon_mismatch", C, "The episode horizon does not match expected_valid_steps", "logs", "config"),
    _e("nurec_access_denied", C, "No access to the gated NuRec scenes on Hugging Face", "logs", "preflight"),
    _e("port_conflict", W, "A port the run needs was taken", "logs"),
    _e("host_config_rejected", C, "The AlpaGym host refused its config", "logs", "config", "preflight"),
    _e("reward_hacking", W, "The reward may be gamed or blind: terms never move, or collisions rise with it", "logs"),
    # --- GPU (issue: GPU monitor) ---
    _e("gpu_orphan", C, "GPU memory is held by processes that are not part of this run", "gpu", "preflight"),
    _e("vllm_oom_risk", C, "Not enough free GPU memory for the vLLM engine", "gpu", "preflight"),
    _e("gpu_idle", W, "A training replica's GPU has been idle for a long stretch", "gpu"),
    _e("gpu_memory_near_limit", W, "GPU memory is near its limit", "gpu"),
    _e("gpu_unavailable", W, "NVML is not available on this node", "gpu", "preflight"),
    # --- a supervised stage's verdict (issue 38; docs/supervisor.md "Evaluate") ---
    _e("export_regressed", W, "The exported model predicts worse trajectories than the model it started from", "stage"),
    # --- preflight (issue: supervisor) ---
    _e("gpus_too_few", C, "Fewer usable GPUs than the replicas need", "preflight"),
    _e("disk_space_low", C, "Not enough free disk for what the stages will write", "preflight"),
    _e("hf_token_missing", C, "No Hugging Face token: gated downloads will fail", "preflight"),
    _e("hf_token_invalid", C, "The Hub rejects the Hugging Face token (HTTP 401)", "preflight"),
    _e("hf_cache_missing", C, "HF_HUB_OFFLINE=1, but the files are not in the Hugging Face cache", "preflight"),
    _e("binary_missing", C, "A required program is not on PATH", "preflight"),
    _e("recipe_checkout_missing", C, "The alpamayo-recipes checkout is not where the spec says", "preflight"),
    _e("container_path_unmounted", C, "A path the job needs is not mounted in its container", "preflight"),
    _e("checkpoint_after_time_limit", C, "The job cannot save a checkpoint before its time limit", "preflight"),
    # --- the env stage's install (issue 38; a1x_supervisor/preflight_install.py) ---
    _e("python_version_mismatch", C, "No Python the recipe requires for the a1x_rl venv", "preflight"),
    _e("nvcc_missing", C, "No CUDA toolkit (nvcc) for building flash-attn", "preflight"),
    _e("nvcc_cuda_mismatch", C, "nvcc's CUDA version does not match torch's", "preflight"),
    # --- preflight of the alpagym pipeline (issue 19; a1x_supervisor/preflight_alpagym.py) ---
    _e("alpagym_checkout_missing", C, "The AlpaGym checkout is not where the spec says", "preflight"),
    _e("docker_unusable", C, "Docker cannot run AlpaSim's services (compose, daemon or NVIDIA toolkit)", "preflight"),
    _e("alpagym_env_incomplete", C, "The machine lacks what AlpaGym's install/check_env.sh requires", "preflight"),
)

CATALOG: dict[str, CatalogEntry] = {e.id: e for e in _ENTRIES}

# Where each id is raised (paths from the repository root): the log detector registered for it first
# (``@detector`` / ``@concluding``), then the config rules, the GPU findings, preflight and Slurm
# submission. docs/findings.md names the same modules; tests/check/test_findings_doc.py holds the three
# to each other and to the code.
RAISED_IN: dict[str, tuple[str, ...]] = {
    "rollout_buffer_growth": ("a1x_diagnostics/detectors/buffer.py",),
    "rollout_starved": ("a1x_diagnostics/detectors/buffer.py",),
    "weight_sync_lag": ("a1x_diagnostics/detectors/weight_sync.py",),
    "prefetch_misconfig": (
        "a1x_diagnostics/detectors/prefetch.py",
        "a1x_diagnostics/config/rules.py",
        "a1x_supervisor/slurm/plan.py",
    ),
    "vllm_oom": ("a1x_diagnostics/detectors/memory.py",),
    "policy_oom": ("a1x_diagnostics/detectors/memory.py",),
    "grpo_collapse": ("a1x_diagnostics/detectors/collapse.py",),
    "insufficient_gpus": (
        "a1x_diagnostics/detectors/placement.py",
        "a1x_diagnostics/config/rules.py",
        "a1x_supervisor/slurm/plan.py",
    ),
    "stalled": ("a1x_diagnostics/detectors/lifecycle.py",),
    "replica_died": ("a1x_diagnostics/detectors/lifecycle.py",),
    "shutdown_hang": ("a1x_diagnostics/detectors/lifecycle.py",),
    "nccl_timeout": ("a1x_diagnostics/detectors/failures.py",),
    "nccl_p2p_hang": ("a1x_diagnostics/detectors/weight_sync.py",),
    "premature_end": ("a1x_diagnostics/detectors/lifecycle.py",),
    "checkpoint_incomplete": ("a1x_diagnostics/detectors/failures.py",),
    "resume_failed": ("a1x_diagnostics/detectors/failures.py",),
    "config_load_failed": ("a1x_diagnostics/detectors/failures.py",),
    "controller_unreachable": ("a1x_diagnostics/detectors/failures.py",),
    "rollout_generation_failed": ("a1x_diagnostics/detectors/failures.py",),
    "logging_blind": ("a1x_diagnostics/detectors/collapse.py", "a1x_diagnostics/config/rules.py"),
    "replica_logs_missing": ("a1x_diagnostics/detectors/lifecycle.py",),
    "process_crashed": ("a1x_diagnostics/detectors/outcome.py",),
    "run_incomplete": ("a1x_diagnostics/detectors/outcome.py",),
    "unexplained_error": ("a1x_diagnostics/detectors/outcome.py",),
    "hydra_none_string": ("a1x_diagnostics/detectors/recipe.py",),
    "gated_repo": (
        "a1x_diagnostics/detectors/recipe.py",
        "a1x_supervisor/preflight.py",
        "a1x_supervisor/preflight_alpagym.py",
    ),
    "hf_rate_limit": ("a1x_diagnostics/detectors/recipe.py", "a1x_supervisor/preflight.py"),
    "grader_missing": (
        "a1x_diagnostics/detectors/recipe.py", "a1x_diagnostics/config/rules.py", "a1x_supervisor/preflight.py",
    ),
    "mini_parquet_missing": ("a1x_diagnostics/detectors/recipe.py",),
    "missing_env_var": ("a1x_diagnostics/detectors/recipe.py", "a1x_supervisor/preflight.py"),
    "pth_loaded_directly": ("a1x_diagnostics/detectors/recipe.py",),
    "policy_oom_config": ("a1x_diagnostics/config/rules.py",),
    "wandb_forbidden": ("a1x_diagnostics/detectors/recipe.py",),
    "redis_missing": ("a1x_diagnostics/detectors/recipe.py",),
    "model_not_converted": ("a1x_diagnostics/detectors/recipe.py", "a1x_diagnostics/alpagym/lint.py"),
    "recipe_parallelism_unsupported": ("a1x_diagnostics/detectors/recipe.py", "a1x_diagnostics/config/rules.py"),
    "duplicate_samples": ("a1x_diagnostics/config/rules.py", "a1x_supervisor/slurm/plan.py"),
    "wrong_alpamayo_version": ("a1x_diagnostics/config/rules.py",),
    "download_empty": ("a1x_supervisor/preflight.py",),
    "dangling_model_symlinks": ("a1x_supervisor/preflight.py",),
    "export_rank_mismatch": ("a1x_diagnostics/detectors/recipe.py",),
    "unknown_toml_key": ("a1x_diagnostics/config/rules.py",),
    "placeholder_path": ("a1x_diagnostics/config/rules.py",),
    "batch_not_divisible": ("a1x_diagnostics/detectors/config_runtime.py", "a1x_diagnostics/config/rules.py"),
    "grpo_became_sft": ("a1x_diagnostics/config/rules.py",),
    "no_group_signal": ("a1x_diagnostics/config/rules.py",),
    "gpu_memory_utilization_range": ("a1x_diagnostics/config/rules.py",),
    "wandb_key_missing": (
        "a1x_diagnostics/config/rules.py",
        "a1x_supervisor/preflight.py",
        "a1x_supervisor/preflight_alpagym.py",
    ),
    "outdated_steps_below_sync": ("a1x_diagnostics/detectors/config_runtime.py", "a1x_diagnostics/config/rules.py"),
    "tp_size_implicit": ("a1x_diagnostics/detectors/config_runtime.py", "a1x_diagnostics/config/rules.py"),
    "checkpointing_disabled": ("a1x_diagnostics/config/rules.py",),
    "recommended_value": ("a1x_diagnostics/config/rules.py",),
    "invalid_value": ("a1x_diagnostics/config/rules.py",),
    "toml_rejected": ("a1x_diagnostics/config/rules.py",),
    "toml_misread": ("a1x_diagnostics/config/rules.py",),
    "alpasim_bringup_failed": ("a1x_diagnostics/detectors/closed_loop.py",),
    "episode_failures": ("a1x_diagnostics/detectors/closed_loop.py",),
    "nonfinite_values": ("a1x_diagnostics/detectors/closed_loop.py",),
    "horizon_mismatch": ("a1x_diagnostics/detectors/closed_loop.py", "a1x_diagnostics/alpagym/lint.py"),
    "nurec_access_denied": ("a1x_diagnostics/detectors/closed_loop.py", "a1x_supervisor/preflight_alpagym.py"),
    "port_conflict": ("a1x_diagnostics/detectors/closed_loop.py",),
    "host_config_rejected": (
        "a1x_diagnostics/detectors/closed_loop.py",
        "a1x_diagnostics/alpagym/lint.py",
        "a1x_supervisor/preflight_alpagym.py",
    ),
    "reward_hacking": ("a1x_diagnostics/detectors/closed_loop.py",),
    "gpu_orphan": ("a1x_diagnostics/gpu/detect.py",),
    "vllm_oom_risk": ("a1x_diagnostics/gpu/detect.py",),
    "gpu_idle": ("a1x_diagnostics/gpu/detect.py",),
    "gpu_memory_near_limit": ("a1x_diagnostics/gpu/detect.py",),
    "gpu_unavailable": ("a1x_diagnostics/gpu/detect.py",),
    "export_regressed": ("a1x_supervisor/stages/evaluate.py",),
    "gpus_too_few": (
        "a1x_supervisor/preflight.py",
        "a1x_diagnostics/alpagym/lint.py",
        "a1x_supervisor/preflight_alpagym.py",
    ),
    "disk_space_low": ("a1x_supervisor/preflight.py", "a1x_supervisor/preflight_alpagym.py"),
    "hf_token_missing": ("a1x_supervisor/preflight.py", "a1x_supervisor/preflight_alpagym.py"),
    "hf_token_invalid": ("a1x_supervisor/preflight.py", "a1x_supervisor/preflight_alpagym.py"),
    "hf_cache_missing": ("a1x_supervisor/preflight.py",),
    "binary_missing": ("a1x_supervisor/preflight.py", "a1x_supervisor/preflight_alpagym.py"),
    "recipe_checkout_missing": ("a1x_supervisor/preflight.py",),
    "container_path_unmounted": ("a1x_supervisor/preflight.py", "a1x_supervisor/slurm/submit.py"),
    "checkpoint_after_time_limit": ("a1x_supervisor/preflight.py", "a1x_supervisor/slurm/submit.py"),
    "python_version_mismatch": ("a1x_supervisor/preflight_install.py",),
    "nvcc_missing": ("a1x_supervisor/preflight_install.py",),
    "nvcc_cuda_mismatch": ("a1x_supervisor/preflight_install.py",),
    "alpagym_checkout_missing": ("a1x_supervisor/preflight_alpagym.py",),
    "docker_unusable": ("a1x_supervisor/preflight_alpagym.py",),
    "alpagym_env_incomplete": ("a1x_supervisor/preflight_alpagym.py",),
}



def entry(finding_id: str) -> CatalogEntry:
    """The catalog entry for ``finding_id``; a KeyError names an id that is not in the contract."""
    return CATALOG[finding_id]
