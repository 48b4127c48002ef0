"""The daemon's Unix socket: who may connect (mode 0600 and ``SO_PEERCRED``: the run's owner only) and
the answer to each request, JSON lines (docs/supervisor.md, "The socket protocol")."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import socket
import socketserver
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from a1x_supervisor.protocol import encode, unix_address
from a1x_supervisor.spec import RunSpec
from a1x_supervisor.state import EventLog, StateStore


class Served(Protocol):
    """What the server asks of the supervisor it serves."""

    store: StateStore
    events: EventLog
    spec: RunSpec
    finished: threading.Event

    def request_stop(self, reason: str) -> None: ...

    def request_restart(self, stage: str) -> str | None: ...


class SocketServer:
    """Serves ``supervisor`` on ``path`` from threads of its own, until ``close``."""

    def __init__(self, path: Path, run_dir: Path, supervisor: Served) -> None:
        self.path = path
        self.run_dir = run_dir
        self.supervisor = supervisor
        self._server: socketserver.BaseServer | None = None
        self._handlers = 0
        self._handlers_cv = threading.Condition()

    def start(self) -> None:
        served = self
        with contextlib.suppress(OSError):
            self.path.unlink()  # we hold the lock: any socket file left is stale

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                served._handle(self.connection, self.rfile, self.wfile)

        server = socketserver.ThreadingUnixStreamServer(str(self.path), Handler, bind_and_activate=False)
        server.daemon_threads = True
        old_umask = os.umask(0o177)
        try:
            with unix_address(self.path) as address:
                server.server_address = address
                server.server_bind()
        finally:
            os.umask(old_umask)
        os.chmod(self.path, 0o600)
        server.server_activate()
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, name="socket", daemon=True).start()
        self._server = server

    def close(self) -> None:
        """Let the clients being answered finish (3 s at most), then stop serving."""
        self._drain_handlers()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _drain_handlers(self, timeout: float = 3.0) -> None:
        deadline = time.monotonic() + timeout
        with self._handlers_cv:
            while self._handlers > 0 and time.monotonic() < deadline:
                self._handlers_cv.wait(timeout=max(0.0, deadline - time.monotonic()))

    def _handle(self, conn: socket.socket, rfile: Any, wfile: Any) -> None:
        with self._handlers_cv:
            self._handlers += 1
        try:
            self._serve_client(conn, rfile, wfile)
        except (OSError, ValueError):
            pass  # a client that went away: never the run's problem
        finally:
            with self._handlers_cv:
                self._handlers -= 1
                self._handlers_cv.notify_all()

    def _serve_client(self, conn: socket.socket, rfile: Any, wfile: Any) -> None:
        def send(message: dict[str, Any]) -> None:
            wfile.write(encode(message))
            wfile.flush()

        if not _same_user(conn):
            send({"ok": False, "error": "only the owner of the run may talk to its supervisor"})
            return
        line = rfile.readline()
        if not line:
            return
        try:
            request = json.loads(line)
        except ValueError:
            send({"ok": False, "error": "not JSON"})
            return
        sup = self.supervisor
        op = request.get("op") if isinstance(request, dict) else None
        if op == "ping":
            send({"ok": True, "pid": os.getpid(), "run_dir": str(self.run_dir)})
        elif op == "status":
            send({"ok": True, "live": True, "state": sup.store.snapshot()})
        elif op == "stop":
            sup.request_stop("stop requested by a client")
            sup.finished.wait(timeout=sup.spec.supervisor.stop_grace_s + 30.0)
            send({"ok": sup.finished.is_set(), "live": True, "state": sup.store.snapshot()})
        elif op == "restart":
            error = sup.request_restart(str(request.get("stage", "")))
            send(
                {
                    "ok": error is None,
                    "error": error,
                    "message": None if error else f"restarting {request.get('stage')}",
                }
            )
        elif op == "subscribe":
            self._stream(send, int(request.get("since", 0) or 0))
        elif op in ("plan_fix", "apply_fix"):  # the dashboard of another machine (attach HOST:RUN)
            from a1x_supervisor.fix_ops import answer
            from a1x_supervisor.rundir import RunDir

            send(answer(op, request, RunDir(self.run_dir).train_toml))
        else:
            send({"ok": False, "error": f"unknown op {op!r} (ping, status, stop, restart, subscribe, plan_fix, "
                  "apply_fix)"})

    def _stream(self, send: Callable[[dict[str, Any]], None], since: int) -> None:
        sup = self.supervisor
        q, backlog = sup.events.subscribe(since)
        try:
            send({"type": "state", "state": sup.store.snapshot()})
            for past in backlog:
                send({"type": "event", "event": past})
            while True:
                try:
                    event = q.get(timeout=1.0)
                except queue.Empty:
                    if sup.finished.is_set():
                        break
                    continue
                if event is None:
                    break
                send({"type": "event", "event": event})
            send({"type": "end", "status": sup.store.state.status, "message": sup.store.state.message})
        finally:
            sup.events.unsubscribe(q)


def _same_user(conn: socket.socket) -> bool:
    peercred = getattr(socket, "SO_PEERCRED", None)
    if peercred is None:
        return True  # not Linux: the socket's 0600 mode is the guard
    try:
        raw = conn.getsockopt(socket.SOL_SOCKET, peercred, struct.calcsize("3i"))
    except OSError:
        return True
    _pid, uid, _gid = struct.unpack("3i", raw)
    return bool(uid == os.getuid())
