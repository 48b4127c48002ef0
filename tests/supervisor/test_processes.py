"""The stage log and the local executor, with real processes and real signals."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import psutil

from a1x_supervisor.executor import LocalExecutor, group_members
from a1x_supervisor.secrets import Scrubber
from a1x_supervisor.stagelog import StageLog

TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d ")


def test_stage_log_splits_on_carriage_returns_and_scrubs(tmp_path: Path) -> None:
    seen: list[str] = []
    log = StageLog(tmp_path / "s.log", scrubber=Scrubber(["sekrit-value"]), on_line=seen.append, redraw_interval_s=60)
    log.feed(b"start\r\n10%|#  |\r50%|##")  # a tqdm bar redrawn with \r, split across reads
    log.feed(b"### |\r100%|####|\nkey=sekrit-value\n")
    log.feed("caf\u00e9".encode()[:4])
    log.feed("caf\u00e9\n".encode()[4:])  # a UTF-8 character split across two reads
    log.close()
    assert seen == ["start", "10%|#  |", "50%|##### |", "100%|####|", "key=[redacted]", "caf\u00e9"]
    lines = (tmp_path / "s.log").read_text().splitlines()
    assert all(TS.match(line) for line in lines)
    texts = [TS.sub("", line) for line in lines]
    # a redraw is written at most once per interval, but the last one before a full line is kept
    assert texts == ["start", "10%|#  |", "50%|##### |", "100%|####|", "key=[redacted]", "caf\u00e9"]


def _log(tmp_path: Path) -> StageLog:
    return StageLog(tmp_path / "stage.log", scrubber=Scrubber([]))


def test_output_of_the_whole_group_reaches_the_log(tmp_path: Path) -> None:
    code = (
        "import subprocess,sys; print('parent', flush=True); subprocess.run([sys.executable,'-c','print(\"child\")'])"
    )
    proc = LocalExecutor().start([sys.executable, "-c", code], cwd=tmp_path, env={}, log=_log(tmp_path))
    assert proc.wait(10) == 0
    proc.close()
    text = (tmp_path / "stage.log").read_text()
    assert "parent" in text and "child" in text
    assert proc.handle.pgid == proc.handle.pid  # its own process group (and session)
    assert psutil.Process().pid not in group_members(proc.handle.pgid)


def test_stop_kills_a_group_that_ignores_sigterm_after_the_grace_period(tmp_path: Path) -> None:
    code = (
        "import signal,subprocess,sys,time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "subprocess.Popen([sys.executable,'-c','import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "time.sleep(60)'])\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = LocalExecutor().start([sys.executable, "-c", code], cwd=tmp_path, env={}, log=_log(tmp_path))
    deadline = time.monotonic() + 10
    while len(proc.alive()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    members = proc.alive()
    assert len(members) == 2
    started = time.monotonic()
    report = proc.stop(0.5)
    took = time.monotonic() - started
    proc.close()
    assert sorted(report.terminated) == sorted(members)
    assert sorted(report.killed) == sorted(members)  # still there after the grace period: SIGKILL
    assert report.survivors == []
    assert 0.5 <= took < 5
    assert group_members(proc.handle.pgid) == []
    for pid in members:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_a_descendant_that_leaves_the_group_is_tracked_and_stopped(tmp_path: Path) -> None:
    # like redis-server with 'daemonize yes': a new session, out of the stage's process group
    code = (
        "import subprocess,sys,time\n"
        "p = subprocess.Popen([sys.executable,'-c','import time; time.sleep(60)'], start_new_session=True)\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = LocalExecutor().start([sys.executable, "-c", code], cwd=tmp_path, env={}, log=_log(tmp_path))
    deadline = time.monotonic() + 10
    while not proc.handle.descendants and time.monotonic() < deadline:
        proc.track()
        time.sleep(0.05)
    escaped = [pid for pid, _ in proc.handle.descendants]
    assert escaped and escaped[0] not in group_members(proc.handle.pgid)
    report = proc.stop(2.0)
    proc.close()
    assert escaped[0] in report.terminated and report.survivors == []
    assert proc.alive() == []
