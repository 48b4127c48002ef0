"""A demo run's spec and run directory: everything under one demo workspace, nothing downloaded.

The demo workspace (default ``$XDG_CACHE_HOME/a1x-tui/demo``, i.e. ``~/.cache/a1x-tui/demo``) holds
the stand-in data, model, checkpoints and exports, and ``runs/<YYYYmmdd-HHMMSS>-motion/`` run
directories, which the start screen of ``a1x-tui`` lists with the other runs.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from a1x_supervisor.spec import PathsSpec, RunSpec, SupervisorSpec
from a1x_tui.demo.pipeline import DEMO_STAGES, OPTIONS_FILE

__all__ = ["DEMO_STAGES", "DemoOptions", "default_root", "demo_spec", "prepare_demo_run"]


def default_root() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(cache) / "a1x-tui" / "demo"


@dataclass(frozen=True, slots=True)
class DemoOptions:
    root: Path
    speed: float = 1.0  # 2.0 plays the training scenario twice as fast
    closed_loop: bool = False  # the AlpaGym scenario (pipeline "demo-alpagym") instead of the open-loop one


def demo_spec(root: Path, *, closed_loop: bool = False) -> RunSpec:
    """The run spec of a demo: the ``demo`` (or ``demo-alpagym``) stage list, every path under ``root``,
    quick supervision."""
    return RunSpec(
        pipeline="demo-alpagym" if closed_loop else "demo",
        alpamayo_version="1.5",
        reward_mode="motion",
        compute="local",
        paths=PathsSpec(
            workspace=root,
            model_dir=root / ("alpamayo-1.5-10B_alpagym_ckpt" if closed_loop else "alpamayo_model_converted_from_hf"),
            pai_dir=root / "PAI_mini",
            reasoning_dir=root / "PAI_Reasoning_mini",
            grader_dir=root / "lingo_judge_model",
            output_dir=root / "alpamayo_cosmos_rl_job" / "outputs",
            export_dir=root / ("alpagym_exports" if closed_loop else "alpamayo_cosmos_rl_job/exported_model"),
        ),
        supervisor=SupervisorSpec(stop_grace_s=5.0, diagnostics_interval_s=2.0, shutdown_grace_s=20.0),
    )


def prepare_demo_run(options: DemoOptions) -> Path:
    """A fresh run directory for a demo, with its spec, ``logs/`` and the demo's options written."""
    from a1x_supervisor.launch import new_run_dir, prepare_run_dir

    root = options.root.expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    spec = demo_spec(root, closed_loop=options.closed_loop)
    run_dir = new_run_dir(spec)
    layout = prepare_run_dir(spec, run_dir)
    layout.log_dir(spec).mkdir(exist_ok=True)  # so the run folder is followable from the first stage on
    (layout.run_dir / OPTIONS_FILE).write_text(json.dumps({"speed": options.speed}) + "\n", encoding="utf-8")
    return layout.run_dir
