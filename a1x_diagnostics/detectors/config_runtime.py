"""Config mistakes the run itself reports: the same ids as the linter, with log lines as evidence.

Cosmos-RL validates some things only at runtime (docs/reference/cosmos-rl.md §8.2, §8.6, §8.7): a replica asserts
on its parallel dims or its batch divisibility and dies, and the loader silently raises
``allowed_outdated_steps`` with a warning. With ``--config`` the linter raises the same ids from the
TOML; the report then holds one finding per id with both kinds of evidence.
"""

from __future__ import annotations

import re

from a1x_diagnostics.detectors._base import DetectorContext, Verdict, detector, fix, make_finding, verdict_of
from a1x_diagnostics.detectors._config import clip_text
from a1x_diagnostics.events import Role, SignalKind
from a1x_diagnostics.layout import divisible_split

_DIMS = re.compile(r"tp\((?P<tp>\d+)\).*WORLD_SIZE\((?P<world>\d+)\)")


@detector("outdated_steps_below_sync")
def outdated_steps_below_sync(ctx: DetectorContext) -> Verdict:
    raised = [s for s in ctx.signals(SignalKind.CONFIG_ADJUSTED) if s.fields.get("key") == "allowed_outdated_steps"]
    raised = [s for s in raised if "sync_weight_interval" in s.text]
    if not raised:
        return Verdict.ok()
    value = raised[0].fields.get("value")
    raised_to = int(value) if isinstance(value, (int, str)) and str(value).lstrip("-").isdigit() else 0
    return verdict_of(
        make_finding(
            "outdated_steps_below_sync",
            f"The config loader raised allowed_outdated_steps to {value} because it was below sync_weight_interval - 1 "
            "(docs/reference/cosmos-rl.md §8.6). The TOML value is not what runs; rollouts then wait for weights "
            "between syncs "
            "(prompt rejected lines, steps in bursts, §15).",
            raised[:1],
            fixes=[
                fix(
                    ctx.config,
                    "train.train_policy.allowed_outdated_steps",
                    raised_to,
                    "the value the loader runs with anyway, now written in the TOML (§8.6); trade-off: none, the "
                    "run behaves the same (weight_sync_lag says what to change when rollouts wait for weights)",
                )
            ],
            data={"raised_to": value},
        )
    )


@detector("batch_not_divisible")
def batch_not_divisible(ctx: DetectorContext) -> Verdict:
    sigs = ctx.signals(SignalKind.BATCH_NOT_DIVISIBLE)
    if not sigs:
        return Verdict.ok()
    first = sigs[0]
    batch, shard, mini = first.fields.get("batch"), first.fields.get("dp_shard"), first.fields.get("mini_batch")
    fixes = []
    if isinstance(batch, int) and isinstance(shard, int) and isinstance(mini, int) and batch > 0 and shard * mini > 0:
        # the batch is the algorithm's: only its split changes, never onto more GPUs (a1x_diagnostics/layout.py)
        d, m = divisible_split(batch, shard, mini)
        if d != shard:
            fixes.append(fix(ctx.config, "policy.parallelism.dp_shard_size", d,
                             f"{batch} completions split over {d} GPUs (§8.7 rule 2); trade-off: fewer GPUs shard "
                             "the policy, more memory on each"))
        if m != mini:
            fixes.append(fix(ctx.config, "train.train_policy.mini_batch", m,
                             f"{batch} / ({d} × {m}) = {batch // (d * m)} passes per GPU (§8.7 rule 2); trade-off: "
                             "more, smaller forward/backward passes per step"))
    return verdict_of(
        make_finding(
            "batch_not_divisible",
            "A policy replica asserted that train_batch_per_replica is not divisible by its batch split and stopped: "
            f"{clip_text(first.text.split(' - ')[-1].strip(), 200)}",
            [first],
            fixes=fixes,
            data={"batch": batch, "dp_shard_size": shard, "mini_batch": mini},
        )
    )


@detector("tp_size_implicit")
def tp_size_implicit(ctx: DetectorContext) -> Verdict:
    for sig in ctx.signals(SignalKind.INVALID_PARALLEL_DIMS):
        m = _DIMS.search(sig.text)
        if m is None or int(m.group("tp")) <= int(m.group("world")):
            continue
        section = "rollout" if sig.source.role is Role.ROLLOUT else "policy"
        path = f"{section}.parallelism.tp_size"
        explicit = ctx.config.toml is not None and ctx.config.toml.is_set(path)
        return verdict_of(
            make_finding(
                "tp_size_implicit",
                f"{sig.source.replica} was built with tp={m.group('tp')} on {m.group('world')} GPU(s) and died: the "
                "launcher gives a replica GPUs by its own default tp_size = 1 while the schema default is 2 "
                "(docs/reference/cosmos-rl.md §2.2)"
                + ("." if not explicit else "; the TOML sets it, so check the launcher's --policy/--rollout counts."),
                [sig],
                fixes=[
                    fix(ctx.config, path, int(m.group("world")),
                        "set tp_size explicitly in both parallelism tables; trade-off: none, the replica gets the "
                        "GPUs it was sized for")
                ],
                data={"tp": int(m.group("tp")), "world_size": int(m.group("world")), "section": section},
            )
        )
    return Verdict.ok()
