"""The periodic rescan reads the layout again only when a folder, ``run.toml`` or ``logs_latest`` moved.

Idle cost: reading the layout (``discover`` over every folder) every ``rescan_interval`` was most of
an idle follower's CPU (docs/live.md). These tests hold the cheap path to what the full reading
would see: with the observer's folder listing pushed far away (polling, 30 s), only the periodic
rescan can notice a new replica or a moved ``logs_latest``, and it must.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import pytest
from live_helpers import FAST, collect, wait_until

import a1x_diagnostics.live._follower as follower_module
from a1x_diagnostics.live import FileAppeared, HistoryComplete, LinesAppended, Message, RunFollower, RunSwitched

QUIET_OBSERVER = dataclasses.replace(
    FAST, poll=True, poll_folders_interval=30.0, rescan_interval=0.1, full_rescan_interval=30.0
)


def _make_run(root: Path, name: str) -> Path:
    run = root / name
    run.mkdir(parents=True)
    for f in ("controller.log", "policy_0.log", "rollout_0.log"):
        (run / f).write_text(f"{f} 1\n")
    return run


def _link_latest(root: Path, name: str) -> None:
    tmp = root / ".logs_latest.tmp"
    os.symlink(name, tmp)
    os.replace(tmp, root / "logs_latest")


@pytest.fixture(autouse=True)
def _no_settle_window(monkeypatch: pytest.MonkeyPatch) -> None:
    # Stamps of folders written a moment ago count as settled: only a real change moves them.
    monkeypatch.setattr(follower_module, "FOLDER_SETTLE_S", 0.0)


def test_unchanged_folders_are_not_read_again_until_the_full_rescan(tmp_path: Path) -> None:
    run = _make_run(tmp_path, "logs_20250101-000000")
    follower = RunFollower(str(run), options=QUIET_OBSERVER)
    sub = follower.subscribe()
    with follower:
        collect(sub, lambda ms: any(isinstance(m, HistoryComplete) for m in ms))
        time.sleep(0.5)  # the first periodic look stores the stamp
        reads = follower.layout_reads
        time.sleep(1.0)  # ten periodic looks at 0.1 s
        assert follower.layout_reads == reads
    slow_full = dataclasses.replace(QUIET_OBSERVER, full_rescan_interval=0.3)
    follower = RunFollower(str(run), options=slow_full)
    sub = follower.subscribe()
    with follower:
        collect(sub, lambda ms: any(isinstance(m, HistoryComplete) for m in ms))
        reads = follower.layout_reads
        wait_until(lambda: follower.layout_reads >= reads + 2, timeout=3.0)  # the full rescan still runs


def _appeared(messages: list[Message], name: str) -> bool:
    return any(isinstance(m, FileAppeared) and m.source.path.endswith(name) for m in messages)


def test_a_new_replica_is_found_by_the_periodic_rescan(tmp_path: Path) -> None:
    run = _make_run(tmp_path, "logs_20250101-000000")
    follower = RunFollower(str(run), options=QUIET_OBSERVER)
    sub = follower.subscribe()
    with follower:
        collect(sub, lambda ms: any(isinstance(m, HistoryComplete) for m in ms))
        time.sleep(0.5)
        (run / "rollout_1.log").write_text("late replica\n")
        got = collect(sub, lambda ms: _appeared(ms, "rollout_1.log"), timeout=3.0)
        assert _appeared(got, "rollout_1.log")
        with open(run / "rollout_1.log", "a") as f:
            f.write("second line\n")
        got = collect(
            sub,
            lambda ms: any(isinstance(m, LinesAppended) and "second line" in m.lines for m in ms),
            timeout=3.0,
        )


def test_a_moved_logs_latest_is_followed_by_the_periodic_rescan(tmp_path: Path) -> None:
    _make_run(tmp_path, "logs_20250101-000000")
    _link_latest(tmp_path, "logs_20250101-000000")
    follower = RunFollower(str(tmp_path), options=QUIET_OBSERVER)
    sub = follower.subscribe()
    with follower:
        collect(sub, lambda ms: any(isinstance(m, HistoryComplete) for m in ms))
        time.sleep(0.5)
        _make_run(tmp_path, "logs_20250102-000000")
        _link_latest(tmp_path, "logs_20250102-000000")
        got = collect(sub, lambda ms: any(isinstance(m, RunSwitched) for m in ms), timeout=3.0)
        switched = next(m for m in got if isinstance(m, RunSwitched))
        assert switched.run_name == "logs_20250102-000000"
