"""The remote worker: the far side's dashboard stream (``attach HOST:PATH``), turned into the app's messages.

The far side follows the run with the dashboard's own follower and sends JSON lines
(``a1x_tui.commands.dashboard_feed``); this worker posts what the local workers would have posted:
log lines, findings, metrics and plotted series, the supervisor's state, and the far side's GPU samples
(written to a local copy of ``RUN/gpu/`` and read as ``feeds.gpus`` reads them). A lost connection is a
one-line notice and a new connection; the files are read again from the new stream, and a finding is
neither repeated nor lost (``a1x_tui.remote.book``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.message import Message

from a1x_diagnostics.events import Role, Source
from a1x_diagnostics.findings import Finding, RunOutcome
from a1x_tui.remote.book import FindingBook
from a1x_tui.ui.feeds.follow import source_label
from a1x_tui.ui.feeds.gpus import hosts_from_files
from a1x_tui.ui.logstore import LineMaker
from a1x_tui.ui.messages import (
    FindingsChanged,
    FollowedRunChanged,
    FollowProblem,
    GpusSampled,
    HistoryProgress,
    HistoryRead,
    LineChunk,
    LinesArrived,
    LogFileReset,
    LogFileSeen,
    MetricsChanged,
    RunStateChanged,
    SeriesChanged,
)

Post = Callable[[Message], Any]


def _source(obj: dict[str, Any]) -> Source:
    path, replica = str(obj.get("file")), str(obj.get("replica") or "")
    try:
        role = Role(str(obj.get("role")))
    except ValueError:
        role = Role.UNKNOWN
    index = replica.rsplit("_", 1)[1] if "_" in replica else ""
    return Source(path, role, int(index) if index.isdigit() else None)


class RemoteFeed:
    """Reads ``remote.messages()`` until ``stop`` is set, posting the app's messages through ``post``."""

    def __init__(self, remote: Any, post: Post, mirror: Path) -> None:
        self.remote = remote
        self.post = post
        self.mirror = mirror  # a local folder standing for the far side's run: gpu/<host>.jsonl
        self.book = FindingBook()
        self.resolved: dict[str, Finding] = {}
        self.files: dict[str, str] = {}  # path -> label
        self.gpu_seen = False
        self.maker = LineMaker()  # lines prepared here, as the follow worker prepares them
        self._findings_said = False  # the first findings of a run are its past (no toast), as the follow worker says

    def run(self, stop: threading.Event) -> None:
        watcher = threading.Thread(target=lambda: (stop.wait(), self.remote.close()), daemon=True)
        watcher.start()  # leaving the dashboard ends the ssh connections
        try:
            for obj in self.remote.messages():
                if stop.is_set():
                    return
                self.take(obj)
        except Exception as exc:  # the link's own failure: one notice, never a crashed worker
            self.post(FollowProblem(f"{self.remote.host}: {type(exc).__name__}: {exc}"))

    def take(self, obj: dict[str, Any]) -> None:
        """One object of the stream (public for tests)."""
        from a1x_diagnostics.report import redact

        kind = obj.get("type")
        if kind == "target":  # a new connection: its history comes again, the files start over
            for path in self.files:
                self.post(LogFileReset(path, "reconnected"))
        elif kind == "file":
            label = source_label(_source(obj))
            self.files[str(obj["file"])] = label
            self.post(LogFileSeen(str(obj["file"]), label))
        elif kind == "file_reset":
            self.post(LogFileReset(str(obj["file"]), str(obj.get("reason"))))
        elif kind == "lines":
            path = str(obj["file"])
            label = self.files.setdefault(path, source_label(_source(obj)))
            first = obj.get("first_lineno")
            lineno = first if isinstance(first, int) else None
            history = bool(obj.get("history"))
            made = self.maker.make(path, label, lineno, [str(t) for t in obj.get("lines") or []], history=history)
            self.post(LinesArrived([LineChunk(path, label, lineno, tuple(made), history=history,
                                              done=bool(obj.get("done")))]))
        elif kind == "progress":
            self.post(HistoryProgress(int(obj.get("percent") or 0), int(obj.get("files") or 0),
                                      int(obj.get("total") or 0)))
        elif kind in ("finding_raised", "finding_updated", "finding_resolved", "history_complete", "run_switched",
                      "outcome", "connection"):
            self._events(obj)
        elif kind == "metrics":
            outcome = obj.get("outcome")
            self.post(MetricsChanged(dict(obj.get("summary") or {}),
                                     RunOutcome.model_validate(outcome) if outcome else None))
            self.post(SeriesChanged({str(k): [float(v) for v in vs] for k, vs in (obj.get("series") or {}).items()}))
        elif kind == "state":
            state = obj.get("state")
            self.post(RunStateChanged(state if isinstance(state, dict) else None, bool(obj.get("live")),
                                      obj.get("note")))
        elif kind == "gpu":
            self._gpu(str(obj.get("file")), [str(line) for line in obj.get("lines") or []])
        elif kind == "problem":
            self.post(FollowProblem(redact(str(obj.get("message")))))
        elif kind == "ended":
            self.post(FollowProblem(f"{self.remote.host}: the far side's follower ended"))

    def _events(self, obj: dict[str, Any]) -> None:
        before = dict(self.book.open)
        history = self.book.history
        for said in self.book.take(obj):
            kind = said["type"]
            if kind == "connection":
                self.post(FollowProblem(self._connection(said)))
            elif kind == "run_switched":
                self.resolved.clear()
                self._findings_said = False
                self.post(FollowedRunChanged(str(said.get("run")), said.get("previous")))
            elif kind == "finding_resolved" and said["key"] in before:
                self.resolved[said["key"]] = Finding.model_validate(before[said["key"]])
            elif kind == "history_complete" and not history:
                self.post(HistoryRead(int(said.get("files") or 0), int(said.get("lines") or 0),
                                      float(said.get("seconds") or 0.0)))
        if self.book.open != before or obj["type"] == "run_switched":
            for key in self.book.open:
                self.resolved.pop(key, None)
            opened = {k: Finding.model_validate(v) for k, v in self.book.open.items()}
            switch = obj["type"] == "run_switched"
            self.post(FindingsChanged(opened, dict(self.resolved), first=not switch and not self._findings_said))
            self._findings_said = self._findings_said or not switch
        if obj["type"] == "history_complete" and not self.gpu_seen:
            self.post(GpusSampled([], note=f"no GPU samples from {self.remote.host}: the run there records none "
                                  "(`a1x-tui gpu-agent RUN` on each node writes them)"))

    def _connection(self, said: dict[str, Any]) -> str:
        state = said.get("state")
        if state == "lost":
            return f"{said.get('message')}; trying again in {said.get('retry_in', 0):g} s"
        if state == "restored":
            return f"{self.remote.host}: connected again"
        return str(said.get("message"))

    def _gpu(self, name: str, lines: list[str]) -> None:
        if "/" in name or name.startswith("."):
            return  # a file name only, never a path
        folder = self.mirror / "gpu"
        folder.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError), (folder / name).open("a", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
        self.gpu_seen = True
        self.post(GpusSampled(hosts_from_files(self.mirror)))
