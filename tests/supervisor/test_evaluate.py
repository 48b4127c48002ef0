"""The evaluate stage (docs/supervisor.md "Evaluate"): its program makes the recipe notebook's calls
(docs/reference/alpamayo-recipe.md §13) and measures minADE on inputs the tests make, with stand-ins for
the recipe's packages (eval_standins/README.md); the stage's verdict and export_regressed."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from supervisor_helpers import World

from a1x_supervisor.stages.evaluate import PROGRAM, EvalProgress, judge, read_evaluation, verify_evaluation

STANDINS = Path(__file__).resolve().parent / "eval_standins"


def _model(root: Path, name: str, **conf: Any) -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "standin_model.json").write_text(json.dumps(conf))
    return folder


def _run(root: Path, *extra: str, trained: Path, base: Path, clips: int = 3) -> subprocess.CompletedProcess[str]:
    (root / "data").mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(STANDINS), "A1X_EVAL_CALLS": str(root / "calls.jsonl")}
    argv = [
        sys.executable, str(PROGRAM), "--model", f"trained={trained}", "--model", f"base={base}",
        "--data-dir", str(root / "data"), "--clip-index", "clip_index_mini.parquet", "--clips", str(clips),
        "--out", str(root / "out" / "evaluation.json"), *extra,
    ]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)


def _calls(root: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (root / "calls.jsonl").read_text().splitlines()]


# The notebook's cells (R:X/notebooks/rl_checkpoint_inference.ipynb at b790b8e, docs/reference/alpamayo-recipe.md
# §13), one model and one clip: what the program must call, with these arguments, in this order.
NOTEBOOK_MODEL = [
    ("RLWrapperReasoningVLA.from_pretrained", ["MODEL"], {"torch_dtype": "bfloat16"}),
    ("model.cuda", [], {}),
    ("model.eval", [], {}),
    ("get_processor", ["tokenizer"], {}),
]
NOTEBOOK_CLIP = [
    ("Tensor.flatten", [0, 1], {}),  # data["image_frames"].flatten(0, 1)
    ("create_message", ["Tensor"], {}),
    (
        "processor.apply_chat_template",
        ["list"],
        {
            "tokenize": True,
            "add_generation_prompt": False,
            "continue_final_message": True,
            "return_dict": True,
            "return_tensors": "pt",
        },
    ),
    ("to_device", [["ego_history_rot", "ego_history_xyz", "tokenized_data"], "cuda"], {}),
    ("torch.no_grad", [], {}),
    ("torch.autocast", ["cuda"], {"dtype": "bfloat16"}),
    (
        "model.sample_trajectories_from_data",
        [["ego_history_rot", "ego_history_xyz", "tokenized_data"]],
        {"temperature": 0.6, "top_p": 0.98, "num_traj_samples": 6, "max_generation_length": 256, "return_extra": True},
    ),
]
OURS = {"torch.manual_seed", "torch.cuda.manual_seed_all", "torch.cuda.empty_cache", "models alive at load"}


def test_the_program_makes_the_notebooks_calls(tmp_path: Path) -> None:
    trained, base = _model(tmp_path, "export", offset=0.5), _model(tmp_path, "base", offset=0.3)
    done = _run(tmp_path, trained=trained, base=base, clips=2)
    assert done.returncode == 0, done.stderr
    calls = [(c["call"], c["args"], c["kwargs"]) for c in _calls(tmp_path) if c["call"] not in OURS]
    dataset = [
        ("PhysicalAIAVDatasetLocalInterface", [],
         {"local_dir": str(tmp_path / "data"), "clip_index_metadata": "clip_index_mini.parquet"}),
        ("get_all_clip_ids", [], {}),
        ("load_physical_aiavdataset", ["clip-a"], {"avdi": "PhysicalAIAVDatasetLocalInterface"}),
        ("load_physical_aiavdataset", ["clip-b"], {"avdi": "PhysicalAIAVDatasetLocalInterface"}),
    ]
    expected = list(dataset)
    for model in (trained, base):
        expected += [(n, [str(model)] if a == ["MODEL"] else a, k) for n, a, k in NOTEBOOK_MODEL]
        expected += NOTEBOOK_CLIP * 2
    assert calls == expected
    seeds = [c["args"][0] for c in _calls(tmp_path) if c["call"] == "torch.manual_seed"]
    assert seeds == [0, 1, 0, 1]  # each clip sampled from the same seed for both models (ours)
    # ours too: the first model is gone and the GPU cache emptied before the second loads (one GPU holds one)
    assert [c["args"][0] for c in _calls(tmp_path) if c["call"] == "models alive at load"] == [0, 0]
    names = [c["call"] for c in _calls(tmp_path)]
    loads = [i for i, n in enumerate(names) if n == "RLWrapperReasoningVLA.from_pretrained"]
    assert "torch.cuda.empty_cache" in names[loads[0] : loads[1]]


def test_min_ade_per_clip_and_in_aggregate(tmp_path: Path) -> None:
    # sample k lies offset * (k + 1) beside the ground truth: its ADE is exactly that, the minADE the offset
    trained, base = _model(tmp_path, "export", offset=0.5), _model(tmp_path, "base", offset=0.3)
    done = _run(tmp_path, "--samples", "4", trained=trained, base=base)
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / "out" / "evaluation.json").read_text())
    assert data["clip_ids"] == ["clip-a", "clip-b", "clip-c"]
    for label, offset in (("trained", 0.5), ("base", 0.3)):
        model = data["models"][label]
        for row in model["clips"]:
            assert row["min_ade_m"] == pytest.approx(offset)
            assert row["mean_ade_m"] == pytest.approx(offset * (1 + 2 + 3 + 4) / 4)
            assert "reasoning_chars" not in row  # motion: no --reasoning
        assert model["aggregate"]["min_ade_m"] == pytest.approx(offset) and model["aggregate"]["clips"] == 3
    assert "[evaluate] trained: minADE 0.500 m over 3 clip(s)" in done.stdout


def test_the_reasoning_length_for_joint_runs(tmp_path: Path) -> None:
    trained = _model(tmp_path, "export", offset=0.2, cot="The light is red: stop behind the line.")
    base = _model(tmp_path, "base", offset=0.2, cot="")
    assert _run(tmp_path, "--reasoning", trained=trained, base=base).returncode == 0
    data = json.loads((tmp_path / "out" / "evaluation.json").read_text())
    t, b = data["models"]["trained"]["clips"][0], data["models"]["base"]["clips"][0]
    assert (t["reasoning_words"], t["reasoning_chars"], t["reasoning_empty"]) == (8, 39, 0)
    assert (b["reasoning_words"], b["reasoning_empty"]) == (0, 6)


@pytest.mark.parametrize(
    ("conf", "code", "message"),
    [
        ({"fail_load": "CUDA error: no kernel image is available"}, 3,
         "the trained model at {trained} does not load: RuntimeError: CUDA error: no kernel image is available"),
        ({"offset": 0.1, "nan_at": [1, 2, 10]}, 4,
         "the trained model gave a non-finite trajectory for clip clip-b (sample 2, step 10: [5.5, nan])"),
    ],
)
def test_a_model_that_fails_fails_the_stage_with_the_error(
    tmp_path: Path, conf: dict[str, Any], code: int, message: str
) -> None:
    trained, base = _model(tmp_path, "export", **conf), _model(tmp_path, "base", offset=0.3)
    done = _run(tmp_path, trained=trained, base=base)
    assert done.returncode == code
    assert done.stderr.strip().splitlines()[-1] == "evaluate failed: " + message.format(trained=trained)
    assert "Traceback" not in done.stderr and not (tmp_path / "out" / "evaluation.json").exists()


def test_a_missing_model_folder_does_not_load(tmp_path: Path) -> None:
    done = _run(tmp_path, trained=tmp_path / "nope", base=_model(tmp_path, "base"))
    assert done.returncode == 3 and "the trained model at" in done.stderr and "does not load: OSError" in done.stderr


# --- the stage's verdict --------------------------------------------------------------------------------------


def _evaluation(trained: list[float], base: list[float], *, export: str = "/x/export", words: bool = False) -> dict:
    ids = [f"clip-{i}" for i in range(len(trained))]

    def rows(values: list[float], w: float) -> list[dict[str, Any]]:
        return [
            {"clip_id": c, "min_ade_m": v, "mean_ade_m": v * 2, **({"reasoning_words": w} if words else {})}
            for c, v in zip(ids, values, strict=True)
        ]

    return {
        "settings": {"clips_requested": len(ids)},
        "clip_ids": ids,
        "models": {
            "trained": {"path": export, "clips": rows(trained, 30.0)},
            "base": {"path": "/x/base", "clips": rows(base, 25.0)},
        },
    }


def _write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "evaluation.json"
    path.write_text(json.dumps(data))
    return path


def test_a_trained_model_worse_than_its_base_is_export_regressed_with_both_figures(tmp_path: Path) -> None:
    path = _write(tmp_path, _evaluation([1.2, 1.4], [1.0, 1.0], words=True))
    result = verify_evaluation(path, export_dir=Path("/x/export"), base_dir=Path("/x/base"), clips=2, tolerance=0.1)
    assert result.ok  # the stage succeeds; the warning says what it measured
    assert result.reason.startswith("minADE 1.300 m trained vs 1.000 m base over 2 clip(s) (+30.0%)")
    assert "reasoning 30 vs 25 words" in result.reason
    (finding,) = result.data["findings"]
    assert finding["id"] == "export_regressed" and finding["severity"] == "warning"
    assert finding["data"]["trained_min_ade_m"] == 1.3 and finding["data"]["base_min_ade_m"] == 1.0
    assert "1.300 m against 1.000 m" in finding["explanation"]
    assert finding["evidence"][0]["text"] == "clip clip-1: minADE 1.400 m trained, 1.000 m base"


@pytest.mark.parametrize(("trained", "regressed"), [(1.05, False), (0.8, False), (1.11, True)])
def test_the_tolerance(tmp_path: Path, trained: float, regressed: bool) -> None:
    result = judge(_evaluation([trained], [1.0]), path=tmp_path / "e.json", tolerance=0.1)
    assert bool(result.data["findings"]) is regressed


def test_an_evaluation_of_another_export_or_clip_count_does_not_verify(tmp_path: Path) -> None:
    path = _write(tmp_path, _evaluation([1.0], [1.0], export="/x/old_export"))
    result = verify_evaluation(path, export_dir=Path("/x/export"), base_dir=Path("/x/base"), clips=1, tolerance=0.1)
    assert not result.ok and "evaluates /x/old_export, not the export /x/export" in result.reason
    path = _write(tmp_path, _evaluation([1.0], [1.0]))
    assert not verify_evaluation(path, export_dir=Path("/x/export"), base_dir=Path("/x/base"), clips=8,
                                 tolerance=0.1).ok


def test_a_non_finite_figure_or_missing_model_does_not_verify(tmp_path: Path) -> None:
    data = _evaluation([1.0, 1.0], [1.0, 1.0])
    data["models"]["base"]["clips"][1]["min_ade_m"] = math.nan
    assert "not a finite number for clip clip-1" in str(read_evaluation(_write(tmp_path, data)))
    del data["models"]["base"]
    assert "no result for the trained and the base model" in str(read_evaluation(_write(tmp_path, data)))


def test_progress_counts_the_clips_of_both_models() -> None:
    progress = EvalProgress()
    first = progress.feed("[evaluate] trained clip 3/8 clip-c: minADE 1.000 m")
    assert first is not None and (first.current, first.total) == (3, 16)
    later = progress.feed("[evaluate] base clip 2/8 clip-b: minADE 1.000 m")
    assert later is not None and (later.current, later.total, later.text) == (10, 16, "base model: clip 2/8")


# --- the stage in a supervised run (the fake world of supervisor_helpers, stand-ins in its venv) ----------------


def test_skip_evaluate_then_a_regressed_export_then_a_model_that_does_not_load(world: World) -> None:
    spec = world.write_spec()
    done = world.cli("run", "--spec", str(spec), "--run-dir", str(world.run_dir), "--skip-preflight",
                     "--skip", "evaluate")
    assert done.returncode == 0, done.stdout + done.stderr
    state = world.state()
    assert state["status"] == "succeeded" and state["plan"]["skip"] == ["evaluate"]
    assert world.stage("evaluate")["status"] == "skipped" and world.stage("evaluate")["reason"] == "left out (--skip)"
    assert not (world.run_dir / "evaluate").exists()

    # the base model drives better than the export (stand-in offsets 0.1 against 0.25): a warning, not a failure
    (world.root / "model" / "standin_model.json").write_text(json.dumps({"offset": 0.1}))
    done = world.cli("run", "--run-dir", str(world.run_dir), "--skip-preflight", "--only", "evaluate")
    assert done.returncode == 0, done.stdout + done.stderr
    evaluate = world.stage("evaluate")
    assert evaluate["status"] == "succeeded"
    assert evaluate["reason"].startswith("minADE 0.250 m trained vs 0.100 m base over 4 clip(s) (+150.0%)")
    assert "export_regressed" in evaluate["reason"]
    raised = [json.loads(line) for line in (world.run_dir / "findings.jsonl").read_text().splitlines()]
    (finding,) = [r["finding"] for r in raised if r.get("change") == "raised"]
    assert finding["id"] == "export_regressed" and finding["data"]["base_min_ade_m"] == 0.1
    assert (world.run_dir / "evaluate" / "evaluation.json").is_file()

    # a base model that does not load fails the stage with the program's line
    (world.root / "model" / "standin_model.json").write_text(json.dumps({"fail_load": "out of memory"}))
    done = world.cli("run", "--run-dir", str(world.run_dir), "--skip-preflight", "--only", "evaluate")
    assert done.returncode == 1
    evaluate = world.stage("evaluate")
    assert evaluate["status"] == "failed" and evaluate["exit_code"] == 3
    assert evaluate["reason"].endswith(
        f"exited with code 3: evaluate failed: the base model at {world.root / 'model'} does not load: "
        "RuntimeError: out of memory"
    )
