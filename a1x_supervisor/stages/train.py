"""The ``train`` stage: GRPO training with ``cosmos-rl`` (docs/reference/alpamayo-recipe.md §8.2, §3), or its
submission to Slurm for ``compute = "cluster"`` (``train_cluster``, docs/slurm.md).

Never judged by the exit code (docs/reference/cosmos-rl.md §2.7): the last ``Step: n/N`` of this attempt's
controller log reached N, and a checkpoint named by a ``checkpoint saved successfully at`` line is
complete. While it runs, the supervisor's train monitor (``a1x_supervisor.train_monitor``) watches it.
Retry policy: ``HfRetry`` without rate-limit retries (a training run is not started again; a gated
repo is explained).
"""

from __future__ import annotations

import json
from pathlib import Path

from a1x_diagnostics.parsing import latest_logs_dir, run_name
from a1x_supervisor.cosmos_logs import checkpoint_incomplete_reason, last_step, saved_checkpoints
from a1x_supervisor.progress import TrainSteps
from a1x_supervisor.stage import Command, StageError, StageSpec, VerifyResult
from a1x_supervisor.stages.context import StageContext


def verify_trained(log_dir: Path, *, ranks: int | None, logs_dir: Path | None = None) -> VerifyResult:
    """Training succeeded only if the last ``Step: n/N`` reached N and a complete checkpoint exists.

    The launcher's exit code and its 'treating as success' lines are not evidence
    (docs/reference/cosmos-rl.md §2.7, §15).
    """
    run_logs = logs_dir or latest_logs_dir(log_dir)
    if run_logs is None:
        return VerifyResult.failed(f"no Cosmos-RL logs under {log_dir}")
    step = last_step(run_logs)
    if step is None:
        return VerifyResult.failed(f"{run_name(log_dir, run_logs)}: the controller log has no 'Step: n/N' line")
    if step[0] < step[1]:
        return VerifyResult.failed(f"training stopped at step {step[0]}/{step[1]}", step=step[0], total=step[1])
    saved = saved_checkpoints(run_logs)
    if not saved:
        return VerifyResult.failed(
            f"step {step[0]}/{step[1]} reached, but no 'checkpoint saved successfully' line in the policy logs"
        )
    reason = ""
    for ckpt in reversed(saved):
        reason = checkpoint_incomplete_reason(ckpt.path, ranks) or ""
        if not reason:
            return VerifyResult.passed(
                f"step {step[0]}/{step[1]}; checkpoint step_{ckpt.step} complete",
                step=step[0],
                total=step[1],
                checkpoint=str(ckpt.path),
            )
    return VerifyResult.failed(f"step {step[0]}/{step[1]} reached, but no complete checkpoint: {reason}")


def stage(ctx: StageContext) -> StageSpec:
    spec, rundir, log_dir = ctx.spec, ctx.rundir, ctx.log_dir

    def prepare() -> list[Command]:
        try:
            record = json.loads(rundir.configure_record.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise StageError(f"{rundir.configure_record} is missing: run the configure stage first") from None
        if not spec.on_slurm:  # a Slurm job makes its own layout (cosmos-dispatch: <run>/slurm is a link)
            log_dir.mkdir(parents=True, exist_ok=True)
        cosmos_rl = str(ctx.venv_bin / "cosmos-rl") if (ctx.venv_bin / "cosmos-rl").exists() else "cosmos-rl"
        env = {**ctx.venv_env, "COSMOS_LOG_LEVEL": spec.supervisor.cosmos_log_level}
        # §3 / §8.1: each entry reads exactly one dataset variable (a1x_diagnostics.recipe_entries).
        env[spec.entry.data_env] = str(spec.data_dir)
        secrets: tuple[str, ...] = ("HF_TOKEN",)
        if spec.wandb.enabled:
            secrets += ("WANDB_API_KEY",)
        else:
            env["WANDB_MODE"] = "disabled"  # §8.2 / §14 row 14
        if spec.on_slurm:  # compute = "cluster": submit to Slurm instead (docs/slurm.md)
            from a1x_supervisor.stages.train_cluster import cluster_train_command

            return [
                cluster_train_command(
                    spec, rundir, record=record, env=env, path_prepend=(str(ctx.venv_bin),), secrets=secrets
                )
            ]
        argv = (
            cosmos_rl,
            "--config",
            str(record["toml"]),
            "--policy",
            str(spec.replicas.policy),
            "--rollout",
            str(spec.replicas.rollout),
            "--log-dir",
            str(log_dir),
            str(record["entry_arg"]),
        )
        return [ctx.venv_command(argv, env=env, secrets=secrets, label="cosmos-rl GRPO training")]

    return StageSpec(
        name="train",
        title="GRPO training (cosmos-rl)",
        prepare=prepare,
        verify=lambda: verify_trained(log_dir, ranks=ctx.ranks()),
        progress=TrainSteps,
        kind="train",
        retry=ctx.hf_retry("train", rate_limits=False),
    )
