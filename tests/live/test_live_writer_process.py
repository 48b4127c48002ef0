"""A real writer process appends 10^5 lines while rotating, truncating and deleting its files.

What "lost" means: a line is lost when it was written to a followed file and never delivered.
Rotation (rename + new file) and deletion lose nothing: the follower holds the old file open and
reads it to its end before following the new one. Copytruncate can lose lines by nature: lines
written after the follower's last read and before the truncation are gone from the file before
anyone could read them. So, per file:

* delivered lines are in write order, none twice, and numbered 1, 2, 3.. within each generation;
* every delivered line is one the writer wrote whole, also when a truncation came while the
  follower held the first half of a line (``live_writer --cut``);
* every line written after the last truncation, and every line of a window that ends in a
  rotation or deletion, is delivered;
* the only missing lines are, in the window before a truncation, a run of the last lines written
  before it (after the window's last rotation or deletion).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from live_helpers import FAST

from a1x_diagnostics.live import FileReset, HistoryComplete, LinesAppended, Message, RunFollower

RUN = "logs_20250101-000000"
WRITER = Path(__file__).with_name("live_writer.py")
HISTORY = 10
PADDING = "x" * 60  # live_writer's


def _start(tmp_path: Path, files: int, poll: bool) -> tuple[Path, RunFollower, object]:
    root = tmp_path / "logs"
    folder = root / RUN
    folder.mkdir(parents=True)
    for i in range(files):
        name = f"policy_{i}.log"
        (folder / name).write_text("".join(f"{name} {s:09d} history\n" for s in range(HISTORY)))
    os.symlink(RUN, root / "logs_latest")
    follower = RunFollower(str(root), options=dataclasses.replace(FAST, poll=poll))
    sub = follower.subscribe({LinesAppended, FileReset, HistoryComplete}, max_lines=10_000_000)
    follower.start()
    return folder, follower, sub


def _run_writer(folder: Path, manifest: Path, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, str(WRITER), str(folder), str(manifest), "--first-seq", str(HISTORY), *args]
    )


def _collect(sub: object, manifest: Path, writer: subprocess.Popen[bytes], timeout: float) -> list[Message]:
    from a1x_diagnostics.live import Subscription

    assert isinstance(sub, Subscription)
    got: list[Message] = []
    last_seen: dict[str, int] = {}
    deadline = time.monotonic() + timeout
    expected_last: dict[str, int] | None = None
    while True:
        assert time.monotonic() < deadline, f"timed out; last seq seen per file: {last_seen}"
        message = sub.get(timeout=0.2)
        if message is not None:
            got.append(message)
            if isinstance(message, LinesAppended) and message.lines:
                last_seen[message.source.path] = int(message.lines[-1].split()[1])
        if expected_last is None and writer.poll() is not None:
            assert writer.returncode == 0
            data = json.loads(manifest.read_text())
            expected_last = {f"{RUN}/{name}": rec["last_seq"] for name, rec in data["files"].items()}
        if expected_last is not None and all(last_seen.get(p) == s for p, s in expected_last.items()):
            return got


def _check(messages: list[Message], manifest: Path) -> int:
    """Assert the delivery rules of the module doc; return how many lines copytruncate took."""
    data = json.loads(manifest.read_text())
    lost_total = 0
    for name, record in data["files"].items():
        path = f"{RUN}/{name}"
        seqs: list[int] = []
        expect_lineno = HISTORY + 1
        for m in messages:
            if isinstance(m, FileReset) and m.source.path == path:
                expect_lineno = 1
            elif isinstance(m, LinesAppended) and m.source.path == path and m.lines:
                assert m.skipped == 0
                assert m.first_lineno is not None and m.first_lineno == expect_lineno, (name, m.first_lineno)
                expect_lineno = m.first_lineno + len(m.lines)
                for text in m.lines:
                    file, seq, padding = text.split(" ")
                    assert file == name
                    # each delivered line is one the writer wrote whole: never the first half of a line
                    # that a truncation cut (live_writer --cut splits the line before each truncation)
                    assert padding == PADDING, f"{name}: a line that was never written: {text!r}"
                    seqs.append(int(seq))
        assert seqs == sorted(set(seqs)), f"{name}: out of order or duplicated"
        written = set(range(HISTORY, record["last_seq"] + 1))
        missing = sorted(written - set(seqs))
        assert not set(seqs) - written
        truncations: list[int] = record["truncations"]
        ops: list[tuple[str, int]] = [(op, s) for op, s in record["ops"]]
        window_start = HISTORY - 1
        allowed: set[int] = set()
        for boundary in truncations:
            in_window = [s for s in missing if window_start < s <= boundary]
            if in_window:
                ops_in = [op for op in ops if window_start < op[1] <= boundary]
                runs = _runs(in_window)
                gap = f"{name}: a gap, not a tail: missing {runs} in ({window_start}, {boundary}], ops {ops_in}"
                assert in_window == list(range(in_window[0], boundary + 1)), gap
                others = [s for op, s in ops if op != "truncate" and window_start < s < boundary]
                last_other_op = max(others, default=-1)
                assert in_window[0] > last_other_op, f"{name}: lines before a rotation/deletion lost"
                allowed.update(in_window)
            window_start = boundary
        outside = sorted(set(missing) - allowed)
        near = [op for op in ops if outside and abs(op[1] - outside[0]) < 3000]
        where = f"{outside[:3]}..{outside[-1:]} ({len(outside)} lines), ops near: {near}"
        assert not outside, f"{name}: lost outside a truncation window: {where}"
        assert record["last_seq"] in seqs
        assert {op for op, _ in ops} == {"rotate", "truncate", "delete"}
        lost_total += len(missing)
    return lost_total


def _runs(seqs: list[int]) -> list[tuple[int, int]]:
    """Consecutive runs of sorted numbers, as (first, last): what a failure message can show."""
    runs: list[tuple[int, int]] = []
    for s in seqs:
        if runs and runs[-1][1] == s - 1:
            runs[-1] = (runs[-1][0], s)
        else:
            runs.append((s, s))
    return runs


def _wait_history(sub: object) -> None:
    from a1x_diagnostics.live import Subscription

    assert isinstance(sub, Subscription)
    deadline = time.monotonic() + 10
    while True:
        assert time.monotonic() < deadline
        if isinstance(sub.get(timeout=0.2), HistoryComplete):
            return


@pytest.mark.parametrize(
    ("poll", "lines", "rate"),
    [(False, 100_000, 50_000), (True, 20_000, 10_000)],
    ids=["inotify-1e5-lines", "polling-2e4-lines"],
)
@pytest.mark.slow  # a writer process rotating its logs
def test_no_line_lost_duplicated_or_reordered_under_rotation_truncation_deletion(
    tmp_path: Path, poll: bool, lines: int, rate: int
) -> None:
    folder, follower, sub = _start(tmp_path, files=5, poll=poll)
    try:
        _wait_history(sub)
        manifest = tmp_path / "manifest.json"
        op_every = str(lines // 5 // 7)
        writer = _run_writer(
            folder, manifest, "--lines", str(lines), "--rate", str(rate), "--op-every", op_every, "--cut"
        )
        messages = _collect(sub, manifest, writer, timeout=60)
        lost = _check(messages, manifest)
        print(f"lines lost to copytruncate (allowed): {lost} of {lines}")
    finally:
        follower.stop()
