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

import re
from dataclasses import dataclass, field

from diagnostics.detectors._base import (
    Conclusion,
    DetectorContext,
    Verdict,
    concluding,
    duration,
    evidence_list,
    make_finding,
    stopped_from_outside,
    ts_of,
    verdict_of,
)
from diagnostics.detectors._config import clip_text
from diagnostics.detectors._errors import BENIGN, ErrorGroup, benign_reason, exception_text, signature
from diagnostics.detectors._probes import Hit
from diagnostics.detectors._store import FileFacts
from diagnostics.events import Event, Role, Signal, SignalKind, Traceback
from diagnostics.findings import Evidence, Finding, Outcome, RunOutcome, Severity
from diagnostics.metrics import median

TAIL_LINES = 80  # a traceback this close to the end of its file is what the process died of
HANDLED = ("Failed in rollout generation", "Warning reporting training results", "Prefetch fetch failed")
IGNORED_EXC = ("KeyboardInterrupt", "SystemExit")
REPLICA_ROLES = (Role.POLICY, Role.ROLLOUT, Role.REFERENCE)
PROCESS_ROLES = (Role.CONTROLLER, *REPLICA_ROLES)

# Stall limits. After a step: STALL_FACTOR usual step times, at least STALL_FLOOR_S (a checkpoint or a
# slow step of a smoke test is not a stall). Before the first step the scale is the start-up itself:
# STARTUP_FACTOR times as long as launch -> last milestone took, within [STARTUP_FLOOR_S, STARTUP_CEILING_S]
# (a 10B model loads for minutes, a tiny one for seconds).
STALL_FACTOR = 8.0
STALL_FLOOR_S = 180.0
STALL_ONE_STEP_S = 600.0  # one step so far: no usual step time yet
STARTUP_FACTOR = 4.0
STARTUP_FLOOR_S = 180.0
STARTUP_CEILING_S = 1800.0
PAUSE_S = 1800.0  # a checkpoint being saved or a validation pass: steps pause legitimately (§4.6, §5.3)

# Marks (``FileFacts.marks``) that show the pipeline moving. Not progress: waiting lines, the version
# gate's rejections, heartbeat reaping, shutdown lines: they go on while nothing moves.
STARTUP_MARKS = (
    SignalKind.CONTROLLER_READY.value,
    SignalKind.CONFIG_LOADED.value,
    SignalKind.REPLICA_STARTED.value,
    SignalKind.REPLICA_REGISTERED.value,
    SignalKind.REPLICA_ATOMS_SET.value,
    SignalKind.ENGINE_INITIALIZED.value,
    SignalKind.TRAINING_STARTED.value,
)
PROGRESS_MARKS = (
    "stat",
    "step",
    "train_report",
    "sync:recv_done",
    "sync:broadcast_done",
    "sync:synced_after_broadcast",
    "sync:async_done",
    "ckpt:saved",
    "ckpt:saving",
    SignalKind.VALIDATION.value,
    *STARTUP_MARKS,
)
# The job ended by itself (not from outside): the controller finalized, the launcher saw its processes end.
SELF_END_KINDS = (
    SignalKind.ALL_REPLICAS_FINISHED,
    SignalKind.POLICY_SIDE_FINISHED,
    SignalKind.COORDINATED_SUCCESS,
    SignalKind.TRAINING_COMPLETE,
    SignalKind.NO_POLICY_REPLICAS,
    SignalKind.PROCESS_COMPLETED,
    SignalKind.ALL_ROLLOUTS_ENDED,
)
OUTSIDE_SIGNALS = frozenset({1, 2, 15, "SIGTERM", "SIGINT", "SIGHUP"})
TERM_CODES = frozenset({-15, -2, -1, 143, 130, 129})  # return codes of a process ended by SIGTERM/SIGINT/SIGHUP


# --- facts --------------------------------------------------------------------------------------------------
@dataclass
class Crash:
    """A process that ended on an error."""

    process: str
    file: str
    cause: str | None = None
    frames: list[str] = field(default_factory=list)  # the last frames of user code: "path:line in func: code"
    items: list[Event | Hit] = field(default_factory=list)
    ts: float | None = None


@dataclass(frozen=True)
class Stall:
    since_ts: float  # the last progress (log clock)
    silent_s: float
    limit_s: float
    what: str  # "the last step (2/40)" / "the last start-up milestone ..."
    progress: Event | None
    ended_by: Event | None  # the stop from outside that followed, if any
    usual_s: float | None


def handled(tb: Traceback) -> bool:
    """A traceback that proves no death: caught and announced by Cosmos-RL, an exit, or a stop from outside."""
    text = tb.text + "\n" + "\n".join(tb.lines[-3:])
    if tb.exc_type and tb.exc_type.split(".")[-1] in IGNORED_EXC:
        return True
    return stopped_from_outside(tb) or any(h in text for h in HANDLED)


def after_end(ctx: DetectorContext, ts: float | None) -> bool:
    """``ts`` is at or after the final step: shutdown noise, not a failure of the run."""
    end = ctx.final_step_ts
    return end is not None and ts is not None and ts >= end


def _when(ctx: DetectorContext, event: Event) -> float | None:
    """An event's time; an unstamped line (a traceback) is dated by its file's newest stamp."""
    t = ts_of(event)
    if t is None:
        facts = ctx.store.files.get(event.source.path)
        t = facts.last_ts if facts is not None else None
    return t


_FRAME = re.compile(r'\s*File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<func>.+)$')
_LIBRARY = ("site-packages", "dist-packages", "/lib/python", "<frozen", "/usr/lib/", "importlib")


def user_frames(tb: Traceback, n: int = 2) -> list[str]:
    """The last ``n`` frames of code outside installed packages and the standard library: where the
    user's script or module was when it raised (``path:line in func: code``)."""
    frames: list[str] = []
    lines = tb.lines
    for i, line in enumerate(lines):
        m = _FRAME.match(line)
        path = m.group("path") if m else ""
        if not m or any(p in path for p in _LIBRARY) or ("/bin/" in path and not path.endswith(".py")):
            continue  # an installed package, the standard library, or a console-script stub
        code = lines[i + 1].strip() if i + 1 < len(lines) and not _FRAME.match(lines[i + 1]) else ""
        where = f"{m.group('path')}:{m.group('line')} in {m.group('func').strip()}"
        frames.append(f"{where}: {code}" if code and not code.startswith("^") else where)
    return frames[-n:]


def _traceback_crash(ctx: DetectorContext, facts: FileFacts) -> Crash | None:
    tb = facts.last_traceback
    if (
        tb is None
        or handled(tb)
        or tb.line in facts.caught_tracebacks
        or facts.last_line - tb.last_line > TAIL_LINES
        or after_end(ctx, _when(ctx, tb))
    ):
        return None
    error = facts.last_error if facts.last_error is not None and not handled(facts.last_error) else tb
    if facts.last_line - error.last_line > TAIL_LINES:
        error = tb
    return Crash(facts.source.replica, facts.source.path, clip_text(exception_text(error), 240), user_frames(error),
                 [error], _when(ctx, error))


def collect_crashes(ctx: DetectorContext) -> list[Crash]:
    """Every process that ended on an error before training finished, one entry per log file (or per
    launcher report where no file is known), earliest first."""
    from diagnostics.detectors.lifecycle import collect_deaths

    crashes: dict[str, Crash] = {}
    for key, death in collect_deaths(ctx).items():
        file = key if not key.startswith("uuid:") else ""
        tb = next((i for i in death.items if isinstance(i, Traceback)), None)
        crashes[key] = Crash(death.replica, file, death.cause, user_frames(tb) if tb else [], list(death.items),
                             death.ts)
    for facts in ctx.files(Role.CONTROLLER, Role.LAUNCHER, Role.STAGE):
        crash = _traceback_crash(ctx, facts)
        if crash is not None and facts.source.path not in crashes:
            if facts.source.role is Role.LAUNCHER and (ctx.files(*PROCESS_ROLES) or facts.source.path.endswith(".out")):
                crash.process = f"the launcher ({facts.source.path})"  # its captured output
            crashes[facts.source.path] = crash
    for sig in ctx.signals(SignalKind.FATAL_SIGNAL) + ctx.signals(SignalKind.CHILD_FAILED):
        path = sig.source.path
        if after_end(ctx, _when(ctx, sig)):
            continue
        crash = crashes.get(path)
        if crash is None:
            text = clip_text(sig.text.strip(), 240)
            crash = crashes[path] = Crash(sig.source.replica, path, text, ts=_when(ctx, sig))
        crash.items.append(sig)
    launcher: list[Signal] = []
    for sig in ctx.signals(SignalKind.PROCESS_EXITED_EARLY) + ctx.signals(SignalKind.TERMINATED_ALL):
        if not after_end(ctx, ts_of(sig)):
            launcher.append(sig)
    failed = [s for s in ctx.signals(SignalKind.PROCESS_FAILED)
              if s.fields.get("rc") not in TERM_CODES and s.fields.get("rc") != 0 and not after_end(ctx, ts_of(s))]
    if launcher or (failed and not crashes):
        first = (launcher or failed)[0]
        rc = first.fields.get("rc")
        code = f" with code {rc}" if rc is not None else ""
        cause = f"a process it started exited{code} (the launcher's report)"
        merged = next((c for c in crashes.values() if c.file.endswith("controller.log")), None)
        if merged is not None:
            merged.items.extend(launcher or failed)
        elif not crashes:
            crashes[first.source.path] = Crash("the launcher", first.source.path, cause, items=[*launcher, *failed],
                                               ts=ts_of(first))
        else:
            next(iter(crashes.values())).items.extend(launcher or failed)
    return sorted(crashes.values(), key=lambda c: c.ts if c.ts is not None else float("inf"))


def terminations(ctx: DetectorContext) -> list[Event]:
    """Lines showing the job was stopped from outside (SIGTERM/SIGINT/SIGHUP, scancel), earliest first."""
    out: list[Event] = []
    for sig in ctx.signals(SignalKind.DEATH_SIGNAL):
        if sig.fields.get("sig") in OUTSIDE_SIGNALS:
            out.append(sig)
    out.extend(ctx.signals(SignalKind.JOB_CANCELLED))
    for facts in ctx.files():
        tb = facts.last_traceback
        if tb is not None and stopped_from_outside(tb) and not any(e.source.path == tb.source.path for e in out):
            out.append(tb)
    out.extend(s for s in ctx.signals(SignalKind.PROCESS_FAILED) if s.fields.get("rc") in TERM_CODES)
    return sorted(out, key=lambda e: _when(ctx, e) or float("inf"))


def self_ended(ctx: DetectorContext) -> list[Signal]:
    """Lines showing the job ended by itself (the controller finalized, processes completed)."""
    return [s for kind in SELF_END_KINDS for s in ctx.signals(kind)]


def _progress(ctx: DetectorContext, marks: tuple[str, ...]) -> tuple[float | None, FileFacts | None, str | None]:
    best: tuple[float | None, FileFacts | None, str | None] = (None, None, None)
    for facts in ctx.files():
        for name in marks:
            mark = facts.marks.get(name)
            if mark is not None and mark.ts is not None and (best[0] is None or mark.ts > best[0]):
                best = (mark.ts, facts, name)
    return best


def _startup_began(ctx: DetectorContext) -> float | None:
    times = [m.ts for f in ctx.files() for name in STARTUP_MARKS if (m := f.first_marks.get(name)) and m.ts]
    return min(times) if times else None


def find_stall(ctx: DetectorContext, stops: list[Event] | None = None) -> Stall | None:
    """No progress for longer than the run's own pace allows, up to the end of its record: a stop from
    outside (``stops``: ``terminations(ctx)``), the newest line, or (for a run being written) the present."""
    if ctx.finished_training:
        return None
    m = ctx.metrics
    step_series = m.get("step")
    progress: Event | None
    usual: float | None = None
    if step_series is not None and step_series.last_ts is not None:
        since = step_series.last_ts
        step_times = m.get("step_time_s")
        usual = median(step_times.tail(20)) if step_times is not None else None
        limit = max(STALL_FACTOR * usual, STALL_FLOOR_S) if usual is not None else STALL_ONE_STEP_S
        what = f"the last step ({m.step}/{m.total_steps})"
        progress = ctx.store.steps.last or ctx.store.train_reports.last
    else:
        since_ts, facts, name = _progress(ctx, PROGRESS_MARKS)
        if since_ts is None or facts is None:
            return None
        since = since_ts
        began = _startup_began(ctx)
        took = since - began if began is not None else 0.0
        limit = min(max(STARTUP_FACTOR * took, STARTUP_FLOOR_S), STARTUP_CEILING_S)
        label = "a rollout reached the controller" if name == "stat" else f"{facts.source.replica}: {name}"
        what = f"the last sign of progress before any step ({label.replace('_', ' ')})"
        progress = _event_at(ctx, facts, facts.marks[name].line) if name else None
    if _paused(ctx):
        limit = max(limit, PAUSE_S)
    ends = [e for e in (terminations(ctx) if stops is None else stops) if (_when(ctx, e) or 0.0) >= since]
    ended_by = ends[0] if ends else None
    if ended_by is not None:
        end = _when(ctx, ended_by)
    else:
        end = (ctx.newest_ts or since) + ctx.silence
    if end is None:
        return None
    silent = end - since
    if silent < limit:
        return None
    return Stall(since, silent, limit, what, progress, ended_by, usual)


def _paused(ctx: DetectorContext) -> bool:
    """A checkpoint save or a validation pass began and has not reported its end (by the logs' order)."""
    def newest(name: str) -> float:
        times = [m.ts for f in ctx.files() if (m := f.marks.get(name)) is not None and m.ts is not None]
        return max(times, default=float("-inf"))

    validation = ctx.store.signal(SignalKind.VALIDATION).last
    validating = validation is not None and validation.fields.get("phase") == "start"
    return validating or newest("ckpt:saving") > newest("ckpt:saved")


def _event_at(ctx: DetectorContext, facts: FileFacts, line: int) -> Event | None:
    """The retained event of ``facts``' file at ``line``, if one is kept (evidence for a mark)."""
    path = facts.source.path
    candidates: list[Event | None] = [ctx.store.stats.last, ctx.store.steps.last, ctx.store.train_reports.last]
    candidates += [r.last for r in ctx.store.signals.values()]
    candidates += [r.last for r in ctx.store.weight_sync.values()]
    return next((e for e in candidates if e is not None and e.source.path == path and e.line == line), None)


@dataclass(frozen=True)
class RunFacts:
    """What the outcome is decided from, read once per evaluation (the concluding detectors share it)."""

    crashes: list[Crash]
    stops: list[Event]
    stall: Stall | None
    ends: list[Signal]

    @classmethod
    def of(cls, ctx: DetectorContext) -> RunFacts:
        stops = terminations(ctx)
        return cls(collect_crashes(ctx), stops, find_stall(ctx, stops), self_ended(ctx))


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
        return out(Outcome.COMPLETED, summary, [last_step or done, *ends[:2]])
    crashes = facts.crashes
    if crashes:
        first = crashes[0]
        step_then = m.step_at(first.ts) if first.ts is not None else None
        when = f"at step {step_then}/{total if total else '?'}" if step_then is not None else "before the first step"
        summary = f"{first.process} crashed {when}" + (f": {first.cause}" if first.cause else "")
        if step is not None and step_then is not None and step > step_then:
            summary += f" (training went on to step {step})"
        if len(crashes) > 1:
            summary += f" ({len(crashes) - 1} more process(es) ended on an error)"
        return out(Outcome.CRASHED, summary, [*first.items, last_step],
                   processes=[c.process for c in crashes])
    stall, stops = facts.stall, facts.stops
    if stall is not None:
        summary = f"no progress for {duration(stall.silent_s)} after {stall.what}"
        if stall.ended_by is not None:
            summary += ", then the job was stopped from outside"
        return out(Outcome.STALLED, summary, [stall.progress, stall.ended_by, last_step],
                   stalled_s=round(stall.silent_s, 1), limit_s=round(stall.limit_s, 1))
    if stops:
        return out(Outcome.TERMINATED, f"stopped from outside {_step_text(ctx)}", [stops[0], last_step, *stops[1:3]])
    if ends:
        return out(Outcome.INCOMPLETE, f"the job ended {_step_text(ctx)} without reaching its last step",
                   [last_step, *ends[:3]])
    if ctx.current:
        what = "starting up: no step yet" if step is None else f"running (step {step}/{total if total else '?'})"
        return out(Outcome.RUNNING, what, [last_step])
    newest = max((f for f in ctx.files() if f.last_ts is not None), key=lambda f: f.last_ts or 0.0, default=None)
    tail = newest.last_event if newest is not None else None
    if step is None:
        if _progress(ctx, PROGRESS_MARKS)[0] is None and not ctx.files(*PROCESS_ROLES):
            return out(Outcome.NOT_STARTED, "no Cosmos-RL start-up or step line in these logs (another trainer's "
                       "capture, or a run that ended before it started): its progress cannot be read", [tail])
        return out(Outcome.NOT_STARTED, "no training step: the logs stop before training began, with no exit, "
                   "error or stop line", [tail])
    return out(Outcome.INCOMPLETE, f"the logs stop {_step_text(ctx)} with no exit, error or stop line (the job "
               "was killed with its node, or the logs were copied while it ran)", [last_step, tail])


# --- findings for what nothing else explains --------------------------------------------------------------
def _cited(findings: list[Finding]) -> set[tuple[str, int | None]]:
    return {(e.file, e.line) for f in findings for e in f.evidence}


def _explained(crash: Crash, findings: list[Finding]) -> bool:
    """A critical finding already quotes this process's log, or one of the crash's lines."""
    cited = _cited([f for f in findings if f.severity is Severity.CRITICAL])
    files = {file for file, _ in cited}
    lines = [i.event if isinstance(i, Hit) else i for i in crash.items]
    return (crash.file in files and crash.file != "") or any(
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
        step_then = c.ctx.metrics.step_at(crash.ts) if crash.ts is not None else None
        total = c.ctx.metrics.max_total_steps or c.ctx.metrics.total_steps
        when = f"at step {step_then}/{total}" if step_then is not None else "before the first step"
        text = f"{crash.process} ended on an error {when}" + (f": {crash.cause}." if crash.cause else ".")
        if crash.frames:
            text += " Last frames of its own code: " + "; ".join(crash.frames) + "."
        text += " No other check explains it."
        findings.append(make_finding(
            "process_crashed", text, crash.items,
            action=f"Read the end of {crash.process}'s log (the evidence): fix the error the traceback names, then "
            "relaunch (train.resume = true continues from the newest checkpoint).",
            data={"process": crash.process, "file": crash.file or None, "cause": crash.cause,
                  "frames": crash.frames, "step": step_then},
        ))
    found = verdict_of(*findings)
    if not found.findings:
        found.note = "another finding explains the crash"
    return found


@concluding("run_incomplete")
def run_incomplete(c: Conclusion) -> Verdict:
    o, ctx = c.outcome, c.ctx
    stops = c.facts.stops
    state = o.state
    if state in (Outcome.COMPLETED, Outcome.RUNNING, Outcome.CRASHED):
        return Verdict.ok(f"the run {state.value}")
    if state is Outcome.STALLED:
        return Verdict.ok("the run stalled: stalled says so" + (", and that the job was then stopped" if stops else ""))
    explaining = next((f for f in c.findings if f.severity is Severity.CRITICAL), None)
    if explaining is not None:
        return Verdict.ok(f"{explaining.id} explains why the run did not reach its last step")
    last_step = ctx.store.steps.last or ctx.store.train_reports.last
    where = _step_text(ctx)
    severity = None
    if state is Outcome.TERMINATED:
        stop = stops[0]
        how = _stop_words(stop)
        text = f"The job was stopped from outside ({how}) {where}, before its last step."
        items: list[Event | Hit | Evidence | None] = [stop, last_step, *stops[1:3]]
        action = "If the stop was not yours, look for who sent it (scancel, a time limit, the host); relaunch " \
                 "with train.resume = true."
    elif state is Outcome.NOT_STARTED:
        severity = Severity.WARNING
        text = "No training step in these logs and nothing says why: the logs stop before training began."
        items = [*o.evidence]
        action = "If the run should have started, read the end of every process's log; a1x-tui needs the Cosmos-RL " \
                 "logs of a run (logs_<ts>/ and the launcher's output)."
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


def _stop_words(event: Event) -> str:
    if isinstance(event, Signal) and event.kind is SignalKind.JOB_CANCELLED:
        reason = event.fields.get("reason")
        return f"Slurm cancelled it{' due to ' + str(reason).lower() if reason else ''}"
    if isinstance(event, Signal) and event.kind is SignalKind.DEATH_SIGNAL:
        return f"signal {event.fields.get('sig')} to torchrun in {event.source.replica}"
    if isinstance(event, Signal) and event.kind is SignalKind.PROCESS_FAILED:
        return f"a process ended with return code {event.fields.get('rc')}"
    return f"{event.source.replica} got a termination signal"


def unclaimed_errors(findings: list[Finding], groups: list[ErrorGroup]) -> list[ErrorGroup]:
    """Error groups no finding quotes (by line, by signature, or as the traceback right after a quoted
    line) and that are not on the benign list."""
    cited = _cited(findings)
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
    from diagnostics.parsing._shapes import shape_of

    return shape_of(text).msg


@concluding("unexplained_error")
def unexplained_error(c: Conclusion) -> Verdict:
    groups = unclaimed_errors(c.findings, list(c.ctx.store.errors.values()))
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


__all__ = ["Crash", "RunFacts", "Stall", "collect_crashes", "decide_outcome", "find_stall", "terminations"]
