"""Shared helpers for the live tests: a recording diagnosis and message collection with a deadline."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from a1x_diagnostics.events import Source
from a1x_diagnostics.findings import Finding
from a1x_diagnostics.live import Evaluation, FollowOptions, Message, Subscription

FAST = FollowOptions(
    poll_interval=0.05,
    poll_folders_interval=0.05,
    evaluate_interval=0.05,
    quiet_evaluate_interval=0.05,
    rescan_interval=0.5,
    batch_delay=0.005,
    idle_flush=0.1,
)


class RecordingDiagnosis:
    """Keeps every line it is fed; evaluate returns whatever ``findings`` holds."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay  # seconds per feed call: a slow parser
        self.fed: dict[str, list[tuple[int, str]]] = {}
        self.ended: list[str] = []
        self.findings: list[Finding] = []
        self.evaluations = 0

    def feed(self, source: Source, first_lineno: int, lines: Sequence[str]) -> None:
        if self.delay:
            time.sleep(self.delay)
        self.fed.setdefault(source.path, []).extend(enumerate(lines, first_lineno))

    def end_file(self, source: Source) -> None:
        self.ended.append(source.path)

    def file_stat(self, source: Source, size: int, mtime: float) -> None:
        pass

    def evaluate(self, now: float) -> Evaluation:
        self.evaluations += 1
        return Evaluation(findings=list(self.findings), metrics={"n": len(self.findings)})


def collect(sub: Subscription, until: Callable[[list[Message]], bool], timeout: float = 10.0) -> list[Message]:
    """Messages from ``sub`` until ``until(messages)`` holds; fails after ``timeout`` seconds."""
    got: list[Message] = []
    deadline = time.monotonic() + timeout
    while not until(got):
        left = deadline - time.monotonic()
        assert left > 0, f"timed out; last messages: {got[-5:]!r}"
        message = sub.get(timeout=min(left, 0.2))
        if message is not None:
            got.append(message)
    return got


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)
