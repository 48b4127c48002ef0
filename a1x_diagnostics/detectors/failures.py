"""Hard failures named by the logs: NCCL, checkpoints, config loading, the controller, generation.

Each detector here quotes the exact failure lines of docs/reference/cosmos-rl.md (§4.1, §5.3, §6.3, §13.6) and
drops the ones that are normal at the end of a run: disaggregated runs abort NCCL communicators at
shutdown, and replicas that outlive the controller fail to reach it (§15).
"""

from __future__ import annotations

import re
from collections import Counter

from a1x_diagnostics.detectors._base import DetectorContext, Verdict, detector, fix, make_finding, ts_of, verdict_of
from a1x_diagnostics.detectors._config import clip_text
from a1x_diagnostics.detectors._probes import Hit, oom_kind
from a1x_diagnostics.events import CheckpointPhase, Role, SignalKind, Stat, Traceback
from a1x_diagnostics.findings import Fix, Severity

TEARDOWN_KINDS = {"aborted", "abnormal_teardown"}
MIN_HA_RECOVERIES = 3


def shutdown_started(ctx: DetectorContext) -> float | None:
    """When the end of the run began: the final step, or the first shutdown line."""
    times = [ctx.final_step_ts]
    for kind in (SignalKind.POLICY_SIDE_FINISHED, SignalKind.ALL_REPLICAS_FINISHED, SignalKind.TERMINATED_ALL):
        sig = ctx.store.signal(kind).first
        if sig is not None:
            times.append(ts_of(sig))
    known = [t for t in times if t is not None]
    return min(known) if known else None


def _in_teardown(ctx: DetectorContext, hit: Hit, start: float | None) -> bool:
    t = ts_of(hit.event)
    return start is not None and t is not None and t >= start


# Kinds that do not stop the run by themselves: 0.4.7's mesh rebuild timeout is reported and the rollout waits for
# the next rebuild (docs/reference/cosmos-rl.md §16.2), and a connect attempt torch retries (foreign-errors.md B2).
SOFT_KINDS = frozenset({"mesh_build_timeout", "rollout_reported", "socket_connect"})
# Frames of a trainer -> rollout weight update in other stacks (TRL's vllm_client, ms-swift, OpenRLHF, verl; the
# users' logs of docs/reference/foreign-errors.md F2, F4)
WEIGHT_FRAMES = ("update_named_param", "_move_model_to_vllm", "update_weight", "broadcast_weights",
                 "_broadcast_to_vllm", "sync_weights", "sync_model_weights", "_sync_weight")
WEIGHT_UPDATE_LINES = 50  # an 'update weight:' line this close before the error: the update was under way


def weight_update_context(ctx: DetectorContext, hit: Hit) -> str | None:
    """What shows that a distributed failure happened inside a trainer -> rollout weight update."""
    text = hit.event.text
    if "/broadcast_from/" in text:
        return ("the store key /broadcast_from/… is vLLM's StatelessProcessGroup broadcast, the group the trainer "
                "sends its weights to vLLM through")
    path, line = hit.event.source.path, hit.event.line
    for tb in ctx.store.tracebacks:
        if isinstance(tb, Traceback) and tb.source.path == path and tb.line <= line <= tb.last_line + 1:
            frames = [f for f in WEIGHT_FRAMES if any(f"in {f}" in ln for ln in tb.lines)]
            if frames:
                return f"its traceback runs through the weight update ({', '.join(frames[:3])})"
    update = next((s for s in reversed(ctx.signals(SignalKind.WEIGHT_UPDATE))
                   if s.source.path == path and 0 < line - s.line <= WEIGHT_UPDATE_LINES), None)
    if update is not None:
        return (f"the trainer was sending its weights to the rollout engine ('update weight: "
                f"{update.fields.get('name')}' {line - update.line} line(s) before)")
    if hit.fields.get("kind") == "r2r_cancelled":
        return "the rollouts' own weight broadcast (R2R) was cancelled"
    return None


def _fabric(hits: list[Hit]) -> str | None:
    """The InfiniBand failure an NCCL net-plugin or libmlx5 line names (docs/reference/foreign-errors.md F4)."""
    ib = [h for h in hits if h.fields.get("kind") == "ib_completion_error"]
    if not ib:
        return None
    status = next((h.fields.get("status") for h in ib if h.fields.get("status") is not None), None)
    peer = next((h.fields.get("peer") for h in ib if h.fields.get("peer")), None)
    what = "a work request on the InfiniBand fabric completed with an error"
    if status == 12:
        what += " (status 12, retry exceeded: the peer or the link stopped answering)"
    elif status is not None:
        what += f" (status {status})"
    return what + (f", peer {peer}" if peer else "") + " (docs/reference/foreign-errors.md F4)"


@detector("nccl_timeout")
def nccl_timeout(ctx: DetectorContext) -> Verdict:
    start = shutdown_started(ctx)
    relevant: list[Hit] = []
    recovering: list[Hit] = []
    for hit in ctx.hits("nccl"):
        kind = str(hit.fields.get("kind") or "")
        if _in_teardown(ctx, hit, start):
            continue
        if kind == "abnormal_teardown" and "policy_P2R" in hit.event.text:
            continue  # the P2R drain abort: nccl_p2p_hang explains it
        if kind == "p2r_send_failed":
            continue  # the policy's P2R send failed: nccl_p2p_hang
        if kind == "ha_recovering":
            recovering.append(hit)
            continue
        relevant.append(hit)
    if len(recovering) >= MIN_HA_RECOVERIES:
        relevant.extend(recovering)
    cleaned = [s for s in ctx.signals(SignalKind.HANG_REPLICAS_CLEANED) if start is None or (ts_of(s) or 0) < start]
    if not relevant and not cleaned:
        return Verdict.ok()
    kinds = Counter(str(h.fields.get("kind") or "nccl") for h in relevant)
    replicas = sorted({h.event.source.replica for h in relevant})
    names = sorted({h.event.source.replica if h.event.source.role is not Role.LAUNCHER else "the captured output"
                    for h in relevant})
    explanation = (
        f"NCCL collectives failed before the end of training ({', '.join(f'{k} ×{n}' for k, n in kinds.items())}) "
        f"in {', '.join(names) or 'the controller'}."
    )
    if cleaned:
        explanation += " The controller removed replicas it considered hung."
    explanation += (
        " A timed-out collective usually means a peer died or hung first; the others wait up to "
        "COSMOS_NCCL_TIMEOUT_MS (600 s)."
    )
    relevant.sort(key=lambda h: ts_of(h.event) or 0)
    data: dict[str, object] = {"kinds": dict(kinds), "replicas": replicas}
    stuck = [h for h in relevant if h.fields.get("kind") == "torch_watchdog_stuck"]
    if stuck:
        seconds = next((h.fields.get("seconds") for h in stuck if isinstance(h.fields.get("seconds"), int)), None)
        explanation += (" ProcessGroupNCCL's watchdog itself made no progress"
                        + (f" for {seconds} s" if seconds else "")
                        + ": this rank stalled inside a CUDA/NCCL call (a hang, docs/reference/foreign-errors.md F3), "
                        "and torch then ended the process.")
        data["stalled_s"] = seconds
    fabric = _fabric(relevant)
    if fabric:
        explanation += f" The fabric failed: {fabric}."
        data["fabric"] = "infiniband"
    context = next((c for h in relevant if (c := weight_update_context(ctx, h))), None)
    if context:
        explanation += f" It happened during the weight sync: {context}."
        data["weight_sync"] = True
    soft = all(k in SOFT_KINDS for k in kinds) and not cleaned
    if soft:
        explanation += (" These kinds do not stop a run by themselves (0.4.7 rebuilds the rollout mesh; torch retries "
                        "a connect): a warning unless the run then fails.")
    action = ("Look for the replica that failed first (replica_died, OOM); for network trouble rerun with "
              "NCCL_DEBUG=INFO. Raise COSMOS_NCCL_TIMEOUT_MS only if large transfers are legitimately slow.")
    if fabric:
        action = ("Check the InfiniBand link and the peer it names (ibstat, the switch and the host's kernel log); "
                  "rerun with NCCL_DEBUG=INFO to see which HCA and port. No setting of the run fixes a failing "
                  "fabric.")
    finding = make_finding(
        "nccl_timeout",
        explanation,
        [*relevant[:3], *cleaned[:1], *relevant[-1:]],
        action=action,
        severity=Severity.WARNING if soft else None,
        data=data,
    )
    return verdict_of(finding)


CKPT_STALE_S = 600.0


@detector("checkpoint_incomplete")
def checkpoint_incomplete(ctx: DetectorContext) -> Verdict:
    bad = [
        ev
        for phase in (CheckpointPhase.INCOMPLETE, CheckpointPhase.FAILED, CheckpointPhase.PRUNED)
        for ev in (ctx.store.checkpoints.get(phase.value) or [])
    ]
    failed_hits = ctx.hits("checkpoint_failed")
    unfinished = []
    for facts in ctx.files(Role.POLICY):
        saving = facts.marks.get("ckpt:saving")
        saved = facts.marks.get("ckpt:saved")
        if saving is None or (saved is not None and saved.line > saving.line):
            continue
        waited = ctx.elapsed_since(saving.ts)
        if not ctx.live or (waited is not None and waited >= CKPT_STALE_S):
            event = next(
                (
                    e
                    for e in (ctx.store.checkpoints.get("saving") or [])
                    if e.source.path == facts.source.path and e.line == saving.line
                ),
                None,
            )
            if event is not None:
                unfinished.append(event)
    if not (bad or failed_hits or unfinished):
        if not ctx.store.checkpoints:
            return Verdict.ok("no checkpoint lines")
        return Verdict.ok()
    parts = []
    if bad:
        phases = Counter(ev.phase.value for ev in bad)
        parts.append(", ".join(f"{p} ×{n}" for p, n in phases.items()))
    if failed_hits:
        parts.append("a checkpoint save raised an error")
    if unfinished:
        steps = ", ".join(str(ev.step) for ev in unfinished if ev.step is not None)
        parts.append(f"a save started (step {steps or '?'}) and never reported success before the log ended")
    finding = make_finding(
        "checkpoint_incomplete",
        "A checkpoint is incomplete: " + "; ".join(parts) + ". A step directory without every `.rank_<r>_complete` "
        "marker cannot be resumed from or exported (the exporter fails with 'Rank key mismatch').",
        [*bad[:3], *failed_hits[:2], *unfinished[:2]],
        action="Export or resume only from a step whose policy/ directory has cosmos_config and every "
        ".rank_<r>_complete; "
        "check free disk space in train.output_dir.",
        data={"incomplete": len(bad), "errors": len(failed_hits), "unfinished": len(unfinished)},
    )
    return verdict_of(finding)


@detector("config_load_failed")
def config_load_failed(ctx: DetectorContext) -> Verdict:
    hits = ctx.hits("config_load_failed")
    if not hits:
        return Verdict.ok()
    exited = ctx.store.signal(SignalKind.PROCESS_EXITED_EARLY).last
    first = hits[0]
    error = str(first.fields.get("error") or "").strip() or first.event.text.strip()
    finding = make_finding(
        "config_load_failed",
        f"Cosmos-RL rejected the configuration: {clip_text(error, 300)}. The controller wraps every start-up error "
        "(validation, "
        "dataset, tokenizer, Redis) in this message; the part after the path is the real cause.",
        [first, *hits[1:2], exited],
        action="Fix the TOML value or the resource the error names, then run `a1x-tui lint CONFIG` before relaunching.",
        data={"error": error[:500]},
    )
    return verdict_of(finding)


MIN_HEARTBEAT_FAILURES = 3


@detector("controller_unreachable")
def controller_unreachable(ctx: DetectorContext) -> Verdict:
    start = shutdown_started(ctx)
    controllers = ctx.files(Role.CONTROLLER)
    controller_end = max((f.last_ts for f in controllers if f.last_ts is not None), default=None)
    hits = []
    for hit in [*ctx.hits("http"), *ctx.hits("redis_failure")]:
        t = ts_of(hit.event)
        if _in_teardown(ctx, hit, start):
            continue
        if start is not None and controller_end is not None and t is not None and t >= controller_end:
            continue
        if hit.id == "redis_failure" and (hit.fields.get("rc") == 127 or "return code 127" in hit.event.text):
            continue  # redis_missing
        hits.append(hit)
    busy = ctx.signals(SignalKind.CONTROLLER_PORT_BUSY)
    kinds = Counter(str(h.fields.get("kind") or h.id) for h in hits)
    heartbeat_only = set(kinds) <= {"heartbeat"}
    if not busy and (not hits or (heartbeat_only and kinds["heartbeat"] < MIN_HEARTBEAT_FAILURES)):
        return Verdict.ok()
    parts = []
    if busy:
        parts.append("the controller's port was already taken, so it could not start")
    if hits:
        parts.append("replicas failed to talk to it: " + ", ".join(f"{k} ×{n}" for k, n in kinds.items()))
    finding = make_finding(
        "controller_unreachable",
        "Replicas cannot reach the controller: " + "; ".join(parts) + ". Worker calls retry for minutes before they "
        "give up, so these lines mean the controller (or Redis) was down or unreachable for a long time.",
        [*busy[:1], *hits[:3], *hits[-1:]],
        action="Check whether the controller process is alive and what controller.log says at that time; check "
        "COSMOS_CONTROLLER_HOST, the port, and the network between nodes.",
        data={"kinds": dict(kinds)},
    )
    return verdict_of(finding)


_TOO_LONG = re.compile(r"longer than the maximum model length")


def _generation_fixes(ctx: DetectorContext, texts: str) -> list[Fix]:
    if not _TOO_LONG.search(texts):
        return []
    cfg = ctx.config
    length = cfg.integer("policy.model_max_length") or 4096
    response = cfg.integer("rollout.max_response_length") or 2048
    return [
        fix(
            cfg,
            "policy.model_max_length",
            length + response,
            "prompt + max_response_length must fit in max_model_len (§6.7)",
        ),
        fix(cfg, "rollout.max_response_length", max(256, response // 2), "or generate shorter responses"),
    ]


@detector("rollout_generation_failed")
def rollout_generation_failed(ctx: DetectorContext) -> Verdict:
    hits = [h for h in ctx.hits("rollout_generation_failed") if not oom_kind(h.event.text)]
    counted = ctx.metrics.rollout_failed
    if not hits and not counted:
        return Verdict.ok()
    texts = "\n".join(h.event.text for h in hits)
    tracebacks = [
        t
        for t in ctx.store.tracebacks
        if isinstance(t, Traceback) and _TOO_LONG.search(t.text + "\n".join(t.lines[-2:]))
    ]
    if tracebacks:
        texts += "\n" + tracebacks[0].lines[-1]
    replicas = sorted({h.event.source.replica for h in hits})
    total = ctx.store.hit("rollout_generation_failed").count
    old_shape = isinstance(ctx.store.stats.last, Stat) and ctx.store.stats.last.in_flight is None
    explanation = f"Rollout generation failed {total or counted} time(s)"
    explanation += f" in {', '.join(replicas)}" if replicas else ""
    if hits:
        explanation += f" ({clip_text(str(hits[0].fields.get('error') or hits[0].event.text).strip(), 200)})"
    explanation += ". Each failure discards a whole batch of completions."
    if old_shape:
        explanation += (
            " At rev 747d1bd the failed batch's in-flight budget is never released, so repeated failures end in "
            "a permanent, silent throttle."
        )
    last_sampling = ctx.store.dynamic_sampling.last
    finding = make_finding(
        "rollout_generation_failed",
        explanation,
        [*hits[:2], *hits[-1:], *tracebacks[:1], last_sampling if counted else None],
        fixes=_generation_fixes(ctx, texts),
        action=None if _TOO_LONG.search(texts) else "Read the traceback after the first failure in the rollout log.",
        data={"failures": total, "rollout_failed_counted": counted},
    )
    return verdict_of(finding)


_RESUME_WORDS = {
    "load_failed": "the checkpoint chosen for the resume could not be loaded",
    "metadata_missing": "its metadata file is missing (extra_info_rank_<r>.pth: the save of that step was cut short)",
    "no_checkpoint": "train.resume names a path that holds no complete checkpoint",
    "mismatch": "the controller's resume state and the policy's checkpoint disagree, so the controller refused the "
                "resume (HTTP 409)",
}


@detector("resume_failed")
def resume_failed(ctx: DetectorContext) -> Verdict:
    """cosmos-rl 0.4.7 stops when a resume cannot restore exactly (docs/reference/cosmos-rl.md §16.2 "Resume"):
    0.4.4 fell back to another checkpoint or to step 0 without a word (§13.6)."""
    sigs = ctx.signals(SignalKind.RESUME_FAILED)
    if not sigs:
        return Verdict.ok()
    reasons = list(dict.fromkeys(str(s.fields.get("reason") or "load_failed") for s in sigs))
    path = next((str(p) for s in sigs if (p := s.fields.get("path"))), None)
    error = next((str(e) for s in sigs if (e := s.fields.get("error"))), None)
    parts = [_RESUME_WORDS.get(r, r) for r in reasons]
    text = "The run could not resume: " + "; ".join(parts)
    text += f" ({clip_text(path, 200)})" if path else ""
    text += f": {clip_text(error, 240).rstrip('.')}." if error and "mismatch" in reasons else "."
    text += (" cosmos-rl 0.4.7 stops rather than train on from another step (0.4.4 fell back to the next checkpoint "
             "or to the Hugging Face weights without a word).")
    resume = ctx.config.get("train.resume")
    fixes: list[Fix] = []
    if "no_checkpoint" in reasons and isinstance(resume, str) and not _is_bool_text(resume):
        fixes.append(fix(ctx.config, "train.resume", True,
                         "take the newest complete checkpoint of this run's output folder (or the Hugging Face "
                         "weights at step 0 when there is none); trade-off: it may resume from another step than the "
                         "one named"))
    if "mismatch" in reasons:
        action = ("Resume with the configuration the checkpoint was saved with (the keys its message names changed), "
                  "or start over with train.resume = false (the progress is lost).")
    elif "no_checkpoint" in reasons and not fixes:
        action = ("Point train.resume at a step_N/policy folder that holds a complete checkpoint (its cosmos_config "
                  "and every .rank_<r>_complete), or set it to true to take the newest complete one.")
    elif "no_checkpoint" in reasons:
        action = None
    else:
        folder = path.rsplit("/policy", 1)[0] if path and "/policy" in path else "that step folder"
        action = (f"Move {folder} aside (its save was cut short) so the newest complete step is chosen, or point "
                  "train.resume at an earlier complete step_N/policy; train.resume = false starts over from step 0 "
                  "(the progress is lost).")
    finding = make_finding(
        "resume_failed", text, [*sigs[:3], *sigs[-1:]], fixes=fixes, action=action,
        data={"reasons": reasons, "path": path},
    )
    return verdict_of(finding)


def _is_bool_text(value: str) -> bool:
    return value.strip().lower() in ("true", "false")
