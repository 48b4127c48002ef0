"""The AlpaGym parser's needles are read from its regexes, as the open-loop rules' are (issue 14, point 1):
a needle written by hand beside a regex drifts from it (docs/parsing.md, "The catalog")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from a1x_diagnostics.alpagym import parser
from a1x_diagnostics.events import Role, Source
from a1x_diagnostics.parsing import regex_needles

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "alpagym"


def test_each_rule_s_needles_are_the_ones_its_regex_gives() -> None:
    by_regex: dict[int, list[str]] = {}
    for needle, regex, _kind, _reader in parser._RULES:
        by_regex.setdefault(id(regex), []).append(needle)
    for needle, regex, _kind, _reader in parser._RULES:
        assert by_regex[id(regex)] == list(regex_needles(regex.pattern, regex.flags)[1]), regex.pattern
        assert needle in parser.MARKERS


def test_a_regex_of_alternatives_gets_a_needle_each() -> None:
    assert regex_needles(r"Killed process (\d+)|Out of memory: (\S+)")[1] == ("Killed process ", "Out of memory: ")
    assert regex_needles(r"Session STARTING: uuid=(\S+)")[1] == ("Session STARTING: uuid=",)
    with pytest.raises(ValueError):
        regex_needles(r"(\d+)|ab")


def test_the_rules_are_the_catalog_s_entries() -> None:
    """The parser keeps no rule of its own: one rule per needle of each closed-loop entry
    (a1x_diagnostics/signatures/closed_loop.py), then of each host refusal (signatures/alpagym.py), in order."""
    want = [(needle, sig.pattern) for sig in (*parser.CLOSED_LOOP, *parser.HOST_REFUSALS)
            for needle in regex_needles(sig.pattern, sig.flags)[1]]
    assert [(needle, regex.pattern) for needle, regex, _kind, _reader in parser._RULES] == want
    assert len(parser.CLOSED_LOOP) + len(parser.HOST_REFUSALS) == len({id(r[1]) for r in parser._RULES}) > 50
    assert not {name for name, value in vars(parser).items() if isinstance(value, re.Pattern)} - {
        "_RANK", "_ALPAGYM", "_ALPASIM", "_PREFIX", "_TEED"}  # the line families' prefixes, no message


@pytest.mark.parametrize("role", [Role.LAUNCHER, Role.ROLLOUT, Role.POLICY, Role.SIMULATOR])
def test_the_needles_lose_no_line_of_the_fixtures(role: Role, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every line of the recorded runs gives the same events with the needles as with the regexes alone."""
    lines = [line for path in sorted(FIXTURES.rglob("*.log")) for line in path.read_text(errors="replace").splitlines()]
    source = Source("x.log", role, 0)
    with_needles = parser.parse_closed_loop(lines, source)
    alone = tuple(dict.fromkeys(("", regex, kind, reader) for _n, regex, kind, reader in parser._RULES))
    monkeypatch.setattr(parser, "_RULES", alone)
    assert parser.parse_closed_loop(lines, source) == with_needles
    assert len(with_needles) > 50
