"""Watching the train stage: steps, checkpoints, dead replicas, a job that does not exit.

The launcher cannot be trusted (docs/reference/cosmos-rl.md §2.7, §15): it keeps running when a policy or
rollout replica dies, and it can report success for a crash. So while ``cosmos-rl`` runs, the
monitor

- follows ``controller.log`` for ``Step: n/N`` and the policy logs for saved checkpoints;
- reads the launcher's own output for ``Process {i} failed with return code {rc}`` (§2.7;
  docs/reference/alpamayo-recipe.md §8.3: "treat any failed with return code as fatal");
- follows the run with one ``a1x_diagnostics.live.RunFollower`` (imported lazily) for the stage's
  lifetime: the follower tails every log file and runs the detectors on the new lines only
  (``docs/live.md``), and the monitor takes its ``FindingRaised`` / ``FindingUpdated`` /
  ``FindingResolved`` messages at each tick and records them in ``findings.jsonl``;
  ``replica_died`` stops the stage, ``shutdown_hang`` starts the shutdown grace period;
- ends a job whose training is complete (last step = total, a complete checkpoint) but that has
  not exited after ``shutdown_grace_s``.

The follower starts once this attempt's first run folder is there and is the one the log source
points at (``logs_latest`` / ``latest_run``): an earlier attempt's logs are never read, let alone
judged. A local train stage is one launcher and one ``logs_<ts>``: the follower is pinned to it.

For a Slurm job (``slurm=True``, compute = "cluster") the log source is ``<run>/slurm`` and each
start of the job is a ``part_<N>/run_<M>`` folder (docs/reference/cosmos-rl.md §11.1): the monitor follows the
newest one (a requeue makes a new one) for steps and checkpoints, and the follower moves with
``latest_run`` by itself (``RunSwitched``: what the previous start showed no longer holds).
Failures belong to the job there: its monitor ends the job when a step fails and requeues it while
retries last, so a ``replica_died`` finding is recorded but does not cancel the job.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from a1x_diagnostics.parsing import controller_logs, latest_logs_dir, log_runs, replica_logs, run_name
from a1x_supervisor.alerts import WandbAlerts
from a1x_supervisor.cosmos_logs import LogFollower, checkpoint_incomplete_reason, parse_saved, replica_failure_cause
from a1x_supervisor.progress import TrainSteps
from a1x_supervisor.stage import Progress
from a1x_supervisor.state import FindingsLog

if TYPE_CHECKING:
    from a1x_diagnostics.live import DiagnosisFactory, FollowOptions, RunFollower, Subscription

EmitFn = Callable[..., Any]
MAX_ERROR_NOTES = 5  # the follower's own errors recorded as notes, then one line saying more were left out
# The program's own output saved in its run folder: a local AlpaGym host writes its lines (bring-up, the
# Hugging Face check) to its terminal only, and the closed-loop reader reads this capture
# (docs/reference/alpagym.md §3.1; a1x_diagnostics/parsing/alpagym_layout.py).
HOST_CAPTURE = "host.log"
MAX_EARLY_LINES = 20_000  # kept until the run folder is there


def load_diagnosis(target: Path | None = None) -> DiagnosisFactory:
    """The live diagnostics the train stage follows the run with: ``a1x_diagnostics.live``'s engine (the
    same parsers and detectors as ``--check``, fed line by line), without a TOML: the log findings, as
    ``--check <logs>`` gives them. Imported here, not at the top: the daemon loads it only for a train
    stage with live diagnostics on. ``target``: an AlpaGym run folder, read closed-loop (its AlpaGym and
    AlpaSim lines, its artifacts, its generated TOML: docs/parsing.md "Closed-loop runs")."""
    from a1x_diagnostics.live import engine_diagnosis

    factory, _notes = engine_diagnosis(target=target)  # no --config, so no notes about it
    return factory


def follow_options(interval_s: float) -> FollowOptions:
    """The follower's defaults (what ``a1x-tui watch`` uses and ``docs/live.md`` measured): findings
    evaluated every second while lines arrive and every 5 s when none do; ``diagnostics_interval_s``
    only shortens those periods."""
    from a1x_diagnostics.live import FollowOptions

    defaults = FollowOptions()
    return FollowOptions(
        evaluate_interval=min(defaults.evaluate_interval, interval_s),
        quiet_evaluate_interval=min(defaults.quiet_evaluate_interval, interval_s),
    )


@dataclass(frozen=True, slots=True)
class TrainVerdict:
    """What the monitor wants done with a still-running launcher."""

    action: Literal["stop_failed", "end_finished"]
    reason: str
    failure: dict[str, Any] | None = None


def _as_dict(finding: Any) -> dict[str, Any]:
    if isinstance(finding, dict):
        return finding
    dumped: dict[str, Any] = finding.model_dump(mode="json")
    return dumped


def describe_finding(finding: dict[str, Any]) -> str:
    """'replica_died: rollout_0 — rollout_0.log:812: exitcode  : -9' (the first evidence line)."""
    data = finding.get("data") or {}
    who = data.get("replica") or data.get("replicas") or ""
    ev = (finding.get("evidence") or [{}])[0]
    where = Path(str(ev.get("file", ""))).name
    if ev.get("line") is not None:
        where += f":{ev['line']}"
    from a1x_diagnostics.detectors import clip_text  # cut at a word or value, never inside a number

    text = clip_text(str(ev.get("text", "")).strip(), 240)
    head = f"{finding.get('id')}: {who}" if who else f"{finding.get('id')}: {finding.get('title', '')}"
    return f"{head} — {where}: {text}" if text else head


class TrainMonitor:
    def __init__(
        self,
        *,
        log_dir: Path,
        ranks: Callable[[], int | None],
        diagnosis: DiagnosisFactory | None,
        grace_s: float,
        findings: FindingsLog,
        emit: EmitFn,
        interval_s: float = 12.0,
        clock: Callable[[], float] = time.monotonic,
        slurm: bool = False,
        options: FollowOptions | None = None,
        run_folders: Callable[[], Sequence[Path]] | None = None,
        diagnosis_for: Callable[[Path], DiagnosisFactory] | None = None,
        alerts: WandbAlerts | None = None,
    ) -> None:
        """``diagnosis``: a ``a1x_diagnostics.live`` ``DiagnosisFactory`` (``load_diagnosis()``), None for
        no live diagnostics. ``options``: the follower's, ``follow_options(interval_s)`` by default.

        ``run_folders``: the stage's program makes its own run folder (AlpaGym's host, ``StageSpec.run_folders``):
        the monitor waits for the first one this attempt makes, then reads its ``logs/`` and follows the
        whole folder (``log_dir`` is unused until then); ``diagnosis_for(folder)`` then gives the diagnosis.

        ``alerts``: findings also go to W&B as alerts (``[alerts] wandb``); finished with the outcome at ``close``."""
        self._alerts = alerts
        self.log_dir = log_dir
        self.slurm = slurm
        self._ranks = ranks
        self._diagnosis = diagnosis
        self._interval_s = interval_s
        self._options = options
        self._grace_s = grace_s
        self._findings = findings
        self._emit = emit
        self._clock = clock
        # Runs of earlier attempts, by real path (a cosmos-dispatch <run>/slurm link moves per job).
        self._known_dirs = {p.resolve() for p in log_runs(log_dir)} if run_folders is None else set()
        self._run_folders = run_folders
        self._known_folders = {p.resolve() for p in run_folders()} if run_folders is not None else set()
        self._diagnosis_for = diagnosis_for
        self.run_folder: Path | None = None  # the program's own run folder, once this attempt made it
        self._host_lock = threading.Lock()  # on_launcher_line comes from the output thread
        self._early_lines: list[str] = []
        self._host_log: IO[str] | None = None
        self.logs_dir: Path | None = None
        self.run_name: str | None = None  # logs_<ts> or part_<N>/run_<M> being read for steps
        self.progress: Progress | None = None
        self.last_step: tuple[int, int] | None = None
        self.checkpoints: dict[Path, int] = {}
        self.launcher_failure: str | None = None
        # docs/reference/cosmos-rl.md §2.7: 'Process {i} failed with return code {rc}', as the parsers read it.
        # Imported here: the parsing package is loaded only by a daemon that runs a train stage.
        from a1x_diagnostics.parsing import PROCESS_FAILED_RE

        self._launcher_failed = PROCESS_FAILED_RE
        self.complete_since: float | None = None
        self.hang_since: float | None = None
        self.replica_died: dict[str, Any] | None = None
        self.outcome: dict[str, Any] | None = None  # the live diagnostics' run outcome (``RunOutcome`` as JSON)
        self.follower: RunFollower | None = None
        self._sub: Subscription | None = None
        self._live_open: dict[str, dict[str, Any]] = {}  # the follower's open findings, by its key
        self._errors_noted = 0
        self._closed = False
        self._followers: dict[Path, LogFollower] = {}
        self._steps = TrainSteps()
        self._verdict_given = False

    # -- inputs ------------------------------------------------------------------------------------
    def on_launcher_line(self, line: str) -> None:
        """Every line of the launcher's own output (the stage log)."""
        if self.launcher_failure is None:
            m = self._launcher_failed.search(line)
            if m:
                self.launcher_failure = line.strip()[:300]
        if self._run_folders is not None:
            with self._host_lock:
                if self._host_log is not None:
                    with contextlib.suppress(OSError, ValueError):
                        self._host_log.write(line + "\n")
                        self._host_log.flush()
                elif len(self._early_lines) < MAX_EARLY_LINES:
                    self._early_lines.append(line)

    def tick(self, *, running: bool) -> TrainVerdict | None:
        """Called about once a second. Returns a verdict at most once, while the launcher runs."""
        self._read_logs()
        self._start_follower()
        self._take_live()
        if not running or self._verdict_given:
            return None
        verdict = self._decide()
        if verdict is not None:
            self._verdict_given = True
        return verdict

    def close(self) -> None:
        """The stage ended: record what the follower still had to say, then stop it (its thread and
        watchdog's are joined; every file is released)."""
        if self._closed:
            return
        self._closed = True
        with self._host_lock:
            if self._host_log is not None:
                with contextlib.suppress(OSError):
                    self._host_log.close()
                self._host_log = None
        follower, self.follower = self.follower, None
        if follower is None:
            self._finish_alerts()
            return
        self._take_live()
        follower.stop()
        self._sub = None
        self._record(flush=True)  # the last content of the findings still open
        self._finish_alerts()

    def _finish_alerts(self) -> None:
        """The W&B monitor run logs how the run ended, then finishes."""
        alerts, self._alerts = self._alerts, None
        if alerts is None:
            return
        from a1x_diagnostics.findings import Finding, overall_status

        status = overall_status([Finding.model_validate(f) for f in self._live_open.values()])
        alerts.finish(outcome=self.outcome, status=status.value, exit_code=status.exit_code,
                      open_keys=sorted(self._live_open))

    # -- logs --------------------------------------------------------------------------------------
    def _locate(self) -> bool:
        """Whether the logs can be read: the program's run folder is found (or there is none to find)."""
        if self._run_folders is None or self.run_folder is not None:
            return True
        fresh = [p for p in self._run_folders() if p.resolve() not in self._known_folders]
        if not fresh:
            return False
        self.run_folder = fresh[-1]
        self.log_dir = self.run_folder / "logs"
        with self._host_lock:
            try:
                self._host_log = open(self.run_folder / HOST_CAPTURE, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
                self._host_log.write("".join(line + "\n" for line in self._early_lines))
                self._host_log.flush()
            except OSError as exc:
                self._emit("note", f"cannot save the program's output in {self.run_folder}: {exc.strerror or exc}")
            self._early_lines = []
        if self._diagnosis_for is not None:
            self._diagnosis = self._diagnosis_for(self.run_folder)
        self._emit("note", f"run folder: {self.run_folder}", run_folder=str(self.run_folder))
        return True

    def _read_logs(self) -> None:
        if not self._locate():
            return
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
        if not first:  # the job started again: its steps count from its own start
            # (the findings' state is reset by the follower's RunSwitched, which describes the same move)
            self._steps = TrainSteps()
            self.last_step = None
            self.complete_since = None
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

    # -- live diagnostics ------------------------------------------------------------------------------
    def _start_follower(self) -> None:
        """Start following once this attempt's run is there and is the one the source points at."""
        if self.follower is not None or self._diagnosis is None or self._closed:
            return
        if self.logs_dir is None and self.run_folder is None:  # a run folder is followed from its start
            return
        follow = str(self.log_dir)
        if self.run_folder is not None:  # the whole run folder, as `a1x-tui watch` reads it
            follow, run = str(self.run_folder), None
        elif self.slurm:  # follows latest_run as the job is requeued
            latest = latest_logs_dir(self.log_dir)
            if latest is None or latest.resolve() in self._known_dirs:
                return  # latest_run still names an earlier start: wait for the job to re-point it
            run = None
        else:  # one launcher, one logs_<ts>: the run the monitor reads steps from
            run = self.run_name
        try:
            from a1x_diagnostics.live import (
                FindingRaised,
                FindingResolved,
                FindingUpdated,
                FollowError,
                HistoryComplete,
                OutcomeChanged,
                RunFollower,
                RunSwitched,
            )

            follower = RunFollower(
                follow,
                run=run,
                options=self._options or follow_options(self._interval_s),
                diagnosis=self._diagnosis,
            )
            kinds = {FindingRaised, FindingUpdated, FindingResolved, RunSwitched, HistoryComplete, FollowError,
                     OutcomeChanged}
            self._sub = follower.subscribe(kinds)
            follower.start()
        except Exception as exc:  # another module: its failure must not stop training
            self._diagnosis = None
            self._emit("note", f"live diagnostics failed to start: {type(exc).__name__}: {exc}")
            return
        self.follower = follower
        how = f"polling: {follower.why_polling}" if follower.polling else "inotify"
        self._emit("note", f"live diagnostics follow {follow} ({how})")

    def _take_live(self) -> None:
        """The follower's messages since the last tick, in order."""
        sub = self._sub
        if sub is None:
            return
        from a1x_diagnostics.live import (
            FindingRaised,
            FindingResolved,
            FindingUpdated,
            FollowError,
            HistoryComplete,
            OutcomeChanged,
            RunSwitched,
        )

        for message in sub.drain():
            if self._alerts is not None:
                self._alerts.message(message)
            if isinstance(message, OutcomeChanged):
                state = message.outcome.state.value
                self.outcome = message.outcome.model_dump(mode="json")
                self._emit("outcome", f"run {state}: {message.outcome.summary}", state=state)
                if self.progress is not None:  # the stage row says it too (a1x-tui status, the dashboard)
                    base = self.progress.text.split(" · run ")[0]
                    text = base if state in ("running", "completed") else f"{base} · run {state}"
                    self.progress = dataclasses.replace(self.progress, text=text)
                continue
            if isinstance(message, FindingRaised | FindingUpdated):
                finding = _as_dict(message.finding)
                self._live_open[message.key] = finding
                self._record()
                if finding.get("id") == "replica_died" and self.replica_died is None:
                    self.replica_died = finding
                if finding.get("id") == "shutdown_hang" and self.hang_since is None:
                    self.hang_since = self._clock()
            elif isinstance(message, FindingResolved):
                if self._live_open.pop(message.key, None) is not None:
                    self._record()
            elif isinstance(message, RunSwitched):
                # The job started again: the previous start's findings are over (recorded as cleared).
                self._live_open.clear()
                self._record()
                self.replica_died = None
                self.hang_since = None
                self._emit("note", f"live diagnostics now follow {message.run_name}")
            elif isinstance(message, HistoryComplete):
                self._emit(
                    "note",
                    f"live diagnostics read {message.files} log files ({message.lines} lines) in "
                    f"{message.seconds:.1f}s; following them",
                )
            elif isinstance(message, FollowError):
                self._errors_noted += 1
                if self._errors_noted <= MAX_ERROR_NOTES:
                    self._emit("note", f"live diagnostics: {message.message}")
                elif self._errors_noted == MAX_ERROR_NOTES + 1:
                    self._emit("note", "live diagnostics: further errors of the follower are not recorded")

    def _record(self, *, flush: bool = False) -> None:
        """``findings.jsonl`` and the events: what was raised, updated and cleared since the last change,
        keyed as the follower keys them (``finding_raised`` once; ``finding_updated`` as FindingsLog
        lets through; ``finding_cleared`` only on the follower's ``FindingResolved``)."""
        changes = self._findings.observe(self._live_open, stage="train", now=self._clock(), flush=flush)
        for key, finding in changes.raised:
            self._emit(
                "finding_raised",
                describe_finding(finding),
                finding_id=finding.get("id"),
                key=key,
                severity=finding.get("severity"),
            )
        for key, finding in changes.updated:
            self._emit(
                "finding_updated",
                describe_finding(finding),
                finding_id=finding.get("id"),
                key=key,
                severity=finding.get("severity"),
            )
        for key, finding in changes.cleared:
            self._emit("finding_cleared", f"{key} no longer holds", finding_id=finding.get("id"), key=key)

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
