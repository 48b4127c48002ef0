"""The user's own ``ssh`` to a run on another machine: one command, a followed stream, the control socket.

Every connection is the ``ssh`` binary of the user (``$A1X_TUI_SSH``, default ``ssh``), so their
``~/.ssh/config``, keys, agent, ``ProxyJump`` and ``ControlMaster`` apply; a1x-tui adds only
``-T`` and ``BatchMode=yes`` (never a prompt: a password or passphrase it cannot ask for is one line
saying so) and keep-alives (a dead link is noticed within 30 s). The far side runs its own a1x-tui
(``$A1X_TUI_REMOTE``, default ``a1x-tui``, for one that is not on the PATH of a non-interactive login)
and sends JSON; nothing here parses its text output. Control of a supervised run goes over a Unix
socket forwarded by ssh (``-L local.sock:RUN/supervisor.sock``) in a private folder: no port is
opened on either side.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import selectors
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

SSH_OPTIONS = ("-T", "-o", "BatchMode=yes", "-o", "ServerAliveInterval=10", "-o", "ServerAliveCountMax=3",
               "-o", "ConnectTimeout=20")
BACKOFF_S = (1.0, 2.0, 4.0, 8.0, 15.0, 30.0)  # waits before each new try after a lost connection


class RemoteError(Exception):
    """The far side cannot be used (no login without a password, no a1x-tui there, unknown host...);
    ``str()`` is one line naming the host and what to do."""


def ssh_base() -> list[str]:
    words = shlex.split(os.environ.get("A1X_TUI_SSH") or "ssh")
    if not words or shutil.which(words[0]) is None:
        raise RemoteError(f"{words[0] if words else 'ssh'}: not found: install OpenSSH's client (ssh) or set "
                          "A1X_TUI_SSH to the ssh command to use")
    return words


def far_command(words: list[str]) -> str:
    """The far side's shell command: its a1x-tui and ``words`` (already quoted for its shell)."""
    return " ".join([os.environ.get("A1X_TUI_REMOTE") or "a1x-tui", *words])


def ssh_argv(host: str, words: list[str] | None, extra: tuple[str, ...] = ()) -> list[str]:
    argv = [*ssh_base(), *SSH_OPTIONS, *extra, "--", host]
    return argv + ([far_command(words)] if words is not None else [])


_NO_PROGRAM = re.compile(r"command not found|No such file or directory|not found|Permission denied$")
_AUTH = re.compile(r"Permission denied \(|Too many authentication failures|passphrase", re.I)
_HOST_KEY = re.compile(r"Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED|host key is known", re.I)
_USAGE = re.compile(r"a1x-tui[^:]*: error: (unrecognized arguments|argument|invalid choice)")


def explain(host: str, code: int | None, stderr: list[str], *, worked: bool) -> tuple[str, bool]:
    """(one line, worth retrying) for an ssh that ended with ``code`` and these last stderr lines."""
    text = "\n".join(stderr)
    last = next((line.strip() for line in reversed(stderr) if line.strip()), "")
    if code == 255:
        if _AUTH.search(text):
            return (f"{host}: ssh cannot log in without asking for a password or passphrase (a1x-tui runs ssh with "
                    f"BatchMode=yes): load your key into ssh-agent (ssh-add) or set up key login, then try again "
                    f"(ssh said: {last})"), False
        if _HOST_KEY.search(text):
            return (f"{host}: the host key is unknown or has changed: run `ssh {host}` once to check and accept it "
                    f"(ssh said: {last})"), False
        if "Could not resolve hostname" in text or "Bad configuration option" in text:
            return f"{host}: {last}", False
        return (f"{host}: the connection was lost ({last or 'ssh exited with code 255'})" if worked
                else f"{host}: cannot connect: {last or 'ssh exited with code 255'}"), worked
    if code in (126, 127) and _NO_PROGRAM.search(text):
        return (f"{host}: a1x-tui is not installed on the far side, or not on the PATH of a non-interactive ssh "
                f"login: `pip install a1x-tui` there, or set A1X_TUI_REMOTE to its path "
                f"(e.g. A1X_TUI_REMOTE=~/.local/bin/a1x-tui)"), False
    if _USAGE.search(text):
        return (f"{host}: the far side's a1x-tui is too old for this (it said: {last}); upgrade it there"), False
    said = re.sub(r"^a1x-tui( [a-z-]+)?: ", "", last) if last else f"exit code {code}"
    return f"{host}: {said}", False


def run_once(host: str, words: list[str], *, timeout: float | None) -> subprocess.CompletedProcess[str]:
    """The far side's ``a1x-tui WORDS`` to its end (``timeout`` None: however long); ``RemoteError`` when ssh or
    the program could not run."""
    try:
        done = subprocess.run(ssh_argv(host, words), capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        raise RemoteError(f"{host}: no answer within {timeout:g} s") from None
    if done.returncode in (126, 127, 255) or (not done.stdout.strip() and _USAGE.search(done.stderr)):
        raise RemoteError(explain(host, done.returncode, done.stderr.splitlines()[-20:], worked=False)[0])
    return done


class RemoteStream:
    """The JSON lines of the far side's ``a1x-tui WORDS`` (``watch --format json ...``), reconnecting.

    ``messages(stop)`` yields each line's object. A connection that breaks after it worked yields
    ``{"type": "connection", "state": "lost", "message": ..., "retry_in": s}``, tries again (1, 2, 4 ...
    30 s apart) and yields ``{"type": "connection", "state": "restored"}`` with the first line of the new
    one. What cannot work by trying again (no login without a password, no a1x-tui there, the far side
    refusing the path) raises ``RemoteError`` before the first line, or yields ``state: "failed"`` and
    ends. The far side's stderr lines go to ``on_stderr``."""

    def __init__(self, host: str, words: list[str], *, on_stderr: Callable[[str], None] | None = None,
                 backoff: tuple[float, ...] = BACKOFF_S) -> None:
        self.host = host
        self.words = words
        self.on_stderr = on_stderr
        self.backoff = backoff
        self.process: subprocess.Popen[bytes] | None = None
        self.connections = 0

    def _start(self, worked: threading.Event) -> tuple[subprocess.Popen[bytes], deque[str], threading.Thread]:
        # stdin: a pipe never written to, closed with the connection (the far side's --end-with-stdin)
        proc = subprocess.Popen(ssh_argv(self.host, self.words), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)  # Ctrl-C here is ours to handle
        self.process = proc
        tail: deque[str] = deque(maxlen=20)

        def read_stderr() -> None:
            # The far side's notes are passed on once its stream works; before that, a failure's last
            # line is what explain() says, once.
            assert proc.stderr is not None
            held: list[str] = []
            try:
                for raw in proc.stderr:
                    line = raw.decode("utf-8", "replace").rstrip("\n")
                    tail.append(line)
                    if self.on_stderr is None:
                        continue
                    held.append(line)
                    if worked.is_set():
                        for note in held:
                            self.on_stderr(note)
                        held = []
            except (OSError, ValueError):  # the pipe closed under us: the connection is being given up
                return

        thread = threading.Thread(target=read_stderr, name="a1x-ssh-stderr", daemon=True)
        thread.start()
        return proc, tail, thread

    def messages(self, stop: threading.Event) -> Iterator[dict[str, Any]]:
        attempt = 0
        lost_before = False
        while not stop.is_set():
            answered = threading.Event()
            proc, tail, stderr_thread = self._start(answered)
            worked = False
            try:
                for obj in self._lines(proc, stop):
                    if not worked:
                        worked = True
                        answered.set()
                        self.connections += 1
                        attempt = 0
                        if lost_before:
                            yield {"type": "connection", "state": "restored", "host": self.host}
                    yield obj
                if not stop.is_set():  # its output ended: let ssh exit by itself (a signal would make it 255)
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(10)
            finally:
                _end(proc, keep_stderr=True)
                stderr_thread.join(5.0)  # it ends at the pipe's end: after it, the stderr pipe is closed
                _end(proc)
            if stop.is_set():
                return
            line, retry = explain(self.host, proc.returncode, list(tail), worked=worked or lost_before)
            if proc.returncode == 0 and worked:
                return  # the far side ended by itself (its ``ended`` line came)
            if not retry:
                if self.connections == 0:
                    raise RemoteError(line)
                yield {"type": "connection", "state": "failed", "host": self.host, "message": line}
                return
            wait = self.backoff[min(attempt, len(self.backoff) - 1)]
            attempt += 1
            lost_before = True
            yield {"type": "connection", "state": "lost", "host": self.host, "message": line, "retry_in": wait}
            stop.wait(wait)

    @staticmethod
    def _lines(proc: subprocess.Popen[bytes], stop: threading.Event) -> Iterator[dict[str, Any]]:
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        buffer = b""
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while not stop.is_set():
                if not sel.select(timeout=0.2):
                    if proc.poll() is not None:  # ssh ended, but a ControlPersist master may hold the pipe open
                        return
                    continue
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for raw in lines:
                    if not raw.strip():
                        continue
                    try:
                        obj = json.loads(raw)
                    except ValueError:
                        continue  # a login banner or a shell's noise on stdout: not ours
                    if isinstance(obj, dict) and isinstance(obj.get("type"), str):
                        yield obj

    def close(self) -> None:
        if self.process is not None:
            _end(self.process)


def _end(proc: subprocess.Popen[bytes], *, keep_stderr: bool = False) -> None:
    if proc.stdin is not None:  # the far side's stdin ends: it ends too (even if the signal below never gets there)
        with contextlib.suppress(OSError):
            proc.stdin.close()
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    for stream in (proc.stdin, proc.stdout, None if keep_stderr else proc.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


class ControlForward:
    """The far side's ``RUN/supervisor.sock``, forwarded by ssh to a socket in a private local folder.

    The supervisor there answers only its owner (it checks the peer's uid): the far side's sshd runs as
    the user who logged in, so the run's owner gets through and nobody else. Started on first use."""

    def __init__(self, host: str, remote_socket: str) -> None:
        self.host = host
        self.remote_socket = remote_socket
        self.folder: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    @property
    def local_socket(self) -> Path:
        if self.folder is None:
            self.folder = Path(tempfile.mkdtemp(prefix="a1x-ssh-"))  # mode 0700
        return self.folder / "supervisor.sock"

    def ensure(self, timeout: float = 20.0) -> Path:
        with self._lock:
            local = self.local_socket
            if self.process is not None and self.process.poll() is None and local.exists():
                return local
            with contextlib.suppress(OSError):
                local.unlink()
            forward = f"{local}:{self.remote_socket}"
            argv = ssh_argv(self.host, None, ("-N", "-o", "ExitOnForwardFailure=yes", "-o",
                                              "StreamLocalBindUnlink=yes", "-L", forward))
            log = self.folder / "ssh.log" if self.folder is not None else local.with_name("ssh.log")
            with log.open("wb") as err:  # read back when a request fails (a refused channel is said only there)
                proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                        start_new_session=True)
            self.process = proc
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if local.exists():
                    return local
                if proc.poll() is not None:
                    raise RemoteError(explain(self.host, proc.returncode, self._said()[-20:], worked=False)[0])
                time.sleep(0.05)
            _end(proc)
            raise RemoteError(f"{self.host}: the control socket was not forwarded within {timeout:g} s")

    def request(self, message: dict[str, Any], *, timeout: float = 30.0) -> dict[str, Any]:
        """One request to the far side's supervisor; ``RemoteError`` with one line when it cannot be asked."""
        from a1x_supervisor.protocol import NoSupervisor, SupervisorClient

        local = self.ensure()
        try:
            return SupervisorClient(local, timeout=timeout).request(message, timeout=timeout)
        except NoSupervisor:
            if any("administratively prohibited" in line for line in self._said()):
                raise RemoteError(f"{self.host}: its sshd refuses to forward the run's control socket "
                                  "(AllowStreamLocalForwarding or AllowTcpForwarding is off there): the dashboard "
                                  f"is read-only; act on the run with `ssh {self.host} a1x-tui stop|restart RUN`"
                                  ) from None
            raise RemoteError(f"{self.host}: no supervisor answers on {self.remote_socket} (the run's supervisor "
                              "is not running there)") from None

    def _said(self) -> list[str]:
        """What the forwarding ssh wrote on stderr so far."""
        if self.folder is None:
            return []
        try:
            return (self.folder / "ssh.log").read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return []

    def close(self) -> None:
        with self._lock:
            if self.process is not None:
                _end(self.process)
                self.process = None
            if self.folder is not None:
                shutil.rmtree(self.folder, ignore_errors=True)
                self.folder = None
