"""The grep prefilter over many files: batches of files per grep, output read ahead, any file names.

``run_events`` must give, file after file, the non-``LogLine`` events the pure parser gives for each
file, whatever the batch sizes, the read-ahead limit and the number of greps at work, and must leave
no grep running when the reader stops early.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from parsing_helpers import cosmos
from test_failure_lines import tb

from a1x_diagnostics.events import Event, LogLine, Role, Source
from a1x_diagnostics.parsing import _prefilter, iter_file_events
from a1x_diagnostics.parsing._lines import MAX_LINE_BYTES

pytestmark = pytest.mark.skipif(not _prefilter.available(), reason="GNU grep not installed")

STAT = cosmos("[Controller] Stat: 8 samples, 800 completion tokens, 8 pending rollouts, 8 in-flight, 0 filtered "
              "(outdated), 1.00s elapsed")
RECV = cosmos("[Rollout] All 8 at step 3 recv operations finished in 1.500 seconds with 2.0 MB received.", rank=0)
NOISE = cosmos("[Rollout main_loop 1.0s] rank=0 empty_q=0 gen_attempted=3", "DEBUG", rank=0)


def _contents(i: int) -> str:
    """File ``i`` of the run: empty, noise only, or events, tracebacks and \\r-redraws in varying mixes."""
    kind = i % 5
    if kind == 0:
        return ""
    if kind == 1:
        return "\n".join([NOISE] * (i + 3)) + "\n"
    lines = [NOISE, RECV] * (i % 7 + 1)
    if kind == 3:
        lines += [*tb("ValueError: No available memory for the cache blocks.", 0), RECV]
    if kind == 4:
        lines += ["\r".join(["10%|#| 1/10", RECV]), STAT, "no newline at the end " + RECV]
        return "\n".join(lines)
    return "\n".join(lines) + "\n"


NAMES = ["rollout_{i}.log", "we:ird {i}.log", "ünï {i}.log", "-{i}.log", "a\nb {i}.log"]


def _run(tmp_path: Path, n: int) -> list[tuple[Path, Source]]:
    files = []
    for i in range(n):
        path = tmp_path / NAMES[i % len(NAMES)].format(i=i)
        path.write_text(_contents(i))
        role = Role.LAUNCHER if i % 11 == 10 else Role.ROLLOUT  # a launcher file: other markers, own batch
        files.append((path, Source(path.name, role, i)))
    return files


def _pure(files: list[tuple[Path, Source]]) -> list[Event]:
    os.environ["A1X_NO_GREP"] = "1"
    try:
        out: list[Event] = []
        for path, source in files:
            out += [e for e in iter_file_events(path, source) if not isinstance(e, LogLine)]
        return out
    finally:
        del os.environ["A1X_NO_GREP"]


def _by_file(events: list[Event]) -> list[tuple[str, list[str]]]:
    """Events grouped by file in reading order, sorted within a file (groups come at their first line)."""
    out: list[tuple[str, list[str]]] = []
    for e in events:
        if not out or out[-1][0] != e.source.path:
            out.append((e.source.path, []))
        out[-1][1].append(repr(e))
    return [(path, sorted(reprs)) for path, reprs in out]


@pytest.mark.parametrize(("batch_files", "ahead_bytes", "workers", "posix"),
                         [(32, 32 << 20, 1, True), (3, 1, 1, True), (2, 4096, 3, True), (4, 32 << 20, 2, False)])
def test_batches_give_each_file_its_own_events_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        batch_files: int, ahead_bytes: int, workers: int,
                                                        posix: bool) -> None:
    monkeypatch.setattr(_prefilter, "BATCH_FILES", batch_files)
    monkeypatch.setattr(_prefilter, "AHEAD_BYTES", ahead_bytes)
    monkeypatch.setattr(_prefilter, "WORKERS", workers)
    monkeypatch.setattr(_prefilter, "_POSIX", posix)  # False: blocking reads, one grep at a time
    files = _run(tmp_path, 45)
    errors: list[str] = []
    fast = list(_prefilter.run_events(files, errors.append))
    assert errors == []
    assert _by_file(fast) == _by_file(_pure(files))
    assert len({e.source.path for e in fast}) > 20


def test_a_file_that_cannot_be_read_is_reported_and_skipped(tmp_path: Path) -> None:
    files = _run(tmp_path, 6)
    gone = (tmp_path / "gone.log", Source("gone.log", Role.ROLLOUT, 99))
    errors: list[str] = []
    fast = list(_prefilter.run_events([files[2], gone, *files[3:]], errors.append))
    assert len(errors) == 1 and "gone.log: cannot read" in errors[0]
    assert _by_file(fast) == _by_file(_pure([files[2], *files[3:]]))


def test_an_over_long_line_in_a_batch_is_cut_like_the_pure_parser_cuts_it(tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    head = cosmos("[Rollout] Loaded rollout configuration: {'k': '")
    dump = head + "x" * (MAX_LINE_BYTES + 20 - len(head) - 2) + "'}"  # 20 bytes too long: cut, so unreadable
    big.write_text(f"{RECV}\n{dump}\n{RECV}\n")
    files = [*_run(tmp_path, 4)[2:], (big, Source("big.log", Role.ROLLOUT, 0))]
    fast = list(_prefilter.run_events(files, lambda e: None))
    assert _by_file(fast) == _by_file(_pure(files))
    dumps = [e for e in fast if type(e).__name__ == "ConfigDump"]
    assert len(dumps) == 1 and dumps[0].config is None  # type: ignore[attr-defined]


def test_stopping_early_leaves_no_grep_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[_prefilter._GrepJob] = []
    real_init = _prefilter._GrepJob.__init__

    def init(self: _prefilter._GrepJob, paths: list[Path], markers: tuple[str, ...]) -> None:
        real_init(self, paths, markers)
        started.append(self)

    monkeypatch.setattr(_prefilter._GrepJob, "__init__", init)
    monkeypatch.setattr(_prefilter, "BATCH_FILES", 2)
    monkeypatch.setattr(_prefilter, "WORKERS", 3)
    events = _prefilter.run_events(_run(tmp_path, 30), lambda e: None)
    next(events)
    events.close()
    assert len(started) >= 2
    assert all(job.proc.returncode is not None for job in started)


def test_markers_hold_every_gate_without_its_head() -> None:
    from a1x_diagnostics.parsing import ALL_MARKERS, GATED_MARKERS
    from a1x_diagnostics.parsing._rules import GATES, NEEDLES

    for strings, markers in ((GATES, GATED_MARKERS), (NEEDLES, ALL_MARKERS)):
        for s in strings:
            assert any(m in s for m in markers), s  # a line holding the gate holds a marker
        assert not any(m.startswith((" ", "-")) for m in markers)


@pytest.mark.skipif(shutil.which("grep") is None, reason="GNU grep not installed")
def test_grep_output_decoded_a_block_at_a_time_matches_a_line_at_a_time(tmp_path: Path) -> None:
    odd = b"\xff\xfe \xe2\x82 \xc3" + RECV.encode() + b" \xe2\x82\n\xf0\x9f\x98" + RECV.encode() + b"\xe2\n\x00\n"
    path = tmp_path / "rollout_0.log"
    path.write_bytes(odd * 50)
    source = Source("rollout_0.log", Role.ROLLOUT, 0)
    fast = list(_prefilter.run_events([(path, source)], lambda e: None))
    assert _by_file(fast) == _by_file(_pure([(path, source)])) and len(fast) == 100
