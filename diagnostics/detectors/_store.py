"""The bounded memory of a run: the events detectors may quote, and per-file facts.

Every container is bounded: a kind of event keeps its first and last few occurrences and a count,
so a gigabyte of logs costs the same memory as a megabyte. Metric-carrying events go to
``diagnostics.metrics``; this store keeps what evidence needs.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from diagnostics.detectors._probes import Hit, event_hits
from diagnostics.events import (
    Checkpoint,
    ConfigDump,
    DynamicSampling,
    Event,
    Prefetch,
    PromptRejected,
    Role,
    Signal,
    SignalKind,
    Source,
    Staleness,
    Stat,
    Step,
    Throttle,
    Traceback,
    TrainReport,
    WeightSync,
)
from diagnostics.metrics import epoch

T = TypeVar("T")


class Retained(Generic[T]):
    """The first ``k`` and the last ``k`` items of a stream, plus how many there were."""

    __slots__ = ("_first", "_last", "count", "k")

    def __init__(self, k: int = 16) -> None:
        self.k = k
        self.count = 0
        self._first: list[T] = []
        self._last: deque[T] = deque(maxlen=k)

    def add(self, item: T) -> None:
        self.count += 1
        if len(self._first) < self.k:
            self._first.append(item)
        else:
            self._last.append(item)

    @property
    def first(self) -> T | None:
        return self._first[0] if self._first else None

    @property
    def last(self) -> T | None:
        if self._last:
            return self._last[-1]
        return self._first[-1] if self._first else None

    def items(self) -> list[T]:
        """All kept items in arrival order (every item when ``count <= 2k``)."""
        return [*self._first, *self._last]

    def __iter__(self) -> Iterator[T]:
        return iter(self.items())

    def __len__(self) -> int:
        return self.count

    def __bool__(self) -> bool:
        return self.count > 0


@dataclass(slots=True)
class Mark:
    line: int
    ts: float | None


@dataclass(slots=True)
class FileFacts:
    """What is known about one log file: its span, and where notable things were last seen."""

    source: Source
    first_ts: float | None = None
    last_ts: float | None = None
    last_line: int = 0
    events: int = 0
    size: int | None = None
    mtime: float | None = None
    first_marks: dict[str, Mark] = field(default_factory=dict)
    marks: dict[str, Mark] = field(default_factory=dict)  # last occurrence per mark
    last_traceback: Traceback | None = None
    last_error: Traceback | None = None  # the last traceback that is not torchrun's own ChildFailedError
    last_event: Event | None = None

    def mark(self, name: str, line: int, ts: float | None) -> None:
        m = Mark(line, ts)
        self.first_marks.setdefault(name, m)
        self.marks[name] = m

    def has(self, name: str) -> bool:
        return name in self.marks


_MAX_UUIDS = 16384


class EventStore:
    """Routes events into bounded containers and per-file facts."""

    def __init__(self, k: int = 16) -> None:
        self.k = k
        self.files: dict[str, FileFacts] = {}
        self.signals: dict[SignalKind, Retained[Signal]] = {}
        self.hits: dict[str, Retained[Hit]] = {}
        self.tracebacks: Retained[Traceback] = Retained(64)
        self.checkpoints: dict[str, Retained[Checkpoint]] = {}
        self.prefetch: dict[str, Retained[Prefetch]] = {}
        self.weight_sync: dict[str, Retained[WeightSync]] = {}
        self.throttle: dict[str, Retained[Throttle]] = {}
        self.prompt_rejected: Retained[PromptRejected] = Retained(k)
        self.staleness: Retained[Staleness] = Retained(k)
        self.dynamic_sampling: Retained[DynamicSampling] = Retained(k)
        self.train_reports: Retained[TrainReport] = Retained(4)
        self.steps: Retained[Step] = Retained(k)
        self.stats: Retained[Stat] = Retained(k)
        self.config_dumps: list[ConfigDump] = []
        self.uuid_source: dict[str, Source] = {}
        self.newest_ts: float | None = None
        self.oldest_ts: float | None = None
        self.event_count = 0
        self._recent_hits: deque[tuple[str, str, int]] = deque(maxlen=64)

    # --- intake -------------------------------------------------------------------------------
    def add(self, event: Event) -> None:
        self.event_count += 1
        facts = self.files.get(event.source.path)
        if facts is None:
            facts = self.files[event.source.path] = FileFacts(event.source)
        facts.events += 1
        facts.last_event = event
        if event.line > facts.last_line:
            facts.last_line = event.line
        ts = epoch(event.ts)
        if ts is not None:
            if facts.first_ts is None or ts < facts.first_ts:
                facts.first_ts = ts
            if facts.last_ts is None or ts > facts.last_ts:
                facts.last_ts = ts
            if self.newest_ts is None or ts > self.newest_ts:
                self.newest_ts = ts
            if self.oldest_ts is None or ts < self.oldest_ts:
                self.oldest_ts = ts
        if isinstance(event, Traceback) and event.last_line > facts.last_line:
            facts.last_line = event.last_line
        self._route(event, facts, ts)
        for hit in event_hits(event):
            # A traceback is followed by the signal its last line means: count that error once.
            line = event.last_line if isinstance(event, Traceback) else event.line
            key = (hit.id, event.source.path, line)
            if key in self._recent_hits:
                continue
            self._recent_hits.append(key)
            self._retain(self.hits, hit.id, hit)
            facts.mark(f"hit:{hit.id}", event.line, ts)

    def _retain(self, table: dict[str, Retained[T]], key: str, item: T, k: int | None = None) -> None:
        bucket = table.get(key)
        if bucket is None:
            bucket = table[key] = Retained(k or self.k)
        bucket.add(item)

    def _route(self, event: Event, facts: FileFacts, ts: float | None) -> None:
        if isinstance(event, Stat):
            self.stats.add(event)
            facts.mark("stat", event.line, ts)
        elif isinstance(event, Step):
            self.steps.add(event)
            facts.mark("step", event.line, ts)
        elif isinstance(event, TrainReport):
            self.train_reports.add(event)
            facts.mark("train_report", event.line, ts)
        elif isinstance(event, Signal):
            bucket = self.signals.get(event.kind)
            if bucket is None:
                bucket = self.signals[event.kind] = Retained(self.k)
            bucket.add(event)
            facts.mark(event.kind.value, event.line, ts)
            if event.kind in (SignalKind.REPLICA_STARTED, SignalKind.REPLICA_REGISTERED):
                uuid = event.fields.get("uuid")
                if isinstance(uuid, str) and uuid and len(self.uuid_source) < _MAX_UUIDS:
                    self.uuid_source.setdefault(uuid, event.source)
        elif isinstance(event, Traceback):
            self.tracebacks.add(event)
            facts.last_traceback = event
            if not (event.exc_type or "").endswith("ChildFailedError"):
                facts.last_error = event
            facts.mark("traceback", event.line, ts)
        elif isinstance(event, WeightSync):
            self._retain(self.weight_sync, event.phase.value, event)
            facts.mark(f"sync:{event.phase.value}", event.line, ts)
        elif isinstance(event, Checkpoint):
            self._retain(self.checkpoints, event.phase.value, event)
            facts.mark(f"ckpt:{event.phase.value}", event.line, ts)
        elif isinstance(event, Prefetch):
            self._retain(self.prefetch, event.event, event, 8)
            facts.mark("prefetch", event.line, ts)
        elif isinstance(event, Throttle):
            self._retain(self.throttle, event.state.value, event)
            facts.mark(f"throttle:{event.state.value}", event.line, ts)
        elif isinstance(event, PromptRejected):
            self.prompt_rejected.add(event)
            facts.mark("prompt_rejected", event.line, ts)
        elif isinstance(event, Staleness):
            self.staleness.add(event)
        elif isinstance(event, DynamicSampling):
            self.dynamic_sampling.add(event)
        elif isinstance(event, ConfigDump) and not any(d.scope == event.scope for d in self.config_dumps):
            self.config_dumps.append(event)  # one per scope: the full dump and the rollout's

    # --- queries -------------------------------------------------------------------------------
    def signal(self, kind: SignalKind) -> Retained[Signal]:
        return self.signals.get(kind) or Retained(1)

    def hit(self, hit_id: str) -> Retained[Hit]:
        return self.hits.get(hit_id) or Retained(1)

    def sync(self, phase: str) -> Retained[WeightSync]:
        return self.weight_sync.get(phase) or Retained(1)

    def files_of(self, *roles: Role) -> list[FileFacts]:
        return [f for f in self.files.values() if f.source.role in roles]

    def source_of_uuid(self, uuid: str) -> Source | None:
        return self.uuid_source.get(uuid)
