"""Every line definition held to the recorded lines of each Cosmos-RL generation.

A rule is its regex; what the scanner looks for comes from it (``_required``: the strings every
match holds; ``_templates``: a bulk shape's byte template, fields and record). These tests read the
recorded runs and driver logs of ``tests/fixtures/cosmos`` (one folder per generation) and check,
line by line, that what is derived agrees with what the regex and the parser say.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest
from test_bulk import _check

from diagnostics.events import Role, Source
from diagnostics.parsing import _bulk, _rules, scanner_for
from diagnostics.parsing._parser import GATED_ROLES
from diagnostics.parsing._required import required_literals
from diagnostics.parsing._shapes import shape_of
from diagnostics.parsing._templates import Bulk, message_pattern

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "cosmos"
GENERATIONS = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
# Shapes no recorded run of ours holds: the receive line of earlier Cosmos-RL without its ``While``
# tail (seen in users' logs, docs/reference/cosmos-rl.md §6.2) and the recipe's prefetch server
# (docs/reference/alpamayo-recipe.md §9.3), whose runs we have not recorded.
UNRECORDED = {Bulk.RECV_DONE_OLD, Bulk.PREFETCH}


@cache
def _lines(generation: str) -> tuple[tuple[str, str], ...]:
    """(file name, line) of every recorded log of ``generation``."""
    out = []
    for path in sorted((FIXTURES / generation).rglob("*.log")):
        out += [(path.name, line) for line in path.read_text(errors="replace").splitlines()]
    return tuple(out)


def test_required_strings_are_read_from_the_regex() -> None:
    assert required_literals(re.compile(r"All (\d+) at step (\d+|None) send operations(?: of)? finished in "
                                        r"([\d.]+) seconds")) == ("All ", " at step ", " send operations",
                                                                  " finished in ", " seconds")
    assert required_literals(re.compile(r"^\[Controller\] Stat: (?:in (\d+))? x")) == ("[Controller] Stat: ",)
    assert required_literals(re.compile(r"(?:abc|abd)def(ghi)+")) == ("def", "ghi")
    assert required_literals(re.compile(r"Killed", re.IGNORECASE)) == ()
    assert required_literals(re.compile(r"a(?i:bcd)efg")) == ("efg",)


def test_every_needle_is_inside_a_string_its_regex_requires() -> None:
    """The needle a rule is looked up by cannot be stricter than its regex (``Detected 8 GPUs:`` once
    matched the regex and missed the needle ``GPUs: ``)."""
    for r in _rules.RULES:
        assert any(r.needle in s for s in _rules.literals_of(r)), (r.needle, r.pattern.pattern)


def test_a_bulk_line_would_pass_the_needles_it_skips() -> None:
    """``_scan.c`` takes a line its templates match before walking the needles (a tag gate's
    confirmation): that line must be one the walk takes too. Each shape's text holds a marker that
    always counts, or its rule's strings are a group of the confirmation."""
    from diagnostics.parsing._markers import GATED_CONFIRM, GATED_MARKERS

    confirmed, groups = GATED_CONFIRM
    always = [m for m in GATED_MARKERS if m not in confirmed]
    for kind, t in _rules.TEMPLATES.items():
        text = "".join(lit for lit, _, _ in t.parts())
        if any(m in text for m in always):
            continue
        pattern = message_pattern(t)
        rule = next(r for r in _rules.RULES if r.pattern.pattern == pattern)
        assert _rules.literals_of(rule) in groups, kind


@pytest.mark.parametrize("generation", GENERATIONS)
def test_a_line_a_regex_matches_holds_every_string_it_requires(generation: str) -> None:
    matched = 0
    for _, line in _lines(generation):
        msg = shape_of(line).msg
        for r in _rules.RULES:
            if r.needle in msg and r.pattern.search(msg):
                matched += 1
                assert all(s in line for s in _rules.literals_of(r)), (r.pattern.pattern, line)
    assert matched > 50


@pytest.mark.parametrize("generation", GENERATIONS)
def test_the_scanner_takes_every_recorded_line_that_gives_an_event(generation: str) -> None:
    """In a controller or replica log, a tag gate counts only with every string of one of its rules:
    no recorded line that gives an event is left out by that."""
    from diagnostics.parsing import LineParser

    lines = [line for _, line in _lines(generation) if "\r" not in line]
    for role in sorted(GATED_ROLES, key=lambda r: r.value):
        source = Source(f"{role.value}_0.log", role, None if role is Role.CONTROLLER else 0)
        taken = set(scanner_for(source).lines(lines))
        parser = LineParser(source, keep_unknown=False)
        left_out = [line for i, line in enumerate(lines) if i not in taken]
        assert len(left_out) < len(lines)
        for line in left_out:
            assert not parser.ungrouped_line_events(1, line), (role, line)


@pytest.mark.skipif(not _bulk.available(), reason="C extension not built")
def test_every_bulk_shape_reads_its_recorded_lines_as_the_parser_does() -> None:
    """Each shape's definition against each recorded line its message regex matches: the C record
    equals the parser's event, field for field (``test_bulk._check``)."""
    seen: dict[Bulk, int] = {}
    patterns = {k: re.compile(message_pattern(t)) for k, t in _rules.TEMPLATES.items()}
    for generation in GENERATIONS:
        for name, line in _lines(generation):
            msg = shape_of(line).msg
            for kind, pattern in patterns.items():
                if pattern.search(msg):
                    role = Role.CONTROLLER if name.startswith("controller") else Role.ROLLOUT
                    assert _check(line, Source(name, role, 0)) == "record", line
                    seen[kind] = seen.get(kind, 0) + 1
    assert set(Bulk) - set(seen) == UNRECORDED
