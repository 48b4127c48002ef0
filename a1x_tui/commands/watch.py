"""``a1x-tui watch PATH``: follow a live run headlessly, print findings as they come and go.

For agents and scripts that follow a run without a terminal UI. stdout carries only the stream
(``--format json``: one JSON object per line, each with a ``type``); diagnostics go to stderr.
Ctrl-C or SIGTERM end it cleanly; the exit code is the status of the findings still open, as
``--check``: 0 ok, 1 warning, 2 critical, 3 unknown (nothing read, or stopped before the history
of the run was read). What ``--check`` calls UNKNOWN is refused at once with its reason (exit 3);
a folder with no run yet is waited on (docs/live.md). Never imports Textual.

JSON types: ``history_complete`` (the run's history is read: findings are evaluated from now on),
``finding_raised`` / ``finding_updated`` (with ``key`` and the ``finding`` as in the ``--check``
report), ``finding_resolved`` (``key``, ``finding_id``), ``run_switched`` (``logs_latest`` moved),
``file_appeared``, ``outcome`` (the run's outcome moved: ``outcome`` as in the ``--check`` report, and the
``previous`` state), ``follow_error`` (``message``, ``path``: what the follower could not do, also on stderr),
and last ``ended`` (``status``, ``exit_code``, ``open`` keys, ``outcome``, ``reason``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import textwrap
import threading
from datetime import datetime, timezone
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from a1x_diagnostics.findings import Finding
    from a1x_diagnostics.live import FollowOptions, Message, RunFollower


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0.05 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"{value:g} s is out of range (0.05 to 3600)")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path",
        metavar="PATH",
        help="a Cosmos-RL --log-dir (follows logs_latest as it moves), one logs_<ts> folder, a run folder of ours, "
        "a SLURM job folder, or one log file",
    )
    parser.add_argument("--config", metavar="TOML", help="the run's TOML: adds config lint and current values to fixes")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="stream format (default: text)")
    parser.add_argument("--run", metavar="NAME", help="follow this logs_<ts> (or part_N/run_M) instead of the latest")
    parser.add_argument(
        "--poll",
        action="store_true",
        help="poll the files instead of inotify (automatic on NFS, Lustre, GPFS, BeeGFS, CIFS: inotify does not see "
        "other nodes' writes there)",
    )
    parser.add_argument(
        "--dashboard",
        action="store_true",
        help="--format json with what a dashboard shows too (log lines, metrics, GPU samples, the supervisor's "
        "state): the far side of `a1x-tui attach HOST:PATH`",
    )
    parser.add_argument(
        "--end-with-stdin",
        action="store_true",
        help="end when stdin closes: what HOST:PATH asks of the far side, so that it ends with its ssh connection",
    )
    parser.add_argument(
        "--wandb",
        metavar="PROJECT",
        help="also raise each finding as a W&B alert of a monitor run in PROJECT (needs a1x-tui[wandb])",
    )
    parser.add_argument(
        "--interval",
        type=_positive_seconds,
        default=1.0,
        metavar="S",
        help="seconds between evaluations of the findings, and the polling period (default: 1)",
    )


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


class _Printer:
    """Writes the stream; every string passes ``redact`` (no token or API key reaches stdout)."""

    def __init__(self, fmt: str) -> None:
        from a1x_diagnostics.report import redact

        self.fmt = fmt
        self._redact = redact

    def _out(self, text: str) -> None:
        sys.stdout.write(self._redact(text))
        sys.stdout.flush()

    def json(self, kind: str, **fields: Any) -> None:
        self._out(json.dumps({"type": kind, "time": _now(), **fields}, default=str) + "\n")

    def event(self, obj: dict[str, Any]) -> None:
        self._out(json.dumps(obj, default=str) + "\n")

    def text(self, line: str) -> None:
        from a1x_diagnostics.printable import printable  # log text: no control byte reaches the terminal

        clock = datetime.now().strftime("%H:%M:%S")
        self._out(f"{clock} " + "\n".join(printable(part) for part in line.split("\n")) + "\n")

    def finding_text(self, verb: str, key: str, finding: Finding) -> None:
        lines = [f"{verb} {finding.severity.value} {key}: {finding.title}"]
        lines += textwrap.wrap(finding.explanation, 110, initial_indent="    ", subsequent_indent="    ")
        for ev in finding.evidence:
            where = f"{ev.file}:{ev.line}" if ev.line is not None else ev.file
            lines.append(f"    {where}: {ev.text.strip()}")
        for fx in finding.fixes:
            proposed = "remove the key" if fx.proposed is None else json.dumps(fx.proposed, default=str)
            lines.append(f"    fix: {fx.path} = {proposed} (now {json.dumps(fx.current, default=str)}): {fx.why}")
        if finding.action:
            lines.append(f"    action: {finding.action}")
        self.text("\n".join(lines))

    def message(self, message: Message) -> None:
        from a1x_diagnostics.live import (
            FindingRaised,
            FindingResolved,
            FollowError,
            HistoryComplete,
            OutcomeChanged,
            RunSwitched,
        )

        if isinstance(message, FollowError):
            if self.fmt == "json":  # for an agent: what the follower could not do (a file unreadable for a while...)
                self.json("follow_error", message=message.message, path=message.path)
            print(f"a1x-tui watch: {message.message}", file=sys.stderr)
            return
        if self.fmt == "json":
            obj = event_object(message)
            if obj is not None:
                self.event(obj)
            return
        if isinstance(message, OutcomeChanged):
            self.text(f"OUTCOME {message.outcome.state.value}: {message.outcome.summary}")
        elif isinstance(message, FindingRaised):
            self.finding_text("RAISED", message.key, message.finding)
        elif isinstance(message, FindingResolved):
            title = f": {message.finding.title}" if message.finding is not None else ""
            self.text(f"RESOLVED {message.key}{title}")
        elif isinstance(message, RunSwitched):
            self.text(f"RUN {message.run_name} (was {message.previous or 'none'}): findings start over")
        elif isinstance(message, HistoryComplete):
            print(
                f"a1x-tui watch: read the history of {message.files} file(s) ({message.lines} lines) in "
                f"{message.seconds:g} s; following",
                file=sys.stderr,
            )


def event_object(message: Message) -> dict[str, Any] | None:
    """The ``--format json`` line of one follower message (None: not part of the stream), not yet redacted.

    Shared with the MCP server's ``findings_since`` and the far side of ``attach HOST:PATH``."""
    from a1x_diagnostics.live import (
        FileAppeared,
        FindingRaised,
        FindingResolved,
        FindingUpdated,
        HistoryComplete,
        OutcomeChanged,
        RunSwitched,
    )

    head: dict[str, Any] = {"time": _now()}
    if isinstance(message, OutcomeChanged):
        previous = message.previous.state.value if message.previous is not None else None
        return {"type": "outcome", **head, "outcome": message.outcome.model_dump(mode="json"), "previous": previous}
    if isinstance(message, FindingRaised | FindingUpdated):
        kind = "finding_raised" if isinstance(message, FindingRaised) else "finding_updated"
        return {"type": kind, **head, "key": message.key, "finding": message.finding.model_dump(mode="json")}
    if isinstance(message, FindingResolved):
        return {"type": "finding_resolved", **head, "key": message.key, "finding_id": message.finding_id}
    if isinstance(message, RunSwitched):
        return {"type": "run_switched", **head, "run": message.run_name, "previous": message.previous}
    if isinstance(message, HistoryComplete):
        return {"type": "history_complete", **head, "files": message.files, "lines": message.lines,
                "seconds": message.seconds}
    if isinstance(message, FileAppeared):
        return {"type": "file_appeared", **head, "file": message.source.path, "replica": message.source.replica}
    return None


def stream_kinds() -> set[type]:
    """The follower messages the stream is made of (and ``FollowError``, said on stderr)."""
    from a1x_diagnostics.live import (
        FileAppeared,
        FindingRaised,
        FindingResolved,
        FindingUpdated,
        FollowError,
        HistoryComplete,
        OutcomeChanged,
        RunSwitched,
    )

    return {FindingRaised, FindingUpdated, FindingResolved, RunSwitched, HistoryComplete, FollowError, FileAppeared,
            OutcomeChanged}


def _follow(follower: RunFollower, printer: _Printer, stop: threading.Event, alerts: Any = None) -> None:
    from a1x_tui._stdout import stdout_closed

    sub = follower.subscribe(stream_kinds())
    follower.start()
    try:
        while not stop.is_set() and not stdout_closed():  # like tail -f, watch ends when its reader does
            message = sub.get(timeout=0.2)
            if message is not None:
                printer.message(message)
                if alerts is not None:
                    alerts.message(message)
    finally:
        follower.stop()
    for message in sub.drain():
        printer.message(message)
        if alerts is not None:
            alerts.message(message)


def _alerts(args: argparse.Namespace, layout: Any) -> Any:
    """``--wandb PROJECT``: the W&B monitor run of this run (a1x_supervisor/alerts.py), in the TOML's group,
    else one named for the run (its logs_<ts> stamp, Cosmos-RL's W&B run id; else the folder's name)."""
    from pathlib import Path

    from a1x_supervisor.alerts import WandbAlerts, monitor_group

    run_id = (layout.run or "").removeprefix("logs_") or Path(os.path.abspath(args.path)).name
    _, group = monitor_group(Path(args.config) if args.config else None, run_id)
    return WandbAlerts(project=args.wandb, group=group, name=f"a1x-monitor {run_id}",
                       say=lambda text: print(f"a1x-tui watch: {text}", file=sys.stderr, flush=True)).start()


def _may_fill(layout: Any) -> bool:
    """A folder that holds no run yet (a log dir before the launch) or only empty log files (a launch
    under way): waited on, not refused (docs/live.md)."""
    if not os.path.isdir(layout.root):
        return False
    if layout.waiting:
        return True
    try:
        return all(os.path.getsize(path) == 0 for path in layout.files)
    except OSError:
        return False


def follow_options(args: argparse.Namespace) -> FollowOptions:
    """The follower's options for ``--poll`` and ``--interval``."""
    from a1x_diagnostics.live import FollowOptions

    return FollowOptions(poll=True if args.poll else None, poll_interval=args.interval, evaluate_interval=args.interval)


def refusal(layout: Any, path: str, run: str | None) -> str | None:
    """Why ``path`` is not followed (what ``--check`` calls UNKNOWN), None when it is: a folder that may
    still fill is waited on."""
    from a1x_diagnostics.engine import unknown_reason

    return None if _may_fill(layout) else unknown_reason(path, run)


def run(args: argparse.Namespace) -> int:
    from a1x_tui.remote.address import parse_remote

    remote = parse_remote(args.path)
    if remote is not None:  # HOST:PATH: the far side's watch, over the user's ssh
        from a1x_tui.commands.remote_watch import run as remote_run

        return remote_run(args, remote, _Printer(args.format))
    if args.dashboard:
        from a1x_tui.commands.dashboard_feed import run as dashboard

        return dashboard(args, event_object)
    from a1x_diagnostics.findings import Status
    from a1x_diagnostics.live import RunFollower, engine_diagnosis, resolve_layout
    from a1x_diagnostics.parsing import LayoutError

    try:
        layout = resolve_layout(args.path, args.run)
    except LayoutError as exc:
        print(f"a1x-tui watch: {exc}", file=sys.stderr)
        return Status.UNKNOWN.exit_code
    unknown = refusal(layout, args.path, args.run)
    if unknown is not None:  # what --check calls UNKNOWN is never followed (and never ends OK)
        print(f"a1x-tui watch: {unknown}", file=sys.stderr)
        return Status.UNKNOWN.exit_code
    factory, notes = engine_diagnosis(args.config, target=args.path)
    for note in notes:
        print(f"a1x-tui watch: {note}", file=sys.stderr)
    follower = RunFollower(args.path, run=args.run, options=follow_options(args), diagnosis=factory)
    how = f"polling: {follower.why_polling}" if follower.polling else "inotify"
    if layout.waiting:
        print(f"a1x-tui watch: no run yet ({layout.waiting}); waiting for one", file=sys.stderr)
    else:
        run_name = f"run {layout.run}, " if layout.run else ""
        print(f"a1x-tui watch: following {layout.root} ({run_name}{len(layout.files)} file(s), {how})", file=sys.stderr)

    printer = _Printer(args.format)
    stop = threading.Event()
    reason = ["stopped"]

    def on_signal(signum: int, frame: FrameType | None) -> None:
        reason[0] = signal.Signals(signum).name
        stop.set()

    alerts = _alerts(args, layout) if args.wandb else None
    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    if args.end_with_stdin:
        from a1x_tui.remote.far import end_with_stdin

        end_with_stdin(stop, lambda: reason.__setitem__(0, "stdin closed"))
    try:
        _follow(follower, printer, stop, alerts)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    status = follower.status()
    open_keys = sorted(follower.findings_by_key())
    outcome = follower.outcome
    if alerts is not None:
        alerts.finish(outcome=outcome.model_dump(mode="json") if outcome is not None else None, status=status.value,
                      exit_code=status.exit_code, open_keys=open_keys)
    if args.format == "json":
        printer.json("ended", status=status.value, exit_code=status.exit_code, open=open_keys, reason=reason[0],
                     outcome=outcome.model_dump(mode="json") if outcome is not None else None)
    else:
        state = f", run {outcome.state.value}" if outcome is not None else ""
        printer.text(f"ENDED {status.value.upper()} ({reason[0]}{state}): {', '.join(open_keys) or 'no finding open'}")
    return status.exit_code
