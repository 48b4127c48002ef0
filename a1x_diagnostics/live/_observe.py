"""watchdog wiring: file system events become "this file changed" / "look again at the folders".

inotify where it works; watchdog's ``PollingObserver`` on network file systems (``_mounts``) or
when asked, for the folders (new files, renames, deletions) while the follower checks the size of
each followed file itself. The handler does the least possible in watchdog's thread: it records the path and
wakes the follower, which does the reading.

Each write is one inotify event, and watchdog spends Python time on each (docs/live.md has the
figure). A replica that logs line by line at 100 lines/s is cheap; 193 of them are not.
So the inotify watcher has two ways of noticing writes, and the follower switches between them:

* ``modify_events`` on (quiet runs): every write wakes the follower at once, nothing costs anything
  while nothing is written;
* ``modify_events`` off (busy runs): the watches keep only the structure events (create, delete,
  move: new replicas, rotation, ``logs_latest`` moving) and the follower checks the size of every
  followed file every ``scan_interval``: a bounded cost, whatever the write rate.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterable

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver, ObservedWatch
from watchdog.observers.polling import PollingObserver

# watchdog logs a folder it cannot list ("Cannot take a snapshot of ..., will retry") through Python's
# last-resort handler, raw on stderr when no logging is set up; the follower says it itself (a FollowError).
logging.getLogger("watchdog").addHandler(logging.NullHandler())

STRUCTURE_EVENTS = [FileCreatedEvent, FileDeletedEvent, FileMovedEvent, DirCreatedEvent, DirDeletedEvent, DirMovedEvent]
ALL_EVENTS = [FileModifiedEvent, *STRUCTURE_EVENTS]


def _text(path: bytes | str) -> str:
    return os.fsdecode(path)


class _Handler(FileSystemEventHandler):
    def __init__(self, on_change: Callable[[str], None], on_layout: Callable[[], None]) -> None:
        self._on_change = on_change
        self._on_layout = on_layout
        self.modified = 0  # modify events since the follower last asked (a rough count is enough)

    def on_any_event(self, event: FileSystemEvent) -> None:
        kind = event.event_type
        if kind == "modified":
            if not event.is_directory:
                self.modified += 1
                self._on_change(_text(event.src_path))
            return
        if kind in ("created", "deleted", "moved"):
            self._on_change(_text(event.src_path))
            if event.dest_path:
                self._on_change(_text(event.dest_path))
            self._on_layout()


class Watcher:
    """Watches a set of folders (not recursively) and reports changes through two callbacks."""

    def __init__(
        self,
        on_change: Callable[[str], None],
        on_layout: Callable[[], None],
        *,
        polling: bool,
        poll_interval: float,
    ) -> None:
        self.polling = polling
        self.modify_events = True
        self._handler = _Handler(on_change, on_layout)
        self._observer: BaseObserver = PollingObserver(timeout=poll_interval) if polling else Observer()
        self._watches: dict[str, ObservedWatch] = {}
        self._lock = threading.Lock()
        self._started = False

    def start(self) -> None:
        self._observer.start()
        self._started = True

    def take_modified_count(self) -> int:
        n = self._handler.modified
        self._handler.modified = 0
        return n

    def watch(self, folders: Iterable[str]) -> list[str]:
        """Watch exactly ``folders`` from now on; returns those that could not be watched."""
        wanted = {os.path.realpath(f) for f in folders if os.path.isdir(f)}
        failed: list[str] = []
        with self._lock:
            for folder in list(self._watches):
                if folder not in wanted:
                    self._unschedule(folder)
            for folder in sorted(wanted - set(self._watches)):
                if not self._schedule(folder):
                    failed.append(folder)
        return failed

    def set_modify_events(self, on: bool) -> None:
        """Switch inotify modify events on or off (re-schedules every watch; no-op when polling).

        Events in the instant of the switch can be missed: the follower looks at every file and
        folder right after calling this.
        """
        if self.polling or on == self.modify_events:
            return
        with self._lock:
            self.modify_events = on
            for folder in list(self._watches):
                self._unschedule(folder)
                self._schedule(folder)

    def _schedule(self, folder: str) -> bool:
        # Polling: the follower checks the sizes itself (a stat per followed file is cheaper than
        # watchdog's snapshot of every folder entry), so the observer only reports structure.
        events = ALL_EVENTS if self.modify_events and not self.polling else STRUCTURE_EVENTS
        try:
            self._watches[folder] = self._observer.schedule(self._handler, folder, recursive=False, event_filter=events)
        except OSError:
            return False
        return True

    def _unschedule(self, folder: str) -> None:
        watch = self._watches.pop(folder, None)
        if watch is not None:
            with contextlib.suppress(KeyError, OSError):
                self._observer.unschedule(watch)

    def stop(self) -> None:
        if self._started:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._started = False
