"""The cheap paths of the follower's hot loops find what the plain ones find.

- polling checks the paths of a folder's files only when the folder's stamp moved: a rotation in a
  quiet folder is still seen at the next scan, long before the safety nets (folder listing,
  rescan) would see it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from live_helpers import FAST, collect, wait_until

import a1x_diagnostics.live._follower as follower_module
from a1x_diagnostics.live import FileReset, HistoryComplete, LinesAppended, Message, RunFollower


def _lines(messages: list[Message], name: str) -> list[tuple[int | None, str]]:
    out: list[tuple[int | None, str]] = []
    for m in messages:
        if isinstance(m, LinesAppended) and m.source.path.endswith(name):
            out.extend((None if m.first_lineno is None else m.first_lineno + i, t) for i, t in enumerate(m.lines))
    return out


def test_polling_sees_a_rotation_in_a_quiet_folder_at_the_next_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No settle window: only the folder's stamp can tell the scan that a path changed.
    monkeypatch.setattr(follower_module, "FOLDER_SETTLE_S", 0.0)
    run = tmp_path / "logs_20250101-000000"
    run.mkdir()
    for name in ("controller.log", "policy_0.log", "rollout_0.log"):
        (run / name).write_text(f"{name} 1\n")
    # The safety nets far away: the folder listing and the rescan would take 30 s.
    options = dataclasses.replace(FAST, poll=True, poll_folders_interval=30.0, rescan_interval=30.0)
    follower = RunFollower(str(run), options=options)
    sub = follower.subscribe()
    with follower:
        collect(sub, lambda ms: any(isinstance(m, HistoryComplete) for m in ms))
        wait_until(lambda: bool(follower._folder_stamps), timeout=2.0)  # the folder's stamp was taken
        (run / "policy_0.log").rename(run / "policy_0.log.1")
        (run / "policy_0.log").write_text("fresh\n")
        got = collect(sub, lambda ms: bool(_lines(ms, "policy_0.log")), timeout=5.0)
        assert any(isinstance(m, FileReset) and m.reason == "replaced" for m in got)
        assert _lines(got, "policy_0.log") == [(1, "fresh")]
        with open(run / "rollout_0.log", "a") as f:  # a quiet file that grows: read at the next scan
            f.write("rollout_0.log 2\n")
        got = collect(sub, lambda ms: bool(_lines(ms, "rollout_0.log")), timeout=5.0)
        assert _lines(got, "rollout_0.log") == [(2, "rollout_0.log 2")]
