"""Run lifecycle: a replica died, the run stalled, ended early, or finished and will not exit.

Mechanism (docs/reference/cosmos-rl.md §2.7, §4.7, §13.6, §15): the launcher stops everything only when the
controller fails; a dead policy/rollout replica is dropped from its watch list and the rest go on
(its exit code can even be 0, or 'treating as success'). torchrun's summary in the replica's own
log (``ChildFailedError``, ``exitcode : -9``) and the controller's ``… is dead`` line (after the
200 s heartbeat timeout) are the direct evidence. Heartbeats come from a separate process, so a
hung replica is not declared dead: the only sign is that steps stop. When every step is done but a
rollout never unregisters, the launcher never returns (0.4.4 and 747d1bd, §15).
"""

from __future__ import annotations

from collections import defaultdict

from a1x_diagnostics.detectors._base import (
    Conclusion,
    DetectorContext,
    Verdict,
    batch_per_step,
    concluding,
    detector,
    duration,
    fix,
    fmt,
    make_finding,
    stopped_from_outside,
    ts_of,
    verdict_of,
)
from a1x_diagnostics.detectors._probes import Hit
from a1x_diagnostics.detectors._store import FileFacts
from a1x_diagnostics.detectors.facts import REPLICA_ROLES, Death, after_end, collect_deaths
from a1x_diagnostics.events import Event, Role, Signal, SignalKind, Traceback
from a1x_diagnostics.findings import Finding


def _launcher_failures(ctx: DetectorContext) -> list[Signal]:
    return [s for s in ctx.signals(SignalKind.PROCESS_FAILED) if "controller" not in s.text.lower()]


def _later_progress(ctx: DetectorContext, death: Death) -> str | None:
    if death.ts is None:
        return None
    step_then = ctx.metrics.step_at(death.ts)
    last_step = ctx.metrics.step
    total = ctx.metrics.total_steps
    later = [
        f
        for f in ctx.files(Role.CONTROLLER, *REPLICA_ROLES)
        if f.last_ts is not None
        and f.last_ts > death.ts + 1
        and f.source.path not in {i.event.source.path if isinstance(i, Hit) else i.source.path for i in death.items}
    ]
    parts = []
    if step_then is not None and last_step is not None and last_step > step_then:
        parts.append(f"the controller trained on to step {last_step}/{total} from rollouts already buffered")
    if later:
        newest = max(later, key=lambda f: f.last_ts or 0)
        parts.append(
            f"{newest.source.replica} kept logging for {duration((newest.last_ts or 0) - death.ts)} afterwards"
        )
    if not parts:
        return None
    return "The launcher did not stop the run: " + " and ".join(parts) + "."


@detector("replica_died")
def replica_died(ctx: DetectorContext) -> Verdict:
    deaths = collect_deaths(ctx)
    launcher = _launcher_failures(ctx)
    terminated = ctx.store.signal(SignalKind.TERMINATED_ALL).last
    findings: list[Finding | None] = []
    for i, (key, death) in enumerate(sorted(deaths.items(), key=lambda kv: kv[1].ts or 0)):
        step_then = ctx.metrics.step_at(death.ts) if death.ts is not None else None
        total = ctx.metrics.total_steps
        where = f" at step {step_then}/{total}" if step_then is not None else " before the first logged step"
        explanation = f"{death.replica} died{where}" + (f": {death.cause}" if death.cause else "") + "."
        kept = _later_progress(ctx, death)
        if kept:
            explanation += " " + kept
        elif terminated is not None:
            explanation += " The launcher then terminated every process."
        if any(isinstance(it, Signal) and it.kind is SignalKind.REPLICA_DEAD for it in death.items):
            explanation += " The controller declared it dead only after the heartbeat timeout."
        items: list[Event | Hit | None] = [
            *(it for it in death.items if isinstance(it, (Hit, Traceback))),
            *(it for it in death.items if isinstance(it, Signal)),
            launcher[i] if i < len(launcher) else None,
        ]
        findings.append(
            make_finding(
                "replica_died",
                explanation,
                items,
                fixes=[fix(ctx.config, "train.resume", True, "restart from the newest checkpoint instead of step 0")]
                if ctx.store.checkpoints.get("saved")
                else [],
                action=f"Read the end of {death.replica}'s log for the cause, stop the whole run (the launcher "
                "does not), fix the cause and relaunch.",
                data={
                    "replica": death.replica,
                    "file": key if not key.startswith("uuid:") else None,
                    "step": step_then,
                },
            )
        )
    if not deaths:
        for sig in launcher:
            if after_end(ctx, ts_of(sig)):
                continue
            rc = sig.fields.get("rc")
            findings.append(
                make_finding(
                    "replica_died",
                    f"The launcher reports a process failed (return code {rc}) and kept running; the replica logs "
                    "do not say which one (its position in the launcher's list is not a replica index).",
                    [sig],
                    action="Find the replica log that ends with a traceback or torchrun's ChildFailedError; "
                    "stop and relaunch the run.",
                    data={"rc": rc},
                )
            )
    _ended_as_success(ctx, findings)
    return verdict_of(*findings)


def _ended_as_success(ctx: DetectorContext, findings: list[Finding | None]) -> None:
    """The launcher or controller call the end a success while training stopped short (§15)."""
    step, total = ctx.metrics.step, ctx.metrics.max_total_steps
    if step is None or not total or step >= total:
        return
    success = ctx.store.signal(SignalKind.COORDINATED_SUCCESS).last
    finished = ctx.store.signal(SignalKind.ALL_REPLICAS_FINISHED).last
    reaped = finished is not None and "heartbeat" in finished.text
    no_policy = ctx.store.signal(SignalKind.NO_POLICY_REPLICAS).first
    if success is None and not reaped and no_policy is None:
        return
    last_step_event = ctx.store.steps.last
    text = (
        f"The job ended as if successful ('treating as success' / 'All replicas are finished') but training stopped "
        f"at step {step} of {total}: a replica was lost and the run drained instead of training to the end."
    )
    existing = next((f for f in findings if f is not None), None)
    if existing is not None:
        existing.explanation += " " + text
        return
    findings.append(
        make_finding(
            "replica_died",
            text,
            [success, finished if reaped else None, no_policy, last_step_event],
            action="Do not trust the launcher's exit code: compare the last `Step: n/N`. "
            "Relaunch (train.resume = true).",
            data={"step": step, "total_steps": total},
        )
    )


@concluding("stalled")  # after the others: it reads the stall the outcome was decided from
def stalled(c: Conclusion) -> Verdict:
    ctx = c.ctx
    if ctx.finished_training:
        return Verdict.ok("training finished")
    stall = c.facts.stall
    if stall is None:
        return Verdict.ok()
    newest = max((f for f in ctx.files() if f.last_ts is not None), key=lambda f: f.last_ts or 0, default=None)
    lines_after = (ctx.newest_ts or 0.0) - stall.since_ts
    if stall.ended_by is not None:
        alive = f"until the job was stopped from outside ({stall.ended_by.source.replica})"
    elif ctx.live:
        alive = "the log files are still being written"
    elif ctx.store.signal(SignalKind.TERMINATED_ALL) or ctx.ended is not None:
        alive = "until the job ended"
    elif lines_after >= 60 and newest is not None:
        alive = f"{newest.source.replica} kept logging for {duration(lines_after)} after it"
    elif ctx.silence:
        alive = f"nothing has been written for {duration(ctx.silence)} and no process reported an exit"
    else:
        alive = "and the logs stop there"
    usual = f"a step usually takes {fmt(stall.usual_s)} s" if stall.usual_s is not None else (
        f"the limit is {duration(stall.limit_s)} for this run's pace"
    )
    finding = make_finding(
        "stalled",
        f"No progress for {duration(stall.silent_s)} after {stall.what} ({alive}); {usual}. "
        "Heartbeats come from a separate process, so a hung replica is never declared dead.",
        [stall.progress, stall.ended_by, newest.last_event if newest is not None else None],
        action="Check the other findings (dead replica, NCCL timeout, weight-sync hang); dump the stacks of the "
        "replica processes (py-spy dump --pid P) to see where they wait; stop and relaunch with train.resume = true.",
        data={"stalled_s": round(stall.silent_s, 1), "usual_step_s": stall.usual_s, "limit_s": round(stall.limit_s, 1),
              "live": ctx.live, "stopped_from_outside": stall.ended_by is not None},
    )
    return verdict_of(finding)


SHUTDOWN_GRACE_S = 300.0  # logs going on this long after the last step
STOPPED_GRACE_S = 120.0  # a replica still alive this long after the last step, until someone stopped it


@detector("shutdown_hang")
def shutdown_hang(ctx: DetectorContext) -> Verdict:
    if not ctx.finished_training:
        return Verdict.ok("training has not finished")
    end = ctx.final_step_ts
    store = ctx.store
    for phase in ("saving", "saved"):
        bucket = store.checkpoints.get(phase)
        t = ts_of(bucket.last) if bucket and bucket.last is not None else None
        if t is not None and (end is None or t > end):
            end = t
    finished = store.signal(SignalKind.ALL_REPLICAS_FINISHED).last
    launcher_files = ctx.files(Role.LAUNCHER)
    exits = len(ctx.signals(SignalKind.PROCESS_COMPLETED)) + len(ctx.signals(SignalKind.COORDINATED_SUCCESS))
    processes = len(ctx.files(Role.CONTROLLER, *REPLICA_ROLES))
    launcher_done = bool(launcher_files) and (exits >= max(1, processes) or store.signal(SignalKind.TERMINATED_ALL))
    if launcher_done:
        return Verdict.ok("the launcher reported every process finished")
    abnormal = store.signal(SignalKind.CONTROLLER_SHUTDOWN_ABNORMAL).last
    since = ctx.elapsed_since(end)
    lingering = [
        f
        for f in ctx.files(*REPLICA_ROLES, Role.CONTROLLER)
        if f.last_ts is not None and end is not None and f.last_ts - end >= SHUTDOWN_GRACE_S
    ]
    stopped = [
        (f, stop - end)
        for f in ctx.files(*REPLICA_ROLES)
        if f.last_traceback is not None
        and stopped_from_outside(f.last_traceback)
        and end is not None
        and (stop := _stop_time(f)) is not None
        and stop - end >= STOPPED_GRACE_S
    ]
    waiting_live = ctx.live and since is not None and since >= SHUTDOWN_GRACE_S
    if abnormal is None and not lingering and not stopped and not waiting_live:
        return Verdict.ok()
    parts = [f"training finished (step {ctx.metrics.step}/{ctx.metrics.total_steps})"]
    if waiting_live:
        parts.append(f"{duration(since)} later the log files are still being written")
    elif lingering:
        parts.append(
            f"{', '.join(f.source.replica for f in lingering[:3])} kept logging for {duration(since)} afterwards"
        )
    for f, after in stopped[:2]:
        parts.append(f"{f.source.replica} was still running {duration(after)} later and had to be stopped (SIGTERM)")
    if abnormal is not None:
        if "checkout gate" in abnormal.text:
            parts.append("the controller forced its shutdown because a rollout never checked out")
        else:
            parts.append("the controller shut itself down before every replica had unregistered")
    if finished is None:
        parts.append("the controller never logged 'All replicas are finished'")
    if launcher_files:
        parts.append(f"the launcher reported only {exits} of {processes} processes finished")
    last_step = store.steps.last or store.signal(SignalKind.TRAINING_COMPLETE).last
    finding = make_finding(
        "shutdown_hang",
        "The job does not exit although its work is done: " + "; ".join(parts) + ". This is the known shutdown race "
        "(docs/reference/cosmos-rl.md §15), not a failed run: training is complete.",
        [
            abnormal,
            *(f.last_traceback for f, _ in stopped[:2]),
            *(f.last_event for f in lingering[:2]),
            last_step,
            finished,
        ],
        action="Stop the job (a1x-tui stop, or kill the launcher's process group). With 0.4.4, unset "
        "COSMOS_SHUTDOWN_ON_NO_POLICY_REPLICAS to avoid the race.",
        data={"since_final_step_s": since, "exits_reported": exits, "processes": processes},
    )
    return verdict_of(finding)


def _stop_time(facts: FileFacts) -> float | None:
    """When a replica was stopped: its last stamped line (the torchrun agent stamps 'Received 15 death
    signal'; the log clock, never the file's mtime, so a copied run is judged as the original)."""
    return facts.last_ts


END_KINDS = (SignalKind.ROLLOUT_END_SIGNAL, SignalKind.JOB_DRAINING, SignalKind.ALL_ROLLOUTS_ENDED)


@detector("premature_end")
def premature_end(ctx: DetectorContext) -> Verdict:
    m = ctx.metrics
    total = m.max_total_steps or m.first_total_steps
    if not total:
        return Verdict.ok("no step total known")
    ends: list[Signal] = [s for kind in END_KINDS for s in ctx.signals(kind)]
    ends.sort(key=lambda s: ts_of(s) or 0)
    first_end = ends[0] if ends else None
    if first_end is None:
        return Verdict.ok()
    t = ts_of(first_end)
    step_then = (m.step_at(t) if t is not None else None) or 0
    if total - step_then < max(2, total // 10):
        return Verdict.ok()
    last = m.step or 0
    shrunk = m.total_steps is not None and m.total_steps < total
    ended = ctx.ended is not None or ctx.store.signal(SignalKind.TRAINING_COMPLETE).last is not None
    if last >= total:
        return Verdict.ok()
    batch = batch_per_step(ctx)
    pending = m.value_at("pending_rollouts", t) if t is not None else None
    short_of_data = batch is not None and pending is not None and pending < (total - step_then) * batch
    if not (shrunk or ended or short_of_data):
        return Verdict.ok("rollouts ended; the logs do not show whether the buffer covers the remaining steps")
    deaths = [d for d in collect_deaths(ctx).values() if d.ts is not None and t is not None and d.ts <= t + 30]
    if deaths:
        return Verdict.ok(f"{deaths[0].replica} died first; replica_died explains the early end")
    by_kind: dict[SignalKind, list[Signal]] = defaultdict(list)
    for s in ends:
        by_kind[s.kind].append(s)
    failed = ctx.hits("prefetch_error")
    explanation = (
        f"Rollouts stopped producing at step {step_then} of {total}"
        + (f" and the controller recomputed the total to {m.total_steps}" if shrunk else "")
        + f"; training ended at step {last}. "
    )
    explanation += (
        "A rollout posted its end signal early: its prefetch thread failed and ended the prompt stream (§6.4)."
        if failed
        else "Rollouts ran out of prompts early: failed or filtered generations shrink the data, or a rollout's "
        "prompt stream ended on an error."
    )
    finding = make_finding(
        "premature_end",
        explanation,
        [first_end, *by_kind.get(SignalKind.ALL_ROLLOUTS_ENDED, [])[:1], ctx.store.steps.last, *failed[:1]],
        action="Check the rollout logs around the end signal for errors; compare dataset size × n_generation × epoch "
        "with train_batch_per_replica × policy replicas × total steps.",
        data={"step_at_end_signal": step_then, "total_steps": total, "last_step": last},
    )
    return verdict_of(finding)
