"""Preflight of the alpagym pipeline: this machine against what AlpaGym needs, before anything runs
(docs/reference/alpagym.md §5 "Preflight"; upstream install/check_env.sh and docs/ONBOARDING.md). The same Report,
finding contract and exit codes as the open-loop preflight (``a1x_supervisor.preflight``), whose checks it
shares where they ask the same question.

- ``alpagym_checkout_missing``: ``paths.workspace`` is not an AlpaGym checkout;
- ``binary_missing``: uv (every stage), docker, git-lfs and redis-server (a local run: AlpaSim's
  services run under docker compose, AlpaGym clones AlpaSim with git-lfs, Cosmos-RL starts redis-server),
  sbatch, squeue and sacct (``deploy = "slurm"``);
- ``alpagym_env_incomplete``: the rest of what AlpaGym's ``install/check_env.sh`` requires
  (docs/reference/alpagym.md §5 "Preflight"): uv 0.10.0 or newer, git-lfs set up (``git lfs install``), ``cudnn.h`` and
  ``nccl.h`` where it looks for them; the ok note says which were checked;
- ``host_config_rejected``: ``deploy = "slurm"`` with an experiment of the checkout whose topology is not a
  Slurm one (the host's own refusal, predicted; the spec refuses AlpaGym's shipped ones already);
- ``docker_unusable``: no ``docker compose`` plugin, a daemon this user cannot reach (docker without
  sudo), or no NVIDIA container toolkit (AlpaSim's compose file reserves GPUs with the ``nvidia`` driver);
- ``gpus_too_few``: two GPUs of at least 40 GB for the 10B model (local runs): the policy on one, the rollout
  beside AlpaSim's services on the other;
- ``disk_space_low``: the release weights, the run's checkpoints and scenes, the export;
- ``hf_token_missing``, ``hf_token_invalid``, ``nurec_access_denied`` and ``gated_repo``: the token, the
  gated NuRec scenes AlpaSim downloads, the Alpamayo 1.5 checkpoint;
- ``wandb_key_missing``: W&B logging without its key.

The NCCL peer-to-peer check needs the venv and both GPUs: it is the ``p2p`` stage, not a preflight check.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from a1x_diagnostics.findings import CheckState, Report
from a1x_supervisor.preflight_checks import GB, Checks, GpuProbe, machine, probe_gpus
from a1x_supervisor.secrets import hf_token_file, read_secret, secret_source, wandb_login, wandb_netrc
from a1x_supervisor.spec import RunSpec
from a1x_supervisor.stages.alpagym import ALPAMAYO_1_5

Runner = Callable[[Sequence[str]], tuple[int, str]]  # argv -> (exit code, output)

MIN_GPU_MEMORY = 40 * GB  # docs/reference/alpagym.md §2.4 (upstream docs/ONBOARDING.md:24)
GPUS_NEEDED = 2
WEIGHTS_BYTES = 22 * GB  # ~21 GB of weights (ONBOARDING.md:27)
# The run: the trainer's final safetensors export (~21 GB) and its checkpoints, and the scenes AlpaSim
# downloads (~1.5 GB each); ONBOARDING.md:24 asks for 100-150 GB in all, images and weights included.
TRAIN_BYTES = 50 * GB
NUREC = "nvidia/PhysicalAI-Autonomous-Vehicles-NuRec"  # the gated scenes (ONBOARDING.md:94)
_TOOLKIT = ("nvidia-container-runtime-hook", "nvidia-container-runtime", "nvidia-ctk", "nvidia-container-cli")
_CHECKOUT_FILES = ("packages/host/src/alpagym_host/cli.py", "install/check_nccl_p2p.py")
# install/check_env.sh (docs/reference/alpagym.md §5): its minimum uv, and where it looks for the CUDA headers.
MIN_UV = (0, 10, 0)
HEADER_DIRS: tuple[Path, ...] = (
    Path("/usr/include"), Path("/usr/include/x86_64-linux-gnu"), Path("/usr/local/cuda/include"),
)
HEADERS = ("cudnn.h", "nccl.h")


def _runner(env: Mapping[str, str]) -> Runner:
    def run(argv: Sequence[str]) -> tuple[int, str]:
        exe = shutil.which(argv[0], path=env.get("PATH"))
        if exe is None:
            return 127, f"{argv[0]}: not found"
        try:
            done = subprocess.run([exe, *argv[1:]], capture_output=True, text=True, timeout=30,
                                  stdin=subprocess.DEVNULL, env=dict(env))
        except (OSError, subprocess.TimeoutExpired) as exc:
            return 1, str(exc)
        return done.returncode, (done.stdout + done.stderr).strip()

    return run


def alpagym_preflight(
    spec: RunSpec,
    *,
    stages: Sequence[str],
    target: str,
    environ: Mapping[str, str] | None = None,
    gpu_probe: GpuProbe | None = None,
    disk_free: Callable[[Path], int] | None = None,
    which: Callable[[str], str | None] | None = None,
    skip_verified: Callable[[str], bool] | None = None,
    run: Runner | None = None,
    hub: bool = True,
) -> Report:
    """``a1x_supervisor.preflight.preflight`` for a spec with ``pipeline = "alpagym"`` (the same arguments)."""
    env, find, free_of, todo = machine(stages, environ, which, disk_free, skip_verified)
    checks = Checks()
    assert spec.alpagym is not None
    local = spec.alpagym.deploy == "local"

    _checkout(spec, todo, checks)
    _binaries(todo, checks, find, local=local)
    _check_env(todo, checks, run or _runner(env), find, local=local)
    _slurm_topology(spec, todo, checks)
    if local and "train" in todo:
        _docker(checks, run or _runner(env), find)
    else:
        checks.other("docker_unusable", CheckState.SKIPPED, "no local training: AlpaSim's containers run elsewhere")
    _gpus(todo, checks, env, gpu_probe, local=local)
    _disk(spec, todo, checks, free_of)
    _hub(todo, checks, env, ask=hub)
    if spec.wandb.enabled and "train" in todo and wandb_login(env) is None:
        checks.finding(
            "wandb_key_missing",
            "W&B logging is on (cosmos.logging.logger=[console,wandb]) but no W&B key is set.",
            evidence=[f"WANDB_API_KEY is not set and {wandb_netrc(env)} has no api.wandb.ai entry"],
            action="export WANDB_API_KEY (or `wandb login`), or set [wandb] enabled = false in the run spec",
        )
    if "p2p" in stages:
        checks.notes.append("NCCL peer-to-peer between the two GPUs is checked by the p2p stage (AlpaGym's own check)")

    return checks.report(target, stages, pipeline="alpagym")


def _checkout(spec: RunSpec, todo: Sequence[str], checks: Checks) -> None:
    cid = "alpagym_checkout_missing"
    if not todo:
        checks.other(cid, CheckState.SKIPPED, "every stage's outputs verify")
        return
    ws = spec.paths.workspace
    missing = [name for name in _CHECKOUT_FILES if not (ws / name).is_file()]
    if missing:
        checks.finding(
            cid,
            f"paths.workspace {ws} is not an AlpaGym checkout: every stage runs from it (uv run in its workspace).",
            evidence=[f"{ws / name}: missing" for name in missing],
            action="git clone https://github.com/NVlabs/alpagym and point paths.workspace at it",
        )
    else:
        checks.ok(cid, f"{ws} is an AlpaGym checkout")


def _binaries(todo: Sequence[str], checks: Checks, find: Callable[[str], str | None], *, local: bool) -> None:
    wanted: list[tuple[str, str]] = []
    if todo:
        wanted.append(("uv", "every stage runs through uv in the AlpaGym checkout"))
    if "train" in todo and local:
        wanted += [
            ("docker", "AlpaSim's services run under docker compose (execution.backend=local_process)"),
            ("git-lfs", "AlpaGym clones AlpaSim at its pinned revision, which uses git-lfs"),
            ("redis-server", "the Cosmos-RL controller starts redis-server"),
        ]
    elif "train" in todo:
        wanted += [(name, "deploy=slurm submits and follows the job from this node") for name in
                   ("sbatch", "squeue", "sacct")]
    if not wanted:
        checks.other("binary_missing", CheckState.SKIPPED, "no stage runs a program")
        return
    local_bin = Path("~/.local/bin").expanduser()
    missing = [(n, why) for n, why in wanted if not (find(n) or (n == "uv" and os.access(local_bin / n, os.X_OK)))]
    if missing:
        checks.finding(
            "binary_missing",
            "Required programs are not on PATH: " + "; ".join(f"{n} ({why})" for n, why in missing) + ".",
            evidence=[f"{n}: not found on PATH" for n, _ in missing],
            action="install them as AlpaGym's docs/ONBOARDING.md says (install/check_env.sh checks the same)",
            missing=[n for n, _ in missing],
        )
    else:
        checks.ok("binary_missing", ", ".join(n for n, _ in wanted) + " found")


def _version(text: str) -> tuple[int, ...] | None:
    m = re.search(r"\buv (\d+)\.(\d+)(?:\.(\d+))?", text)
    return None if m is None else tuple(int(g or 0) for g in m.groups())


def _header(name: str) -> Path | None:
    return next((d / name for d in HEADER_DIRS if (d / name).is_file()), None)


def _check_env(todo: Sequence[str], checks: Checks, run: Runner, find: Callable[[str], str | None], *,
               local: bool) -> None:
    """What install/check_env.sh requires beyond programs on PATH (docs/reference/alpagym.md §5 "Preflight")."""
    cid = "alpagym_env_incomplete"
    problems: list[str] = []
    checked: list[str] = []
    if todo and find("uv"):
        rc, out = run(["uv", "--version"])
        version = _version(out) if rc == 0 else None
        want = ".".join(map(str, MIN_UV))
        if version is None:
            checked.append(f"uv version not read ({out.splitlines()[-1][:80] if out else rc})")
        elif version < MIN_UV:
            problems.append(f"uv {'.'.join(map(str, version))} is older than {want} (check_env.sh: uv >= {want}); "
                            "`uv self update`")
        else:
            checked.append(f"uv {'.'.join(map(str, version))} >= {want}")
    if ("env" in todo or ("train" in todo and local)) and find("git-lfs"):
        # check_env.sh: `git config --get-regexp '^filter\.lfs\.'` finds the filter `git lfs install` sets up.
        rc, out = run(["git", "config", "--get-regexp", r"^filter\.lfs\."])
        if rc == 0 and out.strip():
            checked.append("git-lfs set up")
        else:
            problems.append("git-lfs is installed but not set up (no filter.lfs in the git config): `git lfs install`")
    if "env" in todo:  # `uv sync --all-packages` builds the model stack against them
        for name in HEADERS:
            found = _header(name)
            if found is None:
                problems.append(f"{name} not found in {', '.join(map(str, HEADER_DIRS))} (uv sync needs it)")
            else:
                checked.append(f"{name} in {found.parent}")
    if problems:
        checks.finding(
            cid,
            "AlpaGym's own install/check_env.sh would fail on this machine: " + "; ".join(problems) + ".",
            evidence=problems,
            action="fix what each line names (AlpaGym's docs/ONBOARDING.md), then `bash install/check_env.sh` in the "
            "checkout shows the same checks passing",
        )
    elif checked:
        checks.ok(cid, "; ".join(checked))
    else:
        checks.other(cid, CheckState.SKIPPED, "no stage needs uv sync, and uv is not on PATH to ask")


def _yaml_value(text: str, pattern: str) -> str | None:
    m = re.search(pattern, text, flags=re.M)
    return m.group(1).strip().strip("'\"") if m else None


def _slurm_topology(spec: RunSpec, todo: Sequence[str], checks: Checks) -> None:
    """deploy = "slurm" with a checkout experiment whose topology is local: the host refuses command=submit."""
    from a1x_supervisor.spec import ALPAGYM_SUBMIT_REFUSAL, alpagym_topology

    cid = "host_config_rejected"
    ag = spec.alpagym
    assert ag is not None
    if ag.deploy != "slurm" or "train" not in todo:
        checks.other(cid, CheckState.SKIPPED, "not a Slurm submission")
        return
    ws = spec.paths.workspace
    topology = alpagym_topology(ag.experiment, ag.overrides)
    where = f"experiment {ag.experiment}"
    if topology is None:
        found = sorted(ws.glob(f"packages/**/configs/experiment/{ag.experiment}.yaml"))
        if not found:
            checks.notes.append(
                f"experiment {ag.experiment} is not under {ws}/packages: not judged (a site plugin may ship it); "
                "Hydra skips a missing experiment silently and the host then stops with \"You must specify "
                "'topology'\" (docs/reference/alpagym.md §2.5)"
            )
            checks.other(cid, CheckState.BLIND, f"experiment {ag.experiment} not found in the checkout")
            return
        topology = _yaml_value(found[0].read_text(errors="replace"), r"^\s*-\s*override\s+/topology:\s*(\S+)")
        where = str(found[0])
    if topology is None:
        checks.other(cid, CheckState.BLIND, f"{where} selects no topology")
        return
    conf = ws / "packages/host/src/alpagym_host/conf/topology" / f"{topology}.yaml"
    backend = _yaml_value(conf.read_text(errors="replace"), r"^\s+backend:\s*(\S+)") if conf.is_file() else None
    if backend is None:
        from a1x_supervisor.spec import topology_backend

        backend = topology_backend(topology)
    if backend == "slurm" or backend is None:
        checks.ok(cid, f"topology {topology} ({where}): execution.backend {backend or 'not read'}")
        return
    checks.finding(
        cid,
        f'alpagym.deploy = "slurm" submits with command=submit, and the topology {topology} ({where}) has '
        f"execution.backend={backend}: the host refuses it before anything starts ({ALPAGYM_SUBMIT_REFUSAL!r}).",
        evidence=[f"{where}: topology {topology}, execution.backend={backend}"],
        action='add a Slurm topology to [alpagym] overrides (e.g. "topology=slurm_partial_node_1_2_1"), or '
        'deploy = "local"',
    )


def _docker(checks: Checks, run: Runner, find: Callable[[str], str | None]) -> None:
    cid = "docker_unusable"
    if not find("docker"):
        checks.other(cid, CheckState.SKIPPED, "docker is not on PATH (binary_missing)")
        return
    problems: list[str] = []
    rc, out = run(["docker", "compose", "version"])
    if rc != 0:
        problems.append(f"`docker compose version` failed: {out.splitlines()[-1][:200] if out else rc}")
    rc, out = run(["docker", "info", "--format", "{{json .Runtimes}}"])
    if rc != 0:
        problems.append(f"`docker info` failed (is the daemon running, may this user use it?): "
                        f"{out.splitlines()[-1][:200] if out else rc}")
    else:
        try:
            runtimes = json.loads(out.splitlines()[-1]) if out else {}
        except ValueError:
            runtimes = {}
        has_runtime = isinstance(runtimes, dict) and "nvidia" in runtimes
        if not has_runtime and not any(find(name) for name in _TOOLKIT):
            problems.append("no NVIDIA container toolkit: docker has no 'nvidia' runtime and none of "
                            f"{', '.join(_TOOLKIT)} is on PATH")
    if problems:
        checks.finding(
            cid,
            "Docker cannot run AlpaSim's services: the Wizard starts them with docker compose, with GPUs "
            "reserved through the NVIDIA container toolkit (docs/reference/alpagym.md §1.1).",
            evidence=problems,
            action="install the Docker Compose v2 plugin and the NVIDIA Container Toolkit, add this user to the "
            "docker group (docker without sudo), then `docker compose version` and `docker info`",
        )
    else:
        checks.ok(cid, "docker compose and the NVIDIA container runtime are there")


def _gpus(todo: Sequence[str], checks: Checks, env: Mapping[str, str], probe: GpuProbe | None, *, local: bool) -> None:
    cid = "gpus_too_few"
    if not local or not any(s in todo for s in ("p2p", "train")):
        checks.other(cid, CheckState.SKIPPED, "no GPU stage on this node")
        return
    inventory = (probe or (lambda: probe_gpus(env)))()
    if isinstance(inventory, str):
        checks.other(cid, CheckState.BLIND, f"GPUs unknown: {inventory}")
        checks.notes.append(f"could not count GPUs ({inventory}); AlpaGym needs 2 with >= 40 GB each")
        return
    big = [m for m in inventory.memory if m is None or m >= MIN_GPU_MEMORY]
    if len(big) < GPUS_NEEDED:
        small = [m for m in inventory.memory if m is not None and m < MIN_GPU_MEMORY]
        seen = f"{len(inventory.memory)} GPU(s) visible ({inventory.source})"
        if small:
            seen += f", {len(small)} with less than 40 GB (smallest {min(small) / GB:.0f} GB)"
        checks.finding(
            cid,
            f"AlpaGym's 10B model needs 2 GPUs of at least 40 GB (the policy on one, the rollout beside "
            f"AlpaSim's services on the other; docs/reference/alpagym.md §2.4); {seen}.",
            evidence=[f"{seen}; needed: 2 x 40 GB"],
            action="run on a node with two such GPUs (check CUDA_VISIBLE_DEVICES), or [alpagym] deploy = \"slurm\"",
            visible=len(inventory.memory),
            usable=len(big),
            needed=GPUS_NEEDED,
        )
    else:
        checks.ok(cid, f"{len(big)} GPU(s) of >= 40 GB ({inventory.source})")


def _disk(spec: RunSpec, todo: Sequence[str], checks: Checks, free_of: Callable[[Path], int]) -> None:
    assert spec.alpagym is not None
    needs: list[tuple[Path, int, str]] = []
    if "download" in todo:
        needs.append((spec.alpagym.release_dir, WEIGHTS_BYTES, "the release checkpoint (download)"))
    if "train" in todo:
        needs.append((spec.paths.workspace, TRAIN_BYTES, "the run's checkpoints and AlpaSim's scenes (train)"))
    if "export" in todo:
        needs.append((spec.paths.export_dir, WEIGHTS_BYTES, "the inference-format export (export)"))
    checks.disk(
        "disk_space_low",
        needs,
        free_of,
        explanation="A stage would run out of disk: the weights are about 21 GB, each NuRec scene about 1.5 GB, and "
        "AlpaGym asks for 100-150 GB in all (docs/reference/alpagym.md §5).",
        action="free disk space or point the spec's paths at a larger filesystem",
    )


def _hub(todo: Sequence[str], checks: Checks, env: Mapping[str, str], *, ask: bool) -> None:
    users = [s for s in todo if s in ("download", "convert", "train")]
    ids = ("hf_token_invalid", "nurec_access_denied", "gated_repo")
    if not users:
        checks.other("hf_token_missing", CheckState.SKIPPED, "no stage talks to Hugging Face")
        for cid in ids:
            checks.other(cid, CheckState.SKIPPED, "no stage talks to Hugging Face")
        return
    source = secret_source("HF_TOKEN", env)
    if source is None:
        checks.finding(
            "hf_token_missing",
            f"Stages {', '.join(users)} read gated repositories: the Alpamayo 1.5 checkpoint and the NuRec scenes "
            "the host checks access to before it starts anything (docs/reference/alpagym.md §1.3).",
            evidence=[f"HF_TOKEN is not set and {hf_token_file(env)} does not exist"],
            action=f"request access to {NUREC} and accept the Alpamayo licence on huggingface.co, then "
            "`hf auth login` (or export HF_TOKEN)",
        )
        for cid in ids:
            checks.other(cid, CheckState.SKIPPED, "no token to ask the Hub with (hf_token_missing)")
        return
    checks.ok("hf_token_missing", f"token from {source}")
    from a1x_supervisor.hub import DEFAULT_ENDPOINT, HubClient, HubRepo, offline

    if not ask or offline(env):
        for cid in ids:
            checks.other(cid, CheckState.SKIPPED, "the Hub was not asked" if not ask else "HF_HUB_OFFLINE=1")
        return
    token = read_secret("HF_TOKEN", env)
    endpoint = env.get("HF_ENDPOINT") or DEFAULT_ENDPOINT
    client = HubClient(endpoint=endpoint, token=token)
    who = client.whoami()
    if who.answer == "unauthorized":
        checks.finding(
            "hf_token_invalid",
            f"The Hub at {endpoint} rejects the token from {source}: the host's access check fails first.",
            evidence=[f"whoami: {who.detail or 'HTTP 401'} for the token from {source}"],
            action="`hf auth login --force` with a valid token (or export a valid HF_TOKEN)",
        )
        return
    if who.answer != "ok":
        for cid in ids:
            checks.other(cid, CheckState.BLIND, f"the Hub at {endpoint} did not answer whoami ({who.answer})")
        return
    checks.ok("hf_token_invalid", f"the Hub accepts the token from {source}")
    asks = []
    if "train" in users:
        asks.append(("nurec_access_denied", HubRepo(NUREC, "dataset", "AlpaSim's NuRec scenes", ("train",))))
    if "download" in users:
        asks.append(("gated_repo", HubRepo(ALPAMAYO_1_5, "model", "the Alpamayo 1.5 checkpoint", ("download",))))
    for cid, repo in asks:
        reply = client.can_read(repo)
        if reply.answer == "ok":
            checks.ok(cid, f"the token may read {repo.repo_id}")
        elif reply.answer in ("gated", "not_found", "forbidden"):
            why = {"gated": "gated, and access is not granted to this token's account",
                   "not_found": "not found, or this token may not read it",
                   "forbidden": "HTTP 403, this token may not read it"}[reply.answer]
            checks.finding(
                cid,
                f"The Hub at {endpoint} refuses this token {repo.repo_id} ({repo.what}): the "
                f"{', '.join(repo.stages)} stage fails on it.",
                evidence=[f"{repo.repo_id}: {why}"],
                action=f"request access at {repo.page(endpoint)} with the token's account; a fine-grained token "
                "needs 'read access to contents of all public gated repos'",
                repos=[repo.repo_id],
            )
        else:
            checks.other(cid, CheckState.BLIND, f"the Hub did not answer about {repo.repo_id} ({reply.answer})")
