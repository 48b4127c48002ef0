"""One fault trial of ``a1x-tui watch``: for ``tests/live/test_live_faults.py`` and ``benchmarks/watch_faults.py``.

``fault_trial`` writes a recorded run again as the run wrote it (``run_writer``) while ``watch --format json``
follows it in a child process, does one fault to one of its logs mid-run, and returns what ``watch`` ended
with beside what ``--check`` says of the same run written without the fault. As root, permission bits bind
only a process without ``CAP_DAC_OVERRIDE`` and ``CAP_DAC_READ_SEARCH``: ``watch`` runs without them (dropped
from its bounding set before it starts), so a ``chmod`` fault is one for it.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from run_writer import RunWriter

from a1x_diagnostics.engine import check
from a1x_diagnostics.findings import Finding
from a1x_diagnostics.live._findings import finding_key

REPO = Path(__file__).resolve().parents[2]
PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 24, 1, 2


def without_dac_override() -> None:
    """In the child before exec: permission bits bind it as they bind any user, root included."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def as_a_user() -> Callable[[], None] | None:
    """``preexec_fn`` for a child that permission bits bind (None: not root, they already do)."""
    return without_dac_override if os.geteuid() == 0 else None


def permissions_bind(scratch: Path) -> bool:
    """A file of mode 000 cannot be read by a child started ``as_a_user``."""
    locked = scratch / "locked"
    locked.write_text("x")
    locked.chmod(0)
    try:
        done = subprocess.run(["/bin/sh", "-c", f"test -r '{locked}'"], check=False, preexec_fn=as_a_user())
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        locked.chmod(0o600)
    return done.returncode != 0


class Watch:
    """``a1x-tui watch --format json`` in a child process, its stream read as it comes."""

    def __init__(self, target: Path, *args: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "a1x_tui", "watch", str(target), "--format", "json", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO, preexec_fn=as_a_user(),
        )
        self.messages: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.messages.append(json.loads(line))

    def open_findings(self) -> dict[str, Finding]:
        """The findings open now, by their stream key, in their last version."""
        open_: dict[str, Finding] = {}
        for m in list(self.messages):
            if m["type"] in ("finding_raised", "finding_updated"):
                open_[m["key"]] = Finding.model_validate(m["finding"])
            elif m["type"] == "finding_resolved":
                open_.pop(m["key"], None)
        return open_

    def wait_for(self, done: Callable[[Watch], bool], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not done(self) and time.monotonic() < deadline and self.proc.poll() is None:
            time.sleep(0.1)

    def stop(self) -> str:
        """SIGTERM, then its stderr."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        self._reader.join(timeout=10)
        assert self.proc.stderr is not None
        return self.proc.stderr.read()


def keys(findings: list[Finding]) -> list[str]:
    """Findings by their own keys (``finding_key``), as ``--check``'s are compared."""
    return sorted(map(finding_key, findings))


@dataclass
class Trial:
    expected: list[str]  # --check's findings of the run written without the fault
    expected_exit: int
    got: list[str] = field(default_factory=list)  # watch's open findings at its end
    exit_code: int | None = None
    raised_twice: list[str] = field(default_factory=list)
    switched: int = 0
    notes: list[str] = field(default_factory=list)  # follow_error messages
    stderr: str = ""
    ended: bool = False
    faulted: bool = False  # the fault was done (mid-run, the writer going on)

    @property
    def lost(self) -> list[str]:
        return sorted((Counter(self.expected) - Counter(self.got)).elements())

    @property
    def extra(self) -> list[str]:
        return sorted((Counter(self.got) - Counter(self.expected)).elements())


def fault_trial(recorded: Path, scratch: Path, fault: str | None, *, poll: bool, victim: str, at: float = 0.5,
                interval: float = 0.5, span: float = 2.0) -> Trial:
    """``recorded`` written into ``scratch`` in ``span`` s while ``watch`` follows it; ``fault`` done to the file
    named ``victim`` once ``at`` of its lines (0 to 1) are written, after a pause in which ``watch`` reads what
    was written (a copytruncate loses, by nature, what was not read before it)."""
    done = RunWriter(recorded, scratch / "done", span=0.0)
    done.prepare()
    done.write()
    done.close()
    expected = check(done.target, now=time.time())
    trial = Trial(keys(expected.findings), expected.exit_code)
    # The launcher's own mode: no O_APPEND, so a copytruncate leaves a hole of NULs (docs/live.md).
    writer = RunWriter(recorded, scratch / "live", span=span, binary_mode="wb")
    writer.prepare()
    path = next(f for f in writer.files if f.name == victim)
    mine = [i for i, (_, fi, _, _) in enumerate(writer.lines) if writer.files[fi] == path]
    moment = mine[min(len(mine) - 1, int(at * len(mine)))]
    watch = Watch(writer.target, "--interval", f"{interval:g}", *(["--poll"] if poll else []))
    try:
        watch.wait_for(lambda w: any(m["type"] == "history_complete" for m in w.messages), 20)

        def fault_once(i: int) -> None:  # called at each write, a burst of lines being one: the first at or past
            if fault is not None and i >= moment and not trial.faulted:
                time.sleep(interval + 0.5)
                writer.fault(fault, path)
                trial.faulted = True

        writer.write(between=fault_once)
        writer.close()  # a chmod's flip is over
        watch.wait_for(lambda w: keys(list(w.open_findings().values())) == trial.expected, 20)
    finally:
        trial.stderr = watch.stop()
    messages = watch.messages
    trial.ended = bool(messages) and messages[-1]["type"] == "ended"
    trial.got = keys(list(watch.open_findings().values()))
    trial.exit_code = watch.proc.returncode
    raised = Counter(m["key"] for m in messages if m["type"] == "finding_raised")
    trial.raised_twice = sorted(k for k, n in raised.items() if n > 1)
    trial.switched = sum(m["type"] == "run_switched" for m in messages)
    trial.notes = [m["message"] for m in messages if m["type"] == "follow_error"]
    return trial
