"""The test sshd as the tests see it (started by ``conftest.sshd``): its client config, its environment for
a1x-tui, its open connections."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Sshd:
    root: Path
    port: int
    process: subprocess.Popen[bytes]
    config: Path  # the client's ssh config
    host: str = "a1xtest"

    @property
    def env(self) -> dict[str, str]:
        """What a1x-tui needs to reach the far side through this server."""
        remote = f"env PYTHONPATH={REPO} {sys.executable} -m a1x_tui"
        return {"A1X_TUI_SSH": f"ssh -F {self.config}", "A1X_TUI_REMOTE": remote}

    def sessions(self) -> list[int]:
        """The pids of the per-connection sshd processes (children of the listener)."""
        out = subprocess.run(["pgrep", "-P", str(self.process.pid)], capture_output=True, text=True, check=False)
        return [int(p) for p in out.stdout.split()]

    def cut_connections(self) -> int:
        """Kill every open connection's sshd (a broken network, seen from the client)."""
        pids = self.sessions()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return len(pids)
