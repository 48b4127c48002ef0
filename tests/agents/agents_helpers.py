"""Helpers of the ways-in tests: the CLI as a child process, a live supervised run (the demo)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def a1x(*args: str, timeout: float = 120, env: dict[str, str] | None = None,
        input: str | None = None) -> subprocess.CompletedProcess[str]:
    """``a1x-tui ARGS`` of this checkout, to its end."""
    return subprocess.run(
        [sys.executable, "-m", "a1x_tui", *args], capture_output=True, text=True, cwd=REPO, timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})}, input=input,
        stdin=None if input is not None else subprocess.DEVNULL, check=False,
    )


def start_demo(root: Path, speed: float = 1.0) -> tuple[Path, subprocess.Popen[str]]:
    """A live supervised run: ``a1x-tui demo --headless`` under ``root`` (its supervisor is detached; the
    headless client follows it). Returns the run directory once its supervisor answers."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "a1x_tui", "demo", "--headless", "--dir", str(root), "--speed", str(speed)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        found = re.match(r"a1x-tui demo: run (\S+) \(supervisor detached", line)
        if found:
            return Path(found.group(1)), proc
    proc.kill()
    raise AssertionError("the demo's supervisor did not start")


def stop_demo(run_dir: Path, proc: subprocess.Popen[str]) -> None:
    a1x("stop", str(run_dir), timeout=120)
    proc.kill()
    proc.wait(10)
