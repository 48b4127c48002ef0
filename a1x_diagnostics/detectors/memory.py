"""Out of GPU memory: in the vLLM engine of a rollout, or in a policy (trainer) process.

Mechanism (docs/reference/cosmos-rl.md §6.7, §13.4; docs/reference/alpamayo-recipe.md §14 rows 9-10): the vLLM engine
is built
at the first weight sync and reserves ``gpu_memory_utilization`` of the GPU; if weights plus the KV
cache for ``max_model_len = policy.model_max_length`` do not fit, it fails *at engine start*
(before ``[Rollout] Engine initialized.``) with vLLM's cache-block / KV-cache / free-memory errors
or a CUDA OOM, and the replica dies. *Mid-run*, a generation batch that runs out of memory logs
``[Rollout] Failed in rollout generation: CUDA out of memory`` and is discarded while the replica
goes on. A policy OOM is a torch ``OutOfMemoryError`` in a trainer process.
"""

from __future__ import annotations

import re
from collections import defaultdict

from a1x_diagnostics.detectors._base import (
    DetectorContext,
    Verdict,
    detected_gpus,
    detector,
    engine_reads_memory_fraction,
    fix,
    make_finding,
    policy_gpus_needed,
    rollout_backend,
    run_mode,
    ts_of,
    verdict_of,
)
from a1x_diagnostics.detectors._probes import Hit
from a1x_diagnostics.events import Role, SignalKind, Traceback
from a1x_diagnostics.findings import Finding, Fix

# the generation engine's own: its start-up checks that the KV cache holds one sequence of max_model_len (V1's
# 'KV cache is needed', V0's 'max seq len ... larger than the maximum number of tokens that can be stored in KV
# cache'), no cache block at all, free memory, the cumem allocator, SGLang's pool, and V0's initialize_cache
# failing (the step that runs those checks and allocates the cache; docs/reference/foreign-errors.md F1)
VLLM_KINDS = {"no_cache_blocks", "kv_cache", "max_model_len", "cache_init", "free_memory", "cumem", "kv_pool"}
_FREE = re.compile(r"Free memory on device[^(]*\((?P<free>[\d.]+)/(?P<total>[\d.]+) GiB\)")
_MAX_LEN = re.compile(r"estimated maximum model length is (?P<n>\d+)|that can be stored in KV cache \((?P<v0>\d+)\)")


def _text(hit: Hit) -> str:
    event = hit.event
    if isinstance(event, Traceback):
        return "\n".join(event.lines)
    return event.text


def _is_vllm(ctx: DetectorContext, hit: Hit) -> bool:
    kind = hit.fields.get("kind")
    text = _text(hit)
    if kind in VLLM_KINDS or "Failed in rollout generation" in text:
        return True
    role = hit.event.source.role
    if role is Role.ROLLOUT:
        return True
    if role is Role.POLICY and run_mode(ctx) != "colocated":
        return False
    return "vllm" in text.lower()


def _engine_start(ctx: DetectorContext, hit: Hit) -> bool:
    """True when the OOM came before the replica's engine was up (docs/reference/cosmos-rl.md §6.7): no
    ``[Rollout] Engine initialized.`` and no completed weight receive earlier in its log (the engine
    is built by the first weight-sync command), and no training step yet when it happened."""
    if "Failed in rollout generation" in _text(hit):
        return False
    facts = ctx.store.files.get(hit.event.source.path)
    if facts is not None:
        for mark in (SignalKind.ENGINE_INITIALIZED.value, "sync:recv_done"):
            first = facts.first_marks.get(mark)
            if first is not None and first.line < hit.event.line:
                return False
    t = ts_of(hit.event)
    return t is None or ctx.metrics.step_at(t) is None


def _oom_hits(ctx: DetectorContext) -> list[Hit]:
    """OOM hits, without the launcher's own output when replica logs exist: a trainer's or vLLM's
    memory error is written to that replica's file, so text elsewhere is only quoting it."""
    replicas = bool(ctx.files(Role.POLICY, Role.ROLLOUT, Role.REFERENCE))
    return [h for h in ctx.hits("oom") if not (replicas and h.event.source.role in (Role.LAUNCHER, Role.STAGE))]


def _engine_name(ctx: DetectorContext) -> str:
    backend = rollout_backend(ctx)
    if backend is not None and "vllm" not in backend.lower():
        return f"the rollout's generation engine (backend {backend})"
    return "vLLM"


def _is_vllm_engine(ctx: DetectorContext, hits: list[Hit]) -> bool | None:
    """Whether the OOM was in an engine that reads rollout.gpu_memory_utilization: the config's backend (the
    TOML's first), else vLLM's own messages say so; None when nothing tells (§9)."""
    backend = rollout_backend(ctx)
    if backend is not None:
        return engine_reads_memory_fraction(backend)
    if any(h.fields.get("kind") in VLLM_KINDS or "vllm" in _text(h).lower() for h in hits):
        return True
    return None


def _vllm_fixes(ctx: DetectorContext, hits: list[Hit], at_start: bool) -> tuple[list[Fix], list[str]]:
    """One fix on the engine's memory, for the engine in use, never the group size (``n_generation``, the
    algorithm); the alternatives in words (§6.7, §13.4; recipe §14 row 9)."""
    cfg = ctx.config
    engine = _is_vllm_engine(ctx, hits)
    util = cfg.number("rollout.gpu_memory_utilization")
    util = 0.8 if util is None else util
    kinds = {h.fields.get("kind") for h in hits}
    text = "\n".join(_text(h) for h in hits)
    colocated = run_mode(ctx) != "disaggregated"
    batch = cfg.integer("rollout.batch_size")
    smaller_batch = (
        fix(cfg, "rollout.batch_size", max(1, batch // 2),
            "fewer prompts per generation call: fewer sequences in memory at once; trade-off: more calls, slower "
            "rollouts (the algorithm is unchanged)")
        if batch is not None and batch > 1 else None
    )
    if not engine:
        backend = rollout_backend(ctx)
        what = (f"backend {backend} does not read gpu_memory_utilization" if backend
                else "the rollout backend is unknown (no TOML, no config dump), so no vLLM key is proposed")
        notes = f"No engine memory key: {what}. Free the GPU of other processes (a1x-tui preflight lists them)."
        return ([smaller_batch] if smaller_batch and not at_start else []), [notes]
    words: list[str] = []
    if "free_memory" in kinds:
        m = _FREE.search(text)
        proposed = 0.7
        if m and float(m.group("total")) > 0:
            proposed = max(0.1, int((float(m.group("free")) / float(m.group("total")) - 0.05) * 100) / 100)
        return [fix(cfg, "rollout.gpu_memory_utilization", min(proposed, round(util - 0.1, 2)),
                    "vLLM asked for more memory than was free on the GPU at start; trade-off: a smaller KV cache, "
                    "fewer sequences generated at once")], words
    if kinds == {"cache_init"}:
        words.append("the error itself is not in these lines: vLLM's ValueError after 'Error executing method "
                     "initialize_cache' says which; a KV cache too small for max_model_len is cured by a shorter "
                     "policy.model_max_length (or a larger gpu_memory_utilization on a GPU of its own), a CUDA out of "
                     "memory while allocating it by a smaller gpu_memory_utilization")
        return [], words
    if kinds & {"kv_cache", "no_cache_blocks", "max_model_len"}:
        m = _MAX_LEN.search(text)
        if not colocated and util < 0.9:
            words.append(f"raise rollout.gpu_memory_utilization to {round(min(0.9, util + 0.1), 2)} (the rollout "
                         "has its GPU to itself in disaggregated mode" + (", Cosmos-RL's default: no TOML says "
                         "otherwise)" if cfg.get("mode") is None else ")"))
        if m:
            return [fix(cfg, "policy.model_max_length", int(m.group("n") or m.group("v0")),
                        "vLLM says this is the longest sequence its KV cache can hold (it is also max_model_len); "
                        "trade-off: prompt + response longer than that fail")], words
        if not colocated and util < 0.9:
            return [fix(cfg, "rollout.gpu_memory_utilization", round(min(0.9, util + 0.1), 2),
                        "the weights leave no room for the KV cache at this share of the GPU; trade-off: less "
                        "headroom outside vLLM's pool on that GPU")], []
        length = cfg.integer("policy.model_max_length") or 4096
        return [fix(cfg, "policy.model_max_length", max(1024, length // 2),
                    "a shorter max_model_len needs a smaller KV cache; trade-off: prompt + response longer than "
                    "that fail")], words
    if smaller_batch is not None and not at_start:
        words.append("lower rollout.batch_size (fewer sequences per generation call)")
    return [fix(cfg, "rollout.gpu_memory_utilization", 0.7 if util > 0.7 else round(max(0.1, util - 0.1), 2),
                "leaves headroom outside vLLM's pool (docs/reference/alpamayo-recipe.md §14 row 9); trade-off: a "
                "smaller KV cache, fewer sequences generated at once")], words


def _group(hits: list[Hit]) -> dict[str, list[Hit]]:
    groups: dict[str, list[Hit]] = defaultdict(list)
    for hit in hits:
        groups[hit.event.source.path].append(hit)
    return groups


@detector("vllm_oom")
def vllm_oom(ctx: DetectorContext) -> Verdict:
    hits = [h for h in _oom_hits(ctx) if _is_vllm(ctx, h)]
    findings: list[Finding | None] = []
    for path, group in _group(hits).items():
        replica = group[0].event.source.replica
        start = [h for h in group if _engine_start(ctx, h)]
        runtime = [h for h in group if h not in start]
        at_start = bool(start)
        chosen = start or runtime
        step_then = None
        t = ts_of(chosen[0].event)
        if t is not None:
            step_then = ctx.metrics.step_at(t)
        if at_start:
            when = "at engine start-up (before `[Rollout] Engine initialized.`"
            when += (
                ", before any training step)" if step_then is None else f", with the controller at step {step_then})"
            )
            consequence = "The engine never came up, so this replica produced no rollouts; the run then waits for it."
        else:
            batches = sum(1 for h in runtime if "Failed in rollout generation" in h.event.text)
            when = f"mid-run ({batches} generation batch(es) failed" if batches else "mid-run (in a generation call"
            when += ")" if step_then is None else f", first near step {step_then})"
            consequence = (
                "Each failed batch is discarded; at rev 747d1bd its share of the in-flight budget is never released."
            )
            facts = ctx.store.files.get(path)
            if facts is not None and (facts.has("hit:child_failed") or facts.has(SignalKind.CHILD_FAILED.value)):
                if not any("Failed in rollout generation" in h.event.text for h in runtime):
                    consequence = "The error escaped the generation call."
                consequence += " Then the replica process died (see replica_died)."
        kinds = sorted({str(h.fields.get("kind")) for h in chosen})
        fixes, alternatives = _vllm_fixes(ctx, chosen, at_start)
        own = group[0].event.source.role in (Role.ROLLOUT, Role.POLICY, Role.REFERENCE)
        who = replica if own else "The rollout engine"  # another stack's capture: no replica names
        what = f"ran out of GPU memory in {_engine_name(ctx)} {when}: {', '.join(kinds)}"
        if kinds == ["cache_init"]:
            what = (f"failed in {_engine_name(ctx)}'s initialize_cache {when}: the step that checks the KV cache holds "
                    "one sequence of max_model_len and allocates it (docs/reference/foreign-errors.md F1)")
        elif "max_model_len" in kinds or "kv_cache" in kinds:
            what += " (the KV cache left by gpu_memory_utilization cannot hold one sequence of max_model_len)"
        findings.append(
            make_finding(
                "vllm_oom",
                f"{who} {what}. {consequence}",
                [*chosen[:2], *chosen[-1:]],
                fixes=fixes,
                action=" ".join(
                    ([
                        "Free memory on the GPU was short at start: another process holds it (a1x-tui preflight "
                        "lists orphans); free it, or lower the utilization."
                    ] if any(h.fields.get("kind") == "free_memory" for h in chosen) else [])
                    + ([alternatives[0][:1].upper() + alternatives[0][1:] + "."] if alternatives and not fixes
                       and not alternatives[0].startswith("No engine") else [])
                    + ([alternatives[0]] if alternatives and alternatives[0].startswith("No engine")
                       else [f"Alternatives: {'; '.join(alternatives)}."] if alternatives and fixes else [])
                ) or None,
                data={
                    "replica": replica,
                    "phase": "engine_start" if at_start else "runtime",
                    "file": path,
                    "count": len(group),
                },
            )
        )
    if not findings and not ctx.files(Role.ROLLOUT) and run_mode(ctx) == "disaggregated":
        return Verdict.ok("no rollout log to examine")
    return verdict_of(*findings)


def _policy_fixes(ctx: DetectorContext) -> tuple[list[Fix], list[str]]:
    """One fix on the trainer's memory within the GPUs the run has, never the algorithm (batch sizes, group
    size, learning rate), and the alternatives in words (recipe §14 row 10; docs/reference/cosmos-rl.md §8.4).

    ``mini_batch`` only splits each optimisation step's batch into forward/backward passes (the optimizer steps
    once per ``batch_size_per_optimize``, grpo_trainer.py at 747d1bd): a memory setting. ``dp_shard_size`` needs
    more GPUs: proposed only when the launcher's ``Detected N GPUs`` shows them free."""
    cfg = ctx.config
    options: list[tuple[Fix | None, str]] = []
    if cfg.get("policy.model_gradient_checkpointing") is False:
        options.append((fix(cfg, "policy.model_gradient_checkpointing", True,
                            "recomputes activations in the backward pass instead of keeping them; trade-off: "
                            "about a third more compute per step"), "turn on policy.model_gradient_checkpointing"))
    backend = rollout_backend(ctx)
    if run_mode(ctx) != "disaggregated" and engine_reads_memory_fraction(backend):
        util = cfg.number("rollout.gpu_memory_utilization")
        proposed = round(max(0.1, (util or 0.8) - 0.2), 2)
        options.append((fix(cfg, "rollout.gpu_memory_utilization", proposed,
                            f"the rollout engine ({backend}) reserves this share of the GPU the trainer shares; "
                            "trade-off: a smaller KV cache, fewer sequences generated at once"),
                        f"lower rollout.gpu_memory_utilization to {proposed}"))
    mini = cfg.integer("train.train_policy.mini_batch")
    if mini is not None and mini > 1:
        smaller = max(d for d in range(1, mini) if mini % d == 0)  # still divides the batch with dp_shard_size
        options.append((fix(cfg, "train.train_policy.mini_batch", smaller,
                            "fewer samples per forward/backward pass; the optimizer step is unchanged (§8.4); "
                            "trade-off: more passes per step, slower steps"),
                        f"lower train.train_policy.mini_batch to {smaller}"))
    shard = cfg.integer("policy.parallelism.dp_shard_size")
    batch = cfg.integer("train.train_batch_per_replica")
    have, _ = detected_gpus(ctx)
    if shard is not None and shard >= 1:
        need = policy_gpus_needed(ctx, shard * 2)
        divides = batch is None or batch % (shard * 2 * max(1, mini or 1)) == 0
        if have is not None and need is not None and need <= have and divides:
            options.append((fix(cfg, "policy.parallelism.dp_shard_size", shard * 2,
                                f"FSDP shards weights and optimizer state over twice the GPUs ({need} of the {have} "
                                "this node has, recipe §14 row 10); trade-off: more communication per step"),
                            f"raise policy.parallelism.dp_shard_size to {shard * 2} ({need} GPUs of {have})"))
        elif have is None:
            options.append((None, "more FSDP sharding (policy.parallelism.dp_shard_size) needs more GPUs: the logs "
                                  "do not say how many this node has (the launcher's `Detected N GPUs` line)"))
    if cfg.get("train.fsdp_offload") is False:
        options.append((fix(cfg, "train.fsdp_offload", True,
                            "keeps parameters and optimizer state in CPU memory between uses; trade-off: much "
                            "slower steps"), "set train.fsdp_offload = true"))
    first = next((f for f, _ in options if f is not None), None)
    words = [w for f, w in options if f is not first]
    return ([first] if first is not None else []), words


@detector("policy_oom")
def policy_oom(ctx: DetectorContext) -> Verdict:
    hits = [h for h in _oom_hits(ctx) if not _is_vllm(ctx, h)]
    findings: list[Finding | None] = []
    for path, group in _group(hits).items():
        replica = group[0].event.source.replica
        t = ts_of(group[0].event)
        step_then = ctx.metrics.step_at(t) if t is not None else None
        fixes, alternatives = _policy_fixes(ctx)
        findings.append(
            make_finding(
                "policy_oom",
                f"{replica} ran out of GPU memory while training"
                + (f" (near step {step_then})" if step_then is not None else " (before the first logged step)")
                + ". The trainer process dies and the run stops making progress.",
                [*group[:2], *group[-1:]],
                fixes=fixes,
                action=f"Alternatives: {'; '.join(alternatives)}." if alternatives else None,
                data={"replica": replica, "file": path, "count": len(group)},
            )
        )
    return verdict_of(*findings)
