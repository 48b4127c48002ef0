"""Cluster runs on Slurm: plan the nodes, submit (Cosmos-RL's dispatch_job.py or our sbatch script),
and follow the job (its Slurm log layout is read by ``diagnostics.parsing``). See docs/slurm.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "ClusterSpec": "supervisor.slurm.spec",
    "ConfigSource": "supervisor.slurm.plan",
    "CosmosRev": "supervisor.slurm.plan",
    "DispatchCommand": "supervisor.slurm.dispatch",
    "JobInfo": "supervisor.slurm.tracking",
    "NodeAssignment": "supervisor.slurm.plan",
    "NodePlan": "supervisor.slurm.plan",
    "Packing": "supervisor.slurm.plan",
    "PlanError": "supervisor.slurm.plan",
    "ReplicaSlot": "supervisor.slurm.plan",
    "RoleShape": "supervisor.slurm.plan",
    "SbatchJob": "supervisor.slurm.sbatch",
    "SlurmExecutor": "supervisor.slurm.executor",
    "SlurmJob": "supervisor.slurm.executor",
    "SlurmSpecError": "supervisor.slurm.spec",
    "Submission": "supervisor.slurm.submit",
    "SubmissionRefused": "supervisor.slurm.submit",
    "SubmitError": "supervisor.slurm.executor",
    "cancel_job": "supervisor.slurm.tracking",
    "cluster_findings": "supervisor.slurm.plan",
    "dispatch_argv": "supervisor.slurm.dispatch",
    "exit_status": "supervisor.slurm.executor",
    "parse_sacct": "supervisor.slurm.tracking",
    "parse_sbatch": "supervisor.slurm.tracking",
    "parse_scontrol_jobs": "supervisor.slurm.tracking",
    "parse_squeue_json": "supervisor.slurm.tracking",
    "parse_squeue_text": "supervisor.slurm.tracking",
    "plan_nodes": "supervisor.slurm.plan",
    "prefetch_need": "supervisor.slurm.plan",
    "prepare_dispatch": "supervisor.slurm.submit",
    "prepare_sbatch": "supervisor.slurm.submit",
    "query_job": "supervisor.slurm.tracking",
    "render_sbatch": "supervisor.slurm.sbatch",
    "resume_text": "supervisor.slurm.executor",
    "write_sbatch": "supervisor.slurm.sbatch",
}

__all__ = [
    "ClusterSpec",
    "ConfigSource",
    "CosmosRev",
    "DispatchCommand",
    "JobInfo",
    "NodeAssignment",
    "NodePlan",
    "Packing",
    "PlanError",
    "ReplicaSlot",
    "RoleShape",
    "SbatchJob",
    "SlurmExecutor",
    "SlurmJob",
    "SlurmSpecError",
    "Submission",
    "SubmissionRefused",
    "SubmitError",
    "cancel_job",
    "cluster_findings",
    "dispatch_argv",
    "exit_status",
    "parse_sacct",
    "parse_sbatch",
    "parse_scontrol_jobs",
    "parse_squeue_json",
    "parse_squeue_text",
    "plan_nodes",
    "prefetch_need",
    "prepare_dispatch",
    "prepare_sbatch",
    "query_job",
    "render_sbatch",
    "resume_text",
    "write_sbatch",
]

if TYPE_CHECKING:
    from supervisor.slurm.dispatch import DispatchCommand, dispatch_argv
    from supervisor.slurm.executor import SlurmExecutor, SlurmJob, SubmitError, exit_status, resume_text
    from supervisor.slurm.plan import (
        ConfigSource,
        CosmosRev,
        NodeAssignment,
        NodePlan,
        Packing,
        PlanError,
        ReplicaSlot,
        RoleShape,
        cluster_findings,
        plan_nodes,
        prefetch_need,
    )
    from supervisor.slurm.sbatch import SbatchJob, render_sbatch, write_sbatch
    from supervisor.slurm.spec import ClusterSpec, SlurmSpecError
    from supervisor.slurm.submit import Submission, SubmissionRefused, prepare_dispatch, prepare_sbatch
    from supervisor.slurm.tracking import (
        JobInfo,
        cancel_job,
        parse_sacct,
        parse_sbatch,
        parse_scontrol_jobs,
        parse_squeue_json,
        parse_squeue_text,
        query_job,
    )


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'supervisor.slurm' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
