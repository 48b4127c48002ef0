"""The facts a run's outcome is decided from, read once per evaluation: the crashes (a replica's death
among them), the stops from outside, a stall, the run's own end (docs/findings.md "Run outcome").
Below the detectors: ``detectors._base`` types a ``Conclusion`` with ``RunFacts``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from a1x_diagnostics.closed_loop_events import PROGRESS_MARKS as CLOSED_LOOP_PROGRESS
from a1x_diagnostics.closed_loop_events import STARTUP_MARKS as CLOSED_LOOP_STARTUP
from a1x_diagnostics.detectors._config import clip_text, duration
from a1x_diagnostics.detectors._context import DetectorContext, ts_of
from a1x_diagnostics.detectors._errors import exception_text, stopped_from_outside
from a1x_diagnostics.detectors._probes import Hit
from a1x_diagnostics.detectors._store import FileFacts
from a1x_diagnostics.detectors.launcher import exit_words, launcher_views
from a1x_diagnostics.events import Event, Role, Signal, SignalKind, Traceback
from a1x_diagnostics.metrics import median

TAIL_LINES = 80  # a traceback this close to the end of its file is what the process died of
HANDLED = ("Failed in rollout generation", "Warning reporting training results", "Prefetch fetch failed")
IGNORED_EXC = ("KeyboardInterrupt", "SystemExit")
REPLICA_ROLES = (Role.POLICY, Role.ROLLOUT, Role.REFERENCE)
PROCESS_ROLES = (Role.CONTROLLER, *REPLICA_ROLES)

# Stall limits: silence measured against the run's own pace (docs/findings.md "stalled"). After a step:
# STALL_FACTOR usual steps (the median wall time between Step lines, or of the steps' own Iteration time,
# whichever is longer) and BURST_FACTOR times the longest recent one, at least STALL_FLOOR_S: what pauses a
# healthy run between two Step lines is a weight sync (seconds to half a minute, §15.1) or a checkpoint save
# and a validation pass, which have their own allowance (PAUSE_S). With one step and no Iteration time:
# STALL_ONE_STEP_S. Before the first step the scale is the start-up itself: STARTUP_FACTOR times as long as
# launch -> last milestone took, within [STARTUP_FLOOR_S, STARTUP_CEILING_S] (a 10B model loads for
# minutes, a tiny one for seconds).
STALL_FACTOR = 10.0
BURST_FACTOR = 2.0  # and twice its longest recent step: steps that come in bursts between weight syncs (§15)
STALL_FLOOR_S = 60.0
STALL_ONE_STEP_S = 600.0
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
    *CLOSED_LOOP_STARTUP,  # an AlpaGym run: the host, the simulator's bring-up, the rollout backend
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
    *CLOSED_LOOP_PROGRESS,  # an AlpaGym run: episodes simulated, packed, trained on
)
# The job ended by itself (not from outside): the controller finalized, the launcher saw its processes end.
SELF_END_KINDS = (
    SignalKind.ALL_REPLICAS_FINISHED,
    SignalKind.POLICY_SIDE_FINISHED,
    SignalKind.COORDINATED_SUCCESS,
    SignalKind.TRAINING_COMPLETE,
    SignalKind.NO_POLICY_REPLICAS,
    SignalKind.ALL_ROLLOUTS_ENDED,
)  # and the launcher's own end lines, where they show the controller or every process ended (``self_ended``)
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
    rc: int | None = None  # the return code the launcher reported, when that is all there is
    killed_all: bool = False  # the launcher then stopped every process (its line, or 0.4.7's silent kill-all)

    @property
    def traceback(self) -> Traceback | None:
        """The traceback it died with, if its log shows one."""
        return next((i for i in self.items if isinstance(i, Traceback)), None)


@dataclass(frozen=True)
class Stall:
    since_ts: float  # the last progress (log clock)
    silent_s: float
    limit_s: float
    what: str  # "the last step (2/40)" / "the last start-up milestone ..."
    progress: Event | None
    ended_by: Event | None  # the stop from outside that followed, if any
    usual_s: float | None
    until_ts: float | None = None  # the end of the silence measured: the stop, the job's own end, the newest line
    rule: str = ""  # how the limit was set, for the finding: "10 x the usual step, at least 60 s"


def handled(tb: Traceback) -> bool:
    """A traceback that proves no death: caught and announced by Cosmos-RL, an exit, or a stop from outside."""
    text = tb.text + "\n" + "\n".join(tb.lines[-3:])
    if tb.exc_type and tb.exc_type.split(".")[-1] in IGNORED_EXC:
        return True
    return stopped_from_outside(tb) or any(h in text for h in HANDLED)


def after_end(ctx: DetectorContext, ts: float | None) -> bool:
    """``ts`` is at or after the final step, or after the user stopped the run through a1x-tui: shutdown
    noise (processes that die of the stop's SIGTERM or SIGKILL), not a failure of the run."""
    if ts is None:
        return False
    end = ctx.final_step_ts
    if end is not None and ts >= end:
        return True
    stop = ctx.store.signal(SignalKind.STOPPED_BY_USER).first
    stopped = ts_of(stop) if stop is not None else None
    return stopped is not None and ts >= stopped


def _stamped(ctx: DetectorContext, event: Event) -> float | None:
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
        or after_end(ctx, _stamped(ctx, tb))
    ):
        return None
    error = facts.last_error if facts.last_error is not None and not handled(facts.last_error) else tb
    if facts.last_line - error.last_line > TAIL_LINES:
        error = tb
    return Crash(facts.source.replica, facts.source.path, clip_text(exception_text(error), 240), user_frames(error),
                 [error], _stamped(ctx, error))


def collect_crashes(ctx: DetectorContext) -> list[Crash]:
    """Every process that ended on an error before training finished, one entry per log file (or per
    launcher report where no file is known), earliest first."""

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
    kill_all = _launcher_kill_all(ctx)
    victims: list[Signal] = []
    for sig in ctx.signals(SignalKind.FATAL_SIGNAL) + ctx.signals(SignalKind.CHILD_FAILED):
        path = sig.source.path
        if after_end(ctx, _stamped(ctx, sig)):
            continue
        if sig.fields.get("bare") and kill_all is not None:
            victims.append(sig)  # bash's 'Killed' in a process the launcher killed after the failure that stopped
            continue  # the job (§16.2): a consequence, told with that failure
        crash = crashes.get(path)
        if crash is None:
            crash = crashes[path] = Crash(sig.source.replica, path, _fatal_cause(sig), ts=_stamped(ctx, sig))
        crash.items.append(sig)
    for sig in ctx.signals(SignalKind.CONTROLLER_TERMINAL):  # 0.4.7: the controller ends the job (exit 86)
        if after_end(ctx, ts_of(sig)):
            continue
        path = sig.source.path
        error = str(sig.fields.get("error") or "").strip()
        step = sig.fields.get("source") or "terminal"
        cause = (f"it ended the job on purpose (exit 86): {clip_text(error, 200)}" if error
                 else f"its {step} step failed and it ended the job (exit 86)")
        crash = crashes.get(path)
        if crash is None:
            crashes[path] = Crash("controller", path, cause, items=[sig], ts=ts_of(sig))
        else:
            crash.items.append(sig)
            crash.cause = cause
    _launcher_crashes(ctx, crashes)
    if victims:
        target = next((c for c in crashes.values() if c.killed_all), None)
        if target is not None:
            target.items.extend(victims[:3])
    return sorted(crashes.values(), key=lambda c: c.ts if c.ts is not None else float("inf"))


def _fatal_cause(sig: Signal) -> str:
    """What a hard death's line says: bash's 'Killed' is a SIGKILL; other lines in their own words."""
    if sig.kind is SignalKind.FATAL_SIGNAL and sig.fields.get("what") == "killed":
        return "killed by SIGKILL (bash's job report: 'Killed')"
    if sig.kind is SignalKind.FATAL_SIGNAL and sig.fields.get("what") == "transport_fatal":
        return f"[Transport FATAL] {clip_text(str(sig.fields.get('detail') or ''), 200)}: it exited 86 at once (§16.2)"
    return clip_text(sig.text.strip(), 240)


def _log_of(ctx: DetectorContext, name: str) -> str | None:
    """The log file of the process ``name`` (``controller``, ``policy_0``...), if it was read."""
    return next((f.source.path for f in ctx.files(*PROCESS_ROLES) if f.source.replica == name), None)


def _launcher_crashes(ctx: DetectorContext, crashes: dict[str, Crash]) -> None:
    """The launcher's reports of processes that failed (docs/reference/cosmos-rl.md §2.7), each joined to the
    crash its own log shows, or a crash of its own, named by role (``launcher.launcher_views``)."""
    views = launcher_views(ctx)
    for view in views:
        for name, line in view.failures:
            rc = line.fields.get("rc")
            if rc in TERM_CODES or rc == 0 or after_end(ctx, ts_of(line)):
                continue  # a stop from outside (``terminations``), or shutdown after the last step
            file = _log_of(ctx, name)
            crash = crashes.get(file) if file else None
            if crash is None:
                crash = next((c for c in crashes.values() if c.process == name), None)
            if crash is not None:
                crash.items.append(line)
                if not crash.cause:
                    crash.cause = exit_words(rc)
                if crash.traceback is None and isinstance(rc, int) and crash.rc is None:
                    crash.rc = rc  # no traceback: the return code says how it ended (a signal: who sends it)
                continue
            cause = exit_words(rc) + (" (the launcher's report; its log ends without an error)" if file else
                                      " (the launcher's report)")
            crashes[file or f"{view.path}:{name}"] = Crash(name, file or view.path, cause, items=[line],
                                                           ts=ts_of(line), rc=rc if isinstance(rc, int) else None)
        if view.killed_all is not None and not after_end(ctx, ts_of(view.killed_all)):
            target = next((c for c in crashes.values() if c.process == "controller"), None)
            if target is None and crashes:
                target = min(crashes.values(), key=lambda c: c.ts if c.ts is not None else float("inf"))
            if target is not None:
                target.items.append(view.killed_all)
                target.killed_all = True
        if view.silent_kill is not None and not after_end(ctx, ts_of(view.silent_kill)):
            target = next((c for c in crashes.values() if view.silent_kill in c.items), None)
            if target is not None:
                target.killed_all = True
    for sig in ctx.signals(SignalKind.PROCESS_EXITED_EARLY):  # the controller, while the launcher waited (§2.6)
        if after_end(ctx, ts_of(sig)):
            continue
        rc = sig.fields.get("rc")
        file = _log_of(ctx, "controller")
        crash = crashes.get(file) if file else None
        if crash is None:
            crash = next((c for c in crashes.values() if c.process in ("controller", "the launcher")), None)
        if crash is not None:
            crash.items.append(sig)
            continue
        words = exit_words(rc) if rc is not None else "it exited as soon as launched"
        crashes[file or sig.source.path] = Crash("controller", file or sig.source.path,
                                                 f"{words}, before it was ready (the launcher's report)",
                                                 items=[sig], ts=ts_of(sig), rc=rc if isinstance(rc, int) else None)


def _launcher_kill_all(ctx: DetectorContext) -> Signal | None:
    """The line after which the launcher stopped every process of the job: 'Terminated all processes due to
    failure', or 0.4.7's failure of the controller or exit 86, after which it kills them without a line."""
    for view in launcher_views(ctx):
        found = view.killed_all or view.silent_kill
        if found is not None:
            return found
    return None


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
    return sorted(out, key=lambda e: _stamped(ctx, e) or float("inf"))


def self_ended(ctx: DetectorContext) -> list[Signal]:
    """Lines showing the job ended by itself: the controller finalized or shut down, or the launcher saw the
    controller (or every process it started) end cleanly. One replica's clean exit ends nothing (§2.7)."""
    out = [s for kind in SELF_END_KINDS for s in ctx.signals(kind)]
    for view in launcher_views(ctx):
        ended = [p.end for p in view.processes if p.ended_ok and p.end is not None
                 and (p.role is Role.CONTROLLER or view.all_ended_ok)]
        out.extend(e for e in ended if e not in out)
    return out


def last_progress(ctx: DetectorContext, marks: tuple[str, ...]) -> tuple[float | None, FileFacts | None, str | None]:
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


def usual_step_s(ctx: DetectorContext) -> float | None:
    """The run's pace: the median wall time between its recent Step lines, or the median Iteration time
    they report, whichever is longer (one step: its Iteration time)."""
    m = ctx.metrics
    paces = []
    for name in ("step_time_s", "iteration_time_s"):
        series = m.get(name)
        value = median(series.tail(20)) if series is not None else None
        if value is not None and value > 0:
            paces.append(value)
    return max(paces) if paces else None


def find_stall(ctx: DetectorContext, stops: list[Event] | None = None,
               ends: list[Signal] | None = None) -> Stall | None:
    """No progress for longer than the run's own pace allows, up to the end of its record: a stop from
    outside (``stops``: ``terminations(ctx)``), the job's own end, the newest line, or (for a run being
    written) the present."""
    if ctx.finished_training:
        return None
    if not any(True for _ in ctx.files(Role.CONTROLLER, *REPLICA_ROLES)):
        return None  # the launcher alone prints nothing while its processes train (docs/reference/cosmos-rl.md §2.7)
    m = ctx.metrics
    step_series = m.get("step")
    progress: Event | None
    usual: float | None = None
    if step_series is not None and step_series.last_ts is not None:
        since = step_series.last_ts
        usual = usual_step_s(ctx)
        if usual is not None:
            walls = m.get("step_time_s")
            longest = max(walls.tail(20), default=0.0) if walls is not None else 0.0
            limit = max(STALL_FACTOR * usual, BURST_FACTOR * longest, STALL_FLOOR_S)
            rule = (f"{STALL_FACTOR:g} x the usual step and {BURST_FACTOR:g} x the longest recent one, at least "
                    f"{duration(STALL_FLOOR_S)}")
        else:
            limit, rule = STALL_ONE_STEP_S, "one step logged and no step time: 10 min"
        what = f"the last step ({m.step}/{m.total_steps})"
        progress = ctx.store.steps.last or ctx.store.train_reports.last
    else:
        since_ts, facts, name = last_progress(ctx, PROGRESS_MARKS)
        if since_ts is None or facts is None:
            return None
        since = since_ts
        began = _startup_began(ctx)
        took = since - began if began is not None else 0.0
        limit = min(max(STARTUP_FACTOR * took, STARTUP_FLOOR_S), STARTUP_CEILING_S)
        rule = (f"{STARTUP_FACTOR:g} x the start-up so far ({duration(took)}), within "
                f"[{duration(STARTUP_FLOOR_S)}, {duration(STARTUP_CEILING_S)}]")
        label = "a rollout reached the controller" if name == "stat" else f"{facts.source.replica}: {name}"
        what = f"the last sign of progress before any step ({label.replace('_', ' ')})"
        progress = _event_at(ctx, facts, facts.marks[name].line) if name else None
    if _paused(ctx):
        limit = max(limit, PAUSE_S)
        rule += f"; a checkpoint save or validation had begun: at least {duration(PAUSE_S)}"
    stopped = [e for e in (terminations(ctx) if stops is None else stops) if (_stamped(ctx, e) or 0.0) >= since]
    ended_by = stopped[0] if stopped else None
    own_ends = self_ended(ctx) if ends is None else ends
    own_end = min((t for s in own_ends if (t := ts_of(s)) is not None and t >= since), default=None)
    if ended_by is not None:
        end = _stamped(ctx, ended_by)
        if end is not None and own_end is not None and own_end < end:
            end, ended_by = own_end, None  # the job was ending by itself before the stop came
    elif own_end is not None:
        end = own_end  # the job ended by itself: the time after is its shutdown, not silence
    else:
        end = (ctx.newest_ts or since) + ctx.silence
    if end is None:
        return None
    silent = end - since
    if silent < limit:
        return None
    return Stall(since, silent, limit, what, progress, ended_by, usual, until_ts=end, rule=rule)


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
    user_stop: Signal | None = None  # our supervisor's record that its user stopped the run (``user_stop``)

    @classmethod
    def of(cls, ctx: DetectorContext) -> RunFacts:
        stops, ends = terminations(ctx), self_ended(ctx)
        return cls(collect_crashes(ctx), stops, find_stall(ctx, stops, ends), ends, user_stop(ctx))


def user_stop(ctx: DetectorContext) -> Signal | None:
    """The user stopped the run through a1x-tui before its last step (the supervisor's record, read at the
    edge: ``a1x_diagnostics.run_record``)."""
    stop = ctx.store.signal(SignalKind.STOPPED_BY_USER).last
    return None if stop is None or ctx.finished_training else stop




@dataclass
class Death:
    replica: str
    items: list[Event | Hit] = field(default_factory=list)
    ts: float | None = None
    cause: str | None = None
    exact: bool = False  # ts comes from torchrun's own failure time


def _announced_as_caught(facts: FileFacts, tb: Traceback) -> bool:
    """Cosmos logs some caught errors as a line, then ``traceback.print_exc()`` (docs/reference/cosmos-rl.md §6.3:
    'Failed in rollout generation', the batch is discarded and the replica goes on): a traceback that
    starts right after such a line proves no death."""
    return tb.line in facts.caught_tracebacks


def _when(ctx: DetectorContext, event: Event) -> float | None:
    """An event's time; for the unstamped lines of a replica log (tracebacks, torchrun's summary), the
    newest stamp of that file: a process writes its failure last."""
    t = ts_of(event) or _child_time(event)
    if t is None:
        facts = ctx.store.files.get(event.source.path)
        if facts is not None:
            t = facts.last_ts
    return t


def _child_time(event: Event) -> float | None:
    """torchrun's summary says when the worker failed: ``time : 2025-06-11_09:03:00`` (local time)."""
    value = event.fields.get("time") if isinstance(event, Signal) else None
    if not isinstance(value, str):
        return None
    try:
        # whole seconds: the failure happened within that second, after what was logged during it
        return datetime.strptime(value.strip(), "%Y-%m-%d_%H:%M:%S").timestamp() + 0.999
    except ValueError:
        return None


def _child_cause(event: Event) -> str | None:
    fields = event.fields if isinstance(event, Signal) else {}
    code = fields.get("exitcode")
    sig = fields.get("signal")
    if sig:
        return f"killed by {sig}"
    if code == -9 or "exitcode  : -9" in event.text or "SIGKILL" in event.text:
        return "killed by SIGKILL (exit code -9: the host's OOM killer, or a kill)"
    if isinstance(code, int):
        return f"exit code {code}"
    return None


def collect_deaths(ctx: DetectorContext) -> dict[str, Death]:
    """One entry per dead replica (keyed by its log file, or by UUID when no file is known)."""
    deaths: dict[str, Death] = {}

    def add(key: str, replica: str, item: Event | Hit, cause: str | None = None) -> None:
        death = deaths.get(key)
        if death is None:
            death = deaths[key] = Death(replica)
        death.items.append(item)
        event = item.event if isinstance(item, Hit) else item
        exact = _child_time(event)
        if exact is not None:
            death.ts, death.exact = exact, True
        elif not death.exact:
            t = _when(ctx, event)
            if t is not None and (death.ts is None or t < death.ts):
                death.ts = t
        if cause and (not death.cause or death.cause.startswith("it raised torch.distributed.elastic")):
            death.cause = cause  # torchrun's wrapper exception says less than its exit code

    for facts in ctx.files(*REPLICA_ROLES, Role.UNKNOWN):
        tb = facts.last_traceback
        if (
            tb is None
            or handled(tb)
            or _announced_as_caught(facts, tb)
            or facts.last_line - tb.last_line > TAIL_LINES
            or after_end(ctx, _when(ctx, tb))
        ):
            continue
        if facts.source.role is Role.UNKNOWN and not ctx.hits("child_failed"):
            continue
        error = facts.last_error if facts.last_error is not None and not handled(facts.last_error) else tb
        if facts.last_line - error.last_line > TAIL_LINES:
            error = tb
        exc = f"{error.exc_type}: {error.exc_message}" if error.exc_type else (error.lines[-1] if error.lines else None)
        cause = f"it raised {clip_text(exc, 160).rstrip('.')}" if exc else None
        add(facts.source.path, facts.source.replica, error, cause)
    for hit in ctx.hits("child_failed"):
        if after_end(ctx, _when(ctx, hit.event)):
            continue
        add(hit.event.source.path, hit.event.source.replica, hit, _child_cause(hit.event))
    for sig in ctx.signals(SignalKind.REPLICA_DEAD):
        if after_end(ctx, ts_of(sig)):
            continue
        uuid = str(sig.fields.get("uuid") or "")
        source = ctx.store.source_of_uuid(uuid) if uuid else None
        role = str(sig.fields.get("role") or "replica").lower()
        key = source.path if source is not None else f"uuid:{uuid or sig.line}"
        name = source.replica if source is not None else f"{role} {uuid[:8]}"
        add(key, name, sig, "no heartbeat reached the controller for the heartbeat timeout")
    return deaths
