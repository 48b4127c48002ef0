"""The supervisor's socket protocol: JSON lines over ``<run_dir>/supervisor.sock``.

Requests (one JSON object per line; the first line of a connection decides what it is):

- ``{"op": "ping"}`` -> ``{"ok": true, "pid": N, "run_dir": "..."}``
- ``{"op": "status"}`` -> ``{"ok": true, "state": {...}}`` (the same object as ``state.json``)
- ``{"op": "stop"}`` -> ``{"ok": true, "state": {...}}`` once every process of the run is gone
- ``{"op": "restart", "stage": "train"}`` -> ``{"ok": true, "message": "..."}``
- ``{"op": "plan_fix", "finding": {...}}`` -> ``{"ok": true, "toml": "...", "diff": "...", "sha256": "..."}``:
  the fix on the run's training TOML (``a1x_supervisor.fix_ops``)
- ``{"op": "apply_fix", "finding": {...}, "sha256": "..."}`` -> ``{"ok": true, "written": ..., "backup": ...,
  "summary": ...}``, only while the TOML is the one the diff was made from
- ``{"op": "subscribe", "since": 0}`` -> a stream: ``{"type": "state", "state": {...}}``, then
  ``{"type": "event", "event": {...}}`` per event (events after ``since`` first), then
  ``{"type": "end", "status": "..."}`` when the run is over.

Errors: ``{"ok": false, "error": "one line"}``. Only the owner of the run may connect (socket
mode 0600 and a peer-credential check).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_MAX_SUN_PATH = 100  # sockaddr_un.sun_path is 108 bytes on Linux, 104 on macOS


class NoSupervisor(Exception):
    """No daemon answers on the run's socket."""


@contextlib.contextmanager
def unix_address(path: Path) -> Iterator[str]:
    """An address for ``path`` short enough for AF_UNIX (Linux: via ``/proc/self/fd``)."""
    raw = str(path)
    if len(raw.encode()) < _MAX_SUN_PATH or not Path("/proc/self/fd").is_dir():
        yield raw
        return
    fd = os.open(str(path.parent), os.O_RDONLY)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


def encode(message: dict[str, Any]) -> bytes:
    return (json.dumps(message) + "\n").encode()


class LineReader:
    """Reads newline-terminated JSON objects from a socket."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buffer = b""

    def read(self) -> dict[str, Any] | None:
        while b"\n" not in self._buffer:
            chunk = self._sock.recv(65536)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        value = json.loads(line.decode())
        return value if isinstance(value, dict) else {"ok": False, "error": "not a JSON object"}


class SupervisorClient:
    """Talks to the daemon of one run directory."""

    def __init__(self, socket_path: Path, *, timeout: float = 5.0) -> None:
        self.socket_path = socket_path
        self.timeout = timeout

    def _connect(self, timeout: float | None) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            with unix_address(self.socket_path) as address:
                sock.connect(address)
        except OSError as exc:
            sock.close()
            raise NoSupervisor(f"no supervisor answers on {self.socket_path} ({exc.strerror or exc})") from None
        return sock

    def request(self, message: dict[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        wait = self.timeout if timeout is None else timeout
        sock = self._connect(wait)
        try:
            sock.sendall(encode(message))
            reply = LineReader(sock).read()
        except (OSError, ValueError) as exc:
            raise NoSupervisor(f"the supervisor on {self.socket_path} did not answer ({exc})") from None
        finally:
            sock.close()
        if reply is None:
            raise NoSupervisor(f"the supervisor on {self.socket_path} closed the connection")
        return reply

    def ping(self) -> dict[str, Any]:
        return self.request({"op": "ping"})

    def subscribe(self, since: int = 0) -> Iterator[dict[str, Any]]:
        """Messages until the run ends or the daemon goes away (then a final ``{"type": "gone"}``)."""
        sock = self._connect(self.timeout)
        try:
            sock.sendall(encode({"op": "subscribe", "since": since}))
            sock.settimeout(None)
            reader = LineReader(sock)
            while True:
                try:
                    message = reader.read()
                except (OSError, ValueError):
                    message = None
                if message is None:
                    yield {"type": "gone"}
                    return
                yield message
                if message.get("type") == "end":
                    return
        finally:
            sock.close()
