"""The sbatch script for clusters without containers: rendered for 1 node and for the 80-node recipe cluster."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from slurm_helpers import DATA, MOTION_ENTRY, recipe, with_values

from a1x_supervisor.slurm import (
    ClusterSpec,
    CosmosRev,
    NodePlan,
    Packing,
    SbatchJob,
    SlurmSpecError,
    SubmissionRefused,
    plan_nodes,
    prepare_sbatch,
    render_sbatch,
)
from a1x_supervisor.slurm.sbatch import node_sets

RUN = Path("/lustre/runs/r1")
JOB = SbatchJob(
    run_dir=RUN,
    config_path=RUN / "recipe.toml",
    entry=MOTION_ENTRY,
    workdir=Path("/lustre/alpamayo-recipes"),
    venv=Path("/lustre/alpamayo-recipes/recipes/alpamayo1_x_rl/a1x_rl"),
)
SPEC = ClusterSpec(
    method="sbatch",
    partition="gpu",
    account="alpamayo",
    time="04:00:00",
    env={"HF_HOME": "/lustre/hf", "ALPAMAYO_PAI_LOCAL_DIR": "/lustre/PAI mini"},
    pass_env=["WANDB_API_KEY"],
)


def launcher_plan(data: dict) -> NodePlan:
    p = plan_nodes(data, gpus_per_node=8, packing=Packing.LAUNCHER)
    assert isinstance(p, NodePlan), p
    return p


def render(data: dict, spec: ClusterSpec = SPEC, job: SbatchJob = JOB) -> list[str]:
    text = render_sbatch(spec, launcher_plan(data), job)
    if shutil.which("bash"):
        res = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True, check=False)
        assert res.returncode == 0, res.stderr
    return text.splitlines()


def block(lines: list[str], start: str) -> list[str]:
    """The lines from the one starting with ``start`` to the next blank line."""
    i = next(n for n, line in enumerate(lines) if line.startswith(start))
    out = []
    for line in lines[i:]:
        if not line.strip():
            break
        out.append(line)
    return out


def step_program(lines: list[str], start: str) -> str:
    """The bash -c program of the srun under comment ``start``, unquoted."""
    srun = " ".join(line.rstrip("\\").strip() for line in block(lines, start))
    words = shlex.split(srun)
    return words[words.index("-c") + 1]


def test_the_80_node_header_asks_for_what_the_plan_needs() -> None:
    lines = render(recipe("recipe_cluster_80.toml"))
    assert block(lines, "#!/bin/bash") == [
        "#!/bin/bash",
        "#SBATCH --job-name=a1x_rl",
        "#SBATCH --nodes=80",
        "#SBATCH --ntasks-per-node=1",
        "#SBATCH --gres=gpu:8",
        "#SBATCH --mem=0",
        "#SBATCH --time=04:00:00",
        "#SBATCH --partition=gpu",
        "#SBATCH --account=alpamayo",
        "#SBATCH --output=/lustre/runs/r1/slurm/slurm_%j.log",
        "#SBATCH --open-mode=append",
        "#SBATCH --signal=B:SIGUSR1@1200",
        "#SBATCH --requeue",
        "#SBATCH --exclusive",
        "#SBATCH --export=ALL",
    ]
    assert block(lines, "# a1x-tui plan") == [
        "# a1x-tui plan: 80 node(s) × 8 GPUs: 64 policy × 8 GPU, 128 rollout × 1 GPU (640 of 640 GPUs used)",
        "#   node 0 also runs the controller",
        "#   nodes 0-63 (policy): policy_0 .. policy_63; logs policy_0 .. policy_63",
        "#   nodes 64-79 (rollout): rollout_0 .. rollout_127; logs rollout_0 .. rollout_15",
    ]


def test_memory_cpus_and_time_are_asked_for_in_the_header() -> None:
    lines = render(recipe(), SPEC.model_copy(update={"memory": "480G", "cpus_per_task": 96, "time": "2-00:00:00"}))
    header = block(lines, "#!/bin/bash")
    assert "#SBATCH --mem=480G" in header and "#SBATCH --cpus-per-task=96" in header
    assert "#SBATCH --time=2-00:00:00" in header
    with pytest.raises(ValueError, match="not an sbatch --mem value"):
        ClusterSpec(memory="lots")


def test_the_80_node_steps_are_a_controller_and_one_srun_per_node_set() -> None:
    lines = render(recipe("recipe_cluster_80.toml"))
    cpus = '--cpus-per-task="$A1X_STEP_CPUS"'
    assert [line for line in lines if line.startswith("srun ")] == [
        f'srun --overlap --nodes="$NUM_WORKERS" --ntasks-per-node=1 --kill-on-bad-exit=0 {cpus} \\',
        f'srun --overlap --nodes=1 --ntasks=1 --nodelist="${{NODES[0]}}" {cpus} \\',
        'srun --overlap --nodes=64 --ntasks-per-node=1 --nodelist="$(IFS=,; echo "${NODES[*]:0:64}")" '
        f"--kill-on-bad-exit=1 {cpus} \\",
        'srun --overlap --nodes=16 --ntasks-per-node=1 --nodelist="$(IFS=,; echo "${NODES[*]:64:16}")" '
        f"--kill-on-bad-exit=1 {cpus} \\",
    ]
    assert block(lines, "# GPU samples")[-2:] == [
        '    a1x-tui gpu-agent "$A1X_RUN_DIR" --controller-host "$A1X_CONTROLLER_URL" &',
        "AGENT_PID=$!",
    ]
    controller = step_program(lines, "# controller on node 0")
    assert controller == (
        f'exec "$A1X_CONTROLLER_SH" --port "$A1X_CONTROLLER_PORT" --config "$A1X_CONFIG" --script {MOTION_ENTRY}'
    )
    assert "export A1X_CONTROLLER_PORT=8082" in lines
    rollout = step_program(lines, "# nodes 64-79: rollout")
    assert rollout.split("; ") == [
        "w=0",
        "for n in $A1X_NODES",
        'do [ "$n" = "$SLURMD_NODENAME" ] && break',
        "w=$((w + 1))",
        "done",
        "t=$((w - 64 + 0))",
        'exec >>"$A1X_RUN_LOGS/rollout_$t.out" 2>>"$A1X_RUN_LOGS/rollout_$t.err"',
        'export HOSTNAME="$(hostname)"',
        'if [ "$HOSTNAME" = "$A1X_CONTROLLER_HOST" ]',
        'then url="localhost:$A1X_CONTROLLER_PORT"',
        'else url="$A1X_CONTROLLER_URL"',
        "fi",
        'exec cosmos-rl --config "$A1X_CONFIG" --num-workers 80 --worker-idx "$w" --url "$url" --policy 64 '
        f"--rollout 128 {MOTION_ENTRY}",
    ]
    policy = step_program(lines, "# nodes 0-63: policy")
    assert "t=$((w - 0 + 0))" in policy and '"$A1X_RUN_LOGS/policy_$t.err"' in policy
    assert "--node-ip-list" not in policy  # every replica fits in a node


def test_the_environment_contract_exports_values_and_only_checks_secrets() -> None:
    lines = render(recipe("recipe_cluster_80.toml"))
    env = block(lines, "# --- environment")
    assert env == [
        "# --- environment (docs/reference/alpamayo-recipe.md §3); secrets come from the submitting environment only",
        "export VIRTUAL_ENV=/lustre/alpamayo-recipes/recipes/alpamayo1_x_rl/a1x_rl",
        'export PATH="$VIRTUAL_ENV/bin:$PATH"',
        "export ALPAMAYO_PAI_LOCAL_DIR='/lustre/PAI mini'",
        "export COSMOS_LOG_LEVEL=INFO",
        "export HF_HOME=/lustre/hf",
        "export NCCL_NVLS_ENABLE=0",
        "for name in WANDB_API_KEY; do",
        '    if [ -z "${!name:-}" ]; then',
        '        log "Missing required env var $name: set it in the environment that runs sbatch."',
        "        exit 2",
        "    fi",
        "done",
        "cd /lustre/alpamayo-recipes || exit 2",
    ]
    with pytest.raises(ValueError, match="secrets are never written into the job script"):
        ClusterSpec(method="sbatch", env={"HF_TOKEN": "hf_x"})


def test_the_entry_decides_the_dataset_variable_the_job_requires() -> None:
    spec = ClusterSpec(method="sbatch")
    assert "for name in ALPAMAYO_PAI_LOCAL_DIR; do" in render(recipe(), spec)
    joint = replace(JOB, entry=MOTION_ENTRY.replace("_entry.py", "_reasoning_entry.py"))
    assert "for name in ALPAMAYO_PAI_REASONING_LOCAL_DIR; do" in render(recipe(), spec, joint)


def test_one_node_holds_policy_and_rollout_in_one_set() -> None:
    lines = render(recipe())
    assert block(lines, "# a1x-tui plan")[2] == "#   nodes 0-0 (policy-rollout): policy_0 .. rollout_0; logs policy_0"
    program = step_program(lines, "# nodes 0-0: policy-rollout")
    assert '--num-workers 1 --worker-idx "$w"' in program and "--policy 1 --rollout 1" in program
    assert "STEP_NAMES+=(policy-rollout)" in lines
    assert "#SBATCH --nodes=1" in lines


def test_the_monitor_retries_and_autoresume_follow_cosmos_rls_script() -> None:
    lines = render(recipe(), SPEC.model_copy(update={"retries": 5, "pre_timeout_signal_s": 600}))
    assert "MAX_RETRIES=5" in lines and "AUTORESUME=1" in lines and "#SBATCH --signal=B:SIGUSR1@600" in lines
    assert '        log "Job failed with status $status. Retries remaining: $((left - 1)). Requeuing..."' in lines
    assert '        log "Job failed with status $status. No retries remaining."' in lines
    assert '    log "Received signal SIGUSR1, will requeue for autoresume into $new_part"' in lines
    assert 'log "Final exit status: $final"' in lines
    assert 'if [ -e "$A1X_RUN_DIR/ABORT-AUTORESUME" ]; then' in lines
    assert 'ln -sfn "${part##*/}/run_$run_no" "$SLURM_RUN_ROOT/latest_run"' in lines
    no_resume = render(recipe(), SPEC.model_copy(update={"autoresume": False}))
    assert "AUTORESUME=0" in no_resume and not any(line.startswith("#SBATCH --signal") for line in no_resume)


def test_the_pre_timeout_signal_goes_on_as_each_revision_handles_it() -> None:
    # 747d1bd has no SIGUSR1 handler (docs/reference/cosmos-rl.md §5.3): every step is ended with SIGTERM; HEAD's
    # policy saves a checkpoint on SIGUSR1 (§2.6), so only the steps holding a policy replica get it, and the
    # controller and rollout-only steps live until they end (or the grace time is over).
    assert "SAVE_ON_USR1=0" in render(recipe())
    head = SPEC.model_copy(update={"cosmos_rev": CosmosRev.HEAD})
    lines = render(recipe("recipe_cluster_80.toml"), head)
    assert "SAVE_ON_USR1=1" in lines
    saves = [(name, flag) for name, flag in zip(
        [line for line in lines if line.startswith("STEP_NAMES+=")],
        [line for line in lines if line.startswith("STEP_SAVES+=")],
        strict=True,
    )]
    assert saves == [
        ("STEP_NAMES+=(controller)", "STEP_SAVES+=(0)"),
        ("STEP_NAMES+=(policy)", "STEP_SAVES+=(1)"),
        ("STEP_NAMES+=(rollout)", "STEP_SAVES+=(0)"),
    ]
    after = lines[lines.index('if [ "$received_signal" = USR1 ] && [ "$SAVE_ON_USR1" = 1 ]; then') :]
    assert after[2] == "    wait_steps 130 saving" and "end_steps" in after


def test_every_srun_gets_the_cpus_of_its_node() -> None:
    # srun 22.05+ does not inherit the job's --cpus-per-task (docs/slurm.md): every step asks for them.
    data = with_values(recipe(), policy__parallelism__dp_shard_size=16, policy__parallelism__n_init_replicas=2)
    for spec, first in (
        (SPEC.model_copy(update={"cpus_per_task": 96}), "A1X_STEP_CPUS=96"),
        (SPEC, "# The job's CPUs on its smallest node (SLURM_JOB_CPUS_PER_NODE is like 72(x2),64)."),
    ):
        lines = render(data, spec)
        sruns = [line for line in lines if "srun " in line and not line.lstrip().startswith("#")]
        # the controller's host, the node IPs, the GPU agent, the controller, two node sets of workers
        assert len(sruns) == 6
        assert all('--cpus-per-task="$A1X_STEP_CPUS"' in line for line in sruns), sruns
        assert first in lines
    program = "\n".join(block(render(data), "# The job's CPUs"))
    for given, cpus in (("72(x2),64", "64"), ("8", "8"), ("", "1")):
        out = subprocess.run(
            ["bash", "-c", f"{program}\necho $A1X_STEP_CPUS"],
            env={"PATH": "/usr/bin:/bin", "SLURM_JOB_CPUS_PER_NODE": given},
            capture_output=True, text=True, check=True,
        )
        assert out.stdout.strip() == cpus, given


def _functions(script: str, *names: str) -> str:
    return "".join(
        re.findall(rf"^(?:{'|'.join(names)})\(\) \{{\n.*?^\}}\n", script, flags=re.M | re.S)
    )


def _latest_checkpoint(script: str, root: Path, ranks: int, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the script's own latest_checkpoint over a checkpoint folder (its functions only, no Slurm)."""
    functions = _functions(script, "log", "checkpoint_complete", "checkpoint_steps", "latest_checkpoint")
    program = f"{functions}\nCKPT_ROOT={shlex.quote(str(root))}\nCKPT_RANKS={ranks}\nlatest_checkpoint\n"
    return subprocess.run(["bash", "-c", program], capture_output=True, text=True, cwd=cwd, check=False)


def _saved(root: Path, step: int, *, markers: int, ranks: int = 4) -> Path:
    ckpt = root / f"step_{step}" / "policy"
    ckpt.mkdir(parents=True)
    (ckpt / "cosmos_config").write_text("{}")
    for r in range(ranks):
        (ckpt / f"model_rank_{r}.pth").write_text("w")
    for r in range(markers):
        (ckpt / f".rank_{r}_complete").write_text("")
    return ckpt


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_a_requeued_start_finds_the_newest_complete_checkpoint_of_this_run(tmp_path: Path) -> None:
    script = "\n".join(render(recipe())) + "\n"
    root = tmp_path / "outputs" / "20260101000000" / "checkpoints"
    _saved(root, 5, markers=4)
    _saved(root, 10, markers=4)
    _saved(root, 15, markers=3)  # one rank had not finished when the job was killed
    (root / "step_x").mkdir()  # not a step folder
    found = _latest_checkpoint(script, root, 4, tmp_path)
    assert found.returncode == 0 and found.stdout == f"10 {root / 'step_10' / 'policy'}\n"
    assert f"Checkpoint of step 15 is not complete, not resuming from it: {root / 'step_15' / 'policy'}" in found.stderr
    # Without a known rank count, every model_rank_<r>.pth needs its marker.
    assert _latest_checkpoint(script, root, 0, tmp_path).stdout.startswith("10 ")
    # A relative train.output_dir is relative to the workspace the script changes into.
    rel = tmp_path / "ws" / "rel"
    _saved(rel, 20, markers=4)
    assert _latest_checkpoint(script, Path("rel"), 4, tmp_path / "ws").stdout == f"20 {rel / 'step_20' / 'policy'}\n"
    empty = _latest_checkpoint(script, tmp_path / "nothing", 4, tmp_path)
    assert empty.returncode == 1 and empty.stdout == ""


def _prune(script: str, root: Path, *, idle: int, resume_step: int, max_keep: int) -> list[int]:
    functions = _functions(script, "log", "checkpoint_complete", "checkpoint_steps", "prune_checkpoints")
    program = (
        f"{functions}\nCKPT_ROOT={shlex.quote(str(root))}\nCKPT_RANKS=4\nMAX_KEEP={max_keep}\n"
        f"RESUME_STEP={resume_step}\nprune_checkpoints {idle}\n"
    )
    subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=True)
    return sorted(int(p.name.removeprefix("step_")) for p in root.iterdir())


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_checkpoints_are_pruned_across_parts_to_max_keep(tmp_path: Path) -> None:
    script = "\n".join(render(recipe())) + "\n"
    root = tmp_path / "checkpoints"
    # Three parts saved into the run's one folder; a kill left step 14 and step 30 unfinished.
    for step in (2, 4, 6, 8, 10, 12):
        _saved(root, step, markers=4)
    _saved(root, 14, markers=1)
    # A new start resumed from 12: the unfinished 14 is dead, and only the newest 3 complete stay.
    assert _prune(script, root, idle=1, resume_step=12, max_keep=3) == [8, 10, 12]
    # The running start saves 16 and 18 (complete) and 20 (in flight): the earlier parts' beyond 3 go,
    # its own are Cosmos-RL's to prune, the one in flight is left alone.
    for step in (16, 18):
        _saved(root, step, markers=4)
    _saved(root, 20, markers=2)
    assert _prune(script, root, idle=0, resume_step=12, max_keep=3) == [12, 16, 18, 20]
    # The resumed-from checkpoint goes only once three newer complete ones exist.
    (root / "step_20" / "policy" / ".rank_2_complete").write_text("")
    (root / "step_20" / "policy" / ".rank_3_complete").write_text("")
    assert _prune(script, root, idle=0, resume_step=12, max_keep=3) == [16, 18, 20]
    # max_keep = -1 keeps everything (docs/reference/cosmos-rl.md §5.3).
    _saved(root, 22, markers=0)
    assert _prune(script, root, idle=1, resume_step=20, max_keep=-1) == [16, 18, 20, 22]


def test_traps_are_set_before_any_step_starts() -> None:
    lines = render(recipe())
    trap = lines.index('trap "on_signal USR1" USR1')
    first_srun = next(n for n, line in enumerate(lines) if "srun " in line and not line.lstrip().startswith("#"))
    assert trap < first_srun


def test_replicas_wider_than_a_node_get_the_node_ip_list() -> None:
    data = with_values(recipe(), policy__parallelism__dp_shard_size=16, policy__parallelism__n_init_replicas=2)
    lines = render(data)
    assert "#SBATCH --nodes=5" in lines
    assert any(line.startswith("A1X_NODE_IPS=$(for n in") for line in lines)
    assert '--node-ip-list "$A1X_NODE_IPS"' in step_program(lines, "# nodes 0-3: policy")


def test_odd_commands_are_quoted_word_by_word() -> None:
    # Commands are command lines: a path with a space is quoted in it.
    job = replace(JOB, cosmos_rl="'/opt/my tools/cosmos-rl'", entry_args=("--flag", "a b"))
    spec = SPEC.model_copy(update={"a1x_tui": "python3 -m a1x_tui"})
    lines = render(recipe(), spec, job)
    program = step_program(lines, "# nodes 0-0: policy-rollout")
    assert program.endswith(
        f"exec '/opt/my tools/cosmos-rl' --config \"$A1X_CONFIG\" --num-workers 1 --worker-idx "
        f'"$w" --url "$url" --policy 1 --rollout 1 {MOTION_ENTRY} --flag \'a b\''
    )
    assert '    python3 -m a1x_tui gpu-agent "$A1X_RUN_DIR" --controller-host "$A1X_CONTROLLER_URL" &' in lines


def test_node_sets_name_log_files_by_first_role_and_index_within_it() -> None:
    data = with_values(
        recipe(),
        policy__parallelism__dp_shard_size=2,
        policy__parallelism__n_init_replicas=3,
        rollout__parallelism__n_init_replicas=13,
    )
    sets = [
        (ns.name, ns.workers.start, ns.workers.stop, ns.file_role, ns.first_t) for ns in node_sets(launcher_plan(data))
    ]
    assert sets == [("policy-rollout", 0, 1, "policy", 0), ("rollout", 1, 3, "rollout", 0)]


def test_a_spec_that_does_not_match_the_plan_is_refused() -> None:
    with pytest.raises(SlurmSpecError, match="nodes = 2 but the plan needs 1"):
        render(recipe(), SPEC.model_copy(update={"nodes": 2}))
    with pytest.raises(SlurmSpecError, match="may not contain spaces"):
        render(recipe(), SPEC, replace(JOB, run_dir=Path("/lustre/my runs/r1")))
    dispatch_plan = plan_nodes(recipe(), gpus_per_node=8, packing=Packing.DISPATCH)
    assert isinstance(dispatch_plan, NodePlan)
    with pytest.raises(SlurmSpecError, match="cosmos-rl launcher way"):
        render_sbatch(SPEC, dispatch_plan, JOB)


def test_prepare_writes_the_script_and_the_plan_and_refuses_criticals(tmp_path: Path) -> None:
    job = SbatchJob(
        run_dir=tmp_path / "run",
        config_path=tmp_path / "r.toml",
        entry=MOTION_ENTRY,
        workdir=tmp_path,
        venv=tmp_path / "venv",
    )
    text = (DATA / "recipe_cluster_80.toml").read_text()
    (tmp_path / "r.toml").write_text(text)
    spec = ClusterSpec(method="sbatch", env={"ALPAMAYO_PAI_LOCAL_DIR": "/d"}, pass_env=["WANDB_API_KEY"])
    sub = prepare_sbatch(spec, recipe("recipe_cluster_80.toml"), job, environ={"WANDB_API_KEY": "x"})
    assert sub.argv == ("sbatch", "--parsable", str(tmp_path / "run" / "slurm" / "sbatch_script.sh"))
    assert sub.script is not None and sub.script.stat().st_mode & 0o111
    plan = json.loads((tmp_path / "run" / "slurm" / "nodeplan.json").read_text())
    assert len(plan["nodes"]) == 80 and plan["nodes"][79]["replicas"][7]["name"] == "rollout_127"
    # Every start runs with job.toml: this TOML with its timestamp fixed, so all parts write into one
    # folder and log to one W&B run (docs/reference/cosmos-rl.md §7.3, §8.1); a resumed start's TOML also
    # names the checkpoint in [train] resume (the rest unchanged).
    job_toml = (tmp_path / "run" / "slurm" / "job.toml").read_text()
    stamp = re.search(r'^timestamp = "(\d{14})"$', job_toml, flags=re.M)
    assert stamp is not None
    output_dir = re.search(r'^output_dir = "(.*)"$', text, flags=re.M)
    assert output_dir is not None
    assert f'output_dir = "{output_dir.group(1)}/{stamp.group(1)}"' in job_toml
    template = (tmp_path / "run" / "slurm" / "resume-template.toml").read_text()
    assert template == job_toml.replace("resume = false", 'resume = "@A1X_RESUME_CHECKPOINT@"', 1)
    script = sub.script.read_text().splitlines()
    assert "CKPT_RANKS=8" in script  # dp_shard_size 8: eight markers per checkpoint
    assert f"CKPT_ROOT={output_dir.group(1)}/{stamp.group(1)}/checkpoints" in script and "MAX_KEEP=10" in script
    assert 'export A1X_CONFIG="$SLURM_RUN_ROOT/job.toml"' in script

    with pytest.raises(SubmissionRefused, match="WANDB_API_KEY not set in this environment"):
        prepare_sbatch(spec, recipe("recipe_cluster_80.toml"), job, environ={})
    dup = with_values(recipe("recipe_cluster_80.toml"), train__train_policy__data_dispatch_as_rank_in_mesh=False)
    with pytest.raises(SubmissionRefused, match=re.escape("r.toml: not submitted: duplicate_samples")) as exc:
        prepare_sbatch(spec, dup, job, environ={"WANDB_API_KEY": "x"})
    assert [f.id for f in exc.value.findings] == ["duplicate_samples"]
    with pytest.raises(
        SubmissionRefused, match=re.escape("64 policy replicas requested but policy.parallelism.n_init_replicas = 1")
    ):
        prepare_sbatch(spec, recipe(), job, environ={"WANDB_API_KEY": "x"}, n_policy=64)
