"""The alpagym ``train`` stage: ``python -m alpagym_host.cli`` with the spec's experiment and overrides
(docs/reference/alpagym.md §1.1, §5 "Launch"; upstream docs/ONBOARDING.md:180, host/src/alpagym_host/cli.py:44-74).

The host makes its own run folder, ``<run_root>/<YYYYmmddTHHMMSSZ>-<hex>/``; ``run_root`` is this run's
``alpagym/`` folder, so every AlpaGym run folder there is one of this run's attempts. The train monitor
follows the one the attempt makes with the closed-loop reader (``a1x_diagnostics.alpagym``): steps from its
controller log, the live findings from its AlpaGym, AlpaSim and Cosmos-RL lines and episode artifacts.

``deploy = "slurm"``: the host submits a job and exits (``Submitted Slurm job <id>``, cli.py:70); a
second command, ``slurm_wait``, follows that job until it ends (Stop: ``scancel``).

Verified by the run folder, never the exit code: the controller's last ``Step: n/N`` reached N and the
trainer's safetensors export of the final step is there (``cosmos/<ts>/safetensors/step_<N>/``, what the
export stage converts). Stop, failure or success: the Wizard's docker containers of the run are removed
afterwards (``cleanup``; upstream docs/ONBOARDING.md:222-230), its processes having been stopped with the
stage's (the executor follows them out of their own session). Retry policy: ``HfRetry`` without
rate-limit retries (a gated-repo failure is explained; a training run is not started again).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from a1x_diagnostics.parsing import controller_logs, log_runs
from a1x_supervisor.cosmos_logs import last_step
from a1x_supervisor.progress import TrainSteps
from a1x_supervisor.stage import Command, StageSpec, VerifyResult
from a1x_supervisor.stages._files import index_shards, read_json
from a1x_supervisor.stages.alpagym._common import latest_run, run_folders, runs_root, settings, uv_run
from a1x_supervisor.stages.alpagym.p2p import DISABLE_KEY
from a1x_supervisor.stages.context import StageContext

HOST_MODULE = "alpagym_host.cli"
_REPO_ROOT = Path(__file__).resolve().parents[3]  # for `python -m a1x_supervisor...` in a stage command
# The compose project of each Wizard is its folder (alpasim/wizard_<i>/, where docker-compose.yaml is):
# docker labels its containers with it, so only this run's are removed (upstream removes every `wizard*`).
COMPOSE_DIR_LABEL = "com.docker.compose.project.working_dir"


def host_argv(ctx: StageContext) -> tuple[str, ...]:
    """``uv run --no-sync --all-packages python -m alpagym_host.cli <overrides>`` (ONBOARDING.md:180)."""
    ag = settings(ctx.spec)
    overrides = [
        f"experiment={ag.experiment}",
        f"policy.model.path={ctx.paths.model_dir}",
        f"run_root={runs_root(ctx.rundir)}",
        f"deploy={ag.deploy}",  # conf/deploy/{local,slurm}.yaml: command=run or command=submit
    ]
    if ctx.spec.wandb.enabled:  # ONBOARDING.md:108
        overrides.append("cosmos.logging.logger=[console,wandb]")
    return ("--all-packages", "python", "-m", HOST_MODULE, *overrides, *ag.overrides)


def controller_run(run: Path) -> Path | None:
    """The ``logs/logs_<ts>`` of the node that ran the controller (one ``logs_<ts>`` per Cosmos-RL node)."""
    for logs in reversed(log_runs(run / "logs")):
        if controller_logs(logs):
            return logs
    return None


def final_export(run: Path, step: int) -> Path | str:
    """The trainer's safetensors export of ``step`` (``cosmos/<ts>/safetensors/step_<N>/``), or why not."""
    found = sorted((run / "cosmos").glob(f"*/safetensors/step_{step}"))
    if not found:
        return f"no safetensors export of step {step} under {run / 'cosmos'}/<ts>/safetensors/"
    folder = found[-1]
    if not isinstance(read_json(folder / "config.json"), dict):
        return f"{folder}/config.json is missing"
    shards = index_shards(folder)
    return shards if isinstance(shards, str) else folder


def verify_alpagym_trained(run: Path | None, root: Path) -> VerifyResult:
    if run is None:
        return VerifyResult.failed(f"the AlpaGym host made no run folder under {root} (resolved_config.yaml)")
    logs = controller_run(run)
    if logs is None:
        return VerifyResult.failed(
            f"{run.name}: no Cosmos-RL controller log under logs/logs_<ts>/: the host stopped before its "
            "Cosmos launcher (a bring-up, Hugging Face or config failure; a1x-tui --check tells which)"
        )
    step = last_step(logs)
    if step is None:
        return VerifyResult.failed(f"{run.name}/logs/{logs.name}: the controller log has no 'Step: n/N' line")
    if step[0] < step[1]:
        return VerifyResult.failed(f"training stopped at step {step[0]}/{step[1]}", step=step[0], total=step[1])
    export = final_export(run, step[1])
    if isinstance(export, str):
        return VerifyResult.failed(f"step {step[0]}/{step[1]} reached, but {export}")
    return VerifyResult.passed(
        f"{run.name}: step {step[0]}/{step[1]}; safetensors export {export.parent.parent.name}/step_{step[1]}",
        step=step[0],
        total=step[1],
        checkpoint=str(export),
    )


def remove_wizard_containers(run: Path | None, *, docker: Callable[..., subprocess.CompletedProcess[str]] | None = None
                             ) -> list[str]:
    """``docker rm -f`` of the containers of each ``alpasim/wizard_<i>/`` compose project of ``run``."""
    if run is None:
        return []
    wizards = sorted(p for p in (run / "alpasim").glob("wizard_*") if p.is_dir())
    if not wizards:
        return []
    call = docker or _docker
    lines: list[str] = []
    for folder in wizards:
        # the Wizard passes its log folder resolved (alpasim_wizard.py:80): compose labels that path
        listed = call("ps", "-aq", "--filter", f"label={COMPOSE_DIR_LABEL}={folder.resolve()}")
        if listed.returncode != 0:
            lines.append(f"docker ps for {folder.name} failed: {(listed.stderr or listed.stdout).strip()[:200]}")
            continue
        ids = listed.stdout.split()
        if not ids:
            lines.append(f"AlpaSim {folder.name}: no container left")
            continue
        removed = call("rm", "-f", *ids)
        if removed.returncode == 0:
            lines.append(f"AlpaSim {folder.name}: removed {len(ids)} container(s) (docker rm -f)")
        else:
            why = (removed.stderr or removed.stdout).strip()[:200]
            lines.append(f"AlpaSim {folder.name}: docker rm -f failed: {why}")
    return lines


def _docker(*args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(["docker", *args], 127, "", str(exc))


def stage(ctx: StageContext) -> StageSpec:
    spec, rundir, outputs = ctx.spec, ctx.rundir, ctx.outputs
    ag = settings(spec)

    def prepare() -> list[Command]:
        runs_root(rundir).mkdir(parents=True, exist_ok=True)
        env: dict[str, str] = {}
        if outputs.get(DISABLE_KEY) == "1":  # the p2p stage passed only with it (ONBOARDING.md:168)
            env["NCCL_P2P_DISABLE"] = "1"
        if not spec.wandb.enabled:
            env["WANDB_MODE"] = "disabled"
        secrets: tuple[str, ...] = ("HF_TOKEN", "WANDB_API_KEY") if spec.wandb.enabled else ("HF_TOKEN",)
        label = "AlpaGym host (Slurm submission)" if ag.deploy == "slurm" else "AlpaGym host: AlpaSim + Cosmos-RL"
        commands = [uv_run(ctx, *host_argv(ctx), env=env, secrets=secrets, label=label)]
        if ag.deploy == "slurm":
            argv = (sys.executable, "-m", "a1x_supervisor.stages.alpagym.slurm_wait", str(rundir.stage_log("train")))
            env_path = {"PYTHONPATH": str(_REPO_ROOT)}
            commands.append(Command(argv=argv, cwd=rundir.run_dir, env=env_path, label="follow the Slurm job"))
        return commands

    def cleanup() -> list[str]:
        if ag.deploy == "slurm":
            return []  # the Wizard ran inside the job, which scancel ended
        return remove_wizard_containers(latest_run(rundir))

    def verify() -> VerifyResult:
        result = verify_alpagym_trained(latest_run(rundir), runs_root(rundir))
        if result.ok:
            outputs["checkpoint"] = str(result.data["checkpoint"])
        return result

    return StageSpec(
        name="train",
        title="closed-loop GRPO training (AlpaGym host: AlpaSim + Cosmos-RL)",
        prepare=prepare,
        verify=verify,
        progress=TrainSteps,
        kind="train",
        retry=ctx.hf_retry("train", rate_limits=False),
        run_folders=lambda: run_folders(rundir),
        cleanup=cleanup,
    )
