"""The samples are the tests: every catalog entry's sample lines give its event, and no other entry takes them.

Each ``Sig`` sample is read by the real parser as lines of the kind of file the entry's group says
(a controller log for ``controller.py``, a rollout log for ``replicas.py``, a launcher capture for
``launcher.py`` and ``other_stacks.py``, a stage log for ``recipe_hub.py``; ``read_in=`` otherwise), so an
entry whose gate its messages do not carry fails here. Each ``Hit`` sample is read by the probes.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from a1x_diagnostics.detectors._errors import benign_reason
from a1x_diagnostics.detectors._probes import probe_text
from a1x_diagnostics.events import Event, Role, Signal, SignalKind, Source
from a1x_diagnostics.parsing import LineParser, _rules
from a1x_diagnostics.signatures import BENIGN, GROUPS, HIT_OF_KIND, HITS, SIGS, Benign, Hit, Sig

GROUP_ROLE = {"controller": Role.CONTROLLER, "replicas": Role.ROLLOUT, "launcher": Role.LAUNCHER,
              "recipe_hub": Role.STAGE, "other_stacks": Role.LAUNCHER, "alpagym": Role.LAUNCHER}
# Where an entry comes from: 'repo@rev:path[:line]', or the reference section that names it.
SOURCE = re.compile(r"^[\w./-]+@[\w.-]+:\S+|^[\w./ -]+ \(|docs/reference/[\w.-]+\.(?:md|txt)|seen in \S+#\d+")


def _group(entry: Sig | Hit) -> str:
    return next(name for name, module in GROUPS.items()
                if any(entry in value for value in vars(module).values() if isinstance(value, tuple)))


def _read(sig: Sig, sample: str, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Event], list[Sig]]:
    """The events of ``sample`` read as lines of the entry's file, and the entries whose rules gave them."""
    claimed: list[Sig] = []
    apply = _rules._apply

    def spy(rule: Any, msg: str, ctx: Any, depth: int) -> Any:
        out = apply(rule, msg, ctx, depth)
        if out is not None and depth == 0:
            claimed.append(rule.sig)
        return out

    monkeypatch.setattr(_rules, "_apply", spy)
    role = sig.read_in or GROUP_ROLE[_group(sig)]
    parser = LineParser(Source(f"{role.value}_0.log", role, 0), keep_unknown=False)
    events: list[Event] = []
    for n, line in enumerate(sample.split("\n"), 1):
        events += parser.feed(n, line)
    events += parser.flush()
    return events, claimed


def _gives(sig: Sig, event: Event) -> bool:
    if isinstance(sig.event, SignalKind):
        return isinstance(event, Signal) and event.kind is sig.event and all(
            event.fields.get(k) == v for k, v in sig.fields.items())
    return type(event) is sig.event and all(getattr(event, k) == v for k, v in sig.fields.items())


@pytest.mark.parametrize("sig", SIGS, ids=lambda s: s.id)
def test_each_sample_gives_its_entry_s_event_and_no_other_entry_takes_it(sig: Sig,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    assert sig.samples or sig.rendered, f"{sig.id}: no sample line"
    for sample in (*sig.samples, *sig.rendered):
        events, claimed = _read(sig, sample, monkeypatch)
        assert claimed, f"{sig.id}: no entry read {sample!r}"
        assert claimed[0] is sig, f"{sig.id}: its sample {sample!r} is taken by {claimed[0].id}"
        assert any(_gives(sig, e) for e in events), f"{sig.id}: {sample!r} gave {events!r}"


@pytest.mark.parametrize("hit", HITS, ids=lambda h: h.id)
def test_each_hit_sample_is_marked_with_its_hit_by_this_entry(hit: Hit) -> None:
    assert hit.samples or hit.rendered, f"{hit.id}: no sample"
    first = {}
    for h in HITS:
        first.setdefault(h.hit, []).append(h)
    for sample in (*hit.samples, *hit.rendered):
        event = Signal(source=Source("x.log", Role.LAUNCHER), line=1, text=sample, kind=SignalKind.ERROR_LINE)
        got = [h for h in probe_text(sample, event) if h.id == hit.hit]
        assert got, f"{hit.id}: {sample!r} is not marked {hit.hit}"
        # the first entry of this id that matches is this one: its kind (if any) is the hit's
        assert got[0].fields.get("kind") == hit.kind, (hit.id, sample, got[0].fields)


@pytest.mark.parametrize("benign", BENIGN, ids=lambda b: b.id)
def test_each_benign_sample_is_harmless_for_this_entry_s_reason(benign: Benign) -> None:
    """The detectors ask the catalog (``detectors._errors.benign_reason``); the first entry that matches answers."""
    assert benign.samples or benign.rendered, benign.id
    for sample in (*benign.samples, *benign.rendered):
        assert benign_reason(sample) == benign.reason, (benign.id, sample)
        assert next(b for b in BENIGN if re.search(b.pattern, sample, b.flags)) is benign, (benign.id, sample)


def test_ids_are_unique_and_every_entry_says_where_it_comes_from() -> None:
    ids = [e.id for e in (*SIGS, *HITS, *BENIGN)]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    for entry in (*SIGS, *HITS, *BENIGN):
        assert SOURCE.search(entry.source), f"{entry.id}: source {entry.source!r}"


def test_signal_kinds_map_to_the_hit_ids_the_hit_entries_use() -> None:
    assert set(HIT_OF_KIND.values()) - {h.hit for h in HITS} <= {"redis_failure"}


def test_a_new_entry_is_read_where_its_group_says() -> None:
    """What an added entry needs: its data alone. Added to a copy of the catalog, its sample reads."""
    sig = Sig("example.nccl_readiness", r"nccl readiness failed(?:: (?P<error>.*))?$", SignalKind.NCCL_ERROR,
              fields={"kind": "readiness"}, source="docs/reference/cosmos-rl.md §14 (example)",
              samples=("[cosmos] 2026-12-01 10:00:00,000 - cosmos - ERROR - nccl readiness failed: timeout",))
    rules = _rules.rules_of((sig,))
    ctx = _rules.Ctx(Source("rollout_0.log", Role.ROLLOUT, 0), 1, sig.samples[0], None, "ERROR", None)
    events = _rules.classify_with(rules, "nccl readiness failed: timeout", ctx)
    assert [(e.kind, dict(e.fields)) for e in events] == [  # type: ignore[attr-defined]
        (SignalKind.NCCL_ERROR, {"kind": "readiness", "error": "timeout"})]
