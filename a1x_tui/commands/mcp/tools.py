"""What each MCP tool does, without the SDK: the library calls of the CLI, answered as the CLI's JSON.

Every tool takes plain values (already checked against its signature by the server) and returns a dict,
the same object the matching command prints with ``--format json`` (or ``--json``). A problem of the
input that only the file system can show (no such file, not a run, another user's run) raises
``Refused`` with one line, as the command's stderr says it. Nothing here prints: over stdio, stdout is
the protocol.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

CHECK_TIMEOUT_S = 120.0
_DOTTED = re.compile(r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)+$")


class Refused(Exception):
    """The tool cannot do what was asked; ``str()`` is one line naming the path and the problem."""


def _json(model_json: str) -> dict[str, Any]:
    value = json.loads(model_json)
    assert isinstance(value, dict)
    return value


def check(path: str, config: str | None = None, run: str | None = None,
          timeout: float = CHECK_TIMEOUT_S) -> dict[str, Any]:
    """``a1x-tui --check PATH [--config TOML] [--run NAME] --format json``: the report (UNKNOWN ones too)."""
    from a1x_diagnostics.engine import check as check_run
    from a1x_diagnostics.report import render

    report = check_run(path, config_path=config, run=run, now=time.time(), timeout=timeout)
    return _json(render(report, "json"))


def lint(toml: str, gpus: int | None = None, nodes: int | None = None, compute: str | None = None) -> dict[str, Any]:
    """``a1x-tui lint TOML --format json``."""
    from a1x_tui.commands.lint import lint_path

    return _json(lint_path(Path(toml), gpus=gpus, nodes=nodes, compute=compute).model_dump_json(indent=2))


def _finding_from_run(run: str, toml: str, finding_id: str) -> Any:
    """The finding ``finding_id`` of the run's ``--check --config TOML`` report (a finding of the logs,
    whose fix lint alone does not know)."""
    from a1x_diagnostics.engine import check as check_run
    from a1x_diagnostics.findings import Status

    report = check_run(run, config_path=toml, now=time.time(), timeout=CHECK_TIMEOUT_S)
    if report.status is Status.UNKNOWN:
        raise Refused(f"{run}: {report.summary}")
    for finding in report.findings:
        if finding.id == finding_id:
            return finding
    raise Refused(f"{run}: the run's report has no {finding_id} finding (ids now: "
                  f"{', '.join(f.id for f in report.findings) or 'none'})")


def _plan(toml: str, finding_id: str, run: str | None, values: Mapping[str, Any] | None,
          gpus: int | None, nodes: int | None, compute: str | None) -> tuple[Any, Any, Any]:
    """(loaded TOML, the plan, the finding given from a run or None)."""
    from a1x_diagnostics.config import ConfigError, FixRefused, load_config, make_context, plan_fix

    for key in values or {}:
        if not _DOTTED.match(key):
            raise Refused(f"set: {key!r} is not a dotted TOML key (e.g. rollout.gpu_memory_utilization)")
    try:
        loaded = load_config(Path(toml))
    except ConfigError as exc:
        raise Refused(str(exc).splitlines()[0]) from None
    given = _finding_from_run(run, toml, finding_id) if run is not None else None
    context = make_context(gpus_per_node=gpus, nodes=nodes, compute=compute)
    try:
        plan = plan_fix(loaded, finding_id, values=dict(values or {}), finding=given, context=context)
    except (FixRefused, ValueError) as exc:
        raise Refused(str(exc).splitlines()[0]) from None
    return loaded, plan, given


def fix_hash(file_sha256: str, diff: str) -> str:
    """What ``fix_apply`` must be given: the hash of the file the diff was made from and of the diff."""
    return hashlib.sha256(f"{file_sha256}\n{diff}".encode()).hexdigest()


def _fix_answer(finding_id: str, applied: bool, backup: str | None, diff: str, after: Any) -> dict[str, Any]:
    """The object ``a1x-tui fix --format json`` prints."""
    from a1x_diagnostics.report import redact, redact_report

    return {
        "finding": finding_id,
        "applied": applied,
        "backup": backup,
        "diff": redact(diff),
        "after": _json(redact_report(after).model_dump_json()),
    }


def fix_preview(toml: str, finding: str, run: str | None = None, values: Mapping[str, Any] | None = None,
                gpus: int | None = None, nodes: int | None = None, compute: str | None = None) -> dict[str, Any]:
    """``a1x-tui fix TOML --finding ID --format json`` (nothing written), with the ``hash`` ``fix_apply`` needs."""
    loaded, plan, _ = _plan(toml, finding, run, values, gpus, nodes, compute)
    answer = _fix_answer(finding, False, None, plan.diff, plan.after)
    answer["hash"] = fix_hash(loaded.sha256, plan.diff)
    return answer


def fix_apply(toml: str, finding: str, hash: str, run: str | None = None,
              values: Mapping[str, Any] | None = None, gpus: int | None = None, nodes: int | None = None,
              compute: str | None = None) -> dict[str, Any]:
    """``a1x-tui fix TOML --finding ID --apply --format json``, only when the file and the diff are still
    those ``fix_preview`` showed (``hash``): backup beside the file, atomic write, re-linted."""
    from a1x_diagnostics.config import FixRefused, apply_fix, make_context

    loaded, plan, given = _plan(toml, finding, run, values, gpus, nodes, compute)
    if fix_hash(loaded.sha256, plan.diff) != hash:
        raise Refused(f"{toml}: the file or the fix for {finding} changed since fix_preview; nothing written "
                      "(call fix_preview again and read the new diff)")
    if not plan.diff:
        return _fix_answer(finding, False, None, "", plan.after)
    context = make_context(gpus_per_node=gpus, nodes=nodes, compute=compute)
    try:
        result = apply_fix(Path(toml), finding, expected_sha256=loaded.sha256, values=dict(values or {}),
                           finding=given, context=context)
    except FixRefused as exc:
        raise Refused(str(exc).splitlines()[0]) from None
    backup = str(result.backup) if result.backup is not None else None
    return _fix_answer(finding, result.written, backup, result.diff, result.after)


def status(run_dir: str) -> dict[str, Any]:
    """``a1x-tui status RUN --json``: the supervisor's state (``live``), else ``state.json`` and a ``note``."""
    from a1x_diagnostics.report import redact
    from a1x_tui.commands.status import status_of

    state, note, refused = status_of(Path(run_dir))
    if state is None:
        raise Refused(refused or f"{run_dir}: not a run directory")
    answer = _json(redact(json.dumps(state)))
    if note:
        answer["note"] = note
    return answer


def stop(run_dir: str) -> dict[str, Any]:
    """``a1x-tui stop RUN``: its exit code and lines."""
    from a1x_diagnostics.report import redact
    from a1x_tui.commands.stop import stop_run

    code, text = stop_run(Path(run_dir))  # its lines go to stdout when it stopped, else to stderr
    if code == 3:
        raise Refused(redact(text or f"{run_dir}: not a run directory"))
    lines = [redact(line) for line in text.splitlines()]
    return {"run_dir": run_dir, "stopped": code == 0, "exit_code": code,
            "output": lines if code == 0 else [], "errors": [] if code == 0 else lines}
