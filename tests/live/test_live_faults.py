"""``a1x-tui watch`` keeps what it knows under faults, and closes a traceback only once it is whole (issue 37, point 3).

A recorded run is written again as the run wrote it (``run_writer``) while ``watch --format json`` follows it,
and mid-run one of its logs is rotated, copied and truncated, deleted, or made unreadable with its folder for
3 s. ``watch`` ends with the findings of ``--check`` of the run as written without the fault (what was read
before a rotation or a deletion stays known), raises each finding once and never switches runs: a folder it
cannot read for a while is a ``follow_error``, not another run. As root, permission bits bind only a process
without ``CAP_DAC_OVERRIDE`` and ``CAP_DAC_READ_SEARCH``: ``watch`` runs without them (dropped from its
bounding set before it starts).

And under ``--poll`` a traceback written a line every 10 ms, which spans several polls, is closed only after a
poll period with nothing new: ``replica_died`` quotes its exception, never a code line of it, and no
``unexplained_error`` comes of its tail (before: wrong at every ``--interval 2``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import pytest
from live_helpers import collect, wait_until
from run_writer import FAULTS, FIXTURES, RunWriter
from watch_trial import fault_trial, keys, permissions_bind

from a1x_diagnostics.engine import check
from a1x_diagnostics.live import FindingRaised, FindingUpdated, HistoryComplete, RunFollower, engine_diagnosis
from a1x_diagnostics.live._osfs import OsFileSystem, OsHandle
from a1x_diagnostics.live._tail import FileId
from a1x_tui.commands import watch as watch_command

RUN = FIXTURES / "real-runs" / "cosmos-rl-0.4.4" / "replica_died"  # a rollout replica SIGKILLed mid-run
RAISES = FIXTURES / "cosmos" / "v0.4.4" / "reward_raises"  # a reward function raising: chained tracebacks


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["inotify", "poll"])
@pytest.mark.parametrize("fault", FAULTS)
def test_watch_keeps_what_it_knows_when_a_log_is_rotated_truncated_deleted_or_unreadable(
        fault: str, mode: str, tmp_path: Path) -> None:
    if fault == "chmod" and not permissions_bind(tmp_path):
        pytest.skip("permission bits cannot be made to bind a child process here")
    trial = fault_trial(RUN, tmp_path, fault, poll=mode == "poll", victim="rollout_0.log")
    assert "replica_died@rollout_0" in trial.expected and trial.expected_exit == 2  # the reference: --check's
    assert trial.faulted and trial.ended, trial.stderr
    assert trial.got == trial.expected, trial.stderr
    assert trial.exit_code == trial.expected_exit
    assert trial.raised_twice == [] and trial.switched == 0
    assert "Traceback" not in trial.stderr
    if fault == "chmod":
        assert trial.notes and all("ermission denied" in note for note in trial.notes), trial.notes
        assert "ermission denied" in trial.stderr


class _ReadsSeen(OsFileSystem):
    """The real file system, telling how far into each file the follower has read."""

    def __init__(self) -> None:
        self.read_to: dict[str, int] = {}

    def open(self, path: str) -> Any:
        handle = super().open(path)
        return None if handle is None else _Counted(handle, path, self.read_to)


class _Counted:
    def __init__(self, handle: OsHandle, path: str, read_to: dict[str, int]) -> None:
        self._handle, self._path, self._read_to = handle, path, read_to

    @property
    def ident(self) -> FileId:
        return self._handle.ident

    def size(self) -> int:
        return self._handle.size()

    def read(self, offset: int, size: int) -> bytes:
        data = self._handle.read(offset, size)
        self._read_to[self._path] = max(self._read_to.get(self._path, 0), offset + len(data))
        return data

    def close(self) -> None:
        self._handle.close()


def _open_keys(follower: RunFollower) -> list[str]:
    return keys(follower.open_findings())


@pytest.mark.slow
@pytest.mark.parametrize("interval", ["0.2", "1", "2", "5"])
def test_a_traceback_written_a_line_every_10_ms_is_quoted_whole_under_poll(interval: str, tmp_path: Path) -> None:
    """The follower has read the first lines of the traceback at a poll (``watch --poll --interval S``'s
    options); the rest comes a line every 10 ms. Before, a traceback was closed 0.25 s after the follower
    last read from its file, whatever the poll period: cut at every interval of 1 s or more."""
    done = RunWriter(RAISES, tmp_path / "done", span=0.0)
    done.prepare()
    done.write()
    done.close()
    expected = check(done.target, now=time.time())  # before the follower's thread runs (CPython 3.11's ast)
    writer = RunWriter(RAISES, tmp_path / "run", span=0.0)
    writer.prepare()
    crash = next(i for i, (*_, raw) in enumerate(writer.lines) if b"_RemoteTraceback" in raw)
    code = next(i for i, (*_, raw) in enumerate(writer.lines) if b"raise self._exception" in raw)
    rollout = writer.files[writer.lines[crash][1]]
    writer.write(0, crash)  # the run up to the reward function's failure
    fs = _ReadsSeen()
    options = watch_command.follow_options(argparse.Namespace(poll=True, interval=float(interval)))
    factory, _ = engine_diagnosis(target=writer.target)
    follower = RunFollower(str(writer.target), options=options, diagnosis=factory, fs=fs)
    sub = follower.subscribe({FindingRaised, FindingUpdated, HistoryComplete})
    with follower:
        collect(sub, lambda ms: any(isinstance(m, HistoryComplete) for m in ms), timeout=20)
        writer.write_each(crash, code - 5, every=0.01)  # the traceback's first lines ...
        size = rollout.stat().st_size
        wait_until(lambda: fs.read_to.get(str(rollout), 0) >= size, timeout=4 * float(interval) + 5)
        writer.write_each(code - 5, every=0.01)  # ... read by a poll; the rest, and the rest of the run
        writer.close()
        deadline = time.monotonic() + 20 + 4 * float(interval)
        while _open_keys(follower) != keys(expected.findings) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(2 * float(interval) + 0.5)  # a late false finding would come within an evaluation or two
        assert _open_keys(follower) == keys(expected.findings)
    messages = sub.drain()
    died = [m.finding for m in messages if isinstance(m, FindingRaised | FindingUpdated)
            and m.key == "replica_died@rollout_0"]
    assert died
    for finding in died:  # at no moment a code line of the traceback quoted as its exception
        texts = [ev.text.strip() for ev in finding.evidence]
        assert not [t for t in texts if t.startswith(("raise ", "^", "File "))], texts
    assert "RuntimeError: injected: reward function failed at call 81" in [ev.text.strip() for ev in died[-1].evidence]
    assert not [m for m in messages if isinstance(m, FindingRaised) and m.finding.id == "unexplained_error"]
