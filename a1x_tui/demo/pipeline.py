"""The demo's pipeline, for the real supervisor: the same ``StageSpec`` contract as the real pipeline,
added to the supervisor's pipelines by ``register()`` (``a1x_supervisor.pipeline``: the supervisor imports
no application; the commands that read stage names or start a supervisor register it first).

Stage names are a subset of the real ones (``--from``, ``--only`` and restart work unchanged);
each runs one program of ``a1x_tui.demo.programs`` and is judged by its ``verify()``. The train
stage is of kind ``train``, so the supervisor's train monitor follows its logs, polls the live
diagnostics and judges it by steps and a complete checkpoint, exactly as for ``cosmos-rl``.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

from a1x_supervisor.cosmos_logs import expected_ranks, latest_complete_checkpoint
from a1x_supervisor.pipeline import Pipeline, register_pipeline
from a1x_supervisor.progress import HfDownload, LastLine, TrainSteps
from a1x_supervisor.rundir import RunDir
from a1x_supervisor.spec import RunSpec
from a1x_supervisor.stage import Command, StageError, StageSpec, VerifyResult
from a1x_supervisor.stages.train import verify_trained

DEMO_STAGES: tuple[str, ...] = ("download", "convert", "configure", "train", "export", "verify")
OPTIONS_FILE = "demo.json"  # in the run directory: {"speed": 1.0}
_REPO_ROOT = Path(__file__).resolve().parents[2]


def demo_options(rundir: RunDir) -> dict[str, Any]:
    try:
        data = json.loads((rundir.run_dir / OPTIONS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def stage_names(spec: RunSpec) -> list[str]:
    return list(DEMO_STAGES)


def build_stages(spec: RunSpec, rundir: RunDir, outputs: MutableMapping[str, str]) -> list[StageSpec]:
    """Every demo stage; ``outputs`` is shared with the supervisor (the checkpoint, the export folder)."""
    from a1x_tui.demo.programs import configure as configure_program
    from a1x_tui.demo.programs import convert as convert_program
    from a1x_tui.demo.programs import download as download_program
    from a1x_tui.demo.programs import export as export_program

    paths = spec.paths
    log_dir = rundir.log_dir(spec)
    env = {"PYTHONPATH": str(_REPO_ROOT)}

    def speed() -> str:
        return repr(float(demo_options(rundir).get("speed", 1.0)))

    def program(name: str, *args: str, label: str) -> Command:
        argv = (sys.executable, "-m", f"a1x_tui.demo.programs.{name}", *args)
        return Command(argv=argv, cwd=rundir.run_dir, env=env, label=label)

    def ranks() -> int | None:
        return expected_ranks(rundir.train_toml)

    def verify_download() -> VerifyResult:
        record = _read_json(paths.pai_dir / download_program.MARKER)
        if not isinstance(record, dict):
            return VerifyResult.failed(f"{paths.pai_dir}: no demo download")
        return VerifyResult.passed(f"{record.get('files')} files for chunk(s) {record.get('chunk_ids')}")

    def verify_convert() -> VerifyResult:
        record = _read_json(paths.model_dir / convert_program.MARKER)
        if not isinstance(record, dict) or record.get("alpamayo_model") != spec.alpamayo_model:
            return VerifyResult.failed(f"{paths.model_dir}: no demo conversion of {spec.alpamayo_model}")
        return VerifyResult.passed(f"{paths.model_dir} holds {spec.alpamayo_model}")

    def verify_configure() -> VerifyResult:
        record = _read_json(rundir.config_dir / configure_program.RECORD)
        if not isinstance(record, dict) or not rundir.train_toml.is_file():
            return VerifyResult.failed(f"{rundir.train_toml} is missing")
        if record.get("spec_digest") != spec.digest():
            return VerifyResult.failed("the run spec changed since the TOML was rendered")
        return VerifyResult.passed(f"{rundir.train_toml}")

    def prepare_train() -> list[Command]:
        if not rundir.train_toml.is_file():
            raise StageError(f"{rundir.train_toml} is missing: run the configure stage first")
        log_dir.mkdir(parents=True, exist_ok=True)
        args = ("--config", str(rundir.train_toml), "--log-dir", str(log_dir), "--run-dir", str(rundir.run_dir))
        return [program("launcher", *args, "--speed", speed(), label="simulated cosmos-rl GRPO training")]

    def current_export() -> VerifyResult:
        ckpt = latest_complete_checkpoint(log_dir, ranks())
        if ckpt is None:
            return VerifyResult.failed(f"no complete checkpoint under {log_dir} to export")
        for folder in sorted(paths.export_dir.glob("step_*"), reverse=True):
            provenance = _read_json(folder / export_program.PROVENANCE)
            if isinstance(provenance, dict) and provenance.get("checkpoint") == str(ckpt.path):
                outputs["checkpoint"] = str(ckpt.path)
                outputs["export_dir"] = str(folder)
                return VerifyResult.passed(f"{folder} exports {ckpt.path}")
        return VerifyResult.failed(f"no export of {ckpt.path} under {paths.export_dir}")

    def verify_exported() -> VerifyResult:
        result = current_export()
        if not result.ok:
            return result
        folder = Path(outputs["export_dir"])
        missing = [n for n in ("config.json", export_program.PROVENANCE) if not (folder / n).is_file()]
        if missing:
            return VerifyResult.failed(f"{folder}: {', '.join(missing)} missing")
        return VerifyResult.passed(f"{folder}: config.json, 3 shards and provenance present")

    model = spec.alpamayo_model
    chunks = [str(c) for c in spec.data.chunk_ids]
    stages = [
        StageSpec(
            name="download",
            title="download PAI motion chunks (simulated)",
            prepare=lambda: [
                program(
                    "download",
                    "--output-dir",
                    str(paths.pai_dir),
                    "--chunk-ids",
                    *chunks,
                    "--speed",
                    speed(),
                    label="simulated download_pai.py",
                )
            ],
            verify=verify_download,
            progress=HfDownload,
        ),
        StageSpec(
            name="convert",
            title=f"convert {model} (simulated)",
            prepare=lambda: [
                program(
                    "convert",
                    "--output-dir",
                    str(paths.model_dir),
                    "--alpamayo-model",
                    model,
                    "--speed",
                    speed(),
                    label="simulated convert_release_config_to_training.py",
                )
            ],
            verify=verify_convert,
            progress=LastLine,
        ),
        StageSpec(
            name="configure",
            title="render the training TOML",
            prepare=lambda: [program("configure", str(rundir.run_dir), label="render the training TOML")],
            verify=verify_configure,
            progress=LastLine,
        ),
        StageSpec(
            name="train",
            title="GRPO training (simulated cosmos-rl)",
            prepare=prepare_train,
            verify=lambda: verify_trained(log_dir, ranks=ranks()),
            progress=TrainSteps,
            kind="train",
            gpu_agent=False,  # its GPUs are simulated (a1x_tui/demo/gpu.py): none of this machine is used
        ),
        StageSpec(
            name="export",
            title="export the latest complete checkpoint (simulated)",
            prepare=lambda: [
                program(
                    "export",
                    "--log-dir",
                    str(log_dir),
                    "--export-dir",
                    str(paths.export_dir),
                    "--ranks",
                    str(ranks() or 1),
                    "--speed",
                    speed(),
                    label="simulated convert_cosmos_rl_checkpoint.py",
                )
            ],
            verify=current_export,
            progress=LastLine,
        ),
        StageSpec(
            name="verify",
            title="check the exported checkpoint",
            prepare=lambda: [],
            verify=verify_exported,
            kind="check",
            skip_if_verified=False,
        ),
    ]
    return stages


PIPELINE = Pipeline("demo", stage_names, build_stages)

# The closed-loop demo (``a1x-tui demo --closed-loop``): the alpagym pipeline's train, export and verify,
# judged by the real stages' checks (a1x_supervisor.stages.alpagym), with the demo's AlpaGym host.
CLOSED_LOOP_STAGES: tuple[str, ...] = ("convert", "train", "export", "verify")


def closed_loop_stage_names(spec: RunSpec) -> list[str]:
    return list(CLOSED_LOOP_STAGES)


def build_closed_loop_stages(spec: RunSpec, rundir: RunDir, outputs: MutableMapping[str, str]) -> list[StageSpec]:
    from a1x_supervisor.stages.alpagym import latest_run, run_folders, runs_root
    from a1x_supervisor.stages.alpagym.convert import verify_alpagym_checkpoint
    from a1x_supervisor.stages.alpagym.export import PROVENANCE, verify_inference_export
    from a1x_supervisor.stages.alpagym.train import verify_alpagym_trained

    paths, env = spec.paths, {"PYTHONPATH": str(_REPO_ROOT)}

    def speed() -> str:
        return repr(float(demo_options(rundir).get("speed", 1.0)))

    def program(*args: str, label: str) -> Command:
        argv = (sys.executable, "-m", "a1x_tui.demo.programs.closed_loop", *args)
        return Command(argv=argv, cwd=rundir.run_dir, env=env, label=label)

    def verify_train() -> VerifyResult:
        result = verify_alpagym_trained(latest_run(rundir), runs_root(rundir))
        if result.ok:
            outputs["checkpoint"] = str(result.data["checkpoint"])
        return result

    def prepare_export() -> list[Command]:
        trained = verify_train()
        if not trained.ok:
            raise StageError(f"nothing to export: {trained.reason}")
        out = paths.export_dir / f"step_{trained.data['total']}-{time.strftime('%Y%m%d-%H%M%S')}"
        outputs["export_dir"] = str(out)
        return [program("--export", str(out), label="simulated convert_alpagym_checkpoint_to_inference.py")]

    def verify_export() -> VerifyResult:
        folder = outputs.get("export_dir")
        if not folder:
            return VerifyResult.failed("nothing exported yet")
        return verify_inference_export(Path(folder), source=None, provenance=False)

    def record_export() -> None:
        record = {"source": outputs.get("checkpoint"), "run_dir": str(rundir.run_dir)}
        (Path(outputs["export_dir"]) / PROVENANCE).write_text(json.dumps(record) + "\n", encoding="utf-8")

    def verify_final() -> VerifyResult:
        folder, source = outputs.get("export_dir"), outputs.get("checkpoint")
        if not folder:
            return VerifyResult.failed("nothing exported")
        return verify_inference_export(Path(folder), source=Path(source) if source else None)

    return [
        StageSpec(
            name="convert",
            title="convert to the AlpaGym checkpoint (simulated)",
            prepare=lambda: [program("--convert", str(paths.model_dir), label="simulated conversion")],
            verify=lambda: verify_alpagym_checkpoint(paths.model_dir),
            progress=LastLine,
        ),
        StageSpec(
            name="train",
            title="closed-loop GRPO training (simulated AlpaGym host)",
            prepare=lambda: [
                program("--run-root", str(runs_root(rundir)), "--model", str(paths.model_dir), "--speed", speed(),
                        label="simulated python -m alpagym_host.cli")
            ],
            verify=verify_train,
            progress=TrainSteps,
            kind="train",
            gpu_agent=False,  # a demo uses no GPU of this machine; this one simulates none
            run_folders=lambda: run_folders(rundir),
        ),
        StageSpec(
            name="export",
            title="export the final step to the inference format (simulated)",
            prepare=prepare_export,
            verify=verify_export,
            progress=LastLine,
            after_success=record_export,
        ),
        StageSpec(
            name="verify",
            title="check the inference-format export",
            prepare=lambda: [],
            verify=verify_final,
            kind="check",
            skip_if_verified=False,
        ),
    ]


CLOSED_LOOP_PIPELINE = Pipeline("demo-alpagym", closed_loop_stage_names, build_closed_loop_stages)


def register() -> None:
    """Specs with ``pipeline = "demo"`` or ``"demo-alpagym"`` get these stages in this process (and in a
    daemon it forks)."""
    register_pipeline(PIPELINE)
    register_pipeline(CLOSED_LOOP_PIPELINE)
