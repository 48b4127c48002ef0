"""Runs the Alpamayo RL pipeline as supervised stages, detached from any client.

Public names (imported lazily, so ``import a1x_supervisor.x`` stays cheap):
``RunSpec``, ``load_spec``, ``SpecError`` (the run spec); ``StageSpec``, ``Command``,
``VerifyResult``, ``StageError`` (what a stage runs; one module per stage in ``a1x_supervisor.stages``);
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
    "RunSpec": "a1x_supervisor.spec",
    "load_spec": "a1x_supervisor.spec",
    "SpecError": "a1x_supervisor.spec",
    "StageSpec": "a1x_supervisor.stage",
    "Command": "a1x_supervisor.stage",
    "VerifyResult": "a1x_supervisor.stage",
    "StageError": "a1x_supervisor.stage",
    "Pipeline": "a1x_supervisor.pipeline",
    "register_pipeline": "a1x_supervisor.pipeline",
    "build_stages": "a1x_supervisor.pipeline",
    "stage_names": "a1x_supervisor.pipeline",
    "select_stages": "a1x_supervisor.pipeline",
    "Executor": "a1x_supervisor.executor",
    "LocalExecutor": "a1x_supervisor.executor",
    "ProcessHandle": "a1x_supervisor.executor",
    "Supervisor": "a1x_supervisor.daemon",
    "Plan": "a1x_supervisor.daemon",
    "start_daemon": "a1x_supervisor.launch",
    "new_run_dir": "a1x_supervisor.launch",
    "prepare_run_dir": "a1x_supervisor.launch",
    "SupervisorClient": "a1x_supervisor.protocol",
    "NoSupervisor": "a1x_supervisor.protocol",
    "preflight": "a1x_supervisor.preflight",
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
    from a1x_supervisor.daemon import Plan, Supervisor
    from a1x_supervisor.executor import Executor, LocalExecutor, ProcessHandle
    from a1x_supervisor.launch import new_run_dir, prepare_run_dir, start_daemon
    from a1x_supervisor.pipeline import Pipeline, build_stages, register_pipeline, select_stages, stage_names
    from a1x_supervisor.preflight import preflight
    from a1x_supervisor.protocol import NoSupervisor, SupervisorClient
    from a1x_supervisor.spec import RunSpec, SpecError, load_spec
    from a1x_supervisor.stage import Command, StageError, StageSpec, VerifyResult


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'a1x_supervisor' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
