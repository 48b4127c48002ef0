"""One detector per row of the Alpamayo recipe's failure table (docs/reference/alpamayo-recipe.md §14).

Each is a named error text: the parser's signal or the same text at the end of a traceback (see
``_probes``). A finding quotes the first occurrences (one line per file, several ranks print the same
error) and says what fixes it; a TOML fix is given where the table names a key.
"""

from __future__ import annotations

from collections.abc import Callable

from a1x_diagnostics.detectors._base import DetectorContext, Verdict, detector, fix, make_finding, verdict_of
from a1x_diagnostics.detectors._probes import Hit
from a1x_diagnostics.findings import Fix


def _one_per_file(hits: list[Hit], limit: int = 4) -> list[Hit]:
    seen: set[str] = set()
    out: list[Hit] = []
    for hit in hits:
        if hit.event.source.path in seen:
            continue
        seen.add(hit.event.source.path)
        out.append(hit)
        if len(out) >= limit:
            break
    return out


def _row(
    ctx: DetectorContext,
    finding_id: str,
    explain: Callable[[list[Hit]], str],
    *,
    action: str | None = None,
    fixes: Callable[[DetectorContext, list[Hit]], list[Fix]] | None = None,
) -> Verdict:
    hits = ctx.hits(finding_id)
    if not hits:
        return Verdict.ok()
    chosen = _one_per_file(hits)
    return verdict_of(
        make_finding(
            finding_id,
            explain(chosen),
            chosen,
            fixes=fixes(ctx, chosen) if fixes else (),
            action=action,
            data={
                "occurrences": ctx.store.hit(finding_id).count,
                "files": sorted({h.event.source.path for h in chosen}),
            },
        )
    )


def _field(hits: list[Hit], name: str) -> str | None:
    for hit in hits:
        value = hit.fields.get(name)
        if value:
            return str(value)
    return None


@detector("missing_env_var")
def missing_env_var(ctx: DetectorContext) -> Verdict:
    def explain(hits: list[Hit]) -> str:
        name = _field(hits, "name") or "a required variable"
        return (
            f"The recipe's entry script stopped at import: {name} is not set in the environment of the cosmos-rl "
            "process (recipe §8.1). Every replica fails the same way."
        )

    name = _field(ctx.hits("missing_env_var"), "name") or "the variable"
    return _row(
        ctx,
        "missing_env_var",
        explain,
        action=f"export {name}=<dataset root> before launching cosmos-rl (recipe §14 row 7).",
    )


@detector("hydra_none_string")
def hydra_none_string(ctx: DetectorContext) -> Verdict:
    def explain(hits: list[Hit]) -> str:
        path = _field(hits, "path") or _field(hits, "path2") or "a path ending in /None"
        return (
            f"A Hydra override set a key to None, which Hydra reads as the string 'None'; the path became {path} "
            "and the file does not exist (recipe §14 row 1)."
        )

    return _row(
        ctx,
        "hydra_none_string",
        explain,
        action="Write `<key>=null` (or `~<key>` to delete it) in the Hydra overrides, never `<key>=None`.",
    )


@detector("wandb_forbidden")
def wandb_forbidden(ctx: DetectorContext) -> Verdict:
    def fixes(c: DetectorContext, _: list[Hit]) -> list[Fix]:
        logger = c.config.get("logging.logger")
        if isinstance(logger, (list, tuple)) and "wandb" in [str(v).lower() for v in logger]:
            kept = [v for v in logger if str(v).lower() != "wandb"] or ["console"]
            return [fix(c.config, "logging.logger", kept, "run without W&B until the key has access to the project; "
                        "trade-off: no W&B charts, the console still logs every step")]
        return []

    return _row(
        ctx,
        "wandb_forbidden",
        lambda _: (
            "W&B refused the run (403 / permission denied): the API key has no write access to the project. "
            "Cosmos continues without W&B and warns at every step (recipe §8.4, §14 row 14)."
        ),
        action="Use a key with access to [logging].project_name, change the project, or set WANDB_MODE=disabled.",
        fixes=fixes,
    )


@detector("grader_missing")
def grader_missing(ctx: DetectorContext) -> Verdict:
    def explain(hits: list[Hit]) -> str:
        path = _field(hits, "path") or "the configured directory"
        return (
            f"The Lingo-Judge reasoning grader is not at {path}. It loads at the first reward computation, so the "
            "rollout fails after start-up (recipe §7, §14 row 5)."
        )

    return _row(
        ctx,
        "grader_missing",
        explain,
        action="hf download wayveai/Lingo-Judge --local-dir <dir>; "
        'set [custom.alpamayo].reasoning_grading_model_path = "<dir>".',
    )


@detector("gated_repo")
def gated_repo(ctx: DetectorContext) -> Verdict:
    def explain(hits: list[Hit]) -> str:
        url = _field(hits, "url")
        return (
            "Hugging Face refused a gated repository"
            + (f" ({url})" if url else "")
            + ": its licence is not accepted for this account, or no token is set (recipe §4, §14 row 3)."
        )

    return _row(
        ctx,
        "gated_repo",
        explain,
        action="Accept the licences (Alpamayo model, PhysicalAI-Autonomous-Vehicles, Cosmos-Reason2-8B) on the Hub, "
        "then `hf auth login` and check with `hf auth whoami`.",
    )


@detector("hf_rate_limit")
def hf_rate_limit(ctx: DetectorContext) -> Verdict:
    return _row(
        ctx,
        "hf_rate_limit",
        lambda _: (
            "The Hugging Face Hub answered HTTP 429 (too many requests). Downloads resume where they stopped "
            "(recipe §5, §14 row 4)."
        ),
        action="Wait and retry with backoff; use a token (authenticated limits are higher).",
    )


@detector("pth_loaded_directly")
def pth_loaded_directly(ctx: DetectorContext) -> Verdict:
    return _row(
        ctx,
        "pth_loaded_directly",
        lambda _: (
            "A Cosmos policy checkpoint (checkpoints/step_N/policy with model_rank_*.pth shards) was loaded as if "
            "it were a Hugging Face model; it has to be exported first (recipe §12, §14 row 8)."
        ),
        action="python scripts/convert_cosmos_rl_checkpoint.py --cosmos-policy-ckpt <…/step_N/policy> "
        "--base-hf-ckpt <converted model> --output-dir <export>, then load the export.",
    )


@detector("redis_missing")
def redis_missing(ctx: DetectorContext) -> Verdict:
    return _row(
        ctx,
        "redis_missing",
        lambda _: (
            "The controller could not start redis-server (return code 127: the program is not installed or not "
            "on PATH); the controller stops (recipe §2.3, §14 row 17)."
        ),
        action="Install it (apt-get install redis-server) on the controller's host and relaunch.",
    )


@detector("mini_parquet_missing")
def mini_parquet_missing(ctx: DetectorContext) -> Verdict:
    return _row(
        ctx,
        "mini_parquet_missing",
        lambda _: (
            "The curated clip index (clip_index_mini.parquet / clip_index_reasoning_mini.parquet) is not in the "
            "dataset directory, so the dataset cannot be built (recipe §6, §14 row 6)."
        ),
        action="Motion: run scripts/curate_pai_samples.py into $ALPAMAYO_PAI_LOCAL_DIR/clip_index_mini.parquet; joint: "
        "rerun download_pai.py --only-reasoning-chunks --num-reasoning-clips N.",
    )


@detector("model_not_converted")
def model_not_converted(ctx: DetectorContext) -> Verdict:
    def explain(hits: list[Hit]) -> str:
        model_type = _field(hits, "model_type")
        return (
            "The rollout refused the model"
            + (f" (model_type {model_type})" if model_type else "")
            + ": [policy].model_name_or_path points at a release checkpoint, not the converted training checkpoint "
            "(model_type alpamayo_reasoning_vla) (recipe §8.7, §14 row 18)."
        )

    return _row(
        ctx,
        "model_not_converted",
        explain,
        action="Run scripts/convert_release_config_to_training.py --output-dir <dir> and point "
        "[policy].model_name_or_path at <dir>.",
    )


_PARALLEL_KEYS = {
    "TP": ("policy.parallelism.tp_size", 1),
    "CP": ("policy.parallelism.cp_size", 1),
    "Pipeline Parallel": ("policy.parallelism.pp_size", 1),
    "Compile": ("train.compile", False),
}


@detector("recipe_parallelism_unsupported")
def recipe_parallelism_unsupported(ctx: DetectorContext) -> Verdict:
    def fixes(c: DetectorContext, hits: list[Hit]) -> list[Fix]:
        out: list[Fix] = []
        for hit in hits:
            what = str(hit.fields.get("what") or hit.fields.get("pp") or "")
            if what in _PARALLEL_KEYS and all(f.path != _PARALLEL_KEYS[what][0] for f in out):
                path, value = _PARALLEL_KEYS[what]
                out.append(fix(c.config, path, value, "the recipe's model wrapper asserts this (recipe §8.7); "
                               "trade-off: none, no other value runs"))
        return out

    return _row(
        ctx,
        "recipe_parallelism_unsupported",
        lambda hits: (
            "The Alpamayo model wrapper supports only data-parallel FSDP: it asserted on "
            + ", ".join(sorted({str(h.fields.get("what") or h.fields.get("pp") or "?") for h in hits}))
            + " (recipe §8.7, §14 row 19)."
        ),
        action="Keep tp_size = cp_size = pp_size = 1 in [policy.parallelism] and compile = false in [train].",
        fixes=fixes,
    )


@detector("export_rank_mismatch")
def export_rank_mismatch(ctx: DetectorContext) -> Verdict:
    return _row(
        ctx,
        "export_rank_mismatch",
        lambda _: (
            "The exporter found rank shards that do not belong together (different key sets, or a 2-D HSDP mesh): "
            "the checkpoint is incomplete, mixes steps, or used dp_replicate_size > 1 (recipe §12.3, §14 row 25)."
        ),
        action="Export a step whose directory has every .rank_<r>_complete marker; train with dp_replicate_size = 1.",
    )
