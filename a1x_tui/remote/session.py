"""``attach HOST:PATH``: the far side's dashboard stream, and control of its run over the forwarded socket.

``RemoteRun.open`` starts ``a1x-tui watch --dashboard PATH`` on the far side (``a1x_tui.commands.
dashboard_feed``) and reads its first line, the target (a run of ours or a read-only log folder), so
that a failure to connect is one line before any screen opens. Control (stop, restart, a fix planned
and applied by the far side's supervisor on its TOML) is a request over ``RUN/supervisor.sock``,
forwarded by ssh on first use (``link.ControlForward``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from a1x_tui.remote.address import RemotePath, far_side_word
from a1x_tui.remote.link import ControlForward, RemoteError, RemoteStream


@dataclass
class RemoteRun:
    where: RemotePath
    target: dict[str, Any]  # the far side's ``target`` line
    stream: RemoteStream
    stop: threading.Event
    _messages: Iterator[dict[str, Any]]
    _control: ControlForward | None = field(default=None, repr=False)

    @classmethod
    def open(cls, where: RemotePath, config: str | None = None) -> RemoteRun:
        """Connect and read the target; ``RemoteError`` (one line) when that fails."""
        words = ["watch", "--dashboard", "--format", "json", "--end-with-stdin", where.shell_word()]
        if config:
            words += ["--config", far_side_word(config)]
        stream = RemoteStream(where.host, words)
        stop = threading.Event()
        messages = stream.messages(stop)
        for first in messages:
            if first.get("type") == "target":
                return cls(where, first, stream, stop, messages)
            if first.get("type") == "connection":
                continue
            stream.close()
            got = first.get("type")
            raise RemoteError(f"{where.host}: the far side's a1x-tui did not answer as expected (got {got!r} first): "
                              "is it as recent as this one?")
        raise RemoteError(f"{where.host}: the far side's a1x-tui ended before it said anything")

    @property
    def host(self) -> str:
        return self.where.host

    def messages(self) -> Iterator[dict[str, Any]]:
        """The rest of the stream (reconnections included), until ``close``."""
        return self._messages

    @property
    def controllable(self) -> bool:
        return bool(self.target.get("socket"))

    def _ask(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        socket = self.target.get("socket")
        if not socket:
            raise RemoteError(f"{self.host}: {self.where.path} is not a run supervised by a1x-tui: read-only")
        if self._control is None:
            self._control = ControlForward(self.host, str(socket))
        reply = self._control.request(message, timeout=timeout)
        if not reply.get("ok"):
            raise RemoteError(f"{self.host}: {reply.get('error') or 'the supervisor refused'}")
        return reply

    def stop_run(self) -> str:
        reply = self._ask({"op": "stop"}, timeout=300.0)
        status = (reply.get("state") or {}).get("status", "stopped")
        return f"{self.host}: the run is {status}; no process of it is left"

    def restart(self, stage: str) -> str:
        reply = self._ask({"op": "restart", "stage": stage}, timeout=60.0)
        return f"{self.host}: {reply.get('message') or f'restarting {stage}'}"

    def plan_fix(self, finding: dict[str, Any]) -> dict[str, Any]:
        """``{"toml", "diff", "sha256"}`` of the fix on the run's TOML, planned by the far side's supervisor."""
        return self._ask({"op": "plan_fix", "finding": finding}, timeout=60.0)

    def apply_fix(self, finding: dict[str, Any], sha256: str) -> dict[str, Any]:
        """``{"written", "backup", "summary"}``: only when the TOML is still the one the diff was made from."""
        return self._ask({"op": "apply_fix", "finding": finding, "sha256": sha256}, timeout=60.0)

    def close(self) -> None:
        self.stop.set()
        self.stream.close()
        if self._control is not None:
            self._control.close()
