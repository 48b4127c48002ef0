"""An sbatch script for clusters without containers, where the ``a1x_rl`` venv is on a shared filesystem.

**Whose design.** The script follows the design of Cosmos-RL HEAD's ``cosmos_rl_job_multi_node.sh``
(docs/reference/cosmos-rl.md §11.1): ``part_<N>/run_<M>`` folders, ``--requeue`` with failure retries,
``--signal=B:SIGUSR1@<pre-timeout>`` with a new part per autoresume, ``--exclusive``, ``--open-mode=append``
into ``slurm_<jobid>.log``, ``latest_run``/``latest_part`` links, ``remaining-retries``,
``ABORT-AUTORESUME``, a monitor that ends the job when a step fails (a controller ending itself with 143
under ``COSMOS_SHUTDOWN_ON_NO_POLICY_REPLICAS`` is a success), and its monitor wording (``Job failed with
status ...``, ``Final exit status: ...``) under the tag ``[a1x-tui-sbatch]``. It is **not** 747d1bd's
template (the recipe's pin, §11.2), which has none of that: there each role runs
``cosmos_rl_slurm_launch.py`` on nodes of its own, the controller is forced to DEBUG, the job has no
requeue and writes ``<root>/<job-name>/<jobid>/<role>/<t>.out``. Where this script differs from both, and why:

- The nodes run the ``cosmos-rl`` launcher (§2.1: ``--num-workers N --worker-idx k --url ...``) instead
  of ``cosmos_rl_slurm_launch.py``, which needs the node metadata that only ``dispatch_job.py`` computes;
  so roles are packed the launcher's way, contiguous GPU slices that may share a node
  (``a1x_supervisor.slurm.plan``), and the controller runs at ``COSMOS_LOG_LEVEL=INFO`` (the recipe's).
  The controller is its own step on the first node (``launch_controller.sh --port P --config C --script
  <entry>``); worker 0 gets ``--url localhost:<port>`` because the launcher starts a second controller
  when ``--url`` names its own host (launch_all.py). The launchers get no ``--log-dir``: the replicas
  write into the launcher's stdout and stderr, which the step sends to ``part_<N>/run_<M>/<role>_<t>.
  {out,err}`` (role = the node's first role, t = its index among that role's nodes; replicas are told
  apart by their ids, §3.6). A shared ``--log-dir`` is unsafe at 747d1bd anyway: launchers that start
  together race on its ``logs_latest`` link.
- The pre-timeout signal goes as the revision handles it (§2.6, §11.1). At HEAD only the steps that
  hold a policy replica get SIGUSR1 (its launcher forwards it to the policy processes, which save a
  checkpoint and leave); the controller and the rollout-only steps live on until those steps end or
  the grace time (130 s) is over, then end. At 747d1bd nothing handles SIGUSR1 (§5.3): every step is
  sent SIGTERM, which an ``srun`` client answers with "forcing job termination" (its tasks get SIGKILL,
  exit 137, no trap runs): the steps after the last complete checkpoint are lost.
- Resuming is ours at 747d1bd (the recipe's TOML says ``[train] resume = false``, §5.3). Every start
  runs with ``<run>/slurm/job.toml``: the submitted TOML with ``[train] timestamp`` fixed at submission
  (and ``output_dir`` = ``<output_dir>/<timestamp>``, what ``Config.from_dict`` would make of it, §8.1),
  so that every part writes into one folder and logs to one W&B run (its id is the timestamp, and
  Cosmos-RL opens it with ``resume="allow"``, §7.3). A start after the first looks for the newest
  complete checkpoint there (``cosmos_config`` and every ``.rank_<r>_complete``) and runs with
  ``part_<N>/run_<M>/resume.toml`` (``[train] resume = "<checkpoint>"``), which 747d1bd loads as that
  checkpoint; ``resume-step`` records the step (0: none).
- Checkpoints are pruned across parts: Cosmos-RL prunes beyond ``max_keep`` only what the running start
  saved (its list starts empty when ``resume`` is a path, §5.3), so the script keeps the newest
  ``max_keep`` complete checkpoints of the whole run, removes the ones a killed start left unfinished,
  and leaves the running start's own to Cosmos-RL and the newest complete one (what a restart resumes
  from) alone.
- Every ``srun`` gets ``--cpus-per-task``: srun 22.05 and later do not inherit the job's CPUs per task,
  and with CPU binding a step would be held to one core. The value is ``cpus_per_task`` or, without it,
  the job's CPUs on its smallest node.
- ``a1x-tui gpu-agent`` runs on every node as an extra ``--overlap`` step.

The environment contract is the recipe's (docs/reference/alpamayo-recipe.md §3): values from the spec are
exported in the script; secrets never are: ``pass_env`` names are only checked for presence.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from a1x_diagnostics.recipe_entries import entry_named
from a1x_supervisor.slurm.plan import CosmosRev, NodePlan, Packing, RoleName
from a1x_supervisor.slurm.spec import ClusterSpec, SlurmSpecError
from a1x_supervisor.spec_values import control_chars

SCRIPT_NAME = "sbatch_script.sh"
PLAN_NAME = "nodeplan.json"
RESUME_TEMPLATE_NAME = "resume-template.toml"  # the TOML with [train] resume = RESUME_PLACEHOLDER
RESUME_PLACEHOLDER = "@A1X_RESUME_CHECKPOINT@"
RESUME_TOML_NAME = "resume.toml"  # part_<N>/run_<M>/resume.toml: that start's TOML when it resumes
RESUME_STEP_NAME = "resume-step"  # part_<N>/run_<M>/resume-step: the step it resumed from, 0 = none
JOB_TOML_NAME = "job.toml"  # <run>/slurm/job.toml: the TOML every start runs with (its timestamp fixed)
# What a checkpoint path may hold to be written into the TOML and substituted by bash unchanged.
SAFE_PATH_CHARS = r"[[:alnum:]_./+:@%,=-]"
LOG_TAG = "a1x-tui-sbatch"
SIGNAL_GRACE_S = 130  # Cosmos-RL's monitor waits this long after SIGUSR1 (srun's grace is ~122 s)
PRUNE_EVERY_S = 30  # how often the monitor prunes checkpoints of earlier parts while the steps run
MAX_KEEP_DEFAULT = 5  # [train.ckpt] max_keep (docs/reference/cosmos-rl.md §5.3)
DEFAULT_RETRIES = 3  # dispatch_job.py --retries default (§11.1)
DEFAULT_PRE_TIMEOUT_S = 1200  # dispatch_job.py --pre-timeout-signal default (§11.1)
# launch_controller.sh of the venv's cosmos_rl, found without importing the package (its import logs).
FIND_CONTROLLER_SH = (
    "python -c 'import importlib.util, os; "
    'print(os.path.join(os.path.dirname(importlib.util.find_spec("cosmos_rl").origin), "launcher", '
    '"launch_controller.sh"))\''
)



@dataclass(frozen=True, slots=True, kw_only=True)
class SbatchJob:
    """What the script runs. Paths must be the same on the login node and every compute node."""

    run_dir: Path  # shared: slurm/ goes under it (and the GPU agent's gpu/)
    config_path: Path  # the effective recipe TOML; its n_init_replicas are what the controller waits for
    entry: str  # the recipe's training entry script (relative to workdir or absolute)
    workdir: Path  # the alpamayo-recipes checkout: the entry and TOML paths are relative to it
    venv: Path  # the a1x_rl venv
    entry_args: tuple[str, ...] = ()
    cosmos_rl: str = "cosmos-rl"  # the launcher command (a command line) inside the venv
    controller: str | None = None  # launch_controller.sh (a command line); None = the venv's cosmos_rl's
    # Ranks that write a policy checkpoint (tp x cp x pp x dp_shard, docs/reference/cosmos-rl.md §5.3); 0 = every
    # model_rank_<r>.pth present needs its .rank_<r>_complete marker.
    checkpoint_ranks: int = 0
    # Where every start saves its checkpoints (``<output_dir>/<timestamp>/checkpoints`` of job.toml, as the TOML
    # names it: a relative one is relative to ``workdir``), and how many of them the run keeps (-1: all).
    checkpoint_root: str = "outputs/checkpoints"
    max_keep: int = MAX_KEEP_DEFAULT


@dataclass(frozen=True, slots=True)
class NodeSet:
    """Consecutive nodes with the same roles, started by one srun."""

    roles: tuple[RoleName, ...]
    workers: range  # worker indices (positions in the job's node list)
    file_role: RoleName  # log files are <file_role>_<t>.{out,err}
    first_t: int  # t of the set's first node

    @property
    def name(self) -> str:
        """``policy``, ``rollout``, or ``policy-rollout`` for nodes holding both (monitor lines)."""
        return "-".join(self.roles)


def node_sets(plan: NodePlan) -> list[NodeSet]:
    """The srun steps of the workers and the log file names of their nodes."""
    seen: dict[RoleName, int] = {}
    out = []
    for roles, workers in plan.node_sets():
        first = roles[0]
        out.append(NodeSet(roles, workers, first, seen.get(first, 0)))
        seen[first] = seen.get(first, 0) + len(workers)
    return out


def required_env(spec: ClusterSpec, job: SbatchJob) -> list[str]:
    """Variables every step must see: the entry's dataset variable unless the spec sets it, and pass_env."""
    names = []
    entry = entry_named(job.entry)  # docs/reference/alpamayo-recipe.md §3 / §8.1: the variable it requires
    data_var = entry.data_env if entry is not None else None
    if data_var is not None and data_var not in spec.env:
        names.append(data_var)
    names += [n for n in spec.pass_env if n not in names]
    return names


def _q(value: str | Path) -> str:
    return shlex.quote(str(value))


def _cmd(command: str) -> str:
    """A command line from the spec, each word quoted (``python -m a1x_tui`` stays three words)."""
    return " ".join(_q(w) for w in shlex.split(command))


def _header(spec: ClusterSpec, plan: NodePlan, job: SbatchJob) -> list[str]:
    lines = ["#!/bin/bash", f"#SBATCH --job-name={spec.job_name}", f"#SBATCH --nodes={plan.n_nodes}"]
    lines.append("#SBATCH --ntasks-per-node=1")
    if spec.request_gpus:
        lines.append(f"#SBATCH --gres=gpu:{plan.gpus_per_node}")
    # Cosmos-RL's 747d1bd template asks for all of each node's memory (docs/reference/cosmos-rl.md §11.2); without
    # it a cluster's small default memory per node gets the job killed by the host's OOM killer.
    lines.append(f"#SBATCH --mem={spec.memory}")
    if spec.cpus_per_task is not None:
        lines.append(f"#SBATCH --cpus-per-task={spec.cpus_per_task}")
    if spec.time is not None:
        lines.append(f"#SBATCH --time={spec.time}")
    if spec.partition is not None:
        lines.append(f"#SBATCH --partition={spec.partition}")
    if spec.account is not None:
        lines.append(f"#SBATCH --account={spec.account}")
    lines.append(f"#SBATCH --output={job.run_dir / 'slurm' / 'slurm_%j.log'}")
    lines.append("#SBATCH --open-mode=append")
    if spec.autoresume is not False:
        lines.append(f"#SBATCH --signal=B:SIGUSR1@{_pre_timeout(spec)}")
    lines.append("#SBATCH --requeue")
    if spec.exclusive:
        lines.append("#SBATCH --exclusive")
    lines.append("#SBATCH --export=ALL")
    lines += [f"#SBATCH {arg}" for arg in spec.extra_sbatch_args]  # one option each (ClusterSpec checks them)
    return lines


def _pre_timeout(spec: ClusterSpec) -> int:
    return spec.pre_timeout_signal_s if spec.pre_timeout_signal_s is not None else DEFAULT_PRE_TIMEOUT_S


def _plan_comment(plan: NodePlan) -> list[str]:
    lines = [f"# a1x-tui plan: {plan.summary()}", "#   node 0 also runs the controller"]
    for ns in node_sets(plan):
        names = [s.name for k in ns.workers for s in plan.nodes[k].slots]
        held = names[0] if names[0] == names[-1] else f"{names[0]} .. {names[-1]}"
        last_t = ns.first_t + len(ns.workers) - 1
        files = f"{ns.file_role}_{ns.first_t}" + (f" .. {ns.file_role}_{last_t}" if last_t != ns.first_t else "")
        lines.append(f"#   nodes {ns.workers.start}-{ns.workers.stop - 1} ({ns.name}): {held}; logs {files}")
    return lines


def _worker_program(plan: NodePlan, job: SbatchJob, ns: NodeSet) -> str:
    """The bash -c program of one node set: its node's worker index, its log files, then the launcher."""
    cmd = [
        "exec",
        _cmd(job.cosmos_rl),
        "--config",
        '"$A1X_CONFIG"',
        "--num-workers",
        str(plan.n_nodes),
        "--worker-idx",
        '"$w"',
        "--url",
        '"$url"',
        "--policy",
        str(plan.shape("policy").replicas),
        "--rollout",
        str(plan.shape("rollout").replicas),
    ]
    if plan.shape("reference").replicas:
        cmd += ["--reference", str(plan.shape("reference").replicas)]
    if plan.spans_nodes:
        cmd += ["--node-ip-list", '"$A1X_NODE_IPS"']
    cmd += [_q(job.entry), *(_q(a) for a in job.entry_args)]
    return (
        # The worker index is the node's position in the job's node list, by name: it does not
        # depend on how srun orders the tasks of this step.
        'w=0; for n in $A1X_NODES; do [ "$n" = "$SLURMD_NODENAME" ] && break; w=$((w + 1)); done; '
        f"t=$((w - {ns.workers.start} + {ns.first_t})); "
        f'exec >>"$A1X_RUN_LOGS/{ns.file_role}_$t.out" 2>>"$A1X_RUN_LOGS/{ns.file_role}_$t.err"; '
        # HOSTNAME is a shell variable, not exported: the recipe's prefetch socket names need it (§3, §9.4).
        'export HOSTNAME="$(hostname)"; '
        # On the controller's node --url must not name this host, or the launcher starts a second controller.
        'if [ "$HOSTNAME" = "$A1X_CONTROLLER_HOST" ]; then url="localhost:$A1X_CONTROLLER_PORT"; '
        'else url="$A1X_CONTROLLER_URL"; fi; ' + " ".join(cmd)
    )


def _controller_program(job: SbatchJob) -> str:
    script = _cmd(job.controller) if job.controller else '"$A1X_CONTROLLER_SH"'
    args = " ".join(_q(a) for a in job.entry_args)
    return f'exec {script} --port "$A1X_CONTROLLER_PORT" --config "$A1X_CONFIG" --script {_q(job.entry)}' + (
        f" {args}" if args else ""
    )


_FUNCTIONS = r"""log() {
    echo "[$(date +'%Y-%m-%d %I:%M:%S.%3N %p %Z')][__TAG__]: $*"
}

received_signal=""
saving_names() {
    local i names=()
    for i in "${!STEP_PIDS[@]}"; do
        [ "${STEP_SAVES[$i]}" = 1 ] && names+=("${STEP_NAMES[$i]}")
    done
    echo "${names[*]:-none}"
}

# The pre-timeout SIGUSR1 goes where the revision handles it (docs/reference/cosmos-rl.md §2.6, §11.1): at HEAD
# only to the steps that hold a policy replica, whose launcher forwards it to the policy (it saves and
# leaves); the others live on. At 747d1bd nothing handles it: every step gets SIGTERM, which srun answers
# with "forcing job termination" (SIGKILL to its tasks). scancel's SIGTERM always goes to every step.
on_signal() {
    received_signal=$1
    local i
    if [ "$1" = USR1 ] && [ "$SAVE_ON_USR1" = 1 ]; then
        log "Signal SIGUSR1 caught. Forwarding SIGUSR1 to the steps that save a checkpoint: $(saving_names)"
        for i in "${!STEP_PIDS[@]}"; do
            [ "${STEP_SAVES[$i]}" = 1 ] && kill -s USR1 "${STEP_PIDS[$i]}" 2>/dev/null
        done
    else
        log "Signal SIG$1 caught. Forwarding SIGTERM to the job steps."
        for i in "${!STEP_PIDS[@]}"; do
            kill -s TERM "${STEP_PIDS[$i]}" 2>/dev/null || true
        done
    fi
}

# A checkpoint is complete with its cosmos_config and every .rank_<r>_complete marker
# (docs/reference/cosmos-rl.md §5.3).
checkpoint_complete() {
    local dir=$1 r f
    [ -e "$dir/cosmos_config" ] || return 1
    if [ "$CKPT_RANKS" -gt 0 ]; then
        for ((r = 0; r < CKPT_RANKS; r++)); do
            [ -e "$dir/.rank_${r}_complete" ] || return 1
        done
        return 0
    fi
    for f in "$dir"/model_rank_*.pth; do
        [ -e "$f" ] || return 1
        r=${f##*/model_rank_}
        [ -e "$dir/.rank_${r%.pth}_complete" ] || return 1
    done
}

# The steps of this run's checkpoints (every start saves into $CKPT_ROOT/step_<N>/), newest first.
checkpoint_steps() {
    local d
    for d in "$CKPT_ROOT"/step_*; do
        [ -d "$d" ] || continue
        d=${d##*/step_}
        [[ "$d" =~ ^[0-9]+$ ]] && echo "$d"
    done | sort -nr
}

# "STEP PATH" of the newest complete checkpoint of this run; the unfinished newer ones are named.
latest_checkpoint() {
    local step path
    while read -r step; do
        path="$CKPT_ROOT/step_$step/policy"
        [[ "$path" = /* ]] || path="$PWD/$path"
        if checkpoint_complete "$path"; then
            echo "$step $path"
            return 0
        fi
        log "Checkpoint of step $step is not complete, not resuming from it: $path" >&2
    done < <(checkpoint_steps)
    return 1
}

# Keep the newest MAX_KEEP complete checkpoints of the whole run (docs/slurm.md, "Resuming"). Cosmos-RL
# prunes only what the running start saved (its list starts empty when [train] resume is a path), so the
# earlier starts' checkpoints are ours: beyond MAX_KEEP they go, and so do their unfinished ones ($1 = 1:
# no step runs, every unfinished one is dead). The running start's own (steps after RESUME_STEP) are left
# to Cosmos-RL; the newest complete one, which a restart resumes from, always stays, and so does the one
# Cosmos-RL's best/ link points to.
prune_checkpoints() {
    local idle=$1 step dir kept=0 best
    [ "$MAX_KEEP" -ge 1 ] || return 0
    best=$(readlink -f "$CKPT_ROOT/../../best/checkpoints" 2>/dev/null || true)
    while read -r step; do
        dir="$CKPT_ROOT/step_$step"
        if checkpoint_complete "$dir/policy"; then
            kept=$((kept + 1))
            [ "$kept" -le "$MAX_KEEP" ] && continue
            [ "$step" -gt "$RESUME_STEP" ] && continue
        elif [ "$idle" != 1 ] && [ "$step" -gt "$RESUME_STEP" ]; then
            continue
        fi
        [ -n "$best" ] && [ "$(readlink -f "$dir")" = "$best" ] && continue
        rm -rf -- "$dir" && log "Pruned checkpoint of step $step (the run keeps $MAX_KEEP): $dir"
    done < <(checkpoint_steps)
}

steps_alive() {
    local i
    for i in "${!STEP_PIDS[@]}"; do
        [ "${1:-}" = saving ] && [ "${STEP_SAVES[$i]}" != 1 ] && continue
        kill -0 "${STEP_PIDS[$i]}" 2>/dev/null && return 0
    done
    return 1
}

# Wait up to $1 seconds for the steps (with $2 = saving: the steps that save) to end.
wait_steps() {
    local deadline=$((SECONDS + $1))
    while steps_alive "${2:-}" && [ "$SECONDS" -lt "$deadline" ]; do
        sleep 1 & wait $!
    done
}

# Log the exit code of every step not logged yet (waits for each).
reap_steps() {
    local i rc
    for i in "${!STEP_PIDS[@]}"; do
        [ -n "${EXITED[$i]:-}" ] && continue
        wait "${STEP_PIDS[$i]}" 2>/dev/null
        rc=$?
        EXITED[$i]=$rc
        log "${STEP_NAMES[$i]} process exited with code $rc"
    done
}

# End the steps still running: SIGTERM, up to 30 s, then SIGKILL.
end_steps() {
    local i
    for i in "${!STEP_PIDS[@]}"; do
        kill -s TERM "${STEP_PIDS[$i]}" 2>/dev/null || true
    done
    wait_steps 30
    if steps_alive; then
        log "Steps still running after 30s. Killing them."
        for i in "${!STEP_PIDS[@]}"; do
            kill -9 "${STEP_PIDS[$i]}" 2>/dev/null || true
        done
    fi
    reap_steps
}

# cosmos_rl_job_multi_node.sh: a controller that ends itself with 128+SIGTERM once the last policy
# is gone (COSMOS_SHUTDOWN_ON_NO_POLICY_REPLICAS) has succeeded, unless this script was signalled.
coordinated_exit() {
    [ "$1" -eq 143 ] && [ -z "$received_signal" ] || return 1
    case "$(printf '%s' "${COSMOS_SHUTDOWN_ON_NO_POLICY_REPLICAS:-0}" | tr '[:upper:]' '[:lower:]')" in
        1 | true | yes) return 0 ;;
    esac
    return 1
}
"""


def _srun(*options: str) -> str:
    """``srun --overlap`` with this node's CPUs for every task (srun 22.05+ does not inherit the job's
    ``--cpus-per-task``: docs/slurm.md, "Every step gets its CPUs")."""
    return " ".join(("srun --overlap", *options, '--cpus-per-task="$A1X_STEP_CPUS"'))


def _step_cpus(spec: ClusterSpec) -> list[str]:
    if spec.cpus_per_task is not None:
        return [f"A1X_STEP_CPUS={spec.cpus_per_task}"]
    return [
        "# The job's CPUs on its smallest node (SLURM_JOB_CPUS_PER_NODE is like 72(x2),64).",
        "A1X_STEP_CPUS=$(echo \"${SLURM_JOB_CPUS_PER_NODE:-1}\" | tr ',' '\\n' | sed 's/(.*//' | sort -n | head -n 1)",
        '[[ "$A1X_STEP_CPUS" =~ ^[1-9][0-9]*$ ]] || A1X_STEP_CPUS=1',
    ]


def _check_sbatch_path(path: Path, what: str) -> None:
    """A path on an ``#SBATCH`` line: sbatch splits at whitespace and expands ``%`` and ``\\`` patterns."""
    text = str(path)
    bad = control_chars(text)
    if bad is not None or any(c.isspace() or c in "%\\" for c in text):
        why = f"the control character {bad}" if bad else "spaces, % or \\"
        raise SlurmSpecError(f"{path}: {what} may not contain {why} (for #SBATCH --output)")


def render_sbatch(spec: ClusterSpec, plan: NodePlan, job: SbatchJob) -> str:
    """The whole script. Raises ``SlurmSpecError`` for a spec it cannot express."""
    if plan.packing is not Packing.LAUNCHER:
        raise SlurmSpecError("render_sbatch needs a plan packed the cosmos-rl launcher way (method = 'sbatch')")
    if spec.gpus_per_node != plan.gpus_per_node:
        raise SlurmSpecError(f"the plan is for {plan.gpus_per_node}-GPU nodes but gpus_per_node = {spec.gpus_per_node}")
    if spec.nodes is not None and spec.nodes != plan.n_nodes:
        raise SlurmSpecError(f"nodes = {spec.nodes} but the plan needs {plan.n_nodes}: {plan.summary()}")
    _check_sbatch_path(job.run_dir, "the run directory")
    for what, value in (("the workspace", job.workdir), ("the venv", job.venv), ("the entry", job.entry)):
        if control_chars(str(value)) is not None:
            raise SlurmSpecError(f"{value!r}: {what} may not contain control characters")
    retries = spec.retries if spec.retries is not None else DEFAULT_RETRIES
    autoresume = 0 if spec.autoresume is False else 1
    out: list[str] = _header(spec, plan, job)
    out.append("")
    out += _plan_comment(plan)
    out += [
        "",
        "set -o pipefail",
        "",
        f"export A1X_RUN_DIR={_q(job.run_dir)}",
        'SLURM_RUN_ROOT="$A1X_RUN_DIR/slurm"',
        f'export A1X_CONFIG="$SLURM_RUN_ROOT/{JOB_TOML_NAME}"',
        f"export A1X_CONTROLLER_PORT={spec.controller_port}",
        f"NUM_WORKERS={plan.n_nodes}",
        f"MAX_RETRIES={retries}",
        f"AUTORESUME={autoresume}",
        f"SAVE_ON_USR1={1 if spec.cosmos_rev is CosmosRev.HEAD else 0}",
        f"CKPT_RANKS={job.checkpoint_ranks}",
        f"CKPT_ROOT={_q(job.checkpoint_root)}",
        f"MAX_KEEP={job.max_keep}",
        "RESUME_STEP=0",
        "",
    ]
    out += _FUNCTIONS.replace("__TAG__", LOG_TAG).splitlines()
    out += ["STEP_PIDS=()", "STEP_NAMES=()", "STEP_SAVES=()", "declare -A EXITED=()"]
    out += ['trap "on_signal USR1" USR1', 'trap "on_signal TERM" TERM']
    out += [
        "",
        "# --- environment (docs/reference/alpamayo-recipe.md §3); secrets come from the submitting environment only",
        f"export VIRTUAL_ENV={_q(job.venv)}",
        'export PATH="$VIRTUAL_ENV/bin:$PATH"',
    ]
    env = dict(spec.env)
    env.setdefault("COSMOS_LOG_LEVEL", "INFO")  # the entries default to DEBUG: per-sample lines (§3)
    env.setdefault("NCCL_NVLS_ENABLE", "0")  # as Cosmos-RL's own Slurm path sets it (§11.1)
    for name in sorted(env):
        out.append(f"export {name}={_q(env[name])}")
    needed = required_env(spec, job)
    if needed:
        out.append(f"for name in {' '.join(needed)}; do")
        out.append('    if [ -z "${!name:-}" ]; then')
        out.append('        log "Missing required env var $name: set it in the environment that runs sbatch."')
        out.append("        exit 2")
        out.append("    fi")
        out.append("done")
    out += [f"cd {_q(job.workdir)} || exit 2", ""]
    out += _step_cpus(spec)
    out += [
        "",
        "# --- part_<N>/run_<M> (docs/reference/cosmos-rl.md §11.1): a new run per start, a new part per autoresume",
        'mkdir -p "$SLURM_RUN_ROOT"',
        'part=$(ls -d "$SLURM_RUN_ROOT"/part_* 2>/dev/null | sort -V | tail -n 1)',
        'if [ -z "$part" ]; then',
        '    part="$SLURM_RUN_ROOT/part_0"',
        '    mkdir -p "$part"',
        '    echo "$MAX_RETRIES" > "$part/remaining-retries"',
        "fi",
        'last_run=$(ls -d "$part"/run_* 2>/dev/null | sort -V | tail -n 1)',
        'if [ -z "$last_run" ]; then run_no=0; else run_no=$(( ${last_run##*/run_} + 1 )); fi',
        'export A1X_RUN_LOGS="$part/run_$run_no"',
        'mkdir -p "$A1X_RUN_LOGS"',
        'ln -sfn "${part##*/}/run_$run_no" "$SLURM_RUN_ROOT/latest_run"',
        'ln -sfn "${part##*/}" "$SLURM_RUN_ROOT/latest_part"',
        'log "Job $SLURM_JOB_ID started on $(hostname) (restart ${SLURM_RESTART_COUNT:-0})"',
        'log "New run dir: $A1X_RUN_LOGS"',
        "",
        "# --- resume (docs/slurm.md, Resuming): a start after a requeue trains from the newest complete checkpoint",
        "# of this run. Cosmos-RL 747d1bd does nothing of its own (its TOML says resume = false), so this start's",
        "# TOML names the checkpoint in [train] resume, which it loads as a path (docs/reference/cosmos-rl.md §5.3).",
        "echo 0 > \"$A1X_RUN_LOGS/" + RESUME_STEP_NAME + "\"",
        'if found=$(latest_checkpoint); then',
        '    ckpt=${found#* }',
        f'    if [[ ! "$ckpt" =~ ^{SAFE_PATH_CHARS}+$ ]]; then',
        '        log "Cannot resume from $ckpt: only letters, digits and _./+:@%,=- can go into the TOML"',
        "        exit 2",
        "    fi",
        f'    template=$(<"$SLURM_RUN_ROOT/{RESUME_TEMPLATE_NAME}") || exit 2',
        f'    printf \'%s\\n\' "${{template//{RESUME_PLACEHOLDER}/$ckpt}}" > "$A1X_RUN_LOGS/{RESUME_TOML_NAME}"',
        "    RESUME_STEP=${found%% *}",
        f'    echo "$RESUME_STEP" > "$A1X_RUN_LOGS/{RESUME_STEP_NAME}"',
        f'    export A1X_CONFIG="$A1X_RUN_LOGS/{RESUME_TOML_NAME}"',
        '    log "Resuming from checkpoint step $RESUME_STEP: $ckpt"',
        "fi",
        "prune_checkpoints 1",
        "",
        "# --- nodes: worker k runs on the k-th node of the job; the controller on node 0",
        'mapfile -t NODES < <(scontrol show hostnames "$SLURM_JOB_NODELIST")',
        'if [ "${#NODES[@]}" -ne "$NUM_WORKERS" ]; then',
        '    log "Expected $NUM_WORKERS nodes, got ${#NODES[@]}: $SLURM_JOB_NODELIST"',
        "    exit 2",
        "fi",
        'export A1X_NODES="${NODES[*]}"',
        "A1X_CONTROLLER_HOST=$(" + _srun("--nodes=1", "--ntasks=1", '--nodelist="${NODES[0]}"') + " hostname)",
        "export A1X_CONTROLLER_HOST",
        'export A1X_CONTROLLER_URL="$A1X_CONTROLLER_HOST:$A1X_CONTROLLER_PORT"',
        'log "Controller node: ${NODES[0]} ($A1X_CONTROLLER_URL)"',
    ]
    if not job.controller:
        out += [
            f"A1X_CONTROLLER_SH=$({FIND_CONTROLLER_SH})",
            'if [ ! -x "$A1X_CONTROLLER_SH" ]; then',
            '    log "No launch_controller.sh of cosmos_rl in $VIRTUAL_ENV: ${A1X_CONTROLLER_SH:-not importable}"',
            "    exit 2",
            "fi",
            "export A1X_CONTROLLER_SH",
        ]
    if plan.spans_nodes:
        out += [
            "# Replicas wider than a node rendezvous at their first node's IP (--node-ip-list, §2.1), in worker order.",
            "declare -A IP_OF=()",
            "while read -r name ip; do IP_OF[$name]=$ip; done < <("
            + _srun('--nodes="$NUM_WORKERS"', "--ntasks-per-node=1")
            + ' bash -c \'echo "$SLURMD_NODENAME $(hostname -I | cut -d" " -f1)"\')',
            'A1X_NODE_IPS=$(for n in "${NODES[@]}"; do printf \'%s\\n\' "${IP_OF[$n]}"; done | paste -sd ";")',
            "export A1X_NODE_IPS",
        ]
    out.append("")
    if spec.gpu_agent:
        agent = f'{_cmd(spec.a1x_tui)} gpu-agent "$A1X_RUN_DIR" --controller-host "$A1X_CONTROLLER_URL"'
        out += [
            "# GPU samples of every node into the shared run dir (not watched: the run does not depend on it)",
            _srun('--nodes="$NUM_WORKERS"', "--ntasks-per-node=1", "--kill-on-bad-exit=0") + " \\",
            '    -o "$A1X_RUN_LOGS/gpu_agent_%t.out" -e "$A1X_RUN_LOGS/gpu_agent_%t.err" \\',
            f"    {agent} &",
            "AGENT_PID=$!",
            "",
        ]
    out += [
        "# controller on node 0 (cosmos_rl_job_multi_node.sh does the same)",
        _srun("--nodes=1", "--ntasks=1", '--nodelist="${NODES[0]}"') + " \\",
        '    -o "$A1X_RUN_LOGS/controller.out" -e "$A1X_RUN_LOGS/controller.err" \\',
        f"    bash -c {shlex.quote(_controller_program(job))} &",
        "STEP_PIDS+=($!)",
        "STEP_NAMES+=(controller)",
        "STEP_SAVES+=(0)",
        'log "Controller started with PID $!"',
        "",
    ]
    for ns in node_sets(plan):
        count = len(ns.workers)
        nodelist = f'"$(IFS=,; echo "${{NODES[*]:{ns.workers.start}:{count}}}")"'
        out += [
            f"# nodes {ns.workers.start}-{ns.workers.stop - 1}: {ns.name}",
            _srun(f"--nodes={count}", "--ntasks-per-node=1", f"--nodelist={nodelist}", "--kill-on-bad-exit=1")
            + " \\",
            f"    bash -c {shlex.quote(_worker_program(plan, job, ns))} &",
            "STEP_PIDS+=($!)",
            f"STEP_NAMES+=({ns.name})",
            f"STEP_SAVES+=({1 if 'policy' in ns.roles else 0})",
            f'log "{ns.name} started on nodes {ns.workers.start}-{ns.workers.stop - 1} with PID $!"',
            "",
        ]
    out += [
        "# --- monitor: the first step that fails ends the job (as Cosmos-RL's sbatch monitor does)",
        "status=0",
        "last_prune=$SECONDS",
        "while true; do",
        '    if [ -n "$received_signal" ]; then',
        '        log "Signal received (SIG$received_signal), leaving the monitor"',
        "        status=1",
        "        break",
        "    fi",
        '    for i in "${!STEP_PIDS[@]}"; do',
        '        [ -n "${EXITED[$i]:-}" ] && continue',
        '        if ! kill -0 "${STEP_PIDS[$i]}" 2>/dev/null; then',
        '            wait "${STEP_PIDS[$i]}"',
        "            rc=$?",
        "            EXITED[$i]=$rc",
        '            log "${STEP_NAMES[$i]} process exited with code $rc"',
        '            if [ "${STEP_NAMES[$i]}" = controller ] && coordinated_exit "$rc"; then',
        '                log "Controller exited $rc via coordinated shutdown. Treating as success."',
        '            elif [ "$rc" -ne 0 ] && [ "$status" -eq 0 ]; then',
        '                log "${STEP_NAMES[$i]} failed with exit code $rc. Terminating other processes."',
        "                status=$rc",
        "            fi",
        "        fi",
        "    done",
        '    [ "$status" -ne 0 ] && break',
        '    if [ "${#EXITED[@]}" -eq "${#STEP_PIDS[@]}" ]; then',
        '        log "All processes completed successfully"',
        "        break",
        "    fi",
        f'    if [ $((SECONDS - last_prune)) -ge {PRUNE_EVERY_S} ]; then',
        "        prune_checkpoints 0",
        "        last_prune=$SECONDS",
        "    fi",
        "    sleep 1 & wait $!",
        "done",
        "",
        'if [ "$received_signal" = USR1 ] && [ "$SAVE_ON_USR1" = 1 ]; then',
        "    # HEAD: the controller and the rollouts stay up while the policy saves (until the grace time ends).",
        f"    wait_steps {SIGNAL_GRACE_S} saving",
        "    if steps_alive saving; then",
        f'        log "The steps that save still run after {SIGNAL_GRACE_S}s. Ending every step."',
        "    else",
        '        log "The steps that save have ended. Ending the other steps."',
        "    fi",
        "fi",
        "end_steps",
        "prune_checkpoints 0",
    ]
    if spec.gpu_agent:
        out += ['kill "$AGENT_PID" 2>/dev/null || true', 'wait "$AGENT_PID" 2>/dev/null || true']
    out += [
        'log "Main loop exited with status: $status"',
        "",
        "# --- autoresume (pre-timeout SIGUSR1) and failure retries",
        "final=$status",
        'if [ -e "$A1X_RUN_DIR/ABORT-AUTORESUME" ]; then',
        '    log "Abort file detected ($A1X_RUN_DIR/ABORT-AUTORESUME), will not requeue"',
        'elif [ "$received_signal" = USR1 ] && [ "$AUTORESUME" = 1 ]; then',
        '    new_part="$SLURM_RUN_ROOT/part_$(( ${part##*/part_} + 1 ))"',
        '    mkdir -p "$new_part"',
        '    echo "$MAX_RETRIES" > "$new_part/remaining-retries"',
        '    log "Received signal SIGUSR1, will requeue for autoresume into $new_part"',
        '    scontrol requeue "$SLURM_JOB_ID"',
        "    final=$?",
        '    log "Requeue status: $final"',
        'elif [ "$status" -ne 0 ] && [ "$received_signal" != TERM ]; then',
        '    left=$(cat "$part/remaining-retries" 2>/dev/null || echo 0)',
        '    if [ "$left" -gt 0 ]; then',
        '        echo $((left - 1)) > "$part/remaining-retries"',
        '        log "Job failed with status $status. Retries remaining: $((left - 1)). Requeuing..."',
        '        scontrol requeue "$SLURM_JOB_ID" || log "Requeue failed with exit code $?."',
        "    else",
        '        log "Job failed with status $status. No retries remaining."',
        "    fi",
        'elif [ "$received_signal" = TERM ]; then',
        '    log "Job was cancelled (SIGTERM). Skipping auto-retry."',
        "fi",
        'log "Final exit status: $final"',
        'exit "$final"',
    ]
    return "\n".join(out) + "\n"


def job_toml(toml_text: str, stamp: str) -> tuple[str, str]:
    """The TOML every start of the job runs with, and the folder its checkpoints go to.

    ``[train] timestamp`` is fixed (``stamp`` unless the TOML sets one) and ``output_dir`` becomes
    ``<output_dir>/<stamp>``, what 747d1bd's ``Config.from_dict`` makes of a TOML without a timestamp
    (docs/reference/cosmos-rl.md §8.1): every part writes into that one folder and logs to the one W&B run
    whose id is the timestamp (§7.3), instead of a new folder and a new run per part."""
    import tomlkit

    from a1x_diagnostics.config.edit import Edit, EditError, edit_text

    try:
        train = tomlkit.parse(toml_text).unwrap().get("train") or {}
    except Exception as exc:  # tomlkit's errors have no common base beyond Exception
        raise SlurmSpecError(f"cannot read the TOML: {exc}") from None
    output_dir = str(train.get("output_dir", "./outputs"))
    if str(train.get("timestamp") or ""):
        return toml_text, f"{output_dir}/checkpoints"
    folder = f"{output_dir.rstrip('/') or '.'}/{stamp}"
    try:
        text = edit_text(toml_text, [Edit("train.timestamp", stamp), Edit("train.output_dir", folder)])
    except EditError as exc:
        raise SlurmSpecError(f"cannot fix [train] timestamp in the job's TOML: {exc}") from None
    return text, f"{folder}/checkpoints"


def resume_template(toml_text: str) -> str:
    """The TOML of a resumed start: ``toml_text`` with ``[train] resume`` set to the placeholder the
    script replaces with the checkpoint's path (comments and layout kept)."""
    from a1x_diagnostics.config.edit import Edit, EditError, edit_text

    try:
        return edit_text(toml_text, [Edit("train.resume", RESUME_PLACEHOLDER)])
    except EditError as exc:
        raise SlurmSpecError(f"cannot write [train] resume into the TOML of a resumed part: {exc}") from None


def write_sbatch(spec: ClusterSpec, plan: NodePlan, job: SbatchJob, *, stamp: str | None = None) -> Path:
    """Write ``<run>/slurm/``: ``sbatch_script.sh``, ``nodeplan.json``, ``job.toml`` (the submitted TOML with
    its timestamp fixed, ``stamp`` = now by default) and ``resume-template.toml``; returns the script."""
    from datetime import datetime

    toml, ckpt_root = job_toml(
        job.config_path.read_text(encoding="utf-8"), stamp or datetime.now().strftime("%Y%m%d%H%M%S")
    )
    job = replace(job, checkpoint_root=ckpt_root)
    text = render_sbatch(spec, plan, job)
    template = resume_template(toml)
    slurm_dir = job.run_dir / "slurm"
    slurm_dir.mkdir(parents=True, exist_ok=True)
    (slurm_dir / PLAN_NAME).write_text(json.dumps(plan.to_json(), indent=1) + "\n", encoding="utf-8")
    (slurm_dir / JOB_TOML_NAME).write_text(toml, encoding="utf-8")
    (slurm_dir / RESUME_TEMPLATE_NAME).write_text(template, encoding="utf-8")
    script = slurm_dir / SCRIPT_NAME
    script.write_text(text, encoding="utf-8")
    script.chmod(0o755)
    return script


def missing_env(spec: ClusterSpec, job: SbatchJob, environ: Mapping[str, str]) -> list[str]:
    """Names the job needs that the submitting environment lacks (checked before sbatch, values never read out)."""
    return [n for n in required_env(spec, job) if not environ.get(n)]
