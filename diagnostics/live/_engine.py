"""``Diagnosis`` over the real parsers and detectors: the same ``Collector`` as ``--check``.

Each file gets its own ``LineParser`` (tracebacks and torchrun failure summaries span lines);
its events go into one bounded ``diagnostics.engine.Collector`` for the run. Nothing is re-read:
an evaluation runs the detectors on what the collector holds. With ``--config``, the TOML's lint
findings are merged in as ``--check --config`` does.

Only lines that can give an event reach the parser, as in ``--check``'s grep path
(``diagnostics.parsing.markers_for``): a line holding one of the parsing package's markers, and
every line while a multi-line group (traceback, torchrun summary) is open
(``LineParser.in_group``). Parsing every line costs about 7 µs each; this keeps a 25,000 lines/s
run affordable (``docs/live.md``).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from diagnostics.engine import Collector
from diagnostics.events import Role, Source
from diagnostics.findings import Finding
from diagnostics.live._diagnose import DiagnosisFactory, Evaluation
from diagnostics.parsing import LineParser, markers_for, split_segments

Plan = tuple[tuple[str, tuple[str, ...] | None], ...]
"""How ``_candidates`` looks for markers: (string searched, the markers starting with it, or None
when the string is the marker itself)."""


@functools.lru_cache(maxsize=16)
def search_plan(markers: tuple[str, ...]) -> Plan:
    """One search per group of markers sharing a head of at least 7 characters (the five
    ``INFO - …`` gates share ``INFO - ``): each occurrence of the shared head is checked with one
    ``startswith``. Every occurrence of a marker starts with an occurrence of its group's head, so
    the lines found are exactly those holding a marker; four scans fewer over the 25 markers of a
    replica log (~15 % of the search, measured: ``docs/live.md``)."""
    groups: dict[str, list[str]] = {}
    for marker in dict.fromkeys(markers):
        groups.setdefault(marker[:7], []).append(marker)
    plan: list[tuple[str, tuple[str, ...] | None]] = []
    for members in groups.values():
        head = os.path.commonprefix(members)  # noqa: RUF071 (character prefix of strings, as wanted)
        plan.append((head, None) if len(members) == 1 or head in members else (head, tuple(members)))
    return tuple(plan)


def _candidates(lines: Sequence[str], markers: Sequence[str]) -> list[int]:
    """Indices of the lines holding a marker, with C-speed string searches only: one scan per
    marker (or group of markers, ``search_plan``) over the whole block, and each occurrence located
    by counting the newlines before it (no Python work per line). About 1 µs per 160-byte line for
    the 25 markers of a replica log."""
    text = "\n".join(lines)
    hits: set[int] = set()
    for key, members in search_plan(tuple(markers)):
        at = text.find(key)
        index = 0
        counted = 0
        while at >= 0:
            if members is not None and not text.startswith(members, at):
                at = text.find(key, at + 1)  # the head without any of its markers
                continue
            index += text.count("\n", counted, at)
            counted = at
            hits.add(index)
            end = text.find("\n", at)
            if end < 0:
                break
            at = text.find(key, end)
    return sorted(hits)


class EngineDiagnosis:
    def __init__(self, config: Any = None, lint: Sequence[Finding] = ()) -> None:
        self.collector = Collector()
        self.config = config
        self.lint = list(lint)
        self._parsers: dict[str, LineParser] = {}
        self._mtimes: dict[str, float] = {}
        self._markers: dict[Role, tuple[str, ...]] = {}

    def feed(self, source: Source, first_lineno: int, lines: Sequence[str]) -> None:
        parser = self._parsers.get(source.path)
        if parser is None:
            parser = LineParser(source, mtime=self._mtimes.get(source.path), keep_unknown=False)
            self._parsers[source.path] = parser
        add = self.collector.add
        feed = parser.feed
        markers = self._markers.get(source.role)
        if markers is None:
            markers = self._markers[source.role] = markers_for(source)
        candidates = _candidates(lines, markers)
        n = len(lines)
        i = 0
        next_candidate = 0
        while i < n:
            if not parser.in_group:  # an open traceback / torchrun summary takes every line
                while next_candidate < len(candidates) and candidates[next_candidate] < i:
                    next_candidate += 1
                if next_candidate == len(candidates):
                    break
                i = candidates[next_candidate]
            text = lines[i]
            for segment in split_segments(text) if "\r" in text else (text,):
                for event in feed(first_lineno + i, segment):
                    add(event)
            i += 1

    def end_file(self, source: Source) -> None:
        parser = self._parsers.pop(source.path, None)
        if parser is not None:
            for event in parser.flush():
                self.collector.add(event)

    def file_stat(self, source: Source, size: int, mtime: float) -> None:
        self._mtimes[source.path] = mtime
        self.collector.note_file(source, size=size, mtime=mtime)

    def evaluate(self, now: float) -> Evaluation:
        assessment = self.collector.assess(now, self.config)
        findings = assessment.findings
        if self.lint:
            from diagnostics.report import merge_findings

            findings = merge_findings(findings, self.lint)
        return Evaluation(findings=list(findings), checks=list(assessment.checks), metrics=dict(assessment.metrics))


def engine_diagnosis(config_path: str | os.PathLike[str] | None = None) -> tuple[DiagnosisFactory, list[str]]:
    """A factory of ``EngineDiagnosis`` for the run, and notes for the user (a TOML not used...).

    The TOML is loaded and linted once; every run followed (``logs_latest`` moving) starts a
    fresh collector with it.
    """
    notes: list[str] = []
    config: Any = None
    lint: list[Finding] = []
    if config_path is not None:
        from diagnostics.config import ConfigError, lint_config, load_config

        try:
            config = load_config(Path(config_path))
        except ConfigError as exc:
            notes.append(f"--config not used: {exc}")
        else:
            try:
                lint = list(lint_config(config))
            except Exception as exc:  # the linter's failure must not stop the log findings
                notes.append(f"config lint failed: {type(exc).__name__}: {exc}")

    def factory() -> EngineDiagnosis:
        return EngineDiagnosis(config, lint)

    return factory, notes
