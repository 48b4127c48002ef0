"""Node and GPU arithmetic for cluster runs, against docs/reference/cosmos-rl.md §2.2-§2.4, §11.1-§11.2 and recipe
§8.5."""

from __future__ import annotations

import pytest
from slurm_helpers import recipe, with_values

from a1x_diagnostics.findings import Evidence, Severity
from a1x_supervisor.slurm import ConfigSource, CosmosRev, NodePlan, Packing, PlanError, cluster_findings, plan_nodes
from a1x_supervisor.slurm.plan import prefetch_need

CLUSTER = "recipe_cluster_80.toml"
SRC = ConfigSource("recipe.toml")


def plan(data: dict, packing: Packing = Packing.DISPATCH, gpus: int = 8, **kw: object) -> NodePlan:
    result = plan_nodes(data, gpus_per_node=gpus, packing=packing, **kw)  # type: ignore[arg-type]
    assert isinstance(result, NodePlan), result
    return result


def error(data: dict, packing: Packing = Packing.DISPATCH, gpus: int = 8, **kw: object) -> PlanError:
    result = plan_nodes(data, gpus_per_node=gpus, packing=packing, **kw)  # type: ignore[arg-type]
    assert isinstance(result, PlanError), result
    return result


@pytest.mark.parametrize("packing", list(Packing))
def test_the_recipe_cluster_is_80_nodes_64_policy_then_16_rollout(packing: Packing) -> None:
    # docs/reference/alpamayo-recipe.md §8.5: 64 policy replicas × dp_shard 8 + 128 rollout replicas = 80 nodes.
    p = plan(recipe(CLUSTER), packing)
    assert p.n_nodes == 80
    assert [(s.role, s.replicas, s.gpus_each) for s in p.shapes] == [
        ("policy", 64, 8),
        ("rollout", 128, 1),
        ("reference", 0, 0),
    ]
    assert p.gpus_needed == p.gpus_allocated == 640
    assert [(roles, (r.start, r.stop)) for roles, r in p.node_sets()] == [
        (("policy",), (0, 64)),
        (("rollout",), (64, 80)),
    ]
    assert p.nodes[0].controller and not any(n.controller for n in p.nodes[1:])
    assert [s.name for s in p.nodes[63].slots] == ["policy_63"]
    assert [(s.name, s.gpus) for s in p.nodes[79].slots] == [(f"rollout_{i}", (i - 120,)) for i in range(120, 128)]


def test_the_local_recipe_fits_one_node_under_the_launcher_but_two_under_dispatch() -> None:
    data = recipe()  # 1 policy × 4 GPUs + 1 rollout × 1 GPU
    launcher = plan(data, Packing.LAUNCHER)
    assert launcher.n_nodes == 1
    assert [(s.name, s.gpus) for s in launcher.nodes[0].slots] == [("policy_0", (0, 1, 2, 3)), ("rollout_0", (4,))]
    assert launcher.nodes[0].roles == ("policy", "rollout")
    dispatch = plan(data, Packing.DISPATCH)  # dispatch_job.py gives every role its own nodes
    assert [n.roles for n in dispatch.nodes] == [("policy",), ("rollout",)]
    assert dispatch.summary() == "2 node(s) × 8 GPUs: 1 policy × 4 GPU, 1 rollout × 1 GPU (5 of 16 GPUs used)"


def test_dispatch_gives_rollouts_tp_times_pp_only_while_the_launcher_counts_dp_shard() -> None:
    data = with_values(recipe(), rollout__parallelism__dp_shard_size=2, rollout__parallelism__tp_size=2)
    assert plan(data, Packing.DISPATCH).shape("rollout").gpus_each == 2  # §11.1: tp × pp
    assert plan(data, Packing.LAUNCHER).shape("rollout").gpus_each == 4  # §2.2: the full product


def test_dispatch_packing_errors_quote_dispatch_job_py() -> None:
    three = with_values(recipe(), policy__parallelism__dp_shard_size=3)
    e = error(three, rev=CosmosRev.HEAD)
    assert e.upstream == "GPUs per policy must be one of [1, 2, 4], got 3."
    assert e.message == "policy: 3 GPUs per replica do not divide a 8-GPU node"
    assert error(three, rev=CosmosRev.PINNED).upstream == "Number of GPUs per policy must be one of [1, 2, 4], got 3."
    twelve = with_values(recipe(), policy__parallelism__dp_shard_size=12)
    assert error(twelve).upstream == "Number of GPUs per policy must be a multiple of 8"
    # The text says "policy" for a rollout too: it is dispatch_job.py's, verbatim.
    rollout = with_values(recipe(), rollout__parallelism__tp_size=3)
    assert error(rollout).message.startswith("rollout: 3 GPUs per replica")
    assert error(rollout).upstream == "Number of GPUs per policy must be one of [1, 2, 4], got 3."


def test_dispatch_needs_every_parallelism_key_while_the_launcher_defaults_them() -> None:
    data = with_values(recipe(), policy__parallelism__cp_size=None)
    e = error(data, Packing.DISPATCH)
    assert "policy.parallelism.cp_size is not set" in e.message and "KeyError: 'cp_size'" in e.message
    assert plan(data, Packing.LAUNCHER).shape("policy").gpus_each == 4


def test_the_launcher_refuses_node_sizes_it_cannot_use_with_its_own_text() -> None:
    data = with_values(recipe(), policy__parallelism__dp_shard_size=2)
    e = error(data, Packing.LAUNCHER, gpus=6)
    assert e.upstream == "Number of GPUs per node must be 1, 2, 4, or 8"
    assert plan(data, Packing.DISPATCH, gpus=6).n_nodes == 2  # dispatch_job.py has no such rule


def test_replicas_wider_than_a_node_span_whole_nodes_and_rendezvous_at_their_first() -> None:
    data = with_values(recipe(), policy__parallelism__dp_shard_size=16, policy__parallelism__n_init_replicas=2)
    for packing in Packing:
        p = plan(data, packing)
        policy = [(n.index, s.name, s.nnodes, s.rdzv_node) for n in p.nodes for s in n.slots if s.role == "policy"]
        assert policy == [(0, "policy_0", 2, 0), (1, "policy_0", 2, 0), (2, "policy_1", 2, 2), (3, "policy_1", 2, 2)]
        assert p.spans_nodes
    assert (
        "not a whole number of 8-GPU nodes"
        in error(with_values(data, policy__parallelism__dp_shard_size=12), Packing.LAUNCHER).message
    )


def test_launcher_packing_fills_nodes_across_roles_in_order() -> None:
    # 3 policy × 2 GPUs and 5 rollouts × 1 GPU on 4-GPU nodes: contiguous slices, policy first.
    data = with_values(
        recipe(),
        policy__parallelism__dp_shard_size=2,
        policy__parallelism__n_init_replicas=3,
        rollout__parallelism__n_init_replicas=5,
    )
    p = plan(data, Packing.LAUNCHER, gpus=4)
    assert [[(s.name, s.gpus) for s in n.slots] for n in p.nodes] == [
        [("policy_0", (0, 1)), ("policy_1", (2, 3))],
        [("policy_2", (0, 1)), ("rollout_0", (2,)), ("rollout_1", (3,))],
        [("rollout_2", (0,)), ("rollout_3", (1,)), ("rollout_4", (2,))],
    ]
    assert [(roles, (r.start, r.stop)) for roles, r in p.node_sets()] == [
        (("policy",), (0, 1)),
        (("policy", "rollout"), (1, 2)),
        (("rollout",), (2, 3)),
    ]


def test_sft_and_colocated_runs_place_no_rollouts() -> None:
    sft = with_values(recipe(), train__train_policy__type="sft")
    assert plan(sft).shape("rollout").replicas == 0
    colocated = with_values(recipe(), mode="colocated")
    assert plan(colocated, Packing.LAUNCHER).shape("rollout").replicas == 0


def test_replica_counts_can_be_overridden_and_are_checked() -> None:
    assert plan(recipe(CLUSTER), n_policy=4, n_rollout=8).n_nodes == 5
    assert "0 policy replicas" in error(recipe(), n_policy=0).message
    bad = with_values(recipe(), rollout__parallelism__n_init_replicas="8")
    assert error(bad).message == "rollout.parallelism.n_init_replicas = '8': must be a whole number of replicas"


def test_a_partition_too_small_is_an_error_naming_the_need() -> None:
    e = error(recipe(CLUSTER), max_nodes=64)
    assert e.message.startswith("the job needs 80 nodes but at most 64 are available: 80 node(s) × 8 GPUs")


def test_multi_node_runs_must_dispatch_by_rank_in_mesh() -> None:
    data = with_values(recipe(CLUSTER), train__train_policy__data_dispatch_as_rank_in_mesh=False)
    findings = cluster_findings(plan(data), data, SRC)
    assert [f.id for f in findings] == ["duplicate_samples"]
    f = findings[0]
    assert f.severity is Severity.CRITICAL  # enforced before submission (recipe §8.5: mandatory)
    assert [(x.path, x.current, x.proposed) for x in f.fixes] == [
        ("train.train_policy.data_dispatch_as_rank_in_mesh", False, True)
    ]
    assert f.evidence[0].file == "recipe.toml"
    assert cluster_findings(plan(recipe(CLUSTER)), recipe(CLUSTER), SRC) == []


def test_a_single_node_run_has_no_multi_node_findings() -> None:
    data = recipe()  # data_dispatch_as_rank_in_mesh = false, capacity 16 < 48: fine on one node
    assert cluster_findings(plan(data, Packing.LAUNCHER), data, SRC) == []


def test_prefetch_capacity_must_hold_every_replicas_look_ahead_on_the_busiest_node() -> None:
    data = recipe(CLUSTER)
    p = plan(data)
    # policy nodes: 1 × train_batch_per_replica 40; rollout nodes: 8 × rollout.batch_size 6 = 48.
    assert prefetch_need(p, data) == 48
    small = with_values(data, custom__alpamayo__prefetch__capacity=32)
    [f] = cluster_findings(plan(small), small, SRC)
    assert f.id == "prefetch_misconfig" and f.severity is Severity.WARNING
    assert (f.fixes[0].current, f.fixes[0].proposed) == (32, 48)
    off = with_values(data, custom__alpamayo__prefetch=None)
    [f] = cluster_findings(plan(off), off, SRC)
    assert f.id == "prefetch_misconfig" and "cache is off" in f.explanation


def test_a_plan_error_is_an_insufficient_gpus_finding_at_the_located_line() -> None:
    data = with_values(recipe(), policy__parallelism__dp_shard_size=3)

    def locate(dotted: str) -> Evidence | None:
        return (
            Evidence(file="recipe.toml", line=99, text="[policy.parallelism]")
            if dotted == "policy.parallelism"
            else None
        )

    [f] = cluster_findings(
        plan_nodes(data, gpus_per_node=8, packing=Packing.DISPATCH), data, ConfigSource("recipe.toml", locate)
    )
    assert f.id == "insufficient_gpus" and f.severity is Severity.CRITICAL
    assert f.evidence[0].line == 99
    assert f.data["upstream"] == "Number of GPUs per policy must be one of [1, 2, 4], got 3."


def test_the_plan_serialises_every_node_for_the_dashboard() -> None:
    doc = plan(recipe(), Packing.LAUNCHER).to_json()
    assert doc["nodes"] == [
        {
            "index": 0,
            "controller": True,
            "replicas": [
                {"name": "policy_0", "gpus": [0, 1, 2, 3], "nnodes": 1, "rdzv_node": 0},
                {"name": "rollout_0", "gpus": [4], "nnodes": 1, "rdzv_node": 0},
            ],
        }
    ]
