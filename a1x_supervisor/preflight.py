"""Preflight: check this machine against a run spec before anything downloads.

The answer is a ``a1x_diagnostics.findings.Report`` (``kind="preflight"``), with the same finding
contract and exit codes as ``--check``. Only the stages the run will execute are checked (a
``--only export`` run does not need GPUs). Evidence is ``Evidence(file="preflight:<check>")``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from a1x_diagnostics.findings import CheckState, Report
from a1x_supervisor.preflight_checks import GB, Checks, GpuProbe, machine, probe_gpus
from a1x_supervisor.preflight_checks import GpuInventory as GpuInventory  # the spec of a probe, for callers
from a1x_supervisor.preflight_install import Runner, check_install, run_command
from a1x_supervisor.preflight_install import disk_needs as install_disk_needs
from a1x_supervisor.secrets import hf_token_file, read_secret, secret_source, wandb_login, wandb_netrc
from a1x_supervisor.slurm.container import hf_hub_cache
from a1x_supervisor.slurm.spec import ClusterSpec
from a1x_supervisor.spec import RunSpec
from a1x_supervisor.stages.convert import verify_converted
from a1x_supervisor.stages.curate import verify_curated
from a1x_supervisor.stages.download import verify_download_joint, verify_download_motion
from a1x_supervisor.stages.grader import verify_grader
from a1x_supervisor.stages.parquet import NO_PYARROW, parquet_missing

if TYPE_CHECKING:
    from a1x_supervisor.hub import HubRepo


MIN_GPU_MEMORY = 80 * GB  # docs/reference/alpamayo-recipe.md §1 / README: 'at least 80 GB of VRAM' each
# docs/reference/alpamayo-recipe.md §1 'Timing/size anchors': ~22 GB model; 5-10 GB motion PAI; 85-90 GB joint PAI.
MODEL_BYTES = 22 * GB
MOTION_DATA_BYTES = 10 * GB
JOINT_DATA_BYTES = 90 * GB
EXPORT_BYTES = 22 * GB  # the exported VLM is about the size of the model (§12.3: bf16 weights)
# §8.5: GPUs per policy replica (dp_shard_size) for the two compute shapes; a rollout replica uses 1.
POLICY_GPUS = {"local": 4, "cluster": 8}
ROLLOUT_GPUS = 1
HF_STAGES = ("convert", "download", "grader", "train", "evaluate")
# docs/reference/alpamayo-recipe.md §13 (an estimate): the evaluation loads one ~10 B model in bf16 on one GPU.
EVAL_GPU_MEMORY = 24 * GB


def gpus_needed(spec: RunSpec) -> int:
    """Policy replicas x dp_shard_size + rollout replicas x 1 (docs/reference/alpamayo-recipe.md §14 row 2)."""
    return spec.replicas.policy * POLICY_GPUS[spec.compute] + spec.replicas.rollout * ROLLOUT_GPUS


def preflight(
    spec: RunSpec,
    *,
    stages: Sequence[str],
    target: str,
    environ: Mapping[str, str] | None = None,
    gpu_probe: GpuProbe | None = None,
    disk_free: Callable[[Path], int] | None = None,
    which: Callable[[str], str | None] | None = None,
    skip_verified: Callable[[str], bool] | None = None,
    run_dir: Path | None = None,
    hub: bool = True,
    run: Runner | None = None,
) -> Report:
    """Check the machine for the ``stages`` a run will execute.

    ``skip_verified(stage)`` says whether a stage's outputs already verify (its disk needs then
    do not count). ``run_dir`` is the run directory when it is known (a new run's goes under
    ``<workspace>/runs``). ``hub`` asks the Hugging Face Hub (``HF_ENDPOINT``) about the token and
    the gated repositories (``a1x_supervisor.hub``). The other callables exist for tests (``run``: the
    commands the install checks run, ``uv python find`` and ``nvcc --version``).
    """
    if spec.pipeline == "alpagym":  # its own checks (docker, 2 x 40 GB, NuRec): a1x_supervisor/stages/alpagym
        from a1x_supervisor.preflight_alpagym import alpagym_preflight

        return alpagym_preflight(spec, stages=stages, target=target, environ=environ, gpu_probe=gpu_probe,
                                 disk_free=disk_free, which=which, skip_verified=skip_verified, hub=hub)
    env, find, free_of, todo = machine(stages, environ, which, disk_free, skip_verified)
    checks = Checks()

    _check_gpus(spec, todo, checks, env, gpu_probe)
    _check_disk(spec, todo, checks, env, free_of)
    _check_hf_token(todo, checks, env)
    _check_hub(spec, todo, checks, env, ask=hub)
    _check_binaries(todo, checks, env, find, cluster=spec.cluster if spec.on_slurm else None)
    _check_recipe(spec, stages, checks)
    _check_grader(spec, stages, todo, checks)
    _check_env_vars(spec, stages, todo, checks, env)
    _check_wandb(spec, todo, checks, env)
    _check_container_paths(spec, todo, checks, env, run_dir)
    _check_wall_time(spec, todo, checks)
    _check_reused_outputs(spec, stages, todo, checks)
    check_install(spec, todo, checks, env, find, run or run_command)
    _check_parquet(spec, todo, checks)

    return checks.report(target, stages)


def _check_parquet(spec: RunSpec, todo: Sequence[str], checks: Checks) -> None:
    """The curate and the joint download checks read parquet files: said before anything downloads."""
    readers = [s for s in todo if s == "curate" or (s == "download" and spec.reward_mode == "joint")]
    if readers and parquet_missing():
        checks.notes.append(f"the {' and '.join(readers)} stage's check reads parquet files, and {NO_PYARROW}")


def _check_gpus(
    spec: RunSpec, todo: Sequence[str], checks: Checks, env: Mapping[str, str], probe: GpuProbe | None
) -> None:
    cid = "gpus_too_few"
    if "train" not in todo:
        if "evaluate" in todo:
            _check_eval_gpu(checks, env, probe)
        else:
            checks.other(cid, CheckState.SKIPPED, "no training or evaluation in this run")
        return
    if spec.compute == "cluster":
        if "evaluate" in todo:  # the scheduler places the replicas; the evaluation runs on this node
            _check_eval_gpu(checks, env, probe)
        else:
            checks.other(cid, CheckState.SKIPPED, "cluster compute: the scheduler places the replicas")
        return
    need = gpus_needed(spec)
    inventory = (probe or (lambda: probe_gpus(env)))()
    if isinstance(inventory, str):
        checks.other(cid, CheckState.BLIND, f"GPUs unknown: {inventory}")
        checks.notes.append(f"could not count GPUs ({inventory}); training needs {need} with >= 80 GB each")
        return
    big = [m for m in inventory.memory if m is None or m >= MIN_GPU_MEMORY]
    small = [m for m in inventory.memory if m is not None and m < MIN_GPU_MEMORY]
    plan = (
        f"{spec.replicas.policy} policy x {POLICY_GPUS[spec.compute]} + {spec.replicas.rollout} rollout x "
        f"{ROLLOUT_GPUS} = {need} GPUs"
    )
    if len(big) < need:
        seen = f"{len(inventory.memory)} GPU(s) visible ({inventory.source})"
        if small:
            seen += f", {len(small)} with less than 80 GB (smallest {min(small) / GB:.0f} GB)"
        checks.finding(
            cid,
            f"Training needs {plan} of at least 80 GB each; {seen}. Cosmos-RL then fails with a misleading "
            "'GPUs larger than 8 ... Lepton' error or waits forever for a replica it could not place "
            "(docs/reference/cosmos-rl.md §15).",
            evidence=[f"{seen}; needed: {plan}"],
            action="run on a node with enough GPUs (check CUDA_VISIBLE_DEVICES), or lower [replicas] in the run spec",
            visible=len(inventory.memory),
            usable=len(big),
            needed=need,
        )
    else:
        checks.ok(cid, f"{len(big)} usable GPU(s) for {need} needed ({inventory.source})")


def _check_eval_gpu(checks: Checks, env: Mapping[str, str], probe: GpuProbe | None) -> None:
    """The evaluate stage alone: one GPU that holds a ~10 B model in bf16 (docs/reference/alpamayo-recipe.md §13)."""
    inventory = (probe or (lambda: probe_gpus(env)))()
    if isinstance(inventory, str):
        checks.other("gpus_too_few", CheckState.BLIND, f"GPUs unknown: {inventory}")
        return
    if not any(m is None or m >= EVAL_GPU_MEMORY for m in inventory.memory):
        seen = f"{len(inventory.memory)} GPU(s) visible ({inventory.source})"
        checks.finding(
            "gpus_too_few",
            "The evaluate stage runs the exported model on one GPU of this node with about 24 GB for its bf16 "
            f"weights and sampling (docs/reference/alpamayo-recipe.md §13); {seen}.",
            evidence=[f"{seen}; needed: 1 GPU of at least 24 GB"],
            action="run it on a node with a GPU (check CUDA_VISIBLE_DEVICES), or leave it out: --skip evaluate",
            visible=len(inventory.memory),
            needed=1,
        )
    else:
        checks.ok("gpus_too_few", f"a GPU for the evaluation ({inventory.source})")


def _check_disk(
    spec: RunSpec, todo: Sequence[str], checks: Checks, env: Mapping[str, str], free_of: Callable[[Path], int]
) -> None:
    needs: list[tuple[Path, int, str]] = []
    if "convert" in todo:
        needs.append((hf_hub_cache(env), MODEL_BYTES, "model weights in the Hugging Face cache (convert)"))
    if "download" in todo:
        if spec.entry.reasoning_data:
            needs.append(
                (spec.paths.reasoning_dir, JOINT_DATA_BYTES, f"{spec.reward_mode} PAI reasoning data (download)")
            )
        else:
            needs.append((spec.paths.pai_dir, MOTION_DATA_BYTES, "motion PAI data (download)"))
    if "export" in todo:
        needs.append((spec.paths.export_dir, EXPORT_BYTES, "exported checkpoint (export)"))
    if "env" in todo:
        needs += install_disk_needs(spec, env)
    checks.disk(
        "disk_space_low",
        needs,
        free_of,
        explanation="A stage would run out of disk: the model weights are about 22 GB, motion PAI data 5-10 GB, "
        "joint PAI data 85-90 GB (docs/reference/alpamayo-recipe.md §1), the uv cache about 12 GB for the "
        "training stack's wheels (§2.2).",
        action="free disk space or point the spec's paths (and HF_HOME) at a larger filesystem",
    )


def _check_hf_token(todo: Sequence[str], checks: Checks, env: Mapping[str, str]) -> None:
    cid = "hf_token_missing"
    users = [s for s in todo if s in HF_STAGES]
    if not users:
        checks.other(cid, CheckState.SKIPPED, "no stage talks to Hugging Face")
        return
    source = secret_source("HF_TOKEN", env)
    if source is None:
        checks.finding(
            cid,
            f"Stages {', '.join(users)} download gated repositories (PAI, Alpamayo, Cosmos-Reason2-8B); without "
            "a token they fail, or download_pai.py exits 0 having fetched nothing (docs/reference/alpamayo-recipe.md "
            "§5).",
            evidence=[f"HF_TOKEN is not set and {hf_token_file(env)} does not exist"],
            action="accept the licenses on huggingface.co, then `hf auth login` (or export HF_TOKEN)",
        )
    else:
        checks.ok(cid, f"token from {source}")


_HUB_IDS = ("hf_token_invalid", "gated_repo", "hf_rate_limit", "hf_cache_missing")


def _check_hub(spec: RunSpec, todo: Sequence[str], checks: Checks, env: Mapping[str, str], *, ask: bool) -> None:
    """The token, the gated repositories and the offline cache, through huggingface_hub (``a1x_supervisor.hub``)."""
    users = [s for s in todo if s in ("convert", "download", "train", "evaluate")]
    if not users:
        for cid in _HUB_IDS:
            checks.other(cid, CheckState.SKIPPED, "no stage reads from the Hugging Face Hub")
        return
    from a1x_supervisor.hub import DEFAULT_ENDPOINT, offline, repos_for
    from a1x_supervisor.spec import DEFAULT_VLM

    repos = repos_for(users, alpamayo_model=spec.alpamayo_model, vlm=DEFAULT_VLM)
    # The download stage runs with HF_HUB_OFFLINE=0 whatever this shell says; the others inherit it.
    is_offline = offline(env)
    online = [r for r in repos if not is_offline or "download" in r.stages]
    from_cache = [r for r in repos if r not in online]
    _check_hub_cache(from_cache, checks, env)
    if not online:
        for cid in ("hf_token_invalid", "gated_repo", "hf_rate_limit"):
            checks.other(cid, CheckState.SKIPPED, "HF_HUB_OFFLINE=1: the Hub is not asked")
        return
    if not ask:
        for cid in ("hf_token_invalid", "gated_repo", "hf_rate_limit"):
            checks.other(cid, CheckState.SKIPPED, "the Hub was not asked")
        return
    token = read_secret("HF_TOKEN", env)
    if token is None:
        for cid in ("hf_token_invalid", "gated_repo", "hf_rate_limit"):
            checks.other(cid, CheckState.SKIPPED, "no token to ask the Hub with (hf_token_missing)")
        return
    from a1x_supervisor.hub import HubClient

    endpoint = env.get("HF_ENDPOINT") or DEFAULT_ENDPOINT
    client = HubClient(endpoint=endpoint, token=token)
    source = secret_source("HF_TOKEN", env) or "the environment"
    limited: list[str] = []
    who = client.whoami()
    if who.answer == "unauthorized":
        checks.finding(
            "hf_token_invalid",
            f"The Hub at {endpoint} rejects the token from {source}: stages {', '.join(users)} would fail with "
            "'Invalid user token' or 'Repository Not Found' (docs/reference/alpamayo-recipe.md §4).",
            evidence=[f"whoami: {who.detail or 'HTTP 401'} for the token from {source}"],
            action="`hf auth login --force` with a valid token (or export a valid HF_TOKEN: it takes precedence "
            "over the token file)",
        )
        for cid in ("gated_repo", "hf_rate_limit"):
            checks.other(cid, CheckState.BLIND, "not asked: the token is rejected")
        return
    if who.answer in ("unreachable", "offline", "forbidden"):
        for cid in ("hf_token_invalid", "gated_repo", "hf_rate_limit"):
            checks.other(cid, CheckState.BLIND, f"the Hub at {endpoint} did not answer whoami ({who.detail})")
        checks.notes.append(f"could not ask the Hub at {endpoint} ({who.detail}): token and licences not checked")
        return
    if who.answer == "rate_limited":
        limited.append(f"whoami: {who.detail}")
        checks.other("hf_token_invalid", CheckState.BLIND, "whoami is rate-limited: the token was not checked")
    else:
        who_text = f" ({who.detail})" if who.detail else ""
        checks.ok("hf_token_invalid", f"the Hub accepts the token from {source}{who_text}")
    refused: list[str] = []
    refused_ids: list[str] = []
    pages: list[str] = []
    readable: list[str] = []
    for repo in online:
        reply = client.can_read(repo)
        where = f"{repo.repo_id} ({repo.what}, for {', '.join(repo.stages)})"
        if reply.answer == "ok":
            readable.append(repo.repo_id)
        elif reply.answer in ("gated", "not_found", "forbidden"):
            refused_ids.append(repo.repo_id)
            if reply.answer == "gated":
                refused.append(f"{where}: gated, and the licence is not accepted for this token's account")
                pages.append(repo.page(endpoint))
            elif reply.answer == "not_found":
                refused.append(f"{where}: not found, or this token may not read it")
            else:
                refused.append(f"{where}: HTTP 403, this token may not read it")
        elif reply.answer == "rate_limited":
            limited.append(f"{repo.repo_id}: {reply.detail}")
        else:
            checks.notes.append(f"could not ask the Hub at {endpoint} about {repo.repo_id} ({reply.detail})")
    if refused:
        action = f"accept the licences at {', '.join(pages)} with the token's account" if pages else ""
        action += ("; " if action else "") + (
            "a fine-grained token needs 'read access to contents of all public gated repos'"
        )
        checks.finding(
            "gated_repo",
            f"The Hub at {endpoint} refuses this token repositories the run downloads: the stage that needs them "
            "fails (docs/reference/alpamayo-recipe.md §4, §14 row 3).",
            evidence=refused,
            action=action,
            repos=refused_ids,
        )
    elif readable:
        checks.ok("gated_repo", "the token may read " + ", ".join(readable))
    if limited:
        checks.finding(
            "hf_rate_limit",
            f"The Hub at {endpoint} answered HTTP 429 (rate limit): what it was asked could not be checked.",
            evidence=limited,
            action="wait a minute (Retry-After) and run preflight again; requests with a token have higher limits",
        )
    else:
        checks.ok("hf_rate_limit", "no rate limit")


def _check_hub_cache(repos: Sequence[HubRepo], checks: Checks, env: Mapping[str, str]) -> None:
    cid = "hf_cache_missing"
    if not repos:
        checks.other(cid, CheckState.SKIPPED, "HF_HUB_OFFLINE is not set: the stages download what they need")
        return
    from a1x_supervisor.hub import missing_from_cache

    cache = hf_hub_cache(env)
    lines = []
    for repo in repos:
        missing = missing_from_cache(repo, cache)
        if missing:
            shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
            lines.append(f"{repo.repo_id} ({repo.what}, for {', '.join(repo.stages)}): {shown} not in {cache}")
    if lines:
        checks.finding(
            cid,
            "HF_HUB_OFFLINE=1: the stages read these files from the Hugging Face cache and fail with "
            "LocalEntryNotFoundError without them (docs/reference/alpamayo-recipe.md §3, §4).",
            evidence=lines,
            action="run once without HF_HUB_OFFLINE (or with HF_HUB_OFFLINE=0) to fill the cache, or point HF_HOME "
            "at a cache that holds them",
        )
    else:
        names = ", ".join(r.repo_id for r in repos)
        checks.ok(cid, f"HF_HUB_OFFLINE=1: {names} in the cache {cache}; the Hub is not asked about them")


def _check_binaries(
    todo: Sequence[str],
    checks: Checks,
    env: Mapping[str, str],
    find: Callable[[str], str | None],
    *,
    cluster: ClusterSpec | None = None,
) -> None:
    cid = "binary_missing"
    wanted: list[tuple[str, str]] = []
    if "env" in todo:
        wanted += [("uv", "the env stage builds the a1x_rl venv with uv"), ("git", "uv fetches git dependencies")]
    if "train" in todo and cluster is not None:  # the job runs elsewhere; this node submits and follows it
        submit = "sbatch" if cluster.method == "sbatch" else cluster.python
        wanted += [
            (submit, "the train stage is submitted to Slurm from this node (docs/slurm.md)"),
            ("scontrol", "the Slurm job is followed with scontrol/squeue and stopped with scancel"),
        ]
    elif "train" in todo:
        wanted += [
            ("redis-server", "the Cosmos-RL controller starts redis-server (docs/reference/alpamayo-recipe.md §2.3)"),
            ("nvidia-smi", "the cosmos-rl launcher counts GPUs with nvidia-smi"),
        ]
    if not wanted:
        checks.other(cid, CheckState.SKIPPED, "no stage needs uv, git, redis-server or nvidia-smi")
        return
    local_bin = str(Path("~/.local/bin").expanduser())
    missing = [(name, why) for name, why in wanted if not (find(name) or (name == "uv" and _in_dir(local_bin, name)))]
    if missing:
        checks.finding(
            cid,
            "Required programs are not on PATH: " + "; ".join(f"{n} ({why})" for n, why in missing) + ".",
            evidence=[f"{name}: not found on PATH" for name, _ in missing],
            action="install them (uv: https://docs.astral.sh/uv/; redis-server: apt-get install redis-server)",
            missing=[n for n, _ in missing],
        )
    else:
        checks.ok(cid, ", ".join(n for n, _ in wanted) + " found")


def _in_dir(folder: str, name: str) -> bool:
    return os.access(os.path.join(folder, name), os.X_OK)


def _check_recipe(spec: RunSpec, stages: Sequence[str], checks: Checks) -> None:
    cid = "recipe_checkout_missing"
    ws = spec.paths.workspace
    needed = ["recipes/alpamayo1_x_rl/pyproject.toml"]
    scripts = {
        "convert": "scripts/convert_release_config_to_training.py",
        "download": "scripts/download_pai.py",
        "curate": "scripts/curate_pai_samples.py",
        "export": "scripts/convert_cosmos_rl_checkpoint.py",
    }
    needed += [path for stage, path in scripts.items() if stage in stages]
    entry = spec.entry
    if "configure" in stages or "train" in stages:  # the entry script the reward mode trains with (R §8.1)
        needed.append(entry.path)
    missing = [p for p in needed if not (ws / p).is_file()]
    if missing:
        upstream = f" (reward_mode {entry.mode!r}: {entry.upstream})" if entry.upstream else ""
        checks.finding(
            cid,
            f"paths.workspace ({ws}) must be an alpamayo-recipes checkout: every stage runs from its root.",
            evidence=[f"{ws / p} does not exist" + (upstream if p == entry.path else "") for p in missing],
            action="git clone https://github.com/NVlabs/alpamayo-recipes and set paths.workspace to it"
            + (f"; the {entry.mode} reward's entry script comes from {entry.upstream}" if upstream else ""),
        )
    else:
        checks.ok(cid, f"{ws} is an alpamayo-recipes checkout")


def _check_grader(spec: RunSpec, stages: Sequence[str], todo: Sequence[str], checks: Checks) -> None:
    cid = "grader_missing"
    if not spec.entry.grader or "train" not in todo:
        checks.other(cid, CheckState.SKIPPED, "only a reward that grades the reasoning reads the grader")
        return
    if "grader" in stages:
        checks.ok(cid, f"the grader stage caches Lingo-Judge into {spec.paths.grader_dir}")
        return
    if (spec.paths.grader_dir / "config.json").is_file():
        checks.ok(cid, f"{spec.paths.grader_dir} holds a model")
        return
    checks.finding(
        cid,
        "Joint training loads the Lingo-Judge grader at its first reward; without it every rollout fails "
        "(docs/reference/alpamayo-recipe.md §7, §14 row 5).",
        evidence=[f"{spec.paths.grader_dir}/config.json does not exist and the grader stage is not part of this run"],
        action=f"run the grader stage (`a1x-tui run --spec FILE --only grader`) or hf download wayveai/Lingo-Judge "
        f"--local-dir {spec.paths.grader_dir}",
    )


def _check_env_vars(
    spec: RunSpec, stages: Sequence[str], todo: Sequence[str], checks: Checks, env: Mapping[str, str]
) -> None:
    cid = "missing_env_var"
    if "train" not in todo:
        checks.other(cid, CheckState.SKIPPED, "no training in this run")
        return
    # §8.1: the entry raises 'Missing required env var ...' when its data dir variable is unset; the
    # supervisor sets it from the spec, so it is missing only when that directory cannot exist.
    var = spec.entry.data_env
    data_dir = spec.data_dir
    if "download" not in stages and not data_dir.is_dir():
        checks.finding(
            cid,
            f"Training sets {var}={data_dir} for the entry script, but that folder does not exist and no "
            "download stage will create it.",
            evidence=[f"{var}: {data_dir} does not exist"],
            action="fix paths in the run spec, or include the download stage",
            name=var,
        )
    else:
        checks.ok(cid, f"{var} will be {data_dir}")
    if env.get("HF_HUB_OFFLINE") == "1" and "download" in todo:
        checks.notes.append("HF_HUB_OFFLINE=1 is set; the download stage overrides it with HF_HUB_OFFLINE=0")


def _check_wandb(spec: RunSpec, todo: Sequence[str], checks: Checks, env: Mapping[str, str]) -> None:
    cid = "wandb_key_missing"
    if not spec.wandb.enabled or "train" not in todo:
        checks.other(cid, CheckState.SKIPPED, "W&B is off" if not spec.wandb.enabled else "no training in this run")
        return
    login = wandb_login(env)
    if login is not None:
        checks.ok(cid, login)
        return
    checks.finding(
        cid,
        "W&B logging is on but no key is set: Cosmos-RL silently skips W&B (docs/reference/alpamayo-recipe.md §8.4).",
        evidence=[f"WANDB_API_KEY is not set and {wandb_netrc(env)} has no api.wandb.ai entry"],
        action="export WANDB_API_KEY (or `wandb login`), or set [wandb] enabled = false in the run spec",
    )


def _check_container_paths(
    spec: RunSpec, todo: Sequence[str], checks: Checks, env: Mapping[str, str], run_dir: Path | None
) -> None:
    """cosmos-dispatch: every path the job opens must be visible in its containers (docs/slurm.md)."""
    from a1x_configs import render
    from a1x_supervisor.slurm.container import describe, job_mounts, mount_problems, unmounted
    from a1x_supervisor.stages.train_cluster import dispatch_needed_paths

    cid = "container_path_unmounted"
    cluster = spec.cluster
    if cluster is None or not spec.on_slurm or cluster.method != "cosmos-dispatch" or "train" not in todo:
        checks.other(cid, CheckState.SKIPPED, "only a cosmos-dispatch train stage runs in containers")
        return
    entry = spec.paths.workspace / render.entry_script(spec.reward_mode)
    if spec.alpamayo_version == "1":  # the configure stage writes a copy into <run>/config (R §8.1)
        entry = (run_dir or spec.paths.workspace / "runs" / "<run>") / "config" / entry.name
    data_var = spec.entry.data_env
    needed = dispatch_needed_paths(
        cluster,
        entry=entry,
        model=str(spec.paths.model_dir),
        output_dir=str(spec.paths.output_dir),
        grader=str(spec.paths.grader_dir) if spec.entry.grader else None,
        data_var=data_var,
        data_dir=spec.data_dir,
        environ=env,
        workspace=spec.paths.workspace,
    )
    mounts = job_mounts(cluster, environ=env)
    missing = unmounted(needed, mounts)
    problems = mount_problems(cluster, mounts, environ=env)
    if not missing and not problems:
        checks.ok(cid, f"{len(needed)} path(s) of the job are mounted in its containers at the same path")
        return
    explanation, lines, action, data = describe(cluster, missing, problems)
    checks.finding(cid, explanation, evidence=lines, action=action, **data)


def _check_wall_time(spec: RunSpec, todo: Sequence[str], checks: Checks) -> None:
    """A cluster job must save a checkpoint before its time limit (docs/slurm.md "Resuming")."""
    import tomlkit

    from a1x_configs import render
    from a1x_supervisor.slurm.walltime import wall_time_problems
    from a1x_supervisor.stages.configure import template_choices

    cid = "checkpoint_after_time_limit"
    cluster = spec.cluster
    if cluster is None or not spec.on_slurm or "train" not in todo:
        checks.other(cid, CheckState.SKIPPED, "only a cluster job has a time limit")
        return
    # The TOML the configure stage will write (rendered from the spec, as it does).
    data = tomlkit.parse(render.render_toml(template_choices(spec))).unwrap()
    problems, note = wall_time_problems(cluster, data)
    for p in problems:
        checks.finding(cid, p.explanation, evidence=[p.evidence], action=p.action, fixes=p.fixes, **(p.data or {}))
    if not problems:
        checks.ok(cid, note)


def _check_reused_outputs(spec: RunSpec, stages: Sequence[str], todo: Sequence[str], checks: Checks) -> None:
    """Outputs of earlier stages that this run reuses without remaking them: the converted model (its
    weights are links into the Hugging Face cache, docs/reference/alpamayo-recipe.md §4, §14 row 24) and the dataset a
    download left (``snapshot_download`` returns an existing folder after a Hub failure, §5)."""
    trains = "train" in todo
    if not trains or "convert" in todo:
        checks.other("dangling_model_symlinks", CheckState.SKIPPED, "the run makes or does not use the model")
    else:
        model = spec.paths.model_dir
        dangling = sorted(p.name for p in model.glob("*.safetensors") if p.is_symlink() and not p.exists())
        if dangling:
            checks.finding(
                "dangling_model_symlinks",
                f"The converted model's weight files link into the Hugging Face cache and {len(dangling)} of the "
                "links point nowhere (the cache was cleaned or moved): training would fail when it loads them.",
                evidence=[f"{model / name} is a dangling symlink" for name in dangling[:4]],
                action="run the convert stage again (`a1x-tui run --spec FILE --from convert`), or restore the cache "
                "the links name",
                links=len(dangling),
            )
        else:
            checks.ok("dangling_model_symlinks", f"{model}: no dangling weight link")
    data_dir = spec.data_dir
    if not trains or "download" in todo or not data_dir.is_dir():
        checks.other("download_empty", CheckState.SKIPPED, "the run downloads, or does not reuse, the dataset")
    elif not outputs_present(spec, "download"):
        checks.finding(
            "download_empty",
            f"{data_dir} exists but does not hold the files this run's data choices need, and the download "
            "stage is not part of this run: a download that 'succeeded' without its files (huggingface_hub "
            "returns an existing folder when the Hub cannot be reached, docs/reference/alpamayo-recipe.md §5).",
            evidence=[f"{data_dir}: the expected chunk files for {spec.reward_mode} training are missing"],
            action="run the download stage again (`a1x-tui run --spec FILE --from download`) with network access "
            "and a token that can read the dataset",
        )
    else:
        checks.ok("download_empty", f"{data_dir} holds the expected files")


def outputs_present(spec: RunSpec, stage: str) -> bool:
    """Whether a data stage's outputs already verify (cheap filesystem checks only)."""
    if spec.pipeline == "alpagym":
        from a1x_supervisor.stages.alpagym.convert import verify_alpagym_checkpoint, verify_release

        if stage == "download" and spec.alpagym is not None:
            return verify_release(spec.alpagym.release_dir).ok
        return stage == "convert" and verify_alpagym_checkpoint(spec.paths.model_dir).ok
    data = spec.data
    if stage == "convert":
        return verify_converted(spec.paths.model_dir, alpamayo_model=spec.alpamayo_model).ok
    if stage == "download" and not spec.entry.reasoning_data:
        return verify_download_motion(
            spec.paths.pai_dir,
            chunk_ids=data.chunk_ids,
            cameras=data.cameras,
            calibration=data.calibration,
            labels=spec.labels,
        ).ok
    if stage == "download":
        return verify_download_joint(
            spec.paths.reasoning_dir,
            num_reasoning_clips=data.num_reasoning_clips,
            cameras=data.cameras,
            calibration=data.calibration,
            labels=spec.labels,
        ).ok
    if stage == "curate":
        return verify_curated(spec.paths.pai_dir, chunk_ids=data.chunk_ids, num_clips=data.num_clips).ok
    if stage == "grader":
        return verify_grader(spec.paths.grader_dir).ok
    return False


def render_text(report: Report) -> str:
    """The report as the terminal shows it: summary, findings with evidence, the checks."""
    lines = [report.summary]
    for f in report.findings:
        lines.append(f"\n[{f.severity.value.upper()}] {f.id}: {f.title}")
        lines.append(f"  {f.explanation}")
        lines.extend(f"  > {ev.text}" for ev in f.evidence)
        if f.action:
            lines.append(f"  fix: {f.action}")
    lines.append("")
    for c in report.checks:
        mark = {"ok": "[+]", "finding": "[-]", "blind": "[?]", "skipped": "[ ]"}[c.state.value]
        lines.append(f"{mark} {c.id}" + (f": {c.note}" if c.note else ""))
    lines.extend(f"note: {n}" for n in report.notes)
    return "\n".join(lines)
