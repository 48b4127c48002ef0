"""The run's outcome, decided from its logs, and the findings for what no specific check explains.

Silence is not health. Whatever the specific detectors conclude, the logs also say how the run ended
(docs/findings.md "Run outcome"): ``completed`` (the last step equals the total), ``running`` (being
written, progressing within its usual step time), ``stalled`` (no progress for many step times; before
the first step, minutes after the last start-up milestone), ``crashed`` (a process ended on an uncaught
error, a torchrun failure summary, a launcher failure line, a fatal signal), ``terminated`` (stopped from
outside before its last step), ``incomplete`` (ended, or its logs stop, short of the total any other
way) and ``not_started``. Only ``completed``, and ``running`` without findings, may be OK; every other
outcome gets a finding: the specific one where a detector explains it, else ``process_crashed``,
``stalled`` or ``run_incomplete``. Error lines no finding quotes are ``unexplained_error``.

Mechanism (docs/reference/cosmos-rl.md, launcher exit behaviour and the failures of real runs): the
launcher keeps going when a replica dies and may exit 0; heartbeats come from a separate process, so a
hung replica is never declared dead; a job stopped from outside shows torchrun's ``Received 15 death
signal`` and its ``SignalException``. So the outcome is read from the lines of every process, with the
logs' own clock (``DetectorContext``: the wall clock only for a run being written).
"""

from __future__ import annotations

from collections.abc import Iterable

from a1x_diagnostics.detectors._base import (
    Conclusion,
    DetectorContext,
    Verdict,
    concluding,
    duration,
    evidence_list,
    fmt,
    make_finding,
    ts_of,
    verdict_of,
)
from a1x_diagnostics.detectors._config import clip_text
from a1x_diagnostics.detectors._errors import BENIGN, ErrorGroup, benign_reason, exception_text, signature
from a1x_diagnostics.detectors._probes import Hit
from a1x_diagnostics.detectors.facts import PROCESS_ROLES, PROGRESS_MARKS, Crash, RunFacts, last_progress
from a1x_diagnostics.detectors.launcher import launcher_views, signal_of, where_to_look
from a1x_diagnostics.events import Event, Role, Signal, SignalKind, Traceback
from a1x_diagnostics.findings import Evidence, Finding, Outcome, RunOutcome, Severity


# --- the outcome ------------------------------------------------------------------------------------------
def _step_text(ctx: DetectorContext) -> str:
    m = ctx.metrics
    total = m.max_total_steps or m.total_steps
    if m.step is None:
        return "before the first step"
    return f"at step {m.step}/{total if total else '?'}"


def decide_outcome(ctx: DetectorContext, facts: RunFacts | None = None) -> RunOutcome:
    """How the run ended, or where it stands (module doc), with the lines that show it."""
    facts = RunFacts.of(ctx) if facts is None else facts
    m = ctx.metrics
    step, total = m.step, m.max_total_steps or m.total_steps
    last_step = ctx.store.steps.last or ctx.store.train_reports.last

    def out(state: Outcome, summary: str, items: list[Event | Hit | Evidence | None], **data: object) -> RunOutcome:
        return RunOutcome(state=state, summary=summary, step=step, total_steps=total,
                          evidence=evidence_list(items), data=dict(data))

    ends = facts.ends
    if ctx.finished_training:
        done = ctx.store.signal(SignalKind.TRAINING_COMPLETE).last
        summary = f"training completed (step {step}/{total})" if step is not None else "training completed"
        early = ctx.normal_early_end
        if early is not None and not (step is not None and total and step >= total):
            at = f" at step {step}/{total}" if step is not None else ""
            if early.kind is SignalKind.STOP_REQUESTED:
                summary = (f"training ended{at} because the application asked it to stop "
                           f"({clip_text(str(early.fields.get('reason') or ''), 120)}): a normal end")
            else:
                summary = f"training ended{at} because the data ran out (rank-affine dataset exhausted): a normal end"
            return out(Outcome.COMPLETED, summary, [early, last_step, *ends[:1]])
        return out(Outcome.COMPLETED, summary, [last_step or done, *ends[:2]])
    crashes = facts.crashes
    if crashes:
        first = crashes[0]
        step_then = m.step_at(first.ts) if first.ts is not None else None
        when = f"at step {step_then}/{total if total else '?'}" if step_then is not None else "before the first step"
        summary = f"{first.process} {'died' if first.traceback is None else 'crashed'} {when}" + (
            f": {first.cause}" if first.cause else "")
        if step is not None and step_then is not None and step > step_then:
            summary += f" (training went on to step {step})"
        if len(crashes) > 1:
            summary += f" ({len(crashes) - 1} more process(es) ended on an error)"
        return out(Outcome.CRASHED, summary, [*first.items, last_step],
                   processes=[c.process for c in crashes])
    stall, stops, user = facts.stall, facts.stops, facts.user_stop
    if stall is not None:
        summary = f"no progress for {duration(stall.silent_s)} after {stall.what}"
        if stall.usual_s is not None:
            summary += f" (a step took {fmt(stall.usual_s)} s)"
        if user is not None:
            summary += ", then you stopped it"
        elif stall.ended_by is not None:
            summary += ", then the job was stopped from outside"
        return out(Outcome.STALLED, summary, [stall.progress, stall.ended_by or user, last_step],
                   stalled_s=round(stall.silent_s, 1), limit_s=round(stall.limit_s, 1))
    if user is not None:
        why = str(user.fields.get("reason") or "a1x-tui stop")
        return out(Outcome.STOPPED, f"stopped by you {_step_text(ctx)} ({why})", [user, last_step, *stops[:1]],
                   reason=why)
    if stops:
        return out(Outcome.TERMINATED, f"stopped from outside {_step_text(ctx)}", [stops[0], last_step, *stops[1:3]])
    views = list({v.path: v for v in launcher_views(ctx)}.values())  # each file's latest launch
    launcher_only = step is None and not ctx.files(*PROCESS_ROLES) and any(v.processes for v in views)
    if launcher_only and all(v.all_ended_ok for v in views if v.processes):
        shown = next(v for v in views if v.processes)
        return out(Outcome.COMPLETED, "the launcher reports every process it started ended cleanly ("
                   f"{shown.summary()}); its output has no step line, so training itself is not shown here",
                   [*sorted((p.end for v in views for p in v.processes if p.end is not None),
                            key=lambda e: e.line)[-3:]], seen="launcher_only")
    if ends and not launcher_only:
        return out(Outcome.INCOMPLETE, f"the job ended {_step_text(ctx)} without reaching its last step",
                   [last_step, *ends[:3]])
    if ctx.current:
        what = "starting up: no step yet" if step is None else f"running (step {step}/{total if total else '?'})"
        return out(Outcome.RUNNING, what, [last_step])
    newest = max((f for f in ctx.files() if f.last_ts is not None), key=lambda f: f.last_ts or 0.0, default=None)
    tail = newest.last_event if newest is not None else None
    if launcher_only:
        shown = next(v for v in views if v.processes)
        names = [p.name for p in shown.running] or ["some process"]
        waiting = ", ".join(names[:-1]) + (" and " if len(names) > 1 else "") + names[-1]
        summary = f"the launcher's output ends while {waiting} had not ended ({shown.summary()})"
        if any(p.role is Role.CONTROLLER and p.ended_ok for p in shown.processes):
            summary += (": the controller ended cleanly and a replica did not, the known shutdown race when training "
                        "has finished (docs/reference/cosmos-rl.md §15), or a replica that outlived a run that ended "
                        "early; the steps that tell which are in the replica logs")
        else:
            summary += ": the launcher prints nothing when it is itself stopped or killed"
        return out(Outcome.INCOMPLETE, summary, [*(p.end for p in shown.processes if p.end is not None), tail],
                   ended="no_end_line", seen="launcher_only")
    if step is None:
        if ctx.closed_loop is not None and not ctx.files(*PROCESS_ROLES):
            notes = "; ".join(ctx.closed_loop.layout_notes) or "no Cosmos-RL log"
            return out(Outcome.NOT_STARTED, f"the AlpaGym host wrote its configs, then no training step ({notes}): "
                       "it stopped before or during the simulator's bring-up, or is in it; the host writes its own "
                       "lines to its terminal only (save them as host.log in the run folder to have them read)",
                       [tail])
        if last_progress(ctx, PROGRESS_MARKS)[0] is None and not ctx.files(*PROCESS_ROLES):
            return out(Outcome.NOT_STARTED, "no Cosmos-RL start-up or step line in these logs (another trainer's "
                       "capture, or a run that ended before it started): its progress cannot be read", [tail])
        return out(Outcome.NOT_STARTED, "no training step: the logs stop before training began, with no exit, "
                   "error or stop line", [tail])
    return out(Outcome.INCOMPLETE, f"the logs end {_step_text(ctx)} with no end line, error or stop line",
               [last_step, tail], ended="no_end_line")


# --- findings for what nothing else explains --------------------------------------------------------------
def _cited(findings: list[Finding]) -> set[tuple[str, int | None]]:
    return {(e.file, e.line) for f in findings for e in f.evidence}


def _explained(crash: Crash, findings: list[Finding]) -> bool:
    """A critical finding already quotes this process's log, or one of the crash's lines. The controller's own
    decision to end the job (0.4.7's terminal CRITICAL line, exit 86) is told apart from the replica death a
    finding quotes from the same log: only a finding that quotes that line explains it."""
    cited = _cited([f for f in findings if f.severity is Severity.CRITICAL])
    files = {file for file, _ in cited}
    lines = [i.event if isinstance(i, Hit) else i for i in crash.items]
    own_end = any(isinstance(e, Signal) and e.kind is SignalKind.CONTROLLER_TERMINAL for e in lines)
    # the launcher's report of the controller's death, in the file that also reports a replica's: only a finding that
    # quotes that report explains it
    reported_only = crash.process == "controller" and bool(lines) and all(
        isinstance(e, Signal) and e.kind is SignalKind.PROCESS_FAILED for e in lines)
    by_file = crash.file in files and crash.file != "" and not own_end and not reported_only
    return by_file or any(
        (e.source.path, e.line) in cited or (e.source.path, getattr(e, "last_line", e.line)) in cited for e in lines
    )


@concluding("process_crashed")
def process_crashed(c: Conclusion) -> Verdict:
    if c.outcome.state is not Outcome.CRASHED:
        return Verdict.ok(f"the run {c.outcome.state.value}" if c.outcome.state is not Outcome.RUNNING else None)
    findings: list[Finding | None] = []
    for crash in c.facts.crashes:
        if _explained(crash, c.findings):
            continue
        findings.append(_crash_finding(c, crash))
    found = verdict_of(*findings)
    if not found.findings:
        found.note = "another finding explains the crash"
    return found


def _crash_finding(c: Conclusion, crash: Crash) -> Finding | None:
    ctx = c.ctx
    step_then = ctx.metrics.step_at(crash.ts) if crash.ts is not None else None
    total = ctx.metrics.max_total_steps or ctx.metrics.total_steps
    when = f"at step {step_then}/{total}" if step_then is not None else "before the first step"
    tb = crash.traceback
    verb = "ended on an error" if tb is not None or crash.rc is None else "died"
    who = "the controller" if crash.process == "controller" else crash.process
    terminal = next((i for i in crash.items if isinstance(i, Signal) and i.kind is SignalKind.CONTROLLER_TERMINAL),
                    None)
    if terminal is not None:
        return _terminal_finding(c, crash, terminal, when, step_then)
    text = f"{who[:1].upper()}{who[1:]} {verb} {when}" + (f": {crash.cause}." if crash.cause else ".")
    pid = _pid_words(ctx, crash)
    if pid:
        text += f" ({pid}.)"
    if crash.frames:
        text += " Last frames of its own code: " + "; ".join(crash.frames) + "."
    said = any(isinstance(i, Signal) and i.kind is SignalKind.TERMINATED_ALL for i in crash.items)
    killed_all = said or crash.killed_all
    if crash.process == "controller":
        text += " The controller coordinates every replica: the run cannot go on without it."
        if said:
            text += " The launcher then terminated every process ('Terminated all processes due to failure')."
        elif killed_all:
            text += " The launcher then killed every process, without a line (cosmos-rl 0.4.7)."
    elif killed_all:
        text += " The launcher then terminated every process."
    looking = where_to_look(crash.rc) if tb is None else None
    if tb is None and signal_of(crash.rc) is not None:
        text += " No traceback: it was ended by a signal, from outside Python."
    elif tb is None and crash.rc is not None:
        text += " Its log shows no traceback."
    told = _announcing(ctx, tb) if tb is not None else []
    if told:  # the process's own word on the error it then raised (unexplained_error counts these lines as the crash's)
        text += f" Just before it the log says: {clip_text(_group_text(told[0]), 200).rstrip('.')}."
    text += " No other check explains it."
    if tb is not None:
        action = (f"Read the end of {who}'s log (the evidence): fix the error the traceback names, then "
                  "relaunch (train.resume = true continues from the newest checkpoint).")
    elif looking is not None:
        action = f"Find what ended {who}: {looking}. Then relaunch (train.resume = true)."
    else:
        action = f"Read the end of {who}'s log for the cause; then relaunch (train.resume = true)."
    return make_finding(
        "process_crashed", text, [*crash.items, *(g.last for g in told)], action=action,
        data={"process": crash.process, "file": crash.file or None, "cause": crash.cause,
              "frames": crash.frames, "step": step_then, "return_code": crash.rc},
    )


def _announcing(ctx: DetectorContext, tb: Traceback) -> list[ErrorGroup]:
    """Error lines of the traceback's file just before it (the lines ``unclaimed_errors`` takes as announcing it:
    Hydra's 'Error executing job with overrides', a DataLoader worker's 'Unexpected bus error … shared memory'),
    but for the benign ones (an import warning printed at start-up is no word on the error)."""
    near = {(tb.source.path, tb.line - k) for k in (1, 2)}
    return [g for g in ctx.store.errors.values() if not isinstance(g.last, Traceback)
            and (g.last.source.path, g.last.line) in near and benign_reason(_group_text(g)) is None]


def _pid_words(ctx: DetectorContext, crash: Crash) -> str | None:
    """How a 0.4.7 launcher's pid was tied to the crashed process, when that is how it was named."""
    for view in launcher_views(ctx):
        if any(item is line for _, line in view.failures for item in crash.items):
            return view.pid_words(crash.process)
    return None


def _terminal_finding(c: Conclusion, crash: Crash, terminal: Signal, when: str,
                      step_then: int | None) -> Finding | None:
    """0.4.7's controller ends the job itself (a CRITICAL line, then exit 86, docs/reference/cosmos-rl.md §16.2):
    what it says, and the death it follows when one came first."""
    error = str(terminal.fields.get("error") or "").strip()
    source = terminal.fields.get("source") or "terminal"
    text = (f"The controller ended the job {when} on purpose (exit 86, cosmos-rl 0.4.7's terminal error: its "
            f"{source} failed)" + (f": {clip_text(error, 300).rstrip('.')}." if error else "."))
    before = [k for k in c.facts.crashes if k is not crash and k.ts is not None and crash.ts is not None
              and k.ts < crash.ts]
    if before:
        text += (f" It follows {before[0].process}'s death ({before[0].cause or 'see its finding'}): the controller's "
                 "exit is the consequence, that death the cause.")
    if crash.killed_all:
        text += " The launcher then killed every process, without a line."
    cfg = c.ctx.config
    resume = "Relaunch with train.resume = true: the controller asks for a restart from a checkpoint"
    if cfg.get("train.ckpt.enable_checkpoint") is False:
        resume += (" (train.ckpt.enable_checkpoint is false in this run, so there is none: the restart begins at "
                   "step 0)")
    action = (f"Fix what ended {before[0].process} first (its finding). " if before else "") + resume + "."
    return make_finding(
        "process_crashed", text, crash.items, action=action,
        data={"process": crash.process, "file": crash.file or None, "cause": crash.cause, "frames": [],
              "step": step_then, "return_code": 86, "terminal": source,
              "after": before[0].process if before else None},
    )


@concluding("run_incomplete")
def run_incomplete(c: Conclusion) -> Verdict:
    o, ctx = c.outcome, c.ctx
    stops = c.facts.stops
    state = o.state
    if state in (Outcome.COMPLETED, Outcome.RUNNING, Outcome.CRASHED):
        return Verdict.ok(f"the run {state.value}")
    last_step = ctx.store.steps.last or ctx.store.train_reports.last
    where = _step_text(ctx)
    if state is Outcome.STALLED:
        stall = c.facts.stall
        if stall is None or (stall.ended_by is None and c.facts.user_stop is None):
            return Verdict.ok("the run stalled: stalled says so")
        return verdict_of(_stopped_after_stall(c, stall.ended_by, last_step))
    explaining = next((f for f in c.findings if f.severity is Severity.CRITICAL), None)
    if explaining is not None and state is not Outcome.STOPPED:
        return Verdict.ok(f"{explaining.id} explains why the run did not reach its last step")
    severity = None
    if state is Outcome.TERMINATED:
        stop = stops[0]
        how = _stop_words(stop)
        text = f"The job was stopped from outside ({how}) {where}, before its last step."
        items: list[Event | Hit | Evidence | None] = [stop, last_step, *stops[1:3]]
        action = "If the stop was not yours, look for who sent it (scancel, a time limit, the host); relaunch " \
                 "with train.resume = true."
    elif state is Outcome.STOPPED:
        severity = Severity.WARNING
        text = f"You stopped the run through a1x-tui {where}, before its last step ({o.data.get('reason')})."
        items = [*o.evidence]
        action = "Relaunch when ready: train.resume = true continues from the newest checkpoint."
    elif state is Outcome.NOT_STARTED and (steps := ctx.signals(SignalKind.GROUPS_ZERO_STD)):
        severity = Severity.WARNING  # another stack trained: how far and how it ended is unread
        metric = steps[0].fields.get("metric") or "its GRPO metrics"
        text = (f"These logs are another trainer's: {len(steps)} logged step(s) of it ({metric}), no Cosmos-RL "
                "start-up or step line, so how far the run got and how it ended cannot be read here.")
        items = [steps[-1], *o.evidence]
        action = "Read the end of the trainer's own output for how the run ended; a1x-tui reads a run's progress " \
                 "from Cosmos-RL's logs (logs_<ts>/ and the launcher's output)."
    elif state is Outcome.NOT_STARTED:
        severity = Severity.WARNING
        text = "No training step in these logs and nothing says why: the logs stop before training began."
        items = [*o.evidence]
        action = "If the run should have started, read the end of every process's log; a1x-tui needs the Cosmos-RL " \
                 "logs of a run (logs_<ts>/ and the launcher's output)."
    elif o.data.get("ended") == "no_end_line":
        severity = Severity.WARNING  # nothing shows a failure: the record just stops
        text = (o.summary[:1].upper() + o.summary[1:] + ".") if o.summary else "The logs stop."
        text += (" Nothing in them shows a failure, and nothing shows the end: if the job is still running these "
                 "are a copy taken while it ran; if it is gone, it ended without a trace (killed with its node, or "
                 "by the scheduler without a line here).")
        items = [*o.evidence]
        action = "Check the job's state and how it ended (the scheduler's record: squeue / sacct -j JOB; the host's " \
                 "kernel log for the OOM killer: dmesg -T, journalctl -k); check again on the live logs."
    else:
        text = (o.summary[:1].upper() + o.summary[1:] + ".") if o.summary else "The run ended early."
        items = [*o.evidence]
        action = "Check how the job ended (the scheduler's record, the host's kernel log for the OOM killer); " \
                 "relaunch with train.resume = true."
    finding = make_finding("run_incomplete", text, items, action=action, severity=severity,
                           data={"outcome": state.value, "step": o.step, "total_steps": o.total_steps})
    if finding is None:  # no line to quote: say it with the outcome's own words
        finding = make_finding("run_incomplete", text, [Evidence(file="(run)", text=o.summary)], action=action,
                               severity=severity, data={"outcome": state.value})
    return verdict_of(finding)


def _stopped_after_stall(c: Conclusion, stop: Event | None, last_step: Event | None) -> Finding | None:
    """The stop that ended a stall (both facts are reported: ``stalled`` says the hang)."""
    user = c.facts.user_stop
    where = _step_text(c.ctx)
    if user is not None:
        text = f"You stopped the run through a1x-tui {where} ({user.fields.get('reason')}), after it had stalled."
        items: list[Event | Hit | Evidence | None] = [user, stop]
    else:
        assert stop is not None
        text = (f"The job was then stopped from outside ({_stop_words(stop)}) {where}, after it had stalled: the "
                "stop ended a hang (stalled), it did not cut a healthy run short.")
        items = [stop, last_step]
    return make_finding("run_incomplete", text, items, severity=Severity.WARNING,
                        action="Fix what stalled (stalled), then relaunch with train.resume = true.",
                        data={"outcome": Outcome.STALLED.value, "stopped_from_outside": user is None})


def _stop_words(event: Event) -> str:
    if isinstance(event, Signal) and event.kind is SignalKind.JOB_CANCELLED:
        reason = event.fields.get("reason")
        return f"Slurm cancelled it{' due to ' + str(reason).lower() if reason else ''}"
    if isinstance(event, Signal) and event.kind is SignalKind.DEATH_SIGNAL:
        return f"signal {event.fields.get('sig')} to torchrun in {event.source.replica}"
    if isinstance(event, Signal) and event.kind is SignalKind.PROCESS_FAILED:
        return f"a process ended with return code {event.fields.get('rc')}"
    return f"{event.source.replica} got a termination signal"


def unclaimed_errors(findings: list[Finding], groups: list[ErrorGroup],
                     tracebacks: Iterable[Traceback] = ()) -> list[ErrorGroup]:
    """Error groups no finding quotes (by line, by signature, as the traceback right after a quoted line, or as
    the line that announces a quoted traceback: Hydra's 'Error executing job with overrides', then the error)
    and that are not on the benign list."""
    cited = _cited(findings)
    for tb in tracebacks:  # the line right before a traceback whose error a finding quotes announces that error
        if (tb.source.path, tb.last_line) in cited or (tb.source.path, tb.line) in cited:
            cited |= {(tb.source.path, tb.line - k) for k in (1, 2)}
    cited_signatures = {signature(_message_of_evidence(e.text)) for f in findings for e in f.evidence}
    out = []
    for g in groups:
        events = (g.first, g.last)
        if any((e.source.path, e.line) in cited or (e.source.path, getattr(e, "last_line", e.line)) in cited
               for e in events):
            continue
        if g.signature in cited_signatures:
            continue
        if any(isinstance(e, Traceback) and any((e.source.path, e.line - k) in cited for k in (1, 2, 3))
               for e in events):
            continue
        if benign_reason(_group_text(g)) is not None:
            continue
        out.append(g)
    return out


def _group_text(g: ErrorGroup) -> str:
    e = g.first
    if isinstance(e, Traceback):
        return exception_text(e)
    return str(e.fields.get("message") or e.text) if isinstance(e, Signal) else e.text


def _message_of_evidence(text: str) -> str:
    from a1x_diagnostics.parsing.text import message_of

    return message_of(text)


@concluding("unexplained_error")
def unexplained_error(c: Conclusion) -> Verdict:
    groups = unclaimed_errors(c.findings, list(c.ctx.store.errors.values()),
                              [t for t in c.ctx.store.tracebacks if isinstance(t, Traceback)])
    if not groups:
        note = f"every error line is explained or on the benign list ({len(BENIGN)} entries)"
        return Verdict.ok(note if c.ctx.store.errors else None)
    groups.sort(key=lambda g: (ts_of(g.first) or 0.0, g.first.source.path, g.first.line))
    shown = groups[:4]
    parts = []
    for g in shown:
        where = ", ".join(g.processes[:4]) + (f" and {len(g.processes) - 4} more" if len(g.processes) > 4 else "")
        parts.append(f"{clip_text(_group_text(g), 200).rstrip('.')} — {g.count}x in {where}")
    more = f" ({len(groups) - len(shown)} more kinds)" if len(groups) > len(shown) else ""
    total = sum(g.count for g in groups)
    text = (f"{total} error line(s) of {len(groups)} kind(s){more} that no check explains: " + "; ".join(parts)
            + ". They may be harmless, or the first sign of a failure a1x-tui does not know.")
    items: list[Event | Hit | Evidence | None] = []
    for g in shown:
        items.append(g.first)
        if g.count > 1:
            items.append(g.last)
    finding = make_finding(
        "unexplained_error", text, items,
        action="Read the quoted lines; if they are a known failure, report it so a check can name it.",
        data={"groups": [{"message": _group_text(g)[:300], "kind": g.kind, "count": g.count,
                          "processes": g.processes, "first": f"{g.first.source.path}:{g.first.line}",
                          "last": f"{g.last.source.path}:{g.last.line}"} for g in groups[:16]]},
    )
    return verdict_of(finding)


__all__ = ["decide_outcome"]
