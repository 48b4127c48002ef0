"""The catalog's line entries as rules: what the parser tries on a message, derived from each entry.

An entry (``a1x_diagnostics.signatures.Sig``) says its regex, its event and its gate. From it come:

- **its needle**, the quick ``in`` test before the regex: the longest string that every match of the
  regex holds and that its gates do not already say (``_required``, from ``re``'s own parse). A regex
  ``A|B`` that requires no string as a whole gets one needle per alternative (one rule each, sharing
  regex and event); a regex that requires none is refused at import;
- **its gates** in controller and replica logs: ``LEVEL`` plus the entry's ``gate`` (``OWN``: its needle);
- **its builder**: a ``Signal`` of the entry's kind with the regex's named groups as fields, or the
  entry's event class with the groups of its field names converted to the field's type.

``classify_message`` tries the rules whose needles occur in the message, in catalog order, and returns
the first match. A wrapper (a failure that quotes another error: ``Failed in rollout generation: {e}``)
also classifies the quoted error, so ``... : CUDA out of memory`` gives both signals.
"""

from __future__ import annotations

import functools
import re
import signal as _signal
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from a1x_diagnostics.events import Event, Signal, SignalKind, Source
from a1x_diagnostics.parsing._build import MAX_TEXT, ctx_maker
from a1x_diagnostics.parsing._required import needles as needles_from
from a1x_diagnostics.parsing._required import read as read_regex
from a1x_diagnostics.signatures import GROUPS as SIGNATURE_GROUPS
from a1x_diagnostics.signatures import OWN, SIGS, Sig
from a1x_diagnostics.signatures.entry import FOREIGN, LEVEL
from a1x_diagnostics.signatures.fields import MAX_FIELD, cap, to_float, to_int

LEVEL_GATES = LEVEL
FOREIGN_GATES = FOREIGN
__all__ = ["FOREIGN_GATES", "LEVEL_GATES", "MAX_FIELD", "cap"]


@dataclass(slots=True)
class Ctx:
    """Where a message was read: the common fields of every event built from it."""

    source: Source
    line: int
    text: str
    ts: datetime | None
    level: str | None
    rank: int | None

    def kw(self) -> dict[str, Any]:
        return {"source": self.source, "line": self.line, "text": cap(self.text, MAX_TEXT), "ts": self.ts,
                "level": self.level, "rank": self.rank}


Builder = Callable[[Any, Ctx], Event | None]  # gets a re.Match (or a _MatchView with the same API)


@dataclass(frozen=True, slots=True)
class Rule:
    """One needle of one catalog entry, ready to be tried."""

    needle: str
    pattern: re.Pattern[str]
    build: Builder
    wrapper: bool
    gates: frozenset[str]  # in replica/controller logs: the line must hold one of these
    alt_groups: bool  # the regex has ``<name>2`` alternatives to fold into ``<name>``
    literals: tuple[str, ...]  # the strings every match holds (``_required``), else ``(needle,)``
    sig: Sig


# ---------------------------------------------------------------- builders


def _auto(v: str | None) -> Any:
    if v is None:
        return None
    if v.isdigit() or (v[:1] == "-" and v[1:].isdigit()):
        return int(v)
    return cap(v, MAX_FIELD)


_make_signal = ctx_maker(Signal)


def _signal_builder(sig: Sig) -> Builder:
    kind: SignalKind = sig.event  # type: ignore[assignment]
    const = dict(sig.fields)
    read = sig.read

    def build(m: Any, c: Ctx) -> Event | None:
        got: dict[str, Any] = dict(const)
        for k, v in m.groupdict().items():
            got[k] = _auto(v)
        if read is not None:
            extra = read(m)
            if extra is None:
                return None
            got.update(extra)
        return _make_signal(c, kind=kind, fields=got)

    return build


def _converter(hint: Any) -> tuple[Callable[[str | None], Any], bool]:
    """How a named group becomes a field of this type, and whether the field may be None."""
    args = typing.get_args(hint)
    optional = type(None) in args or hint is None
    base = next((a for a in args if a is not type(None)), hint) if args and isinstance(hint, types.UnionType) else hint
    if base is int:
        return to_int, optional
    if base is float:
        return to_float, optional
    if base is str:
        return (lambda v: None if v is None else cap(v, MAX_FIELD)), optional
    return (lambda v: v), True


@functools.cache
def _conversions(cls: type) -> dict[str, tuple[Callable[[str | None], Any], bool]]:
    hints = typing.get_type_hints(cls)
    return {f.name: _converter(hints[f.name]) for f in fields(cls)}


def _event_builder(sig: Sig, pattern: re.Pattern[str]) -> Builder:
    cls: type = sig.event  # type: ignore[assignment]
    make: Callable[..., Event] = ctx_maker(cls)
    conversions = _conversions(cls)
    names = tuple(k for k in pattern.groupindex if k in conversions)  # the groups that are fields
    steps = tuple((k, *conversions[k]) for k in names)
    const = dict(sig.fields)
    read = sig.read

    def build(m: Any, c: Ctx) -> Event | None:
        got = dict(const)
        for (name, convert, optional), text in zip(steps, m.group(*names) if len(names) > 1 else
                                                   (m.group(names[0]),) if names else (), strict=True):
            value = convert(text)
            if value is None and not optional:
                return None  # a required number the text does not give
            got[name] = value
        if read is not None:
            extra = read(m)
            if extra is None:
                return None
            got.update(extra)
        return make(c, **got)

    return build


# ---------------------------------------------------------------- the rules, in catalog order


def rules_of(sigs: Iterable[Sig]) -> tuple[Rule, ...]:
    """The rules of ``sigs``, in their order."""
    out: list[Rule] = []
    for sig in sigs:
        pattern, literals, alternatives = read_regex(sig.pattern, sig.flags)
        own = sig.gate is OWN
        declared: tuple[str, ...] = () if own else sig.gate  # type: ignore[assignment]
        needles = needles_from(pattern.pattern, literals, alternatives, (*LEVEL_GATES, *declared))
        build = _signal_builder(sig) if isinstance(sig.event, SignalKind) else _event_builder(sig, pattern)
        alt_groups = any(k.endswith("2") for k in pattern.groupindex)
        for needle in needles:
            gates = frozenset((*LEVEL_GATES, *((needle,) if own else declared)))
            out.append(Rule(needle, pattern, build, sig.wrapper, gates, alt_groups, literals or (needle,), sig))
    return tuple(out)


RULES: tuple[Rule, ...] = rules_of(SIGS)
NEEDLES: tuple[str, ...] = tuple(dict.fromkeys(r.needle for r in RULES))
GATES: tuple[str, ...] = tuple(sorted({g for r in RULES for g in r.gates}))
PROCESS_FAILED_PATTERN = next(r.pattern.pattern for r in RULES if r.sig.id == "process_failed.failed_with_return_code")
"""The launcher's 'Process {i} failed with return code {rc}' (``a1x_diagnostics.parsing.PROCESS_FAILED_RE``)."""


def literals_of(r: Rule) -> tuple[str, ...]:
    """What a line must hold for ``r`` to give an event: the strings every match of its regex holds."""
    return r.literals


def present_gates(line: str) -> frozenset[str]:
    """The gates a raw line holds (empty for most noise lines)."""
    return frozenset([g for g in GATES if g in line])


_HEAD_SIGS = frozenset(id(s) for s in (*SIGNATURE_GROUPS["controller"].SIGS, *SIGNATURE_GROUPS["replicas"].SIGS))
_HEAD_N = next(i for i, r in enumerate(RULES) if id(r.sig) not in _HEAD_SIGS)
_HEAD = tuple((r, (*sorted(r.gates - set(LEVEL_GATES)), *LEVEL_GATES)) for r in RULES[:_HEAD_N])


@functools.lru_cache(maxsize=1024)
def _tail(gates: frozenset[str]) -> tuple[Rule, ...]:
    return tuple(r for r in RULES[_HEAD_N:] if not gates.isdisjoint(r.gates))


@functools.lru_cache(maxsize=1024)
def _eligible(gates: frozenset[str] | None) -> tuple[Rule, ...]:
    """Rules a line with these gates may match, in catalog order (``None``: every rule)."""
    if gates is None:
        return RULES
    return tuple(r for r in RULES if not gates.isdisjoint(r.gates))


def classify_message(msg: str, ctx: Ctx, gates: frozenset[str] | None = None) -> list[Event]:
    """The events one message means (usually zero or one; a wrapper adds its cause). ``gates``: those
    of the raw line (replica/controller logs); ``None`` reads without gates."""
    return classify_with(_eligible(gates), msg, ctx)


def classify_gated(line: str, msg: str, ctx: Ctx) -> list[Event]:
    """``classify_message(msg, ctx, present_gates(line))``, faster for the frequent lines: the rules of
    the catalog's first sections (``HEAD``: the controller's metrics, the replicas' weight syncs,
    checkpoints and configs, most of a run's events) are tried needle first, each looking for its own
    gates; only a line none of them takes pays for finding every gate it holds."""
    for r, gates in _HEAD:
        if r.needle in msg:
            for g in gates:
                if g in line:
                    out = _apply(r, msg, ctx, 0)
                    if out is not None:
                        return out
                    break
    key = tuple([g for g in GATES if g in line])
    return classify_with(_tail(frozenset(key)), msg, ctx) if key else []


# A long list of rules (every rule is eligible on a WARNING line of a replica log, and on every line of a
# launcher capture) is narrowed to those whose needle the message holds once per message: the same
# warnings come from every replica and every step of a run.
_LONG = 32
_NARROWED: dict[tuple[int, str], tuple[tuple[Rule, ...], tuple[Rule, ...]]] = {}


def classify_with(rules: tuple[Rule, ...], msg: str, ctx: Ctx, _depth: int = 0) -> list[Event]:
    """The first of ``rules`` whose needle occurs, whose regex matches and whose builder accepts."""
    if len(rules) > _LONG:
        key = (id(rules), msg)
        known = _NARROWED.get(key)
        if known is None or known[0] is not rules:
            if len(_NARROWED) >= 4096:
                _NARROWED.clear()
            known = _NARROWED[key] = (rules, tuple(r for r in rules if r.needle in msg))
        rules = known[1]
    for r in rules:
        if r.needle in msg:
            out = _apply(r, msg, ctx, _depth)
            if out is not None:
                return out
    return []


def _apply(r: Rule, msg: str, ctx: Ctx, depth: int) -> list[Event] | None:
    m = r.pattern.search(msg)
    if m is None:
        return None
    event = r.build(_MatchView(m) if r.alt_groups else m, ctx)
    if event is None:
        return None
    out = [event]
    if r.wrapper and depth == 0:
        err = m.groupdict().get("error") or ""
        out.extend(e for e in classify_with(RULES, err, ctx, 1) if not _is_wrapper(e))
    return out


_WRAPPER_KINDS = frozenset(s.event for s in SIGS if s.wrapper)


def _is_wrapper(e: Event) -> bool:
    return isinstance(e, Signal) and e.kind in _WRAPPER_KINDS


class _MatchView:
    """A match whose ``groupdict`` folds the ``<name>2`` alternatives of a regex into ``<name>``."""

    __slots__ = ("_m",)

    def __init__(self, m: re.Match[str]) -> None:
        self._m = m

    def groupdict(self) -> dict[str, str | None]:
        d = self._m.groupdict()
        for k in [k for k in d if k.endswith("2")]:
            v = d.pop(k)
            if d.get(k[:-1]) is None:
                d[k[:-1]] = v
        return d

    def group(self, *a: Any) -> Any:
        return self._m.group(*a)

    @property
    def string(self) -> str:
        return self._m.string


def child_signal_name(exitcode: int | None) -> str | None:
    """``-9`` -> ``SIGKILL`` (torchrun reports a signal death as a negative exit code)."""
    if exitcode is None or exitcode >= 0:
        return None
    try:
        return _signal.Signals(-exitcode).name
    except ValueError:
        return None


def needles_in(texts: Iterable[str]) -> set[str]:
    """Needles that occur in any of ``texts`` (for tests)."""
    return {n for n in NEEDLES for t in texts if n in t}
