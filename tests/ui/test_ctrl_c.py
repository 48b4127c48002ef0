"""Ctrl-C at any moment of ``a1x-tui demo``, ``a1x-tui run`` and the app's start never orphans a run and never
prints a traceback: the command stops what it started, or says in one line that the run goes on and how
to stop it (docs/ui.md "The demo", README "Supervised runs").

Each case runs the real command in a terminal of its own (a pseudo-terminal it controls, 80×24) and
presses Ctrl-C there after a delay: the terminal sends SIGINT to the command's process group while it
is in cooked mode, and the key to the app once Textual has it in raw mode, as a user's terminal does.
Every process of the run carries a marker in its environment, so what is left is found in ``/proc``.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest
from ui_helpers import REPO

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc to find the run's processes"),
]

MARK = "A1X_CTRL_C_TEST"
IMPORT_TIMES = re.compile(r"^import time:.*\n", re.MULTILINE)
ANSI = re.compile(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>78]|\x1b\][^\x07]*\x07")


def _foreground_job() -> None:
    """In the child, before the command starts: the terminal is its controlling terminal, and SIGINT is
    as a shell leaves it for a foreground job (default, unblocked), whatever this test process has (an
    earlier test in the same worker may leave it ignored or blocked, and children inherit both)."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


class Terminal:
    """A command in a pseudo-terminal of 80×24 that it has as its controlling terminal."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        self.master = master
        self.proc = subprocess.Popen(
            argv,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            cwd=REPO,
            start_new_session=True,
            preexec_fn=_foreground_job,
        )
        os.close(slave)
        self._chunks: list[bytes] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # EIO: the last process holding the terminal closed it
                return
            if not data:
                return
            self._chunks.append(data)

    def wait_for(self, marker: bytes, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while marker not in b"".join(self._chunks):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise AssertionError(f"{marker!r} never came; the terminal showed:\n{self.text()}")
            time.sleep(0.005)

    def press_ctrl_c(self) -> None:
        os.write(self.master, b"\x03")  # the terminal's intr character: SIGINT in cooked mode, a key in raw

    def wait(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            raise AssertionError(f"still running {timeout:.0f} s after Ctrl-C; it printed:\n{self.text()}") from None

    def text(self) -> str:
        self._reader.join(2)
        raw = b"".join(self._chunks).decode("utf-8", "replace")
        return ANSI.sub("", raw).replace("\r", "")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
        os.close(self.master)


def marked(token: str) -> list[int]:
    """The pids of the processes whose environment carries ``MARK=token``."""
    needle = f"{MARK}={token}".encode() + b"\0"
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ:
            found.append(int(entry.name))
    return found


def wait_until_gone(token: str, timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    left = marked(token)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = marked(token)
    return left


def environment(tmp: Path, token: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TEXTUAL")}
    env.update(
        {
            "PYTHONPATH": str(REPO),
            "TERM": "xterm-256color",
            "XDG_CACHE_HOME": str(tmp / "cache"),
            "A1X_TUI_WORKSPACE": str(tmp / "workspace"),
            MARK: token,
        }
    )
    return env


def interrupted(tmp: Path, argv: list[str], delay: float, token: str) -> str:
    """The command's whole output once Ctrl-C, pressed ``delay`` seconds after a1x-tui's code started, has
    ended it.

    The clock starts when the interpreter has imported ``a1x_tui.cli`` (``-X importtime`` says when, on
    the terminal): before that, a Ctrl-C lands in the interpreter's own start (its ``site`` import), where
    any Python program dies silently or with the interpreter's "Fatal Python error", whatever it runs."""
    terminal = Terminal([sys.executable, "-X", "importtime", "-m", "a1x_tui", *argv], environment(tmp, token))
    try:
        terminal.wait_for(b"| a1x_tui.cli\r\n", 60)
        time.sleep(delay)
        terminal.press_ctrl_c()
        code = terminal.wait(60)
        out = IMPORT_TIMES.sub("", terminal.text())
    finally:
        terminal.close()
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out
    # 130 or killed by SIGINT: ended by the interrupt, as a shell expects of Ctrl-C; 0: detached, or quit
    assert code in (0, 130, -signal.SIGINT), f"exit code {code}:\n{out}"
    return out


def stop_command(out: str) -> Path | None:
    """The run that goes on, from the line that says how to stop it."""
    found = re.search(r"a1x-tui stop (/[^\s)]+)", out)
    return Path(found.group(1)) if found else None


def stop(run: Path, token: str, tmp: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "a1x_tui", "stop", str(run)],
        capture_output=True, text=True, timeout=90, cwd=REPO, env=environment(tmp, f"{token}-stop"),
    )
    assert done.returncode == 0, done.stdout + done.stderr


def judge(out: str, tmp: Path, token: str) -> str:
    """Either nothing of the run is left, or the output named the run that goes on (and it does, until
    the stop it names ends it)."""
    if "goes on" not in out:
        left = wait_until_gone(token, 30)
        assert not left, f"processes of the run left running: {left}; the command printed:\n{out}"
        return "stopped"
    run = stop_command(out)
    assert run is not None and (run / "state.json").is_file(), (
        f"the line that says how to stop the run names no run folder (a command cut in two?):\n{out}"
    )
    assert marked(token), f"the output says the run goes on, but nothing of it runs:\n{out}"
    stop(run, token, tmp)
    left = wait_until_gone(token, 30)
    assert not left, f"`a1x-tui stop {run}` left {left}"
    return "goes on"


@pytest.mark.parametrize("delay", [0.0, 0.1, 0.3, 0.6, 1.0, 1.6, 2.5, 5.0])
def test_ctrl_c_in_the_demo(tmp_path: Path, delay: float) -> None:
    token = f"demo-{delay}-{os.getpid()}"
    # a folder longer than the terminal is wide: the line that says how to stop the run must stay one line
    out = interrupted(tmp_path, ["demo", "--dir", str(tmp_path / ("runs-" + "x" * 70) / "demo")], delay, token)
    what = judge(out, tmp_path, token)
    if what == "stopped" and "interrupted" in out and "nothing was started" not in out:
        assert "stopped; no process of the run is left" in out, out


@pytest.mark.parametrize("delay", [0.3, 2.0])
def test_ctrl_c_in_the_headless_demo(tmp_path: Path, delay: float) -> None:
    token = f"headless-{delay}-{os.getpid()}"
    out = interrupted(tmp_path, ["demo", "--headless", "--dir", str(tmp_path / "demo")], delay, token)
    judge(out, tmp_path, token)


@pytest.fixture
def demo_spec_file(tmp_path: Path) -> Path:
    from a1x_supervisor.spec import dump_spec
    from a1x_tui.demo.setup import demo_spec

    root = tmp_path / "demo"
    root.mkdir()
    spec = tmp_path / "run.toml"
    spec.write_text(dump_spec(demo_spec(root)), encoding="utf-8")
    return spec


@pytest.mark.parametrize("delay", [0.0, 0.2, 0.5, 1.0, 2.0])
def test_ctrl_c_in_run(tmp_path: Path, demo_spec_file: Path, delay: float) -> None:
    token = f"run-{delay}-{os.getpid()}"
    out = interrupted(tmp_path, ["run", "--spec", str(demo_spec_file), "--skip-preflight"], delay, token)
    what = judge(out, tmp_path, token)
    if what == "stopped":  # interrupted before the supervisor started: no half-made run folder is left
        assert not list((tmp_path / "demo" / "runs").glob("*/state.json")), out


@pytest.mark.parametrize("delay", [0.0, 0.3, 0.8, 1.5])
def test_ctrl_c_at_the_start_of_the_app(tmp_path: Path, delay: float) -> None:
    token = f"app-{delay}-{os.getpid()}"
    out = interrupted(tmp_path, [], delay, token)
    assert wait_until_gone(token, 10) == [], out


def test_the_daemon_shows_in_ps_as_a_supervisor(tmp_path: Path, demo_spec_file: Path) -> None:
    token = f"ps-{os.getpid()}"
    done = subprocess.run(
        [sys.executable, "-m", "a1x_tui", "run", "--spec", str(demo_spec_file), "--skip-preflight", "--detach"],
        capture_output=True, text=True, timeout=90, cwd=REPO, env=environment(tmp_path, token),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    run = Path(re.search(r"run (\S+): supervisor pid (\d+)", done.stdout).group(1))  # type: ignore[union-attr]
    pid = int(re.search(r"supervisor pid (\d+)", done.stdout).group(1))  # type: ignore[union-attr]
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()  # what ps shows
        assert args == f"a1x-tui supervisor {run}"
    finally:
        stop(run, token, tmp_path)
        assert wait_until_gone(token, 30) == []
