"""The follow worker in a child process: reading a run's history never holds the screen's interpreter.

The follower reads every line of a run's history in Python before its first evaluation (seconds to
minutes for a cluster run: docs/ui.md "Attach on a large run"). In the app's process that work would
share one interpreter lock with the screen, and keys would wait for it. So ``FollowFeed``
(``feeds/follow.py``) runs in ``python -m a1x_tui.ui.feeds.follow_child PATH [CONFIG]``, which writes
each message it would post as a pickled ``(class name, fields)`` to its stdout; ``follow_apart``, a
worker thread of the app, rebuilds and posts them. The child runs at a lower CPU priority (nice 10:
it yields to the screen only where the processors are busy), ignores Ctrl-C (the app decides), writes
nothing to the terminal, and ends when asked, when its stdout closes, or when the app is gone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pickle
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from textual.message import Message

from a1x_tui.ui import messages
from a1x_tui.ui.feeds.supervision import cli_env

NICE = 10


def follow_apart(path: Path, config: Path | None, post: Callable[[Message], Any], stop: threading.Event) -> None:
    """Follow ``path`` in a child process until ``stop`` is set, posting its messages through ``post``."""
    args = [sys.executable, "-m", __name__, str(path)] + ([str(config)] if config is not None else [])
    try:
        child = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 env=cli_env())
    except OSError as exc:
        post(messages.FollowProblem(f"the log follower did not start: {exc}"))
        return
    assert child.stdout is not None
    def end() -> None:
        stop.wait()
        child.terminate()  # its stdout closes: the loop below ends

    threading.Thread(target=end, daemon=True).start()
    try:
        while True:
            try:
                name, fields = pickle.load(child.stdout)  # our own child's output, never a file's
            except (EOFError, OSError, pickle.UnpicklingError):
                break
            post(getattr(messages, name)(**fields))
    finally:
        child.terminate()
        child.wait()
    if not stop.is_set():
        post(messages.FollowProblem(f"the log follower stopped (exit code {child.returncode}): logs and findings "
                                    "are no longer updated; attach again to resume"))


def _send(out: BinaryIO, stop: threading.Event) -> Callable[[Message], None]:
    lock = threading.Lock()

    def post(message: Message) -> None:
        fields = {f.name: getattr(message, f.name) for f in dataclasses.fields(message)}  # type: ignore[arg-type]
        try:
            with lock:
                pickle.dump((type(message).__name__, fields), out, protocol=pickle.HIGHEST_PROTOCOL)
                out.flush()
        except (BrokenPipeError, OSError):
            stop.set()

    return post


def main(argv: list[str]) -> int:
    from a1x_tui.ui.feeds.follow import FollowFeed

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the app's to answer
    with contextlib.suppress(OSError):
        os.nice(NICE)  # on a busy machine the screen's keys come before this history read
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # a stray print must not land in the pipe or on the screen
    os.dup2(devnull, sys.stderr.fileno())
    stop = threading.Event()
    parent = os.getppid()

    def orphaned() -> None:
        while not stop.wait(1.0):
            if os.getppid() != parent:
                stop.set()

    threading.Thread(target=orphaned, daemon=True).start()
    post = _send(out, stop)
    try:
        FollowFeed(Path(argv[0]), Path(argv[1]) if len(argv) > 1 else None, post).run(stop)
    except Exception as exc:  # said on the screen, never as a traceback on the terminal
        post(messages.FollowProblem(f"the log follower failed: {type(exc).__name__}: {exc}"))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
