"""A stand-in for the live diagnostics' engine, driven by the lines the real follower feeds it.

``Script.factory`` is a ``a1x_diagnostics.live`` ``DiagnosisFactory``: the train monitor's
``RunFollower`` makes one ``NeedleDiagnosis`` per run it follows (again after ``RunSwitched``) and
feeds it every line of the run. A finding is open from the first line that holds its needle until
a line holds its cure, with that line as evidence, so a test raises a finding by writing a log line.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from a1x_diagnostics.events import Source
from a1x_diagnostics.findings import Evidence, Finding, Severity
from a1x_diagnostics.live import Evaluation


@dataclass(frozen=True, slots=True)
class Rule:
    needle: str
    finding_id: str
    replica: str | None = None
    cure: str | None = None  # a line holding this closes the finding


@dataclass(slots=True)
class NeedleDiagnosis:
    rules: Sequence[Rule]
    fed: dict[str, list[str]] = field(default_factory=dict)  # source path -> lines, in order
    open: dict[str, Finding] = field(default_factory=dict)
    evaluations: int = 0

    def feed(self, source: Source, first_lineno: int, lines: Sequence[str]) -> None:
        self.fed.setdefault(source.path, []).extend(lines)
        for n, line in enumerate(lines, first_lineno):
            for rule in self.rules:
                if rule.needle in line and rule.finding_id not in self.open:
                    self.open[rule.finding_id] = Finding(
                        id=rule.finding_id,
                        severity=Severity.CRITICAL,
                        title=rule.finding_id.replace("_", " "),
                        explanation="x",
                        evidence=[Evidence(file=source.path, line=n, text=line)],
                        data={"replica": rule.replica} if rule.replica else {},
                    )
                elif rule.cure is not None and rule.cure in line:
                    self.open.pop(rule.finding_id, None)

    def end_file(self, source: Source) -> None:
        pass

    def file_stat(self, source: Source, size: int, mtime: float) -> None:
        pass

    def evaluate(self, now: float) -> Evaluation:
        self.evaluations += 1
        return Evaluation(findings=list(self.open.values()))


class Script:
    """The rules, and every ``NeedleDiagnosis`` the follower made (one per run followed)."""

    def __init__(self, *rules: Rule) -> None:
        self.rules = rules
        self.made: list[NeedleDiagnosis] = []
        self._lock = threading.Lock()

    def factory(self) -> NeedleDiagnosis:
        diagnosis = NeedleDiagnosis(self.rules)
        with self._lock:
            self.made.append(diagnosis)
        return diagnosis

    def fed_files(self) -> set[str]:
        with self._lock:
            return {path for d in self.made for path in list(d.fed)}

    def evaluations(self) -> int:
        with self._lock:
            return sum(d.evaluations for d in self.made)
