"""The bounded memory of a run: the events detectors may quote, and per-file facts.

Every container is bounded: a kind of event keeps its first and last few occurrences and a count,
so a gigabyte of logs costs the same memory as a megabyte. Metric-carrying events go to
``a1x_diagnostics.metrics``; this store keeps what evidence needs.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from a1x_diagnostics.detectors._errors import MAX_GROUPS, ErrorGroup, kind_of, message_of, signature
from a1x_diagnostics.detectors._probes import Hit, event_hits
from a1x_diagnostics.events import (
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
    SyncPhase,
    Throttle,
    Traceback,
    TrainReport,
    WeightSync,
    epoch,
)

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
    # First lines of tracebacks printed right after a line announcing a caught error (docs/reference/cosmos-rl.md §6.3:
    # '[Rollout] Failed in rollout generation: ...' then print_exc()); judged when the traceback arrives,
    # while the announcing mark is still the one before it.
    caught_tracebacks: deque[int] = field(default_factory=lambda: deque(maxlen=64))

    def mark(self, name: str, line: int, ts: float | None) -> None:
        m = Mark(line, ts)
        self.first_marks.setdefault(name, m)
        self.marks[name] = m

    def has(self, name: str) -> bool:
        return name in self.marks


_MAX_UUIDS = 16384
_ERROR_SIGNALS = frozenset({SignalKind.ERROR_LINE, SignalKind.FATAL_SIGNAL, SignalKind.CHILD_FAILED,
                            SignalKind.PROCESS_FAILED, SignalKind.PROCESS_EXITED_EARLY})
_SYNC_NAMES = {p: (p.value, f"sync:{p.value}") for p in SyncPhase}  # built once, not per event


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
        self.errors: dict[tuple[str, str], ErrorGroup] = {}  # (kind, signature) -> group (``_errors``)
        self.errors_uncounted = 0  # error events beyond ``MAX_GROUPS`` signatures
        self._recent_hits: deque[tuple[str, str, int]] = deque(maxlen=64)

    # --- intake -------------------------------------------------------------------------------
    def add(self, event: Event) -> float | None:
        """Take one event; returns its time as ``epoch(event.ts)`` (the ``Collector`` passes it on)."""
        self.event_count += 1
        source = event.source
        facts = self.files.get(source.path)
        if facts is None:
            facts = self.files[source.path] = FileFacts(source)
        facts.events += 1
        facts.last_event = event
        if event.line > facts.last_line:
            facts.last_line = event.line
        ts = epoch(event.ts)
        if ts is not None:
            first, last = facts.first_ts, facts.last_ts
            if first is None or ts < first:
                facts.first_ts = ts
            if last is None or ts > last:
                facts.last_ts = ts
            newest, oldest = self.newest_ts, self.oldest_ts
            if newest is None or ts > newest:
                self.newest_ts = ts
            if oldest is None or ts < oldest:
                self.oldest_ts = ts
        route = _ROUTES.get(type(event), _UNKNOWN)
        if route is _UNKNOWN:
            route = _ROUTES[type(event)] = _route_for(type(event))
        if route is not None:
            route(self, event, facts, ts)
        for hit in event_hits(event):
            # A traceback is followed by the signal its last line means: count that error once.
            line = event.last_line if isinstance(event, Traceback) else event.line
            key = (hit.id, event.source.path, line)
            if key in self._recent_hits:
                continue
            self._recent_hits.append(key)
            self._retain(self.hits, hit.id, hit)
            facts.mark(f"hit:{hit.id}", event.line, ts)
        return ts

    def _retain(self, table: dict[str, Retained[T]], key: str, item: T, k: int | None = None) -> None:
        bucket = table.get(key)
        if bucket is None:
            bucket = table[key] = Retained(k or self.k)
        bucket.add(item)

    # --- routes: what each class of event updates (``add`` picks one through ``_ROUTES``)

    def _stat(self, event: Stat, facts: FileFacts, ts: float | None) -> None:
        self.stats.add(event)
        facts.mark("stat", event.line, ts)

    def _step(self, event: Step, facts: FileFacts, ts: float | None) -> None:
        self.steps.add(event)
        facts.mark("step", event.line, ts)

    def _train_report(self, event: TrainReport, facts: FileFacts, ts: float | None) -> None:
        self.train_reports.add(event)
        facts.mark("train_report", event.line, ts)

    def _signal(self, event: Signal, facts: FileFacts, ts: float | None) -> None:
        bucket = self.signals.get(event.kind)
        if bucket is None:
            bucket = self.signals[event.kind] = Retained(self.k)
        bucket.add(event)
        facts.mark(event.kind.value, event.line, ts)
        if event.kind in _ERROR_SIGNALS:
            self._error(event)
        if event.kind in (SignalKind.REPLICA_STARTED, SignalKind.REPLICA_REGISTERED):
            uuid = event.fields.get("uuid")
            if isinstance(uuid, str) and uuid and len(self.uuid_source) < _MAX_UUIDS:
                self.uuid_source.setdefault(uuid, event.source)

    def _traceback(self, event: Traceback, facts: FileFacts, ts: float | None) -> None:
        if event.last_line > facts.last_line:
            facts.last_line = event.last_line
        self.tracebacks.add(event)
        announced = facts.marks.get(SignalKind.ROLLOUT_GENERATION_FAILED.value)
        if announced is not None and 0 < event.line - announced.line <= 3:
            facts.caught_tracebacks.append(event.line)
        facts.last_traceback = event
        if not (event.exc_type or "").endswith("ChildFailedError"):
            facts.last_error = event
        facts.mark("traceback", event.line, ts)
        self._error(event)

    def _error(self, event: Event) -> None:
        message = message_of(event)
        if message is None:
            return
        key = (kind_of(event), signature(message))
        group = self.errors.get(key)
        if group is None:
            if len(self.errors) >= MAX_GROUPS:
                self.errors_uncounted += 1
                return
            group = self.errors[key] = ErrorGroup(key[1], key[0], event, event)
        group.add(event)

    def _weight_sync(self, event: WeightSync, facts: FileFacts, ts: float | None) -> None:
        names = _SYNC_NAMES.get(event.phase)
        if names is None:
            names = (event.phase.value, f"sync:{event.phase.value}")
        self._retain(self.weight_sync, names[0], event)
        facts.mark(names[1], event.line, ts)

    def _checkpoint(self, event: Checkpoint, facts: FileFacts, ts: float | None) -> None:
        phase = event.phase.value
        self._retain(self.checkpoints, phase, event)
        facts.mark(f"ckpt:{phase}", event.line, ts)

    def _prefetch(self, event: Prefetch, facts: FileFacts, ts: float | None) -> None:
        self._retain(self.prefetch, event.event, event, 8)
        facts.mark("prefetch", event.line, ts)

    def _throttle(self, event: Throttle, facts: FileFacts, ts: float | None) -> None:
        state = event.state.value
        self._retain(self.throttle, state, event)
        facts.mark(f"throttle:{state}", event.line, ts)

    def _prompt_rejected(self, event: PromptRejected, facts: FileFacts, ts: float | None) -> None:
        self.prompt_rejected.add(event)
        facts.mark("prompt_rejected", event.line, ts)

    def _staleness(self, event: Staleness, facts: FileFacts, ts: float | None) -> None:
        self.staleness.add(event)

    def _dynamic_sampling(self, event: DynamicSampling, facts: FileFacts, ts: float | None) -> None:
        self.dynamic_sampling.add(event)

    def _config_dump(self, event: ConfigDump, facts: FileFacts, ts: float | None) -> None:
        if not any(d.scope == event.scope for d in self.config_dumps):
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


# ``EventStore.add`` dispatches on the event's class: the first of these it is an instance of (a
# dict lookup per event instead of a chain of isinstance checks; subclasses are resolved once, alike).
_ROUTED: tuple[tuple[type[Event], Callable[[EventStore, Any, FileFacts, float | None], None]], ...] = (
    (Stat, EventStore._stat),
    (Step, EventStore._step),
    (TrainReport, EventStore._train_report),
    (Signal, EventStore._signal),
    (Traceback, EventStore._traceback),
    (WeightSync, EventStore._weight_sync),
    (Checkpoint, EventStore._checkpoint),
    (Prefetch, EventStore._prefetch),
    (Throttle, EventStore._throttle),
    (PromptRejected, EventStore._prompt_rejected),
    (Staleness, EventStore._staleness),
    (DynamicSampling, EventStore._dynamic_sampling),
    (ConfigDump, EventStore._config_dump),
)
_UNKNOWN: Any = object()
_ROUTES: dict[type, Callable[[EventStore, Any, FileFacts, float | None], None] | None] = {}


def _route_for(cls: type) -> Callable[[EventStore, Any, FileFacts, float | None], None] | None:
    for base, route in _ROUTED:
        if issubclass(cls, base):
            return route
    return None
