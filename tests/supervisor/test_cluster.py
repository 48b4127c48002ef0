"""compute = "cluster": the [cluster] spec section, refusals before submission, and the train stage
as a real Slurm job (single-host Slurm; skipped unless ``sinfo`` answers: ``bash .ci/slurm-up.sh``)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from supervisor_helpers import REPO, World, fake_processes

from a1x_diagnostics.config.edit import Edit, edit_text
from a1x_diagnostics.parsing import discover
from a1x_supervisor.daemon import Plan, Supervisor
from a1x_supervisor.slurm.executor import SlurmExecutor
from a1x_supervisor.spec import SpecError, default_spec_text, dump_spec, parse_spec

RECIPE = REPO / "tests" / "slurm" / "data" / "recipe_local.toml"  # 1 policy x 4 GPUs + 1 rollout: one node
CLUSTER = """
[cluster]
method = "sbatch"
request_gpus = false
exclusive = false
retries = 0
gpu_agent = false
"""


def _slurm_why_not() -> str | None:
    if shutil.which("sinfo") is None or shutil.which("sbatch") is None:
        return "no Slurm here: run .ci/slurm-up.sh as root"
    try:
        res = subprocess.run(["sinfo", "-h", "-N", "-o", "%t"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"sinfo does not answer: {exc}"
    if res.returncode != 0 or not any(s.rstrip("*~#") in ("idle", "mix", "alloc") for s in res.stdout.split()):
        return f"no usable Slurm node: {res.stdout.strip() or res.stderr.strip()}"
    return None


real_slurm = pytest.mark.skipif(_slurm_why_not() is not None, reason=str(_slurm_why_not()))


def _cluster_world(world: World, monkeypatch: pytest.MonkeyPatch, *edits: Edit, cluster: str = CLUSTER) -> None:
    """A configured cluster run whose training TOML is ``RECIPE`` with ``edits`` (only train runs)."""
    for key, value in world.env.items():
        monkeypatch.setenv(key, value)
    world.make_venv()
    world.configure(compute="cluster", cluster=cluster)
    text = edit_text(RECIPE.read_text(), [Edit("train.output_dir", str(world.root / "outputs")), *edits])
    (world.run_dir / "config" / "train.toml").write_text(text)


def _supervisor(world: World) -> Supervisor:
    return Supervisor(
        world.run_dir, Plan(only="train"), install_signals=False, slurm_executor=SlurmExecutor(poll_interval_s=0.3)
    )


def _events(world: World, kind: str) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (world.run_dir / "events.jsonl").read_text().splitlines()]
    return [e for e in rows if e["kind"] == kind]


# -- the spec -------------------------------------------------------------------------------------------



def _train(state: dict[str, Any]) -> dict[str, Any]:
    return next(st for st in state["stages"] if st["name"] == "train")

def test_the_cluster_section_round_trips_and_init_shows_an_example(tmp_path: Path) -> None:
    w = World(root=tmp_path, env={})
    spec = parse_spec(w.spec_text(compute="cluster", cluster=CLUSTER + 'output_root = "out"\n'), base=tmp_path)
    assert spec.on_slurm and spec.cluster is not None and spec.cluster.method == "sbatch"
    assert spec.cluster.output_root == tmp_path / "out"  # relative to the spec, like [paths]
    assert parse_spec(dump_spec(spec), base=Path("/elsewhere")) == spec
    assert not parse_spec(w.spec_text(), base=tmp_path).on_slurm
    text = default_spec_text()
    assert "\n# [cluster]" in text and '# method = "sbatch"' in text
    assert parse_spec(text, base=tmp_path).cluster is None  # commented out: a local run
    head, example = text.split("\n# [cluster]\n")
    body = "\n".join(line.removeprefix("# ") for line in example.splitlines())
    uncommented = head.replace('compute = "local"', 'compute = "cluster"') + "\n[cluster]\n" + body
    assert parse_spec(uncommented, base=tmp_path).cluster.max_nodes == 80  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("compute", "cluster", "supervisor", "message"),
    [
        ("cluster", "", "", 'compute = "cluster" needs a [cluster] section'),
        ("local", "", 'executor = "slurm"\n', 'executor = "slurm" needs compute = "cluster"'),
        ("cluster", CLUSTER + 'time = "4 hours"', "", "cluster.time: '4 hours' is not a Slurm time"),
    ],
    ids=["no_cluster_section", "slurm_executor_on_local", "bad_time"],
)
def test_bad_cluster_specs_are_one_line(
    tmp_path: Path, compute: str, cluster: str, supervisor: str, message: str
) -> None:
    text = World(root=tmp_path, env={}).spec_text(compute=compute, cluster=cluster)
    text = text.replace("[supervisor]\n", f"[supervisor]\n{supervisor}")
    with pytest.raises(SpecError) as err:
        parse_spec(text, base=tmp_path, source="run.toml")
    assert str(err.value).startswith("run.toml: ") and message in str(err.value) and "\n" not in str(err.value)


def test_preflight_of_a_cluster_run_wants_slurm_here_not_gpus(tmp_path: Path) -> None:
    from a1x_supervisor.preflight import preflight

    spec = parse_spec(World(root=tmp_path, env={}).spec_text(compute="cluster", cluster=CLUSTER), base=tmp_path)
    report = preflight(spec, stages=["train"], target="run.toml", environ={}, which=lambda name: None)
    missing = next(f for f in report.findings if f.id == "binary_missing")
    assert missing.data["missing"] == ["sbatch", "scontrol"]  # not redis-server / nvidia-smi: those are the nodes'
    assert "gpus_too_few" not in {f.id for f in report.findings}


# -- refused before anything reaches Slurm ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("cluster", "finding"),
    [
        (CLUSTER + "max_nodes = 1\n", "insufficient_gpus"),  # 8 + 1 GPUs: two nodes, one allowed
        (CLUSTER, "duplicate_samples"),  # two nodes without data_dispatch_as_rank_in_mesh (recipe §8.5)
    ],
    ids=["more_nodes_than_allowed", "no_data_dispatch_as_rank_in_mesh"],
)
def test_a_plan_that_must_not_run_fails_the_stage_before_submission(
    world: World, monkeypatch: pytest.MonkeyPatch, cluster: str, finding: str
) -> None:
    _cluster_world(world, monkeypatch, Edit("policy.parallelism.dp_shard_size", 8), cluster=cluster)
    assert _supervisor(world).serve() == 1
    train = world.stage("train")
    assert train["status"] == "failed" and "\n" not in train["reason"]
    assert train["reason"].startswith(f"{world.run_dir / 'config' / 'train.toml'}: not submitted: ")
    assert train["slurm"] is None and not (world.run_dir / "slurm" / "sbatch_script.sh").exists()
    records = [json.loads(line) for line in (world.run_dir / "findings.jsonl").read_text().splitlines()]
    assert finding in [r["finding"]["id"] for r in records if r["change"] == "raised"]
    assert finding in [f["id"] for f in train["failure"]["findings"]]
    assert [e["data"]["finding_id"] for e in _events(world, "finding_raised")].count(finding) == 1


# -- the real Slurm -------------------------------------------------------------------------------------------


@pytest.mark.slow  # a job followed to its end
@real_slurm
def test_a_cluster_run_is_submitted_followed_and_judged(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    _cluster_world(world, monkeypatch)
    assert _supervisor(world).serve() == 0
    train = world.stage("train")
    assert train["status"] == "succeeded", train["reason"]
    assert train["reason"].startswith("step 4/4; checkpoint step_4 complete")  # the verdict, not the exit code
    job = train["slurm"]
    assert (job["state"], job["exit_code"], job["run"]) == ("COMPLETED", 0, "part_0/run_0")
    assert train["commands"][0]["argv"][:2] == ["sbatch", "--parsable"] and train["commands"][0]["executor"] == "slurm"
    assert world.state()["supervisor"]["executor"] == "slurm"
    assert [e["data"]["state"] for e in _events(world, "slurm_job")][-1] == "COMPLETED"
    assert world.calls("controller") and world.calls("cosmos-rl")  # both ran as job steps
    # --check RUN reads the job's Slurm layout (latest_run), as the train monitor did
    layout = discover(world.run_dir)
    assert layout.kind == "run_dir" and layout.run_name == "part_0/run_0"
    names = {src.path for _, src in layout.files}
    assert {"slurm/part_0/run_0/controller.err", "slurm/part_0/run_0/policy_0.err", "stages/train.log"} <= names
    status = world.cli("status", str(world.run_dir))
    assert f"slurm job {job['job_id']} COMPLETED" in status.stdout


@pytest.mark.slow  # a job followed and cancelled
@real_slurm
def test_a_pending_job_shows_its_reason_and_stop_cancels_it(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    # Two nodes on a one-node cluster: accepted, and pending for good (PartitionConfig).
    _cluster_world(
        world,
        monkeypatch,
        Edit("policy.parallelism.dp_shard_size", 8),
        Edit("train.train_policy.data_dispatch_as_rank_in_mesh", True),
    )
    sup = _supervisor(world)
    thread = threading.Thread(target=sup.serve)
    thread.start()
    try:
        # Slurm names either reason for it, and may change its mind while it waits (PartitionConfig, then
        # PartitionNodeLimit after tests/slurm's jobs): status shows the one it gives now, explained.
        never = ("PartitionConfig", "PartitionNodeLimit")
        state = world.wait_state(lambda s: (_train(s).get("slurm") or {}).get("reason") in never)
        status = world.cli("status", str(world.run_dir))
        assert any(line in status.stdout for line in (
            "PENDING (PartitionConfig: the partition cannot give this request",
            "PENDING (PartitionNodeLimit: more nodes than the partition allows)")), status.stdout
        job_id = _train(state)["slurm"]["job_id"]
        done = world.cli("stop", str(world.run_dir))
        assert done.returncode == 0, done.stdout + done.stderr
    finally:
        sup.request_stop("test over")
        thread.join(60)
    assert world.stage("train")["status"] == "stopped"
    assert world.stage("train")["slurm"]["state"] == "CANCELLED"
    squeue = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True, text=True)
    assert squeue.stdout.strip() in ("", "CANCELLED")


@pytest.mark.slow  # a job followed and cancelled
@real_slurm
def test_stop_cancels_a_running_job_and_leaves_no_process(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    _cluster_world(world, monkeypatch)
    world.set_modes(train="hang")
    sup = _supervisor(world)
    thread = threading.Thread(target=sup.serve)
    thread.start()
    try:
        world.wait_state(lambda s: (_train(s).get("slurm") or {}).get("state") == "RUNNING")
        deadline = time.monotonic() + 20
        while len(world.calls()) < 2 and time.monotonic() < deadline:  # controller and launcher started
            time.sleep(0.1)
        assert fake_processes(world.root), "the job's processes never started"
        done = world.cli("stop", str(world.run_dir))
        assert done.returncode == 0 and "no process of the run is left" in done.stdout, done.stdout + done.stderr
    finally:
        sup.request_stop("test over")
        thread.join(60)
    train = world.stage("train")
    assert train["status"] == "stopped" and train["slurm"]["state"] == "CANCELLED"
    assert "slurm: scancel" in (world.run_dir / "stages" / "train.log").read_text()
    deadline = time.monotonic() + 15  # slurmd ends the steps' processes just after the job is cancelled
    while fake_processes(world.root) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert fake_processes(world.root) == []
    assert not [p for p in psutil.process_iter(["cmdline"]) if "a1x-fake-replica" in " ".join(p.info["cmdline"] or [])]


# -- the train monitor on the Slurm layout ----------------------------------------------------------------

PREFIX = "[cosmos] 2025-01-01 00:00:00,000 - cosmos - INFO - "


def _slurm_run(slurm: Path, name: str, steps: int, total: int, ckpt: Path | None = None) -> Path:
    run = slurm / name
    run.mkdir(parents=True)
    (run / "controller.err").write_text(
        "".join(f"{PREFIX}Step: {s}/{total}, Reward Mean: 0\n" for s in range(1, steps + 1))
    )
    (run / "controller.out").write_text("INFO:     Uvicorn running on http://0.0.0.0:8082\n")
    policy = "POLICY Replica started at global rank 0\n"
    if ckpt is not None:
        ckpt.mkdir(parents=True)
        for name_ in ("cosmos_config", "model_rank_0.pth", ".rank_0_complete"):
            (ckpt / name_).write_text("x")
        policy += f"[rank0]:{PREFIX}[Policy] Step: {total}, checkpoint saved successfully at {ckpt}.\n"
    (run / "policy_0.err").write_text(policy)
    link = slurm / "latest_run"
    if link.is_symlink():
        link.unlink()
    link.symlink_to(name)
    return run


def test_the_monitor_follows_the_newest_start_of_the_job_and_leaves_failures_to_it(tmp_path: Path) -> None:
    from live_fakes import Rule, Script

    from a1x_diagnostics.live import FollowOptions
    from a1x_supervisor.cosmos_logs import latest_complete_checkpoint
    from a1x_supervisor.secrets import Scrubber
    from a1x_supervisor.stages.train import verify_trained
    from a1x_supervisor.state import FindingsLog
    from a1x_supervisor.train_monitor import TrainMonitor

    slurm = tmp_path / "run" / "slurm"
    earlier = _slurm_run(slurm, "part_0/run_0", 0, 4)  # an earlier submission: never this attempt's
    (earlier / "policy_0.err").write_text("exitcode  : -9\n")
    script = Script(Rule("exitcode  : -9", "replica_died", replica="policy_0"))
    threads_before = set(threading.enumerate())
    events: list[tuple[str, str]] = []
    monitor = TrainMonitor(
        log_dir=slurm,
        ranks=lambda: 1,
        diagnosis=script.factory,
        grace_s=60.0,
        findings=FindingsLog(tmp_path / "findings.jsonl", Scrubber([])),
        emit=lambda kind, message, **_: events.append((kind, message)),
        slurm=True,
        options=FollowOptions(evaluate_interval=0.05, quiet_evaluate_interval=0.05, idle_flush=0.1),
    )
    assert monitor.tick(running=True) is None and monitor.follower is None  # latest_run: the earlier job
    first = _slurm_run(slurm, "part_0/run_1", 2, 4)  # this job's first start: a replica dies, Slurm requeues
    with open(first / "policy_0.err", "a") as log:
        log.write("exitcode  : -9\n")
    deadline = time.monotonic() + 15
    while monitor.replica_died is None:
        assert monitor.tick(running=True) is None  # the job's own monitor ends and requeues it, not us
        assert time.monotonic() < deadline, "replica_died never raised"
        time.sleep(0.02)
    assert monitor.last_step == (2, 4) and monitor.run_name == "part_0/run_1"
    assert monitor.replica_died["evidence"][0]["file"] == "slurm/part_0/run_1/policy_0.err"
    ckpt = tmp_path / "outputs" / "ts" / "checkpoints" / "step_4" / "policy"
    _slurm_run(slurm, "part_1/run_0", 4, 4, ckpt)  # the requeued start finishes; latest_run moves to it
    while monitor.replica_died is not None or monitor.complete_since is None:  # RunSwitched: a fresh start
        assert monitor.tick(running=True) is None
        assert time.monotonic() < deadline, "the follower did not move with latest_run"
        time.sleep(0.02)
    monitor.close()
    assert monitor.run_name == "part_1/run_0" and monitor.last_step == (4, 4)
    assert ("note", f"Slurm job logs: {slurm / 'part_1' / 'run_0'}") in events
    assert ("note", "live diagnostics now follow part_1/run_0") in events
    assert not [p for p in script.fed_files() if "part_0/run_0" in p]  # the earlier job was never read
    records = [json.loads(x) for x in (tmp_path / "findings.jsonl").read_text().splitlines()]
    assert [(r["change"], r.get("id") or r["finding"]["id"]) for r in records] == [
        ("raised", "replica_died"),
        ("cleared", "replica_died"),
    ]
    assert set(threading.enumerate()) - threads_before == set()
    result = verify_trained(slurm, ranks=1)  # what the train stage's resume check and the export read
    assert result.ok and result.reason == "step 4/4; checkpoint step_4 complete"
    found = latest_complete_checkpoint(slurm, 1)
    assert found is not None and found.path == ckpt


# -- cosmos-dispatch: Cosmos-RL's dispatch_job.py writes the logs outside the run directory -------------

DISPATCH = """
import sys, time
from pathlib import Path
argv = sys.argv[1:]
out = Path(argv[argv.index("--output-root-path") + 1]) / (argv[argv.index("--job-name") + 1] + "_20250101000000")
run = out / "slurm" / "part_0" / "run_0"
run.mkdir(parents=True)
print(f"Output directory: {out}")
steps = "".join(f"{PREFIX}Step: {s}/2, Reward Mean: 0\\n" for s in (1, 2))
(run / "controller.err").write_text(steps)
ckpt = out / "outputs" / "checkpoints" / "step_2" / "policy"
ckpt.mkdir(parents=True)
for name in ["cosmos_config"] + [f"model_rank_{r}.pth" for r in range(4)] + [f".rank_{r}_complete" for r in range(4)]:
    (ckpt / name).write_text("x")
(run / "policy_0.err").write_text(f"[rank0]:{PREFIX}[Policy] Step: 2, checkpoint saved successfully at {ckpt}.\\n")
(out / "slurm" / "latest_run").symlink_to(run)
print("Submitted batch job 99")
"""


def _dispatch_edits(world: World) -> tuple[Edit, ...]:
    return (
        Edit("train.train_policy.data_dispatch_as_rank_in_mesh", True),
        Edit("policy.model_name_or_path", str(world.root / "model")),
    )


def _dispatch_cluster(world: World, script: Path, *, mounted: bool = True) -> str:
    # The containers see the test's whole folder at its own path (HEAD's --mount-dirs, docs/reference/cosmos-rl.md
    # §11.1).
    mounts = f'mounts = ["{world.root}:{world.root}"]' if mounted else ""
    return f"""
[cluster]
method = "cosmos-dispatch"
partition = "batch"
account = "acct"
container = "/images/cosmos.sqsh"
output_root = "{world.root / "jobs"}"
dispatch_script = "{script}"
python = "{sys.executable}"
cosmos_rev = "head"
{mounts}
"""


def test_a_cosmos_dispatch_job_is_linked_into_the_run(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    from a1x_supervisor.slurm.tracking import CommandResult

    script = world.root / "dispatch_job.py"
    script.write_text(f"PREFIX = {PREFIX!r}\n{DISPATCH}")
    cluster = _dispatch_cluster(world, script)
    _cluster_world(world, monkeypatch, *_dispatch_edits(world), cluster=cluster)
    calls: list[list[str]] = []

    def runner(argv: Any) -> CommandResult:
        calls.append(list(argv))
        if argv[:2] == ["scontrol", "-o"]:
            return CommandResult(
                0, "JobId=99 JobName=a1x_rl JobState=COMPLETED Reason=None ExitCode=0:0 NodeList=n[1-2]\n"
            )
        return CommandResult(1, "", "not here")

    executor = SlurmExecutor(runner=runner, poll_interval_s=0.1)
    sup = Supervisor(world.run_dir, Plan(only="train"), install_signals=False, slurm_executor=executor)
    assert sup.serve() == 0, world.stage("train")["reason"]
    train = world.stage("train")
    assert train["reason"].startswith("step 2/2; checkpoint step_2 complete")
    argv = train["commands"][0]["argv"]
    # The template starts the launcher from the cosmos_rl package folder: the entry goes by its absolute path.
    entry = world.ws / "recipes/alpamayo1_x_rl/models/reasoning_vla/alpamayo_cosmos_rl_post_training_entry.py"
    assert argv[:2] == [sys.executable, str(script)] and argv[-1] == str(entry)
    assert argv[argv.index("--mount-dirs") + 1] == f"{world.root}:{world.root}"
    link = world.run_dir / "slurm"
    assert link.is_symlink() and link.resolve() == world.root / "jobs" / "a1x_rl_20250101000000" / "slurm"
    assert (train["slurm"]["state"], train["slurm"]["run"]) == ("COMPLETED", "part_0/run_0")
    assert discover(world.run_dir).run_name == "part_0/run_0"


def test_a_cosmos_dispatch_job_whose_paths_its_containers_cannot_see_is_not_submitted(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    from a1x_supervisor.slurm import container

    # A login node without /lustre, HOME on NFS (what a1x_supervisor/slurm/container.py asks this node).
    probe = container.MountProbe(
        exists=lambda p: not str(p).startswith("/lustre") and p.exists(), fs_type=lambda _p: "nfs"
    )
    monkeypatch.setattr(container, "DEFAULT_PROBE", probe)
    script = world.root / "dispatch_job.py"
    script.write_text("raise SystemExit('must not run')\n")
    cluster = _dispatch_cluster(world, script, mounted=False)
    _cluster_world(world, monkeypatch, *_dispatch_edits(world), cluster=cluster)
    assert _supervisor(world).serve() == 1
    train = world.stage("train")
    assert train["status"] == "failed" and train["commands"] == []
    assert "not submitted: container_path_unmounted: 6 path(s) or mount(s) of the job cannot be seen" in train["reason"]
    finding = next(f for f in train["failure"]["findings"] if f["id"] == "container_path_unmounted")
    lines = [e["text"] for e in finding["evidence"]]
    entry = world.ws / "recipes/alpamayo1_x_rl/models/reasoning_vla/alpamayo_cosmos_rl_post_training_entry.py"
    def needs(folder: Path) -> str:  # each line names the mount it needs (HEAD: [cluster] mounts)
        return f" (needs the mount {folder}:{folder})"

    assert lines == [
        f"the entry script: {entry} is not mounted in the container{needs(entry.parent)}",
        f"policy.model_name_or_path (the converted model): {world.root / 'model'} is not mounted in the container"
        + needs(world.root / "model"),
        # HEAD's dispatch_job.py puts train.output_dir under output_root (docs/reference/cosmos-rl.md §11.1)
        f"output_root (train.output_dir goes under it): {world.root / 'jobs'} is not mounted in the container"
        + needs(world.root / "jobs"),
        f"ALPAMAYO_PAI_LOCAL_DIR (the PAI data): {world.root / 'pai'} is not mounted in the container"
        + needs(world.root / "pai"),
        f"the Hugging Face cache (HF_HOME; the VLM's processor files): {world.root / 'hfhome' / 'hub'} is not "
        f"mounted in the container{needs(world.root / 'hfhome' / 'hub')}",
        # no /lustre on this machine: the default --mount-dirs cannot be made (pyxis fails on a missing source)
        "dispatch_job.py's default --mount-dirs mounts /lustre whether it exists or not, and it does not exist on "
        "this node: pyxis fails every step of the job on a missing mount source",
    ]
    assert f'mounts = ["/lustre:/lustre/", "{world.ws}' in finding["action"]


# A dispatch_job.py of our own that submits a real job shaped like Cosmos-RL's template where it matters
# here (docs/reference/cosmos-rl.md §11.1): every step starts in the cosmos_rl package's folder and runs the launcher
# by the path it was given, and the layout is HEAD's <output-root>/<job-name>_<ts>/slurm/part_0/run_0.
REAL_DISPATCH = """
import subprocess, sys, time
from pathlib import Path
argv = sys.argv[1:]
def opt(flag):
    return argv[argv.index(flag) + 1]
out = Path(opt("--output-root-path")) / (opt("--job-name") + time.strftime("_%Y%m%d%H%M%S"))
slurm = out / "slurm"
run = slurm / "part_0" / "run_0"
run.mkdir(parents=True)
(slurm / "latest_run").symlink_to(run)
launcher, config = argv[-1], opt("--config-path")
steps = {
    "controller": f"./cosmos_rl/launcher/launch_controller.sh --port 8082 --config {config} --script {launcher}",
    "policy_0": f"cosmos-rl --config {config} --num-workers 1 --worker-idx 0 --url localhost:8082 {launcher}",
}
lines = ["#!/bin/bash", f"#SBATCH --job-name={opt('--job-name')}", f"#SBATCH --output={slurm}/slurm_%j.log"]
lines.append(f"cd {PACKAGE}")
for name, cmd in steps.items():
    lines.append(f"srun --overlap -o {run}/{name}.out -e {run}/{name}.err bash -c '{cmd}' &")
    lines.append(f"pid_{name}=$!")
lines.append("rc=0; wait $pid_controller || rc=1; wait $pid_policy_0 || rc=1; exit $rc")
script = slurm / "sbatch_script.sh"
script.write_text("\\n".join(lines) + "\\n")
print(f"Output directory: {out}", flush=True)
sys.exit(subprocess.run(["sbatch", str(script)]).returncode)
"""


@real_slurm
def test_a_cosmos_dispatch_job_runs_its_entry_by_absolute_path_from_the_package_folder(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = world.root / "dispatch_job.py"
    script.write_text(f"PACKAGE = {str(world.root / 'stubs')!r}\n{REAL_DISPATCH}")
    _cluster_world(world, monkeypatch, *_dispatch_edits(world), cluster=_dispatch_cluster(world, script))
    assert _supervisor(world).serve() == 0, world.stage("train")["reason"]
    train = world.stage("train")
    assert train["reason"].startswith("step 4/4; checkpoint step_4 complete")
    assert train["slurm"]["state"] == "COMPLETED"
    entry = world.ws / "recipes/alpamayo1_x_rl/models/reasoning_vla/alpamayo_cosmos_rl_post_training_entry.py"
    run = world.run_dir / "slurm" / "part_0" / "run_0"
    assert f"[Controller] Using script: {entry}" in (run / "controller.err").read_text()
    assert "can't open file" not in (run / "controller.err").read_text() + (run / "policy_0.err").read_text()


@pytest.mark.slow  # a job followed and cancelled
@real_slurm
def test_stop_without_a_supervisor_cancels_the_job_it_recorded(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    from a1x_supervisor.executor import ProcessHandle
    from a1x_supervisor.state import RunState, StageState

    _cluster_world(world, monkeypatch)
    # A job that never starts on this one-node cluster, as a crashed supervisor left it in state.json.
    submitted = subprocess.run(
        ["sbatch", "--parsable", "--nodes=2", "-o", "/dev/null", "--wrap", "sleep 60"], capture_output=True, text=True
    )
    job_id = submitted.stdout.strip()
    assert submitted.returncode == 0 and job_id.isdigit(), submitted.stderr
    handle = ProcessHandle(executor="slurm", pid=0, pgid=0, create_time=0.0, job_id=job_id)
    train = StageState(name="train", status="orphaned", process=handle.to_json())
    state = RunState(run_id="r", run_dir=str(world.run_dir), status="blocked", stages=[train])
    (world.run_dir / "state.json").write_text(state.model_dump_json())
    status = world.cli("status", str(world.run_dir))
    assert f"still running: stage train Slurm job {job_id}" in status.stdout
    done = world.cli("stop", str(world.run_dir))
    assert done.returncode == 0, done.stdout + done.stderr
    squeue = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True, text=True)
    assert squeue.stdout.strip() in ("", "CANCELLED")
    train = world.stage("train")
    assert train["status"] == "stopped" and train["process"] is None
    assert train["reason"] == f"stopped by `a1x-tui stop` (its supervisor was gone): Slurm job {job_id} cancelled"


def test_a_submission_that_fails_fails_the_stage_with_its_last_line(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = world.root / "dispatch_job.py"
    script.write_text("import sys\nsys.exit('sbatch: error: Batch job submission failed: Invalid account')\n")
    cluster = _dispatch_cluster(world, script)
    _cluster_world(world, monkeypatch, *_dispatch_edits(world), cluster=cluster)
    assert _supervisor(world).serve() == 1
    train = world.stage("train")
    assert train["status"] == "failed" and train["exit_code"] == 1
    problem = "sbatch: error: Batch job submission failed: Invalid account"
    assert train["reason"] == f"{Path(sys.executable).name} failed with exit code 1: {problem}"
