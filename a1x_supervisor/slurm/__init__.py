"""Cluster runs on Slurm: plan the nodes, submit (Cosmos-RL's dispatch_job.py or our sbatch script),
and follow the job (its Slurm log layout is read by ``a1x_diagnostics.parsing``). See docs/slurm.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "ClusterSpec": "a1x_supervisor.slurm.spec",
    "ConfigSource": "a1x_supervisor.slurm.plan",
    "CosmosRev": "a1x_supervisor.slurm.plan",
    "DispatchCommand": "a1x_supervisor.slurm.dispatch",
    "JobInfo": "a1x_supervisor.slurm.tracking",
    "NodeAssignment": "a1x_supervisor.slurm.plan",
    "NodePlan": "a1x_supervisor.slurm.plan",
    "Packing": "a1x_supervisor.slurm.plan",
    "PlanError": "a1x_supervisor.slurm.plan",
    "ReplicaSlot": "a1x_supervisor.slurm.plan",
    "RoleShape": "a1x_supervisor.slurm.plan",
    "SbatchJob": "a1x_supervisor.slurm.sbatch",
    "SlurmExecutor": "a1x_supervisor.slurm.executor",
    "SlurmJob": "a1x_supervisor.slurm.executor",
    "SlurmSpecError": "a1x_supervisor.slurm.spec",
    "Submission": "a1x_supervisor.slurm.submit",
    "SubmissionRefused": "a1x_supervisor.slurm.submit",
    "SubmitError": "a1x_supervisor.slurm.executor",
    "cancel_job": "a1x_supervisor.slurm.tracking",
    "cluster_findings": "a1x_supervisor.slurm.plan",
    "dispatch_argv": "a1x_supervisor.slurm.dispatch",
    "exit_status": "a1x_supervisor.slurm.executor",
    "parse_sacct": "a1x_supervisor.slurm.tracking",
    "parse_sbatch": "a1x_supervisor.slurm.tracking",
    "parse_scontrol_jobs": "a1x_supervisor.slurm.tracking",
    "parse_squeue_json": "a1x_supervisor.slurm.tracking",
    "parse_squeue_text": "a1x_supervisor.slurm.tracking",
    "plan_nodes": "a1x_supervisor.slurm.plan",
    "prefetch_need": "a1x_supervisor.slurm.plan",
    "prepare_dispatch": "a1x_supervisor.slurm.submit",
    "prepare_sbatch": "a1x_supervisor.slurm.submit",
    "query_job": "a1x_supervisor.slurm.tracking",
    "render_sbatch": "a1x_supervisor.slurm.sbatch",
    "resume_text": "a1x_supervisor.slurm.executor",
    "write_sbatch": "a1x_supervisor.slurm.sbatch",
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
    from a1x_supervisor.slurm.dispatch import DispatchCommand, dispatch_argv
    from a1x_supervisor.slurm.executor import SlurmExecutor, SlurmJob, SubmitError, exit_status, resume_text
    from a1x_supervisor.slurm.plan import (
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
    from a1x_supervisor.slurm.sbatch import SbatchJob, render_sbatch, write_sbatch
    from a1x_supervisor.slurm.spec import ClusterSpec, SlurmSpecError
    from a1x_supervisor.slurm.submit import Submission, SubmissionRefused, prepare_dispatch, prepare_sbatch
    from a1x_supervisor.slurm.tracking import (
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
        raise AttributeError(f"module 'a1x_supervisor.slurm' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
