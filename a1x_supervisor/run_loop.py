"""The pipeline loop: which stage runs next (the plan's ``--from`` / ``--only``, a restart), each
stage's attempts and their verdict (verification, never the exit code alone; the stage's retry
policy; the one line saying why a stage failed), and the run's end (docs/supervisor.md, "Stages")."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from a1x_supervisor.cosmos_logs import expected_ranks
from a1x_supervisor.run_context import RunContext
from a1x_supervisor.secrets import Scrubber
from a1x_supervisor.stage import StageError, StageSpec, VerifyResult
from a1x_supervisor.stage_runner import Outcome, StageRunner
from a1x_supervisor.stagelog import StageLog, last_output_line, read_since
from a1x_supervisor.stages.train import verify_trained
from a1x_supervisor.state import RunState, now_iso


@dataclass(frozen=True, slots=True)
class Plan:
    """Which stages a supervisor runs. ``force`` stages run even when their outputs verify."""

    from_stage: str | None = None
    only: str | None = None
    force: tuple[str, ...] = ()
    preflight: dict[str, Any] | None = None
    skip: tuple[str, ...] = ()  # stages left out (``run --skip evaluate``), also after a restart

    def to_json(self) -> dict[str, Any]:
        return {"from": self.from_stage, "only": self.only, "force": list(self.force), "skip": list(self.skip)}


class RunLoop:
    """Runs one plan over ``stages`` (in pipeline order), one stage attempt at a time through ``runner``."""

    def __init__(self, ctx: RunContext, stages: list[StageSpec], plan: Plan, runner: StageRunner) -> None:
        self.ctx = ctx
        self.controls = ctx.controls
        self.stages = {s.name: s for s in stages}
        self.stage_names = [s.name for s in stages]
        self.plan = plan
        self.runner = runner

    def run(self, selected: list[str]) -> None:
        """Run ``selected`` in order, a restart starting again from its stage; then end the run."""
        order = self.stage_names
        forced = set(self.plan.force)
        forced.update(s for s in (self.plan.only, self.plan.from_stage) if s)
        for name in order:
            if name not in selected:
                st = self.ctx.store.state.stage(name)
                if st.status not in ("succeeded", "skipped"):
                    why = "left out (--skip)" if name in self.plan.skip else "not selected (--from/--only)"
                    self.ctx.set_stage(name, status="skipped", reason=why)

        def running(s: RunState) -> None:
            s.status = "running"
            s.message = f"stages: {', '.join(selected)}"

        self.ctx.store.update(running)
        self.ctx.events.emit("run_started", f"running {', '.join(selected)}", stages=selected)
        plan_queue = list(selected)
        i = 0
        result = "succeeded"
        while i < len(plan_queue):
            if self.controls.stop.is_set():
                break
            name = plan_queue[i]
            result = self._run_stage(self.stages[name], force=name in forced)
            target = self.controls.take_restart()
            if target is not None and not self.controls.stop.is_set():
                plan_queue = (
                    [target]
                    if self.plan.only == target
                    else [n for n in order[order.index(target) :] if n == target or n not in self.plan.skip]
                )
                forced.add(target)
                i = 0
                continue
            if result in ("failed", "stopped"):
                break
            i += 1
        self._finish_run(result)

    def _finish_run(self, last_result: str) -> None:
        state = self.ctx.store.state
        if self.controls.stop.is_set():
            status, message = "stopped", self.controls.stop_reason or "stopped"
        elif last_result == "failed":
            failed = next((st for st in state.stages if st.status == "failed"), None)
            status = "failed"
            message = f"{failed.name} failed: {failed.reason}" if failed else "failed"
        else:
            status, message = "succeeded", "every stage succeeded or was already done"

        def change(s: RunState) -> None:
            s.status = status  # type: ignore[assignment]
            s.message = message
            s.current_stage = None

        self.ctx.store.update(change)
        self.ctx.events.emit(f"run_{status}", message)

    def _safe_verify(self, stage: StageSpec) -> VerifyResult:
        try:
            return stage.verify()
        except Exception as exc:  # a verification bug must not kill the supervisor
            return VerifyResult.failed(f"verification error: {type(exc).__name__}: {exc}")

    def _run_stage(self, stage: StageSpec, *, force: bool) -> str:
        name = stage.name

        def current(s: RunState) -> None:
            s.current_stage = name

        self.ctx.store.update(current)
        if stage.skip_if_verified and not force:
            self.ctx.set_stage(name, status="checking", reason="verifying existing outputs", failure=None)
            result = self._safe_verify(stage)
            if result.ok:
                reason = f"already done: {result.reason}"
                self.ctx.set_stage(name, status="skipped", reason=reason, ended_at=now_iso())
                self.ctx.events.emit("stage_skipped", reason, stage=name)
                return "skipped"
        attempt = 0
        while True:
            attempt += 1
            if self.controls.stop.is_set():
                return self._stopped(name)
            try:
                commands = list(stage.prepare())
            except StageError as exc:
                if exc.findings:  # e.g. a Slurm submission refused by the node plan
                    self.ctx.record_findings(name, exc.findings)
                return self._failed(name, str(exc), failure={"findings": exc.findings} if exc.findings else None)
            except Exception as exc:
                return self._failed(name, f"cannot prepare the stage: {type(exc).__name__}: {exc}")
            st = self.ctx.store.state.stage(name)
            self.ctx.set_stage(
                name,
                status="running",
                reason="",
                attempts=st.attempts + 1,
                started_at=now_iso(),
                ended_at=None,
                exit_code=None,
                commands=[c.record() for c in commands],
                progress=None,
                failure=None,
                slurm=None,
            )
            self.ctx.events.emit("stage_started", stage.title, stage=name, attempt=attempt)
            for cmd in commands:
                if cmd.findings:  # warnings from the checks before a Slurm submission
                    self.ctx.record_findings(name, [dict(f) for f in cmd.findings])
            log_path = self.ctx.rundir.stage_log(name)
            offset = log_path.stat().st_size if log_path.exists() else 0
            outcome = self.runner.run(stage, commands)
            if outcome.interrupted:
                return self._stopped(name)
            result = self._judge(stage, outcome)
            if result.ok:
                if stage.after_success is not None:
                    try:
                        stage.after_success()
                    except OSError as exc:
                        return self._failed(name, f"succeeded, but recording it failed: {exc}")
                reason = result.reason
                if outcome.verdict is not None and outcome.verdict.action == "end_finished":
                    reason += f" ({outcome.verdict.reason})"
                self.ctx.set_stage(name, status="succeeded", reason=reason, ended_at=now_iso(), exit_code=outcome.rc)
                self.ctx.events.emit("stage_succeeded", reason, stage=name)
                if result.data.get("findings"):  # a verdict with a warning, e.g. evaluate's export_regressed
                    self.ctx.record_findings(name, [dict(f) for f in result.data["findings"]])
                return "succeeded"
            text = read_since(log_path, offset)
            decision = (
                stage.retry.after_failure(text, attempt, monitor_stopped=outcome.verdict is not None)
                if stage.retry is not None
                else None
            )
            if decision is not None and decision.retry_in_s is not None:
                delay = decision.retry_in_s
                self.ctx.set_stage(name, status="retrying", reason=decision.reason, exit_code=outcome.rc)
                self.ctx.events.emit("stage_retry", decision.reason, stage=name, delay_s=delay, line=decision.line)
                if self.controls.sleep(delay):
                    return self._stopped(name)
                continue
            if decision is not None:
                reason = decision.reason
            else:
                reason = self._failure_reason(stage, outcome, result, text)
            failure = outcome.verdict.failure if outcome.verdict is not None else None
            return self._failed(name, reason, exit_code=outcome.rc, failure=failure)

    # -- the verdict of an attempt ------------------------------------------------------------------------
    def _judge(self, stage: StageSpec, outcome: Outcome) -> VerifyResult:
        if outcome.error is not None:
            return VerifyResult.failed(outcome.error)
        if stage.kind == "train" and stage.run_folders is not None:
            # a program with its own run folder (AlpaGym's host): the stage judges that folder
            return self._safe_verify(stage)
        if stage.kind == "train":
            # docs/reference/cosmos-rl.md §2.7: the launcher's exit code says nothing; steps and checkpoints do.
            logs_dir = outcome.monitor.logs_dir if outcome.monitor is not None else None
            if logs_dir is None:
                if outcome.slurm is not None:
                    where = self.ctx.rundir.slurm_dir
                    return VerifyResult.failed(f"the Slurm job wrote no part_<N>/run_<M> folder under {where}")
                return VerifyResult.failed("cosmos-rl wrote no logs_<timestamp> folder")
            rundir = self.ctx.rundir
            return verify_trained(
                rundir.log_dir(self.ctx.spec), ranks=expected_ranks(rundir.train_toml), logs_dir=logs_dir
            )
        result = self._safe_verify(stage)
        if stage.kind == "check":
            log = StageLog(self.ctx.rundir.stage_log(stage.name), scrubber=Scrubber.from_environment())
            log.note(f"{'ok' if result.ok else 'FAILED'}: {result.reason}")
            log.close()
        if outcome.rc not in (0, None) and result.ok:
            return VerifyResult.failed(f"exited with code {outcome.rc}")
        return result

    def _failure_reason(self, stage: StageSpec, outcome: Outcome, result: VerifyResult, text: str) -> str:
        if outcome.error is not None:
            return outcome.error
        if stage.kind == "train":
            if outcome.verdict is not None and outcome.verdict.action == "stop_failed":
                return f"{outcome.verdict.reason}; {result.reason}"
            if outcome.slurm is not None:
                job = outcome.slurm
                return f"Slurm job {job['job_id']} ended {job['state']} (exit code {outcome.rc}); {result.reason}"
            program = outcome.label if stage.run_folders is not None else "cosmos-rl"
            return f"{program} exited with code {outcome.rc}; {result.reason}"
        if outcome.rc not in (0, None):
            last = last_output_line(text, 240)
            return f"{outcome.label or stage.name} exited with code {outcome.rc}" + (f": {last}" if last else "")
        if stage.kind == "check":
            return result.reason
        return f"exited 0 but its outputs do not verify: {result.reason}"

    def _stopped(self, name: str) -> str:
        why = self.controls.stopped_reason()
        self.ctx.set_stage(name, status="stopped", reason=why, ended_at=now_iso(), process=None)
        self.ctx.events.emit("stage_stopped", why, stage=name)
        return "stopped"

    def _failed(
        self, name: str, reason: str, *, exit_code: int | None = None, failure: dict[str, Any] | None = None
    ) -> str:
        self.ctx.set_stage(
            name, status="failed", reason=reason, ended_at=now_iso(), exit_code=exit_code, process=None, failure=failure
        )
        self.ctx.events.emit("stage_failed", reason, stage=name, exit_code=exit_code)
        # The reason ends the stage's log too, so the log says why even for a stage that failed before
        # running anything (docs/ui.md: the dashboard's `l` opens this log).
        with contextlib.suppress(OSError):
            scrubber = Scrubber.from_environment()
            log = StageLog(self.ctx.rundir.stage_log(name), scrubber=scrubber)
            log.note(f"stage failed: {scrubber.scrub(reason)}")
            log.close()
        return "failed"
