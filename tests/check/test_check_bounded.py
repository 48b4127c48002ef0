"""``--check`` is bounded (issue 37, point 5): ``--timeout T`` answers UNKNOWN within T + 1 s whatever is slow
(finding the files, reading them, the detectors), every value its parser takes works, and no log it is given
can make it wait: a FIFO, a character device, a file of ``/proc``.

The slow parts are stand-ins (a reader or detectors that sleep), in the real CLI (its main thread: the alarm)
and through ``check()`` called from a thread (the app's or a server's way: the watchdog); big inputs are the
benchmarks' (``benchmarks/check_scale.py``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from a1x_diagnostics import engine
from a1x_diagnostics.engine import check
from a1x_diagnostics.findings import Report, Status
from a1x_diagnostics.parsing import FileReader

REPO = Path(__file__).resolve().parents[2]
HEALTHY = REPO / "a1x_diagnostics" / "examples" / "healthy"

# The CLI with one part made slow: the reader sleeps on every block, or the detectors before they run.
_SLOW = {
    "reader": "import a1x_diagnostics.parsing._reader as r\n"
              "feed = r.FileReader.feed\n"
              "r.FileReader.feed = lambda self, *a: (time.sleep(30), feed(self, *a))[1]\n",
    "detectors": "import a1x_diagnostics.engine as e\n"
                 "judge = e.run_detectors\n"
                 "e.run_detectors = lambda ctx: (time.sleep(30), judge(ctx))[1]\n",
    "layout": "import a1x_diagnostics.parsing as p\n"
              "find = p.discover\n"
              "p.discover = lambda *a, **k: (time.sleep(30), find(*a, **k))[1]\n",
}


def _cli(*args: str, slow: str | None = None, timeout: float = 60) -> tuple[subprocess.CompletedProcess[str], float]:
    script = "import sys, time\n" + (_SLOW[slow] if slow else "") + (
        "from a1x_tui.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script, "--check", *args], capture_output=True, text=True,
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=timeout, check=False)
    return done, time.monotonic() - began


@pytest.mark.parametrize("slow", ["layout", "reader", "detectors"])
def test_the_timeout_bounds_every_part_of_the_check(slow: str) -> None:
    done, took = _cli(str(HEALTHY), "--timeout", "1", slow=slow)
    assert done.returncode == 3, done.stdout + done.stderr
    assert done.stdout.startswith("A1X-TUI UNKNOWN - timed out after 1 s while "), done.stdout
    assert "Traceback" not in done.stderr
    assert took < 1 + 1.5, took  # T + 1 s, and the interpreter's start on a loaded machine


def test_a_check_in_a_thread_is_bounded_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """No alarm there (it is the main thread's): a watchdog stops the detectors, a pure-Python loop."""
    judge = engine.run_detectors

    def busy(ctx: object) -> object:
        end = time.monotonic() + 30
        while time.monotonic() < end:
            sum(range(100))
        return judge(ctx)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "run_detectors", busy)
    got: list[tuple[Report, float]] = []

    def run() -> None:
        began = time.monotonic()
        got.append((check(HEALTHY, timeout=0.5), time.monotonic() - began))

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(20)
    assert got, "check() did not return"
    report, took = got[0]
    assert report.status is Status.UNKNOWN and "timed out after 0.5 s while judging" in report.summary
    assert took < 1.5


def test_a_slow_reader_in_a_thread_is_stopped_at_its_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    feed = FileReader.feed

    def slow(self: FileReader, first: int, block: bytes) -> list[object]:
        time.sleep(0.2)
        return feed(self, first, block)  # type: ignore[return-value]

    monkeypatch.setattr(FileReader, "feed", slow)
    got: list[Report] = []
    worker = threading.Thread(target=lambda: got.append(check(HEALTHY, timeout=0.3)))
    worker.start()
    worker.join(20)
    assert got and got[0].status is Status.UNKNOWN and "while reading the logs" in got[0].summary


@pytest.mark.parametrize("value", ["1e10", "inf", "1e400", "100000000"])
def test_a_huge_timeout_is_no_limit(value: str) -> None:
    done, _ = _cli("--example", "healthy", "--timeout", value)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("A1X-TUI OK")


@pytest.mark.parametrize("value", ["nan", "-1", "ten"])
def test_a_timeout_that_is_no_number_of_seconds_is_refused_in_one_line(value: str) -> None:
    done, _ = _cli("--example", "healthy", f"--timeout={value}")
    assert done.returncode == 3 and done.stdout == ""
    assert done.stderr.strip().splitlines()[-1].startswith(f"a1x-tui --check: error: argument --timeout: '{value}'")


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _run_with(tmp_path: Path, name: str, make: str) -> Path:
    """A run whose ``name`` is a FIFO or a link to a device or a /proc file, beside a real controller log."""
    run = tmp_path / "logs_20261129-145604"
    run.mkdir()
    (run / "controller.log").write_bytes((HEALTHY / "logs_20261129-145604" / "controller.log").read_bytes())
    target = run / name
    if make == "fifo":
        _fifo(target)
    else:
        target.symlink_to(make)
    return run


HOSTILE = [("fifo", "fifo"), ("zero", "/dev/zero"), ("pagemap", "/proc/self/pagemap"), ("urandom", "/dev/urandom")]


@pytest.mark.parametrize(("kind", "make"), HOSTILE, ids=[k for k, _ in HOSTILE])
def test_no_log_makes_the_check_wait(kind: str, make: str, tmp_path: Path) -> None:
    """As a replica log beside a real one, and as the one file checked: an answer at once (the default
    timeout of 120 s is never what ends it)."""
    run = _run_with(tmp_path, "rollout_0.log", make)
    done, took = _cli(str(run), timeout=30)
    assert done.returncode in (0, 1, 2), done.stdout + done.stderr
    assert took < 15 and "Traceback" not in done.stderr
    alone, took = _cli(str(run / "rollout_0.log"), timeout=30)
    assert alone.returncode == 3 and alone.stdout.startswith("A1X-TUI UNKNOWN - "), alone.stdout
    assert took < 15 and "Traceback" not in alone.stderr


def test_a_fifo_named_like_a_capture_or_a_state_file_does_not_block(tmp_path: Path) -> None:
    """A launcher capture beside ``logs_<ts>`` is opened to see whether it is one; a run folder of ours has
    ``state.json`` read: a FIFO in their place is passed over."""
    _run_with(tmp_path, "policy_0.log", "fifo")
    _fifo(tmp_path / "launcher.log")
    (tmp_path / "logs_latest").symlink_to("logs_20261129-145604")
    done, took = _cli(str(tmp_path), timeout=30)
    assert done.returncode in (0, 1, 2) and took < 15, done.stdout + done.stderr
    ours = tmp_path / "ours"
    (ours / "logs").mkdir(parents=True)
    (ours / "run.toml").write_text('compute = "local"\n')
    (ours / "logs" / "controller.log").write_bytes((HEALTHY / "logs_20261129-145604" / "controller.log").read_bytes())
    _fifo(ours / "state.json")
    (ours / "stages").mkdir()
    _fifo(ours / "stages" / "train.log")
    done, took = _cli(str(ours), timeout=30)
    assert done.returncode in (0, 1, 2) and took < 15, done.stdout + done.stderr
