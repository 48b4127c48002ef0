"""The ``export`` stage: the newest run's highest complete checkpoint converted to a Hugging Face
checkpoint (``scripts/convert_cosmos_rl_checkpoint.py``, docs/reference/alpamayo-recipe.md §12) in a fresh folder.
Verified by an export whose provenance names that checkpoint (an earlier one found again on resume)."""

from __future__ import annotations

import time
from pathlib import Path

from a1x_supervisor.cosmos_logs import latest_complete_checkpoint
from a1x_supervisor.progress import LastLine
from a1x_supervisor.stage import Command, StageError, StageSpec, VerifyResult
from a1x_supervisor.stages._files import REASONING_MODEL_TYPE, TOKENIZER_FILES, index_shards, read_json
from a1x_supervisor.stages.context import StageContext


def fresh_dir(preferred: Path) -> Path:
    """``preferred`` if it is absent or empty, else a sibling with a timestamp (never reuse shards,
    docs/reference/alpamayo-recipe.md §12.2: safetensors are rewritten, stale ones would stay)."""
    if not preferred.exists() or (preferred.is_dir() and not any(preferred.iterdir())):
        return preferred
    stamp = time.strftime("%Y%m%d-%H%M%S")
    candidate = preferred.with_name(f"{preferred.name}-{stamp}")
    n = 2
    while candidate.exists():
        candidate = preferred.with_name(f"{preferred.name}-{stamp}-{n}")
        n += 1
    return candidate


def verify_export(export_dir: Path, *, checkpoint: Path | None, ranks: int | None) -> VerifyResult:
    """docs/reference/alpamayo-recipe.md §12.4: what loading the exported checkpoint needs."""
    config = read_json(export_dir / "config.json")
    if not isinstance(config, dict):
        return VerifyResult.failed(f"{export_dir}/config.json is missing")
    if config.get("model_type") != REASONING_MODEL_TYPE:
        return VerifyResult.failed(f"{export_dir}/config.json: model_type is {config.get('model_type')!r}")
    shards = index_shards(export_dir)
    if isinstance(shards, str):
        return VerifyResult.failed(shards)
    index = read_json(export_dir / "model.safetensors.index.json")
    provenance = read_json(export_dir / "cosmos_export_provenance.json")
    if not isinstance(provenance, dict):
        return VerifyResult.failed(f"{export_dir}/cosmos_export_provenance.json is missing")
    if checkpoint is not None and Path(str(provenance.get("cosmos_policy_ckpt"))) != checkpoint:
        return VerifyResult.failed(
            f"{export_dir} was exported from {provenance.get('cosmos_policy_ckpt')}, not {checkpoint}"
        )
    got_ranks = provenance.get("ranks")
    want_ranks = list(range(ranks)) if ranks else None
    if not isinstance(got_ranks, list) or not got_ranks or (want_ranks is not None and got_ranks != want_ranks):
        return VerifyResult.failed(f"{export_dir}: provenance ranks {got_ranks!r}, expected {want_ranks!r}")
    if got_ranks != list(range(len(got_ranks))):
        return VerifyResult.failed(f"{export_dir}: provenance ranks {got_ranks!r} are not 0..{len(got_ranks) - 1}")
    n_keys = len(index["weight_map"]) if isinstance(index, dict) else 0
    if provenance.get("num_keys") not in (None, n_keys):
        return VerifyResult.failed(
            f"{export_dir}: provenance num_keys {provenance.get('num_keys')} != {n_keys} index entries"
        )
    if not (export_dir / "preprocessor_config.json").exists():
        return VerifyResult.failed(f"{export_dir}/preprocessor_config.json is missing")
    if not any((export_dir / n).exists() for n in TOKENIZER_FILES):
        return VerifyResult.failed(f"{export_dir}: no tokenizer files")
    return VerifyResult.passed(f"{export_dir}: {len(shards)} shard(s), {n_keys} tensors, ranks 0..{len(got_ranks) - 1}")


def find_export(export_root: Path, checkpoint: Path, *, ranks: int | None) -> tuple[Path, VerifyResult] | None:
    """An existing export of ``checkpoint`` under ``export_root`` that verifies (resume)."""
    try:
        candidates = sorted((p for p in export_root.iterdir() if p.is_dir()), key=lambda p: p.name, reverse=True)
    except OSError:
        return None
    for folder in candidates:
        result = verify_export(folder, checkpoint=checkpoint, ranks=ranks)
        if result.ok:
            return folder, result
    return None


def current_export(ctx: StageContext) -> VerifyResult:
    """The export of the newest complete checkpoint, as recorded in ``ctx.outputs`` or found again
    under the export folder (then recorded there)."""
    outputs, export_root = ctx.outputs, ctx.paths.export_dir
    ckpt = latest_complete_checkpoint(ctx.log_dir, ctx.ranks())
    if ckpt is None:
        return VerifyResult.failed(f"no complete checkpoint under {ctx.log_dir} to export")
    if outputs.get("checkpoint") == str(ckpt.path) and outputs.get("export_dir"):
        result = verify_export(Path(outputs["export_dir"]), checkpoint=ckpt.path, ranks=ctx.ranks())
        if result.ok:
            return result
    found = find_export(export_root, ckpt.path, ranks=ctx.ranks())
    if found is None:
        return VerifyResult.failed(f"no verified export of {ckpt.path} under {export_root}")
    outputs["checkpoint"] = str(ckpt.path)
    outputs["export_dir"] = str(found[0])
    return found[1]


def stage(ctx: StageContext) -> StageSpec:
    paths, log_dir = ctx.paths, ctx.log_dir

    def prepare() -> list[Command]:
        ckpt = latest_complete_checkpoint(log_dir, ctx.ranks())
        if ckpt is None:
            raise StageError(
                f"no complete checkpoint under {log_dir}: no 'checkpoint saved successfully' line whose folder "
                "has cosmos_config and every .rank_<r>_complete marker"
            )
        out = fresh_dir(paths.export_dir / f"step_{ckpt.step}")
        ctx.outputs["checkpoint"] = str(ckpt.path)
        ctx.outputs["export_dir"] = str(out)
        argv = (
            ctx.python,
            "scripts/convert_cosmos_rl_checkpoint.py",
            "--cosmos-policy-ckpt",
            str(ckpt.path),
            "--base-hf-ckpt",
            str(paths.model_dir),
            "--output-dir",
            str(out),
        )
        return [ctx.venv_command(argv, label="export the checkpoint")]

    return StageSpec(
        name="export",
        title="export the latest complete checkpoint",
        prepare=prepare,
        verify=lambda: current_export(ctx),
        progress=LastLine,
    )
