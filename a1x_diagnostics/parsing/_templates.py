"""Bulk line shapes: one text per shape, from which its regex, C template, fields and record derive.

A few exact shapes make most of a run's events (controller ``Stat:`` and ``weight staleness:``,
weight-sync timings, ``prompt rejected``, the GRPO ``Step:`` line; docs/reference/cosmos-rl.md §4.3-§4.5, §5.2,
§6.2, §6.3). Each is written once, as its level and message with typed fields::

    INFO - [Controller] Stat: {samples:int} samples, ... {elapsed_s:float}s elapsed

and from that text come: the Python rule's regex (``_rules``: the whole message must match), the
byte template ``a1x_diagnostics/_scan.c`` matches the whole line against, the fields a record keeps,
and the record class (a named tuple ``kind, line, rank, ts, raw, *fields``) the C scanner fills.
Numbers are only tokenised in C (a run of the type's characters); their values are Python's own
(``float()``/``int()`` through the C API), and a token Python refuses makes the line a candidate.
``{_:type}`` checks a field without keeping it; ``{{``/``}}`` are literal braces.
"""

from __future__ import annotations

import enum
import re
from collections import namedtuple
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

RECORD_HEAD = ("kind", "line", "rank", "ts", "raw")
"""What every record starts with: its template, line number, torchrun rank (or None), epoch time, raw bytes."""


class Bulk(enum.IntEnum):
    """The bulk shapes, by index (a record's ``kind``)."""

    STAT = 0
    STAT_OLD = 1
    STALENESS = 2
    PROMPT_REJECTED = 3
    SEND_DONE = 4
    RECV_DONE = 5
    DYNAMIC_OUTDATED = 6
    PREFETCH = 7
    STEP = 8
    RECV_DONE_OLD = 9
    TRAIN_REPORT = 10


FAMILY: dict[Bulk, Bulk] = {**{k: k for k in Bulk}, Bulk.STAT_OLD: Bulk.STAT, Bulk.RECV_DONE_OLD: Bulk.RECV_DONE}
"""The family of each shape: both shapes of a line feed the same store and series, in line order."""
MOVES_STEP = frozenset({Bulk.STEP, Bulk.TRAIN_REPORT})
"""The shapes whose records move the metrics' step, as their events do: taken in place, between the
others (``a1x_diagnostics.columns``), and never beside a batch (``_bulk``)."""


# type -> (code of a1x_diagnostics/_scan.c, regex of the same characters, the characters of a number, Python value)
_TYPES: dict[str, tuple[int, str, str, Callable[[str], Any]]] = {
    "int": (1, r"[0-9]{1,18}", "0123456789", int),
    "float": (2, r"[0-9.eE+-]{1,64}", "0123456789.eE+-", float),
    "sint": (3, r"-?[0-9]{1,18}", "0123456789-", int),
    "int?": (4, r"[0-9]{1,18}|None", "0123456789", lambda v: None if v == "None" else int(v)),
    "count": (5, r"0|[1-9][0-9]{0,17}", "0123456789", int),
    "word": (6, r"[A-Za-z0-9_]{1,63}", "", str),
    "token": (7, r"[!-~]{1,63}(?= |$)", "", str),
    "time": (8, r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}", "", str),
    "rest": (9, r"(?: [^\r]*)?", "", str),
    "text": (10, r"[^\r]*", "", str),  # the rest of the line, kept: for the shape's fold to read
}
_NO_FIELD = frozenset({"time", "rest"})  # checked where they stand, never kept
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*):([a-z?]+)\}")
_LEVEL = re.compile(r"(DEBUG|INFO|WARNING|ERROR|CRITICAL) - ")


@dataclass(frozen=True)
class Template:
    """One bulk shape. ``event``: the event class a line of it gives (through its rule in ``_rules``,
    or, for a whole-line template, through its family's own parser: prefetch lines); ``const``: the
    event fields the shape fixes; ``fold``: the kept fields -> the event's keyword arguments, where
    they differ."""

    kind: Bulk
    text: str
    event: type | None = None
    const: Mapping[str, Any] = field(default_factory=dict)
    fold: Callable[[dict[str, Any]], dict[str, Any]] | None = None

    @property
    def level(self) -> str | None:
        """The cosmos level the line is logged at; None for a template of a whole line (``[...``)."""
        m = _LEVEL.match(self.text)
        return m.group(1) if m else None

    @property
    def message(self) -> str:
        """The template without its level: what the message of the line must be."""
        m = _LEVEL.match(self.text)
        return self.text[m.end() :] if m else self.text

    def parts(self) -> list[tuple[str, str | None, str | None]]:
        """``(literal, name, type)`` pieces of the whole template, in order (name/type None at the end)."""
        out: list[tuple[str, str | None, str | None]] = []
        pos = 0
        for m in _PLACEHOLDER.finditer(self.text):
            out.append((_unbrace(self.text[pos : m.start()]), m.group(1), m.group(2)))
            pos = m.end()
        out.append((_unbrace(self.text[pos:]), None, None))
        return out


def _unbrace(text: str) -> str:
    return text.replace("{{", "{").replace("}}", "}")


def fields_of(t: Template) -> tuple[str, ...]:
    """The names a record of ``t`` keeps after ``RECORD_HEAD``, in order."""
    return tuple(n for _, n, ty in t.parts() if n is not None and n != "_" and ty not in _NO_FIELD)


def c_template(t: Template) -> bytes:
    """The byte template ``a1x_diagnostics/_scan.c`` matches a whole line against (its codes: ``_TYPES``;
    with the high bit set, checked and not handed back)."""
    out = bytearray()
    parts = t.parts()
    for i, (literal, name, ty) in enumerate(parts):
        out += literal.encode()
        if ty is None:
            continue
        code, _, digits, _ = _TYPES[ty]
        nxt = parts[i + 1][0][:1]
        # A number is read as the longest run of its characters, as its regex reads it greedily: the
        # text after it must not start with one of them.
        if nxt and nxt in digits:
            raise ValueError(f"{t.kind.name}: {nxt!r} after a {ty} field")
        out.append(code | (0x80 if name == "_" and ty not in _NO_FIELD else 0))
    return bytes(out)


def message_pattern(t: Template) -> str:
    """The regex the whole message of a line of ``t`` matches (``_rules``: searched, anchored both ends)."""
    out = []
    for literal, name, ty in Template(t.kind, t.message).parts():
        out.append(re.escape(literal))
        if ty is None:
            continue
        chars = _TYPES[ty][1]
        out.append(f"(?P<{name}>{chars})" if name != "_" and ty not in _NO_FIELD else f"(?:{chars})")
    return "^" + "".join(out) + r"\Z"


def convert(t: Template, groups: Mapping[str, str | None]) -> dict[str, Any] | None:
    """The kept fields of a match of ``message_pattern(t)`` as Python reads them; None where Python
    refuses one (``float('1.2.3')``: the line is then read by the shape's general rule)."""
    types = {n: ty for _, n, ty in t.parts() if n is not None and ty is not None}
    out: dict[str, Any] = {}
    for name, raw in groups.items():
        if raw is None:
            continue
        try:
            out[name] = _TYPES[types[name]][3](raw)
        except ValueError:
            return None
    return out


def event_kwargs(t: Template, fields: dict[str, Any]) -> dict[str, Any]:
    """The event's keyword arguments (beyond the line's context) for ``fields`` of a line of ``t``."""
    return {**t.const, **(t.fold(fields) if t.fold is not None else fields)}


def _named(name: str, fields: tuple[str, ...]) -> type:
    """A named tuple class this module holds by its name, so that pickle finds it: ``a1x-tui --check``'s
    child process hands its records back pickled (``a1x_diagnostics.reader_process``)."""
    cls = globals().get(name)
    if cls is None or cls._fields != fields:
        cls = globals()[name] = namedtuple(name, fields, module=__name__)
    return cls


def record_class(t: Template) -> type:
    """The named tuple a record of ``t`` is (``RECORD_HEAD`` then ``fields_of(t)``): one class for a
    shape, however often it is asked for."""
    return _named(f"{t.kind.name.title().replace('_', '')}Record", (*RECORD_HEAD, *fields_of(t)))


BATCH_FIELDS = ("kind", "line", "n", "last_line", "lo", "hi", "ts", "values", "latest", "kept", "offset", "nbytes",
                "lineno0")
"""A batch: one family's records of a stretch of a block in columns (``a1x_diagnostics/_scan.c``,
``chunk``'s ``batches``): ``kind`` its family, ``line`` its first record's line, ``n`` records up to
``last_line``, times from ``lo`` to ``hi``, ``ts`` and ``values`` (its value field) of each as native doubles in bytes,
``latest`` the greatest (time, step) of those with a step, ``kept`` its first and last records
(``_bulk.BATCH_KEEP`` of each end; all of them up to twice that), and the block it was read from
(``offset``, ``nbytes``, ``lineno0``: ``_bulk.unbatch``)."""
BATCHED: dict[Bulk, tuple[str | None, str | None]] = {Bulk.SEND_DONE: (None, None),
                                                        Bulk.RECV_DONE: ("seconds", "step")}
"""The families read in batches, with their value field and step field: a weight send or receive per
step per replica, most of a dense run's records (docs/parsing.md, "Tenth pass")."""
BATCHES: dict[Bulk, type] = {family: _named(f"{family.name.title().replace('_', '')}Batch", BATCH_FIELDS)
                             for family in BATCHED}
"""The batch class (a named tuple of ``BATCH_FIELDS``) of each family read in batches."""
BATCH_TYPES: frozenset[type] = frozenset(BATCHES.values())


# ---------------------------------------------------------------- the shapes (docs/reference/cosmos-rl.md §4.3-§4.5, §6.2, §6.3)  # noqa: E501
# Each shape's line is also read by its catalog entry (``a1x_diagnostics.signatures``); a test holds the
# two to the same event.

TEMPLATES: dict[Bulk, Template] = {}


def _add(t: Template) -> None:
    TEMPLATES[t.kind] = t


def _pairs(f: dict[str, Any]) -> dict[str, Any]:
    from a1x_diagnostics.signatures.fields import report_pairs

    class _M:  # report_pairs reads a match's 'pairs' group
        @staticmethod
        def group(name: str) -> Any:
            return f["pairs"]

    return {"rollouts": f["rollouts"], **report_pairs(_M())}  # type: ignore[arg-type]


def _define() -> None:
    from a1x_diagnostics.events import (
        DynamicSampling,
        Prefetch,
        PromptRejected,
        Staleness,
        Stat,
        Step,
        SyncPhase,
        TrainReport,
        WeightSync,
    )

    _RECV = ("INFO - [Rollout] All {_:int} at step {step:int?} recv operations finished in {seconds:float} "
             "seconds with {megabytes:float} MB received.")
    _DONE = {"queue_depth": None}
    _add(Template(Bulk.STAT, "INFO - [Controller] Stat: {samples:int} samples, {completion_tokens:int} completion "
                            "tokens, {pending:int} pending rollouts, {in_flight:int} in-flight, {outdated_filtered:int} "  # noqa: E501
                            "filtered (outdated), {elapsed_s:float}s elapsed", Stat))
    _add(Template(Bulk.STAT_OLD, "INFO - [Controller] Stat: {samples:int} samples, {completion_tokens:int} "
                           "completion tokens, {pending:int} pending rollouts, {elapsed_s:float} seconds elapsed", Stat,
                           {"in_flight": None, "outdated_filtered": None}))
    _add(Template(Bulk.STEP, "INFO - Step: {step:int}/{total:int}, Reward Mean: {reward_mean:float}, Reward Std: "
                           "{reward_std:float}, Reward Max: {reward_max:float}, Reward Min: {reward_min:float}, Completion "  # noqa: E501
                           "Length Mean: {completion_length_mean:float}, Completion Length Max: "
                           "{completion_length_max:float}, Average loss: {loss_avg:float}, Max loss: {loss_max:float}, "
                           "Learning rate: {learning_rate:float}, Entropy: {entropy:float}, Effective Entropy: "
                           "{effective_entropy:float}, Grad Norm: {grad_norm:float}, KL Loss Avg: {kl_loss_avg:float}, KL "  # noqa: E501
                           "Loss Max: {kl_loss_max:float}, Iteration time: {iteration_time_s:float}s.", Step))
    _add(Template(Bulk.TRAIN_REPORT, "INFO - [Controller] Train report data from total {rollouts:int} rollouts: "
                           "{pairs:text}", TrainReport,
                           fold=_pairs))
    _add(Template(Bulk.DYNAMIC_OUTDATED, "INFO - Dynamic sampling rewards distribution so far: "
                           "{{'outdated': {outdated:count}}}.", DynamicSampling, fold=lambda f: {"counts": dict(f)}))
    _add(Template(Bulk.STALENESS, "INFO - [Controller] weight staleness: accepted p50={p50:sint} p99={p99:sint} "
                           "max={max:sint}, discarded={discarded:int}/{total:int} (allowed_outdated_steps="
                           "{allowed_outdated_steps:sint}, sync_weight_interval={sync_weight_interval:sint})", Staleness))  # noqa: E501
    _add(Template(Bulk.RECV_DONE, _RECV + " While {_:int} non-trainable splitted params skipped and {_:int} "
                           "trainable splitted params transferred.", WeightSync, {"phase": SyncPhase.RECV_DONE, **_DONE}))  # noqa: E501
    _add(Template(Bulk.RECV_DONE_OLD, _RECV, WeightSync, {"phase": SyncPhase.RECV_DONE, **_DONE}))
    _add(Template(Bulk.SEND_DONE, "DEBUG - [Policy] All {_:int} at step {step:int?} send operations of "
                           "finished in {seconds:float} seconds with {megabytes:float} MB sent. While {_:int} "
                           "non-trainable splitted params skipped and {_:int} splitted params transferred.", WeightSync,
                           {"phase": SyncPhase.POLICY_SEND_DONE, **_DONE}))
    _add(Template(Bulk.PROMPT_REJECTED, "INFO - [Rollout rank={_:int}] prompt rejected: prompt.weight_version="
                           "{prompt_version:sint} current_weight_version={current_version:sint} allowed_outdated="
                           "{allowed_outdated:sint} ceiling={ceiling:sint}; head-of-queue will be re-checked until "
                           "current_weight_version advances", PromptRejected))
    _add(Template(Bulk.PREFETCH, "[AlpamayoPrefetch][{_:word}] {_:time} pid={_:int} {event:token}{_:rest}",
                           Prefetch))

_define()
