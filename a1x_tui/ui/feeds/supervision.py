"""The supervisor, seen from the app: its state once a second, and the commands that act on the run.

State comes from the daemon's socket (``{"op": "status"}``) or, when no daemon answers, from
``state.json`` as ``a1x-tui status`` reads it. Stop and restart run the real ``a1x-tui stop`` and
``a1x-tui restart`` commands in a child process: they already handle a daemon that is gone (they
stop recorded orphans, or start a new supervisor), and a fresh process is the safe place to fork
a daemon from (this app has threads).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from textual.message import Message

from a1x_tui.ui.messages import CommandFinished, RunStateChanged

POLL_S = 1.0

Post = Callable[[Message], Any]


def read_state(run_dir: Path) -> tuple[dict[str, Any] | None, bool, str | None]:
    """(state, live, note) of a run directory now."""
    from supervisor.launch import offline_status
    from supervisor.layout import RunLayout
    from supervisor.protocol import NoSupervisor, SupervisorClient

    layout = RunLayout(run_dir)
    try:
        reply = SupervisorClient(layout.socket_path, timeout=2.0).request({"op": "status"})
    except NoSupervisor:
        state = offline_status(layout)
        if state is None:
            return None, False, f"{run_dir}: no state.json yet"
        return state, False, "no supervisor answers: state.json as last written"
    state = reply.get("state")
    return (state if isinstance(state, dict) else None), True, None


def _comparable(state: Mapping[str, Any] | None) -> Any:
    if state is None:
        return None
    return {k: v for k, v in state.items() if k != "updated_at"}


class StateFeed:
    """Posts ``RunStateChanged`` whenever the run's state changes (and once at start)."""

    def __init__(self, run_dir: Path, post: Post, *, interval: float = POLL_S) -> None:
        self.run_dir = run_dir
        self.post = post
        self.interval = interval

    def run(self, stop: threading.Event) -> None:
        last: Any = object()
        while not stop.is_set():
            try:
                state, live, note = read_state(self.run_dir)
            except Exception as exc:  # a half-written or foreign file must not end the worker
                state, live, note = None, False, f"cannot read the run's state: {type(exc).__name__}: {exc}"
            current = (_comparable(state), live, note)
            if current != last:
                last = current
                self.post(RunStateChanged(state, live, note))
            stop.wait(self.interval)


def cli_command(*args: str) -> list[str]:
    """``a1x-tui ARGS`` with this interpreter (works from a checkout and from an install)."""
    return [sys.executable, "-m", "a1x_tui", *args]


def cli_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    root = str(Path(__file__).resolve().parents[3])
    env = dict(os.environ)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra or {})
    return env


def run_cli(action: str, args: list[str], post: Post, *, timeout: float = 180.0) -> None:
    """Run one ``a1x-tui`` command to its end and post its answer (never its secrets: it has none)."""
    try:
        done = subprocess.run(
            cli_command(*args),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=cli_env(),
        )
    except subprocess.TimeoutExpired:
        post(CommandFinished(action, False, f"a1x-tui {' '.join(args)} did not answer within {timeout:.0f}s"))
        return
    text = "\n".join(t.strip() for t in (done.stdout, done.stderr) if t.strip())
    post(CommandFinished(action, done.returncode == 0, text or f"exit code {done.returncode}"))
