"""The ``curate`` stage (motion only): ``clip_index_mini.parquet`` from the downloaded clip index
(``scripts/curate_pai_samples.py``, docs/reference/alpamayo-recipe.md §6). Verified by reading both parquet files:
``min(N, available)`` rows, a ``chunk`` column, only downloaded chunks, the ``clip_id`` index kept."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from a1x_supervisor.progress import LastLine
from a1x_supervisor.stage import Command, StageSpec, VerifyResult
from a1x_supervisor.stages._files import as_ints, chunk_column
from a1x_supervisor.stages.context import StageContext
from a1x_supervisor.stages.parquet import NO_PYARROW, parquet


def verify_curated(pai_dir: Path, *, chunk_ids: Sequence[int], num_clips: int) -> VerifyResult:
    """``clip_index_mini.parquet``: min(N, available) rows, a ``chunk`` column, only the asked chunks."""
    source = pai_dir / "clip_index.parquet"
    mini = pai_dir / "clip_index_mini.parquet"  # the name is hard-coded by the motion entry (§8.1)
    if not mini.exists():
        return VerifyResult.failed(f"{mini} is missing")
    pq = parquet()
    if pq is None:
        return VerifyResult.failed(f"cannot check {mini}: {NO_PYARROW}")
    try:
        src_schema = pq.read_schema(source)
        src_column = chunk_column(src_schema.names)
        if src_column is None:
            return VerifyResult.failed(f"{source}: no 'chunk' column")
        wanted = set(chunk_ids)
        available = sum(
            1 for v in as_ints(pq.read_table(source, columns=[src_column]).column(0).to_pylist()) if v in wanted
        )
        table = pq.read_table(mini)
    except Exception as exc:
        return VerifyResult.failed(f"cannot read the clip index parquet files: {exc}")
    expected = min(num_clips, available)
    if expected == 0:
        return VerifyResult.failed(f"{source}: no clips in chunk(s) {sorted(wanted)}")
    if "chunk" not in table.column_names:
        # the training loader needs 'chunk', not 'chunk_id' (docs/reference/alpamayo-recipe.md §6)
        return VerifyResult.failed(f"{mini}: no 'chunk' column (the training loader reads 'chunk')")
    if table.num_rows != expected:
        return VerifyResult.failed(
            f"{mini}: {table.num_rows} rows, expected min({num_clips}, {available}) = {expected}"
        )
    stray = sorted(set(as_ints(table.column("chunk").to_pylist())) - wanted)
    if stray:
        return VerifyResult.failed(f"{mini}: rows from chunk {stray[0]}, which was not downloaded")
    if "clip_id" in src_schema.names and "clip_id" not in table.column_names:
        return VerifyResult.failed(f"{mini}: the clip_id index was lost")
    return VerifyResult.passed(f"{mini}: {table.num_rows} clips")


def stage(ctx: StageContext) -> StageSpec:
    spec, pai_dir = ctx.spec, ctx.paths.pai_dir

    def prepare() -> list[Command]:
        argv = (
            ctx.python,
            "scripts/curate_pai_samples.py",
            "--clip-index-path",
            str(pai_dir / "clip_index.parquet"),
            "--chunk",
            " ".join(str(c) for c in spec.data.chunk_ids),
            "--num-samples",
            str(spec.data.num_clips),
            "--output-path",
            str(pai_dir / "clip_index_mini.parquet"),
        )
        return [ctx.venv_command(argv, label="curate clips")]

    return StageSpec(
        name="curate",
        title="curate clip_index_mini.parquet",
        prepare=prepare,
        verify=lambda: verify_curated(pai_dir, chunk_ids=spec.data.chunk_ids, num_clips=spec.data.num_clips),
        progress=LastLine,
    )
