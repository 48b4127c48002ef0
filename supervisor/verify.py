"""Stage verifications: does the filesystem hold what the stage should have produced?

Each function returns a ``VerifyResult`` with one line saying why. The rules are the
"Verify" paragraphs of alpamayo-recipe.md (§2.4 env, §4 convert, §5 download, §6 curate,
§7 grader, §8 train, §12.4 export).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import tomlkit

from diagnostics.parsing import latest_logs_dir, run_name
from supervisor.cosmos_logs import checkpoint_incomplete_reason, last_step, saved_checkpoints
from supervisor.stage import VerifyResult

REASONING_MODEL_TYPE = "alpamayo_reasoning_vla"
# alpamayo-recipe.md §8.1 / §14 row 16: the Hydra config each Alpamayo version needs.
HYDRA_CONFIG_NAMES: dict[str, str] = {"1.5": "alpamayo1_5_rvla_rl_pai", "1": "alpamayo1_rvla_rl_pai"}
# alpamayo-recipe.md §2.4 (the import contract) plus its recommended flash_attn check.
IMPORT_CONTRACT: tuple[str, ...] = (
    "import alpamayo_r1, alpamayo, cosmos_rl, vllm",
    "from alpamayo1_x_rl.models.reasoning_vla.base_model import RLWrapperReasoningVLA",
    "from alpamayo.utils.checkpoint_utils import collect_targets, remap_targets",
    "import flash_attn",
)
CONVERT_MARKER = ".a1x-tui-convert.json"
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _nonempty(path: Path) -> bool:
    try:
        return path.stat().st_size > 0  # stat follows symlinks: a dangling link fails here
    except OSError:
        return False


# -- env ------------------------------------------------------------------------------------------


def verify_env(venv_dir: Path, *, timeout_s: float = 900.0) -> VerifyResult:
    """The venv exists and the import contract holds (run in the venv's own Python)."""
    python = venv_dir / "bin" / "python"
    if not python.exists():
        return VerifyResult.failed(f"no venv at {venv_dir}")
    code = "; ".join(IMPORT_CONTRACT) + "; print('ok')"
    try:
        done = subprocess.run(
            [str(python), "-c", code],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    except subprocess.TimeoutExpired:
        return VerifyResult.failed(f"the import contract did not finish within {timeout_s:.0f}s")
    except OSError as exc:
        return VerifyResult.failed(f"cannot run {python}: {exc.strerror or exc}")
    if done.returncode != 0 or "ok" not in done.stdout:
        lines = [ln for ln in (done.stderr or done.stdout).splitlines() if ln.strip()]
        return VerifyResult.failed(f"import contract fails: {lines[-1][:200] if lines else f'rc {done.returncode}'}")
    return VerifyResult.passed(f"venv {venv_dir} passes the import contract")


# -- convert --------------------------------------------------------------------------------------


def verify_converted(model_dir: Path, *, alpamayo_model: str | None = None, vlm: str | None = None) -> VerifyResult:
    config = _read_json(model_dir / "config.json")
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
    shards = _index_shards(model_dir)
    if isinstance(shards, str):
        return VerifyResult.failed(shards)
    for name in ("preprocessor_config.json", "generation_config.json"):
        if not (model_dir / name).exists():
            return VerifyResult.failed(f"{model_dir}/{name} is missing")
    if not any((model_dir / n).exists() for n in _TOKENIZER_FILES):
        return VerifyResult.failed(f"{model_dir}: no tokenizer files")
    marker = _read_json(model_dir / CONVERT_MARKER)
    if alpamayo_model and isinstance(marker, dict) and marker.get("alpamayo_model") not in (None, alpamayo_model):
        # alpamayo-recipe.md §8.1: nothing downstream catches a version mismatch; it changes the prompt.
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


def _index_shards(folder: Path) -> list[str] | str:
    """The shard names of ``model.safetensors.index.json``, or the reason they are not all there."""
    index = _read_json(folder / "model.safetensors.index.json")
    if not isinstance(index, dict) or not isinstance(index.get("weight_map"), dict):
        return f"{folder}/model.safetensors.index.json is missing or has no weight_map"
    shards = sorted(set(index["weight_map"].values()))
    if not shards:
        return f"{folder}/model.safetensors.index.json: empty weight_map"
    for shard in shards:
        path = folder / shard
        if not _nonempty(path):
            if path.is_symlink():
                return f"{path} is a dangling symlink (was the Hugging Face cache cleaned?)"
            return f"{path} is missing (named in the weight_map)"
    return shards


# -- download / curate ----------------------------------------------------------------------------


def _chunk_file_missing(root: Path, chunks: Sequence[int], parts: Sequence[tuple[str, Sequence[str]]]) -> str | None:
    # alpamayo-recipe.md §5: '{component}/{subpart}/{subpart}.chunk_{NNNN}.*', 4-digit zero pad.
    for component, subparts in parts:
        for sub in subparts:
            for chunk in chunks:
                pattern = f"{sub}.chunk_{chunk:04d}.*"
                if not any(_nonempty(p) for p in (root / component / sub).glob(pattern)):
                    return f"{component}/{sub}/{pattern}"
    return None


def _silent_hub_failure(stage_log_text: str) -> str:
    # alpamayo-recipe.md §5: snapshot_download returns the existing dir when the Hub cannot be reached.
    if "Returning existing local_dir" in stage_log_text:
        return " (huggingface_hub: 'Returning existing local_dir ... remote repo cannot be accessed')"
    return ""


def verify_download_motion(
    pai_dir: Path,
    *,
    chunk_ids: Sequence[int],
    cameras: Sequence[str],
    calibration: Sequence[str],
    labels: Sequence[str],
    stage_log_text: str = "",
) -> VerifyResult:
    for name in ("features.csv", "clip_index.parquet", "metadata/feature_presence.parquet"):
        if not _nonempty(pai_dir / name):
            return VerifyResult.failed(f"{pai_dir}/{name} is missing{_silent_hub_failure(stage_log_text)}")
    missing = _chunk_file_missing(
        pai_dir, chunk_ids, (("camera", cameras), ("calibration", calibration), ("labels", labels))
    )
    if missing:
        return VerifyResult.failed(f"{pai_dir}: no {missing}{_silent_hub_failure(stage_log_text)}")
    return VerifyResult.passed(f"{pai_dir}: chunks {', '.join(map(str, chunk_ids))} downloaded")


def _chunk_column(names: Sequence[str]) -> str | None:
    # alpamayo-recipe.md §6: chunk column = 'chunk_id' if present else 'chunk'.
    if "chunk_id" in names:
        return "chunk_id"
    if "chunk" in names:
        return "chunk"
    return None


def _as_ints(values: Sequence[Any]) -> list[int]:
    out = []
    for v in values:
        try:
            out.append(int(v))
        except (TypeError, ValueError):
            continue
    return out


def verify_download_joint(
    reasoning_dir: Path,
    *,
    num_reasoning_clips: int,
    cameras: Sequence[str],
    calibration: Sequence[str],
    labels: Sequence[str],
    stage_log_text: str = "",
) -> VerifyResult:
    import pyarrow.parquet as pq

    for name in (
        "features.csv",
        "clip_index.parquet",
        "metadata/feature_presence.parquet",
        "reasoning/ood_reasoning.parquet",
        "clip_index_reasoning_mini.parquet",
    ):
        if not _nonempty(reasoning_dir / name):
            return VerifyResult.failed(f"{reasoning_dir}/{name} is missing{_silent_hub_failure(stage_log_text)}")
    mini = reasoning_dir / "clip_index_reasoning_mini.parquet"
    try:
        table = pq.read_table(mini)
    except Exception as exc:
        return VerifyResult.failed(f"{mini}: not a readable parquet ({exc})")
    rows = table.num_rows
    if rows == 0 or rows > num_reasoning_clips:
        return VerifyResult.failed(f"{mini}: {rows} rows, expected 1..{num_reasoning_clips}")
    column = _chunk_column(table.column_names)
    if column is None:
        return VerifyResult.failed(f"{mini}: no 'chunk' column")
    chunks = sorted(set(_as_ints(table.column(column).to_pylist())))
    missing = _chunk_file_missing(
        reasoning_dir, chunks, (("camera", cameras), ("calibration", calibration), ("labels", labels))
    )
    if missing:
        return VerifyResult.failed(f"{reasoning_dir}: no {missing}{_silent_hub_failure(stage_log_text)}")
    return VerifyResult.passed(f"{reasoning_dir}: {rows} reasoning clips in {len(chunks)} chunk(s)")


def verify_curated(pai_dir: Path, *, chunk_ids: Sequence[int], num_clips: int) -> VerifyResult:
    """``clip_index_mini.parquet``: min(N, available) rows, a ``chunk`` column, only the asked chunks."""
    import pyarrow.parquet as pq

    source = pai_dir / "clip_index.parquet"
    mini = pai_dir / "clip_index_mini.parquet"  # the name is hard-coded by the motion entry (§8.1)
    if not mini.exists():
        return VerifyResult.failed(f"{mini} is missing")
    try:
        src_schema = pq.read_schema(source)
        src_column = _chunk_column(src_schema.names)
        if src_column is None:
            return VerifyResult.failed(f"{source}: no 'chunk' column")
        wanted = set(chunk_ids)
        available = sum(
            1 for v in _as_ints(pq.read_table(source, columns=[src_column]).column(0).to_pylist()) if v in wanted
        )
        table = pq.read_table(mini)
    except Exception as exc:
        return VerifyResult.failed(f"cannot read the clip index parquet files: {exc}")
    expected = min(num_clips, available)
    if expected == 0:
        return VerifyResult.failed(f"{source}: no clips in chunk(s) {sorted(wanted)}")
    if "chunk" not in table.column_names:
        # the training loader needs 'chunk', not 'chunk_id' (alpamayo-recipe.md §6)
        return VerifyResult.failed(f"{mini}: no 'chunk' column (the training loader reads 'chunk')")
    if table.num_rows != expected:
        return VerifyResult.failed(
            f"{mini}: {table.num_rows} rows, expected min({num_clips}, {available}) = {expected}"
        )
    stray = sorted(set(_as_ints(table.column("chunk").to_pylist())) - wanted)
    if stray:
        return VerifyResult.failed(f"{mini}: rows from chunk {stray[0]}, which was not downloaded")
    if "clip_id" in src_schema.names and "clip_id" not in table.column_names:
        return VerifyResult.failed(f"{mini}: the clip_id index was lost")
    return VerifyResult.passed(f"{mini}: {table.num_rows} clips")


# -- grader ---------------------------------------------------------------------------------------


def verify_grader(grader_dir: Path) -> VerifyResult:
    # alpamayo-recipe.md §7: loaded with from_pretrained(dir, local_files_only=True).
    if not (grader_dir / "config.json").exists():
        return VerifyResult.failed(f"{grader_dir}/config.json is missing")
    weights = [p for pat in ("*.safetensors", "*.bin") for p in grader_dir.glob(pat) if _nonempty(p)]
    if not weights:
        return VerifyResult.failed(f"{grader_dir}: no model weights (*.safetensors / *.bin)")
    if not any((grader_dir / n).exists() for n in _TOKENIZER_FILES):
        return VerifyResult.failed(f"{grader_dir}: no tokenizer files")
    return VerifyResult.passed(f"{grader_dir}: Lingo-Judge cached ({len(weights)} weight file(s))")


# -- configure ------------------------------------------------------------------------------------


def verify_configured(
    record_path: Path,
    *,
    spec_digest: str,
    alpamayo_version: str,
    model_dir: Path,
    output_dir: Path,
    grader_dir: Path | None,
) -> VerifyResult:
    record = _read_json(record_path)
    if not isinstance(record, dict):
        return VerifyResult.failed(f"{record_path} is missing")
    if record.get("spec_digest") != spec_digest:
        return VerifyResult.failed("the run spec changed since the TOML was written")
    toml_path = Path(str(record.get("toml", "")))
    try:
        data = tomlkit.parse(toml_path.read_text(encoding="utf-8")).unwrap()
    except Exception as exc:
        return VerifyResult.failed(f"{toml_path}: cannot read the training TOML ({exc})")
    checks: list[tuple[str, Any, str]] = [
        ("policy.model_name_or_path", data.get("policy", {}).get("model_name_or_path"), str(model_dir)),
        ("train.output_dir", data.get("train", {}).get("output_dir"), str(output_dir)),
    ]
    if grader_dir is not None:
        custom = data.get("custom", {}).get("alpamayo", {})
        checks.append(
            (
                "custom.alpamayo.reasoning_grading_model_path",
                custom.get("reasoning_grading_model_path"),
                str(grader_dir),
            )
        )
    for key, got, want in checks:
        if got != want:
            return VerifyResult.failed(f"{toml_path}: {key} is {got!r}, the spec says {want!r}")
    loggers = data.get("logging", {}).get("logger", [])
    if "console" not in (loggers or []):
        # cosmos-rl.md §4.5: without the console logger there are no 'Step: n/N' lines to judge training by.
        return VerifyResult.failed(f"{toml_path}: [logging].logger lacks 'console' (no Step lines would be logged)")
    hydra = record.get("hydra_config_name")
    want_hydra = HYDRA_CONFIG_NAMES[alpamayo_version]
    if hydra != want_hydra:
        return VerifyResult.failed(f"hydra config {hydra!r} does not fit Alpamayo {alpamayo_version} ({want_hydra!r})")
    entry = Path(str(record.get("entry_script", "")))
    try:
        entry_text = entry.read_text(encoding="utf-8")
    except OSError:
        return VerifyResult.failed(f"entry script {entry} is missing")
    if f'"{hydra}"' not in entry_text:
        return VerifyResult.failed(f"{entry} does not use hydra config {hydra!r}")
    return VerifyResult.passed(f"{toml_path.name} written; hydra config {hydra}")


# -- train / export / verify ------------------------------------------------------------------------


def verify_trained(log_dir: Path, *, ranks: int | None, logs_dir: Path | None = None) -> VerifyResult:
    """Training succeeded only if the last ``Step: n/N`` reached N and a complete checkpoint exists.

    The launcher's exit code and its 'treating as success' lines are not evidence
    (cosmos-rl.md §2.7, §15).
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


def verify_export(export_dir: Path, *, checkpoint: Path | None, ranks: int | None) -> VerifyResult:
    """alpamayo-recipe.md §12.4: what loading the exported checkpoint needs."""
    config = _read_json(export_dir / "config.json")
    if not isinstance(config, dict):
        return VerifyResult.failed(f"{export_dir}/config.json is missing")
    if config.get("model_type") != REASONING_MODEL_TYPE:
        return VerifyResult.failed(f"{export_dir}/config.json: model_type is {config.get('model_type')!r}")
    shards = _index_shards(export_dir)
    if isinstance(shards, str):
        return VerifyResult.failed(shards)
    index = _read_json(export_dir / "model.safetensors.index.json")
    provenance = _read_json(export_dir / "cosmos_export_provenance.json")
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
    if not any((export_dir / n).exists() for n in _TOKENIZER_FILES):
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
