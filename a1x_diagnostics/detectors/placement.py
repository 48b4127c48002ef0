"""Placement: whether the replicas' GPUs fit the node (``insufficient_gpus``).

Mechanism (docs/reference/cosmos-rl.md §2.2-§2.4, §13.6, §15; docs/reference/alpamayo-recipe.md §8.3, §14 row 2): each
replica
needs ``tp × dp_replicate × pp × cp × dp_shard`` GPUs and takes the next contiguous slice of the
node's GPUs (policies first, then rollouts). One replica bigger than the node raises the
misleading ``Replica with GPUs larger than 8 occurs but not on Lepton job …`` (the "8" is literal).
More replicas than GPUs raises nothing: the launcher plans a second worker node (``Number of
workers required: 2``, ``Multiple worker nodes will be used …``), starts only this node's share,
and the started replicas wait forever (``Waiting for N more replicas to arrive``, no Stat line).
"""

from __future__ import annotations

from a1x_diagnostics.detectors._base import (
    DetectorContext,
    Verdict,
    detector,
    duration,
    fix,
    gpus_per_replica,
    make_finding,
    policy_gpus_needed,
    run_mode,
    ts_of,
    verdict_of,
)
from a1x_diagnostics.events import Role, SignalKind
from a1x_diagnostics.findings import Finding, Fix, Severity

HANG_AFTER_S = 120.0


def _arithmetic(ctx: DetectorContext) -> tuple[str | None, int | None, int | None]:
    """('policy 1 × 4 + rollout 1 × 1 = 5 GPUs', needed, detected)."""
    planned: dict[str, tuple[int, int]] = {}
    for sig in ctx.signals(SignalKind.REPLICAS_PLANNED):
        role, count, each = sig.fields.get("role"), sig.fields.get("count"), sig.fields.get("gpus_each")
        if isinstance(role, str) and isinstance(count, int) and isinstance(each, int):
            planned[role.lower()] = (count, each)
    if not planned and ctx.config.known:
        for role in ("policy", "rollout"):
            count = ctx.config.integer(f"{role}.parallelism.n_init_replicas")
            each = gpus_per_replica(ctx, role)
            if count is not None and each is not None:
                planned[role] = (count, each)
        if run_mode(ctx) == "colocated" or str(ctx.config.get("train.train_policy.type")) == "sft":
            planned.pop("rollout", None)
    detected_sig = ctx.store.signal(SignalKind.GPUS_DETECTED).last
    detected = detected_sig.fields.get("count") if detected_sig is not None else None
    detected = detected if isinstance(detected, int) else None
    if not planned:
        return None, None, detected
    planned = {role: ce for role, ce in planned.items() if ce[0] > 0}
    totals = {role: c * e for role, (c, e) in planned.items()}
    terms = " + ".join(f"{role} {c} × {e}" for role, (c, e) in planned.items())
    if run_mode(ctx) == "colocated_separated" and "rollout" in totals:
        # rollout i runs on policy i's GPUs (§2.3): the two share them
        needed = max(totals.get("policy", 0), totals["rollout"]) + totals.get("reference", 0)
        text = f"{terms}, rollouts sharing the policies' GPUs (colocated_separated) = {needed} GPUs"
    else:
        needed = sum(totals.values())
        text = f"{terms} = {needed} GPUs"
    if detected is not None:
        text += f", and this node shows {detected}"
    return text, needed, detected


def _shard_fix(ctx: DetectorContext, detected: int | None) -> list[Fix]:
    """The largest policy ``dp_shard_size`` below the current one whose replicas fit the GPUs this node showed
    and that still divides the batch (§8.7 rule 2): fewer GPUs, never more. Nothing when the count is unknown."""
    shard = ctx.config.integer("policy.parallelism.dp_shard_size")
    if shard is None or shard <= 1 or detected is None or detected < 1:
        return []
    batch = ctx.config.integer("train.train_batch_per_replica")
    mini = ctx.config.integer("train.train_policy.mini_batch") or 1
    for d in range(shard - 1, 0, -1):
        need = policy_gpus_needed(ctx, d)
        if need is None or need > detected or (batch is not None and batch % (d * max(1, mini)) != 0):
            continue
        return [
            fix(
                ctx.config,
                "policy.parallelism.dp_shard_size",
                d,
                f"the replicas then need {need} of the {detected} GPUs this node has; trade-off: less FSDP "
                "sharding, more memory per GPU: for wiring tests (recipe §14 row 2)",
            )
        ]
    return []


@detector("insufficient_gpus")
def insufficient_gpus(ctx: DetectorContext) -> Verdict:
    arithmetic, needed, detected = _arithmetic(ctx)
    layout = ctx.hits("gpu_layout")
    findings = []
    if layout:
        kind = layout[0].fields.get("kind") or layout[0].fields.get("reason")
        if kind == "no_gpus":
            what = "The launcher found no GPU at all (nvidia-smi failed or CUDA_VISIBLE_DEVICES is empty)."
        elif kind == "bad_per_node":
            what = "The launcher only accepts 1, 2, 4 or 8 visible GPUs per node" + (
                f"; it sees {detected}." if detected else "."
            )
        elif kind == "invalid_device":
            what = (
                "A process asked for a GPU that does not exist ('invalid device ordinal'): more ranks per node "
                "than visible GPUs, or CUDA_VISIBLE_DEVICES hides the GPU a rank was given."
            )
        elif kind == "vllm_device":
            what = (f"TRL was told to run vLLM on {layout[0].fields.get('device') or 'a GPU'}, which this machine does "
                    "not show: its GRPO trainer puts vLLM on a GPU of its own, beside the GPUs of the training "
                    "processes (docs/reference/foreign-errors.md C1). With one GPU, vllm_device must be cuda:0; "
                    "with more, train on one process fewer than the GPUs (--num_processes).")
        elif kind == "bad_bundle":
            index, count = layout[0].fields.get("index"), layout[0].fields.get("count")
            what = (f"An actor was placed on bundle {index} of a Ray placement group that has {count} bundle(s): more "
                    "workers than the GPU bundles reserved for them (docs/reference/foreign-errors.md F5).")
        elif kind == "pending":
            what = (f"Ray cannot place a task or actor that asks for {layout[0].fields.get('request') or 'GPUs'}: the "
                    "cluster does not have the GPUs it requires, so it waits (a hang, not an error, until the job is "
                    "stopped; docs/reference/foreign-errors.md F5).")
        elif kind == "larger_than_node":
            what = (
                "One replica needs more GPUs than this node has. The launcher words it as 'GPUs larger than 8 … "
                "not on Lepton job' and asks for --node-ip-list, which is misleading on a single machine."
            )
        else:
            what = "The replicas need more GPUs than are available."
        if arithmetic:
            what += f" Needed: {arithmetic}."
        findings.append(
            make_finding(
                "insufficient_gpus",
                what,
                [
                    layout[0],
                    ctx.store.signal(SignalKind.GPUS_DETECTED).last,
                    *ctx.signals(SignalKind.REPLICAS_PLANNED)[:2],
                ],
                fixes=_shard_fix(ctx, detected),
                action="Run on a host with enough GPUs (check CUDA_VISIBLE_DEVICES), or use fewer replicas / "
                "smaller parallelism." + (" `ray status` shows what the cluster has."
                                          if kind in ("pending", "bad_bundle") else ""),
                severity=Severity.WARNING if kind == "pending" and len({h.fields.get("reason") or h.fields.get("kind")
                                                                        for h in layout}) == 1 else None,
                data={"needed": needed, "detected": detected, "reason": kind},
            )
        )
        return verdict_of(*findings)

    if ctx.store.stats or ctx.metrics.step is not None:
        return Verdict.ok()
    no_rollout = _no_gpu_left_for_rollouts(ctx, detected)
    if no_rollout is not None:
        return verdict_of(no_rollout)
    workers = ctx.store.signal(SignalKind.WORKERS_REQUIRED).last
    multiple = ctx.store.signal(SignalKind.MULTIPLE_WORKERS).last
    waiting = ctx.signals(SignalKind.WAITING_FOR_REPLICAS) + ctx.signals(SignalKind.NO_VALID_ROLLOUT)
    worker_count = workers.fields.get("count") if workers is not None else None
    planned_second_node = (isinstance(worker_count, int) and worker_count > 1) or multiple is not None
    first_wait = min(waiting, key=lambda s: s.line) if waiting else None
    waited = ctx.elapsed_since(ts_of(first_wait)) if first_wait is not None else None
    missing: list[str] = []
    for role, file_role in (("policy", Role.POLICY), ("rollout", Role.ROLLOUT)):
        want = ctx.config.integer(f"{role}.parallelism.n_init_replicas")
        have = len(ctx.files(file_role))
        if (
            want is not None
            and ctx.files()
            and have < want
            and not (role == "rollout" and run_mode(ctx) == "colocated")
        ):
            missing.append(f"{want - have} of {want} {role} replica log(s) are missing")
    overcommitted = needed is not None and detected is not None and needed > detected
    stuck = waited is not None and waited >= HANG_AFTER_S
    post_mortem_wait = bool(waiting) and not ctx.live
    if not (
        (planned_second_node and (stuck or overcommitted or post_mortem_wait)) or (stuck and (missing or overcommitted))
    ):
        if waiting and not stuck:
            return Verdict.ok("the controller is waiting for replicas; too early to call it a hang")
        return Verdict.ok()
    parts = [
        "The run waits for replicas that were never started: no rollout ever reached the controller (no Stat line)"
    ]
    if planned_second_node:
        parts.append(
            f"the launcher planned {worker_count or 'more than one'} worker nodes on what is one machine, "
            "so it launched only the first node's share"
        )
    if waited is not None:
        parts.append(f"the controller has been waiting for {duration(waited)}")
    parts.extend(missing)
    explanation = "; ".join(parts) + "."
    if arithmetic:
        explanation += f" GPU arithmetic: {arithmetic}."
    findings.append(
        make_finding(
            "insufficient_gpus",
            explanation,
            [
                multiple,
                workers,
                waiting[-1] if waiting else None,
                first_wait,
                ctx.store.signal(SignalKind.GPUS_DETECTED).last,
            ],
            fixes=_shard_fix(ctx, detected),
            action="Stop the run; launch with fewer replicas (--policy/--rollout) or smaller parallelism so the "
            "sum fits this node, or start the launcher on every planned node.",
            data={"needed": needed, "detected": detected, "workers": worker_count, "waited_s": waited},
        )
    )
    return verdict_of(*findings)


def _no_gpu_left_for_rollouts(ctx: DetectorContext, detected: int | None) -> Finding | None:
    """The launcher sizes the rollout replicas from the GPUs the policies leave (docs/reference/cosmos-rl.md §2.3):
    when the policies take every GPU it plans 0 rollouts, and a GRPO launch then fails on the missing rollout section
    (Cosmos-Reason1's launcher: KeyError 'rollout', seen in nvidia-cosmos/cosmos-reason1#11). An SFT run plans 0
    rollouts too and goes on: only a launch that then crashed is told."""
    planned = {str(s.fields.get("role")).lower(): s for s in ctx.signals(SignalKind.REPLICAS_PLANNED)}
    rollout, policy = planned.get("rollout"), planned.get("policy")
    if rollout is None or policy is None or rollout.fields.get("count") != 0 or detected is None:
        return None
    count, each = policy.fields.get("count"), policy.fields.get("gpus_each")
    if not isinstance(count, int) or not isinstance(each, int) or count * each < detected:
        return None
    crashed = [t for t in ctx.store.tracebacks if t.source.path == rollout.source.path and t.line > rollout.line]
    if not crashed:
        return None
    return make_finding(
        "insufficient_gpus",
        f"The policy replicas take every GPU (policy {count} × {each} = {count * each}, and this node shows "
        f"{detected}), so the launcher planned 0 rollout replicas, and the launch then failed "
        f"({crashed[0].exc_type or 'a traceback'}): GRPO needs at least one rollout replica on GPUs of its own "
        "(or shared, in colocated mode).",
        [rollout, policy, ctx.store.signal(SignalKind.GPUS_DETECTED).last, crashed[0]],
        fixes=_shard_fix(ctx, detected - 1 if detected > 1 else None),
        action="Leave GPUs for a rollout replica: fewer policy GPUs (smaller dp_shard_size or fewer policy "
               "replicas), or a node with more GPUs; `mode = \"colocated\"` shares the policy's GPUs with the rollout.",
        data={"needed": None, "detected": detected, "reason": "no_rollout_gpus"},
    )

