"""Cluster runs on Slurm: plan the nodes, submit (Cosmos-RL's dispatch_job.py or our sbatch script),
follow the job, and read its Slurm log layout. See docs/slurm.md.
"""

from __future__ import annotations

from supervisor.slurm.dispatch import DispatchCommand, dispatch_argv
from supervisor.slurm.executor import SlurmExecutor, SlurmJob, SubmitError, exit_status
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
    SlurmLayout,
    cancel_job,
    parse_monitor_log,
    parse_sacct,
    parse_sbatch,
    parse_scontrol_jobs,
    parse_squeue_json,
    parse_squeue_text,
    query_job,
    read_layout,
    role_logs,
)

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
    "SlurmLayout",
    "SlurmSpecError",
    "Submission",
    "SubmissionRefused",
    "SubmitError",
    "cancel_job",
    "cluster_findings",
    "dispatch_argv",
    "exit_status",
    "parse_monitor_log",
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
    "read_layout",
    "render_sbatch",
    "role_logs",
    "write_sbatch",
]
