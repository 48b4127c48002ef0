"""Every message shape of the research tables (tests/fixtures/signatures/*.tsv: cosmos-rl 0.4.7, docs/reference/
cosmos-rl.md §16; other stacks, docs/reference/foreign-errors.md §F) is a catalog entry that holds the table's sample:
among its ``samples`` when the table says it was recorded, among its ``rendered`` lines when it was rendered from
the source's format string. The samples themselves are tested by tests/signatures/test_catalog.py (each gives its
entry's event, no other entry takes it). The shapes of the reading itself (a traceback's lost header, a container
stamp in front of a line) are no message: tests/parsing/test_wrapped_and_prefixed.py holds them."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from a1x_diagnostics.signatures import GROUPS, HITS, SIGS, Sig

TABLES = sorted((Path(__file__).resolve().parents[1] / "fixtures" / "signatures").glob("*.tsv"))
READING_SHAPES = {"traceback_headerless_rank_prefixed", "wall_clock_prefixed_ray_vllm_line"}
# A shape the table lists whose sample is one of another shape's lines seen from the reading's side (the catalog's
# entry for the message holds it): the table's row, the entry that holds its sample.
HELD_BY = {"traceback_headerless_non_error_class": "resume_failed.no_checkpoint_found"}


def _rows() -> list[dict[str, str]]:
    rows = []
    for table in TABLES:
        with table.open(encoding="utf-8", newline="") as f:
            rows += [dict(r, table=table.name) for r in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)]
    return rows


ROWS = _rows()


def _sample(row: dict[str, str]) -> str:
    return row["sample_line"].replace("\\n", "\n")


def _group_of(sig: Sig) -> str:
    return next(name for name, module in GROUPS.items() if any(sig in v for v in vars(module).values()
                                                               if isinstance(v, tuple)))


@pytest.mark.parametrize("row", [r for r in ROWS if r["shape_id"] not in READING_SHAPES], ids=lambda r: r["shape_id"])
def test_each_shape_is_an_entry_holding_its_sample_marked_as_the_table_says(row: dict[str, str]) -> None:
    sample = _sample(row)
    recorded = row["origin"].startswith("recorded")
    holders = [s for s in SIGS if sample in (s.samples if recorded else s.rendered)]
    if not holders and not recorded:  # a recording of the same line: a real sample beats a rendered one
        holders = [s for s in SIGS if sample in s.samples]
    assert holders, f"{row['table']} {row['shape_id']}: no entry holds its {'recorded' if recorded else 'rendered'} " \
                    f"sample {sample[:120]!r}"
    if row["shape_id"] in HELD_BY:
        assert holders[0].id == HELD_BY[row["shape_id"]]
        return
    # cosmos-rl's shapes live in the files of cosmos-rl's processes, the other stacks' in other_stacks.py
    group = _group_of(holders[0])
    if row["table"].startswith("cosmos-rl"):
        assert group in ("controller", "replicas", "launcher"), (row["shape_id"], group)
    else:
        assert group == "other_stacks", (row["shape_id"], group)


def test_the_tables_are_read_whole_and_no_line_is_both_recorded_and_rendered() -> None:
    assert {r["table"] for r in ROWS} == {"cosmos-rl-0.4.7.tsv", "foreign.tsv"}
    assert len(ROWS) == len({(r["table"], r["shape_id"]) for r in ROWS}) >= 70  # 36 + 34 rows on 2026-12-05
    for entry in (*SIGS, *HITS):
        assert not set(entry.samples) & set(entry.rendered), entry.id
