"""The closed-loop entries' samples are their tests too (a1x_diagnostics/signatures/closed_loop.py): each, read by the
closed-loop parser as a line of its file (the host's capture, a rollout or policy log, AlpaSim's worker log), gives
the entry's ``CL`` event with its ``fields=``, named by this entry and no earlier one."""

from __future__ import annotations

import re
from typing import Any

import pytest

from a1x_diagnostics.alpagym import parser
from a1x_diagnostics.closed_loop_events import CL, ClosedLoop
from a1x_diagnostics.events import Role, Source
from a1x_diagnostics.signatures import closed_loop
from a1x_diagnostics.signatures.entry import Sig

SOURCE = re.compile(r"^[\w.-]+/[\w.-]+@[\w.-]+:[\w./-]+\.\w+:\d+")


def _claimed(sample: str, role: Role, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], list[Sig]]:
    """The events of ``sample`` and the entries whose rules named its lines."""
    claimed: list[Sig] = []
    sig_of = {id(regex): sig for sig in parser.RULE_SIGS for _n, regex, _k, _r in parser._RULES
              if regex.pattern == sig.pattern}

    def spy(regex: re.Pattern[str], reader: Any) -> Any:
        def read(m: re.Match[str]) -> Any:
            claimed.append(sig_of[id(regex)])
            return reader(m)
        return read

    monkeypatch.setattr(parser, "_RULES", tuple((n, rx, k, spy(rx, r)) for n, rx, k, r in parser._RULES))
    return parser.parse_closed_loop(sample.split("\n"), Source("x.log", role, 0)), claimed


@pytest.mark.parametrize("sig", closed_loop.SIGS, ids=lambda s: s.id)
def test_each_sample_gives_its_entry_s_event(sig: Sig, monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(sig.event, CL) and (sig.samples or sig.rendered), sig.id
    assert SOURCE.match(sig.source), f"{sig.id}: source {sig.source!r} names no repo@rev:file:line"
    for sample in (*sig.samples, *sig.rendered):
        events, claimed = _claimed(sample, sig.read_in or Role.LAUNCHER, monkeypatch)
        assert claimed and claimed[0] is sig, f"{sig.id}: {sample!r} named by {[s.id for s in claimed]}"
        got = [e for e in events if isinstance(e, ClosedLoop) and e.kind is sig.event]
        assert got and all(got[0].fields.get(k) == v for k, v in sig.fields.items()), (sig.id, events)
        names = re.compile(sig.pattern).groupindex
        assert set(names) <= set(got[0].fields), (sig.id, got[0].fields)


def test_fields_are_typed_by_name() -> None:
    """What the closed-loop events' consumers read: counts as ints, times and losses as floats."""
    step = closed_loop.SIGS[[s.id for s in closed_loop.SIGS].index("cl.trainer_step_end")]
    events = parser.parse_closed_loop(list(step.rendered), Source("policy_0.log", Role.POLICY, 0))
    assert events[0].fields == {"step": 1, "loss_avg": 0.01234, "kl_avg": 0.0, "clip_fraction": 0.0,  # type: ignore[attr-defined]
                                "grad_norm": 0.521, "lr": 0.0001}
