"""The ``evaluate`` stage: does the trained policy still drive? The recipe notebook's inference
(docs/reference/alpamayo-recipe.md §13) on the first ``[evaluate] clips`` clips of the curated index, for
the exported checkpoint and for the converted model training started from, by ``evaluate_program.py``
in the a1x_rl venv (a subprocess: the recipe's packages live only there).

Verified by ``<run>/evaluate/evaluation.json``: both models on the same clips, every figure finite, made
for the export and base model the run has now (a new export is evaluated again). A trained model whose
mean minADE exceeds the base's by more than ``[evaluate] tolerance`` is the ``export_regressed`` warning
with both figures; a model that does not load or samples a non-finite trajectory fails the stage with
the program's line saying why. Retry policy: ``HfRetry`` (the model's processor comes from the Hub or its
cache, §3).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from a1x_diagnostics.catalog import entry
from a1x_diagnostics.findings import Evidence, Finding
from a1x_supervisor.stage import Command, Progress, StageError, StageSpec, VerifyResult
from a1x_supervisor.stages.context import StageContext
from a1x_supervisor.stages.export import current_export

PROGRAM = Path(__file__).resolve().with_name("evaluate_program.py")
LABELS = ("trained", "base")
_CLIP_LINE = re.compile(r"\[evaluate\] (\w+) clip (\d+)/(\d+)")


class EvalProgress:
    """``[evaluate] trained clip 3/8 ...`` lines: clips done over both models."""

    def feed(self, line: str) -> Progress | None:
        m = _CLIP_LINE.search(line)
        if m is None:
            text = line.strip()
            return Progress(text[:160]) if text.startswith("[evaluate]") else None
        label, done, total = m.group(1), int(m.group(2)), int(m.group(3))
        before = LABELS.index(label) * total if label in LABELS else 0
        return Progress(
            f"{label} model: clip {done}/{total}", current=before + done, total=total * len(LABELS), unit="clips"
        )


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def read_evaluation(path: Path) -> dict[str, Any] | str:
    """The evaluation the program wrote, checked; else why it cannot be used."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return f"{path} does not exist"
    except (OSError, ValueError) as exc:
        return f"{path}: cannot be read ({exc})"
    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, dict) or any(label not in models for label in LABELS):
        return f"{path}: no result for the trained and the base model"
    ids = data.get("clip_ids")
    for label in LABELS:
        rows = models[label].get("clips") if isinstance(models[label], dict) else None
        if not isinstance(rows, list) or not rows or [r.get("clip_id") for r in rows] != ids:
            return f"{path}: the {label} model was not run on the evaluation's clips"
        bad = [r.get("clip_id") for r in rows if not _finite(r.get("min_ade_m"))]
        if bad:
            return f"{path}: the {label} model's minADE is not a finite number for clip {bad[0]}"
    return data


def _mean(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in rows if _finite(r.get(key))]
    return sum(values) / len(values) if values else None


def judge(data: dict[str, Any], *, path: Path, tolerance: float) -> VerifyResult:
    """The stage's verdict line, the figures, and ``export_regressed`` when the trained model drives worse."""
    trained, base = (data["models"][label]["clips"] for label in LABELS)
    t_ade, b_ade = _mean(trained, "min_ade_m"), _mean(base, "min_ade_m")
    assert t_ade is not None and b_ade is not None  # read_evaluation checked every row
    n = len(trained)
    change = (t_ade - b_ade) / b_ade if b_ade > 0 else (0.0 if t_ade == b_ade else math.inf)
    reason = f"minADE {t_ade:.3f} m trained vs {b_ade:.3f} m base over {n} clip(s) ({change:+.1%})"
    figures: dict[str, Any] = {"trained_min_ade_m": t_ade, "base_min_ade_m": b_ade, "clips": n, "change": change}
    t_words, b_words = _mean(trained, "reasoning_words"), _mean(base, "reasoning_words")
    if t_words is not None and b_words is not None:
        reason += f"; reasoning {t_words:.0f} vs {b_words:.0f} words"
        figures |= {"trained_reasoning_words": t_words, "base_reasoning_words": b_words}
    findings: list[dict[str, Any]] = []
    if change > tolerance:
        worse = sorted(zip(trained, base, strict=True), key=lambda tb: tb[1]["min_ade_m"] - tb[0]["min_ade_m"])
        evidence = [
            Evidence(
                file=str(path),
                line=None,
                text=f"clip {t['clip_id']}: minADE {t['min_ade_m']:.3f} m trained, {b['min_ade_m']:.3f} m base",
            )
            for t, b in worse[:3]
        ]
        cat = entry("export_regressed")
        finding = Finding(
            id="export_regressed",
            severity=cat.severity,
            title=cat.title,
            explanation=(
                f"On {n} curated clip(s) the exported model's mean minADE is {t_ade:.3f} m against {b_ade:.3f} m for "
                f"the model training started from ({change:+.1%}, tolerance {tolerance:.0%}): the trained policy "
                "predicts trajectories further from the ground truth than its base (docs/supervisor.md \"Evaluate\": "
                "sampled, so small differences are noise)."
            ),
            evidence=evidence,
            action="look at the reward curves and the last checkpoints (an earlier one may be better: export it with "
            "`a1x-tui restart RUN --stage export`), or evaluate more clips ([evaluate] clips) before concluding",
            data={k: (round(v, 4) if isinstance(v, float) else v) for k, v in figures.items()}
            | {"tolerance": tolerance},
        )
        findings.append(finding.model_dump(mode="json"))
        reason += f"; worse than the base beyond the {tolerance:.0%} tolerance (export_regressed)"
    return VerifyResult.passed(reason, findings=findings, **figures)


def verify_evaluation(path: Path, *, export_dir: Path, base_dir: Path, clips: int, tolerance: float) -> VerifyResult:
    data = read_evaluation(path)
    if isinstance(data, str):
        return VerifyResult.failed(data)
    models = data["models"]
    if Path(str(models["trained"].get("path"))) != export_dir:
        return VerifyResult.failed(f"{path} evaluates {models['trained'].get('path')}, not the export {export_dir}")
    if Path(str(models["base"].get("path"))) != base_dir:
        return VerifyResult.failed(f"{path} compares with {models['base'].get('path')}, not {base_dir}")
    if data.get("settings", {}).get("clips_requested") != clips:
        return VerifyResult.failed(f"{path} was made for another number of clips than [evaluate] clips = {clips}")
    return judge(data, path=path, tolerance=tolerance)


def stage(ctx: StageContext) -> StageSpec:
    spec, paths, rundir = ctx.spec, ctx.paths, ctx.rundir
    out = rundir.evaluation_path
    settings = spec.evaluate

    def export_dir() -> Path | None:
        if ctx.outputs.get("export_dir"):
            return Path(ctx.outputs["export_dir"])
        found = current_export(ctx)  # records the export it finds in ctx.outputs
        return Path(ctx.outputs["export_dir"]) if found.ok else None

    def prepare() -> list[Command]:
        exported = export_dir()
        if exported is None:
            raise StageError("no verified export to evaluate: run the export and verify stages first")
        index = spec.data_dir / spec.entry.clip_index
        if not index.is_file():
            raise StageError(f"{index} is missing: the evaluation runs on the curated clips of the training data")
        argv = (
            ctx.python,
            str(PROGRAM),
            "--model",
            f"trained={exported}",
            "--model",
            f"base={paths.model_dir}",
            "--data-dir",
            str(spec.data_dir),
            "--clip-index",
            spec.entry.clip_index,
            "--clips",
            str(settings.clips),
            "--samples",
            str(settings.samples),
            "--out",
            str(out),
            *(("--reasoning",) if spec.entry.grader else ()),
        )
        return [ctx.venv_command(argv, secrets=("HF_TOKEN",), label="evaluate the exported model against its base")]

    def verify() -> VerifyResult:
        exported = export_dir()
        if exported is None:
            return VerifyResult.failed("no verified export to evaluate")
        result = verify_evaluation(
            out, export_dir=exported, base_dir=paths.model_dir, clips=settings.clips, tolerance=settings.tolerance
        )
        if result.ok:
            ctx.outputs["evaluation"] = str(out)
        return result

    return StageSpec(
        name="evaluate",
        title="evaluate the exported model against its base (minADE)",
        prepare=prepare,
        verify=verify,
        progress=EvalProgress,
        retry=ctx.hf_retry("evaluate"),
    )
