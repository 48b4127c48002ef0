"""Runs the Alpamayo RL pipeline as supervised stages, detached from any client.

Public names (imported lazily, so ``import supervisor.x`` stays cheap):
``RunSpec``, ``load_spec``, ``SpecError`` (the run spec); ``StageSpec``, ``Command``,
``VerifyResult``, ``StageError`` (what a stage runs; one module per stage in ``supervisor.stages``);
``build_stages``, ``stage_names``, ``select_stages``, ``Pipeline``, ``register_pipeline`` (the
pipelines); ``Executor``, ``LocalExecutor``, ``ProcessHandle`` (how a stage runs); ``Supervisor``,
``Plan`` (the daemon); ``start_daemon``, ``new_run_dir``, ``prepare_run_dir`` (detaching);
``SupervisorClient``, ``NoSupervisor`` (the socket); ``preflight`` (the machine against a spec).
See docs/supervisor.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "RunSpec": "supervisor.spec",
    "load_spec": "supervisor.spec",
    "SpecError": "supervisor.spec",
    "StageSpec": "supervisor.stage",
    "Command": "supervisor.stage",
    "VerifyResult": "supervisor.stage",
    "StageError": "supervisor.stage",
    "Pipeline": "supervisor.pipeline",
    "register_pipeline": "supervisor.pipeline",
    "build_stages": "supervisor.pipeline",
    "stage_names": "supervisor.pipeline",
    "select_stages": "supervisor.pipeline",
    "Executor": "supervisor.executor",
    "LocalExecutor": "supervisor.executor",
    "ProcessHandle": "supervisor.executor",
    "Supervisor": "supervisor.daemon",
    "Plan": "supervisor.daemon",
    "start_daemon": "supervisor.launch",
    "new_run_dir": "supervisor.launch",
    "prepare_run_dir": "supervisor.launch",
    "SupervisorClient": "supervisor.protocol",
    "NoSupervisor": "supervisor.protocol",
    "preflight": "supervisor.preflight",
}

__all__ = [
    "Command",
    "Executor",
    "LocalExecutor",
    "NoSupervisor",
    "Pipeline",
    "Plan",
    "ProcessHandle",
    "RunSpec",
    "SpecError",
    "StageError",
    "StageSpec",
    "Supervisor",
    "SupervisorClient",
    "VerifyResult",
    "build_stages",
    "load_spec",
    "new_run_dir",
    "preflight",
    "prepare_run_dir",
    "register_pipeline",
    "select_stages",
    "stage_names",
    "start_daemon",
]

if TYPE_CHECKING:
    from supervisor.daemon import Plan, Supervisor
    from supervisor.executor import Executor, LocalExecutor, ProcessHandle
    from supervisor.launch import new_run_dir, prepare_run_dir, start_daemon
    from supervisor.pipeline import Pipeline, build_stages, register_pipeline, select_stages, stage_names
    from supervisor.preflight import preflight
    from supervisor.protocol import NoSupervisor, SupervisorClient
    from supervisor.spec import RunSpec, SpecError, load_spec
    from supervisor.stage import Command, StageError, StageSpec, VerifyResult


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'supervisor' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
