"""The ``download`` stage: PAI data through ``scripts/download_pai.py`` (docs/reference/alpamayo-recipe.md §5),
motion chunks or reasoning clips. Verified by the files the dataset lays out for every chunk and
subpart; a download that exits 0 having fetched nothing fails, quoting huggingface_hub's warning.
Retry policy: ``HfRetry``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from a1x_supervisor.progress import HfDownload
from a1x_supervisor.stage import Command, StageError, StageSpec, VerifyResult
from a1x_supervisor.stages._files import as_ints, chunk_column, nonempty
from a1x_supervisor.stages.context import StageContext
from a1x_supervisor.stages.parquet import NO_PYARROW, parquet


def _chunk_file_missing(root: Path, chunks: Sequence[int], parts: Sequence[tuple[str, Sequence[str]]]) -> str | None:
    # docs/reference/alpamayo-recipe.md §5: '{component}/{subpart}/{subpart}.chunk_{NNNN}.*', 4-digit zero pad.
    for component, subparts in parts:
        for sub in subparts:
            for chunk in chunks:
                pattern = f"{sub}.chunk_{chunk:04d}.*"
                if not any(nonempty(p) for p in (root / component / sub).glob(pattern)):
                    return f"{component}/{sub}/{pattern}"
    return None


def _silent_hub_failure(stage_log_text: str) -> str:
    # docs/reference/alpamayo-recipe.md §5: snapshot_download returns the existing dir when the Hub cannot be reached.
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
        if not nonempty(pai_dir / name):
            return VerifyResult.failed(f"{pai_dir}/{name} is missing{_silent_hub_failure(stage_log_text)}")
    missing = _chunk_file_missing(
        pai_dir, chunk_ids, (("camera", cameras), ("calibration", calibration), ("labels", labels))
    )
    if missing:
        return VerifyResult.failed(f"{pai_dir}: no {missing}{_silent_hub_failure(stage_log_text)}")
    return VerifyResult.passed(f"{pai_dir}: chunks {', '.join(map(str, chunk_ids))} downloaded")


def verify_download_joint(
    reasoning_dir: Path,
    *,
    num_reasoning_clips: int,
    cameras: Sequence[str],
    calibration: Sequence[str],
    labels: Sequence[str],
    stage_log_text: str = "",
) -> VerifyResult:
    for name in (
        "features.csv",
        "clip_index.parquet",
        "metadata/feature_presence.parquet",
        "reasoning/ood_reasoning.parquet",
        "clip_index_reasoning_mini.parquet",
    ):
        if not nonempty(reasoning_dir / name):
            return VerifyResult.failed(f"{reasoning_dir}/{name} is missing{_silent_hub_failure(stage_log_text)}")
    mini = reasoning_dir / "clip_index_reasoning_mini.parquet"
    pq = parquet()
    if pq is None:
        return VerifyResult.failed(f"cannot check {mini}: {NO_PYARROW}")
    try:
        table = pq.read_table(mini)
    except Exception as exc:
        return VerifyResult.failed(f"{mini}: not a readable parquet ({exc})")
    rows = table.num_rows
    if rows == 0 or rows > num_reasoning_clips:
        return VerifyResult.failed(f"{mini}: {rows} rows, expected 1..{num_reasoning_clips}")
    column = chunk_column(table.column_names)
    if column is None:
        return VerifyResult.failed(f"{mini}: no 'chunk' column")
    chunks = sorted(set(as_ints(table.column(column).to_pylist())))
    missing = _chunk_file_missing(
        reasoning_dir, chunks, (("camera", cameras), ("calibration", calibration), ("labels", labels))
    )
    if missing:
        return VerifyResult.failed(f"{reasoning_dir}: no {missing}{_silent_hub_failure(stage_log_text)}")
    return VerifyResult.passed(f"{reasoning_dir}: {rows} reasoning clips in {len(chunks)} chunk(s)")


def stage(ctx: StageContext) -> StageSpec:
    spec, paths = ctx.spec, ctx.paths

    def prepare() -> list[Command]:
        common = ("--camera", *spec.data.cameras, "--calibration", *spec.data.calibration, "--labels", *spec.labels)
        if not spec.entry.reasoning_data:
            if not spec.data.chunk_ids:
                raise StageError(
                    "refusing to download without chunk ids (it would fetch the whole dataset): set data.chunk_ids"
                )
            # §5: several chunk ids are ONE argument ('"3116 3117"'), unquoted they are rejected.
            argv = (
                ctx.python,
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
                ctx.python,
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
        env = {**ctx.venv_env, "HF_HUB_OFFLINE": "0"}  # README §5: 'set export HF_HUB_OFFLINE=0'
        return [ctx.venv_command(argv, env=env, secrets=("HF_TOKEN",), label="download PAI")]

    def verify() -> VerifyResult:
        text = ctx.stage_log_text("download")
        if not spec.entry.reasoning_data:
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

    return StageSpec(
        name="download",
        title="download PAI " + ("reasoning clips" if spec.entry.reasoning_data else "motion chunks"),
        prepare=prepare,
        verify=verify,
        progress=HfDownload,
        retry=ctx.hf_retry("download"),
    )
