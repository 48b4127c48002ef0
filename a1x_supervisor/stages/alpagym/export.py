"""The alpagym ``export`` and ``verify`` stages: the trainer's safetensors export of the final step
converted to the inference format AlpaSim's driver loads (``convert_alpagym_checkpoint_to_inference.py``;
docs/reference/alpagym.md §5 "Export", upstream docs/ONBOARDING.md:196-206), into a fresh folder under
``paths.export_dir``.

Verified from the folder: ``model_type`` ``alpamayo1_5`` with no training ``_target_`` left (what the
script's own validation demands), the tokenizer, every weight shard, and the provenance a1x-tui writes
after success naming the export it came from. ``verify`` runs nothing: the same check, every time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from a1x_supervisor.progress import LastLine
from a1x_supervisor.stage import Command, StageError, StageSpec, VerifyResult
from a1x_supervisor.stages._files import TOKENIZER_FILES, index_shards, read_json
from a1x_supervisor.stages.alpagym._common import latest_run, uv_run
from a1x_supervisor.stages.alpagym.train import verify_alpagym_trained
from a1x_supervisor.stages.context import StageContext
from a1x_supervisor.stages.export import fresh_dir

EXPORT_SCRIPT = "packages/policies/alpamayo_r1/scripts/convert_alpagym_checkpoint_to_inference.py"
INFERENCE_MODEL_TYPE = "alpamayo1_5"  # the script's validate_checkpoint (its lines 108-116)
_TRAINING_TARGETS = ("alpagym_alpamayo_r1.", "alpamayo1_x_rl.", "alpamayo_r1.")
PROVENANCE = ".a1x-tui-export.json"


def _targets(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [v for k, v in node.items() if k == "_target_" and isinstance(v, str)]
        return found + [t for v in node.values() for t in _targets(v)]
    if isinstance(node, list):
        return [t for v in node for t in _targets(v)]
    return []


def verify_inference_export(folder: Path, *, source: Path | None, provenance: bool = True) -> VerifyResult:
    """``provenance=False``: the script's output alone (judged before a1x-tui records where it came from)."""
    config = read_json(folder / "config.json")
    if not isinstance(config, dict):
        return VerifyResult.failed(f"{folder}/config.json is missing or not JSON")
    if config.get("model_type") != INFERENCE_MODEL_TYPE:
        return VerifyResult.failed(f"{folder}/config.json: model_type is {config.get('model_type')!r}, "
                                   f"not {INFERENCE_MODEL_TYPE!r}")
    left = [t for t in _targets(config) if t.startswith(_TRAINING_TARGETS)]
    if left:
        return VerifyResult.failed(f"{folder}/config.json: training _target_ {left[0]!r} left in the inference config")
    for name in TOKENIZER_FILES:
        if not (folder / name).is_file():
            return VerifyResult.failed(f"{folder}/{name} is missing")
    shards = index_shards(folder)
    if isinstance(shards, str):
        return VerifyResult.failed(shards)
    record = read_json(folder / PROVENANCE)
    if provenance and not isinstance(record, dict):
        return VerifyResult.failed(f"{folder}/{PROVENANCE} is missing: the export did not finish under a1x-tui")
    if provenance and source is not None and Path(str(record.get("source"))) != source:
        return VerifyResult.failed(f"{folder} was exported from {record.get('source')}, not {source}")
    return VerifyResult.passed(f"{folder}: inference checkpoint ({INFERENCE_MODEL_TYPE}), {len(shards)} shard(s)")


def _current(ctx: StageContext) -> VerifyResult:
    """The recorded export, checked against the training run's final export."""
    trained = verify_alpagym_trained(latest_run(ctx.rundir), ctx.rundir.run_dir)
    source = Path(str(trained.data["checkpoint"])) if trained.ok else None
    folder = ctx.outputs.get("export_dir")
    if not folder:
        if source is None:
            return VerifyResult.failed(f"nothing exported: {trained.reason}")
        return VerifyResult.failed(f"{source} is not exported yet")
    return verify_inference_export(Path(folder), source=source)


def stage(ctx: StageContext) -> StageSpec:
    outputs = ctx.outputs

    def prepare() -> list[Command]:
        trained = verify_alpagym_trained(latest_run(ctx.rundir), ctx.rundir.run_dir)
        if not trained.ok:
            raise StageError(f"nothing to export: {trained.reason}")
        source = Path(str(trained.data["checkpoint"]))
        out = fresh_dir(ctx.paths.export_dir / f"{source.parent.parent.parent.name}-{source.name}")
        outputs["checkpoint"], outputs["export_dir"] = str(source), str(out)
        argv = ("--package", "alpagym-alpamayo-r1", "python", EXPORT_SCRIPT, "--input", str(source),
                "--output", str(out), "--overwrite")
        return [uv_run(ctx, *argv, label="convert to the inference format")]

    def after_success() -> None:
        record = {"source": outputs.get("checkpoint"), "run_dir": str(ctx.rundir.run_dir)}
        Path(outputs["export_dir"], PROVENANCE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")

    def verify() -> VerifyResult:
        folder = outputs.get("export_dir")
        if folder and not (Path(folder) / PROVENANCE).exists():  # just converted: after_success records it
            return verify_inference_export(Path(folder), source=None, provenance=False)
        return _current(ctx)

    return StageSpec(
        name="export",
        title="export the final step to the inference format",
        prepare=prepare,
        verify=verify,
        progress=LastLine,
        after_success=after_success,
    )


def verify_stage(ctx: StageContext) -> StageSpec:
    def no_commands() -> list[Command]:
        return []

    return StageSpec(
        name="verify",
        title="check the inference-format export",
        prepare=no_commands,
        verify=lambda: _current(ctx),
        kind="check",
        skip_if_verified=False,
    )

