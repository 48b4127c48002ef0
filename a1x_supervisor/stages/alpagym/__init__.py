"""The alpagym pipeline: closed-loop training with NVIDIA AlpaGym, one module per stage
(docs/supervisor.md "The alpagym pipeline"; the facts and their upstream lines: docs/reference/alpagym.md).

``env`` (``uv sync --all-packages``), ``download`` (the release checkpoint), ``convert`` (to AlpaGym's
format), ``p2p`` (the NCCL peer-to-peer check, local runs), ``train`` (``python -m alpagym_host.cli``,
followed in the AlpaGym run folder it makes; Stop also removes AlpaSim's containers), ``export`` (to
the inference format) and ``verify``. ``preflight`` checks the machine before any of them.

For the preflight and the closed-loop demo: ``ALPAMAYO_1_5``, the model trained, and the AlpaGym run
folders of a run (``runs_root``, ``run_folders``, ``latest_run``).
"""

from __future__ import annotations

from a1x_supervisor.spec import RunSpec
from a1x_supervisor.stage import StageSpec
from a1x_supervisor.stages.alpagym._common import ALPAMAYO_1_5, latest_run, run_folders, runs_root
from a1x_supervisor.stages.context import StageContext

__all__ = ["ALPAMAYO_1_5", "build", "latest_run", "run_folders", "runs_root", "stage_names"]


def stage_names(spec: RunSpec) -> list[str]:
    """The stages in order; ``p2p`` only where the GPUs are this node's (deploy = "local")."""
    names = ["env", "download", "convert", "p2p", "train", "export", "verify"]
    if spec.alpagym is not None and spec.alpagym.deploy == "slurm":
        names.remove("p2p")
    return names


def build(ctx: StageContext) -> list[StageSpec]:
    from a1x_supervisor.stages.alpagym import convert, env, export, p2p, train

    makers = {
        "env": env.stage,
        "download": convert.download_stage,
        "convert": convert.stage,
        "p2p": p2p.stage,
        "train": train.stage,
        "export": export.stage,
        "verify": export.verify_stage,
    }
    return [makers[name](ctx) for name in stage_names(ctx.spec)]
