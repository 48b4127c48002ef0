"""The verdict a read-only attach opens on: ``a1x-tui --check``'s report on the run, in a child process.

``--check`` reads a whole run at its own speed (docs/parsing.md), while the live follower reads the
history line by line before its first evaluation: on a large run the verdict (outcome and findings)
is on screen long before the follower's, which replaces it once in. ``a1x-tui attach`` starts the
child before it imports Textual (``start_check``: this module imports nothing else at its top), so
the app's start and ``--check``'s read overlap; a child process, as the dashboard's other commands,
so its reader's memory and CPU are not the app's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

TIMEOUT_S = 300.0


def start_check(path: Path, config: Path | None) -> subprocess.Popen[bytes]:
    """``a1x-tui --check PATH --format json`` started now, its report on the child's stdout."""
    args = [sys.executable, "-m", "a1x_tui", "--check", str(path), "--format", "json", "--timeout", f"{TIMEOUT_S:g}"]
    if config is not None:
        args += ["--config", str(config)]
    env = dict(os.environ)  # this checkout first, as feeds/supervision.py's cli_env gives the app's other children
    root = str(Path(__file__).resolve().parents[3])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)


def read_verdict(
    path: Path,
    config: Path | None,
    post: Callable[[Any], Any],
    stop: threading.Event,
    child: subprocess.Popen[bytes] | None = None,
) -> None:
    """Post ``VerdictRead`` with the report of ``child`` (started here if None); stopped with ``stop``."""
    from a1x_diagnostics.findings import Report
    from a1x_diagnostics.live import finding_key
    from a1x_diagnostics.report import redact_report
    from a1x_tui.ui.messages import VerdictRead

    if child is None:
        try:
            child = start_check(path, config)
        except OSError as exc:
            post(VerdictRead(None, error=f"a1x-tui --check did not start: {exc}"))
            return
    out = child.stdout
    result: list[bytes] = []
    reader = threading.Thread(target=lambda: result.append(out.read() if out else b""), daemon=True)
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
