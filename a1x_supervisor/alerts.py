"""Findings as W&B alerts: a monitor run beside the training run, in its project and group.

The training run's own W&B process cannot be joined from outside (its controller owns it,
docs/reference/cosmos-rl.md §7.3), so a separate run (``job_type = "a1x-tui-monitor"``) raises
``run.alert(title, text, level, wait_duration)`` for each finding raised, and again when one escalates
(warning -> critical): title = the finding's title, text = its explanation, its first evidence line
and its fix (or what to do), level from its severity. One finding is alerted at most once per
``wait_s`` unless it escalates (W&B's own ``wait_duration`` holds the same per title). When the run
ends the monitor logs its outcome (summary ``a1x/outcome``, ``a1x/status``, ``a1x/open_findings``) and
finishes with the findings' exit code.

``wandb`` (the ``a1x-tui[wandb]`` extra) is imported here only, in a thread: a missing package, a
missing key or a network that does not answer is one line through ``say`` and the run goes on. No key
is ever printed: every line passes ``redact``. Used by ``a1x-tui watch --wandb PROJECT`` and by the
supervisor for a run spec with ``[alerts] wandb = true``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

WAIT_S = 600.0  # the same finding is not alerted again sooner (unless it escalates)
INIT_TIMEOUT_S = 60.0
TITLE_MAX = 63  # W&B: "must be less than 64 characters"
_RANK = {"info": 0, "warning": 1, "critical": 2}
_LEVEL = {"critical": "ERROR", "warning": "WARN"}


def alert_text(finding: dict[str, Any]) -> str:
    """The explanation, the first evidence line, the fix (or what to do)."""
    parts = [str(finding.get("explanation") or "").strip()]
    evidence = finding.get("evidence") or []
    if evidence:
        ev = evidence[0]
        where = f"{ev.get('file')}:{ev.get('line')}" if ev.get("line") is not None else str(ev.get("file"))
        parts.append(f"Evidence: {where}: {str(ev.get('text') or '').strip()[:500]}")
    fixes = finding.get("fixes") or []
    if fixes:
        fix = fixes[0]
        proposed = "remove the key" if fix.get("proposed") is None else repr(fix.get("proposed"))
        parts.append(f"Fix: {fix.get('path')}: {fix.get('current')!r} -> {proposed} ({fix.get('why')})")
    elif finding.get("action"):
        parts.append(f"What to do: {finding['action']}")
    return "\n\n".join(p for p in parts if p)


def alert_title(finding: dict[str, Any]) -> str:
    title = str(finding.get("title") or finding.get("id") or "a1x-tui finding")
    return title if len(title) <= TITLE_MAX else title[: TITLE_MAX - 1].rstrip() + "…"


def monitor_group(toml: Path | None, fallback: str) -> tuple[str | None, str]:
    """(project, group) of the training run, from its TOML's ``[logging]`` (Cosmos-RL's ``project_name``
    and ``group_name``), the group falling back to ``fallback`` (the run's id: its ``logs_<ts>`` stamp,
    which Cosmos-RL also takes as the W&B run id, or the run folder's name)."""
    project = group = None
    if toml is not None:
        try:
            import tomlkit

            logging = tomlkit.parse(toml.read_text(encoding="utf-8")).get("logging") or {}
            project = logging.get("project_name") or None
            group = logging.get("group_name") or None
        except (OSError, ValueError, UnicodeDecodeError, AttributeError):
            pass
    return (str(project) if project else None), str(group or fallback)


class WandbAlerts:
    """The monitor run of one training run; ``start`` first, then ``message`` or ``finding``, ``finish`` last."""

    def __init__(self, *, project: str, group: str, name: str, say: Callable[[str], object],
                 wait_s: float = WAIT_S, init_timeout: float | None = None) -> None:
        self.project = project
        self.group = group
        self.name = name
        self.wait_s = wait_s
        if init_timeout is None:  # W&B's own variable, when set (it is the same setting)
            try:
                init_timeout = float(os.environ.get("WANDB_INIT_TIMEOUT", INIT_TIMEOUT_S))
            except ValueError:
                init_timeout = INIT_TIMEOUT_S
        self.init_timeout = init_timeout
        self._say = say
        self._run: Any = None
        self._failed = False
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._queued: list[tuple[str, str, str]] = []
        self._sent: dict[str, tuple[float, int]] = {}  # key -> (when, severity rank) of its last alert
        self._severity: dict[str, int] = {}
        self.alerts = 0

    def say(self, text: str) -> None:
        from a1x_diagnostics.report import redact

        self._say(redact(text))

    def start(self) -> WandbAlerts:
        threading.Thread(target=self._init, name="a1x-wandb-init", daemon=True).start()
        return self

    def _init(self) -> None:
        try:
            import wandb
        except ImportError:
            self._fail("wandb is not installed (pip install 'a1x-tui[wandb]')")
            return
        os.environ.setdefault("WANDB_SILENT", "true")  # wandb's own banner and key hints stay off the terminal
        try:
            run = wandb.init(
                project=self.project, group=self.group, name=self.name, job_type="a1x-tui-monitor",
                config={"a1x_tui": {"monitors": self.group}}, reinit="create_new",
                settings=wandb.Settings(silent=True, console="off", init_timeout=self.init_timeout,
                                        x_disable_stats=True, x_disable_meta=True),
            )
        except Exception as exc:  # no key, no network, a refused project: W&B's reason, one line
            self._fail(f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]}")
            return
        with self._lock:
            self._run = run
            queued, self._queued = self._queued, []
        for title, text, level in queued:
            self._send(run, title, text, level)
        self._ready.set()

    def _fail(self, why: str) -> None:
        with self._lock:
            self._failed = True
            self._queued = []
        self._ready.set()
        self.say(f"W&B alerts off: {why}; the run goes on")

    def finding(self, key: str, finding: dict[str, Any]) -> bool:
        """A finding raised or updated: alerted when new, or when its severity rose; at most once per
        ``wait_s`` otherwise. Returns whether an alert was sent (or queued until W&B is ready)."""
        rank = _RANK.get(str(finding.get("severity")), 0)
        previous = self._severity.get(key)
        self._severity[key] = rank
        escalated = previous is not None and rank > previous
        if previous is not None and not escalated:
            return False
        last = self._sent.get(key)
        now = time.monotonic()
        if last is not None and now - last[0] < self.wait_s and rank <= last[1]:
            return False
        self._sent[key] = (now, rank)
        from a1x_diagnostics.report import redact

        title, text = redact(alert_title(finding)), redact(alert_text(finding))
        level = _LEVEL.get(str(finding.get("severity")), "INFO")
        with self._lock:
            if self._failed:
                return False
            run = self._run
            if run is None:
                self._queued.append((title, text, level))
                return True
        self._send(run, title, text, level)
        return True

    def resolved(self, key: str) -> None:
        self._severity.pop(key, None)  # raised again later: a new alert (still within wait_s of the last)

    def _send(self, run: Any, title: str, text: str, level: str) -> None:
        try:
            run.alert(title=title, text=text, level=level, wait_duration=self.wait_s)
            self.alerts += 1
        except Exception as exc:
            self.say(f"W&B alert not sent: {type(exc).__name__}: {exc}")

    def message(self, message: Any) -> None:
        """A follower message (``a1x_diagnostics.live``): findings raised, updated, resolved; a new attempt."""
        from a1x_diagnostics.live import FindingRaised, FindingResolved, FindingUpdated, RunSwitched

        if isinstance(message, FindingRaised | FindingUpdated):
            self.finding(message.key, message.finding.model_dump(mode="json"))
        elif isinstance(message, FindingResolved):
            self.resolved(message.key)
        elif isinstance(message, RunSwitched):
            self._severity.clear()

    def finish(self, *, outcome: dict[str, Any] | None, status: str, exit_code: int, open_keys: list[str],
               timeout: float = 30.0) -> None:
        """The run ended (or the watch did): log the outcome on the monitor run and finish it."""
        self._ready.wait(timeout)
        with self._lock:
            run, self._run = self._run, None
        if run is None:
            return
        state = (outcome or {}).get("state") or "unknown"
        try:
            run.summary.update({"a1x/outcome": state, "a1x/outcome_summary": (outcome or {}).get("summary") or "",
                                "a1x/status": status, "a1x/open_findings": open_keys, "a1x/alerts": self.alerts})
            run.log({"a1x/open_findings": len(open_keys), "a1x/exit_code": exit_code})
            run.finish(exit_code=exit_code)
            import wandb

            wandb.teardown()  # its service process ends now, not in an exit hook of this process
        except Exception as exc:
            self.say(f"W&B monitor run not finished cleanly: {type(exc).__name__}: {exc}")
