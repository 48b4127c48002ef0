"""``a1x-tui lint``'s report: the same ``Report`` model and exit codes as ``--check``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from a1x_diagnostics.catalog import entry
from a1x_diagnostics.config.loader import ConfigError, LoadedConfig, load_config
from a1x_diagnostics.config.rules import LintContext, custom_notes, make_context, run_rules
from a1x_diagnostics.findings import (
    CheckResult,
    CheckState,
    Evidence,
    Finding,
    Report,
    Severity,
    Status,
    overall_status,
)


def _summary(status: Status, findings: list[Finding], name: str, rules: int) -> str:
    if not findings:
        return f"LINT {status.name}: no findings in {name} ({rules} rules)"
    critical = sum(f.severity is Severity.CRITICAL for f in findings)
    return f"LINT {status.name}: {critical} critical, {len(findings) - critical} warning in {name}"


def _load_failure(path: Path, error: ConfigError) -> Report:
    if error.unreadable:
        return Report(
            kind="lint",
            target=str(path),
            status=Status.UNKNOWN,
            exit_code=Status.UNKNOWN.exit_code,
            summary=f"LINT UNKNOWN: {error}",
            notes=[str(error)],
        )
    text = error.line_text if error.line_text is not None else error.problem
    if error.finding_id == "toml_rejected":
        explanation = f"{error.problem}: the launcher exits at start with 'Error reading config file ...'."
        action = error.hint or "write the line the way TOML 0.5 allows (docs/config.md)"
    else:
        explanation = (
            f"Cosmos-RL cannot load this file: {error.problem}"
            + (f" (at {error.toml_path})" if error.toml_path else "")
            + ". The controller would exit at start with 'Failed to load or parse config file ...'."
        )
        action = None
    finding = Finding(
        id=error.finding_id,
        severity=Severity.CRITICAL,
        title=entry(error.finding_id).title,
        explanation=explanation,
        evidence=[Evidence(file=str(path), line=error.line, text=text)],
        action=action,
        data={"toml_path": error.toml_path, "problem": error.problem, "line": error.line},
    )
    return Report(
        kind="lint",
        target=str(path),
        status=Status.CRITICAL,
        exit_code=Status.CRITICAL.exit_code,
        summary=f"LINT CRITICAL: {error}",
        findings=[finding],
        checks=[CheckResult(id="load", state=CheckState.FINDING, note=str(error))],
    )


def report_for(loaded: LoadedConfig, ctx: LintContext) -> Report:
    """The lint report of a loaded TOML."""
    findings, checks = run_rules(loaded, ctx)
    status = overall_status(findings)
    notes = [f"{u.message} (line {u.line})" for u in loaded.unknown_keys if u.note and "harmless" in u.note]
    notes += custom_notes(loaded, ctx)
    if loaded.toml10_problem:
        notes.append(
            f"Cosmos-RL's parser (toml 0.10.2) reads this file, but it is not TOML 1.0 ({loaded.toml10_problem}): "
            "lint judged what Cosmos-RL reads; `a1x-tui fix` cannot edit it"
        )
    notes.append("Defaults are those of Cosmos-RL 747d1bd, the revision the Alpamayo recipe pins.")
    metrics: dict[str, float | int | str | None] = {
        "unknown_keys": len(loaded.unknown_keys),
        "policy_replicas": loaded.get("policy.parallelism.n_init_replicas"),
        "rollout_replicas": loaded.get("rollout.parallelism.n_init_replicas"),
        "train_policy_type": loaded.get("train.train_policy.type"),
    }
    for finding in findings:
        if finding.id == "insufficient_gpus":
            metrics["gpus_needed"] = finding.data["gpus_needed"]
    return Report(
        kind="lint",
        target=str(loaded.path),
        status=status,
        exit_code=status.exit_code,
        summary=_summary(status, findings, loaded.path.name, len(checks)),
        findings=findings,
        checks=checks,
        metrics=metrics,
        files=[str(loaded.path)],
        notes=notes,
    )


def lint_report(
    path: Path,
    *,
    gpus_per_node: int | None = None,
    nodes: int | None = None,
    compute: str | None = None,
    env: Mapping[str, str] | None = None,
    entry: str | None = None,
) -> Report:
    """Load and lint ``path``; a file Cosmos-RL could not load is itself a critical finding. ``entry`` is
    the entry script cosmos-rl will run, when known: ``[custom]`` keys are judged against it."""
    path = Path(path)
    ctx = make_context(gpus_per_node=gpus_per_node, nodes=nodes, compute=compute, env=env, entry=entry)
    try:
        loaded = load_config(path)
    except ConfigError as error:
        return _load_failure(path, error)
    return report_for(loaded, ctx)
