"""The message-shape samples of tests/fixtures/signatures/*.tsv (docs/reference/cosmos-rl.md §16,
docs/reference/foreign-errors.md) are well formed: every column filled, a source that names
``repo@rev:path``, unique shape ids, and a recorded sample that is, line for line, the fixture line it
cites (a hard-wrapped sample spans consecutive lines, written with a literal ``\\n`` between them)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TABLES = sorted((REPO / "tests" / "fixtures" / "signatures").glob("*.tsv"))
COLUMNS = ["shape_id", "source", "origin", "meaning", "suggested_event", "suggested_finding", "sample_line"]
SOURCE = re.compile(r"^[\w.-]+/[\w.-]+@[^\s:]+:[\w./-]+\.\w+(?::\d+(?:-\d+)?)?(?:\s|$)")
RECORDED = re.compile(r"^recorded: (?P<path>\S+):(?P<line>\d+)$")


def _rows(table: Path) -> tuple[list[str], list[list[str]]]:
    lines = table.read_text(encoding="utf-8").splitlines()
    return lines[0].split("\t"), [line.split("\t") for line in lines[1:]]


def test_there_are_tables() -> None:
    assert {t.name for t in TABLES} >= {"cosmos-rl-0.4.7.tsv", "foreign.tsv"}


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t.name)
def test_rows_are_well_formed(table: Path) -> None:
    header, rows = _rows(table)
    assert [c for c in header if c != "stack"] == COLUMNS, header
    wrong, ids = [], set()
    for n, row in enumerate(rows, 2):
        where = f"{table.name}:{n}"
        if len(row) != len(header):
            wrong.append(f"{where}: {len(row)} columns, not {len(header)}")
            continue
        cell = dict(zip(header, row, strict=True))
        wrong += [f"{where}: empty {k}" for k, v in cell.items() if not v.strip()]
        if cell["shape_id"] in ids:
            wrong.append(f"{where}: shape_id {cell['shape_id']} twice")
        ids.add(cell["shape_id"])
        if not SOURCE.match(cell["source"]):
            wrong.append(f"{where}: source {cell['source']!r} names no repo@rev:path")
        if cell["origin"] != "rendered" and not RECORDED.match(cell["origin"]):
            wrong.append(f"{where}: origin {cell['origin']!r} is neither 'rendered' nor 'recorded: PATH:LINE'")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t.name)
def test_recorded_samples_are_the_fixture_lines(table: Path) -> None:
    header, rows = _rows(table)
    wrong = []
    for row in rows:
        cell = dict(zip(header, row, strict=True))
        m = RECORDED.match(cell["origin"])
        if m is None:
            continue
        path = REPO / m["path"]
        if not path.is_file():
            wrong.append(f"{cell['shape_id']}: {m['path']} does not exist")
            continue
        with path.open(encoding="utf-8", newline="") as f:  # no newline translation: a \r stays in the line
            text = [line.rstrip("\r\n") for line in f]
        first = int(m["line"]) - 1
        pieces = cell["sample_line"].split("\\n")
        if text[first : first + len(pieces)] != pieces:
            wrong.append(f"{cell['shape_id']}: sample differs from {m['path']}:{m['line']}")
    assert not wrong, "\n".join(wrong)
