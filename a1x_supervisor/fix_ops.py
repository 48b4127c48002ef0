"""Fixes asked of the supervisor over its socket: the ``plan_fix`` and ``apply_fix`` requests.

A dashboard on another machine (``a1x-tui attach HOST:RUN``, through a socket forwarded by ssh) shows
a finding's fix and applies it to the run's training TOML (``config/train.toml``) on this machine: the
same ``plan_fix`` / ``apply_fix`` as ``a1x-tui fix`` and the local dashboard, the diff made and
written here, only if the file is still the one the diff was made from (``sha256``). Answers are one
JSON object: ``ok`` and the result, or ``ok: false`` and one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def answer(op: str, request: dict[str, Any], toml: Path) -> dict[str, Any]:
    from a1x_diagnostics.config import ConfigError, FixRefused, apply_fix, load_config, plan_fix
    from a1x_diagnostics.findings import Finding
    from a1x_diagnostics.report import redact

    try:
        finding = Finding.model_validate(request.get("finding"))
    except ValueError:
        return {"ok": False, "error": "the request carries no finding (a finding object of the report)"}
    try:
        if op == "plan_fix":
            loaded = load_config(toml)
            plan = plan_fix(loaded, finding.id, finding=finding)
            return {"ok": True, "toml": str(toml), "diff": redact(plan.diff), "sha256": loaded.sha256}
        sha = request.get("sha256")
        if not isinstance(sha, str):
            return {"ok": False, "error": "apply_fix needs the sha256 of the TOML the diff was made from"}
        result = apply_fix(toml, finding.id, expected_sha256=sha, finding=finding)
        return {"ok": True, "toml": str(toml), "written": result.written,
                "backup": str(result.backup) if result.backup is not None else None, "summary": result.after.summary}
    except (ConfigError, FixRefused, ValueError, OSError) as exc:
        return {"ok": False, "error": (str(exc).splitlines() or [type(exc).__name__])[0]}
