"""Reports: building the ``Report`` model, rendering it for people, and keeping secrets out.

Text layout (for people and monitoring plugins)::

    A1X-TUI CRITICAL - replica_died, vllm_oom (step 6/40) | 'step'=6 'total_steps'=40 ...
    [-] vllm_oom A rollout replica ran out of GPU memory
        <explanation>
        logs_…/rollout_0.log:212: torch.OutOfMemoryError: CUDA out of memory. …
        fix: rollout.gpu_memory_utilization = 0.7 (now 0.9): <why>
    24 checks ok, 6 blind, 8 not applicable: --verbose lists them
    metrics: step 6/40 · reward mean -0.2100 (std 0.1000) · pending 12 · …

The first line is Nagios-style: status, summary (what the logs show first, then the config's
predictions), then perfdata after ``|``. The findings follow, most severe first, each with its evidence
and fix; the checks that found nothing are one line (``--verbose``: ``[+] id ok``, ``[?] id blind: why``,
``[ ] id skipped: why``, one a line). JSON is the pydantic ``Report`` itself, every check included.
Every string of a report passes ``redact`` before it is printed or returned.
"""

from __future__ import annotations

import os
import re
import textwrap
from collections.abc import Iterable
from typing import Any, Literal

from a1x_diagnostics.findings import (
    CheckResult,
    CheckState,
    Evidence,
    Finding,
    Outcome,
    Report,
    RunOutcome,
    Severity,
    Status,
    overall_status,
)
from a1x_diagnostics.printable import printable

# --- secrets --------------------------------------------------------------------------------------------
# Two nets: the values of this process's secret variables, and the shapes secrets have whatever the
# environment holds (a log written by a run whose key this shell does not have): KEY=value pairs
# under a secret-looking name, Hugging Face tokens, W&B keys (40 hex digits on a line that names
# W&B, or a local server's local-<hex>), Authorization headers and bearer tokens, token= / key=
# query parameters, and the password of a URL.
SECRET_NAME = r"[A-Z0-9_]*(?:TOKEN|API_KEY|APIKEY|SECRET|PASSWORD|PASSWD|ACCESS_KEY|PRIVATE_KEY)[A-Z0-9_]*"
_LOWER_NAMES = r"(?:wandb_)?api_key|hf_token|access_token|auth_token|secret_key|password"
_ASSIGNMENT = re.compile(
    rf"\b({SECRET_NAME}|{_LOWER_NAMES})(['\"]?\s*[:=]\s*['\"]?)(?!\[redacted\]|\*\*\*)([^\s'\",}}\]]{{4,}})"
)  # a value the supervisor already scrubbed ([redacted]) stays as it is
_HF_TOKEN = re.compile(r"\bhf_[A-Za-z0-9]{16,}")
_WANDB_LINE = re.compile(r"(?i)wandb[^\n]*")  # from the word on, to the end of its line
_HEX40 = re.compile(r"(?<![0-9A-Za-z])[0-9a-f]{40}(?![0-9A-Za-z])")
_WANDB_LOCAL = re.compile(r"\blocal-[0-9a-f]{40,}")
_AUTHORIZATION = re.compile(
    r"(?i)\b(authorization['\"]?\s*[:=]\s*['\"]?(?:(?:bearer|basic|token|digest)\s+)?)([^\s'\",;]+)"
)
_BEARER = re.compile(r"(?i)\b(bearer\s+)([A-Za-z0-9._~+/=-]{8,})")
_QUERY = re.compile(
    r"(?i)([?&;](?:[a-z0-9_.-]*(?:token|key|secret|passw|signature|sig|auth)[a-z0-9_.-]*)=)([^&\s'\"#]+)"
)
_TOKEN_EQ = re.compile(r"(?i)(?<![a-z0-9_])(token=)([^\s&'\",}\]]{4,})")
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@]+:)([^@\s/]+)(@)")
# Every shape above needs one of these words in the lower-cased text, or token/key right before a
# ':' or '=' ("completion tokens" in a Stat line is neither): substring tests spare the patterns on
# most log lines (a log view is fed tens of thousands of lines a second).
_ALWAYS = ("hf_", "wandb", "local-", "bearer", "auth", "://", "secret", "passw", "sig")
_NAMED = re.compile(r"(?:token|key)[a-z0-9_.-]*['\"]?\s*[:=]")


def _may_hold_secret(text: str) -> bool:
    low = text.lower()
    if any(word in low for word in _ALWAYS):
        return True
    return ("token" in low or "key" in low) and _NAMED.search(low) is not None
_ENV_SECRET = re.compile(rf"^{SECRET_NAME}$")
_KNOWN_SECRETS = ("WANDB_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HUGGINGFACE_HUB_TOKEN")
MASK = "***"
ReportKind = Literal["check", "lint", "preflight", "watch"]


def env_secrets() -> list[str]:
    """This process's secret values (read once, then given to ``redact`` for many texts)."""
    values = set()
    for name, value in os.environ.items():
        if (name in _KNOWN_SECRETS or _ENV_SECRET.match(name)) and len(value) >= 8:
            values.add(value)
    return sorted(values, key=len, reverse=True)



def _keep_head(m: re.Match[str]) -> str:
    return f"{m.group(1)}{MASK}"


def redact(text: str, secrets: Iterable[str] | None = None) -> str:
    """``text`` with secrets masked: this process's secret values (``secrets``, default: read now)
    and the shapes secrets have (see above), whatever the environment holds."""
    for value in env_secrets() if secrets is None else secrets:
        if value in text:
            text = text.replace(value, MASK)
    if not _may_hold_secret(text):
        return text
    text = _ASSIGNMENT.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
    text = _HF_TOKEN.sub("hf_" + MASK, text)
    text = _WANDB_LOCAL.sub("local-" + MASK, text)
    text = _WANDB_LINE.sub(lambda m: _HEX40.sub(MASK, m.group(0)), text)
    text = _AUTHORIZATION.sub(_keep_head, text)
    text = _BEARER.sub(_keep_head, text)
    text = _QUERY.sub(_keep_head, text)
    text = _TOKEN_EQ.sub(_keep_head, text)
    return _URL_PASSWORD.sub(lambda m: f"{m.group(1)}{MASK}{m.group(3)}", text)


def _redact_value(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {k: _redact_value(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_value(v, secrets) for v in value]
    return value


def redact_report(report: Report) -> Report:
    secrets = env_secrets()
    return Report.model_validate(_redact_value(report.model_dump(mode="json"), secrets))


def redact_finding(finding: Finding, secrets: Iterable[str] | None = None) -> Finding:
    """A finding as a screen may show it (explanation, evidence, fixes masked)."""
    values = env_secrets() if secrets is None else list(secrets)
    return Finding.model_validate(_redact_value(finding.model_dump(mode="json"), values))


def redact_outcome(outcome: RunOutcome, secrets: Iterable[str] | None = None) -> RunOutcome:
    values = env_secrets() if secrets is None else list(secrets)
    return RunOutcome.model_validate(_redact_value(outcome.model_dump(mode="json"), values))


# --- building ---------------------------------------------------------------------------------------------
PERFDATA_KEYS: tuple[tuple[str, str, str], ...] = (
    ("step", "step", ""),
    ("total_steps", "total_steps", ""),
    ("reward_mean", "reward_mean", ""),
    ("reward_std", "reward_std", ""),
    ("traj_l2", "traj_l2", ""),
    ("pending_rollouts", "pending_rollouts", ""),
    ("in_flight", "in_flight", ""),
    ("step_time_s", "step_time", "s"),
    ("iteration_time_s", "iteration_time", "s"),
    ("samples_per_s", "samples_per_s", ""),
    ("tokens_per_s", "tokens_per_s", ""),
    ("weight_version_gap", "weight_version_gap", ""),
    ("loss_avg", "loss_avg", ""),
    ("grad_norm", "grad_norm", ""),
)


def merge_findings(first: list[Finding], second: list[Finding]) -> list[Finding]:
    """One finding per id across two sources (logs and config lint): evidence and fixes united."""
    merged: list[Finding] = list(first)
    for finding in second:
        same = next((f for f in merged if f.id == finding.id), None)
        if same is None:
            merged.append(finding)
            continue
        evidence = list(same.evidence)
        keys = {(e.file, e.line) for e in evidence}
        evidence += [e for e in finding.evidence if (e.file, e.line) not in keys]
        fixes = list(same.fixes) + [fx for fx in finding.fixes if all(fx.path != g.path for g in same.fixes)]
        severity = Severity.CRITICAL if Severity.CRITICAL in (same.severity, finding.severity) else same.severity
        merged[merged.index(same)] = same.model_copy(
            update={
                "evidence": evidence,
                "fixes": fixes,
                "severity": severity,
                "explanation": f"{same.explanation} {finding.explanation}",
                "action": same.action or finding.action,
            }
        )
    return merged


def _ordered(findings: list[Finding]) -> list[Finding]:
    """What the logs show first, then the config's predictions (``data.origin``); critical first in each."""
    return sorted(findings, key=lambda f: (f.data.get("origin") == "config", f.severity is not Severity.CRITICAL))


def _summary(status: Status, findings: list[Finding], metrics: dict[str, Any], outcome: RunOutcome | None) -> str:
    step, total = metrics.get("step"), metrics.get("total_steps")
    starting = outcome is None or outcome.state in (Outcome.RUNNING, Outcome.NOT_STARTED)
    progress = f"step {step}/{total}" if step is not None else "no step yet" if starting else "no step line"
    head = f"{outcome.state.value}: " if outcome is not None else ""
    if not findings:
        return f"{head}no problem found ({progress})"
    ids: list[str] = []
    for f in _ordered(findings):
        if f.id not in ids:
            ids.append(f.id)
    return f"{head}{', '.join(ids)} ({progress})"


def build_report(
    *,
    target: str,
    run: str | None,
    findings: list[Finding],
    checks: list[CheckResult],
    metrics: dict[str, float | int | str | None],
    files: list[str],
    notes: list[str] | None = None,
    kind: ReportKind = "check",
    outcome: RunOutcome | None = None,
) -> Report:
    """The report; with an ``outcome``, OK only for a completed run, or a running one without findings
    (a concluding detector gives every other outcome its finding; this is the last guard)."""
    status = overall_status(findings)
    if status is Status.OK and outcome is not None and outcome.state not in (Outcome.COMPLETED, Outcome.RUNNING):
        status = Status.WARNING
    findings = _ordered(findings)
    finding_ids = {f.id for f in findings}
    checks = [
        c.model_copy(update={"state": CheckState.FINDING})
        if c.id in finding_ids and c.state is not CheckState.FINDING
        else c
        for c in checks
    ]
    known = {c.id for c in checks}
    checks += [CheckResult(id=fid, state=CheckState.FINDING) for fid in sorted(finding_ids - known)]
    report = Report(
        kind=kind,
        target=target,
        run=run,
        status=status,
        exit_code=status.exit_code,
        summary=_summary(status, findings, metrics, outcome),
        outcome=outcome,
        findings=findings,
        checks=checks,
        metrics=metrics,
        files=files,
        notes=notes or [],
    )
    return redact_report(report)


def unknown_report(
    target: str,
    reason: str,
    *,
    run: str | None = None,
    files: list[str] | None = None,
    notes: list[str] | None = None,
    kind: ReportKind = "check",
) -> Report:
    """The report for input that cannot be judged: status UNKNOWN, exit code 3, the reason."""
    report = Report(
        kind=kind,
        target=target,
        run=run,
        status=Status.UNKNOWN,
        exit_code=Status.UNKNOWN.exit_code,
        summary=reason,
        files=files or [],
        notes=notes or [],
    )
    return redact_report(report)


# --- rendering ---------------------------------------------------------------------------------------------
def perfdata(metrics: dict[str, Any]) -> str:
    parts = []
    for key, label, unit in PERFDATA_KEYS:
        value = metrics.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        text = f"{value:g}" if isinstance(value, float) else str(value)
        parts.append(f"'{label}'={text}{unit}")
    return " ".join(parts)


def first_line(report: Report) -> str:
    line = f"A1X-TUI {report.status.value.upper()} - {report.summary}"
    data = perfdata(report.metrics)
    return f"{line} | {data}" if data else line


def _evidence_line(ev: Evidence) -> str:
    where = f"{ev.file}:{ev.line}" if ev.line is not None else ev.file
    return f"{where}: {ev.text}"


def _value(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return "unset" if value is None else str(value)


def _wrap(text: str, indent: str, width: int = 110) -> list[str]:
    return textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=indent) or [indent.rstrip()]


def _finding_lines(f: Finding) -> list[str]:
    lines = [f"[-] {f.id} {f.title}"]
    lines += _wrap(f.explanation, "    ")
    lines += [f"    {_evidence_line(ev)}" for ev in f.evidence]
    for fx in f.fixes:
        proposed = "remove the key" if fx.proposed is None else _value(fx.proposed)
        lines += _wrap(f"fix: {fx.path} = {proposed} (now {_value(fx.current)}): {fx.why}", "    ")
    if f.action:
        lines += _wrap(f"action: {f.action}", "    ")
    return lines


_METRIC_TEXT: tuple[tuple[str, str, str], ...] = (
    ("reward_mean", "reward mean", "{:.4f}"),
    ("reward_std", "reward std", "{:.4f}"),
    ("traj_l2", "traj L2", "{:.3f}"),
    ("comfort_reward", "comfort", "{:.3f}"),
    ("reasoning_score", "reasoning", "{:.3f}"),
    ("advantage_std", "advantage std", "{:.4f}"),
    ("loss_avg", "loss", "{:.5f}"),
    ("grad_norm", "grad norm", "{:.4f}"),
    ("learning_rate", "lr", "{:.2e}"),
    ("step_time_s", "step", "{:.1f} s"),
    ("iteration_time_s", "compute", "{:.1f} s"),
    ("pending_rollouts", "pending", "{:.0f}"),
    ("in_flight", "in-flight", "{:.0f}"),
    ("samples_per_s", "samples/s", "{:.2f}"),
    ("tokens_per_s", "tokens/s", "{:.0f}"),
    ("weight_version_gap", "weight gap", "{:.0f}"),
)


def metrics_line(metrics: dict[str, Any]) -> str:
    parts = []
    step, total = metrics.get("step"), metrics.get("total_steps")
    if step is not None:
        parts.append(f"step {step}/{total if total is not None else '?'}")
    for key, label, form in _METRIC_TEXT:
        value = metrics.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            parts.append(f"{label} {form.format(value)}")
    return "metrics: " + (" · ".join(parts) if parts else "none logged")


_STATE_ORDER = {CheckState.FINDING: 0, CheckState.BLIND: 1, CheckState.OK: 2, CheckState.SKIPPED: 3}


def checks_line(checks: list[CheckResult], shown: set[str]) -> str | None:
    """The checks that found nothing, in one line: ``24 checks ok, 6 blind: --verbose lists them``."""
    counts = {state: sum(1 for c in checks if c.state is state and c.id not in shown)
              for state in (CheckState.OK, CheckState.BLIND, CheckState.SKIPPED)}
    parts = [f"{counts[CheckState.OK]} checks ok"] if counts[CheckState.OK] else []
    if counts[CheckState.BLIND]:
        parts.append(f"{counts[CheckState.BLIND]} blind")
    if counts[CheckState.SKIPPED]:
        parts.append(f"{counts[CheckState.SKIPPED]} not applicable")
    return ", ".join(parts) + ": --verbose lists them" if parts else None


def render_text(report: Report, verbose: bool = False) -> str:
    """The report for people (see the module doc): the findings, most severe first, each with its evidence
    and fix; the checks that found nothing in one line (``verbose``: one line each). Ends with a newline."""
    lines = [first_line(report)]
    if report.status is Status.UNKNOWN:
        lines += [f"note: {n}" for n in report.notes]
        return "\n".join(printable(line) for line in lines) + "\n"
    run = f" run {report.run}" if report.run else ""
    lines.append(f"target: {report.target}{run} ({len(report.files)} file(s))")
    if report.outcome is not None:
        lines += _wrap(f"outcome: {report.outcome.state.value} — {report.outcome.summary}", "", )
        lines += [f"    {_evidence_line(ev)}" for ev in report.outcome.evidence[:3]]
    by_id: dict[str, list[Finding]] = {}
    for f in report.findings:
        by_id.setdefault(f.id, []).append(f)
    shown: set[str] = set()
    for f in report.findings:
        lines += _finding_lines(f)
        shown.add(f.id)
    if verbose:
        for c in sorted(report.checks, key=lambda c: _STATE_ORDER[c.state]):
            if c.id in shown:
                continue
            if c.state is CheckState.OK:
                lines.append(f"[+] {c.id} ok" + (f" ({c.note})" if c.note else ""))
            elif c.state is CheckState.BLIND:
                lines.append(f"[?] {c.id} blind: {c.note or 'its input is missing'}")
            elif c.state is CheckState.SKIPPED:
                lines.append(f"[ ] {c.id} skipped: {c.note or 'not applicable'}")
    else:
        summary = checks_line(report.checks, shown)
        if summary:
            lines.append(summary)
    lines.append(metrics_line(report.metrics))
    lines += [f"note: {n}" for n in report.notes]
    return redact("\n".join(printable(line) for line in lines)) + "\n"  # log text: no control byte reaches stdout


def render(report: Report, fmt: str = "text", verbose: bool = False) -> str:
    if fmt == "json":
        return report.model_dump_json(indent=2) + "\n"
    return render_text(report, verbose)
