"""``a1x-tui demo`` in a real terminal of 80×24: tmux runs it, keys go in with send-keys,
capture-pane reads the screen. The stages advance, training steps climb, the findings appear, the
apply-fix dialog shows its buttons and keys, and quitting says the run goes on."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from ui_helpers import REPO

pytestmark = pytest.mark.slow


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, timeout=10).stdout


def wait_for(session: str, what: str, condition: Callable[[str], bool], timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = tmux("capture-pane", "-p", "-t", session)
        if condition(screen):
            return screen
        time.sleep(0.25)
    raise AssertionError(f"{what} did not show within {timeout:.0f}s; the screen was:\n{screen}")


def steps(screen: str) -> int:
    found = [int(m.group(1)) for m in re.finditer(r"step (\d+)/30", screen)]
    return max(found) if found else -1


def test_the_demo_runs_in_a_real_terminal(tmp_path: Path) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (.ci/run installs it)")
    session = f"a1x-e2e-{os.getpid()}"
    command = (
        f"cd {shlex.quote(str(REPO))} && PYTHONPATH={shlex.quote(str(REPO))} "
        f"{shlex.quote(sys.executable)} -m a1x_tui demo --dir {shlex.quote(str(tmp_path))} --speed 3; "
        "echo A1X-EXIT-$?; sleep 30"
    )
    tmux("new-session", "-d", "-s", session, "-x", "80", "-y", "24", command)  # SSH in tmux: the small case
    try:
        wait_for(session, "the stages", lambda s: "download" in s and "verify" in s, timeout=30)
        wait_for(
            session,
            "download done, train running",
            lambda s: re.search(r"✓\s+download", s) is not None and re.search(r"▶\s+train", s) is not None,
        )
        early = steps(wait_for(session, "a training step", lambda s: steps(s) >= 1))
        wait_for(session, "later steps", lambda s: steps(s) > early + 2)
        wait_for(session, "the simulated GPUs", lambda s: "SIMULATED GPUs" in s and "rollout_0" in s)
        tmux("send-keys", "-t", session, "4")
        findings = wait_for(session, "the findings", lambda s: "vllm_oom" in s and "rollout_buffer_growth" in s)
        assert "CRITICAL" in findings
        tmux("send-keys", "-t", session, "a")  # the fix's dialog: its buttons and keys in view at 80x24
        # All of it at once: a capture can fall between the frames that draw the first button and the rest.
        wait_for(session, "the apply-fix dialog with both buttons and its keys",
                 lambda s: all(x in s for x in ("Apply the fix for", "Apply (y)", "Cancel (n)", "esc Cancel")))
        tmux("send-keys", "-t", session, "Escape")
        wait_for(session, "the dialog closed", lambda s: "Apply (y)" not in s, timeout=10)
        tmux("send-keys", "-t", session, "q")
        after = wait_for(session, "the exit message", lambda s: "A1X-EXIT-0" in s, timeout=15)
        assert "the run goes on" in after or "the run has ended" in after
    finally:
        tmux("kill-session", "-t", session)
        for run in (tmp_path / "runs").glob("*"):
            subprocess.run(
                [sys.executable, "-m", "a1x_tui", "stop", str(run)],
                capture_output=True,
                timeout=60,
                cwd=REPO,
                env={**os.environ, "PYTHONPATH": str(REPO)},
            )
