"""``a1x-tui watch --dashboard PATH``: what a dashboard shows, as JSON lines, for ``attach HOST:PATH``.

The far side of ``a1x-tui attach HOST:PATH`` (docs/ui.md "From a laptop"): the same target as ``attach
PATH`` (a run of ours, followed where its logs are; or any log folder, read-only), followed by the
dashboard's own follower (``engine_diagnosis``, the plotted series), sent as one JSON object a line,
at most four batches a second. Beside ``watch --format json``'s types:

- ``target`` first: ``follow``, ``run_dir`` and ``socket`` (None for a read-only target: the supervisor's
  socket, or a short link to it while this stream lasts where its path is too long to connect to),
  ``config``, ``note``, ``host``;
- ``file`` (``file``, ``role``, ``replica``), ``file_reset`` (``file``, ``reason``);
- ``lines`` (``file``, ``role``, ``replica``, ``first_lineno``, ``lines``, ``history``, ``done``): each
  file's history is sent as its last ``HISTORY_TAIL`` lines once read (the follower's
  ``FollowOptions.history_tail``), then every new line;
- ``progress`` (``percent``, ``files``, ``total``): how much of the history is read (bytes), while it is;
- ``metrics`` (``summary``, ``outcome``, ``series``), ``problem`` (``message``);
- ``state`` (``state``, ``live``, ``note``): the supervisor's state when it changes (a run of ours);
- ``gpu`` (``file``, ``lines``): new lines of ``RUN/gpu/<host>.jsonl`` (the last 256 KiB at first).

Every string passes ``redact``. Never imports Textual. Ends on SIGINT/SIGTERM or when its reader goes.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

HISTORY_TAIL = 2000  # lines of each file's past sent (the view keeps 20,000; the rest stays in the file)
FLUSH_S = 0.25
STATE_S = 1.0
GPU_TAIL_BYTES = 256 * 1024


class _Out:
    """One JSON object a line on stdout, redacted, from any thread."""

    def __init__(self) -> None:
        from a1x_diagnostics.report import env_secrets, redact

        self._redact = redact
        self._secrets = env_secrets()
        self._lock = threading.Lock()

    def __call__(self, obj: dict[str, Any]) -> None:
        now = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
        text = self._redact(json.dumps({"type": obj.pop("type"), "time": now, **obj}, default=str), self._secrets)
        with self._lock:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()


def _source(source: Any) -> dict[str, Any]:
    return {"file": source.path, "role": source.role.value, "replica": source.replica}


class _Lines:
    """Live lines batched (a file's history comes from the follower as its tail, once read)."""

    def __init__(self) -> None:
        self.live: list[dict[str, Any]] = []
        self.percent = -1  # of the history read, as last sent

    def add_live(self, m: Any) -> None:
        if not m.lines:
            return
        last = self.live[-1] if self.live else None
        if last is not None and last["file"] == m.source.path and last["first_lineno"] is not None and \
                m.first_lineno == last["first_lineno"] + len(last["lines"]):
            last["lines"].extend(m.lines)
            return
        self.live.append({"type": "lines", **_source(m.source), "first_lineno": m.first_lineno,
                          "lines": list(m.lines), "history": False, "done": False})


class _Gpu:
    """New complete lines of ``RUN/gpu/*.jsonl`` since the last look."""

    def __init__(self, run_dir: Path) -> None:
        self.folder = run_dir / "gpu"
        self.offsets: dict[str, int] = {}

    def new_lines(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if not self.folder.is_dir():
            return out
        for path in sorted(self.folder.glob("*.jsonl")):
            try:
                size = path.stat().st_size
                start = self.offsets.get(path.name)
                if start is None or size < start:
                    start = max(0, size - GPU_TAIL_BYTES) if start is None else 0
                if size == start:
                    continue
                with path.open("rb") as f:
                    f.seek(start)
                    data = f.read(size - start)
            except OSError:
                continue
            if start and not self.offsets.get(path.name):  # a first look mid-file: from the next line
                cut = data.find(b"\n") + 1
                data, start = data[cut:], start + cut
            end = data.rfind(b"\n") + 1
            self.offsets[path.name] = start + end
            lines = [line for line in data[:end].decode("utf-8", "replace").splitlines() if line.strip()]
            if lines:
                out.append({"type": "gpu", "file": path.name, "lines": lines})
        return out


def _state_loop(run_dir: Path, out: _Out, stop: threading.Event) -> None:
    from a1x_tui.commands.status import status_of

    gpu = _Gpu(run_dir)
    last: Any = object()
    while not stop.is_set():
        try:
            state, note, refused = status_of(run_dir)
        except Exception as exc:  # a half-written state.json must not end the stream
            state, note, refused = None, f"cannot read the run's state: {type(exc).__name__}: {exc}", None
        live = bool(state and state.pop("live", False))
        if state is not None:
            state.pop("updated_at", None)
        current = (state, live, note or refused)
        if current != last:
            last = current
            out({"type": "state", "state": state, "live": live, "note": note or refused})
        for message in gpu.new_lines():
            out(message)
        stop.wait(STATE_S)


def _reachable_socket(path: Path) -> tuple[str, Path | None]:
    """The path the near side's ssh forwards to: the run's socket, or, where its path is too long for a Unix
    socket address (sshd connects to it as given), a short link to it in a private temporary folder."""
    if len(str(path).encode()) < 100:
        return str(path), None
    base = min((tempfile.gettempdir(), "/tmp"), key=len) if Path("/tmp").is_dir() else tempfile.gettempdir()
    folder = Path(tempfile.mkdtemp(prefix="a1x-", dir=base))  # mode 0700: only this user gets through
    (folder / "supervisor.sock").symlink_to(path)
    return str(folder / "supervisor.sock"), folder


def run(args: argparse.Namespace, event_object: Callable[[Any], dict[str, Any] | None]) -> int:
    """``event_object``: watch's JSON of a follower message."""
    from a1x_diagnostics.engine import unknown_reason
    from a1x_diagnostics.live import FollowOptions, RunFollower, engine_diagnosis
    from a1x_tui import __version__
    from a1x_tui._stdout import stdout_closed
    from a1x_tui.ui.series import SeriesDiagnosis
    from a1x_tui.ui.target import TargetError, resolve_target

    try:
        target = resolve_target(Path(args.path), Path(args.config) if args.config else None)
    except TargetError as exc:
        print(f"a1x-tui watch: {exc}", file=sys.stderr)
        return 3
    if target.run_dir is None:
        reason = unknown_reason(target.follow, args.run)
        if reason is not None:
            print(f"a1x-tui watch: {reason}", file=sys.stderr)
            return 3
    out = _Out()
    socket_path, cleanup = _reachable_socket(target.run_dir / "supervisor.sock") if target.run_dir else (None, None)
    out({"type": "target", "follow": str(target.follow), "run_dir": str(target.run_dir) if target.run_dir else None,
         "socket": socket_path, "config": str(target.config) if target.config else None, "note": target.note,
         "host": socket.gethostname(), "version": __version__})
    diagnosis: list[SeriesDiagnosis] = []

    def make() -> SeriesDiagnosis:
        config = target.config if target.config is not None and target.config.is_file() else None
        factory, notes = engine_diagnosis(config, target=target.follow)
        for note in notes:
            out({"type": "problem", "message": note})
        diagnosis.append(SeriesDiagnosis(factory()))
        return diagnosis[-1]

    options = FollowOptions(poll=True if args.poll else None, history_tail=lambda files: HISTORY_TAIL)
    follower = RunFollower(str(target.follow), run=args.run, options=options, diagnosis=make)
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda signum, frame: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    if args.end_with_stdin:
        from a1x_tui.remote.far import end_with_stdin

        end_with_stdin(stop)
    state_thread = None
    if target.run_dir is not None:
        state_thread = threading.Thread(target=_state_loop, args=(target.run_dir, out, stop), daemon=True)
        state_thread.start()
    try:
        _follow(follower, out, diagnosis, stop, stdout_closed, event_object)
    finally:
        stop.set()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if state_thread is not None:
            state_thread.join(3.0)
        if cleanup is not None:
            shutil.rmtree(cleanup, ignore_errors=True)
    status = follower.status()
    if not stdout_closed():
        out({"type": "ended", "status": status.value, "exit_code": status.exit_code,
             "open": sorted(follower.findings_by_key()), "reason": "stopped", "outcome": None})
    return status.exit_code


def _follow(follower: Any, out: _Out, diagnosis: list[Any], stop: threading.Event, closed: Any,
            event_object: Callable[[Any], dict[str, Any] | None]) -> None:
    from a1x_diagnostics.live import (
        FileAppeared,
        FileReset,
        FollowError,
        HistoryLoaded,
        HistoryProgress,
        LinesAppended,
        MetricsUpdated,
    )

    sub = follower.subscribe()
    follower.start()
    lines = _Lines()
    next_flush = time.monotonic() + FLUSH_S
    try:
        while not stop.is_set() and not closed():
            message = sub.get(timeout=0.1)
            batch = [message, *sub.drain()] if message is not None else []
            for m in batch:
                if isinstance(m, LinesAppended):
                    lines.add_live(m)
                elif isinstance(m, HistoryLoaded):
                    out({"type": "lines", **_source(m.source), "first_lineno": m.first_lineno, "lines": list(m.lines),
                         "history": True, "done": m.done})
                elif isinstance(m, HistoryProgress):
                    percent = min(99, 100 * m.bytes_read // m.bytes_total) if m.bytes_total else 99
                    if percent != lines.percent:
                        lines.percent = percent
                        out({"type": "progress", "percent": percent, "files": m.files, "total": m.bytes_total})
                elif isinstance(m, FileAppeared):
                    out({"type": "file", **_source(m.source)})
                elif isinstance(m, FileReset):
                    out({"type": "file_reset", "file": m.source.path, "reason": m.reason})
                elif isinstance(m, MetricsUpdated):
                    series = dict(diagnosis[-1].snapshot) if diagnosis else {}
                    outcome = m.outcome.model_dump(mode="json") if m.outcome is not None else None
                    out({"type": "metrics", "summary": m.summary, "outcome": outcome, "series": series})
                elif isinstance(m, FollowError):
                    out({"type": "problem", "message": m.message})
                else:
                    obj = event_object(m)
                    if obj is not None:
                        out(obj)
            if lines.live and time.monotonic() >= next_flush:
                for chunk in lines.live:
                    out(chunk)
                lines.live = []
                next_flush = time.monotonic() + FLUSH_S
    finally:
        follower.stop(timeout=2.0)
