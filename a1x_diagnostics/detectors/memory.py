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
    detector,
    fix,
    make_finding,
    run_mode,
    ts_of,
    verdict_of,
)
from a1x_diagnostics.detectors._probes import Hit
from a1x_diagnostics.events import Role, SignalKind, Traceback
from a1x_diagnostics.findings import Finding, Fix

VLLM_KINDS = {"no_cache_blocks", "kv_cache", "free_memory", "cumem", "kv_pool"}  # the generation engine's own
_FREE = re.compile(r"Free memory on device[^(]*\((?P<free>[\d.]+)/(?P<total>[\d.]+) GiB\)")
_MAX_LEN = re.compile(r"estimated maximum model length is (?P<n>\d+)")


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
    backend = ctx.config.get("rollout.backend")
    if isinstance(backend, str) and backend and "vllm" not in backend:
        return f"the rollout's generation engine (backend {backend})"
    return "vLLM"


def _vllm_fixes(ctx: DetectorContext, hits: list[Hit], at_start: bool) -> list[Fix]:
    cfg = ctx.config
    util = cfg.number("rollout.gpu_memory_utilization")
    util = 0.8 if util is None else util
    kinds = {h.fields.get("kind") for h in hits}
    text = "\n".join(_text(h) for h in hits)
    fixes: list[Fix] = []
    colocated = run_mode(ctx) != "disaggregated"
    if "free_memory" in kinds:
        m = _FREE.search(text)
        proposed = 0.7
        if m and float(m.group("total")) > 0:
            proposed = max(0.1, int((float(m.group("free")) / float(m.group("total")) - 0.05) * 100) / 100)
        fixes.append(
            fix(
                cfg,
                "rollout.gpu_memory_utilization",
                min(proposed, round(util - 0.1, 2)),
                "vLLM asked for more memory than was free on the GPU at start",
            )
        )
    elif kinds & {"kv_cache", "no_cache_blocks"}:
        m = _MAX_LEN.search(text)
        if m:
            fixes.append(
                fix(
                    cfg,
                    "policy.model_max_length",
                    int(m.group("n")),
                    "vLLM says this is the longest sequence its KV cache can hold (it is also max_model_len)",
                )
            )
        if not colocated and util < 0.9:
            fixes.append(
                fix(
                    cfg,
                    "rollout.gpu_memory_utilization",
                    round(min(0.9, util + 0.1), 2),
                    "the weights leave no room for the KV cache at this share of the GPU",
                )
            )
        elif not m:
            length = cfg.integer("policy.model_max_length") or 4096
            fixes.append(
                fix(
                    cfg,
                    "policy.model_max_length",
                    max(1024, length // 2),
                    "a shorter max_model_len needs a smaller KV cache",
                )
            )
    else:
        fixes.append(
            fix(
                cfg,
                "rollout.gpu_memory_utilization",
                0.7 if util > 0.7 else round(max(0.1, util - 0.1), 2),
                "leaves headroom outside vLLM's pool (docs/reference/alpamayo-recipe.md §14 row 9)",
            )
        )
        n_gen = cfg.integer("rollout.n_generation")
        if n_gen is not None and n_gen > 2 and not at_start:
            fixes.append(fix(cfg, "rollout.n_generation", max(2, n_gen // 2), "fewer sequences generated at once"))
        batch = cfg.integer("rollout.batch_size")
        if batch is not None and batch > 1 and not at_start:
            fixes.append(fix(cfg, "rollout.batch_size", max(1, batch // 2), "fewer prompts per generation call"))
    return fixes


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
        findings.append(
            make_finding(
                "vllm_oom",
                f"{replica} ran out of GPU memory in {_engine_name(ctx)} {when}: {', '.join(kinds)}. {consequence}",
                [*chosen[:2], *chosen[-1:]],
                fixes=_vllm_fixes(ctx, chosen, at_start),
                action=(
                    "Free memory on the GPU was short at start: another process holds it (a1x-tui preflight lists "
                    "orphans); free it, or lower the utilization."
                    if any(h.fields.get("kind") == "free_memory" for h in chosen)
                    else None
                ),
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


def _policy_fixes(ctx: DetectorContext) -> list[Fix]:
    cfg = ctx.config
    fixes: list[Fix] = []
    shard = cfg.integer("policy.parallelism.dp_shard_size")
    if shard is not None and shard >= 1:
        fixes.append(
            fix(
                cfg,
                "policy.parallelism.dp_shard_size",
                shard * 2,
                "FSDP shards the weights and optimizer state over more GPUs (recipe §14 row 10)",
            )
        )
    if cfg.get("policy.model_gradient_checkpointing") is False:
        fixes.append(
            fix(cfg, "policy.model_gradient_checkpointing", True, "recomputes activations instead of storing them")
        )
    mini = cfg.integer("train.train_policy.mini_batch")
    if mini is not None and mini > 1:
        fixes.append(
            fix(cfg, "train.train_policy.mini_batch", max(1, mini // 2), "fewer samples per forward/backward pass")
        )
    if run_mode(ctx) != "disaggregated":
        util = cfg.number("rollout.gpu_memory_utilization")
        fixes.append(
            fix(
                cfg,
                "rollout.gpu_memory_utilization",
                round(max(0.1, (util or 0.8) - 0.2), 2),
                "vLLM shares this GPU with the trainer",
            )
        )
    return fixes


@detector("policy_oom")
def policy_oom(ctx: DetectorContext) -> Verdict:
    hits = [h for h in _oom_hits(ctx) if not _is_vllm(ctx, h)]
    findings: list[Finding | None] = []
    for path, group in _group(hits).items():
        replica = group[0].event.source.replica
        t = ts_of(group[0].event)
        step_then = ctx.metrics.step_at(t) if t is not None else None
        findings.append(
            make_finding(
                "policy_oom",
                f"{replica} ran out of GPU memory while training"
                + (f" (near step {step_then})" if step_then is not None else " (before the first logged step)")
                + ". The trainer process dies and the run stops making progress.",
                [*group[:2], *group[-1:]],
                fixes=_policy_fixes(ctx),
                action="Keep train_batch_per_replica divisible by dp_shard_size × mini_batch when you change them.",
                data={"replica": replica, "file": path, "count": len(group)},
            )
        )
    return verdict_of(*findings)
