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
from datetime import datetime

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
from a1x_diagnostics.detectors.facts import REPLICA_ROLES, TERM_CODES, Crash, Death, Stall, after_end, collect_deaths
from a1x_diagnostics.detectors.launcher import (
    controller_failure,
    exit_words,
    launcher_views,
    log_dir_of,
    where_to_look,
)
from a1x_diagnostics.events import Event, Role, Signal, SignalKind, Traceback
from a1x_diagnostics.findings import Finding, Severity


def _launcher_failures(ctx: DetectorContext) -> list[tuple[str, Signal]]:
    """The launcher's reports of a replica that failed (the controller's own failure is not a replica's,
    ``process_crashed`` names it), with the replica's name where the launch lines tell it (§2.7)."""
    out = []
    for view in launcher_views(ctx):
        for name, line in view.failures:
            if view.by_pid and name.startswith("the launcher's process"):
                continue  # 0.4.7: a pid no line ties to a role may be the controller's (process_crashed names it)
            if name != "controller" and line.fields.get("rc") not in TERM_CODES:
                out.append((name, line))
    return out


def _controller_death(ctx: DetectorContext) -> float | None:
    """When the controller died (the launcher's report), if it did: replicas that fail after it fail of it."""
    found = controller_failure(ctx)
    return ts_of(found[1]) if found is not None else None


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
    controller_died = _controller_death(ctx)
    if controller_died is not None:  # the replicas lost their controller: process_crashed tells that story
        deaths = {k: d for k, d in deaths.items() if d.ts is None or d.ts < controller_died - 1.0}
    terminated = ctx.store.signal(SignalKind.TERMINATED_ALL).last
    findings: list[Finding | None] = []
    dead = {d.replica for d in deaths.values()}
    # the launcher's lines no death's name claims, in order: each most likely reports the next unnamed death
    unclaimed = [line for name, line in launcher if name not in dead]
    for key, death in sorted(deaths.items(), key=lambda kv: kv[1].ts or 0):
        reported = next((line for name, line in launcher if name == death.replica), None)
        if reported is None and unclaimed and death.replica not in {n for n, _ in launcher}:
            reported = unclaimed.pop(0)
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
            reported,
        ]
        traceback = any(isinstance(it, Traceback) and not (it.exc_type or "").endswith("ChildFailedError")
                        for it in death.items)
        if traceback:
            action = (f"Read the end of {death.replica}'s log for the cause, stop the whole run (the launcher does "
                      "not), fix the cause and relaunch.")
        else:
            looking = where_to_look(-9) if death.cause and "SIGKILL" in death.cause else None
            action = (f"{death.replica} left no traceback: " + (f"{looking}. " if looking else "read the end of its "
                      "log and the host's kernel log. ") + "Stop the whole run (the launcher does not) and relaunch.")
        findings.append(
            make_finding(
                "replica_died",
                explanation,
                items,
                fixes=[fix(ctx.config, "train.resume", True, "restart from the newest checkpoint instead of step 0")]
                if ctx.store.checkpoints.get("saved")
                else [],
                action=action,
                data={
                    "replica": death.replica,
                    "file": key if not key.startswith("uuid:") else None,
                    "step": step_then,
                },
            )
        )
    for name, sig in launcher:
        t = ts_of(sig)
        known = not name.startswith("the launcher's")
        own_log = any(f.source.replica == name for f in ctx.files(*REPLICA_ROLES))
        if name in dead or (deaths and not own_log) or after_end(ctx, t):
            continue  # its death is told above, or (its log not read) may be one of those told
        if controller_died is not None and t is not None and t >= controller_died:
            continue
        rc = sig.fields.get("rc")
        text = f"The launcher reports that {name if known else 'a replica'} exited ({exit_words(rc)}) and kept "
        text += "running the others"
        if not known:
            text += " (the launch lines are not in its output: its position in the list does not say which)"
        text += ". Its log ends without an error." if own_log else ". Its own log is not among the files read."
        looking = where_to_look(rc)
        findings.append(
            make_finding(
                "replica_died",
                text,
                [sig],
                action=(f"{looking}; " if looking else "") + (f"read the end of {name}.log" if known else
                        "find the replica log that ends with a traceback or torchrun's ChildFailedError")
                + "; stop and relaunch the run.",
                data={"replica": name if known else None, "rc": rc},
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
    until = stall.until_ts if stall.until_ts is not None else ctx.newest_ts
    crash = next((k for k in c.facts.crashes if k.ts is None or until is None or k.ts <= until), None)
    if crash is not None:  # a process died: that explains the silence (replica_died, process_crashed)
        if _left_idle(c, crash, stall):
            return verdict_of(_idle_after_death(c, crash, stall))
        return Verdict.ok(f"{crash.process} died before the silence ended: the death explains it")
    newest = max((f for f in ctx.files() if f.last_ts is not None), key=lambda f: f.last_ts or 0, default=None)
    if stall.ended_by is not None:
        alive = f"until the job was stopped from outside ({stall.ended_by.source.replica})"
    elif c.facts.user_stop is not None:
        alive = "until you stopped it"
    elif ctx.live:
        alive = "the log files are still being written"
    elif ctx.silence:
        alive = f"nothing has been written for {duration(ctx.silence)} and no process reported an exit"
    elif until is not None and until < (ctx.newest_ts or until):
        alive = "until the job ended by itself"
    else:
        alive = "up to the newest line of the logs"
    pace = (f"a step usually takes {fmt(stall.usual_s)} s" if stall.usual_s is not None else "no step time yet")
    who, story = _who_went_quiet(ctx, stall, until)
    finding = make_finding(
        "stalled",
        f"No progress for {duration(stall.silent_s)} after {stall.what} ({alive}); {pace}, and the limit for this "
        f"run is {duration(stall.limit_s)} ({stall.rule}). {story} Heartbeats come from a separate process, so a "
        "hung replica is never declared dead.",
        [stall.progress, stall.ended_by, newest.last_event if newest is not None else None],
        action=(f"Dump the stacks of {who} (py-spy dump --pid P) to see where it waits" if who else
                "Dump the stacks of the replica processes (py-spy dump --pid P) to see where they wait")
        + "; check the other findings (NCCL timeout, weight-sync hang); stop and relaunch with train.resume = true.",
        data={"stalled_s": round(stall.silent_s, 1), "usual_step_s": stall.usual_s, "limit_s": round(stall.limit_s, 1),
              "live": ctx.live, "stopped_from_outside": stall.ended_by is not None, "quiet_first": who},
    )
    return verdict_of(finding)


def _left_idle(c: Conclusion, crash: Crash, stall: Stall) -> bool:
    """A replica died, the launcher did not stop the job (§2.7: it drops a dead replica and waits on), and the
    rest of the job then sat without progress past the run's own limit until someone stopped it."""
    replica = crash.process.split("_")[0] in ("policy", "rollout", "reference") or crash.process.startswith(
        ("policy ", "rollout ", "reference "))
    stopped_by_launcher = any(k.killed_all for k in c.facts.crashes)
    return replica and not stopped_by_launcher and stall.ended_by is not None and (
        crash.ts is None or crash.ts >= stall.since_ts - 1.0)


def _idle_after_death(c: Conclusion, crash: Crash, stall: Stall) -> Finding | None:
    """The time a job whose replica died went on holding its GPUs: a consequence of the death, said apart."""
    stopper = stall.ended_by.source.replica if stall.ended_by is not None else "outside"
    return make_finding(
        "stalled",
        f"After {crash.process} died (replica_died), the rest of the job made no progress for "
        f"{duration(stall.silent_s)} after {stall.what}, until it was stopped from outside ({stopper}); the limit "
        f"for this run is {duration(stall.limit_s)} ({stall.rule}). The launcher drops a dead replica and keeps the "
        "others running, so the job held its GPUs doing nothing: the death is the cause, this idle time its "
        "consequence.",
        [stall.progress, *(i for i in crash.items[:1] if not isinstance(i, Hit)), stall.ended_by],
        severity=Severity.WARNING,
        action=f"Fix what killed {crash.process} (replica_died); a job whose replica died has to be stopped by hand "
        "(a1x-tui stop), or watched (a1x-tui watch) so it is stopped as soon as a replica dies.",
        data={"stalled_s": round(stall.silent_s, 1), "limit_s": round(stall.limit_s, 1),
              "after_death_of": crash.process, "stopped_from_outside": True, "live": c.ctx.live,
              "usual_step_s": stall.usual_s, "quiet_first": crash.process},
    )


_STOP_MARKS = frozenset({SignalKind.DEATH_SIGNAL.value, SignalKind.JOB_CANCELLED.value, "traceback",
                         SignalKind.STOPPED_BY_USER.value})
_MARK_WORDS = {
    "step": "a Step line", "stat": "a Stat line", "train_report": "a train report",
    "sync:recv_done": "a weight-sync receive finished", "sync:recv_start": "a weight-sync receive began",
    SignalKind.TRAINING_STARTED.value: "'Building lr schedulers' (training set up)",
    SignalKind.REPLICA_REGISTERED.value: "its registration", SignalKind.REPLICA_STARTED.value: "its start",
    SignalKind.REPLICA_ATOMS_SET.value: "'All atoms … set'", "throttle:engaged": "soft throttle engaged",
    "throttle:still_engaged": "'Soft throttle still engaged'", "prompt_rejected": "a prompt rejected (weights)",
}


def _last_marks(facts: FileFacts, since: float, until: float | None) -> tuple[float, str, bool]:
    """A process's newest typed event before ``until`` (not the stop's own lines): its time, what it was, and
    whether it came after ``since``."""
    best = (facts.first_ts or 0.0, "its first line")
    for name, mark in facts.marks.items():
        if mark.ts is None or name in _STOP_MARKS or (until is not None and mark.ts > until):
            continue
        if mark.ts >= best[0]:
            best = (mark.ts, _MARK_WORDS.get(name, name.replace("hit:", "").replace("_", " ")))
    return best[0], best[1], best[0] > since + 1.0


def _throttled_at_end(ctx: DetectorContext) -> bool:
    """The controller's soft throttle was holding rollouts back when the logs went quiet (engaged, or still
    engaged, after its last release)."""
    for f in ctx.files(Role.CONTROLLER):
        on = max((m.ts for n in ("throttle:engaged", "throttle:still_engaged")
                  if (m := f.marks.get(n)) is not None and m.ts is not None), default=None)
        off = f.marks.get("throttle:released")
        if on is not None and (off is None or off.ts is None or on > off.ts):
            return True
    return False


def _clock(ts: float) -> str:
    return datetime.fromtimestamp(ts).strftime("%H:%M:%S")  # the logs' own clock, as their lines print it


def _who_went_quiet(ctx: DetectorContext, stall: Stall, until: float | None) -> tuple[str | None, str]:
    """Which process went quiet first and what the others did meanwhile (docs/reference/cosmos-rl.md §1: a
    step is dispatched once the buffer holds ``train_batch_per_replica × n_policy`` rollouts; §15.2: what a
    frozen policy or rollout leaves in the logs)."""
    since = stall.since_ts
    procs = [(f, *_last_marks(f, since, until)) for f in ctx.files(Role.CONTROLLER, *REPLICA_ROLES)]
    if not procs:
        return None, ""
    # A policy's training shows as the controller's Step lines more than in its own log (which may print nothing
    # per step, docs/reference/cosmos-rl.md §3): its last step is its last sign of progress too.
    step = ctx.store.steps.last
    step_t = ts_of(step) if step is not None else None
    if step_t is not None:
        procs = [(f, step_t, "the last Step line it trained", step_t > since + 1.0)
                 if f.source.role is Role.POLICY and step_t > t else (f, t, what, after)
                 for f, t, what, after in procs]
    quiet = sorted((p for p in procs if not p[3]), key=lambda p: p[1])
    active = [p for p in procs if p[3]]
    stat = ctx.store.stats.last
    stat_t = ts_of(stat) if stat is not None else None
    batch = batch_per_step(ctx)
    blamed: list[tuple[FileFacts, float, str, bool]] = []
    because = ""
    held = _throttled_at_end(ctx)
    if stat is not None and stat_t is not None and step_t is not None and stat_t < step_t and not held:
        # Rollouts stopped arriving (no Stat line) while the policy still trained, and no throttle held them back:
        # the rollouts went quiet first, whatever the policy then waited on (buffer empty, or a weight sync the
        # frozen rollout never took: a sync blocks the policy at 0.4.7, docs/reference/cosmos-rl.md §16).
        blamed = [p for p in quiet if p[0].source.role is Role.ROLLOUT]
        because = ("the last rollouts reached the controller (its last Stat line) before the policy's last step, "
                   "with no throttle holding them back: the rollouts stopped first and the policy waited on them")
    elif stat is not None and stat_t is not None and batch:
        # The last Stat line says what the buffer held when rollouts last arrived; each step trained after it took
        # a batch out of it. What was left when everything went quiet decides who waited on whom.
        at_stat = ctx.metrics.step_at(stat_t)
        trained_after = max(0, (ctx.metrics.step or 0) - (at_stat or 0))
        left = stat.pending - batch * trained_after
        if left >= batch:
            blamed = [p for p in quiet if p[0].source.role is Role.POLICY]
            because = (f"{fmt(left)} rollouts were pending at the controller, enough for a step ({batch}), but "
                       "no step came: the policy stopped training and the rollouts waited on it")
        else:
            blamed = [p for p in quiet if p[0].source.role is Role.ROLLOUT]
            after = (f" ({stat.pending} at the last Stat line, then {trained_after} step(s) trained from them)"
                     if trained_after else "")
            because = (f"only {fmt(max(left, 0))} rollouts were left pending{after}, fewer than the {batch} a step "
                       "needs: the policy waited for rollouts that did not come")
    first = (blamed or quiet)[0] if blamed or quiet else None
    parts = []
    if first is not None:
        parts.append(f"Quiet first: {first[0].source.replica} (its last event: {first[2]} at {_clock(first[1])})")
        then = ctx.metrics.step_at(first[1])
        if first[0].source.role is Role.ROLLOUT and then is not None and ctx.metrics.step and ctx.metrics.step > then:
            parts[-1] += (f", after which the policy trained on from rollouts already buffered, to step "
                          f"{ctx.metrics.step}")
    parts += [f"{p[0].source.replica} at {_clock(p[1])} ({p[2]})" for p in quiet if p is not first]
    throttled = [f for f in ctx.files(Role.CONTROLLER) for n in ("throttle:still_engaged", "throttle:engaged")
                 if (m := f.marks.get(n)) is not None and m.ts is not None and m.ts > since + 1.0]
    for p in active:
        doing = "holding rollouts back with its soft throttle (the buffer was full)" if throttled and \
            p[0].source.role is Role.CONTROLLER else f"its last event: {p[2]}"
        parts.append(f"{p[0].source.replica} kept logging until {_clock(p[1])} ({doing})")
    if not active:
        parts.append("no process logged any progress after that" if parts else "No process logged any progress")
    story = "; ".join(parts) + "."
    if because:
        story += " " + because[:1].upper() + because[1:] + "."
    return (first[0].source.replica if first is not None else None), story


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
    hung = list(dict.fromkeys([f.source.replica for f, _ in stopped] + [f.source.replica for f in lingering]))
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
        data={"since_final_step_s": since, "exits_reported": exits, "processes": processes,
              **({"replica": hung[0], "replicas": hung} if hung else {})},
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
    early = ctx.normal_early_end
    if early is not None:
        return _data_ran_out(ctx, early, total)
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


def _data_ran_out(ctx: DetectorContext, early: Signal, total: int) -> Verdict:
    """0.4.7 ends a run before total_steps on purpose (§16.2): asked to (never premature), or because the prompts
    left cannot fill another batch; that is normal a step or two short, and worth a word far short of it."""
    if early.kind is SignalKind.STOP_REQUESTED:
        return Verdict.ok("the application asked for the stop")
    t = ts_of(early)
    step_then = (ctx.metrics.step_at(t) if t is not None else None) or ctx.metrics.step or 0
    if total - step_then < max(2, total // 10):
        return Verdict.ok(f"the data ran out at step {step_then} of {total}: a normal end")
    finding = make_finding(
        "premature_end",
        f"The data ran out at step {step_then} of {total} (rank-affine dataset exhausted: the prompts left cannot fill "
        "another batch on every policy). The run ended normally, but far short of the total Cosmos-RL computed from "
        "the dataset: filtered or failed generations shrank the data, or the dataset is smaller than planned.",
        [early, ctx.store.steps.last],
        severity=Severity.WARNING,
        action="Compare dataset size × n_generation × epoch with train_batch_per_replica × policy replicas × total "
        "steps; check the rollout logs for discarded or failed generations.",
        data={"step_at_end": step_then, "total_steps": total},
    )
    return verdict_of(finding)


@detector("replica_logs_missing")
def replica_logs_missing(ctx: DetectorContext) -> Verdict:
    """A launcher capture read alone (``run.out``): what it shows is the processes' starts and ends; their
    own logs, where training shows, went to ``--log-dir`` (docs/reference/cosmos-rl.md §1, §3.1)."""
    if ctx.files(Role.CONTROLLER, *REPLICA_ROLES) or ctx.store.steps.last is not None:
        return Verdict.ok()
    views = [v for v in launcher_views(ctx) if v.processes or v.planned]
    planned = [s for v in views for s in v.planned]
    if not planned:
        return Verdict.ok("no log folder named by the launcher" if views else None)
    folder = log_dir_of(planned) or "its --log-dir"
    names = ", ".join(str(s.fields.get("path", "")).rsplit("/", 1)[-1] for s in planned[:6])
    source = views[0].path
    finding = make_finding(
        "replica_logs_missing",
        f"Only the launcher's output ({source}) was read. It wrote each process's log to {folder}/ ({names}), which "
        "is not among the files read, so training itself (its steps, rewards, and the replicas' own errors) is not "
        "checked here: what this report says comes from the launcher's lines alone.",
        planned[:3],
        action=f"Check the log folder: a1x-tui --check {folder.rsplit('/', 1)[0] or folder} on the machine that has "
        f"it, or copy {folder.rsplit('/', 1)[-1]}/ beside {source.rsplit('/', 1)[-1]} and check that again.",
        data={"log_dir": folder, "launcher": source},
    )
    return verdict_of(finding)
