"""The alpagym ``download`` and ``convert`` stages: the released Alpamayo 1.5 checkpoint, then AlpaGym's
own format (``convert_release_to_alpagym_checkpoint.py``; docs/reference/alpagym.md §2.3, upstream
docs/ONBOARDING.md:134-145). Verified from the folders: the release's config and every weight shard;
the converted checkpoint's ``model_type`` (the only one AlpaGym's policy bundle loads), its tokenizer
and its weights (symlinks to the release's shards, so a moved release is caught here).
Retry policy: ``HfRetry`` (both read the Hub)."""

from __future__ import annotations

from pathlib import Path

from a1x_supervisor.progress import HfDownload, LastLine
from a1x_supervisor.stage import Command, StageSpec, VerifyResult
from a1x_supervisor.stages._files import TOKENIZER_FILES, index_shards, read_json
from a1x_supervisor.stages.alpagym._common import ALPAMAYO_1_5, settings, uv_run
from a1x_supervisor.stages.context import StageContext

EXPERT_MODEL_TYPE = "alpamayo_reasoning_vla_expert"  # docs/reference/alpagym.md §2.3
CONVERT_SCRIPT = "packages/policies/alpamayo_r1/scripts/convert_release_to_alpagym_checkpoint.py"


def verify_release(release_dir: Path) -> VerifyResult:
    config = read_json(release_dir / "config.json")
    if not isinstance(config, dict):
        return VerifyResult.failed(f"{release_dir}/config.json is missing or not JSON")
    shards = index_shards(release_dir)
    if isinstance(shards, str):
        return VerifyResult.failed(shards)
    return VerifyResult.passed(f"{release_dir}: release checkpoint with {len(shards)} weight shard(s)")


def verify_alpagym_checkpoint(model_dir: Path) -> VerifyResult:
    config = read_json(model_dir / "config.json")
    if not isinstance(config, dict):
        return VerifyResult.failed(f"{model_dir}/config.json is missing or not JSON")
    if config.get("model_type") != EXPERT_MODEL_TYPE:
        return VerifyResult.failed(
            f"{model_dir}/config.json: model_type is {config.get('model_type')!r}, not {EXPERT_MODEL_TYPE!r} "
            "(AlpaGym loads only checkpoints converted by convert_release_to_alpagym_checkpoint.py)"
        )
    for name in TOKENIZER_FILES:  # the Cosmos-RL controller loads the tokenizer from the checkpoint
        if not (model_dir / name).is_file():
            return VerifyResult.failed(f"{model_dir}/{name} is missing")
    shards = index_shards(model_dir)
    if isinstance(shards, str):
        return VerifyResult.failed(shards)
    return VerifyResult.passed(f"{model_dir}: AlpaGym checkpoint ({EXPERT_MODEL_TYPE}), {len(shards)} weight shard(s)")


def download_stage(ctx: StageContext) -> StageSpec:
    release_dir = settings(ctx.spec).release_dir

    def prepare() -> list[Command]:
        # upstream docs/ONBOARDING.md:135: snapshot_download into a local folder, run in the venv.
        code = (
            "from huggingface_hub import snapshot_download; "
            f"print(snapshot_download({ALPAMAYO_1_5!r}, local_dir={str(release_dir)!r}))"
        )
        return [uv_run(ctx, "python", "-c", code, label=f"download {ALPAMAYO_1_5}", secrets=("HF_TOKEN",))]

    return StageSpec(
        name="download",
        title=f"download {ALPAMAYO_1_5}",
        prepare=prepare,
        verify=lambda: verify_release(release_dir),
        progress=HfDownload,
        retry=ctx.hf_retry("download"),
    )


def stage(ctx: StageContext) -> StageSpec:
    release_dir, model_dir = settings(ctx.spec).release_dir, ctx.paths.model_dir

    def prepare() -> list[Command]:
        argv = (
            "--package",
            "alpagym-runtime",
            "python",
            CONVERT_SCRIPT,
            "--input",
            str(release_dir),
            "--output",
            str(model_dir),
            "--overwrite",  # a half-written folder of an earlier attempt is replaced, not refused
        )
        return [uv_run(ctx, *argv, label="convert to the AlpaGym checkpoint", secrets=("HF_TOKEN",))]

    return StageSpec(
        name="convert",
        title="convert the release checkpoint to AlpaGym's format",
        prepare=prepare,
        verify=lambda: verify_alpagym_checkpoint(model_dir),
        progress=LastLine,
        retry=ctx.hf_retry("convert"),
    )
