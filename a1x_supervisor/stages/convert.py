"""The ``convert`` stage: the release checkpoint turned into a training checkpoint
(``scripts/convert_release_config_to_training.py``, docs/reference/alpamayo-recipe.md §4). Verified from the
model folder's config, shards and files, and from the marker written after success, which names the
Alpamayo model converted (§8.1: a version mismatch is silent). Retry policy: ``HfRetry``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from a1x_supervisor.progress import HfDownload
from a1x_supervisor.spec import DEFAULT_VLM
from a1x_supervisor.stage import Command, StageSpec, VerifyResult
from a1x_supervisor.stages._files import REASONING_MODEL_TYPE, TOKENIZER_FILES, index_shards, read_json
from a1x_supervisor.stages.context import StageContext

CONVERT_MARKER = ".a1x-tui-convert.json"


def verify_converted(model_dir: Path, *, alpamayo_model: str | None = None, vlm: str | None = None) -> VerifyResult:
    config = read_json(model_dir / "config.json")
    if not isinstance(config, dict):
        return VerifyResult.failed(f"{model_dir}/config.json is missing or not JSON")
    if config.get("model_type") != REASONING_MODEL_TYPE:
        return VerifyResult.failed(
            f"{model_dir}/config.json: model_type is {config.get('model_type')!r}, not {REASONING_MODEL_TYPE!r}"
        )
    if config.get("architectures") != ["ReasoningVLA"]:
        return VerifyResult.failed(f"{model_dir}/config.json: architectures is {config.get('architectures')!r}")
    stale = _find_target_prefix(config, "alpamayo1_5.")
    if stale:
        return VerifyResult.failed(f"{model_dir}/config.json: _target_ {stale!r} was not remapped")
    if vlm and config.get("vlm_name_or_path") not in (None, vlm):
        return VerifyResult.failed(f"{model_dir}/config.json: vlm_name_or_path is {config.get('vlm_name_or_path')!r}")
    shards = index_shards(model_dir)
    if isinstance(shards, str):
        return VerifyResult.failed(shards)
    for name in ("preprocessor_config.json", "generation_config.json"):
        if not (model_dir / name).exists():
            return VerifyResult.failed(f"{model_dir}/{name} is missing")
    if not any((model_dir / n).exists() for n in TOKENIZER_FILES):
        return VerifyResult.failed(f"{model_dir}: no tokenizer files")
    marker = read_json(model_dir / CONVERT_MARKER)
    if alpamayo_model and isinstance(marker, dict) and marker.get("alpamayo_model") not in (None, alpamayo_model):
        # docs/reference/alpamayo-recipe.md §8.1: nothing downstream catches a version mismatch; it changes the prompt.
        return VerifyResult.failed(
            f"{model_dir} was converted from {marker.get('alpamayo_model')}, the spec asks for {alpamayo_model}"
        )
    return VerifyResult.passed(f"{model_dir}: converted checkpoint with {len(shards)} weight shard(s)")


def _find_target_prefix(node: Any, prefix: str) -> str | None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "_target_" and isinstance(value, str) and value.startswith(prefix):
                return value
            found = _find_target_prefix(value, prefix)
            if found:
                return found
    elif isinstance(node, list):
        for value in node:
            found = _find_target_prefix(value, prefix)
            if found:
                return found
    return None


def stage(ctx: StageContext) -> StageSpec:
    spec, model_dir = ctx.spec, ctx.paths.model_dir

    def prepare() -> list[Command]:
        argv = (
            ctx.python,
            "scripts/convert_release_config_to_training.py",
            "--output-dir",
            str(model_dir),
            "--alpamayo-model",
            spec.alpamayo_model,
        )
        return [ctx.venv_command(argv, secrets=("HF_TOKEN",), label="convert release checkpoint")]

    def after_success() -> None:
        marker = {
            "alpamayo_model": spec.alpamayo_model,
            "vlm_name_or_path": DEFAULT_VLM,
            "run_dir": str(ctx.rundir.run_dir),
        }
        (model_dir / CONVERT_MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")

    return StageSpec(
        name="convert",
        title=f"convert {spec.alpamayo_model} to a training checkpoint",
        prepare=prepare,
        verify=lambda: verify_converted(model_dir, alpamayo_model=spec.alpamayo_model, vlm=DEFAULT_VLM),
        progress=HfDownload,
        retry=ctx.hf_retry("convert"),
        after_success=after_success,
    )
