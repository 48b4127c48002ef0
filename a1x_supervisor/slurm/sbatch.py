"""An sbatch script for clusters without containers, where the ``a1x_rl`` venv is on a shared filesystem.

The job follows Cosmos-RL's own Slurm path (docs/reference/cosmos-rl.md §11.1) with the launcher of §2.1 on the
nodes: the controller runs as its own step on the first node (``launch_controller.sh --port P
--config C --script <entry>``), and every node runs ``cosmos-rl --config C --num-workers N
--worker-idx k --url <first node>:<port> --policy P --rollout R <entry>``, one ``srun`` per set of
consecutive nodes that hold the same roles. Worker 0 is given ``--url localhost:<port>``: the
launcher starts a second controller when ``--url`` names its own host (launch_all.py), and the
controller listens on all interfaces.

The launchers get no ``--log-dir``: their replicas write into the launcher's stdout and stderr,
which the step sends to Cosmos-RL's Slurm layout, so one reader follows both ways to submit:
``<run>/slurm/part_<N>/run_<M>/controller.{out,err}`` and ``<role>_<t>.{out,err}``, where role is the
first role on the node and t the node's index among the nodes of that role (a node holding two
roles writes both into one file; replicas are told apart by their ids, §3.6). A shared ``--log-dir``
is also unsafe at 747d1bd (the recipe's pin): launchers that start together race on its
``logs_latest`` link and abort the job (fixed at HEAD).

The rest mirrors ``cosmos_rl_job_multi_node.sh``: ``slurm_<jobid>.log`` (``--open-mode=append``),
``latest_run`` / ``latest_part`` links, ``remaining-retries``, a monitor that ends the job when any
step fails (a controller that ends itself with 143 under ``COSMOS_SHUTDOWN_ON_NO_POLICY_REPLICAS`` is
a success), failure retries, a new part on the pre-timeout SIGUSR1 and ``ABORT-AUTORESUME``. The
monitor's lines use Cosmos-RL's wording (``Job failed with status ...``, ``Final exit status: ...``)
with the tag ``[a1x-tui-sbatch]``. ``a1x-tui gpu-agent`` runs on every node as an extra ``--overlap``
step.

Resuming is ours: at 747d1bd nothing in the launcher or the trainer handles SIGUSR1 and the TOML says
``[train] resume = false`` (docs/reference/cosmos-rl.md §5.3, §11.2), so a requeued part would train from step 0.
On the pre-timeout signal the steps get SIGTERM there (HEAD: SIGUSR1, on which its policy saves a
checkpoint, §2.6). Every start after the first looks for the newest complete checkpoint this job
saved (the policy's ``checkpoint saved successfully at`` lines in the job's own logs; complete =
``cosmos_config`` and every ``.rank_<r>_complete``) and, if there is one, runs with
``part_<N>/run_<M>/resume.toml``: the submitted TOML with ``[train] resume = "<checkpoint path>"``,
which 747d1bd loads as that checkpoint. ``resume-step`` in the run folder records the step (0: none).

The environment contract is the recipe's (docs/reference/alpamayo-recipe.md §3): values from the spec are
exported in the script; secrets never are: ``pass_env`` names are only checked for presence.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from a1x_diagnostics.recipe_entries import entry_named
from a1x_supervisor.slurm.plan import CosmosRev, NodePlan, Packing, RoleName
from a1x_supervisor.slurm.spec import ClusterSpec, SlurmSpecError

SCRIPT_NAME = "sbatch_script.sh"
PLAN_NAME = "nodeplan.json"
RESUME_TEMPLATE_NAME = "resume-template.toml"  # the TOML with [train] resume = RESUME_PLACEHOLDER
RESUME_PLACEHOLDER = "@A1X_RESUME_CHECKPOINT@"
RESUME_TOML_NAME = "resume.toml"  # part_<N>/run_<M>/resume.toml: that start's TOML when it resumes
RESUME_STEP_NAME = "resume-step"  # part_<N>/run_<M>/resume-step: the step it resumed from, 0 = none
# What a checkpoint path may hold to be written into the TOML and substituted by bash unchanged.
SAFE_PATH_CHARS = r"[[:alnum:]_./+:@%,=-]"
LOG_TAG = "a1x-tui-sbatch"
SIGNAL_GRACE_S = 130  # Cosmos-RL's monitor waits this long after SIGUSR1 (srun's grace is ~122 s)
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
    for arg in spec.extra_sbatch_args:
        if not arg.startswith("-") or "\n" in arg:
            raise SlurmSpecError(f"extra_sbatch_args: {arg!r} is not an sbatch option")
        lines.append(f"#SBATCH {arg}")
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
on_signal() {
    received_signal=$1
    local forward=$1
    # The pre-timeout SIGUSR1 goes on as PRE_TIMEOUT_FORWARD: USR1 where the policy saves a checkpoint
    # on it (HEAD), TERM at 747d1bd, where nothing handles it (docs/reference/cosmos-rl.md §2.6, §11.2).
    [ "$1" = USR1 ] && forward=$PRE_TIMEOUT_FORWARD
    log "Signal SIG$1 caught. Forwarding SIG$forward to the job steps."
    for pid in "${STEP_PIDS[@]}"; do
        kill -s "$forward" "$pid" 2>/dev/null || true
    done
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

# "STEP PATH" of the newest complete checkpoint this job saved, from its policy's own lines
# '[Policy] Step: N, checkpoint saved successfully at PATH.' (written when an async save starts).
# Policy replicas are placed first, so they write into the policy_<t> files of their nodes.
latest_checkpoint() {
    local step path
    while read -r step path; do
        [[ "$path" = /* ]] || path="$PWD/$path"
        if checkpoint_complete "$path"; then
            echo "$step $path"
            return 0
        fi
        log "Checkpoint of step $step is not complete, not resuming from it: $path" >&2
    done < <(grep -h -a -o -E 'Step: [0-9]+, checkpoint saved successfully at [^[:space:]]+' \
                "$SLURM_RUN_ROOT"/part_*/run_*/policy_*.err "$SLURM_RUN_ROOT"/part_*/run_*/policy_*.out 2>/dev/null \
             | sed -E 's/^Step: ([0-9]+), checkpoint saved successfully at (.*[^.])[.]?$/\1 \2/' \
             | sort -k1,1nr -k2,2 -u)
    return 1
}

steps_alive() {
    local pid
    for pid in "${STEP_PIDS[@]}"; do
        kill -0 "$pid" 2>/dev/null && return 0
    done
    return 1
}

# Wait up to $1 seconds for every step to end, then kill what is left.
drain_steps() {
    local deadline=$((SECONDS + $1))
    while steps_alive && [ "$SECONDS" -lt "$deadline" ]; do
        sleep 1 & wait $!
    done
    if steps_alive; then
        log "Steps still running after $1s. Killing them."
        for pid in "${STEP_PIDS[@]}"; do
            kill -9 "$pid" 2>/dev/null || true
        done
    fi
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


def render_sbatch(spec: ClusterSpec, plan: NodePlan, job: SbatchJob) -> str:
    """The whole script. Raises ``SlurmSpecError`` for a spec it cannot express."""
    if plan.packing is not Packing.LAUNCHER:
        raise SlurmSpecError("render_sbatch needs a plan packed the cosmos-rl launcher way (method = 'sbatch')")
    if spec.gpus_per_node != plan.gpus_per_node:
        raise SlurmSpecError(f"the plan is for {plan.gpus_per_node}-GPU nodes but gpus_per_node = {spec.gpus_per_node}")
    if spec.nodes is not None and spec.nodes != plan.n_nodes:
        raise SlurmSpecError(f"nodes = {spec.nodes} but the plan needs {plan.n_nodes}: {plan.summary()}")
    if any(c.isspace() for c in str(job.run_dir)):
        raise SlurmSpecError(f"{job.run_dir}: the run directory may not contain spaces (for #SBATCH --output)")
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
        f"export A1X_CONFIG={_q(job.config_path)}",
        f"export A1X_CONTROLLER_PORT={spec.controller_port}",
        'SLURM_RUN_ROOT="$A1X_RUN_DIR/slurm"',
        f"NUM_WORKERS={plan.n_nodes}",
        f"MAX_RETRIES={retries}",
        f"AUTORESUME={autoresume}",
        f"PRE_TIMEOUT_FORWARD={'USR1' if spec.cosmos_rev is CosmosRev.HEAD else 'TERM'}",
        f"CKPT_RANKS={job.checkpoint_ranks}",
        "",
    ]
    out += _FUNCTIONS.replace("__TAG__", LOG_TAG).splitlines()
    out += ["STEP_PIDS=()", "STEP_NAMES=()", 'trap "on_signal USR1" USR1', 'trap "on_signal TERM" TERM']
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
    out += [
        f"cd {_q(job.workdir)} || exit 2",
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
        "# --- resume (docs/reference/cosmos-rl.md §5.3, §8.4): a start after a requeue trains from the newest "
        "complete",
        "# checkpoint of this job. Cosmos-RL 747d1bd does nothing of its own (its TOML says resume = false),",
        "# so this start's TOML names the checkpoint in [train] resume, which it loads as a path.",
        "echo 0 > \"$A1X_RUN_LOGS/" + RESUME_STEP_NAME + "\"",
        'if found=$(latest_checkpoint); then',
        '    ckpt=${found#* }',
        f'    if [[ ! "$ckpt" =~ ^{SAFE_PATH_CHARS}+$ ]]; then',
        '        log "Cannot resume from $ckpt: only letters, digits and _./+:@%,=- can go into the TOML"',
        "        exit 2",
        "    fi",
        f'    template=$(<"$SLURM_RUN_ROOT/{RESUME_TEMPLATE_NAME}") || exit 2',
        f'    printf \'%s\\n\' "${{template//{RESUME_PLACEHOLDER}/$ckpt}}" > "$A1X_RUN_LOGS/{RESUME_TOML_NAME}"',
        f'    echo "${{found%% *}}" > "$A1X_RUN_LOGS/{RESUME_STEP_NAME}"',
        f'    export A1X_CONFIG="$A1X_RUN_LOGS/{RESUME_TOML_NAME}"',
        '    log "Resuming from checkpoint step ${found%% *}: $ckpt"',
        "fi",
        "",
        "# --- nodes: worker k runs on the k-th node of the job; the controller on node 0",
        'mapfile -t NODES < <(scontrol show hostnames "$SLURM_JOB_NODELIST")',
        'if [ "${#NODES[@]}" -ne "$NUM_WORKERS" ]; then',
        '    log "Expected $NUM_WORKERS nodes, got ${#NODES[@]}: $SLURM_JOB_NODELIST"',
        "    exit 2",
        "fi",
        'export A1X_NODES="${NODES[*]}"',
        'A1X_CONTROLLER_HOST=$(srun --overlap --nodes=1 --ntasks=1 --nodelist="${NODES[0]}" hostname)',
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
            'while read -r name ip; do IP_OF[$name]=$ip; done < <(srun --overlap --nodes="$NUM_WORKERS" '
            '--ntasks-per-node=1 bash -c \'echo "$SLURMD_NODENAME $(hostname -I | cut -d" " -f1)"\')',
            'A1X_NODE_IPS=$(for n in "${NODES[@]}"; do printf \'%s\\n\' "${IP_OF[$n]}"; done | paste -sd ";")',
            "export A1X_NODE_IPS",
        ]
    out.append("")
    if spec.gpu_agent:
        agent = f'{_cmd(spec.a1x_tui)} gpu-agent "$A1X_RUN_DIR" --controller-host "$A1X_CONTROLLER_URL"'
        out += [
            "# GPU samples of every node into the shared run dir (not watched: the run does not depend on it)",
            'srun --overlap --nodes="$NUM_WORKERS" --ntasks-per-node=1 --kill-on-bad-exit=0 \\',
            '    -o "$A1X_RUN_LOGS/gpu_agent_%t.out" -e "$A1X_RUN_LOGS/gpu_agent_%t.err" \\',
            f"    {agent} &",
            "AGENT_PID=$!",
            "",
        ]
    out += [
        "# controller on node 0 (cosmos_rl_job_multi_node.sh does the same)",
        'srun --overlap --nodes=1 --ntasks=1 --nodelist="${NODES[0]}" \\',
        '    -o "$A1X_RUN_LOGS/controller.out" -e "$A1X_RUN_LOGS/controller.err" \\',
        f"    bash -c {shlex.quote(_controller_program(job))} &",
        "STEP_PIDS+=($!)",
        "STEP_NAMES+=(controller)",
        'log "Controller started with PID $!"',
        "",
    ]
    for ns in node_sets(plan):
        count = len(ns.workers)
        nodelist = f'"$(IFS=,; echo "${{NODES[*]:{ns.workers.start}:{count}}}")"'
        out += [
            f"# nodes {ns.workers.start}-{ns.workers.stop - 1}: {ns.name}",
            f"srun --overlap --nodes={count} --ntasks-per-node=1 --nodelist={nodelist} --kill-on-bad-exit=1 \\",
            f"    bash -c {shlex.quote(_worker_program(plan, job, ns))} &",
            "STEP_PIDS+=($!)",
            f"STEP_NAMES+=({ns.name})",
            f'log "{ns.name} started on nodes {ns.workers.start}-{ns.workers.stop - 1} with PID $!"',
            "",
        ]
    out += [
        "# --- monitor: the first step that fails ends the job (as Cosmos-RL's sbatch monitor does)",
        "status=0",
        "declare -A EXITED=()",
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
        "    sleep 1 & wait $!",
        "done",
        "",
        'if [ "$received_signal" = USR1 ]; then',
        f"    drain_steps {SIGNAL_GRACE_S}",
        "else",
        '    for pid in "${STEP_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done',
        "    drain_steps 30",
        "fi",
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


def resume_template(toml_text: str) -> str:
    """The TOML of a resumed start: ``toml_text`` with ``[train] resume`` set to the placeholder the
    script replaces with the checkpoint's path (comments and layout kept)."""
    from a1x_diagnostics.config.edit import Edit, EditError, edit_text

    try:
        return edit_text(toml_text, [Edit("train.resume", RESUME_PLACEHOLDER)])
    except EditError as exc:
        raise SlurmSpecError(f"cannot write [train] resume into the TOML of a resumed part: {exc}") from None


def write_sbatch(spec: ClusterSpec, plan: NodePlan, job: SbatchJob) -> Path:
    """Write ``<run>/slurm/sbatch_script.sh``, ``nodeplan.json`` and ``resume-template.toml``; returns the script."""
    text = render_sbatch(spec, plan, job)
    template = resume_template(job.config_path.read_text(encoding="utf-8"))
    slurm_dir = job.run_dir / "slurm"
    slurm_dir.mkdir(parents=True, exist_ok=True)
    (slurm_dir / PLAN_NAME).write_text(json.dumps(plan.to_json(), indent=1) + "\n", encoding="utf-8")
    (slurm_dir / RESUME_TEMPLATE_NAME).write_text(template, encoding="utf-8")
    script = slurm_dir / SCRIPT_NAME
    script.write_text(text, encoding="utf-8")
    script.chmod(0o755)
    return script


def missing_env(spec: ClusterSpec, job: SbatchJob, environ: Mapping[str, str]) -> list[str]:
    """Names the job needs that the submitting environment lacks (checked before sbatch, values never read out)."""
    return [n for n in required_env(spec, job) if not environ.get(n)]
