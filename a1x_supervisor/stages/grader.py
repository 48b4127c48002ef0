"""The ``grader`` stage (joint only): the Lingo-Judge model through ``hf download``
(docs/reference/alpamayo-recipe.md §7). Verified by its config, weights and tokenizer files. Retry policy:
``HfRetry``."""

from __future__ import annotations

from pathlib import Path

from a1x_supervisor.progress import HfDownload
from a1x_supervisor.stage import Command, StageSpec, VerifyResult
from a1x_supervisor.stages._files import TOKENIZER_FILES, nonempty
from a1x_supervisor.stages.context import StageContext

LINGO_JUDGE_REPO = "wayveai/Lingo-Judge"


def verify_grader(grader_dir: Path) -> VerifyResult:
    # docs/reference/alpamayo-recipe.md §7: loaded with from_pretrained(dir, local_files_only=True).
    if not (grader_dir / "config.json").exists():
        return VerifyResult.failed(f"{grader_dir}/config.json is missing")
    weights = [p for pat in ("*.safetensors", "*.bin") for p in grader_dir.glob(pat) if nonempty(p)]
    if not weights:
        return VerifyResult.failed(f"{grader_dir}: no model weights (*.safetensors / *.bin)")
    if not any((grader_dir / n).exists() for n in TOKENIZER_FILES):
        return VerifyResult.failed(f"{grader_dir}: no tokenizer files")
    return VerifyResult.passed(f"{grader_dir}: Lingo-Judge cached ({len(weights)} weight file(s))")


def stage(ctx: StageContext) -> StageSpec:
    grader_dir = ctx.paths.grader_dir

    def prepare() -> list[Command]:
        hf = str(ctx.venv_bin / "hf") if (ctx.venv_bin / "hf").exists() else "hf"
        argv = (hf, "download", LINGO_JUDGE_REPO, "--local-dir", str(grader_dir))
        return [ctx.venv_command(argv, secrets=("HF_TOKEN",), label="download Lingo-Judge")]

    return StageSpec(
        name="grader",
        title="download the Lingo-Judge grader",
        prepare=prepare,
        verify=lambda: verify_grader(grader_dir),
        progress=HfDownload,
        retry=ctx.hf_retry("grader"),
    )
