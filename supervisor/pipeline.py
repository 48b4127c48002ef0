"""The Alpamayo RL pipeline as stages: the exact command lines of the references, their
environment and their verification (alpamayo-recipe.md §1-§12, cosmos-rl.md §2)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import MutableMapping, Sequence
from pathlib import Path

from supervisor.cosmos_logs import expected_ranks, latest_complete_checkpoint
from supervisor.progress import HfDownload, LastLine, TrainSteps
from supervisor.rundir import RunDir
from supervisor.spec import DEFAULT_VLM, RunSpec
from supervisor.stage import STAGE_NAMES, Command, StageError, StageSpec, VerifyResult
from supervisor.stagelog import read_since
from supervisor.verify import (
    CONVERT_MARKER,
    IMPORT_CONTRACT,
    find_export,
    verify_configured,
    verify_converted,
    verify_curated,
    verify_download_joint,
    verify_download_motion,
    verify_env,
    verify_export,
    verify_grader,
    verify_trained,
)

LINGO_JUDGE_REPO = "wayveai/Lingo-Judge"
_REPO_ROOT = Path(__file__).resolve().parent.parent  # for `python -m supervisor.configure_stage`


def stage_names(spec: RunSpec) -> list[str]:
    """The stages of this spec, in order: curate is motion-only, grader joint-only."""
    if spec.pipeline == "demo":  # the demo's stages ship with the app (a1x_tui/demo/pipeline.py)
        from a1x_tui.demo.pipeline import stage_names as demo_stage_names

        return demo_stage_names(spec)
    skip = "grader" if spec.reward_mode == "motion" else "curate"
    return [name for name in STAGE_NAMES if name != skip]


def select_stages(names: Sequence[str], *, from_stage: str | None, only: str | None) -> list[str]:
    """The stages a run executes. Raises ``StageError`` with one line for a bad name."""
    for wanted in (from_stage, only):
        if wanted is None:
            continue
        if wanted not in STAGE_NAMES:
            raise StageError(f"unknown stage {wanted!r} (stages: {', '.join(names)})")
        if wanted not in names:
            raise StageError(f"stage {wanted!r} does not apply to this reward mode (stages: {', '.join(names)})")
    if only is not None:
        return [only]
    if from_stage is not None:
        return list(names[names.index(from_stage) :])
    return list(names)


def fresh_dir(preferred: Path) -> Path:
    """``preferred`` if it is absent or empty, else a sibling with a timestamp (never reuse shards,
    alpamayo-recipe.md §12.2: safetensors are rewritten, stale ones would stay)."""
    if not preferred.exists() or (preferred.is_dir() and not any(preferred.iterdir())):
        return preferred
    stamp = time.strftime("%Y%m%d-%H%M%S")
    candidate = preferred.with_name(f"{preferred.name}-{stamp}")
    n = 2
    while candidate.exists():
        candidate = preferred.with_name(f"{preferred.name}-{stamp}-{n}")
        n += 1
    return candidate


def build_stages(spec: RunSpec, rundir: RunDir, outputs: MutableMapping[str, str]) -> list[StageSpec]:
    """Every stage of ``spec`` (``outputs`` is shared state: the export folder, the checkpoint)."""
    if spec.pipeline == "demo":
        from a1x_tui.demo.pipeline import build_stages as demo_build_stages

        return demo_build_stages(spec, rundir, outputs)
    paths = spec.paths
    ws = paths.workspace
    venv = paths.venv_dir
    venv_bin = venv / "bin"
    python = str(venv_bin / "python")
    local_bin = str(Path("~/.local/bin").expanduser())  # §2.1: uv's install dir, re-exported per command
    venv_env = {"VIRTUAL_ENV": str(venv)}
    log_dir = rundir.log_dir(spec)

    def stage_log_text(name: str) -> str:
        return read_since(rundir.stage_log(name), 0)

    def ranks() -> int | None:
        return expected_ranks(rundir.train_toml)

    # -- env (§2.1, §2.4) --------------------------------------------------------------------------
    def prepare_env() -> list[Command]:
        recipe = paths.recipe_dir
        if not (recipe / "pyproject.toml").exists():
            raise StageError(f"{recipe}/pyproject.toml is missing: is paths.workspace an alpamayo-recipes checkout?")
        uv_env = {"UV_CACHE_DIR": str(paths.uv_cache_dir)} if paths.uv_cache_dir else {}
        cmds = []
        if not venv.exists():  # §2.1: 'skip if a1x_rl/ exists'
            venv_arg = "a1x_rl" if venv == recipe / "a1x_rl" else str(venv)
            cmds.append(
                Command(
                    argv=("uv", "venv", venv_arg), cwd=recipe, env=uv_env, path_prepend=(local_bin,), label="uv venv"
                )
            )
        active = {**uv_env, **venv_env}
        front = (str(venv_bin), local_bin)
        cmds.append(
            Command(
                argv=("uv", "sync", "--active", "--no-install-package", "flash-attn"),
                cwd=recipe,
                env=active,
                path_prepend=front,
                label="uv sync (pass 1: everything but flash-attn)",
            )
        )
        cmds.append(
            Command(
                argv=("uv", "sync", "--active"),
                cwd=recipe,
                env=active,
                path_prepend=front,
                label="uv sync (pass 2: flash-attn)",
            )
        )
        for code in IMPORT_CONTRACT:
            cmds.append(
                Command(
                    argv=(python, "-c", f"{code}; print('ok')"),
                    cwd=ws,
                    env=venv_env,
                    path_prepend=front,
                    label="import contract",
                )
            )
        return cmds

    # -- convert (§4) ------------------------------------------------------------------------------
    def prepare_convert() -> list[Command]:
        return [
            Command(
                argv=(
                    python,
                    "scripts/convert_release_config_to_training.py",
                    "--output-dir",
                    str(paths.model_dir),
                    "--alpamayo-model",
                    spec.alpamayo_model,
                ),
                cwd=ws,
                env=venv_env,
                path_prepend=(str(venv_bin),),
                secrets=("HF_TOKEN",),
                label="convert release checkpoint",
            )
        ]

    def after_convert() -> None:
        marker = {
            "alpamayo_model": spec.alpamayo_model,
            "vlm_name_or_path": DEFAULT_VLM,
            "run_dir": str(rundir.run_dir),
        }
        (paths.model_dir / CONVERT_MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")

    # -- download (§5) ------------------------------------------------------------------------------
    def prepare_download() -> list[Command]:
        common = ("--camera", *spec.data.cameras, "--calibration", *spec.data.calibration, "--labels", *spec.labels)
        if spec.reward_mode == "motion":
            if not spec.data.chunk_ids:
                raise StageError(
                    "refusing to download without chunk ids (it would fetch the whole dataset): set data.chunk_ids"
                )
            # §5: several chunk ids are ONE argument ('"3116 3117"'), unquoted they are rejected.
            argv = (
                python,
                "scripts/download_pai.py",
                "--chunk-ids",
                " ".join(str(c) for c in spec.data.chunk_ids),
                *common,
                "--output-dir",
                str(paths.pai_dir),
            )
        else:
            # §5: --num-reasoning-clips defaults to None (not 16): always pass it, or no mini index is written.
            argv = (
                python,
                "scripts/download_pai.py",
                "--only-reasoning-chunks",
                "--num-reasoning-clips",
                str(spec.data.num_reasoning_clips),
                *common,
                "--reasoning",
                "ood_reasoning.parquet",
                "--output-dir",
                str(paths.reasoning_dir),
            )
        return [
            Command(
                argv=argv,
                cwd=ws,
                env={**venv_env, "HF_HUB_OFFLINE": "0"},  # README §5: 'set export HF_HUB_OFFLINE=0'
                path_prepend=(str(venv_bin),),
                secrets=("HF_TOKEN",),
                label="download PAI",
            )
        ]

    def verify_download() -> VerifyResult:
        text = stage_log_text("download")
        if spec.reward_mode == "motion":
            return verify_download_motion(
                paths.pai_dir,
                chunk_ids=spec.data.chunk_ids,
                cameras=spec.data.cameras,
                calibration=spec.data.calibration,
                labels=spec.labels,
                stage_log_text=text,
            )
        return verify_download_joint(
            paths.reasoning_dir,
            num_reasoning_clips=spec.data.num_reasoning_clips,
            cameras=spec.data.cameras,
            calibration=spec.data.calibration,
            labels=spec.labels,
            stage_log_text=text,
        )

    # -- curate (§6) ---------------------------------------------------------------------------------
    def prepare_curate() -> list[Command]:
        return [
            Command(
                argv=(
                    python,
                    "scripts/curate_pai_samples.py",
                    "--clip-index-path",
                    str(paths.pai_dir / "clip_index.parquet"),
                    "--chunk",
                    " ".join(str(c) for c in spec.data.chunk_ids),
                    "--num-samples",
                    str(spec.data.num_clips),
                    "--output-path",
                    str(paths.pai_dir / "clip_index_mini.parquet"),
                ),
                cwd=ws,
                env=venv_env,
                path_prepend=(str(venv_bin),),
                label="curate clips",
            )
        ]

    # -- grader (§7) ---------------------------------------------------------------------------------
    def prepare_grader() -> list[Command]:
        hf = str(venv_bin / "hf") if (venv_bin / "hf").exists() else "hf"
        return [
            Command(
                argv=(hf, "download", LINGO_JUDGE_REPO, "--local-dir", str(paths.grader_dir)),
                cwd=ws,
                env=venv_env,
                path_prepend=(str(venv_bin),),
                secrets=("HF_TOKEN",),
                label="download Lingo-Judge",
            )
        ]

    # -- configure (§8.1, §8.4) ------------------------------------------------------------------------
    def prepare_configure() -> list[Command]:
        pythonpath = str(_REPO_ROOT)
        return [
            Command(
                argv=(sys.executable, "-m", "supervisor.configure_stage", str(rundir.run_dir)),
                cwd=rundir.run_dir,
                env={"PYTHONPATH": pythonpath},
                label="render the training TOML",
            )
        ]

    def verify_configure() -> VerifyResult:
        return verify_configured(
            rundir.configure_record,
            spec_digest=spec.digest(),
            alpamayo_version=spec.alpamayo_version,
            model_dir=paths.model_dir,
            output_dir=paths.output_dir,
            grader_dir=paths.grader_dir if spec.reward_mode == "joint" else None,
        )

    # -- train (§8.2, §3) -------------------------------------------------------------------------------
    def prepare_train() -> list[Command]:
        try:
            record = json.loads(rundir.configure_record.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise StageError(f"{rundir.configure_record} is missing: run the configure stage first") from None
        if not spec.on_slurm:  # a Slurm job makes its own layout (cosmos-dispatch: <run>/slurm is a link)
            log_dir.mkdir(parents=True, exist_ok=True)
        cosmos_rl = str(venv_bin / "cosmos-rl") if (venv_bin / "cosmos-rl").exists() else "cosmos-rl"
        env = {**venv_env, "COSMOS_LOG_LEVEL": spec.supervisor.cosmos_log_level}
        # §3 / §8.1: the entry reads exactly one of these, depending on the reward mode.
        if spec.reward_mode == "motion":
            env["ALPAMAYO_PAI_LOCAL_DIR"] = str(paths.pai_dir)
        else:
            env["ALPAMAYO_PAI_REASONING_LOCAL_DIR"] = str(paths.reasoning_dir)
        secrets: tuple[str, ...] = ("HF_TOKEN",)
        if spec.wandb.enabled:
            secrets += ("WANDB_API_KEY",)
        else:
            env["WANDB_MODE"] = "disabled"  # §8.2 / §14 row 14
        if spec.on_slurm:  # compute = "cluster": submit to Slurm instead (supervisor.cluster, docs/slurm.md)
            from supervisor.cluster import cluster_train_command

            return [
                cluster_train_command(
                    spec, rundir, record=record, env=env, path_prepend=(str(venv_bin),), secrets=secrets
                )
            ]
        return [
            Command(
                argv=(
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
                ),
                cwd=ws,
                env=env,
                path_prepend=(str(venv_bin),),
                secrets=secrets,
                label="cosmos-rl GRPO training",
            )
        ]

    # -- export (§12) -----------------------------------------------------------------------------------
    def prepare_export() -> list[Command]:
        ckpt = latest_complete_checkpoint(log_dir, ranks())
        if ckpt is None:
            raise StageError(
                f"no complete checkpoint under {log_dir}: no 'checkpoint saved successfully' line whose folder "
                "has cosmos_config and every .rank_<r>_complete marker"
            )
        out = fresh_dir(paths.export_dir / f"step_{ckpt.step}")
        outputs["checkpoint"] = str(ckpt.path)
        outputs["export_dir"] = str(out)
        return [
            Command(
                argv=(
                    python,
                    "scripts/convert_cosmos_rl_checkpoint.py",
                    "--cosmos-policy-ckpt",
                    str(ckpt.path),
                    "--base-hf-ckpt",
                    str(paths.model_dir),
                    "--output-dir",
                    str(out),
                ),
                cwd=ws,
                env=venv_env,
                path_prepend=(str(venv_bin),),
                label="export the checkpoint",
            )
        ]

    def current_export() -> VerifyResult:
        ckpt = latest_complete_checkpoint(log_dir, ranks())
        if ckpt is None:
            return VerifyResult.failed(f"no complete checkpoint under {log_dir} to export")
        if outputs.get("checkpoint") == str(ckpt.path) and outputs.get("export_dir"):
            result = verify_export(Path(outputs["export_dir"]), checkpoint=ckpt.path, ranks=ranks())
            if result.ok:
                return result
        found = find_export(paths.export_dir, ckpt.path, ranks=ranks())
        if found is None:
            return VerifyResult.failed(f"no verified export of {ckpt.path} under {paths.export_dir}")
        outputs["checkpoint"] = str(ckpt.path)
        outputs["export_dir"] = str(found[0])
        return found[1]

    def verify_exported() -> VerifyResult:
        if outputs.get("export_dir"):
            checkpoint = Path(outputs["checkpoint"]) if outputs.get("checkpoint") else None
            return verify_export(Path(outputs["export_dir"]), checkpoint=checkpoint, ranks=ranks())
        return current_export()

    def no_commands() -> list[Command]:
        return []

    all_stages = {
        "env": StageSpec(
            name="env",
            title="a1x_rl venv, two-pass uv sync, import contract",
            prepare=prepare_env,
            verify=lambda: verify_env(venv),
            progress=LastLine,
        ),
        "convert": StageSpec(
            name="convert",
            title=f"convert {spec.alpamayo_model} to a training checkpoint",
            prepare=prepare_convert,
            verify=lambda: verify_converted(paths.model_dir, alpamayo_model=spec.alpamayo_model, vlm=DEFAULT_VLM),
            progress=HfDownload,
            hf_retry=True,
            after_success=after_convert,
        ),
        "download": StageSpec(
            name="download",
            title="download PAI " + ("motion chunks" if spec.reward_mode == "motion" else "reasoning clips"),
            prepare=prepare_download,
            verify=verify_download,
            progress=HfDownload,
            hf_retry=True,
        ),
        "curate": StageSpec(
            name="curate",
            title="curate clip_index_mini.parquet",
            prepare=prepare_curate,
            verify=lambda: verify_curated(paths.pai_dir, chunk_ids=spec.data.chunk_ids, num_clips=spec.data.num_clips),
            progress=LastLine,
        ),
        "grader": StageSpec(
            name="grader",
            title="download the Lingo-Judge grader",
            prepare=prepare_grader,
            verify=lambda: verify_grader(paths.grader_dir),
            progress=HfDownload,
            hf_retry=True,
        ),
        "configure": StageSpec(
            name="configure",
            title="render the training TOML and pick the Hydra config",
            prepare=prepare_configure,
            verify=verify_configure,
            progress=LastLine,
        ),
        "train": StageSpec(
            name="train",
            title="GRPO training (cosmos-rl)",
            prepare=prepare_train,
            verify=lambda: verify_trained(log_dir, ranks=ranks()),
            progress=TrainSteps,
            kind="train",
            hf_retry=True,
        ),
        "export": StageSpec(
            name="export",
            title="export the latest complete checkpoint",
            prepare=prepare_export,
            verify=current_export,
            progress=LastLine,
        ),
        "verify": StageSpec(
            name="verify",
            title="check the exported checkpoint",
            prepare=no_commands,
            verify=verify_exported,
            kind="check",
            skip_if_verified=False,
        ),
    }
    return [all_stages[name] for name in stage_names(spec)]
