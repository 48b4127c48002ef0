"""The ``evaluate`` stage's program, run by the a1x_rl venv's own Python (docs/supervisor.md "Evaluate").

It runs the recipe notebook's inference (``recipes/alpamayo1_x_rl/notebooks/rl_checkpoint_inference.ipynb``,
docs/reference/alpamayo-recipe.md §13) on the first N clips of the curated index, for each model it is
given (the exported checkpoint and the converted model training started from), and writes minADE per
clip and per model, with the reasoning text's length where asked, as one JSON file.

It imports only the standard library when it loads: the recipe's packages (torch, ``alpamayo_r1``,
``alpamayo``, ``alpamayo1_x_rl``) exist only in the a1x_rl venv and are imported by ``RecipeBackend``
when it runs (the tests put stand-ins of them on the path: tests/supervisor/eval_standins). Exit codes:
0 done, 2 bad arguments or no clips, 3 a model that does not load, 4 a non-finite or malformed
trajectory (or a model that fails on a clip); the last line of the output says which, and why.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

# R §13 and the notebook's sampling call.
TEMPERATURE = 0.6
TOP_P = 0.98
MAX_GENERATION_LENGTH = 256
DEFAULT_SAMPLES = 6


class EvalError(Exception):
    """The stage fails with ``str()`` as its reason; ``code`` is the program's exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class Prediction:
    """One clip's inference: sampled future xy per sample, the ground truth, each sample's reasoning text."""

    pred_xy: Sequence[Sequence[Sequence[float]]]  # [samples][steps][2]
    gt_xy: Sequence[Sequence[float]]  # [steps][2]
    cot: Sequence[str]  # one per sample ('' when the model wrote none)


class Backend(Protocol):
    def clip_ids(self, data_dir: Path, clip_index: str) -> list[str]: ...
    def load_clip(self, clip_id: str) -> Any: ...
    def load_model(self, path: Path) -> Any: ...
    def predict(self, model: Any, clip: Any, *, samples: int, seed: int) -> Prediction: ...
    def release(self) -> None: ...  # after the caller dropped its model: free its memory


class RecipeBackend:
    """The notebook's calls, in its order (R §13): the dataset interface over the curated index, a clip's
    data, ``RLWrapperReasoningVLA.from_pretrained`` in bf16 on the GPU with ``get_processor``, the chat
    template, ``to_device``, and ``sample_trajectories_from_data`` under bf16 autocast. The seed before each
    sampling call is ours (the notebook sets none): the two models sample one clip from the same seed."""

    def __init__(self) -> None:
        import torch

        self.torch = torch
        self.avdi: Any = None

    def clip_ids(self, data_dir: Path, clip_index: str) -> list[str]:
        from alpamayo.data.pai_utils import PhysicalAIAVDatasetLocalInterface

        self.avdi = PhysicalAIAVDatasetLocalInterface(local_dir=str(data_dir), clip_index_metadata=clip_index)
        return [str(c) for c in self.avdi.get_all_clip_ids()]

    def load_clip(self, clip_id: str) -> Any:
        from alpamayo_r1.load_physical_aiavdataset import load_physical_aiavdataset

        return load_physical_aiavdataset(clip_id, avdi=self.avdi)

    def load_model(self, path: Path) -> Any:
        from alpamayo1_x_rl.models.reasoning_vla.base_model import RLWrapperReasoningVLA
        from alpamayo_r1.helper import get_processor

        model = RLWrapperReasoningVLA.from_pretrained(str(path), torch_dtype=self.torch.bfloat16).cuda().eval()
        return model, get_processor(model.tokenizer)

    def predict(self, model: Any, clip: Any, *, samples: int, seed: int) -> Prediction:
        import copy

        from alpamayo_r1.helper import create_message, to_device

        torch = self.torch
        net, processor = model
        messages = create_message(clip["image_frames"].flatten(0, 1))
        inputs = processor.apply_chat_template(
            messages,
            tokenize=True,
            add_generation_prompt=False,
            continue_final_message=True,
            return_dict=True,
            return_tensors="pt",
        )
        model_inputs = to_device(
            {
                "tokenized_data": inputs,
                "ego_history_xyz": clip["ego_history_xyz"],
                "ego_history_rot": clip["ego_history_rot"],
            },
            "cuda",
        )
        torch.manual_seed(seed)
        torch.cuda.manual_seed_all(seed)
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            pred_xyz, _pred_rot, _, extra = net.sample_trajectories_from_data(
                data=copy.deepcopy(model_inputs),
                temperature=TEMPERATURE,
                top_p=TOP_P,
                num_traj_samples=samples,
                max_generation_length=MAX_GENERATION_LENGTH,
                return_extra=True,
            )
        # [batch, sets, samples, steps, xyz] -> the first batch item and set, x and y (the notebook's slices)
        pred_xy = pred_xyz.float().cpu()[0, 0, :, :, :2].tolist()
        gt_xy = clip["ego_future_xyz"].float().cpu()[0, 0, :, :2].tolist()
        cot = extra.get("cot") if isinstance(extra, dict) else None
        # extra["cot"]: strings shaped [batch, sets, samples] (R:X/models/reasoning_vla/base_model.py)
        first = cot[0] if cot is not None else []
        texts = [str(t) for t in _flatten(first.tolist() if hasattr(first, "tolist") else first)]
        return Prediction(pred_xy=pred_xy, gt_xy=gt_xy, cot=texts)

    def release(self) -> None:
        import gc

        gc.collect()
        self.torch.cuda.empty_cache()


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flatten(v)]
    return [value]


def _check(label: str, clip_id: str, pred: Prediction) -> None:
    """Shapes as the notebook slices them, every number finite; else the stage fails saying where."""
    if not pred.pred_xy or not pred.gt_xy:
        raise EvalError(f"the {label} model gave no trajectory for clip {clip_id}", 4)
    steps = len(pred.gt_xy)
    for s, sample in enumerate(pred.pred_xy):
        if len(sample) != steps:
            raise EvalError(
                f"the {label} model's sample {s} for clip {clip_id} has {len(sample)} steps, the ground truth {steps}",
                4,
            )
        for t, point in enumerate(sample):
            if not _finite_point(point):
                raise EvalError(
                    f"the {label} model gave a non-finite trajectory for clip {clip_id} (sample {s}, step {t}: "
                    f"{list(point)[:2]})",
                    4,
                )
    for t, point in enumerate(pred.gt_xy):
        if not _finite_point(point):
            raise EvalError(f"the ground truth of clip {clip_id} is not finite (step {t}: {list(point)[:2]})", 4)


def _finite_point(point: Sequence[float]) -> bool:
    return len(point) >= 2 and all(isinstance(v, (int, float)) and math.isfinite(v) for v in point[:2])


def ades(pred: Prediction) -> list[float]:
    """Each sample's average displacement: the mean over steps of the xy distance to the ground truth."""
    out = []
    for sample in pred.pred_xy:
        dist = [math.hypot(p[0] - g[0], p[1] - g[1]) for p, g in zip(sample, pred.gt_xy, strict=True)]
        out.append(sum(dist) / len(dist))
    return out


def clip_result(clip_id: str, pred: Prediction, *, reasoning: bool) -> dict[str, Any]:
    per_sample = ades(pred)
    row: dict[str, Any] = {
        "clip_id": clip_id,
        "min_ade_m": min(per_sample),
        "mean_ade_m": sum(per_sample) / len(per_sample),
        "samples": len(per_sample),
    }
    if reasoning:
        chars = [len(t.strip()) for t in pred.cot]
        row["reasoning_chars"] = sum(chars) / len(chars) if chars else 0.0
        row["reasoning_words"] = sum(len(t.split()) for t in pred.cot) / len(chars) if chars else 0.0
        row["reasoning_empty"] = sum(1 for c in chars if c == 0)
    return row


def aggregate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    keys = [k for k in ("min_ade_m", "mean_ade_m", "reasoning_chars", "reasoning_words") if rows and k in rows[0]]
    return {k: sum(r[k] for r in rows) / len(rows) for k in keys} | {"clips": len(rows)}


def evaluate(
    backend: Backend,
    models: Sequence[tuple[str, Path]],
    *,
    data_dir: Path,
    clip_index: str,
    clips: int,
    samples: int,
    seed: int,
    reasoning: bool,
    say: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Every model on the same first ``clips`` clips; the JSON object the stage verifies."""
    try:
        ids = backend.clip_ids(data_dir, clip_index)[:clips]
    except Exception as exc:
        raise EvalError(f"cannot read the clips of {data_dir / clip_index}: {type(exc).__name__}: {exc}", 2) from None
    if not ids:
        raise EvalError(f"{data_dir / clip_index} lists no clip", 2)
    say(f"[evaluate] {len(ids)} clip(s) of {data_dir / clip_index}")
    data = []
    for clip_id in ids:
        try:
            data.append(backend.load_clip(clip_id))
        except Exception as exc:
            raise EvalError(f"cannot load clip {clip_id}: {type(exc).__name__}: {exc}", 2) from None
    results: dict[str, Any] = {}
    for label, path in models:
        say(f"[evaluate] loading the {label} model from {path}")
        try:
            model = backend.load_model(path)
        except Exception as exc:
            raise EvalError(f"the {label} model at {path} does not load: {type(exc).__name__}: {exc}", 3) from None
        rows = []
        for i, (clip_id, clip) in enumerate(zip(ids, data, strict=True)):
            try:
                pred = backend.predict(model, clip, samples=samples, seed=seed + i)
            except Exception as exc:  # CUDA out of memory, a shape the model refuses...
                raise EvalError(
                    f"the {label} model failed on clip {clip_id}: {type(exc).__name__}: {exc}", 4
                ) from None
            _check(label, clip_id, pred)
            row = clip_result(clip_id, pred, reasoning=reasoning)
            rows.append(row)
            say(f"[evaluate] {label} clip {i + 1}/{len(ids)} {clip_id}: minADE {row['min_ade_m']:.3f} m")
        model = None  # the only reference: the next model loads into a free GPU
        backend.release()
        results[label] = {"path": str(path), "clips": rows, "aggregate": aggregate(rows)}
    return {
        "version": 1,
        "settings": {
            "clip_index": str(data_dir / clip_index),
            "clips_requested": clips,
            "samples": samples,
            "seed": seed,
            "temperature": TEMPERATURE,
            "top_p": TOP_P,
            "max_generation_length": MAX_GENERATION_LENGTH,
            "reasoning": reasoning,
        },
        "clip_ids": ids,
        "models": results,
    }


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Atomically: a reader sees the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2)
            handle.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _model(text: str) -> tuple[str, Path]:
    label, sep, path = text.partition("=")
    if not sep or not label or not path:
        raise argparse.ArgumentTypeError(f"{text!r}: expected LABEL=PATH")
    return label, Path(path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--model", type=_model, action="append", required=True, metavar="LABEL=PATH")
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--clip-index", required=True, help="the curated index's file name in --data-dir")
    parser.add_argument("--clips", type=int, default=8)
    parser.add_argument("--samples", type=int, default=DEFAULT_SAMPLES)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reasoning", action="store_true", help="record the reasoning text's length")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.clips < 1 or args.samples < 1:
        print("evaluate: --clips and --samples must be at least 1", file=sys.stderr)
        return 2
    try:
        backend = RecipeBackend()
        result = evaluate(
            backend,
            args.model,
            data_dir=args.data_dir,
            clip_index=args.clip_index,
            clips=args.clips,
            samples=args.samples,
            seed=args.seed,
            reasoning=args.reasoning,
            say=lambda line: print(line, flush=True),
        )
    except EvalError as exc:
        print(f"evaluate failed: {exc}", file=sys.stderr, flush=True)
        return exc.code
    except ImportError as exc:
        print(f"evaluate failed: cannot import the recipe's packages ({exc}): is this the a1x_rl venv?",
              file=sys.stderr)
        return 3
    write_json(args.out, result)
    for label, model in result["models"].items():
        summary = model["aggregate"]
        print(f"[evaluate] {label}: minADE {summary['min_ade_m']:.3f} m over {summary['clips']} clip(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
