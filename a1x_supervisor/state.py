"""The run's state (``state.json``, rewritten atomically) and its event log (``events.jsonl``).

``state.json`` is the whole truth at one moment: a reader never sees half a file (temp file in
the same folder, fsync, ``os.replace``). ``events.jsonl`` is the history: one JSON object per line,
numbered by ``seq``, appended and flushed as it happens. Every text passes through the secret
scrubber before it is stored.
"""

from __future__ import annotations

import json
import queue
import socket
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from a1x_supervisor.runfiles import append_text, read_text, write_atomic
from a1x_supervisor.secrets import Scrubber

SCHEMA_VERSION: Literal[1] = 1

StageStatus = Literal[
    "pending",  # not reached yet
    "checking",  # verifying existing outputs (resume)
    "running",
    "retrying",  # waiting to retry after a Hugging Face rate limit
    "succeeded",
    "skipped",  # outputs already verified, or not selected (--from/--only)
    "failed",
    "stopped",
    "orphaned",  # its supervisor died while it ran; see ``reason``
]
RunStatus = Literal["starting", "running", "succeeded", "failed", "stopped", "blocked"]
FINAL_RUN_STATUSES: frozenset[str] = frozenset({"succeeded", "failed", "stopped", "blocked"})


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class StageState(BaseModel):
    name: str
    title: str = ""
    status: StageStatus = "pending"
    reason: str = ""
    attempts: int = 0
    started_at: str | None = None
    ended_at: str | None = None
    exit_code: int | None = None
    command: str | None = None  # label of the command running now
    commands: list[dict[str, Any]] = Field(default_factory=list)  # argv/cwd/env additions (no secrets)
    process: dict[str, Any] | None = None  # ProcessHandle.to_json() while it runs
    progress: dict[str, Any] | None = None
    log: str = ""
    failure: dict[str, Any] | None = None  # e.g. the replica_died finding that stopped training
    # The Slurm job of a cluster train stage (SlurmJob.to_json): job_id, state, reason, reason_text,
    # nodes, exit_code, restarts, run (part_<N>/run_<M>), slurm_dir. Kept after the job ends.
    slurm: dict[str, Any] | None = None


class SupervisorInfo(BaseModel):
    pid: int
    host: str
    started_at: str
    executor: str = "local"


class RunState(BaseModel):
    schema_version: Literal[1] = SCHEMA_VERSION
    run_id: str
    run_dir: str
    status: RunStatus = "starting"
    message: str = ""
    created_at: str = Field(default_factory=now_iso)
    updated_at: str = Field(default_factory=now_iso)
    supervisor: SupervisorInfo | None = None
    plan: dict[str, Any] = Field(default_factory=dict)
    current_stage: str | None = None
    stages: list[StageState] = Field(default_factory=list)
    outputs: dict[str, str] = Field(default_factory=dict)
    preflight: dict[str, Any] | None = None
    orphans: list[dict[str, Any]] = Field(default_factory=list)

    def stage(self, name: str) -> StageState:
        for st in self.stages:
            if st.name == name:
                return st
        raise KeyError(name)


atomic_write_text = write_atomic  # a run's files are never written through a link (runfiles)


def load_state(path: Path) -> RunState | None:
    try:
        return RunState.model_validate_json(read_text(path))
    except (OSError, ValueError):
        return None


def _scrub_any(value: Any, scrubber: Scrubber) -> Any:
    if isinstance(value, str):
        return scrubber.scrub(value)
    if isinstance(value, dict):
        return {k: _scrub_any(v, scrubber) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_any(v, scrubber) for v in value]
    return value


class StateStore:
    """Owns ``state.json``: every change goes through ``update`` and is written at once."""

    def __init__(self, path: Path, state: RunState, scrubber: Scrubber) -> None:
        self.path = path
        self.state = state
        self._scrubber = scrubber
        self._lock = threading.RLock()

    def update(self, change: Callable[[RunState], None] | None = None) -> RunState:
        with self._lock:
            if change is not None:
                change(self.state)
            self.state.updated_at = now_iso()
            data = _scrub_any(self.state.model_dump(mode="json"), self._scrubber)
            atomic_write_text(self.path, json.dumps(data, indent=2) + "\n")
            return self.state

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return dict(_scrub_any(self.state.model_dump(mode="json"), self._scrubber))


class EventLog:
    """Appends events to ``events.jsonl`` and hands them to live subscribers."""

    def __init__(self, path: Path, scrubber: Scrubber, *, keep: int = 10000) -> None:
        self.path = path
        self._scrubber = scrubber
        self._lock = threading.Lock()
        self._recent: deque[dict[str, Any]] = deque(maxlen=keep)
        self._subscribers: list[queue.Queue[dict[str, Any] | None]] = []
        self._seq = self._last_seq()

    def _last_seq(self) -> int:
        last = 0
        try:
            text = read_text(self.path)
        except OSError:
            return last
        for line in text.splitlines():
            try:
                last = max(last, int(json.loads(line).get("seq", 0)))
            except (ValueError, AttributeError):
                continue
        return last

    def emit(self, kind: str, message: str, *, stage: str | None = None, **data: Any) -> dict[str, Any]:
        with self._lock:
            self._seq += 1
            event: dict[str, Any] = {
                "seq": self._seq,
                "ts": now_iso(),
                "kind": kind,
                "stage": stage,
                "message": message,
            }
            if data:
                event["data"] = data
            event = _scrub_any(event, self._scrubber)
            append_text(self.path, json.dumps(event) + "\n")
            self._recent.append(event)
            for sub in list(self._subscribers):
                sub.put(event)
            return event

    def subscribe(self, since: int = 0) -> tuple[queue.Queue[dict[str, Any] | None], list[dict[str, Any]]]:
        """A queue of future events plus the recent events after ``since`` (replayed first)."""
        q: queue.Queue[dict[str, Any] | None] = queue.Queue()
        with self._lock:
            backlog = [e for e in self._recent if e["seq"] > since]
            self._subscribers.append(q)
        return q, backlog

    def unsubscribe(self, q: queue.Queue[dict[str, Any] | None]) -> None:
        with self._lock:
            if q in self._subscribers:
                self._subscribers.remove(q)

    def close(self) -> None:
        """Tell every subscriber the stream ended."""
        with self._lock:
            for sub in self._subscribers:
                sub.put(None)


@dataclass(frozen=True, slots=True)
class FindingChanges:
    """What one ``FindingsLog.observe`` recorded: (key, finding) pairs."""

    raised: list[tuple[str, dict[str, Any]]]
    updated: list[tuple[str, dict[str, Any]]]
    cleared: list[tuple[str, dict[str, Any]]]


class FindingsLog:
    """``findings.jsonl``: each diagnostics finding when it is raised, when its content changes and
    when it clears.

    Findings are keyed as the live follower keys them (``a1x_diagnostics.live.finding_key``: the id, or
    ``id@replica``), so a finding whose evidence moves on is the same finding, updated, exactly as
    ``a1x-tui watch`` reports it (docs/live.md). An update is written when the severity changed at
    once, else at most every ``update_every_s`` (a growing buffer changes at every evaluation), and
    ``flush`` writes the last content of each open finding that was held back."""

    def __init__(self, path: Path, scrubber: Scrubber, *, update_every_s: float = 60.0) -> None:
        self.path = path
        self._scrubber = scrubber
        self.update_every_s = update_every_s
        self.active: dict[str, dict[str, Any]] = {}  # the open findings, as last seen
        self._written: dict[str, tuple[dict[str, Any], float]] = {}  # as last written, and when

    def observe(
        self, findings: Mapping[str, dict[str, Any]], *, stage: str, now: float, flush: bool = False
    ) -> FindingChanges:
        """Record the open findings now (by key); returns what was raised, updated and cleared."""
        changes = FindingChanges([], [], [])
        for key, finding in findings.items():
            written = self._written.get(key)
            if written is None:
                changes.raised.append((key, finding))
                self._write({"ts": now_iso(), "stage": stage, "change": "raised", "key": key, "finding": finding})
            elif written[0] != finding and (
                flush
                or finding.get("severity") != written[0].get("severity")
                or now - written[1] >= self.update_every_s
            ):
                changes.updated.append((key, finding))
                self._write({"ts": now_iso(), "stage": stage, "change": "updated", "key": key, "finding": finding})
            else:
                continue
            self._written[key] = (finding, now)
        for key, finding in self.active.items():
            if key not in findings:
                changes.cleared.append((key, finding))
                self._written.pop(key, None)
                self._write(
                    {"ts": now_iso(), "stage": stage, "change": "cleared", "key": key, "id": finding.get("id")}
                )
        self.active = dict(findings)
        return changes

    def record(self, findings: list[dict[str, Any]], *, stage: str) -> None:
        """Record findings raised outside the live diagnostics (a refused Slurm submission, its
        warnings): written as raised, without touching what the diagnostics hold active."""
        for finding in findings:
            self._write({"ts": now_iso(), "stage": stage, "change": "raised", "finding": finding})

    def _write(self, record: dict[str, Any]) -> None:
        append_text(self.path, json.dumps(_scrub_any(record, self._scrubber)) + "\n")


def hostname() -> str:
    return socket.gethostname()
