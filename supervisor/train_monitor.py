"""Watching the train stage: steps, checkpoints, dead replicas, a job that does not exit.

The launcher cannot be trusted (cosmos-rl.md §2.7, §15): it keeps running when a policy or
rollout replica dies, and it can report success for a crash. So while ``cosmos-rl`` runs, the
monitor

- follows ``controller.log`` for ``Step: n/N`` and the policy logs for saved checkpoints;
- reads the launcher's own output for ``Process {i} failed with return code {rc}`` (§2.7;
  alpamayo-recipe.md §8.3: "treat any failed with return code as fatal");
- polls the live diagnostics (``diagnostics.engine.check(<log dir>, run=<logs_ts>)``, imported lazily) every
  ``diagnostics_interval_s`` and records their findings; ``replica_died`` stops the stage,
  ``shutdown_hang`` starts the shutdown grace period;
- ends a job whose training is complete (last step = total, a complete checkpoint) but that has
  not exited after ``shutdown_grace_s``.

For a Slurm job (``slurm=True``, compute = "cluster") the log source is ``<run>/slurm`` and each
start of the job is a ``part_<N>/run_<M>`` folder (cosmos-rl.md §11.1): the monitor follows the
newest one (a requeue makes a new one), reads ``controller.err`` and ``policy_<t>.err``, and hands
``part_<N>/run_<M>`` to the diagnostics. Failures belong to the job there: its monitor ends the job
when a step fails and requeues it while retries last, so a ``replica_died`` finding is recorded but
does not cancel the job.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from supervisor.cosmos_logs import (
    LAUNCHER_FAILED_RE,
    LogFollower,
    checkpoint_incomplete_reason,
    controller_logs,
    log_runs,
    parse_saved,
    replica_failure_cause,
    replica_logs,
    run_name,
)
from supervisor.progress import TrainSteps
from supervisor.stage import Progress
from supervisor.state import FindingsLog

DiagnoseFn = Callable[[Path, "str | None"], Any]  # (log dir, logs_<ts> name or None) -> Report
EmitFn = Callable[..., Any]


def load_diagnose() -> tuple[DiagnoseFn | None, str | None]:
    """The diagnostics the train stage polls: ``diagnostics.engine.check`` at the current time, so the
    silence since the newest write counts toward ``stalled``. (None, note) if it cannot be imported."""
    try:
        from diagnostics.engine import check
    except ImportError as exc:
        return None, f"live diagnostics unavailable ({exc}); dead replicas are still caught from the launcher's lines"

    def diagnose(path: Path, run: str | None) -> Any:
        return check(path, run=run, now=time.time(), timeout=120.0)

    return diagnose, None


@dataclass(frozen=True, slots=True)
class TrainVerdict:
    """What the monitor wants done with a still-running launcher."""

    action: Literal["stop_failed", "end_finished"]
    reason: str
    failure: dict[str, Any] | None = None


def _findings_of(report: Any) -> list[dict[str, Any]]:
    findings = report.get("findings", []) if isinstance(report, dict) else getattr(report, "findings", [])
    out = []
    for f in findings or []:
        if isinstance(f, dict):
            out.append(f)
        elif hasattr(f, "model_dump"):
            out.append(f.model_dump(mode="json"))
    return out


def describe_finding(finding: dict[str, Any]) -> str:
    """'replica_died: rollout_0 — rollout_0.log:812: exitcode  : -9' (the first evidence line)."""
    data = finding.get("data") or {}
    who = data.get("replica") or data.get("replicas") or ""
    ev = (finding.get("evidence") or [{}])[0]
    where = Path(str(ev.get("file", ""))).name
    if ev.get("line") is not None:
        where += f":{ev['line']}"
    text = str(ev.get("text", "")).strip()[:240]
    head = f"{finding.get('id')}: {who}" if who else f"{finding.get('id')}: {finding.get('title', '')}"
    return f"{head} — {where}: {text}" if text else head


class TrainMonitor:
    def __init__(
        self,
        *,
        log_dir: Path,
        ranks: Callable[[], int | None],
        diagnose: DiagnoseFn | None,
        interval_s: float,
        grace_s: float,
        findings: FindingsLog,
        emit: EmitFn,
        clock: Callable[[], float] = time.monotonic,
        slurm: bool = False,
    ) -> None:
        self.log_dir = log_dir
        self.slurm = slurm
        self._ranks = ranks
        self._diagnose = diagnose
        self._interval_s = interval_s
        self._grace_s = grace_s
        self._findings = findings
        self._emit = emit
        self._clock = clock
        # Runs of earlier attempts, by real path (a cosmos-dispatch <run>/slurm link moves per job).
        self._known_dirs = {p.resolve() for p in log_runs(log_dir)}
        self.logs_dir: Path | None = None
        self.run_name: str | None = None  # logs_<ts> or part_<N>/run_<M>, for the diagnostics
        self.progress: Progress | None = None
        self.last_step: tuple[int, int] | None = None
        self.checkpoints: dict[Path, int] = {}
        self.launcher_failure: str | None = None
        self.complete_since: float | None = None
        self.hang_since: float | None = None
        self.replica_died: dict[str, Any] | None = None
        self._followers: dict[Path, LogFollower] = {}
        self._steps = TrainSteps()
        self._next_check = clock() + min(interval_s, 2.0)
        self._check_thread: threading.Thread | None = None
        self._check_result: tuple[Any, BaseException | None] | None = None
        self._check_lock = threading.Lock()
        self._check_error_noted = False
        self._verdict_given = False

    # -- inputs ------------------------------------------------------------------------------------
    def on_launcher_line(self, line: str) -> None:
        """Every line of the launcher's own output (the stage log)."""
        if self.launcher_failure is None:
            m = LAUNCHER_FAILED_RE.search(line)
            if m:
                self.launcher_failure = line.strip()[:300]

    def tick(self, *, running: bool) -> TrainVerdict | None:
        """Called about once a second. Returns a verdict at most once, while the launcher runs."""
        self._read_logs()
        self._poll_diagnostics()
        if not running or self._verdict_given:
            return None
        verdict = self._decide()
        if verdict is not None:
            self._verdict_given = True
        return verdict

    def close(self) -> None:
        thread = self._check_thread
        if thread is not None:
            thread.join(timeout=5.0)

    # -- logs --------------------------------------------------------------------------------------
    def _read_logs(self) -> None:
        if self.logs_dir is None or self.slurm:  # a Slurm job makes a new run per start (requeue, autoresume)
            fresh = [p for p in log_runs(self.log_dir) if p.resolve() not in self._known_dirs]
            if not fresh:
                return
            if fresh[-1] != self.logs_dir:
                self._switch_run(fresh[-1])
        assert self.logs_dir is not None
        for controller in controller_logs(self.logs_dir):
            for line in self._follower(controller).new_lines():
                progress = self._steps.feed(line)
                if progress is not None and progress.current is not None and progress.total is not None:
                    self.progress = progress
                    self.last_step = (int(progress.current), int(progress.total))
        for log in replica_logs(self.logs_dir, "policy"):
            for line in self._follower(log).new_lines():
                if "checkpoint saved successfully" in line:
                    saved = parse_saved(line)
                    if saved:
                        self.checkpoints[saved[1]] = saved[0]
        if self.complete_since is None and self._training_complete():
            self.complete_since = self._clock()
            assert self.last_step is not None
            self._emit(
                "note", f"training reached step {self.last_step[0]}/{self.last_step[1]} with a complete checkpoint"
            )

    def _switch_run(self, run: Path) -> None:
        first = self.logs_dir is None
        self.logs_dir = run
        self.run_name = run_name(self.log_dir, run) or None
        if not first:  # the job started again: what the previous start showed no longer holds
            self._steps = TrainSteps()
            self.last_step = None
            self.complete_since = None
            self.hang_since = None
            self.replica_died = None
        what = "Slurm job logs" if self.slurm else "Cosmos-RL logs"
        self._emit("note", f"{what}: {run}", logs_dir=str(run))

    def _follower(self, path: Path) -> LogFollower:
        if path not in self._followers:
            self._followers[path] = LogFollower(path)
        return self._followers[path]

    def _training_complete(self) -> bool:
        if self.last_step is None or self.last_step[1] <= 0 or self.last_step[0] < self.last_step[1]:
            return False
        ranks = self._ranks()
        return any(checkpoint_incomplete_reason(path, ranks) is None for path in self.checkpoints)

    # -- diagnostics ---------------------------------------------------------------------------------
    def _poll_diagnostics(self) -> None:
        if self._diagnose is None or self.logs_dir is None:  # never judge an earlier attempt's logs
            return
        with self._check_lock:
            result, self._check_result = self._check_result, None
        if result is not None:
            self._take_report(*result)
        busy = self._check_thread is not None and self._check_thread.is_alive()
        if busy or self._clock() < self._next_check:
            return
        self._next_check = self._clock() + self._interval_s
        self._check_thread = threading.Thread(target=self._run_check, name="train-diagnostics", daemon=True)
        self._check_thread.start()

    def _run_check(self) -> None:
        assert self._diagnose is not None
        try:
            assert self.logs_dir is not None
            report: Any = self._diagnose(self.log_dir, self.run_name)
            error: BaseException | None = None
        except Exception as exc:  # the engine is another module: its failure must not stop training
            report, error = None, exc
        with self._check_lock:
            self._check_result = (report, error)

    def _take_report(self, report: Any, error: BaseException | None) -> None:
        if error is not None:
            if not self._check_error_noted:
                self._check_error_noted = True
                self._emit("note", f"live diagnostics failed: {type(error).__name__}: {error}")
            return
        findings = _findings_of(report)
        raised, cleared = self._findings.observe(findings, stage="train")
        for finding in raised:
            self._emit(
                "finding_raised",
                describe_finding(finding),
                finding_id=finding.get("id"),
                severity=finding.get("severity"),
            )
        for finding in cleared:
            self._emit("finding_cleared", f"{finding.get('id')} no longer holds", finding_id=finding.get("id"))
        for finding in findings:
            if finding.get("id") == "replica_died" and self.replica_died is None:
                self.replica_died = finding
            if finding.get("id") == "shutdown_hang" and self.hang_since is None:
                self.hang_since = self._clock()

    # -- decisions -------------------------------------------------------------------------------------
    def _decide(self) -> TrainVerdict | None:
        finished = self.complete_since is not None
        # A Slurm job's own monitor ends it when a step fails, and requeues it while retries last.
        ours = not self.slurm
        if ours and self.replica_died is not None and not finished:
            return TrainVerdict(
                "stop_failed",
                f"a replica died while the launcher kept running: {describe_finding(self.replica_died)}",
                failure={"finding": self.replica_died},
            )
        if ours and self.launcher_failure is not None and not finished:
            cause = replica_failure_cause(self.logs_dir) if self.logs_dir else None
            reason = f"the launcher reports '{self.launcher_failure}' and would keep running"
            if cause:
                reason += f"; {cause}"
            return TrainVerdict("stop_failed", reason, failure={"launcher_line": self.launcher_failure, "cause": cause})
        starts = [t for t in (self.complete_since, self.hang_since) if t is not None]
        if starts and self._clock() - min(starts) >= self._grace_s:
            step = f"step {self.last_step[0]}/{self.last_step[1]}" if self.last_step else "the last step"
            return TrainVerdict(
                "end_finished",
                f"training finished ({step}) but the job did not exit within {self._grace_s:.0f}s: ending it",
            )
        return None
