"""What is derived from the catalog held to the recorded lines of each Cosmos-RL generation.

A rule is a catalog entry's needle, gates and builder (``_rules``); what the parser and the scanner
look for comes from it (``_required``: the strings every match holds, hence its needle). These tests
read the recorded runs and driver logs of ``tests/fixtures/cosmos`` (one folder per generation) and
check, line by line, that what is derived agrees with what the regex and the parser say.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from a1x_diagnostics.events import Role, SignalKind, Source
from a1x_diagnostics.parsing import _required, _rules, classify_file, scanner_for
from a1x_diagnostics.parsing._parser import GATED_ROLES
from a1x_diagnostics.parsing._required import read, required_literals
from a1x_diagnostics.parsing._shapes import shape_of

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "cosmos"
GENERATIONS = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
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


def test_each_needle_is_read_from_its_regex() -> None:
    """The needle is the longest string every match requires that the rule's declared gates do not
    hold (else the longest), one of the strings ``_rules.literals_of`` gives the scanner."""
    for r in _rules.RULES:
        assert r.literals == (required_literals(r.pattern) or (r.needle,)), r.pattern.pattern
        assert r.needle in r.literals or any(r.needle in alt for alt in read(r.pattern.pattern, r.pattern.flags)[2])
        told = [s for s in r.literals if not any(s in g for g in r.gates if g != r.needle)] or list(r.literals)
        assert len(r.needle) == max(map(len, told)), (r.needle, told)
    dead = next(r for r in _rules.RULES if r.pattern.pattern.endswith(" is dead"))
    assert dead.needle == " is dead"  # not ``[Controller] ``: its gate ``INFO - [Controller] `` says that


def test_one_parse_compiles_the_regex_re_would() -> None:
    for r in _rules.RULES:
        assert r.pattern == re.compile(r.pattern.pattern, r.pattern.flags)
        assert r.pattern.groupindex == re.compile(r.pattern.pattern, r.pattern.flags).groupindex


def test_a_regex_of_alternatives_gets_a_needle_each() -> None:
    def needles(pattern: str) -> tuple[str, ...]:
        return _required.needles(pattern, *read(pattern)[1:])

    for pattern in (r"Killed process (\d+)|Out of memory: (\d+)", r"^(?:Killed process (\d+)|Out of memory: (\d+))$"):
        assert needles(pattern) == ("Killed process ", "Out of memory: ")
    assert needles(r"(?:open|read) (\S+)/None\b|(\S+)/None\b") == ("/None",)
    for bad in (r"\d+ (?:ab|cd)", r"Killed|\d+"):
        with pytest.raises(ValueError, match="no string"):
            needles(bad)


def test_the_line_of_the_issue_is_read() -> None:
    """``Detected 8 GPUs:`` (issue 14): the derived needle is in every line the regex matches."""
    ctx = _rules.Ctx(Source("launch.log", Role.LAUNCHER, None), 1, "Detected 8 GPUs:", None, None, None)
    events = _rules.classify_message("Detected 8 GPUs:", ctx)
    assert [e.kind for e in events] == [SignalKind.GPUS_DETECTED]  # type: ignore[attr-defined]


@pytest.mark.parametrize("generation", [g for g in GENERATIONS if any((FIXTURES / g).rglob("controller.log"))])
def test_every_recorded_event_holds_its_rule_s_needle_and_one_of_its_gates(generation: str) -> None:
    """Each recorded cosmos line of a controller or replica log that gives an event when read without
    gates (as a launcher capture is) holds, in its message, the needle of the rule that gives it and,
    in its text, one of that rule's gates; through the gates it gives the same events."""
    rules: set[str] = set()
    for name, line in _lines(generation):
        source = classify_file(Path(name))
        shape = shape_of(line)
        if source is None or source.role not in GATED_ROLES or shape.family != "cosmos":
            continue
        ctx = _rules.Ctx(source, 1, line, shape.ts, shape.level, shape.rank)
        events = _rules.classify_message(shape.msg, ctx)
        if not events:
            continue
        r = next(r for r in _rules.RULES if _rules._apply(r, shape.msg, ctx, 0) is not None)
        assert r.needle in shape.msg, (r.needle, line)
        assert any(g in line for g in r.gates), (sorted(r.gates), line)
        assert _rules.classify_gated(line, shape.msg, ctx) == events, line
        rules.add(r.pattern.pattern)
    assert len(rules) >= 10


def test_every_needle_is_inside_a_string_its_regex_requires() -> None:
    """The needle a rule is looked up by cannot be stricter than its regex (``Detected 8 GPUs:`` once
    matched the regex and missed the needle ``GPUs: ``)."""
    for r in _rules.RULES:
        assert any(r.needle in s for s in _rules.literals_of(r)), (r.needle, r.pattern.pattern)


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
    """In a controller or replica log a line under a tag gate is looked for by its rules' needles: no
    recorded line that gives an event is left out by that."""
    from a1x_diagnostics.parsing import LineParser

    lines = [line for _, line in _lines(generation) if "\r" not in line]
    for role in sorted(GATED_ROLES, key=lambda r: r.value):
        source = Source(f"{role.value}_0.log", role, None if role is Role.CONTROLLER else 0)
        taken = set(scanner_for(source).lines(lines))
        left_out = [line for i, line in enumerate(lines) if i not in taken]
        assert len(left_out) < len(lines)
        for line in left_out:
            parser = LineParser(source, keep_unknown=False)
            assert not parser.feed(1, line) + parser.flush(), (role, line)
