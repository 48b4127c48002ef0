"""Every output failure is one line (issue 37 point 6): a stdout that cannot be written (``>/dev/full``),
a target that would block, Ctrl-C in the middle: one line on stderr, exit 3 for the commands that read
(2 for ``fix``), never a traceback. A stdout whose reader left (``| head -1``) stays quiet with the
command's own code (tests/check/test_closed_stdout.py)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SICK = REPO / "a1x_diagnostics" / "examples" / "sick"
TOML = REPO / "tests" / "fixtures" / "cosmos" / "v0.4.4" / "healthy" / "healthy.toml"


def _run(args: list[str], *, stdout: object = subprocess.PIPE, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "a1x_tui", *args], stdout=stdout, stderr=subprocess.PIPE,
                          text=True, timeout=timeout, cwd=REPO, check=False)


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    """The failure's line: the last on stderr (a command's own notes, such as watch's progress or fix's
    "not written", may come before it), and the only one of its kind."""
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.splitlines()
    assert lines, "nothing on stderr"
    assert sum("could not" in ln or "interrupted" in ln or "not a regular" in ln for ln in lines) <= 1, done.stderr
    return lines[-1]


def _our_run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    (run / "state.json").write_text(json.dumps(
        {"schema_version": 1, "run_id": "r", "run_dir": str(run), "status": "succeeded", "message": "done"}))
    return run


COMMANDS = {
    "check text": ["--check", str(SICK)],
    "check json": ["--check", str(SICK), "--format", "json"],
    "schema": ["--check", "--schema"],
    "examples": ["--check", "--example"],
    "lint": ["lint", str(TOML)],
    "lint json": ["lint", str(TOML), "--format", "json"],
    "init": ["init", "--out", "-"],
    "version": ["--version"],
    "help": ["lint", "--help"],
    "fix diff": ["fix", str(TOML), "--finding", "checkpointing_disabled"],
}


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_full_stdout_is_one_line_and_a_failure_code(name: str) -> None:
    with open("/dev/full", "w") as full:
        done = _run(COMMANDS[name], stdout=full)
    assert "could not write the output to stdout: No space left on device" in _one_line(done)
    assert done.returncode == (2 if name.startswith("fix") else 3)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_status_and_watch_on_a_full_stdout(tmp_path: Path) -> None:
    with open("/dev/full", "w") as full:
        status = _run(["status", str(_our_run(tmp_path))], stdout=full)
        watch = _run(["watch", str(SICK)], stdout=full)  # follows forever, unless its output is lost
    for done in (status, watch):
        assert "could not write the output" in _one_line(done) and done.returncode == 3


def test_a_fifo_as_the_spec_to_write_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "run.toml"
    os.mkfifo(fifo)
    done = _run(["init", "--out", str(fifo), "--force"], timeout=20)
    assert "not a regular file" in _one_line(done) and done.returncode == 2


@pytest.mark.skipif(not os.access("/proc/kmsg", os.R_OK), reason="/proc/kmsg not readable here")
def test_lint_of_a_file_that_never_ends_a_read_does_not_block() -> None:
    done = _run(["lint", "/proc/kmsg"], timeout=20)
    assert done.returncode == 3 and "Traceback" not in done.stderr


def test_nan_for_a_number_is_refused_in_one_line(tmp_path: Path) -> None:
    done = _run(["gpu-agent", str(tmp_path), "--max-mb", "nan"], timeout=20)
    assert "positive finite" in _one_line(done) and done.returncode == 2


def test_ctrl_c_in_the_middle_of_a_check_is_one_line(tmp_path: Path) -> None:
    # A run large enough to be read for a while: the sick example's rollout log many times over.
    run = tmp_path / "run"
    shutil.copytree(SICK, run, symlinks=True)
    log = next((run / "logs_latest").glob("policy_0.log"))
    text = log.read_text(encoding="utf-8")
    with log.open("a", encoding="utf-8") as fh:
        for _ in range(4000):
            fh.write(text)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for after in (0.6, 1.2):
        proc = subprocess.Popen([sys.executable, "-m", "a1x_tui", "--check", str(run)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=REPO, env=env)
        time.sleep(after)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
        if proc.returncode != 3:  # it finished first on a fast machine: nothing to interrupt
            assert proc.returncode in (0, 1, 2) and "Traceback" not in err
            continue
        assert "interrupted" in err and err.count("\n") == 1 and "Traceback" not in err, err
