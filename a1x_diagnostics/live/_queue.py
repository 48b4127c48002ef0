"""A subscriber's bounded queue, where bursts coalesce instead of piling up.

toolong lets a high-rate message replace the previous one still queued so that a fast log cannot
flood the UI (Textualize/toolong, its message queue). Here, while a
message waits in a subscriber's queue:

* ``LinesAppended`` (and ``HistoryLoaded``) for the same file merge into one message, unless a
  ``FileReset`` or ``RunSwitched`` came in between;
* ``MetricsUpdated`` (and ``HistoryProgress``) replaces the one still queued;
* ``FindingUpdated`` replaces the queued ``FindingRaised``/``FindingUpdated`` of the same key;
* past ``max_lines`` queued lines, the oldest lines are dropped and counted in ``skipped`` (they
  are still in the file); past ``max_messages`` other messages, the oldest that is not about a
  finding is dropped and counted in ``dropped_messages``.

The follower never blocks on a slow subscriber; the subscriber loses display lines, never a finding.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace

from a1x_diagnostics.events import Source
from a1x_diagnostics.live.messages import (
    FileReset,
    FindingRaised,
    FindingResolved,
    FindingUpdated,
    HistoryLoaded,
    HistoryProgress,
    LinesAppended,
    Message,
    MetricsUpdated,
    RunSwitched,
)

DEFAULT_MAX_LINES = 200_000
DEFAULT_MAX_MESSAGES = 10_000


@dataclass(slots=True)
class _LinesSlot:
    """A LinesAppended/HistoryLoaded still queued, open for merging."""

    history: bool
    source: Source
    first_lineno: int | None
    lines: list[str]
    offset: int
    skipped: int = 0
    partial: str | None = None
    done: bool = False
    abandoned: bool = False

    def message(self) -> Message:
        if self.history:
            return HistoryLoaded(
                source=self.source,
                first_lineno=self.first_lineno or 1,
                lines=tuple(self.lines),
                done=self.done,
                abandoned=self.abandoned,
                skipped=self.skipped,
            )
        return LinesAppended(
            source=self.source,
            first_lineno=self.first_lineno,
            lines=tuple(self.lines),
            offset=self.offset,
            skipped=self.skipped,
            partial=self.partial,
        )


_Entry = _LinesSlot | Message
_FINDING_TYPES = (FindingRaised, FindingUpdated, FindingResolved)


class Subscription:
    """Messages for one consumer: ``get()`` from any thread, or iterate until closed."""

    def __init__(
        self,
        kinds: Iterable[type] | None = None,
        *,
        max_lines: int = DEFAULT_MAX_LINES,
        max_messages: int = DEFAULT_MAX_MESSAGES,
        on_ready: Callable[[], None] | None = None,
    ) -> None:
        self.kinds: frozenset[type] | None = None if kinds is None else frozenset(kinds)
        self.max_lines = max_lines
        self.max_messages = max_messages
        self.on_ready = on_ready
        self.dropped_lines = 0
        self.dropped_messages = 0
        self._entries: deque[_Entry] = deque()
        self._lines_queued = 0
        self._others_queued = 0
        self._open_lines: dict[tuple[str, bool], _LinesSlot] = {}
        self._cond = threading.Condition()
        self._closed = False

    def wants(self, kind: type) -> bool:
        return self.kinds is None or kind in self.kinds

    @property
    def closed(self) -> bool:
        return self._closed

    def __len__(self) -> int:
        with self._cond:
            return len(self._entries)

    # --- producer side (the follower) -------------------------------------------------------------

    def put(self, message: Message) -> None:
        self.put_many((message,))

    def put_many(self, messages: Iterable[Message]) -> None:
        was_empty = False
        with self._cond:
            if self._closed:
                return
            was_empty = not self._entries
            for message in messages:
                if self.wants(type(message)):
                    self._put(message)
            if not self._entries:
                return
            self._cond.notify_all()
        if was_empty and self.on_ready is not None:
            self.on_ready()

    def _put(self, message: Message) -> None:
        if isinstance(message, LinesAppended | HistoryLoaded):
            self._put_lines(message)
            return
        if isinstance(message, MetricsUpdated | HistoryProgress):
            for i, entry in enumerate(self._entries):
                if type(entry) is type(message):
                    self._entries[i] = message
                    return
        elif isinstance(message, FindingUpdated):
            for i in range(len(self._entries) - 1, -1, -1):
                entry = self._entries[i]
                if not isinstance(entry, _FINDING_TYPES) or entry.key != message.key:
                    continue
                if isinstance(entry, FindingResolved):
                    break
                self._entries[i] = replace(entry, finding=message.finding)
                return
        elif isinstance(message, FileReset):
            self._open_lines.pop((message.source.path, False), None)
            self._open_lines.pop((message.source.path, True), None)
        elif isinstance(message, RunSwitched):
            self._open_lines.clear()
        self._entries.append(message)
        self._others_queued += 1
        if self._others_queued > self.max_messages:
            self._drop_one_message()

    def _put_lines(self, message: LinesAppended | HistoryLoaded) -> None:
        history = isinstance(message, HistoryLoaded)
        key = (message.source.path, history)
        slot = self._open_lines.get(key)
        n = len(message.lines)
        if slot is not None and slot.done:
            slot = None
        if slot is not None:
            if slot.first_lineno is None and message.first_lineno is not None:
                slot.first_lineno = message.first_lineno - len(slot.lines)
            slot.lines.extend(message.lines)
            slot.skipped += message.skipped
            if isinstance(message, LinesAppended):
                slot.partial = message.partial
            else:
                slot.done = message.done
                slot.abandoned = message.abandoned
        else:
            if isinstance(message, LinesAppended):
                slot = _LinesSlot(
                    False,
                    message.source,
                    message.first_lineno,
                    list(message.lines),
                    message.offset,
                    message.skipped,
                    message.partial,
                )
            else:
                slot = _LinesSlot(
                    True,
                    message.source,
                    message.first_lineno,
                    list(message.lines),
                    -1,
                    message.skipped,
                    done=message.done,
                    abandoned=message.abandoned,
                )
            self._open_lines[key] = slot
            self._entries.append(slot)
        self._lines_queued += n
        if self._lines_queued > self.max_lines:
            self._drop_lines(self._lines_queued - self.max_lines)

    def _drop_lines(self, excess: int) -> None:
        for entry in self._entries:
            if excess <= 0:
                break
            if isinstance(entry, _LinesSlot) and entry.lines:
                k = min(excess, len(entry.lines))
                del entry.lines[:k]
                entry.skipped += k
                entry.offset = -1
                if entry.first_lineno is not None:
                    entry.first_lineno += k
                self._lines_queued -= k
                self.dropped_lines += k
                excess -= k

    def _drop_one_message(self) -> None:
        for i, entry in enumerate(self._entries):
            if not isinstance(entry, (_LinesSlot, *_FINDING_TYPES)):
                del self._entries[i]
                self._others_queued -= 1
                self.dropped_messages += 1
                return

    # --- consumer side ----------------------------------------------------------------------------

    def get(self, timeout: float | None = None) -> Message | None:
        """The next message; waits up to ``timeout`` seconds (None: until one comes or closed)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while not self._entries:
                if self._closed:
                    return None
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                self._cond.wait(remaining)
            return self._pop()

    def get_nowait(self) -> Message | None:
        with self._cond:
            return self._pop() if self._entries else None

    def drain(self) -> list[Message]:
        """Every message queued now, without waiting."""
        with self._cond:
            out: list[Message] = []
            while self._entries:
                out.append(self._pop())
            return out

    def __iter__(self) -> Iterator[Message]:
        while True:
            message = self.get()
            if message is None:
                return
            yield message

    def close(self) -> None:
        """No more messages will be put; ``get`` returns what is left, then None."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _pop(self) -> Message:
        entry = self._entries.popleft()
        if isinstance(entry, _LinesSlot):
            key = (entry.source.path, entry.history)
            if self._open_lines.get(key) is entry:
                del self._open_lines[key]
            self._lines_queued -= len(entry.lines)
            return entry.message()
        self._others_queued -= 1
        return entry
