"""The command line for Cosmos-RL's own ``dispatch_job.py`` (docs/reference/cosmos-rl.md §11.1, §11.2).

``dispatch_argv`` turns a ``ClusterSpec`` and a checked ``NodePlan`` into the argv to run on the
login node, flag by flag against the revision the cluster runs: HEAD/0.4.7 has autoresume,
retries, mounts and ``--dry-run``; 747d1bd (the recipe's pin) has none of them, reads the replica
counts only from its flags (defaults 1 and 1, written over the TOML) and replaces its default
``--gres=gpu:8`` with whatever ``--extra-sbatch-args`` holds. A choice the revision cannot express
raises ``SlurmSpecError`` instead of being dropped.

Two argparse facts shape the argv. ``--extra-sbatch-args`` takes ``nargs="*"``: an item that
starts with ``-`` ends the list, unless it contains a space (argparse then reads it as a value) or
is the only one, given as ``--extra-sbatch-args=ITEM``. So ``--qos=high`` is passed as
``"--qos high"``, which ``#SBATCH`` reads the same way. The launcher arguments are joined with
spaces into a single-quoted ``bash -c`` string of the sbatch template, so they may not contain
spaces or quotes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from a1x_supervisor.slurm.plan import CosmosRev, NodePlan, Packing
from a1x_supervisor.slurm.spec import ClusterSpec, SlurmSpecError

DISPATCH_SCRIPT = Path("cosmos_rl/tools/slurm/dispatch_job.py")

# Upstream defaults we never rely on (§11.1, §11.2): shown in errors so the user sees what would happen.
UPSTREAM_DEFAULTS: dict[CosmosRev, dict[str, str]] = {
    CosmosRev.HEAD: {"partition": "pool0_av", "account": "av_alpamayo_reasoning"},
    CosmosRev.PINNED: {"partition": "batch", "account": "sw_aidot"},
}
_UNSAFE_ARG = re.compile(r"[\s'\"`$\\;&|<>()]")


@dataclass(frozen=True, slots=True)
class DispatchCommand:
    argv: tuple[str, ...]
    run_dir_prefix: Path | None  # HEAD: the run dir is <output-root>/<job-name>_<YYYYmmddHHMMSS>
    # 747d1bd: the folder of the batch script's own log, which must exist before sbatch (created by
    # prepare_dispatch); HEAD's dispatch_job.py creates its slurm/ folder itself.
    log_dir: Path | None = None
    env: tuple[tuple[str, str], ...] = ()  # added to dispatch_job.py's environment (sbatch passes it on)

    def display(self) -> str:
        return " ".join(_quote(a) for a in self.argv)


def _quote(arg: str) -> str:
    return arg if arg and not re.search(r"[^\w@%+=:,./-]", arg) else "'" + arg.replace("'", "'\"'\"'") + "'"


def sbatch_extra_items(args: list[str]) -> list[str]:
    """``--opt=value`` → ``--opt value``: items argparse keeps as values of ``--extra-sbatch-args``."""
    items = []
    for arg in args:
        if not arg.startswith("-"):
            raise SlurmSpecError(f"extra_sbatch_args: {arg!r} is not an sbatch option")
        opt, sep, value = arg.partition("=") if arg.startswith("--") else arg.partition(" ")
        if sep and (not value or re.search(r"[\s'\"]", value)):
            raise SlurmSpecError(f"extra_sbatch_args: {arg!r}: the value may not be empty or contain spaces or quotes")
        items.append(f"{opt} {value}" if sep else opt)
    return items


def _extra_args_argv(items: list[str]) -> list[str]:
    if not items:
        return []
    if len(items) == 1 and " " not in items[0]:
        return [f"--extra-sbatch-args={items[0]}"]
    flags = [i for i in items if " " not in i]
    if flags:
        raise SlurmSpecError(
            f"extra_sbatch_args: {flags[0]} has no value; dispatch_job.py's --extra-sbatch-args can carry an option "
            "without a value only when it is the only one (argparse reads it as a new option otherwise)"
        )
    return ["--extra-sbatch-args", *items]


def dispatch_argv(
    spec: ClusterSpec,
    plan: NodePlan,
    *,
    config_path: Path,
    launcher: str,
    launcher_args: list[str] | tuple[str, ...] = (),
) -> DispatchCommand:
    """The argv of ``python dispatch_job.py ...`` for this spec and plan. Raises ``SlurmSpecError``."""
    rev = spec.cosmos_rev
    if spec.method != "cosmos-dispatch" or plan.packing is not Packing.DISPATCH:
        raise SlurmSpecError("dispatch_argv needs method = 'cosmos-dispatch' and a plan packed the dispatch_job.py way")
    if spec.gpus_per_node != plan.gpus_per_node:
        raise SlurmSpecError(f"the plan is for {plan.gpus_per_node}-GPU nodes but gpus_per_node = {spec.gpus_per_node}")
    if spec.nodes is not None and spec.nodes != plan.n_nodes:
        raise SlurmSpecError(f"nodes = {spec.nodes} but dispatch_job.py will ask for {plan.n_nodes}: {plan.summary()}")
    defaults = UPSTREAM_DEFAULTS[rev]
    for name in ("partition", "account"):
        if getattr(spec, name) is None:
            raise SlurmSpecError(
                f"{name} is not set: dispatch_job.py ({rev.value}) would use its own default "
                f"{defaults[name]!r}, which is NVIDIA's cluster, not yours"
            )
    if not spec.container:
        raise SlurmSpecError("container is not set: dispatch_job.py requires --cosmos-container (.sqsh or image URI)")
    if spec.output_root is None:
        raise SlurmSpecError("output_root is not set: dispatch_job.py requires --output-root-path")

    head_only = {
        "retries": spec.retries is not None,
        "autoresume": spec.autoresume is not None,
        "pre_timeout_signal_s": spec.pre_timeout_signal_s is not None,
        "mounts": bool(spec.mounts),
        "copycode": spec.copycode,
        "dry_run": spec.dry_run,
    }
    if rev is CosmosRev.PINNED:
        for name, used in head_only.items():
            if used:
                raise SlurmSpecError(
                    f"{name} is set but dispatch_job.py at 747d1bd has no such option (no autoresume, retries, "
                    "mounts, --copycode or --dry-run there; docs/reference/cosmos-rl.md §11.2): remove it or set "
                    "cosmos_rev = 'head'"
                )
        if plan.shape("reference").replicas:
            raise SlurmSpecError("reference replicas: dispatch_job.py at 747d1bd places policy and rollout only")

    for arg in (launcher, *launcher_args):
        if not arg or _UNSAFE_ARG.search(arg):
            raise SlurmSpecError(
                f"launcher argument {arg!r}: dispatch_job.py joins them with spaces into a single-quoted "
                "bash -c string, so spaces, quotes and shell characters break the job"
            )
    if launcher.startswith("-"):
        raise SlurmSpecError(f"launcher {launcher!r} must be a module or script path, not an option")
    if launcher.endswith(".py") and not Path(launcher).is_absolute():
        # Both templates change into the installed cosmos_rl package's folder before `python <launcher>`
        # (docs/reference/cosmos-rl.md §11.1, §11.2): a relative script is "can't open file" there.
        raise SlurmSpecError(
            f"launcher {launcher!r} is relative: the job template runs it from the cosmos_rl package folder, "
            "so give its absolute path"
        )

    script = spec.dispatch_script
    if script is None:
        if spec.repo_root is None:
            raise SlurmSpecError("dispatch_script is not set and there is no repo_root to find dispatch_job.py in")
        script = spec.repo_root / DISPATCH_SCRIPT

    argv: list[str] = [spec.python, str(script)]
    argv += ["--job-name", spec.job_name]
    argv += ["--ngpu-per-node", str(spec.gpus_per_node)]
    # Always explicit: 747d1bd defaults both to 1 and writes them over the TOML's n_init_replicas.
    argv += ["--n-policy-replicas", str(plan.shape("policy").replicas)]
    argv += ["--n-rollout-replicas", str(plan.shape("rollout").replicas)]
    if plan.shape("reference").replicas:
        argv += ["--n-reference-replicas", str(plan.shape("reference").replicas)]
    argv += ["--slurm-partition", str(spec.partition), "--slurm-account", str(spec.account)]
    argv += ["--config-path", str(config_path)]
    argv += ["--output-root-path", str(spec.output_root)]
    if spec.repo_root is not None:
        argv += ["--repo-root-path", str(spec.repo_root)]
    if spec.mounts:
        argv += ["--mount-dirs", ",".join(spec.mounts)]
    extra = sbatch_extra_items(spec.extra_sbatch_args)
    ours: list[str] = []
    log_dir: Path | None = None
    if rev is CosmosRev.PINNED:
        # 747d1bd's template writes --output=<root>/%j/x.out and --error=<root>/%j/x.err, a folder nobody
        # creates before the job starts: Slurm fails such a job at launch (JobLaunchFailure, ExitCode 0:53)
        # before its script runs (docs/reference/cosmos-rl.md §11.2). The later #SBATCH line wins, so the batch
        # log goes to <root>/<job-name>/slurm_<jobid>.log, next to the job's <jobid>/ folder.
        log_dir = spec.output_root / spec.job_name
        ours += [f"--output {log_dir}/slurm_%j.log", f"--error {log_dir}/slurm_%j.log"]
    if rev is CosmosRev.PINNED and spec.request_gpus and not any(i.startswith("--gres ") for i in extra):
        # 747d1bd's only GPU request is its --extra-sbatch-args default ["--gres=gpu:8"], which any
        # value we pass replaces (HEAD's template writes --gres=gpu:<ngpu-per-node> itself).
        ours.append(f"--gres gpu:{spec.gpus_per_node}")
    elif rev is CosmosRev.HEAD and not spec.request_gpus and not any(i.startswith("--gres ") for i in extra):
        ours.append("--gres none")  # a later line replaces the template's --gres=gpu:N (GPU-less clusters)
    # 747d1bd's template writes --mem=0 before the extra lines, HEAD's writes no --mem (docs/reference/cosmos-rl.md
    # §11.2): ours come first, so the user's own extra_sbatch_args still win (the last --mem counts).
    if rev is CosmosRev.HEAD or spec.memory != "0":
        ours.append(f"--mem {spec.memory}")
    if spec.cpus_per_task is not None:
        ours.append(f"--cpus-per-task {spec.cpus_per_task}")
    extra = ours + extra
    # Before --cosmos-container, which always follows: an option ends the nargs="*" list, so the
    # launcher positional is never taken for an sbatch argument.
    argv += _extra_args_argv(extra)
    argv += ["--cosmos-container", spec.container]
    if spec.copycode:
        argv.append("--copycode")
    if spec.time is not None:
        argv += ["--slurm-job-time", spec.time]  # wins over --duration at HEAD; the only time flag at 747d1bd
    if spec.retries is not None:
        argv += ["--retries", str(spec.retries)]
    if spec.pre_timeout_signal_s is not None:
        argv += ["--pre-timeout-signal", str(spec.pre_timeout_signal_s)]
    if spec.autoresume is False:
        argv.append("--no-autoresume")
    if spec.dry_run:
        argv.append("--dry-run")
    argv.append(launcher)
    argv += list(launcher_args)
    prefix = spec.output_root / spec.job_name if rev is CosmosRev.HEAD else None
    # srun 22.05+ reads SRUN_CPUS_PER_TASK but not the job's --cpus-per-task; the templates' sruns pass no -c
    # (docs/slurm.md): dispatch_job.py's environment reaches the batch script through sbatch (--export=ALL).
    env = (("SRUN_CPUS_PER_TASK", str(spec.cpus_per_task)),) if spec.cpus_per_task is not None else ()
    return DispatchCommand(tuple(argv), prefix, log_dir, env)
