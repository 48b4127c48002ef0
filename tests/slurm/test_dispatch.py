"""The dispatch_job.py command line, parsed flag by flag by parsers built from docs/reference/cosmos-rl.md §11.1 /
§11.2.

``reference_parser`` declares the flags, types, defaults and nargs of the reference's tables (not
Cosmos-RL's code): an argv that this argparse parser reads back to the intended values is one that
dispatch_job.py reads the same way.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest
from slurm_helpers import cluster_spec as spec
from slurm_helpers import recipe

from a1x_supervisor.slurm import ClusterSpec, CosmosRev, NodePlan, Packing, SlurmSpecError, dispatch_argv, plan_nodes


def reference_parser(rev: CosmosRev) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(exit_on_error=False)
    p.add_argument("--job-name", type=str, default="cosmos_job")
    p.add_argument("--ngpu-per-node", type=int, default=8)
    head = rev is CosmosRev.HEAD
    p.add_argument("--n-policy-replicas", type=int, default=None if head else 1)
    p.add_argument("--n-rollout-replicas", type=int, default=None if head else 1)
    p.add_argument("--slurm-partition", type=str, default="pool0_av" if head else "batch")
    p.add_argument("--slurm-account", type=str, default="av_alpamayo_reasoning" if head else "sw_aidot")
    p.add_argument("--config-path", type=str, required=True)
    p.add_argument("--output-root-path", type=str, required=True)
    p.add_argument("--repo-root-path", type=str, default=None)
    p.add_argument("--extra-sbatch-args", type=str, nargs="*", default=[] if head else ["--gres=gpu:8"])
    p.add_argument("--slurm-job-time", type=str, default=None if head else "04:00:00")
    if head:
        p.add_argument("--n-reference-replicas", type=int, default=None)
        p.add_argument("--mount-dirs", type=str, default="/lustre:/lustre/")
        p.add_argument("--cosmos-container", "--container", dest="container", type=str, required=True)
        p.add_argument("--copycode", action="store_true")
        p.add_argument("--duration", type=float, default=4)
        p.add_argument("--retries", type=int, default=3)
        p.add_argument("--pre-timeout-signal", type=int, default=1200)
        p.add_argument("--no-autoresume", dest="autoresume", action="store_false", default=True)
        p.add_argument("--dry-run", action="store_true")
        launcher = "cosmos_rl.launcher.__init__"
    else:
        p.add_argument("--cosmos-container", dest="container", type=str, required=True)
        launcher = "cosmos_rl.dispatcher.run_web_panel"
    p.add_argument("launcher", nargs="?", default=launcher)
    p.add_argument("launcher_args", nargs=argparse.REMAINDER)
    return p


def cluster_plan(s: ClusterSpec) -> NodePlan:
    p = plan_nodes(recipe("recipe_cluster_80.toml"), gpus_per_node=s.gpus_per_node, packing=Packing.DISPATCH)
    assert isinstance(p, NodePlan)
    return p


def parse(s: ClusterSpec, **kw: object) -> tuple[list[str], argparse.Namespace]:
    cmd = dispatch_argv(s, cluster_plan(s), config_path=Path("/lustre/cfg/rl.toml"), **kw)  # type: ignore[arg-type]
    argv = list(cmd.argv)
    assert argv[:2] == ["python", "/lustre/cosmos-rl/cosmos_rl/tools/slurm/dispatch_job.py"]
    return argv, reference_parser(s.cosmos_rev).parse_args(argv[2:])


ENTRY = "/lustre/recipes/entry.py"
# 747d1bd's own --output/--error name a folder that does not exist when the job starts: ours come after them.
LOGS = ["--output /lustre/runs/a1x_rl/slurm_%j.log", "--error /lustre/runs/a1x_rl/slurm_%j.log"]


def test_the_pinned_revision_gets_explicit_replica_counts_and_its_gpu_request() -> None:
    _, ns = parse(spec(time="12:00:00"), launcher=ENTRY, launcher_args=["--foo", "1"])
    # 747d1bd writes --n-*-replicas (default 1 and 1) over the TOML: they must always be given.
    assert (ns.n_policy_replicas, ns.n_rollout_replicas) == (64, 128)
    assert (ns.slurm_partition, ns.slurm_account, ns.ngpu_per_node) == ("gpu", "alpamayo", 8)
    assert (ns.config_path, ns.output_root_path, ns.repo_root_path) == (
        "/lustre/cfg/rl.toml",
        "/lustre/runs",
        "/lustre/cosmos-rl",
    )
    assert ns.container == "/lustre/images/cosmos.sqsh"
    # Its only GPU request is --extra-sbatch-args' default, which any value replaces: we pass it ourselves.
    assert ns.extra_sbatch_args == [*LOGS, "--gres gpu:8"]
    assert ns.slurm_job_time == "12:00:00"
    assert (ns.launcher, ns.launcher_args) == (ENTRY, ["--foo", "1"])
    assert ns.job_name == "a1x_rl"


def test_head_gets_its_own_flags_and_no_duplicate_gres() -> None:
    s = spec(
        cosmos_rev=CosmosRev.HEAD,
        retries=1,
        autoresume=False,
        pre_timeout_signal_s=600,
        mounts=["/lustre:/lustre", "/scratch:/scratch"],
        copycode=True,
        dry_run=True,
    )
    _, ns = parse(s, launcher=ENTRY)
    assert (ns.retries, ns.autoresume, ns.pre_timeout_signal) == (1, False, 600)
    assert ns.mount_dirs == "/lustre:/lustre,/scratch:/scratch"
    assert ns.copycode and ns.dry_run
    # HEAD's template writes --gres=gpu:<ngpu-per-node> itself, but no --mem (747d1bd's writes --mem=0).
    assert ns.extra_sbatch_args == ["--mem 0"]
    assert ns.slurm_job_time is None and ns.duration == 4  # no time given: dispatch_job.py's 4 h


@pytest.mark.parametrize(
    "field,value",
    [
        ("retries", 2),
        ("autoresume", True),
        ("pre_timeout_signal_s", 600),
        ("mounts", ["/a:/a"]),
        ("copycode", True),
        ("dry_run", True),
    ],
)
def test_head_only_choices_are_refused_for_the_pinned_revision(field: str, value: object) -> None:
    with pytest.raises(SlurmSpecError, match=f"^{field} is set but dispatch_job.py at 747d1bd has no such option"):
        parse(spec(**{field: value}), launcher=ENTRY)


def test_several_extra_sbatch_args_survive_argparse_as_values() -> None:
    s = spec(extra_sbatch_args=["--qos=high", "--mail-type=END", "-C h200"])
    _, ns = parse(s, launcher=ENTRY)
    assert ns.extra_sbatch_args == [*LOGS, "--gres gpu:8", "--qos high", "--mail-type END", "-C h200"]
    assert ns.launcher == ENTRY  # the list ended before the positional launcher


def test_a_flag_without_a_value_among_other_items_is_refused() -> None:
    # argparse would read it as a new option: only a lone item could ride as --extra-sbatch-args=ITEM, and
    # there is always another (747d1bd: --output, --error; HEAD: --mem).
    with pytest.raises(SlurmSpecError, match="--exclusive has no value"):
        parse(spec(request_gpus=False, extra_sbatch_args=["--exclusive"]), launcher=ENTRY)
    with pytest.raises(SlurmSpecError, match="--exclusive has no value"):
        parse(spec(cosmos_rev=CosmosRev.HEAD, extra_sbatch_args=["--exclusive"]), launcher=ENTRY)


def test_memory_and_cpus_are_asked_for_as_each_template_needs() -> None:
    # 747d1bd's template already has --mem=0: only another value is passed, after it (the last one counts).
    _, ns = parse(spec(), launcher=ENTRY)
    assert ns.extra_sbatch_args == [*LOGS, "--gres gpu:8"]
    _, ns = parse(spec(memory="480G", cpus_per_task=96), launcher=ENTRY)
    assert ns.extra_sbatch_args == [*LOGS, "--gres gpu:8", "--mem 480G", "--cpus-per-task 96"]
    # The templates' sruns pass no -c and srun 22.05+ does not inherit --cpus-per-task (docs/slurm.md):
    # SRUN_CPUS_PER_TASK goes into dispatch_job.py's environment, which sbatch hands to the batch script.
    s = spec(cpus_per_task=96)
    assert dispatch_argv(s, cluster_plan(s), config_path=Path("/c.toml"), launcher=ENTRY).env == (
        ("SRUN_CPUS_PER_TASK", "96"),
    )
    # A GPU-less cluster: a later --gres none replaces HEAD's own --gres=gpu:N.
    _, ns = parse(spec(cosmos_rev=CosmosRev.HEAD, request_gpus=False), launcher=ENTRY)
    assert ns.extra_sbatch_args == ["--gres none", "--mem 0"]
    # The user's own extra_sbatch_args come last, so they still decide.
    _, ns = parse(spec(cosmos_rev=CosmosRev.HEAD, extra_sbatch_args=["--mem=100G"]), launcher=ENTRY)
    assert ns.extra_sbatch_args == ["--mem 0", "--mem 100G"]


def test_defaults_that_point_at_nvidias_cluster_are_refused() -> None:
    with pytest.raises(
        SlurmSpecError,
        match=re.escape("partition is not set: dispatch_job.py (747d1bd) would use its own default 'batch'"),
    ):
        parse(spec(partition=None), launcher=ENTRY)
    with pytest.raises(SlurmSpecError, match="'av_alpamayo_reasoning'"):
        parse(spec(account=None, cosmos_rev=CosmosRev.HEAD), launcher=ENTRY)


@pytest.mark.parametrize("bad", ["a b.py", "x'y", "$(rm)", "a;b"])
def test_launcher_arguments_that_break_the_bash_c_string_are_refused(bad: str) -> None:
    with pytest.raises(SlurmSpecError, match="single-quoted"):
        parse(spec(), launcher=ENTRY, launcher_args=[bad])


def test_required_values_and_the_node_count_are_checked() -> None:
    with pytest.raises(SlurmSpecError, match="container is not set"):
        parse(spec(container=None), launcher=ENTRY)
    with pytest.raises(SlurmSpecError, match=re.escape("nodes = 64 but dispatch_job.py will ask for 80")):
        parse(spec(nodes=64), launcher=ENTRY)
    with pytest.raises(SlurmSpecError, match="dispatch_script is not set"):
        parse(spec(repo_root=None), launcher=ENTRY)


def test_the_display_form_is_a_shell_line_that_quotes_what_needs_it() -> None:
    s = spec()
    cmd = dispatch_argv(s, cluster_plan(s), config_path=Path("/lustre/cfg/rl.toml"), launcher=ENTRY)
    assert (
        "--extra-sbatch-args '--output /lustre/runs/a1x_rl/slurm_%j.log' '--error /lustre/runs/a1x_rl/slurm_%j.log' "
        "'--gres gpu:8' --cosmos-container /lustre/images/cosmos.sqsh"
    ) in cmd.display()
    assert cmd.run_dir_prefix is None  # 747d1bd: <output-root>/<job-name>/<jobid>
    assert cmd.log_dir == Path("/lustre/runs/a1x_rl")  # created before submission
    head = dispatch_argv(spec(cosmos_rev=CosmosRev.HEAD), cluster_plan(s), config_path=Path("/c.toml"), launcher=ENTRY)
    assert head.run_dir_prefix == Path("/lustre/runs/a1x_rl")
