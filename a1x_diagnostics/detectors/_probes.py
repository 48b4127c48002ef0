"""Hits: one vocabulary for "this error was seen", whether the parser named it or not.

The parser turns the lines it knows into ``Signal`` events; the same errors also reach the logs as
the last line of a Python traceback, or as a line of a family it does not classify (a recipe
``RuntimeError`` text, a vLLM error). Detectors ask for *hits* by id and get both: the signals of
the kinds ``HIT_OF_KIND`` maps, and the tracebacks / unclaimed error lines whose text matches a
probe (the ``Hit`` entries of the catalog, ``a1x_diagnostics.signatures``, each with its source and
samples).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from a1x_diagnostics.events import Event, LogLine, Signal, SignalKind, Traceback
from a1x_diagnostics.signatures import HIT_OF_KIND, HITS


@dataclass(frozen=True, slots=True)
class Hit:
    """An event that shows error ``id``; ``fields`` holds what the text says (a name, a kind)."""

    id: str
    event: Event
    fields: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Probe:
    """A catalog ``Hit`` entry, compiled."""

    id: str
    needles: tuple[str, ...]  # any of these substrings (fast pre-check)
    pattern: re.Pattern[str] | None = None  # then this must match, if given
    kind: str | None = None  # a fixed 'kind' field for the hit


PROBES: tuple[Probe, ...] = tuple(
    Probe(h.hit, h.needles, re.compile(h.pattern, h.flags) if h.pattern else None, h.kind) for h in HITS
)
_SIGNAL_HITS = HIT_OF_KIND

_FORBIDDEN = re.compile(r"(?i)\b403\b|permission denied|upsertBucket|forbidden")
_OOM_KIND_BY_TEXT = tuple((p.needles, p.kind) for p in PROBES if p.id == "oom")


def signal_hits(signal: Signal) -> list[Hit]:
    """The hits a parser signal stands for (most map to one id; some need a look at the text)."""
    if signal.kind is SignalKind.ERROR_LINE:
        return probe_text(signal.text, signal)  # an error line no rule named: the probes still read it
    hits: list[Hit] = []
    hit_id = _SIGNAL_HITS.get(signal.kind)
    fields = dict(signal.fields)
    if signal.kind is SignalKind.OOM and fields.get("kind") == "prompt_too_long":
        hit_id = "rollout_generation_failed"  # a request longer than max_model_len: not a memory problem (§6.7)
    if hit_id is not None:
        if hit_id == "oom" and not fields.get("kind"):
            fields["kind"] = oom_kind(signal.text) or "cuda_oom"
        hits.append(Hit(hit_id, signal, fields))
    if signal.kind is SignalKind.WANDB_INIT_FAILED and (fields.get("forbidden") or _FORBIDDEN.search(signal.text)):
        hits.append(Hit("wandb_forbidden", signal, fields))
    if signal.kind is SignalKind.REDIS_FAILURE and (fields.get("rc") == 127 or "return code 127" in signal.text):
        hits.append(Hit("redis_missing", signal, fields))
    if signal.kind is SignalKind.ROLLOUT_GENERATION_FAILED and oom_kind(signal.text):
        hits.append(Hit("oom", signal, {"kind": oom_kind(signal.text)}))
    if signal.kind is SignalKind.FATAL_SIGNAL and fields.get("what") == "transport_fatal" and \
            _NCCL_CONTEXT.search(str(fields.get("detail") or "")):
        # 0.4.7's worker could not prove an NCCL operation finished and exited 86 (docs/reference/cosmos-rl.md §16.2)
        hits.append(Hit("nccl", signal, {"kind": "transport_fatal", "context": fields.get("detail")}))
    return hits


_NCCL_CONTEXT = re.compile(r"NCCL|P2R|deadline", re.I)


def oom_kind(text: str) -> str | None:
    for needles, kind in _OOM_KIND_BY_TEXT:
        if any(n in text for n in needles):
            return kind
    return None


def probe_text(text: str, event: Event) -> list[Hit]:
    """Probes over one text; at most one hit per probe id."""
    hits: list[Hit] = []
    seen: set[str] = set()
    for probe in PROBES:
        if probe.id in seen or not any(n in text for n in probe.needles):
            continue
        fields: dict[str, Any] = {}
        if probe.pattern is not None:
            match = probe.pattern.search(text)
            if match is None:
                continue
            fields = {k: v for k, v in match.groupdict().items() if v is not None}
        if probe.kind is not None:
            fields["kind"] = probe.kind
        seen.add(probe.id)
        hits.append(Hit(probe.id, event, fields))
    return hits


_PROBED_LEVELS = frozenset({None, "ERROR", "CRITICAL", "WARNING"})


def event_hits(event: Event) -> list[Hit]:
    """Every hit an event shows. Cheap for the lines that cannot matter (INFO/DEBUG log lines)."""
    if isinstance(event, Signal):
        return signal_hits(event)
    if isinstance(event, Traceback):
        tail = "\n".join(event.lines[-4:])
        if event.exc_message and event.exc_message not in tail:
            tail = f"{tail}\n{event.exc_type}: {event.exc_message}"
        return probe_text(tail, event)
    if isinstance(event, LogLine) and event.level in _PROBED_LEVELS:
        return probe_text(event.text, event)
    return []
