"""``ClosedLoopParser``: the lines of one file of an AlpaGym run in, closed-loop events out. Pure.

Line families (docs/reference/alpagym.md §4):

- **AlpaGym** (``%(asctime)s %(levelname)s %(name)s: %(message)s``): the host's own lines, and in
  the Cosmos-RL replica logs the rollout worker's and the trainer's (behind torchrun's ``[rankN]:``);
- **AlpaSim** runtime worker (``HH:MM:SS.mmm [W<n>] LEVEL:\\t<message>``, no date; without the
  ``[W<n>]`` in the runtime's own root logger);
- exception lines of tracebacks (``RuntimeError: AlpaSim Wizard exited ...``), read anywhere in a line;
- in a captured host terminal, the role logs the host tees (``controller  | ...``, ``rollout_0   | ...``)
  are skipped (the files themselves are read), other ``name | `` prefixes (docker compose's) peeled.

Cosmos-RL's own lines are the open-loop parser's (``a1x_diagnostics.parsing``); this parser reads only
what it names, plus the controller port the launcher chose. Only lines holding one of ``MARKERS``
can give an event.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from a1x_diagnostics.closed_loop_events import CL, ClosedLoop
from a1x_diagnostics.events import Event, Role, Signal, SignalKind, Source
from a1x_diagnostics.parsing import regex_needles
from a1x_diagnostics.signatures.alpagym import SIGS as HOST_REFUSALS
from a1x_diagnostics.signatures.closed_loop import SIGS as CLOSED_LOOP
from a1x_diagnostics.signatures.entry import Sig

_RANK = re.compile(r"\[rank(\d+)\]: ?")
_ALPAGYM = re.compile(
    r"(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) (?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<name>[\w.-]+): "
    r"(?P<msg>.*)$"
)
_ALPASIM = re.compile(r"(?P<clock>\d\d:\d\d:\d\d\.\d{3}) (?:\[W(?P<worker>\d+)\] )?(?P<level>[A-Z]+):\t(?P<msg>.*)$")
# A prefix ``name | `` before a line (docker compose's services; the host's tee of the role logs), colours kept
_PREFIX = re.compile(r"(?:\x1b\[[0-9;]*m)?(?P<name>[\w.-]+) *\|(?:\x1b\[0m)? ?(?P<rest>.*)$")
_TEED = re.compile(r"(?:controller|(?:policy|rollout|reference)_\d+)")
MAX_TEXT = 8192
MAX_FIELD = 600

Fields = dict[str, Any]
Reader = Callable[[re.Match[str]], Fields]


def _i(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _f(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _clip(text: str) -> str:
    return text if len(text) <= MAX_FIELD else text[:MAX_FIELD] + "…"


def _dict(text: str) -> dict[str, float]:
    """``{'collision_any': '0.0000', ...}`` as AlpaSim's eval logger prints it (values as strings)."""
    out: dict[str, float] = {}
    for key, value in re.findall(r"'([\w.-]+)': '?(-?[\d.eE+-]+|nan|inf|-inf)'?", text):
        number = _f(value)
        if number is not None:
            out[key] = number
    return out


def _refusal(sig: Sig) -> Reader:
    """The fields of a host refusal as the catalog entry ``sig`` reads them: its reason, the message, the GPU counts."""
    reason = sig.fields["reason"]

    def read(m: re.Match[str]) -> Fields:
        found = m.groupdict()
        out: Fields = {"reason": reason, "message": _clip(found["message"])}
        out.update({k: _i(found[k]) for k in ("available", "required") if found.get(k) is not None})
        return out

    return read


# The fields of a closed-loop entry's named groups, typed by name (docs/reference/alpagym.md §4); others stay strings.
_INTS = frozenset({"policy_replicas", "rollout_replicas", "runtime_index", "port", "capacity", "count", "code", "last",
                   "http", "n_sim_steps", "closed_loop_steps", "expected_valid_steps", "produced", "max_concurrent",
                   "payloads", "seed", "recorded_steps", "attempt", "retries_left", "prompt_idx", "collected", "target",
                   "of", "step", "total", "received", "group_size", "valid_steps", "padded_steps", "stale", "kept",
                   "min_allowed", "steps", "worker"})
_FLOATS = frozenset({"loss_avg", "kl_avg", "clip_fraction", "grad_norm", "lr", "reward", "sim_s", "wall_s", "total_s"})


def _value(name: str, text: str) -> Any:
    if name in _INTS:
        return _i(text)
    if name in _FLOATS:
        return _f(text)
    if name == "validation":
        return text == "True"
    if name == "metrics":
        return _dict(text)
    return _clip(text) if name in ("error", "message") else text


def _reader(sig: Sig) -> Reader:
    """A closed-loop entry's fields: its ``fields=``, then its named groups, typed (``_value``)."""
    const = dict(sig.fields)

    def read(m: re.Match[str]) -> Fields:
        out = dict(const)
        out.update({k: _value(k, v) for k, v in m.groupdict().items() if v is not None})
        return out

    return read


def _rule(sig: Sig) -> tuple[CL, Reader]:
    if isinstance(sig.event, CL):
        return sig.event, _reader(sig)
    return CL.HOST_CONFIG_REJECTED, _refusal(sig)


# The catalog's closed-loop entries (a1x_diagnostics/signatures/closed_loop.py), then the host's refusals
# (signatures/alpagym.py): (needle, regex, kind, reader). Each regex's needles are read from it
# (``a1x_diagnostics.parsing.regex_needles``); a regex ``A|B`` gets a rule per needle, in place, as the open-loop
# rules do (docs/parsing.md). Order matters: the first rule whose regex matches names the line.
RULE_SIGS: tuple[Sig, ...] = (*CLOSED_LOOP, *HOST_REFUSALS)
_RULES: tuple[tuple[str, re.Pattern[str], CL, Reader], ...] = tuple(
    (needle, regex, kind, reader)
    for sig in RULE_SIGS
    for kind, reader in (_rule(sig),)
    for regex, needles in (regex_needles(sig.pattern, sig.flags),)
    for needle in needles
)
# Error lines of the two formatted families that no rule names: ERROR_LINE for ``unexplained_error``.
_ERROR_LEVELS = frozenset({"ERROR", "CRITICAL"})
MARKERS: tuple[str, ...] = tuple(dict.fromkeys([r[0] for r in _RULES] + [" ERROR ", " CRITICAL ", "ERROR:\t",
                                                                         "CRITICAL:\t"]))
"""A line holding none of these gives no closed-loop event."""


def _stamp(text: str) -> datetime | None:
    try:
        return datetime(int(text[0:4]), int(text[5:7]), int(text[8:10]), int(text[11:13]), int(text[14:16]),
                        int(text[17:19]), int(text[20:23]) * 1000)
    except ValueError:
        return None


class ClosedLoopParser:
    """One per file. ``feed(lineno, text)`` -> events; never raises on odd input."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self._capture = source.role in (Role.LAUNCHER, Role.STAGE)

    def teed(self, text: str) -> bool:
        """A line of a captured host terminal that repeats a role log the run folder holds."""
        if not self._capture or "|" not in text:
            return False
        m = _PREFIX.match(text)
        return m is not None and _TEED.fullmatch(m["name"]) is not None

    def feed(self, lineno: int, text: str) -> list[Event]:
        if len(text) > MAX_TEXT:
            text = text[:MAX_TEXT]
        body = text
        rank: int | None = None
        m = _RANK.match(body)
        if m:
            rank = int(m[1])
            body = body[m.end():]
        elif self._capture and "|" in body:
            p = _PREFIX.match(body)
            if p is not None:
                if _TEED.fullmatch(p["name"]):
                    return []
                body = p["rest"]
        ts: datetime | None = None
        level: str | None = None
        clock: str | None = None
        msg = body
        a = _ALPAGYM.match(body)
        if a is not None:
            ts, level, msg = _stamp(a["ts"]), a["level"], a["msg"]
        else:
            s = _ALPASIM.match(body)
            if s is not None:
                clock, level, msg = s["clock"], s["level"], s["msg"]
        for needle, regex, kind, reader in _RULES:
            if needle not in msg:
                continue
            if kind is CL.HOST_CONFIG_REJECTED and not self._capture:
                continue  # the host's validation errors; a replica's own assertion is the open-loop engine's
            found = regex.search(msg)
            if found is None:
                continue
            try:
                fields = reader(found)
            except (IndexError, ValueError):
                continue
            return self._events(kind, fields, lineno, text, ts, level, rank, clock)
        if level in _ERROR_LEVELS:
            return [Signal(source=self.source, line=lineno, text=text, ts=ts, level=level, rank=rank,
                           kind=SignalKind.ERROR_LINE, fields={"message": _clip(msg)})]
        return []

    def _events(self, kind: CL, fields: Mapping[str, Any], lineno: int, text: str, ts: datetime | None,
                level: str | None, rank: int | None, clock: str | None) -> list[Event]:
        event = ClosedLoop(source=self.source, line=lineno, text=text, ts=ts, level=level, rank=rank, kind=kind,
                           fields=dict(fields), clock=clock)
        if kind is CL.COSMOS_COMPLETED:
            # The host's end of the Cosmos-RL launcher (subprocess.run(check=True) returned): for the outcome, the
            # processes the launcher started completed.
            done = Signal(source=self.source, line=lineno, text=text, ts=ts, level=level, rank=rank,
                          kind=SignalKind.PROCESS_COMPLETED, fields={"process": "cosmos launcher"})
            return [event, done]
        return [event]


def parse_closed_loop(lines: list[str], source: Source, first_lineno: int = 1) -> list[Event]:
    """``ClosedLoopParser`` over a list (tests, small files)."""
    parser = ClosedLoopParser(source)
    out: list[Event] = []
    for i, line in enumerate(lines):
        out.extend(parser.feed(first_lineno + i, line))
    return out


__all__ = ["MARKERS", "ClosedLoopParser", "parse_closed_loop"]
