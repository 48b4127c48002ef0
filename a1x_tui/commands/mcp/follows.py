"""``findings_since``: live runs followed by the MCP server, each with a cursor an agent polls.

A run asked about is followed by the ``RunFollower`` of ``a1x-tui watch`` (same diagnosis, same JSON
objects as its ``--format json`` lines) until nobody asked for ``IDLE_S``. Its events are numbered and
kept (the last ``KEEP`` of them); a cursor is an opaque string naming this server, the followed run
and the number of the last event the agent got. A cursor this server cannot continue (it was
restarted, the run was let go, the events were dropped) starts over with ``reset: true`` and the
state now: the open findings as ``finding_raised``, the outcome. Nothing is printed.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from a1x_tui.commands.mcp.tools import Refused

IDLE_S = 900.0  # a run nobody asked about for this long is let go
MAX_RUNS = 8  # followed at once; the least recently asked is let go first
KEEP = 5000  # events kept per run
FIRST_WAIT_S = 10.0  # the first call waits this long for the run's history to be read
_CURSOR = re.compile(r"^a1x1\.([0-9a-f]{8})\.([0-9]+)\.([0-9]+)$")


class BadCursor(ValueError):
    """A cursor string this server never makes."""


@dataclass
class _Run:
    number: int
    follower: Any
    notes: list[str]
    events: deque[tuple[int, dict[str, Any]]] = field(default_factory=lambda: deque(maxlen=KEEP))
    next_seq: int = 1
    errors: deque[str] = field(default_factory=lambda: deque(maxlen=5))
    used: float = field(default_factory=time.monotonic)
    # the state the events add up to, kept with them (a snapshot and its cursor agree)
    open: dict[str, dict[str, Any]] = field(default_factory=dict)
    outcome: dict[str, Any] | None = None
    history: bool = False
    changed: threading.Condition = field(default_factory=threading.Condition)
    thread: threading.Thread | None = None

    def pump(self, stop: threading.Event) -> None:
        from a1x_diagnostics.live import FileAppeared, FollowError
        from a1x_tui.commands.watch import event_object, stream_kinds

        sub = self.follower.subscribe(stream_kinds() - {FileAppeared})
        self.follower.start()
        while not stop.is_set() and not (sub.closed and not len(sub)):  # closed: the run was let go
            message = sub.get(timeout=0.5)
            if message is None:
                continue
            if isinstance(message, FollowError):
                self.errors.append(message.message)
                continue
            obj = event_object(message)
            if obj is None:
                continue
            with self.changed:
                self.events.append((self.next_seq, obj))
                self.next_seq += 1
                self._apply(obj)
                self.changed.notify_all()

    def _apply(self, obj: dict[str, Any]) -> None:
        kind = obj["type"]
        if kind in ("finding_raised", "finding_updated"):
            self.open[obj["key"]] = obj["finding"]
        elif kind == "finding_resolved":
            self.open.pop(obj["key"], None)
        elif kind == "run_switched":
            self.open.clear()
            self.outcome = None
        elif kind == "outcome":
            self.outcome = obj["outcome"]
        elif kind == "history_complete":
            self.history = True

    @property
    def last_seq(self) -> int:
        return self.next_seq - 1


def parse_cursor(cursor: str) -> tuple[str, int, int]:
    m = _CURSOR.match(cursor)
    if m is None:
        raise BadCursor("cursor: not a cursor of findings_since (pass the 'cursor' of its last answer, or none)")
    return m.group(1), int(m.group(2)), int(m.group(3))


class Follows:
    """The runs this server follows, by (path, config, run)."""

    def __init__(self, *, idle_s: float = IDLE_S, max_runs: int = MAX_RUNS) -> None:
        self.token = secrets.token_hex(4)
        self.idle_s = idle_s
        self.max_runs = max_runs
        self._runs: dict[tuple[str, str | None, str | None], _Run] = {}
        self._numbers = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def _cursor(self, run: _Run, seq: int) -> str:
        return f"a1x1.{self.token}.{run.number}.{seq}"

    def _open(self, path: str, config: str | None, run_name: str | None) -> _Run:
        from a1x_diagnostics.live import FollowOptions, RunFollower, engine_diagnosis, resolve_layout
        from a1x_diagnostics.parsing import LayoutError
        from a1x_tui.commands.watch import refusal

        key = (path, config, run_name)
        with self._lock:
            self._let_go(time.monotonic())
            found = self._runs.get(key)
            if found is not None:
                found.used = time.monotonic()
                return found
        try:
            layout = resolve_layout(path, run_name)
        except LayoutError as exc:
            raise Refused(str(exc)) from None
        reason = refusal(layout, path, run_name)
        if reason is not None:
            raise Refused(reason)
        if config is not None and not os.path.isfile(config):
            raise Refused(f"{config}: config is not a file")
        factory, notes = engine_diagnosis(config, target=path)
        follower = RunFollower(path, run=run_name, options=FollowOptions(), diagnosis=factory)
        with self._lock:
            self._numbers += 1
            followed = _Run(self._numbers, follower, list(notes))
            self._runs[key] = followed
            if len(self._runs) > self.max_runs:
                oldest = min(self._runs, key=lambda k: self._runs[k].used)
                self._runs.pop(oldest).follower.stop(timeout=2.0)
        followed.thread = threading.Thread(target=followed.pump, args=(self._stop,), name="a1x-mcp-follow", daemon=True)
        followed.thread.start()
        return followed

    def _let_go(self, now: float) -> None:
        for key in [k for k, r in self._runs.items() if now - r.used > self.idle_s]:
            self._runs.pop(key).follower.stop(timeout=2.0)

    def since(self, path: str, cursor: str | None = None, config: str | None = None, run: str | None = None,
              wait: float = 0.0) -> dict[str, Any]:
        """What was raised, updated and resolved on the run since ``cursor`` (None: the state now)."""
        from a1x_diagnostics.report import redact

        wanted = parse_cursor(cursor) if cursor is not None else None
        path = os.path.abspath(os.path.expanduser(path))
        config = os.path.abspath(os.path.expanduser(config)) if config is not None else None
        followed = self._open(path, config, run)
        reset = wanted is not None and (wanted[0] != self.token or wanted[1] != followed.number)
        with followed.changed:
            if wanted is not None and not reset:
                after = wanted[2]
                oldest = followed.events[0][0] if followed.events else followed.next_seq
                reset = after > followed.last_seq or after < oldest - 1  # from the future, or events dropped
            if wanted is None or reset:
                # the first look at a run: its findings mean something once its history is read
                first = max(wait, FIRST_WAIT_S) if wanted is None else wait
                followed.changed.wait_for(lambda: followed.history, timeout=first)
                events = self._snapshot(followed)
            else:
                if wait > 0 and followed.last_seq == after:
                    followed.changed.wait_for(lambda: followed.last_seq > after, timeout=wait)
                events = [obj for n, obj in followed.events if n > after]
            seq, open_keys, outcome, history = (
                followed.last_seq, sorted(followed.open), followed.outcome, followed.history
            )
        status = followed.follower.status()
        answer = {
            "path": path,
            "run": followed.follower.run_name,
            "cursor": self._cursor(followed, seq),
            "reset": reset,
            "history_complete": history,
            "events": events,
            "open": open_keys,
            "status": status.value,
            "exit_code": status.exit_code,
            "outcome": outcome,
            "notes": [*followed.notes, *followed.errors],
        }
        return json.loads(redact(json.dumps(answer, default=str)))

    @staticmethod
    def _snapshot(followed: _Run) -> list[dict[str, Any]]:
        """The state the events add up to, as events: history read, each open finding raised, the outcome."""
        now = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
        events: list[dict[str, Any]] = []
        if followed.history:
            events.append({"type": "history_complete", "time": now})
        for key, finding in sorted(followed.open.items()):
            events.append({"type": "finding_raised", "time": now, "key": key, "finding": finding})
        if followed.outcome is not None:
            events.append({"type": "outcome", "time": now, "outcome": followed.outcome, "previous": None})
        return events

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            runs, self._runs = list(self._runs.values()), {}
        for followed in runs:
            followed.follower.stop(timeout=2.0)
