"""The early reject of gated lines (``gated_rule_possible``, before ``shape_of``) changes no event.

A replica or controller line that holds a tag gate but none of the needles that gate lets through
is dropped by ``LineParser(keep_unknown=False)`` before its prefix is read; the events must be
those of the full reading (``keep_unknown=True``) without its ``LogLine`` events.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from parsing_helpers import SOURCES, cosmos

from a1x_diagnostics.events import Event, LogLine, Role
from a1x_diagnostics.parsing import LineParser
from a1x_diagnostics.parsing._parser import GROUP_STARTS
from a1x_diagnostics.parsing._rules import GATES, NEEDLES, Ctx, classify_gated, gated_rule_possible
from a1x_diagnostics.parsing._shapes import shape_of

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "cosmos"
_TAGS = ["[Rollout] ", "[Rollout rank=2] ", "[Policy] ", "[Controller] ", "[Worker] ", "[WeightSyncThread] "]
_WORDS = ["Generation batch 3 finished", "Received 12 rollouts", "weight sync receives", "x", ", ", " ",
          "Traceback (most recent call last):", "[AlpamayoPrefetch]", "  File \"a.py\", line 3, in f",
          "RuntimeError: boom", "Root Cause (first observed failure):", "  exitcode  : -9 (pid: 12)"]


def _lines(rng: random.Random, n: int) -> list[str]:
    pieces = [*GATES, *NEEDLES, *_WORDS, *_TAGS]
    out: list[str] = []
    for _ in range(n):
        msg = rng.choice(_TAGS) + "".join(rng.choice(pieces) for _ in range(rng.randint(0, 3)))
        if rng.random() < 0.8:
            out.append(cosmos(msg, rng.choice(["INFO", "DEBUG", "WARNING"]), rng.choice([None, 0, 5])))
        else:
            out.append(rng.choice(["", "[rank1]:"]) + msg)
    return out


def _fixture_lines() -> list[str]:
    lines: list[str] = []
    for path in sorted(FIXTURES.rglob("*")):
        if path.is_file() and path.suffix in (".log", ".out", ".err"):
            lines += path.read_bytes().decode("utf-8", "replace").split("\n")
    return lines


def test_a_line_judged_hopeless_gets_nothing_from_the_rules() -> None:
    rng = random.Random(11)
    rejected = 0
    for i, line in enumerate(_lines(rng, 20000) + _fixture_lines()):
        if gated_rule_possible(line):
            continue
        rejected += 1
        shape = shape_of(line)
        assert classify_gated(line, shape.msg, Ctx(SOURCES[Role.ROLLOUT], i, line, None, None, None)) == [], line
    assert rejected > 1000  # the generator does make such lines (INFO tag lines without a needle)


@pytest.mark.slow  # every recorded line read twice
@pytest.mark.parametrize("role", [Role.ROLLOUT, Role.POLICY, Role.CONTROLLER])
def test_parser_with_early_reject_gives_the_events_of_the_full_reading(role: Role) -> None:
    rng = random.Random(5)
    lines = _lines(rng, 6000) + _fixture_lines()
    source = SOURCES[role]

    def run(keep_unknown: bool) -> list[Event]:
        parser = LineParser(source, keep_unknown=keep_unknown)
        out: list[Event] = []
        for n, text in enumerate(lines, 1):
            out.extend(parser.feed(n, text))
        out.extend(parser.flush())
        return [e for e in out if not isinstance(e, LogLine)]

    fast, full = run(False), run(True)
    assert repr(fast) == repr(full)  # repr: nan fields compare equal
    assert any(start in line for line in lines for start in GROUP_STARTS)
