"""Build lines in the exact formats of the references and parse them.

``cosmos()`` renders the cosmos logger format (docs/reference/cosmos-rl.md §3.3:
``[cosmos] %(asctime)s - %(name)s - %(levelname)s - %(message)s``, asctime ``YYYY-mm-dd HH:MM:SS,mmm``)
with the torchrun ``[rank<N>]:`` prefix when ``rank`` is given.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from a1x_diagnostics.events import Event, LogLine, Role, Signal, SignalKind, Source
from a1x_diagnostics.parsing import LineParser, iter_lines, parse_lines, read_file, split_segments

TS = "2025-06-09 22:14:29,220"
T = datetime(2025, 6, 9, 22, 14, 29, 220000)
UUID = "3f2a8c1e-5b7d-4e9a-9c1f-0a1b2c3d4e5f"
GENERATIONS = ("747d1bd", "v0.4.4", "0.4.7")

SOURCES = {
    Role.CONTROLLER: Source("controller.log", Role.CONTROLLER),
    Role.POLICY: Source("policy_0.log", Role.POLICY, 0),
    Role.ROLLOUT: Source("rollout_0.log", Role.ROLLOUT, 0),
    Role.LAUNCHER: Source("run.out", Role.LAUNCHER),
    Role.STAGE: Source("stages/train.log", Role.STAGE),
}


def cosmos(msg: str, level: str = "INFO", rank: int | None = None, ts: str = TS) -> str:
    prefix = f"[rank{rank}]:" if rank is not None else ""
    return f"{prefix}[cosmos] {ts} - cosmos - {level} - {msg}"


def parse(lines: Iterable[str] | str, role: Role = Role.CONTROLLER) -> list[Event]:
    if isinstance(lines, str):
        lines = [lines]
    return list(parse_lines(list(lines), SOURCES[role]))


def interesting(events: Iterable[Event]) -> list[Event]:
    return [e for e in events if not isinstance(e, LogLine)]


def one(lines: Iterable[str] | str, cls: type, role: Role = Role.CONTROLLER) -> Event:
    """The single non-LogLine event of ``lines``, which must be a ``cls``."""
    found = interesting(parse(lines, role))
    assert len(found) == 1, f"expected one event, got {found!r}"
    assert isinstance(found[0], cls), f"expected {cls.__name__}, got {found[0]!r}"
    return found[0]


def signals(lines: Iterable[str] | str, role: Role = Role.CONTROLLER) -> list[Signal]:
    return [e for e in parse(lines, role) if isinstance(e, Signal)]


def signal(lines: Iterable[str] | str, kind: SignalKind, role: Role = Role.CONTROLLER) -> Signal:
    found = [s for s in signals(lines, role) if s.kind is kind]
    assert len(found) == 1, f"expected one {kind}, got {signals(lines, role)!r}"
    return found[0]


def event_key(e: Event) -> tuple[str, int, str, str]:
    return (e.source.path, e.line, type(e).__name__, repr(e))


def every_line(path: Path, source: Source, *, keep_unknown: bool = True) -> list[Event]:
    """The events of parsing every line of ``path`` (the reference the reader is held to)."""
    parser = LineParser(source, mtime=path.stat().st_mtime, keep_unknown=keep_unknown)
    out: list[Event] = []
    with open(path, "rb") as f:
        for lineno, text in iter_lines(f):
            for seg in split_segments(text):
                out += parser.feed(lineno, seg)
    return out + parser.flush()


def both_paths(path: Path, source: Source) -> tuple[list[tuple[str, int, str, str]], list[tuple[str, int, str, str]]]:
    """Sorted non-LogLine events of ``path`` from the reader and from parsing every line."""
    fast = sorted(map(event_key, read_file(path, source)))
    pure = sorted(event_key(e) for e in every_line(path, source) if not isinstance(e, LogLine))
    return fast, pure
