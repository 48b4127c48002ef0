"""The verdict a read-only attach opens on: ``a1x-tui --check``'s report on the run, in a child process.

``--check`` reads a whole run at its own speed (docs/parsing.md), while the live follower reads the
history line by line before its first evaluation: on a large run the verdict (outcome and findings)
is on screen long before the follower's, which replaces it once in. A child process, as the
dashboard's other commands: its reader's memory and CPU are not the app's.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.message import Message

from a1x_tui.ui.feeds.supervision import cli_command, cli_env
from a1x_tui.ui.messages import VerdictRead

TIMEOUT_S = 300.0


def read_verdict(path: Path, config: Path | None, post: Callable[[Message], Any], stop: threading.Event) -> None:
    """Post ``VerdictRead`` with the report of ``a1x-tui --check PATH --format json`` (stopped with ``stop``)."""
    from a1x_diagnostics.findings import Report
    from a1x_diagnostics.live import finding_key
    from a1x_diagnostics.report import redact_report

    args = ["--check", str(path), "--format", "json", "--timeout", f"{TIMEOUT_S:g}"]
    if config is not None:
        args += ["--config", str(config)]
    try:
        child = subprocess.Popen(
            cli_command(*args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=cli_env(),
        )
    except OSError as exc:
        post(VerdictRead(None, error=f"a1x-tui --check did not start: {exc}"))
        return
    result: list[bytes] = []
    reader = threading.Thread(target=lambda: result.append(child.stdout.read() if child.stdout else b""), daemon=True)
    reader.start()
    while reader.is_alive():
        if stop.wait(0.05):
            child.kill()
            child.wait()
            return
    child.wait()
    try:
        report = Report.model_validate_json(result[0] if result else b"")
    except ValueError as exc:
        first = str(exc).splitlines()[0]
        post(VerdictRead(None, error=f"a1x-tui --check gave no report (exit {child.returncode}): {first}"))
        return
    report = redact_report(report)
    post(VerdictRead(report, {finding_key(f): f for f in report.findings}))
