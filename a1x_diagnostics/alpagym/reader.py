"""Reading an AlpaGym run into the engine's ``Collector``: the I/O edge of ``a1x_diagnostics.alpagym``.

What reads what (docs/parsing.md "Closed-loop runs"):

- the Cosmos-RL role logs are read by the open-loop reader as for any run (``a1x_diagnostics.parsing``),
  then once more here for the AlpaGym lines among them (a marker scan: ``parser.MARKERS``);
- captures (the host's terminal, Slurm's ``slurm-<job>.out|.err``, ``wizard_<i>.log``, the launcher's
  ``cosmos_<t>.log``) by both parsers here, the role-log lines the host tees left out (they are read
  in their own files);
- AlpaSim's runtime worker logs by the closed-loop parser only (its tracebacks belong to the
  ``Rollout FAILED`` line before them: the episode failure, not an unexplained error);
- ``artifacts/*.json`` (each once: ``ArtifactPoller``), ``resolved_config.yaml`` and the run folder's
  own shape (no Cosmos-RL log yet, no runtime endpoint published).

``ClosedLoopFeed`` does the same for the live follower, line batch by line batch.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from a1x_diagnostics.alpagym.artifacts import read_artifact
from a1x_diagnostics.alpagym.config import ResolvedConfig, ResolvedConfigError, load_resolved
from a1x_diagnostics.alpagym.parser import MARKERS, ClosedLoopParser
from a1x_diagnostics.alpagym.state import ClosedLoopState
from a1x_diagnostics.closed_loop_events import ClosedLoop
from a1x_diagnostics.events import Event, Role, Source
from a1x_diagnostics.parsing.alpagym_layout import AlpaGymRun, artifact_files, published_runtimes

ARTIFACTS_PER_POLL = 512  # a live poll reads at most this many new artifacts (the rest the next time)
_BLOCK_LINES = 4096


def generic_files(files: Iterable[tuple[Path, Source]]) -> list[tuple[Path, Source]]:
    """The files the open-loop reader takes as they are: the Cosmos-RL role logs."""
    return [(p, s) for p, s in files if s.role not in (Role.LAUNCHER, Role.STAGE, Role.SIMULATOR)]


class ClosedLoopRun:
    """The closed-loop side of one run's ``Collector`` (``collector.closed_loop``)."""

    def __init__(self, found: AlpaGymRun) -> None:
        self.found = found
        self.notes: list[str] = []
        self.config: ResolvedConfig | None = None
        if found.resolved_config is not None:
            try:
                self.config = load_resolved(found.resolved_config)
            except ResolvedConfigError as exc:
                self.notes.append(f"resolved config not used: {exc}")
        self.state = ClosedLoopState(self.config)
        self.poller = ArtifactPoller(found)
        self.parsers: dict[str, ClosedLoopParser] = {}
        self._scanner: Any = None

    # --- events in ------------------------------------------------------------------------------------
    def take(self, collector: Any, events: Iterable[Event]) -> None:
        for event in events:
            collector.add(event)
            if isinstance(event, ClosedLoop):
                self.state.add(event, collector.store.files.get(event.source.path))

    def parser(self, source: Source) -> ClosedLoopParser:
        parser = self.parsers.get(source.path)
        if parser is None:
            parser = self.parsers[source.path] = ClosedLoopParser(source)
        return parser

    def scanner(self) -> Any:
        if self._scanner is None:
            from a1x_diagnostics.parsing import Scanner

            self._scanner = Scanner(MARKERS)
        return self._scanner

    def feed(self, collector: Any, source: Source, first_lineno: int, lines: Sequence[str]) -> Sequence[str] | None:
        """A batch of lines of ``source``: the closed-loop events into ``collector``; returns the lines the
        open-loop parser should read (the teed ones blanked), or None when it reads none of them."""
        parser = self.parser(source)
        for i in self.scanner().lines(lines):
            self.take(collector, parser.feed(first_lineno + i, lines[i]))
        if source.role is Role.SIMULATOR:
            return None
        if source.role in (Role.LAUNCHER, Role.STAGE) and any("|" in line for line in lines):
            return ["" if parser.teed(line) else line for line in lines]
        return lines

    # --- the folder and the artifacts ---------------------------------------------------------------
    def poll(self, limit: int | None = None) -> int:
        """New artifacts into the state; how many were read."""
        n = 0
        for art in self.poller.new(limit):
            if isinstance(art, str):
                if len(self.state.artifact_problems) < 64:
                    self.state.artifact_problems.append(art)
            else:
                self.state.add_artifact(art)
                n += 1
        return n

    def finish(self, metrics: Any) -> None:
        """Before an evaluation: the folder's facts, the series, the totals no line gave."""
        found = self.found
        notes = []
        if not found.logs_dirs and not (found.root / "logs").is_dir():
            notes.append("logs/ is missing")
        elif not found.logs_dirs:
            notes.append("no Cosmos-RL log yet (logs/ holds no logs_<ts>/)")
        if not published_runtimes(found):
            notes.append("no AlpaSim runtime endpoint published (topology/alpasim_runtimes/ is empty)")
        self.state.layout_notes = notes
        total = self.state.expected_total()
        if total:
            metrics.assume_total(total)
        for event in self.state.kind(_trainer_end()).items():
            step = event.fields.get("step")
            if isinstance(step, int):
                from a1x_diagnostics.metrics import epoch

                metrics.note_step(step, self.state.last_trainer_total, epoch(event.ts))
        self.state.publish(metrics)


def _trainer_end() -> Any:
    from a1x_diagnostics.closed_loop_events import CL

    return CL.TRAINER_STEP_END


class ArtifactPoller:
    """Each artifact read once (by name), newest runs of a live poll bounded by ``ARTIFACTS_PER_POLL``."""

    def __init__(self, found: AlpaGymRun) -> None:
        self.found = found
        self.seen: set[str] = set()

    def new(self, limit: int | None = None) -> list[Any]:
        out: list[Any] = []
        for path in artifact_files(self.found):
            if path.name in self.seen:
                continue
            if limit is not None and len(out) >= limit:
                break
            self.seen.add(path.name)
            out.append(read_artifact(path, self.found.display(path)))
        return out


def _iter_lines(path: Path) -> Iterable[tuple[int, list[str]]]:
    from a1x_diagnostics.parsing import iter_lines

    with path.open("rb") as f:
        block: list[str] = []
        first = 1
        for lineno, text in iter_lines(f):
            if not block:
                first = lineno
            block.append(text)
            if len(block) >= _BLOCK_LINES:
                yield first, block
                block = []
        if block:
            yield first, block


def read_into(collector: Any, cl: ClosedLoopRun, files: Sequence[tuple[Path, Source]], *,
              deadline: float | None = None, unreadable: Callable[[str], None] | None = None) -> None:
    """The closed-loop reading of a run whose role logs the open-loop reader has read: every line file
    (``files``: the layout's), then the artifacts. Raises ``a1x_diagnostics.deadline.CheckTimeout`` past
    ``deadline``."""
    from a1x_diagnostics.deadline import CheckTimeout
    from a1x_diagnostics.parsing import LineParser, split_segments

    for path, source in files:
        if deadline is not None and time.monotonic() > deadline:
            raise CheckTimeout
        generic = source.role in (Role.LAUNCHER, Role.STAGE)
        try:
            st = path.stat()
            collector.note_file(source, size=st.st_size, mtime=st.st_mtime)
            parser = LineParser(source, mtime=st.st_mtime, keep_unknown=False) if generic else None
            for first, block in _iter_lines(path):
                lines = cl.feed(collector, source, first, block)
                if parser is None or lines is None:
                    continue
                for i, text in enumerate(lines):
                    if not text:
                        continue
                    for segment in split_segments(text) if "\r" in text else (text,):
                        for event in parser.feed(first + i, segment):
                            collector.add(event)
            if parser is not None:
                for event in parser.flush():
                    collector.add(event)
        except OSError as exc:
            if unreadable is not None and source.role in (Role.LAUNCHER, Role.STAGE, Role.SIMULATOR):
                unreadable(f"{source.path}: {exc.strerror or exc}")  # the role logs' are the open-loop reader's
    cl.poll()
    if deadline is not None and time.monotonic() > deadline:
        raise CheckTimeout


def file_size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


__all__ = ["ARTIFACTS_PER_POLL", "ArtifactPoller", "ClosedLoopRun", "generic_files", "read_into"]
