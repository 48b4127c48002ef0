"""``a1x-tui watch HOST:PATH`` and ``a1x-tui --check HOST:PATH``: the far side's answers, over the user's ssh.

``--check`` runs ``a1x-tui --check --format json`` there and prints its report here (text or JSON, the
target named ``HOST:PATH``, the same exit code). ``watch`` follows the far side's ``watch --format
json`` and prints its stream as ``watch`` does; when the connection breaks it says so in one line and
connects again, and what was already said is not said twice: findings still open are not raised again,
those that went while the link was down are resolved once the far side has read the run again.
With ``--format json`` the connection's changes are lines too (``{"type": "connection", "state":
"lost" | "restored" | "failed", ...}``). Ssh failures that no retry cures (a password asked, no
a1x-tui there, the far side refusing the path) are one line and exit 3 (docs/live.md "Over SSH").
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
import threading
from datetime import datetime, timezone
from typing import Any

from a1x_tui.remote.address import RemotePath, far_side_word
from a1x_tui.remote.book import FindingBook


def _words(command: list[str], remote: RemotePath, args: argparse.Namespace) -> list[str]:
    words = [shlex.quote(w) for w in command] + [remote.shell_word()]
    config = getattr(args, "config", None)
    if config:
        words += ["--config", far_side_word(config.split(":", 1)[1] if config.startswith(f"{remote.host}:")
                                            else str(config))]
    if getattr(args, "run", None):
        words += ["--run", shlex.quote(args.run)]
    return words


def run(args: argparse.Namespace, remote: RemotePath, printer: Any) -> int:
    """``a1x-tui watch HOST:PATH``; ``printer``: watch's own, for the format asked."""
    from a1x_tui.remote.link import RemoteError, RemoteStream

    if args.dashboard:
        print("a1x-tui watch: --dashboard is what attach HOST:PATH asks of the far side; not with HOST:PATH",
              file=sys.stderr)
        return 3
    command = ["watch", "--format", "json", "--end-with-stdin", "--interval", f"{args.interval:g}"]
    command += ["--poll"] if args.poll else []
    host = remote.host

    def relay(line: str) -> None:  # the far side's own notes (following ..., waiting for ...), named by host
        if line.startswith("a1x-tui watch: "):
            print(f"a1x-tui watch: {host}: {line.removeprefix('a1x-tui watch: ')}", file=sys.stderr, flush=True)

    stream = RemoteStream(host, _words(command, remote, args), on_stderr=relay)
    book = FindingBook()
    alerts = _alerts(args, remote) if args.wandb else None
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda signum, frame: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        for obj in stream.messages(stop):
            for line in book.take(obj):
                _show(printer, line, host)
                if alerts is not None and line["type"] in ("finding_raised", "finding_updated"):
                    alerts.finding(line["key"], line["finding"])
                elif alerts is not None and line["type"] == "finding_resolved":
                    alerts.resolved(line["key"])
    except RemoteError as exc:
        print(f"a1x-tui watch: {exc}", file=sys.stderr)
        return 3
    finally:
        stream.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    code = book.exit_code()
    if alerts is not None:
        status = {0: "ok", 1: "warning", 2: "critical"}.get(code, "unknown")
        alerts.finish(outcome=book.outcome, status=status, exit_code=code, open_keys=sorted(book.open))
    if book.ended is None:  # stopped here (Ctrl-C): the far side's last line never came, so it is said here
        status = {0: "ok", 1: "warning", 2: "critical"}.get(code, "unknown")
        now = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
        _show(printer, {"type": "ended", "time": now, "status": status, "exit_code": code, "open": sorted(book.open),
                        "reason": "stopped", "outcome": book.outcome}, host)
    return code


def _alerts(args: argparse.Namespace, remote: RemotePath) -> Any:
    """``watch HOST:PATH --wandb PROJECT``: the far side's findings as W&B alerts raised from here."""
    from pathlib import PurePosixPath

    from a1x_supervisor.alerts import WandbAlerts

    run_id = PurePosixPath(remote.path).name or remote.host
    return WandbAlerts(project=args.wandb, group=run_id, name=f"a1x-monitor {run_id}",
                       say=lambda text: print(f"a1x-tui watch: {text}", file=sys.stderr, flush=True)).start()


def _show(printer: Any, obj: dict[str, Any], host: str) -> None:
    """One line of the stream, as ``watch`` prints it (text or JSON)."""
    from a1x_diagnostics.findings import Finding

    kind = obj["type"]
    if kind == "connection":
        state = obj.get("state")
        note = {"lost": f"{obj.get('message')}; trying again in {obj.get('retry_in', 0):g} s",
                "restored": f"{obj.get('host')}: connected again; what changed meanwhile follows",
                "failed": str(obj.get("message"))}.get(str(state), str(obj))
        print(f"a1x-tui watch: {note}", file=sys.stderr, flush=True)
    if kind == "history_complete" and printer.fmt != "json":
        print(f"a1x-tui watch: {host}: read the history of {obj.get('files')} file(s) ({obj.get('lines')} "
              f"lines) in {obj.get('seconds')} s; following", file=sys.stderr, flush=True)
    if printer.fmt == "json":
        printer.event(obj)
        return
    if kind == "finding_raised":
        printer.finding_text("RAISED", obj["key"], Finding.model_validate(obj["finding"]))
    elif kind == "finding_resolved":
        printer.text(f"RESOLVED {obj['key']}")
    elif kind == "outcome":
        outcome = obj.get("outcome") or {}
        printer.text(f"OUTCOME {outcome.get('state')}: {outcome.get('summary')}")
    elif kind == "run_switched":
        printer.text(f"RUN {obj.get('run')} (was {obj.get('previous') or 'none'}): findings start over")
    elif kind == "ended":
        state = (obj.get("outcome") or {}).get("state")
        run = f", run {state}" if state else ""
        printer.text(f"ENDED {str(obj.get('status')).upper()} ({obj.get('reason')}{run}): "
                     f"{', '.join(obj.get('open') or []) or 'no finding open'}")


def check(args: argparse.Namespace, remote: RemotePath) -> int:
    """``a1x-tui --check HOST:PATH``: the far side's report, printed here."""
    from a1x_diagnostics.deadline import limit_of
    from a1x_diagnostics.findings import Report
    from a1x_diagnostics.report import redact_report, render
    from a1x_tui.remote.link import RemoteError, run_once

    command = ["--check", "--format", "json", "--timeout", f"{args.timeout:g}"]
    limit = limit_of(args.timeout)  # inf or 1e10 is no limit here too (no wait can be that long)
    try:
        done = run_once(remote.host, _words(command, remote, args), timeout=None if limit is None else limit + 60)
    except RemoteError as exc:
        print(f"a1x-tui --check: {exc}", file=sys.stderr)
        return 3
    try:
        report = Report.model_validate_json(done.stdout)
    except ValueError:
        last = next((ln for ln in reversed(done.stderr.splitlines()) if ln.strip()), f"exit code {done.returncode}")
        print(f"a1x-tui --check: {remote.host}: no report came back ({last.strip()})", file=sys.stderr)
        return 3
    for line in done.stderr.splitlines():
        if line.startswith("a1x-tui --check: "):
            print(f"a1x-tui --check: {remote.host}: {line.removeprefix('a1x-tui --check: ')}", file=sys.stderr)
    report = redact_report(report.model_copy(update={"target": f"{remote.host}:{report.target}"}))
    sys.stdout.write(render(report, args.format))
    sys.stdout.flush()
    return report.exit_code
