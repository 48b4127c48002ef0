"""Error lines grouped by signature, and the benign ones real runs print.

Every traceback, every ERROR/CRITICAL line that no rule classified (``SignalKind.ERROR_LINE``), every
hard death (``FATAL_SIGNAL``) and every non-zero exit the launcher or torchrun reports is an *error
event*. The store keeps them in bounded groups keyed by a signature (the message with its numbers,
ids and paths blanked), so a message printed once per step costs one group. After the detectors ran,
the groups that no finding quotes are reported as ``unexplained_error`` (``detectors/outcome.py``):
a run is never called healthy while it prints errors nobody looked at.

Healthy runs print errors that are not failures (docs/reference/cosmos-rl.md §15, "Healthy runs print
alarming lines"). The catalog's ``Benign`` entries list them, each with the reason it is harmless and where it
comes from; nothing else is ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from a1x_diagnostics import signatures
from a1x_diagnostics.events import Event, Signal, SignalKind, Traceback

MAX_GROUPS = 256  # signatures kept; errors beyond are only counted
MAX_PROCESSES = 16  # process names kept per group
SIGNATURE_CHARS = 160


@dataclass(frozen=True, slots=True)
class _Benign:
    pattern: re.Pattern[str]
    reason: str


BENIGN: tuple[_Benign, ...] = tuple(_Benign(re.compile(b.pattern, b.flags), b.reason) for b in signatures.BENIGN)
"""The catalog's benign texts (``Benign`` entries of ``a1x_diagnostics/signatures/``), compiled."""


def benign_reason(text: str) -> str | None:
    """Why an error text is harmless, or None when it is not on the list."""
    for b in BENIGN:
        if b.pattern.search(text):
            return b.reason
    return None


# --- signatures -------------------------------------------------------------------------------------------
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I)
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")
_PATH = re.compile(r"(?<![\w.])/(?:[\w.@+-]+/)+[\w.@+-]*")
_NUMBER = re.compile(r"(?<![A-Za-z_])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_SIZE = re.compile(r"\bN ?(?:[KMGTP]i?B|bytes)\b")
_SPACE = re.compile(r"\s+")


def signature(message: str) -> str:
    """``message`` with what varies between occurrences of one error blanked (ids, paths, numbers)."""
    text = _UUID.sub("<id>", message)
    text = _HEX.sub("<hex>", text)
    text = _PATH.sub("<path>", text)
    text = _SIZE.sub("<size>", _NUMBER.sub("N", text))
    return _SPACE.sub(" ", text).strip()[:SIGNATURE_CHARS]


def exception_text(tb: Traceback) -> str:
    """``Type: message`` of a traceback, or its last line."""
    if tb.exc_type:
        return f"{tb.exc_type}: {tb.exc_message}" if tb.exc_message else tb.exc_type
    return tb.lines[-1] if tb.lines else tb.text


_OUTSIDE_STOP = re.compile(r"got signal: (?:1|2|15)\b")
NOT_ERRORS = ("KeyboardInterrupt", "SystemExit")


def stopped_from_outside(tb: Traceback) -> bool:
    """torchrun's agent got SIGTERM/SIGINT/SIGHUP: the job was stopped (Ctrl-C, scancel, a supervisor),
    not a crash."""
    return (tb.exc_type or "").endswith("SignalException") and bool(_OUTSIDE_STOP.search(tb.exc_message or ""))


def message_of(event: Event) -> str | None:
    """The text an error event is known by, or None for an event that is no error (a stop from
    outside is the run's end, not an error: the outcome tells it)."""
    if isinstance(event, Traceback):
        if stopped_from_outside(event) or (event.exc_type or "").split(".")[-1] in NOT_ERRORS:
            return None
        return exception_text(event)
    if isinstance(event, Signal):
        kind = event.kind
        if kind is SignalKind.ERROR_LINE:
            return str(event.fields.get("message") or event.text)
        if kind in (SignalKind.FATAL_SIGNAL, SignalKind.CHILD_FAILED, SignalKind.PROCESS_EXITED_EARLY):
            return event.text
        if kind is SignalKind.PROCESS_FAILED:
            rc = event.fields.get("rc")
            return None if rc in (0, None) else event.text
    return None


@dataclass(slots=True)
class ErrorGroup:
    """One error signature: how often, where first and last, which processes printed it."""

    signature: str
    kind: str  # traceback | error_line | exit | fatal
    first: Event
    last: Event
    count: int = 0
    processes: list[str] = field(default_factory=list)

    def add(self, event: Event) -> None:
        self.count += 1
        self.last = event
        name = event.source.replica
        if name not in self.processes and len(self.processes) < MAX_PROCESSES:
            self.processes.append(name)


def kind_of(event: Event) -> str:
    if isinstance(event, Traceback):
        return "traceback"
    if isinstance(event, Signal) and event.kind is SignalKind.ERROR_LINE:
        return "error_line"
    if isinstance(event, Signal) and event.kind is SignalKind.FATAL_SIGNAL:
        return "fatal"
    return "exit"
