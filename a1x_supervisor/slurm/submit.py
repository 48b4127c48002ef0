"""Before anything reaches Slurm: plan the nodes, check the multi-node rules, build the command.

``prepare_sbatch`` and ``prepare_dispatch`` return a ``Submission`` whose ``argv`` is what the
``train`` stage hands to ``SlurmExecutor``; they raise ``SubmissionRefused`` (one line, plus the
findings) when the plan fails, a critical finding stands (``insufficient_gpus``,
``duplicate_samples``), or a variable the job needs is missing from the submitting environment.
Warnings (an undersized prefetch cache) are returned with the submission, not blocking.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from a1x_diagnostics.catalog import entry
from a1x_diagnostics.findings import Evidence, Finding, Severity
from a1x_supervisor.slurm.container import MountProbe, NeededPath, describe, job_mounts, mount_problems, unmounted
from a1x_supervisor.slurm.dispatch import dispatch_argv
from a1x_supervisor.slurm.plan import ConfigSource, NodePlan, PlanError, cluster_findings, plan_nodes, toml_get
from a1x_supervisor.slurm.sbatch import MAX_KEEP_DEFAULT, SbatchJob, missing_env, write_sbatch
from a1x_supervisor.slurm.spec import ClusterSpec, SlurmSpecError
from a1x_supervisor.slurm.walltime import wall_time_problems


class SubmissionRefused(SlurmSpecError):
    """Nothing was submitted. ``str(exc)`` is one line; ``findings`` holds the reasons as findings."""

    def __init__(self, message: str, findings: Sequence[Finding] = ()) -> None:
        super().__init__(message)
        self.findings = list(findings)


@dataclass(frozen=True, slots=True)
class Submission:
    argv: tuple[str, ...]
    plan: NodePlan
    findings: list[Finding] = field(default_factory=list)  # warnings only: criticals refuse
    script: Path | None = None  # sbatch: <run>/slurm/sbatch_script.sh
    env: dict[str, str] = field(default_factory=dict)  # added to the submission command's environment
    log_dir: Path | None = None  # must exist before the job starts (747d1bd's batch log; the caller makes it)


def _plan_and_check(
    spec: ClusterSpec,
    data: Mapping[str, Any],
    source: ConfigSource,
    n_policy: int | None,
    n_rollout: int | None,
) -> tuple[NodePlan, list[Finding]]:
    plan = plan_nodes(
        data,
        gpus_per_node=spec.gpus_per_node,
        packing=spec.packing,
        rev=spec.cosmos_rev,
        n_policy=n_policy,
        n_rollout=n_rollout,
        max_nodes=spec.max_nodes,
    )
    findings = cluster_findings(plan, data, source) + wall_time_findings(spec, data, source)
    critical = [f for f in findings if f.severity is Severity.CRITICAL]
    if isinstance(plan, PlanError) or critical:
        first = critical[0] if critical else findings[0]
        reason = str(plan) if isinstance(plan, PlanError) else f"{first.id}: {first.title}"
        raise SubmissionRefused(f"{source.file}: not submitted: {reason}", findings)
    return plan, findings


def checkpoint_ranks(data: Mapping[str, Any]) -> int:
    """Ranks that write a policy checkpoint: tp x cp x pp x dp_shard (docs/reference/cosmos-rl.md §5.3: world size /
    dp_replicate). ``dp_shard_size = -1`` counts as 1: the launcher gives a policy replica tp x dp_replicate x pp x
    cp GPUs for it (§2.2), and the policy then infers dp_shard = world size / (tp x dp_replicate x cp x pp) = 1.
    0 when a size is not a number Cosmos-RL accepts (the script then waits for every model_rank file's marker)."""
    ranks = 1
    for key in ("tp_size", "cp_size", "pp_size", "dp_shard_size"):
        value = toml_get(data, f"policy.parallelism.{key}", 1)
        if key == "dp_shard_size" and value == -1:
            value = 1
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            return 0
        ranks *= value
    return ranks


def max_keep(data: Mapping[str, Any]) -> int:
    """``[train.ckpt] max_keep`` (default 5; -1 keeps every checkpoint: docs/reference/cosmos-rl.md §5.3)."""
    value = toml_get(data, "train.ckpt.max_keep", MAX_KEEP_DEFAULT)
    return value if isinstance(value, int) and not isinstance(value, bool) else MAX_KEEP_DEFAULT


def prepare_sbatch(
    spec: ClusterSpec,
    data: Mapping[str, Any],
    job: SbatchJob,
    *,
    source: ConfigSource | None = None,
    environ: Mapping[str, str],
    n_policy: int | None = None,
    n_rollout: int | None = None,
) -> Submission:
    """Plan, check, write ``<run>/slurm/sbatch_script.sh`` and ``nodeplan.json``; argv = ``sbatch --parsable``."""
    if spec.method != "sbatch":
        raise SlurmSpecError("prepare_sbatch needs method = 'sbatch'")
    src = source or ConfigSource(str(job.config_path))
    # The controller step reads the replica counts from the TOML itself (launch_controller.sh has
    # no --policy/--rollout), so they cannot be overridden here.
    for given, key in ((n_policy, "policy"), (n_rollout, "rollout")):
        written = toml_get(data, f"{key}.parallelism.n_init_replicas", 1)
        if given is not None and given != written:
            raise SubmissionRefused(
                f"{src.file}: not submitted: {given} {key} replicas requested but {key}.parallelism.n_init_replicas = "
                f"{written}; the controller reads the TOML, so set it there"
            )
    plan, findings = _plan_and_check(spec, data, src, n_policy, n_rollout)
    if not job.checkpoint_ranks:
        job = replace(job, checkpoint_ranks=checkpoint_ranks(data))
    job = replace(job, max_keep=max_keep(data))
    missing = missing_env(spec, job, environ)
    if missing:
        raise SubmissionRefused(
            f"not submitted: {', '.join(missing)} not set in this environment (the job inherits it from sbatch)"
        )
    script = write_sbatch(spec, plan, job)
    return Submission(("sbatch", "--parsable", str(script)), plan, findings, script)


def wall_time_findings(spec: ClusterSpec, data: Mapping[str, Any], source: ConfigSource) -> list[Finding]:
    """``checkpoint_after_time_limit`` for each way the job cannot checkpoint before its time limit."""
    cat = entry("checkpoint_after_time_limit")
    problems, _ = wall_time_problems(spec, data)
    return [
        Finding(
            id=cat.id,
            severity=cat.severity,
            title=cat.title,
            explanation=p.explanation,
            evidence=[p.evidence_at(source.locate, source.file)],
            fixes=list(p.fixes),
            action=p.action,
            data=dict(p.data or {}),
        )
        for p in problems
    ]


def container_finding(
    spec: ClusterSpec,
    needed: Sequence[NeededPath],
    *,
    environ: Mapping[str, str],
    source: ConfigSource,
    probe: MountProbe | None = None,
) -> Finding | None:
    """``container_path_unmounted`` when a path the job opens is not visible in its containers, or a mount of
    the template cannot be made."""
    mounts = job_mounts(spec, environ=environ)
    missing = unmounted(needed, mounts)
    problems = mount_problems(spec, mounts, environ=environ, probe=probe)
    if not missing and not problems:
        return None
    explanation, lines, action, data = describe(spec, missing, problems)
    cat = entry("container_path_unmounted")
    evidence = []
    for m, line in zip(missing, lines, strict=False):
        at = source.evidence(m.needed.key, line) if m.needed.key else None  # the TOML line of the key
        evidence.append(Evidence(file=source.file, line=at.line if at is not None else None, text=line))
    evidence += [Evidence(file=source.file, line=None, text=line) for line in problems]
    return Finding(
        id=cat.id,
        severity=cat.severity,
        title=cat.title,
        explanation=explanation,
        evidence=evidence,
        action=action,
        data=data,
    )


def prepare_dispatch(
    spec: ClusterSpec,
    data: Mapping[str, Any],
    *,
    config_path: Path,
    launcher: str,
    launcher_args: Sequence[str] = (),
    source: ConfigSource | None = None,
    n_policy: int | None = None,
    n_rollout: int | None = None,
    needed: Sequence[NeededPath] = (),
    environ: Mapping[str, str] | None = None,
    probe: MountProbe | None = None,
) -> Submission:
    """Plan and check as dispatch_job.py will place the job; argv = ``python dispatch_job.py ...``.

    ``needed`` are the host paths the job's processes open: each must be visible in the containers, and
    the template's mounts must be possible (``a1x_supervisor.slurm.container``), else nothing is submitted.
    Without ``needed`` the containers are not checked (a cluster without pyxis, as in the real-Slurm tests)."""
    if spec.method != "cosmos-dispatch":
        raise SlurmSpecError("prepare_dispatch needs method = 'cosmos-dispatch'")
    src = source or ConfigSource(str(config_path))
    plan, findings = _plan_and_check(spec, data, src, n_policy, n_rollout)
    command = dispatch_argv(spec, plan, config_path=config_path, launcher=launcher, launcher_args=list(launcher_args))
    env = os.environ if environ is None else environ
    unseen = container_finding(spec, needed, environ=env, source=src, probe=probe) if needed else None
    if unseen is not None:
        raise SubmissionRefused(
            f"{src.file}: not submitted: {unseen.id}: {len(unseen.evidence)} path(s) or mount(s) of the job cannot "
            f"be seen in its container ({unseen.evidence[0].text})",
            [*findings, unseen],
        )
    return Submission(command.argv, plan, findings, env=dict(command.env), log_dir=command.log_dir)
