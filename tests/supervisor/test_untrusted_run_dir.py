"""A run directory is untrusted input (issue 37 point 1, docs/supervisor.md).

The forged directory of the fault-injection round: a second user writes a ``state.json`` naming an
unrelated process (its real create time among the stage's descendants, ``create_time: 0`` on the
stage), and links where ``supervisor.lock`` and ``events.jsonl`` are expected. Whoever runs ``stop``,
``status``, ``restart`` or ``attach`` on it: nothing is signalled, nothing is written outside the run,
one line says why.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from a1x_supervisor.executor import LocalExecutor, ProcessHandle, handle_alive
from a1x_supervisor.runfiles import RunDirError, append_text, check_owner, read_text, write_atomic
from a1x_supervisor.secrets import Scrubber
from a1x_supervisor.stagelog import StageLog

NOBODY = 65534
COMMANDS = (["stop"], ["status"], ["restart", "--stage", "train"], ["attach"])


def _victim() -> subprocess.Popen[bytes]:
    """An unrelated process of the caller's user, in a session of its own."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)


def _forge(run: Path, victim: int, outside: Path) -> None:
    run.mkdir()
    created = psutil.Process(victim).create_time()
    process = {"executor": "local", "pid": victim, "pgid": victim, "create_time": 0.0,
               "descendants": [[victim, created]], "job_id": None}
    state = {"schema_version": 1, "run_id": "forged", "run_dir": str(run), "status": "running",
             "current_stage": "train",
             "stages": [{"name": "train", "status": "running", "process": process}]}
    (run / "state.json").write_text(json.dumps(state))
    (run / "run.toml").write_text("# forged\n")
    (run / "supervisor.lock").symlink_to(outside / "created_through_lock")
    (run / "events.jsonl").symlink_to(outside / "events_target")
    (outside / "events_target").write_text("keep\n")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "a1x_tui", *args], capture_output=True, text=True, timeout=60)


def _untouched(victim: subprocess.Popen[bytes], outside: Path) -> None:
    time.sleep(0.2)
    assert victim.poll() is None, "the unrelated process was signalled"
    assert not (outside / "created_through_lock").exists()
    assert (outside / "events_target").read_text() == "keep\n"


@pytest.fixture
def forged(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[bytes], Path]]:
    """The forged run directory, the unrelated process it names, and the folder its links point into."""
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = _victim()
    try:
        run = tmp_path / "run"
        _forge(run, victim.pid, outside)
        yield run, victim, outside
    finally:
        victim.kill()
        victim.wait()


Forged = tuple[Path, "subprocess.Popen[bytes]", Path]


@pytest.mark.skipif(os.geteuid() != 0, reason="a directory of another user needs root to make")
def test_root_refuses_a_forged_run_directory_of_another_user(forged: Forged) -> None:
    run, victim, outside = forged
    for path in [run, *run.iterdir()]:
        os.lchown(path, NOBODY, NOBODY)
    os.chmod(run.parent, 0o755)
    for args in COMMANDS:
        done = _cli(*args, str(run))
        assert done.returncode == 3, (args, done.stdout, done.stderr)
        assert done.stderr.count("\n") == 1 and "not by you" in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr
    _untouched(victim, outside)


def test_a_run_directory_others_may_write_to_is_refused(forged: tuple[Path, subprocess.Popen[bytes], Path]) -> None:
    run, victim, outside = forged
    os.chmod(run, 0o777)
    for args in COMMANDS:
        done = _cli(*args, str(run))
        assert done.returncode == 3, (args, done.stdout, done.stderr)
        assert "writable by others" in done.stderr and done.stderr.count("\n") == 1, (args, done.stderr)
    _untouched(victim, outside)


@pytest.mark.slow  # more than a few seconds (the fast lane, README)
def test_stop_in_a_private_directory_with_forged_records_signals_nothing_and_follows_no_link(
    forged: tuple[Path, subprocess.Popen[bytes], Path],
) -> None:
    # The caller's own directory, private, but its records name a process the run never started:
    # stop writes nothing through the links and kills nothing it cannot prove is the stage's.
    run, victim, outside = forged
    os.chmod(run, 0o700)
    done = _cli("stop", str(run))
    assert "Traceback" not in done.stderr
    _untouched(victim, outside)


def test_check_owner_says_what_is_wrong_in_one_line(tmp_path: Path) -> None:
    check_owner(tmp_path)  # ours, and pytest's tmp folders are not writable by others
    os.chmod(tmp_path, 0o775)
    with pytest.raises(RunDirError, match=r"mode 0775, writable by others"):
        check_owner(tmp_path)
    with pytest.raises(RunDirError, match="not a folder"):
        check_owner(Path(__file__))


def test_run_files_are_never_opened_through_a_link(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("secret\n")
    (tmp_path / "state.json").symlink_to(target)
    (tmp_path / "events.jsonl").symlink_to(target)
    (tmp_path / "linked").symlink_to(tmp_path / "real", target_is_directory=True)
    (tmp_path / "real").mkdir()
    with pytest.raises(OSError):
        read_text(tmp_path / "state.json")
    with pytest.raises(OSError):
        append_text(tmp_path / "events.jsonl", "x\n")
    with pytest.raises(OSError):  # a linked folder: nothing is created in what it points to
        write_atomic(tmp_path / "linked" / "pids.json", "{}\n")
    assert target.read_text() == "secret\n" and list((tmp_path / "real").iterdir()) == []
    write_atomic(tmp_path / "state.json", "{}\n")  # the link itself is replaced, never followed
    assert not (tmp_path / "state.json").is_symlink() and target.read_text() == "secret\n"


def test_a_fifo_where_state_json_should_be_never_blocks_a_reader(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "state.json")
    with pytest.raises(OSError, match="not a regular file"):
        read_text(tmp_path / "state.json")


def test_a_forged_handle_reaches_only_the_stages_own_processes(tmp_path: Path) -> None:
    victim = _victim()
    log = StageLog(tmp_path / "stages" / "x.log", scrubber=Scrubber([]))
    stage = LocalExecutor().start([sys.executable, "-c", "import time; time.sleep(60)"], cwd=tmp_path, env={},
                                  log=log)
    try:
        created = psutil.Process(victim.pid).create_time()
        forged = [  # each names the victim in a way the fault-injection round found or could find
            ProcessHandle(executor="local", pid=victim.pid, pgid=victim.pid, create_time=0.0,
                          descendants=[(victim.pid, created)]),
            ProcessHandle(executor="local", pid=stage.handle.pid, pgid=stage.handle.pgid,
                          create_time=stage.handle.create_time, descendants=[(victim.pid, created)]),
            ProcessHandle(executor="local", pid=1, pgid=1, create_time=psutil.Process(1).create_time()),
            ProcessHandle(executor="local", pid=os.getpid(), pgid=os.getpgrp(), create_time=time.time() - 3600),
        ]
        for handle in forged:
            assert victim.pid not in handle_alive(handle), handle
        assert stage.handle.pid in handle_alive(stage.handle)  # the stage's own handle still finds it
        assert stage.handle.mark and os.environ.get("A1X_STAGE_MARK") != stage.handle.mark
    finally:
        stage.stop(2.0)
        stage.close()
        victim.kill()
        victim.wait()
