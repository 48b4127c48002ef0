"""``RunFollower``: follows every log file of a run and publishes what happens to subscribers.

One worker thread owns every file and the diagnostics; watchdog's thread only records which
paths changed. Each turn of the worker: look at the folders again if something was created,
moved or deleted (or every ``rescan_interval`` as a safety net), read the files that changed (or,
on a busy run or when polling, check the size of every file every scan), settle the files that
went quiet (show the unterminated last line, let the parsers close a traceback), read one slice of
history, and re-evaluate the findings once the history of every file has been read. Design and
measurements: ``docs/live.md``.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from a1x_diagnostics.events import Source
from a1x_diagnostics.findings import Finding, Outcome, RunOutcome, Status
from a1x_diagnostics.live._diagnose import Diagnosis, DiagnosisFactory, Evaluation
from a1x_diagnostics.live._findings import FindingTracker
from a1x_diagnostics.live._layout import Layout, cannot_read, layout_stamp, resolve
from a1x_diagnostics.live._lines import MAX_LINE_BYTES
from a1x_diagnostics.live._mounts import filesystem_type, is_network_fs
from a1x_diagnostics.live._observe import Watcher
from a1x_diagnostics.live._osfs import OsFileSystem
from a1x_diagnostics.live._queue import Subscription
from a1x_diagnostics.live._tail import (
    UNREADABLE,
    FileId,
    FileSystem,
    FileTail,
    History,
    Lines,
    Opened,
    Reset,
    TailOutput,
)
from a1x_diagnostics.live.messages import (
    FileAppeared,
    FileReset,
    FollowError,
    HistoryComplete,
    HistoryLoaded,
    HistoryProgress,
    LinesAppended,
    Message,
    MetricsUpdated,
    OutcomeChanged,
    RunSwitched,
)
from a1x_diagnostics.parsing import LayoutError


@dataclass(frozen=True, slots=True, kw_only=True)
class FollowOptions:
    """How the follower watches and how often it works. Times in seconds."""

    poll: bool | None = None  # None: poll only on network file systems
    poll_interval: float = 0.5  # polling mode: every followed file is checked this often ...
    poll_folders_interval: float = 2.0  # ... and watchdog's PollingObserver lists the folders this often
    evaluate_interval: float = 1.0  # findings re-evaluated this often while lines arrive
    quiet_evaluate_interval: float = 5.0  # ... and this often when none did (a stall is silence)
    rescan_interval: float = 5.0  # safety net: every file and folder checked this often ...
    full_rescan_interval: float = 60.0  # ... the layout read again even when no folder's stamp moved
    scan_interval: float = 0.5  # busy runs: the size of every file checked this often (``_observe``)
    busy_events_per_s: float = 200.0  # more inotify modify events than this: switch to size scans
    quiet_files_per_s: float = 50.0  # fewer files growing than this ...
    quiet_seconds: float = 10.0  # ... for this long: back to modify events
    batch_delay: float = 0.05  # after a change, wait this long so a burst is read at once
    idle_flush: float = 1.0  # an unterminated last line is shown after this much quiet
    group_flush: float = 0.25  # a traceback / torchrun summary left open is closed after this much quiet ...
    urgent_evaluate_interval: float = 0.25  # ... and a line that may be a failure is judged this soon
    backfill_chunk: int = 256 * 1024
    backfill_slice: float = 0.02  # history reading per turn, so live lines keep priority
    read_budget: int = 4 * 1024 * 1024  # bytes per file per turn
    max_line: int = MAX_LINE_BYTES
    # The history shown: None, every line in chunks as read; else, of each file, its last
    # ``history_tail(files followed)`` lines in one ``HistoryLoaded`` once read (a view that keeps
    # only tails: a cluster run's history is never sent whole). The diagnostics see every line.
    history_tail: Callable[[int], int] | None = None


@dataclass(slots=True)
class _Followed:
    source: Source
    tail: FileTail
    last_data: float = 0.0
    partial_shown: str | None = None
    committed: int | None = None  # number of the partial line already given to the diagnostics
    folder: str = ""
    groups_closed: bool = False  # quiet for ``group_flush`` since its last data: the diagnostics closed its groups
    blocked: str | None = None  # the note given while its path cannot be looked at or opened (``_blocked``)
    # Scanning (polling, or a busy run): a scan found nothing new since its last data. Only then can it be
    # quiet: between two scans a writer may have written much that no one has looked at yet.
    quiet_scan: bool = True
    history: int = 0  # bytes of history to read (before the live start)
    history_read: int = 0
    shown: deque[str] | None = None  # with ``history_tail``: the last history lines read
    shown_next: int = 1  # the number of the history line after them


# Polling: a folder whose entries changed less than this long ago (its mtime or ctime) has the paths
# of its files checked at every scan, whatever its stamp says: a rename in the same clock tick as
# the previous look leaves the stamp as it was (coarse or skewed file system clocks).
FOLDER_SETTLE_S = 3.0


class RunFollower:
    """Follow the run under ``path``; ``subscribe()`` for messages, ``start()``, later ``stop()``."""

    def __init__(
        self,
        path: str,
        *,
        run: str | None = None,
        options: FollowOptions | None = None,
        diagnosis: DiagnosisFactory | None = None,
        fs: FileSystem | None = None,
    ) -> None:
        self.path = path
        self.run = run
        self.options = options or FollowOptions()
        self._diagnosis_factory = diagnosis
        self._fs: FileSystem = fs or OsFileSystem()
        poll = self.options.poll
        where = path if os.path.exists(path) else os.path.dirname(os.path.abspath(path))
        fs_type = filesystem_type(where)
        self.polling = bool(poll) if poll is not None else is_network_fs(where)
        self.why_polling = (
            "asked" if poll else f"{fs_type} is a network file system" if self.polling else None
        )  # inotify does not see writes made by other nodes there
        self._subs: tuple[Subscription, ...] = ()
        self._subs_lock = threading.Lock()
        self._files: dict[str, _Followed] = {}
        self._dirty: set[str] = set()
        self._dirty_lock = threading.Lock()
        self._layout_dirty = True
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self.history_complete = threading.Event()
        self._thread: threading.Thread | None = None
        self._watcher: Watcher | None = None
        self._layout: Layout | None = None
        self._diag: Diagnosis | None = None
        self._tracker = FindingTracker()
        self._outcome: RunOutcome | None = None
        self._findings_lock = threading.Lock()
        self._last_metrics: Evaluation | None = None
        self._backfill: deque[str] = deque()
        self._unsettled: set[str] = set()  # files written to since they were last quiet
        self._retired: dict[FileId, bytes] = {}  # rotated-away files: inode -> first bytes
        self._errors_seen: set[str] = set()
        self._started_at = 0.0
        self._history_lines = 0
        self._history_bytes = 0  # of the files opened at their end: bytes before the live start ...
        self._history_read = 0  # ... and how many of them are read
        self._history_files = 0
        self._progress_sent = -1
        self._next_eval = 0.0
        self._next_rescan = 0.0
        self._next_full_rescan = 0.0
        self._layout_stamp: tuple[tuple[int, ...], ...] | None = None
        self.layout_reads = 0  # how many times the layout was read (resolve)
        self._last_eval = 0.0
        self._fed_since_eval = True
        self.files_seen = 0
        self.evaluated = False
        self.scanning = False  # modify events off, sizes scanned every scan_interval
        self._next_scan = 0.0
        self._rate_since = 0.0
        self._grown = 0
        self._quiet_since: float | None = None
        # polling: each folder's stamp (``_changed_folders``) at the last scan
        self._folder_stamps: dict[str, tuple[int, int, int, int] | None] = {}

    # --- public API -------------------------------------------------------------------------------

    def subscribe(self, kinds: Iterable[type] | None = None, **queue_options: object) -> Subscription:
        """A new subscription (all message types unless ``kinds`` says which)."""
        sub = Subscription(kinds, **queue_options)  # type: ignore[arg-type]
        with self._subs_lock:
            self._subs = (*self._subs, sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        with self._subs_lock:
            self._subs = tuple(s for s in self._subs if s is not sub)
        sub.close()

    def start(self) -> RunFollower:
        if self._thread is not None:
            return self
        if self._diagnosis_factory is not None:
            self._diag = self._diagnosis_factory()
        self._watcher = Watcher(
            self._on_change, self._on_layout, polling=self.polling, poll_interval=self.options.poll_folders_interval
        )
        if self.polling:  # no inotify: the sizes are checked by us, the folders by the PollingObserver
            self.scanning = True
        self._watcher.start()
        self._started_at = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="a1x-live-follower", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop watching, release every file, close the subscriptions."""
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if self._watcher is not None:
            self._watcher.stop()
        for followed in self._files.values():
            followed.tail.release()
        self._files.clear()
        for sub in self._subs:
            sub.close()

    def __enter__(self) -> RunFollower:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def run_name(self) -> str | None:
        layout = self._layout
        return None if layout is None else layout.run

    def sources(self) -> list[Source]:
        return [f.source for f in list(self._files.values())]

    def open_findings(self) -> list[Finding]:
        with self._findings_lock:
            return list(self._tracker.open.values())

    def findings_by_key(self) -> dict[str, Finding]:
        """The open findings by key (``finding_key``)."""
        with self._findings_lock:
            return dict(self._tracker.open)

    @property
    def outcome(self) -> RunOutcome | None:
        """The run's outcome at the last evaluation (None before the first)."""
        with self._findings_lock:
            return self._outcome

    def status(self) -> Status:
        """Status of the findings open now; UNKNOWN until a file was read and evaluated. OK only while the
        outcome is completed or running (``a1x_diagnostics.report.build_report``'s rule)."""
        if not self.files_seen or not self.evaluated:
            return Status.UNKNOWN
        with self._findings_lock:
            status, outcome = self._tracker.status(), self._outcome
        if status is Status.OK and outcome is not None and outcome.state not in (Outcome.COMPLETED, Outcome.RUNNING):
            return Status.WARNING
        return status

    # --- watchdog's thread --------------------------------------------------------------------------

    def _on_change(self, path: str) -> None:
        if path in self._files:
            with self._dirty_lock:
                self._dirty.add(path)
            self._wake.set()

    def _on_layout(self) -> None:
        self._layout_dirty = True
        self._wake.set()

    # --- the worker -----------------------------------------------------------------------------------

    def _run(self) -> None:
        opts = self.options
        try:
            self._rescan(initial=True)
            self._check_history_complete()
        except Exception as exc:  # a bug must not kill the follower silently
            self._error(f"cannot follow {self.path}: {exc}", self.path)
        while not self._stopping.is_set():
            timeout = self._next_timeout()
            if timeout > 0:
                self._wake.wait(timeout)
            if self._stopping.is_set():
                break
            if self._wake.is_set():
                self._wake.clear()
                if opts.batch_delay > 0 and not self._backfill:
                    self._stopping.wait(opts.batch_delay)
            try:
                self._turn()
            except Exception as exc:
                self._error(f"live follower: {type(exc).__name__}: {exc}")

    def _next_timeout(self) -> float:
        if self._backfill or self._dirty or self._layout_dirty:
            return 0.0
        now = time.monotonic()
        deadline = self._next_rescan
        if self.scanning:
            deadline = min(deadline, self._next_scan)
        if self.history_complete.is_set() and self._diag is not None:
            deadline = min(deadline, self._next_eval)
        idle, group = self.options.idle_flush, self.options.group_flush
        files = self._files
        for path in self._unsettled:
            followed = files.get(path)
            if followed is not None:
                due = followed.last_data + (idle if followed.groups_closed else group)
                if self.scanning and not followed.quiet_scan:
                    due = max(due, self._next_scan)  # nothing to settle before the next scan looks
                if due < deadline:
                    deadline = due
        return max(0.0, deadline - now)

    def _turn(self) -> None:
        now = time.monotonic()
        if not self.polling and now - self._rate_since >= 1.0:
            self._check_write_rate(now)
        if self._layout_dirty or now >= self._next_rescan:
            periodic = now >= self._next_rescan
            self._rescan(periodic_only=periodic and not self._layout_dirty)
            if periodic:
                with self._dirty_lock:
                    self._dirty.update(self._files)
        with self._dirty_lock:
            dirty, self._dirty = self._dirty, set()
        grown: set[str] = set()
        for path in dirty:
            followed = self._files.get(path)
            if followed is not None and self._poll(followed):
                grown.add(path)
        if self.scanning and now >= self._next_scan:
            interval = self.options.poll_interval if self.polling else self.options.scan_interval
            self._next_scan = now + interval
            # Polling: no inotify reports a rename or a deletion at once, so the path is checked too,
            # for the files of the folders whose entries changed (one stat per folder, not per file).
            changed = self._changed_folders() if self.polling else set()
            quiet = now - 2 * interval
            # Quiet for a full period: this scan found nothing new, and the last new bytes were read a period
            # ago (not just now by another look, such as the one that settles files).
            full = 0.9 * interval
            for path, followed in list(self._files.items()):
                if path in dirty:  # looked at in this scan's turn
                    if path not in grown and now - followed.last_data >= full:
                        followed.quiet_scan = True
                    continue
                check = changed is None or followed.folder in changed
                if not check and followed.last_data < quiet and followed.tail.unchanged():
                    followed.quiet_scan = True
                    continue  # a quiet file: one fstat
                looked = time.monotonic()
                if self._poll(followed, check_path=check):
                    self._grown += 1
                elif looked - followed.last_data >= full:
                    followed.quiet_scan = True
        if self._unsettled:
            self._settle(time.monotonic())
        if self._backfill:
            self._backfill_slice()
        if self.history_complete.is_set() and self._diag is not None and time.monotonic() >= self._next_eval:
            self._evaluate()

    def _changed_folders(self) -> set[str] | None:
        """Folders of followed files whose entries may have changed since the last scan: their
        stamp (``OsFileSystem.folder_stamp``) moved, cannot be read, or changed within
        ``FOLDER_SETTLE_S``. None: the file system cannot tell, every path is checked.

        A folder of the layout (or of a followed file) whose stamp moved since the last scan also
        has the layout read again now, so a new file (a replica, the next generation of a rotated
        log) is found within ``poll_interval``, not only at the ``PollingObserver``'s next listing."""
        stamp_of = getattr(self._fs, "folder_stamp", None)
        if stamp_of is None:
            return None
        wall_ns = time.time_ns()
        previous, self._folder_stamps = self._folder_stamps, {}
        changed: set[str] = set()
        layout = self._layout
        for folder in {f.folder for f in self._files.values()}:
            stamp = stamp_of(folder)
            self._folder_stamps[folder] = stamp
            if stamp is None or stamp != previous.get(folder) or wall_ns - max(stamp[2:]) < FOLDER_SETTLE_S * 1e9:
                changed.add(folder)
        for folder in layout.watch_dirs if layout is not None else ():
            if folder not in self._folder_stamps:
                self._folder_stamps[folder] = stamp_of(folder)
        if any(folder in previous and stamp != previous[folder] for folder, stamp in self._folder_stamps.items()):
            self._layout_dirty = True
        return changed

    def _check_write_rate(self, now: float) -> None:
        """Busy run: modify events off, size scans on; quiet again for a while: the other way round."""
        elapsed = max(1e-3, now - self._rate_since)
        self._rate_since = now
        watcher = self._watcher
        if watcher is None:
            return
        events = watcher.take_modified_count() / elapsed
        grown, self._grown = self._grown / elapsed, 0
        opts = self.options
        if not self.scanning:
            if events > opts.busy_events_per_s:
                self.scanning = True
                self._next_scan = now
                watcher.set_modify_events(False)
                self._look_at_everything()
            return
        if grown >= opts.quiet_files_per_s:
            self._quiet_since = None
        elif self._quiet_since is None:
            self._quiet_since = now
        elif now - self._quiet_since >= opts.quiet_seconds:
            self.scanning = False
            self._quiet_since = None
            watcher.set_modify_events(True)
            self._look_at_everything()

    def _look_at_everything(self) -> None:
        """After a watch switch, events of that instant may be lost: check every folder and file."""
        self._layout_dirty = True
        with self._dirty_lock:
            self._dirty.update(self._files)

    # --- files ----------------------------------------------------------------------------------------

    def _rescan(self, *, initial: bool = False, periodic_only: bool = False) -> None:
        """Read the layout again and follow what changed. A periodic look (nothing reported a
        change) is skipped while the stamps of the layout's folders, ``run.toml`` and
        ``logs_latest`` stay as they were, up to ``full_rescan_interval``."""
        self._layout_dirty = False
        now = time.monotonic()
        self._next_rescan = now + self.options.rescan_interval
        previous = self._layout
        before = layout_stamp(previous, settle_s=FOLDER_SETTLE_S) if previous is not None else None
        if periodic_only and before is not None and before == self._layout_stamp and now < self._next_full_rescan:
            return
        self._next_full_rescan = now + self.options.full_rescan_interval
        try:
            layout = resolve(self.path, self.run)
        except LayoutError as exc:
            if previous is None:
                raise
            self._keep(previous, str(exc))
            return
        self.layout_reads += 1
        if previous is not None and previous.files and (
                layout.waiting is not None or (previous.run is not None and layout.run != previous.run)):
            # The run switches only when the link (or its equivalent) names another run that can be read,
            # never because the run's folder cannot be seen for a moment (a permission flip, a mount hiccup).
            hidden = cannot_read(previous.run_dir) or cannot_read(layout.root)
            if layout.run is None or hidden:
                self._keep(previous, hidden or layout.waiting or f"{previous.run} cannot be seen")
                return
        # Kept only if nothing moved while the layout was read: otherwise the next look reads it again.
        after = layout_stamp(layout, settle_s=FOLDER_SETTLE_S)
        same_folders = previous is not None and previous.watch_dirs == layout.watch_dirs
        self._layout_stamp = after if same_folders and after == before else None
        self._layout = layout
        if self._watcher is not None:
            every = self.options.rescan_interval
            for folder in self._watcher.watch(layout.watch_dirs):
                self._error(f"cannot watch {folder}; it is still checked every {every:g} s", folder)
        if previous is not None and previous.run != layout.run and layout.run is not None:
            self._switch_run(previous, layout)
        for path in [p for p in self._files if p not in layout.files]:
            followed = self._files[path]
            self._poll(followed)
            if not followed.tail.is_open:
                self._forget(path)
        for path, source in layout.files.items():
            if path not in self._files:
                self._add(path, source, from_end=initial)

    def _keep(self, layout: Layout, why: str) -> None:
        """The layout cannot be read now: keep following what was followed, look again at the next rescan."""
        self._layout_stamp = None
        every = self.options.rescan_interval
        self._error(f"{why}; still following the {len(self._files)} file(s) read so far, looked at again every "
                    f"{every:g} s", layout.run_dir or layout.root)

    def _add(self, path: str, source: Source, *, from_end: bool) -> None:
        if self._already_read(path):
            return
        tail = FileTail(path, self._fs, from_end=from_end, max_line=self.options.max_line)
        try:
            quiet_for = max(0.0, time.time() - os.stat(path).st_mtime)  # last written before we looked
        except OSError:
            quiet_for = 0.0
        period = self.options.poll_interval if self.polling else self.options.scan_interval
        followed = _Followed(source, tail, last_data=time.monotonic() - quiet_for, folder=os.path.dirname(path),
                             quiet_scan=quiet_for >= period)
        self._files[path] = followed
        self.files_seen += 1
        self._publish([FileAppeared(source=source, path=path)])
        self._poll(followed)

    def _already_read(self, path: str) -> bool:
        """A followed file under another name (renamed away by a rotation): its lines were read.

        Same inode and same first bytes: an inode number alone can be reused by a new file.
        """
        ident = self._fs.identity(path)
        if ident is None or ident == UNREADABLE:
            return False
        if any(f.tail.ident == ident for f in self._files.values()):
            return True
        head = self._retired.get(ident)
        if head is None:
            return False
        handle = self._fs.open(path)
        if handle is None:
            return False
        try:
            return bool(head) and handle.read(0, len(head)) == head
        finally:
            handle.close()

    def _forget(self, path: str) -> None:
        followed = self._files.pop(path)
        self._unsettled.discard(path)
        self._history_counted(followed, followed.history)  # what it had left is no longer to read
        if self._diag is not None:
            self._diag.end_file(followed.source)

    def _switch_run(self, previous: Layout, layout: Layout) -> None:
        for path in [p for p in self._files if p not in layout.files]:
            followed = self._files[path]
            self._handle(followed, followed.tail.close())
            self._forget(path)
        self._publish([RunSwitched(run_name=layout.run, previous=previous.run)])
        with self._findings_lock:
            self._tracker.clear()
            self._outcome = None
        self._last_metrics = None
        if self._diagnosis_factory is not None:
            self._diag = self._diagnosis_factory()

    def _poll(self, followed: _Followed, *, check_path: bool = True, verify: bool = False) -> bool:
        """Check one file; True when it had new bytes."""
        tail = followed.tail
        before, head, read_before = tail.ident, tail.head, tail.bytes_read
        looked = time.monotonic()
        outputs, more = tail.poll(self.options.read_budget, check_path=check_path, verify=verify)
        if tail.blocked != (followed.blocked is not None):
            self._blocked(followed)
        if more:
            with self._dirty_lock:
                self._dirty.add(tail.path)
        if outputs:
            if before is not None and any(isinstance(o, Reset) and o.reason == "replaced" for o in outputs):
                self._retire(before, head)
            self._handle(followed, outputs)
        grew = tail.bytes_read != read_before
        if grew:
            followed.last_data = looked  # what was there when we looked: quiet is counted from here
            followed.quiet_scan = False
            self._unsettled.add(tail.path)
        return grew

    def _blocked(self, followed: _Followed) -> None:
        """A file that cannot be looked at (or opened) now is said once, and again after it could be."""
        if followed.blocked is not None:
            self._errors_seen.discard(followed.blocked)
            followed.blocked = None
            return
        path = followed.tail.path
        try:
            os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
            why = "cannot be read now"
        except OSError as exc:
            why = f"cannot be read now ({exc.strerror or exc})"
        every = self.options.poll_interval if self.polling else self.options.rescan_interval
        then = "the file open since before is read on" if followed.tail.is_open else "followed once it can be read"
        followed.blocked = f"{path}: {why}; {then}, looked at again every {every:g} s"
        self._error(followed.blocked, path)

    def _retire(self, ident: FileId, head: bytes) -> None:
        self._retired.pop(ident, None)
        self._retired[ident] = head
        while len(self._retired) > 4096:
            del self._retired[next(iter(self._retired))]

    def _handle(self, followed: _Followed, outputs: list[TailOutput]) -> None:
        source = followed.source
        diag = self._diag
        messages: list[Message] = []
        now = time.monotonic()
        for out in outputs:
            if isinstance(out, Lines):
                messages.append(
                    LinesAppended(
                        source=source, first_lineno=out.first_lineno, lines=tuple(out.lines), offset=out.offset
                    )
                )
                if diag is not None:
                    if out.diag and out.first_lineno is not None:
                        first, lines = out.first_lineno, out.lines
                        if followed.committed == first:  # its beginning was given when it sat idle
                            first, lines = first + 1, lines[1:]
                        if lines:
                            self._feed(diag, source, first, lines)
                    diag.file_stat(source, followed.tail.offset, time.time())  # it was just written
                followed.committed = None
                followed.last_data = now
                # Only a file that left a traceback open is worth a look at group_flush (the rest wait idle_flush).
                in_group = getattr(diag, "in_group", None)
                followed.groups_closed = diag is None or in_group is None or not in_group(source)
                followed.partial_shown = None
            elif isinstance(out, History):
                if out.display and self._wanted(HistoryLoaded):
                    loaded = self._history_shown(followed, out)
                    if loaded is not None:
                        messages.append(loaded)
                if out.lines:
                    self._history_lines += len(out.lines)
                    self._unsettled.add(followed.tail.path)
                    if diag is not None:
                        self._feed(diag, source, out.first_lineno, out.lines)
            elif isinstance(out, Reset):
                messages.append(FileReset(source=source, reason=out.reason, cut=out.cut))
                if diag is not None:
                    diag.end_file(source)
                followed.partial_shown = None
                followed.committed = None
            elif isinstance(out, Opened):
                if out.at_end:
                    self._backfill.append(followed.tail.path)
                    followed.history = followed.tail.history_size
                    self._history_bytes += followed.history
                    self._history_files += 1
                if diag is not None:
                    self._stat_to(diag, followed)
        if messages:
            self._publish(messages)

    def _history_shown(self, followed: _Followed, out: History) -> HistoryLoaded | None:
        """The ``HistoryLoaded`` to publish for ``out``, if any: as read, or the file's tail once read."""
        tail_of = self.options.history_tail
        if tail_of is None:
            if not (out.lines or out.done):
                return None
            return HistoryLoaded(source=followed.source, first_lineno=out.first_lineno, lines=tuple(out.lines),
                                 done=out.done, abandoned=out.abandoned)
        shown = followed.shown
        if shown is None:  # sized at its first chunk: every file present at start is known by then
            shown = followed.shown = deque(maxlen=max(1, tail_of(len(self._files))))
        shown.extend(out.lines[-(shown.maxlen or 1):])
        followed.shown_next = out.first_lineno + len(out.lines)
        if not out.done:
            return None
        followed.shown = None
        return HistoryLoaded(source=followed.source, first_lineno=followed.shown_next - len(shown),
                             lines=tuple(shown), done=True, abandoned=out.abandoned)

    def _history_counted(self, followed: _Followed, n: int) -> None:
        n = min(n, followed.history - followed.history_read)  # the back-fill reads on past the live start
        if n > 0:
            followed.history_read += n
            self._history_read += n

    def _feed(self, diag: Diagnosis, source: Source, first_lineno: int, lines: list[str]) -> None:
        self._fed_since_eval = True
        try:
            diag.feed(source, first_lineno, lines)
        except Exception as exc:
            self._error(f"diagnostics failed on {source.path}:{first_lineno}: {type(exc).__name__}: {exc}", source.path)
        if getattr(diag, "urgent", False):  # it read a line that may be a failure: judge it soon
            diag.urgent = False  # type: ignore[attr-defined]
            self._next_eval = min(self._next_eval, self._last_eval + self.options.urgent_evaluate_interval)

    def _stat_to(self, diag: Diagnosis, followed: _Followed) -> None:
        try:
            st = os.stat(followed.tail.path)
        except OSError:
            return
        diag.file_stat(followed.source, st.st_size, st.st_mtime)

    def _settle(self, now: float) -> None:
        """Files quiet for ``idle_flush``: show their unterminated last line, and let the
        diagnostics close what spans lines (a traceback at the end of a file is complete once the
        file is quiet; ``--check`` closes it at the end of the file)."""
        group_flush, idle_flush = self.options.group_flush, self.options.idle_flush
        for path in list(self._unsettled):
            followed = self._files.get(path)
            if followed is None:
                self._unsettled.discard(path)
                continue
            quiet = now - followed.last_data
            if quiet < group_flush or (followed.groups_closed and quiet < idle_flush):
                continue  # the common case under load: written a moment ago
            if self.scanning and not followed.quiet_scan:
                continue  # quiet only until the next scan says so: a traceback is closed after a full period
            tail = followed.tail
            if not tail.caught_up:
                continue
            diag = self._diag
            if not followed.groups_closed:
                # A process writes its traceback at once and then often nothing more: close what it left
                # open now and judge it, rather than after the quiet interval (docs/live.md "Latency").
                followed.groups_closed = True
                in_group = getattr(diag, "in_group", None)
                if diag is not None and (in_group is None or in_group(followed.source)):
                    diag.end_file(followed.source)
                    self._fed_since_eval = True
                    self._next_eval = min(self._next_eval, self._last_eval + self.options.urgent_evaluate_interval)
            if quiet < idle_flush:
                continue
            # Quiet at our offset may still be a file truncated and regrown to exactly that size: one
            # look at its remembered bytes before it counts as settled (FileTail's rules).
            if self._poll(followed, check_path=False, verify=True):
                continue
            self._unsettled.discard(path)
            text = tail.partial()
            lineno = tail.next_lineno
            if text is not None and text != followed.partial_shown:
                followed.partial_shown = text
                if diag is not None and followed.committed is None and lineno is not None:
                    # An unterminated line that stays quiet is a line (as --check reads a file): given to
                    # the diagnostics once; if its end comes later, that end is not given again.
                    followed.committed = lineno
                    self._feed(diag, followed.source, lineno, [text])
                message = LinesAppended(
                    source=followed.source, first_lineno=lineno, lines=(), offset=tail.line_start, partial=text
                )
                self._publish([message])
            if diag is not None:
                diag.end_file(followed.source)

    def _backfill_slice(self) -> None:
        deadline = time.monotonic() + self.options.backfill_slice
        while self._backfill:
            path = self._backfill.popleft()
            followed = self._files.get(path)
            if followed is None:
                continue
            before = followed.tail.bytes_read
            outputs = followed.tail.backfill(self.options.backfill_chunk)
            self._history_counted(followed, followed.tail.bytes_read - before)
            if outputs:
                self._handle(followed, outputs)
            if followed.tail.history_pending:
                self._backfill.append(path)
            else:
                self._history_counted(followed, followed.history)  # read, or cut short: nothing left of it
                if self._diag is not None:
                    self._stat_to(self._diag, followed)
            if time.monotonic() >= deadline:
                break
        if (self._history_read != self._progress_sent and not self.history_complete.is_set()
                and self._wanted(HistoryProgress)):
            self._progress_sent = self._history_read
            self._publish([HistoryProgress(bytes_read=self._history_read, bytes_total=self._history_bytes,
                                           files=self._history_files)])
        self._check_history_complete()

    def _check_history_complete(self) -> None:
        if self._backfill or self.history_complete.is_set():
            return
        self._settle(time.monotonic())  # what the history ends with, if the file is quiet
        self.history_complete.set()
        self._publish(
            [
                HistoryComplete(
                    files=len(self._files),
                    lines=self._history_lines,
                    seconds=round(time.monotonic() - self._started_at, 3),
                )
            ]
        )
        self._next_eval = 0.0

    # --- findings -------------------------------------------------------------------------------------

    def _evaluate(self) -> None:
        now = time.monotonic()
        self._next_eval = now + self.options.evaluate_interval
        diag = self._diag
        if diag is None or not self._files:  # no file yet (a log dir before the launch): nothing to judge
            return
        if not self._fed_since_eval and now - self._last_eval < self.options.quiet_evaluate_interval:
            return
        self._fed_since_eval = False
        self._last_eval = now
        try:
            evaluation = diag.evaluate(time.time())
        except Exception as exc:
            self._error(f"diagnostics evaluation failed: {type(exc).__name__}: {exc}")
            return
        with self._findings_lock:
            messages: list[Message] = list(self._tracker.update(evaluation.findings))
            previous, self._outcome = self._outcome, evaluation.outcome
        self.evaluated = True
        outcome = evaluation.outcome
        if outcome is not None and (previous is None or previous.state is not outcome.state):
            messages.append(OutcomeChanged(outcome=outcome, previous=previous))
        last = self._last_metrics
        if (last is None or last.metrics != evaluation.metrics or last.checks != evaluation.checks
                or last.outcome != evaluation.outcome):
            messages.append(MetricsUpdated(summary=dict(evaluation.metrics), checks=tuple(evaluation.checks),
                                           outcome=outcome))
            self._last_metrics = evaluation
        if messages:
            self._publish(messages)

    # --- publishing -----------------------------------------------------------------------------------

    def _wanted(self, kind: type) -> bool:
        return any(sub.wants(kind) for sub in self._subs)

    def _publish(self, messages: list[Message]) -> None:
        for sub in self._subs:
            sub.put_many(messages)

    def _error(self, message: str, path: str | None = None) -> None:
        if message in self._errors_seen:
            return
        if len(self._errors_seen) < 1000:
            self._errors_seen.add(message)
        self._publish([FollowError(message=message, path=path)])
