"""The alpagym pipeline (issue 19 point 5): its stage commands flag by flag against AlpaGym's documented
command lines, a whole supervised run through stand-ins (``alpagym_fakes.py``), Stop ending the
Wizard's containers and every process, the NCCL P2P fallback, the Slurm follower and the preflight.

The flags are checked against upstream NVlabs/alpagym@85ed1f5 (docs/reference/alpagym.md): the lines
cited beside each assertion."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from supervisor_helpers import HF_SECRET, REPO, World, fake_processes, wait_gone

from a1x_diagnostics.findings import Report
from a1x_supervisor.pipeline import build_stages, select_stages, stage_names
from a1x_supervisor.preflight import GB, GpuInventory, preflight
from a1x_supervisor.rundir import RunDir
from a1x_supervisor.spec import RunSpec, parse_spec
from a1x_supervisor.stage import Command, StageError, StageSpec

HERE = Path(__file__).resolve().parent
FIXTURES = REPO / "tests" / "fixtures" / "alpagym"


class AgWorld(World):
    def spec_text(self, **overrides: object) -> str:  # type: ignore[override]
        v: dict[str, object] = {"deploy": "local", "overrides": ["reward=progress_safety"], "wandb": False,
                                "live_diagnostics": True, "stop_grace_s": 2.0}
        v.update(overrides)
        if v["deploy"] == "slurm" and "overrides" not in overrides:
            # the default experiment's topology is local_disaggregated_2gpu: deploy=slurm needs a Slurm one
            v["overrides"] = ["reward=progress_safety", "topology=slurm_partial_node_1_2_1"]
        r = self.root
        return f"""
pipeline = "alpagym"

[wandb]
enabled = {str(v["wandb"]).lower()}

[paths]
workspace = "{self.ws}"
model_dir = "{r / "ckpt"}"
export_dir = "{r / "export"}"

[supervisor]
stop_grace_s = {v["stop_grace_s"]}
shutdown_grace_s = 2.0
diagnostics_interval_s = 0.5
live_diagnostics = {str(v["live_diagnostics"]).lower()}
hf_backoff_s = 0.1

[alpagym]
release_dir = "{r / "release"}"
experiment = "alpamayo_1_5_local_2gpu_smoke"
overrides = {json.dumps(v["overrides"])}
deploy = "{v["deploy"]}"
"""


@pytest.fixture
def ag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AgWorld]:
    from a1x_supervisor import preflight_alpagym

    # What install/check_env.sh wants beyond programs: git-lfs set up in the user's git config, the headers.
    (tmp_path / ".gitconfig").write_text('[filter "lfs"]\n\tclean = git-lfs clean -- %f\n\trequired = true\n')
    include = tmp_path / "include"
    include.mkdir()
    for name in ("cudnn.h", "nccl.h"):
        (include / name).write_text("")
    monkeypatch.setattr(preflight_alpagym, "HEADER_DIRS", (tmp_path / "usr_include", include))
    ws = tmp_path / "ws"
    for rel in ("packages/host/src/alpagym_host/cli.py", "install/check_nccl_p2p.py", "pyproject.toml"):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(HERE)!r})\nimport alpagym_fakes\n" \
              "sys.exit(alpagym_fakes.main())\n"
    for name in ("uv", "docker", "squeue", "sacct", "scancel", "git-lfs", "redis-server"):
        (bin_dir / name).write_text(program)
        (bin_dir / name).chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "WANDB_API_KEY", "HF_HOME", "PYTHONPATH")}
    env.update({
        "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        "PYTHONPATH": str(REPO),
        "A1X_FAKE_DIR": str(tmp_path),
        "A1X_ALPAGYM_FIXTURES": str(FIXTURES),
        "HF_HOME": str(tmp_path / "hfhome"),
        "HF_TOKEN": HF_SECRET,
        "HOME": str(tmp_path),
        "GIT_CONFIG_NOSYSTEM": "1",  # git-lfs set up or not: this HOME's .gitconfig decides, not the machine's
        "A1X_SLURM_POLL_S": "0.1",
    })
    w = AgWorld(root=tmp_path, env=env)
    yield w
    from supervisor_helpers import clean_world

    clean_world(w)


def _spec(world: AgWorld, **overrides: object) -> RunSpec:
    return parse_spec(world.spec_text(**overrides), base=world.root)


def _stages(world: AgWorld, outputs: dict[str, str] | None = None, **overrides: object) -> dict[str, StageSpec]:
    spec = _spec(world, **overrides)
    return {s.name: s for s in build_stages(spec, RunDir(world.run_dir), {} if outputs is None else outputs)}


def _one(stage: StageSpec) -> Command:
    commands = list(stage.prepare())
    assert len(commands) == 1
    return commands[0]


# -- the command lines -----------------------------------------------------------------------------------------


def test_the_stages_in_order_and_p2p_only_where_the_gpus_are_this_nodes(ag: AgWorld) -> None:
    assert stage_names(_spec(ag)) == ["env", "download", "convert", "p2p", "train", "export", "verify"]
    assert "p2p" not in stage_names(_spec(ag, deploy="slurm"))
    with pytest.raises(StageError, match="does not apply to this run"):
        select_stages(stage_names(_spec(ag)), from_stage="curate", only=None)


def test_env_download_and_convert_commands(ag: AgWorld) -> None:
    stages = _stages(ag)
    env = _one(stages["env"])
    assert env.argv == ("uv", "sync", "--all-packages") and env.cwd == ag.ws  # ONBOARDING.md:86
    download = _one(stages["download"])
    assert download.argv[:4] == ("uv", "run", "--no-sync", "python")  # ONBOARDING.md:135
    assert "snapshot_download('nvidia/Alpamayo-1.5-10B'" in download.argv[5]
    assert f"local_dir={str(ag.root / 'release')!r}" in download.argv[5]
    assert download.secrets == ("HF_TOKEN",)
    convert = _one(stages["convert"])
    # ONBOARDING.md:141-145; the script's argparse: --input, --output, --overwrite (its lines 141-156)
    assert convert.argv == (
        "uv", "run", "--no-sync", "--package", "alpagym-runtime", "python",
        "packages/policies/alpamayo_r1/scripts/convert_release_to_alpagym_checkpoint.py",
        "--input", str(ag.root / "release"), "--output", str(ag.root / "ckpt"), "--overwrite",
    )
    assert convert.cwd == ag.ws


def test_p2p_command_and_its_fallback_to_p2p_disabled(ag: AgWorld) -> None:
    outputs: dict[str, str] = {}
    p2p = _stages(ag, outputs)["p2p"]
    cmd = _one(p2p)
    # ONBOARDING.md:158 and install/check_nccl_p2p.py:13
    assert cmd.argv == ("uv", "run", "--no-sync", "torchrun", "--nproc-per-node=2", "install/check_nccl_p2p.py")
    assert "NCCL_P2P_DISABLE" not in cmd.env
    assert p2p.retry is not None
    decision = p2p.retry.after_failure("NCCL error: Watchdog caught collective operation timeout", 1,
                                       monitor_stopped=False)
    assert decision is not None and decision.retry_in_s == 0.0
    assert _one(p2p).env["NCCL_P2P_DISABLE"] == "1"  # ONBOARDING.md:165
    assert p2p.retry.after_failure("still broken", 2, monitor_stopped=False) is None  # nothing left to try
    assert "NCCL_P2P_DISABLE" not in _one(p2p).env  # run afresh (--from p2p), the direct transport is tested again


def test_host_command_with_the_experiment_the_overrides_and_this_runs_run_root(ag: AgWorld) -> None:
    outputs = {"nccl_p2p_disable": "1"}
    cmd = _one(_stages(ag, outputs, overrides=["reward=progress_safety", "cosmos.train.max_num_steps=3"])["train"])
    # ONBOARDING.md:180-183; run_root: conf/default.yaml:14; deploy: conf/deploy/local.yaml:4
    assert cmd.argv == (
        "uv", "run", "--no-sync", "--all-packages", "python", "-m", "alpagym_host.cli",
        "experiment=alpamayo_1_5_local_2gpu_smoke",
        f"policy.model.path={ag.root / 'ckpt'}",
        f"run_root={ag.run_dir / 'alpagym'}",
        "deploy=local",
        "reward=progress_safety",
        "cosmos.train.max_num_steps=3",
    )
    assert cmd.env == {"NCCL_P2P_DISABLE": "1", "WANDB_MODE": "disabled"}
    assert cmd.secrets == ("HF_TOKEN",)
    wandb = _one(_stages(ag, wandb=True)["train"])
    assert "cosmos.logging.logger=[console,wandb]" in wandb.argv  # ONBOARDING.md:108
    assert wandb.secrets == ("HF_TOKEN", "WANDB_API_KEY")


def test_slurm_deploy_submits_with_deploy_slurm_and_follows_the_job(ag: AgWorld) -> None:
    commands = list(_stages(ag, deploy="slurm")["train"].prepare())
    assert "deploy=slurm" in commands[0].argv  # conf/deploy/slurm.yaml:5: command=submit
    assert commands[1].argv[1:3] == ("-m", "a1x_supervisor.stages.alpagym.slurm_wait")


def test_an_override_of_what_the_pipeline_sets_is_refused_in_one_line(ag: AgWorld) -> None:
    from a1x_supervisor.spec import SpecError, load_spec

    path = ag.root / "bad.toml"
    path.write_text(ag.spec_text(overrides=["policy.model.path=/elsewhere"]))
    with pytest.raises(SpecError) as err:
        load_spec(path)
    assert str(err.value).startswith(f"{path}: alpagym.overrides:")
    assert "set by the pipeline" in str(err.value) and "\n" not in str(err.value)


# -- a supervised run through the stand-ins ----------------------------------------------------------------------


def _run(ag: AgWorld, *args: str, timeout: float = 90.0) -> subprocess.CompletedProcess[str]:
    spec = ag.root / "run.toml"
    spec.write_text(ag.spec_text())
    return ag.cli("run", "--spec", str(spec), "--run-dir", str(ag.run_dir), "--skip-preflight", *args, timeout=timeout)


@pytest.mark.slow  # a whole closed-loop run
def test_a_whole_run_converts_trains_in_the_run_folder_and_exports(ag: AgWorld) -> None:
    done = _run(ag)
    assert done.returncode == 0, done.stdout + done.stderr
    state = ag.state()
    assert [(s["name"], s["status"]) for s in state["stages"]] == [
        ("env", "succeeded"), ("download", "succeeded"), ("convert", "succeeded"), ("p2p", "succeeded"),
        ("train", "succeeded"), ("export", "succeeded"), ("verify", "succeeded"),
    ]
    (run,) = (ag.run_dir / "alpagym").iterdir()
    assert "step 4/4" in ag.stage("train")["reason"]
    # the host's terminal, saved where the closed-loop reader reads it
    host_log = (run / "host.log").read_text()
    assert "Cosmos launcher completed" in host_log and "[a1x-tui]" not in host_log
    events = [json.loads(line) for line in (ag.run_dir / "events.jsonl").read_text().splitlines()]
    assert any(e.get("message", "").startswith(f"live diagnostics follow {run}") for e in events)
    assert any(e["kind"] == "outcome" and "completed" in e["message"] for e in events)
    export = Path(state["outputs"]["export_dir"])
    assert json.loads((export / "config.json").read_text())["model_type"] == "alpamayo1_5"
    assert json.loads((export / ".a1x-tui-export.json").read_text())["source"].endswith("safetensors/step_4")
    # after the run, no container of its Wizard is left (the stand-in compose left two)
    assert json.loads((ag.root / "docker.json").read_text()) == {str(run / "alpasim" / "wizard_0"): []}
    assert "cleanup: AlpaSim wizard_0: removed 2 container(s)" in (ag.run_dir / "stages" / "train.log").read_text()
    # a resumed run skips what verifies, and the secret was never written
    again = ag.cli("run", "--run-dir", str(ag.run_dir), "--skip-preflight")
    assert again.returncode == 0
    assert {s["status"] for s in ag.state()["stages"] if s["name"] != "verify"} == {"skipped"}
    for path in ag.run_dir.rglob("*"):
        if path.is_file():
            assert HF_SECRET not in path.read_text(errors="replace"), path


@pytest.mark.slow  # a whole closed-loop run
def test_a_bring_up_failure_fails_train_with_the_finding_of_the_host_lines(ag: AgWorld) -> None:
    ag.set_modes(host="bringup_failed")
    done = _run(ag)
    assert done.returncode == 1
    train = ag.stage("train")
    assert train["status"] == "failed"
    assert "no Cosmos-RL controller log" in train["reason"] and "exited with code 1" in train["reason"]
    findings = [json.loads(line) for line in (ag.run_dir / "findings.jsonl").read_text().splitlines()]
    raised = {f["finding"]["id"] for f in findings if f["change"] == "raised"}
    assert "alpasim_bringup_failed" in raised  # read from the host's lines, saved as the run folder's host.log


@pytest.mark.slow  # a run stopped
def test_stop_ends_the_host_the_wizard_and_removes_only_this_runs_containers(ag: AgWorld) -> None:
    ag.set_modes(host="hang")
    other = ag.root / "elsewhere" / "wizard_0"  # another run's Wizard: never touched
    (ag.root / "docker.json").write_text(json.dumps({str(other): ["beef0001"]}))
    started = _run(ag, "--detach")
    assert started.returncode == 0, started.stderr
    ag.wait_state(lambda s: any(st["name"] == "train" and st["status"] == "running" for st in s["stages"]), 60)
    deadline = time.monotonic() + 30
    while len(fake_processes(ag.root)) < 2 and time.monotonic() < deadline:  # the host and its Wizard
        time.sleep(0.1)
    procs = fake_processes(ag.root)
    assert len(procs) >= 2, "the host and the Wizard never started"
    assert ag.cli("stop", str(ag.run_dir)).returncode in (0, 1)
    assert ag.wait_final(60)["status"] == "stopped"
    for proc in procs:
        assert wait_gone(proc.pid), f"{proc.pid} outlived Stop"
    (run,) = (ag.run_dir / "alpagym").iterdir()
    assert json.loads((ag.root / "docker.json").read_text()) == {
        str(other): ["beef0001"], str(run / "alpasim" / "wizard_0"): [],
    }


@pytest.mark.slow  # a supervisor killed and a run stopped
def test_stop_after_the_supervisor_was_killed_still_removes_the_wizard_containers(ag: AgWorld) -> None:
    import signal

    ag.set_modes(host="hang")
    assert _run(ag, "--detach").returncode == 0
    ag.wait_state(lambda s: any(st["name"] == "train" and st["status"] == "running" for st in s["stages"]), 60)
    deadline = time.monotonic() + 30
    while (len(fake_processes(ag.root)) < 2 or len(ag.stage("train")["process"]["descendants"]) < 1) \
            and time.monotonic() < deadline:  # the host and its Wizard, recorded in state.json
        time.sleep(0.1)
    procs = fake_processes(ag.root)
    daemon = ag.daemon_pid()
    assert daemon is not None and len(procs) >= 2
    os.kill(daemon, signal.SIGKILL)
    assert wait_gone(daemon)
    done = ag.cli("stop", str(ag.run_dir))
    assert done.returncode == 0, done.stdout + done.stderr
    for proc in procs:
        assert wait_gone(proc.pid), f"{proc.pid} outlived Stop"
    (run,) = (ag.run_dir / "alpagym").iterdir()
    assert json.loads((ag.root / "docker.json").read_text()) == {str(run / "alpasim" / "wizard_0"): []}
    assert "cleanup: AlpaSim wizard_0: removed 2 container(s)" in (ag.run_dir / "stages" / "train.log").read_text()


@pytest.mark.slow  # a whole closed-loop run
def test_p2p_broken_passes_with_p2p_disabled_and_training_gets_it(ag: AgWorld) -> None:
    ag.set_modes(p2p="broken")
    done = _run(ag)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "only with NCCL_P2P_DISABLE=1" in ag.stage("p2p")["reason"]
    host = [c for c in ag.calls("uv") if "alpagym_host.cli" in c["argv"]]
    assert host and host[0]["env"].get("NCCL_P2P_DISABLE") == "1"


@pytest.mark.slow  # a whole closed-loop run
def test_one_gpu_fails_the_p2p_check_although_it_exits_0(ag: AgWorld) -> None:
    ag.set_modes(p2p="one_gpu")
    done = _run(ag)
    assert done.returncode == 1
    assert "fewer than 2 GPUs" in ag.stage("p2p")["reason"]
    assert ag.stage("train")["status"] == "pending"


@pytest.mark.slow  # follows a job for seconds
def test_the_slurm_follower_waits_for_the_job_and_reports_how_it_ended(ag: AgWorld) -> None:
    log = ag.root / "train.log"
    log.write_text("2026-07-01T12:00:00.000+00:00 Submitted Slurm job 4242\n")
    ag.set_modes(squeue=["PENDING", "RUNNING", "RUNNING"], sacct="COMPLETED")
    argv = [sys.executable, "-m", "a1x_supervisor.stages.alpagym.slurm_wait", str(log)]
    done = subprocess.run(argv, env=ag.env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Slurm job 4242 RUNNING" in done.stdout and "ended COMPLETED" in done.stdout
    ag.set_modes(squeue=[], sacct="FAILED")
    assert subprocess.run(argv, env=ag.env, capture_output=True, text=True, timeout=30).returncode == 1
    ag.set_modes(squeue=["RUNNING"] * 10_000)
    (ag.root / "squeue.count").unlink()
    proc = subprocess.Popen(argv, env=ag.env, stdout=subprocess.PIPE, text=True)
    time.sleep(1.0)
    proc.terminate()
    proc.wait(timeout=10)
    assert [c["argv"] for c in ag.calls("scancel")] == [["4242"]]


# -- preflight -----------------------------------------------------------------------------------------------------


TWO_48GB = GpuInventory((48 * GB,) * 2, "test")


def _preflight(ag: AgWorld, *, gpus: GpuInventory | str = TWO_48GB,
               env: dict[str, str] | None = None, **spec: object) -> Report:
    s = _spec(ag, **spec)
    return preflight(s, stages=stage_names(s), target="run.toml", environ=env or ag.env, gpu_probe=lambda: gpus,
                     disk_free=lambda _p: 500 * GB, hub=False)


def _ids(report: Report) -> set[str]:
    return {f.id for f in report.findings}


def test_preflight_passes_on_a_machine_with_what_alpagym_needs(ag: AgWorld) -> None:
    report = _preflight(ag)
    assert _ids(report) == set(), [f.explanation for f in report.findings]
    assert report.exit_code == 0
    assert any("p2p stage" in n for n in report.notes)


def test_preflight_two_gpus_of_40_gb(ag: AgWorld) -> None:
    report = _preflight(ag, gpus=GpuInventory((80 * GB, 24 * GB), "test"))
    (finding,) = report.findings
    assert finding.id == "gpus_too_few" and "smallest 24 GB" in finding.evidence[0].text
    assert "gpus_too_few" not in _ids(_preflight(ag, gpus=GpuInventory((24 * GB,), "test"), deploy="slurm"))


@pytest.mark.parametrize(("mode", "words"), [
    ("no_compose", "docker compose version"),
    ("no_daemon", "docker info"),
    ("no_toolkit", "NVIDIA container toolkit"),
])
def test_preflight_docker_compose_daemon_and_the_nvidia_toolkit(ag: AgWorld, mode: str, words: str) -> None:
    ag.set_modes(docker=mode)
    report = _preflight(ag)
    assert _ids(report) == {"docker_unusable"}
    assert words in report.findings[0].evidence[0].text
    assert report.exit_code == 2


def test_preflight_checks_what_alpagyms_check_env_checks(ag: AgWorld, tmp_path: Path) -> None:
    # install/check_env.sh:36-105 at 85ed1f5: uv >= 0.10.0, git-lfs set up, cudnn.h and nccl.h.
    ok = next(c for c in _preflight(ag).checks if c.id == "alpagym_env_incomplete")
    assert ok.state.value == "ok"
    assert ok.note == f"uv 0.10.4 >= 0.10.0; git-lfs set up; cudnn.h in {tmp_path / 'include'}; nccl.h in " \
        f"{tmp_path / 'include'}"
    ag.set_modes(uv_version="uv 0.9.17 (abc 2025-11-01)")
    (tmp_path / ".gitconfig").unlink()
    (tmp_path / "include" / "nccl.h").unlink()
    report = _preflight(ag)
    (finding,) = report.findings
    assert finding.id == "alpagym_env_incomplete" and report.exit_code == 2
    assert [e.text for e in finding.evidence] == [
        "uv 0.9.17 is older than 0.10.0 (check_env.sh: uv >= 0.10.0); `uv self update`",
        "git-lfs is installed but not set up (no filter.lfs in the git config): `git lfs install`",
        f"nccl.h not found in {tmp_path / 'usr_include'}, {tmp_path / 'include'} (uv sync needs it)",
    ]


def test_preflight_refuses_a_checkout_experiment_with_a_local_topology_for_slurm(ag: AgWorld) -> None:
    experiments = ag.ws / "packages/policies/site/src/site_configs/configs/experiment"
    experiments.mkdir(parents=True)
    (experiments / "site_2gpu.yaml").write_text("defaults:\n  - override /topology: local_disaggregated_2gpu\n")
    (experiments / "site_slurm.yaml").write_text("defaults:\n  - override /topology: slurm_partial_node_1_2_1\n")
    topologies = ag.ws / "packages/host/src/alpagym_host/conf/topology"
    topologies.mkdir(parents=True)
    (topologies / "local_disaggregated_2gpu.yaml").write_text("execution:\n  backend: local_process\n")
    text = ag.spec_text(deploy="slurm", overrides=["reward=progress_safety"])
    spec = parse_spec(text.replace("alpamayo_1_5_local_2gpu_smoke", "site_2gpu"), base=ag.root)
    report = preflight(spec, stages=["train"], target="run.toml", environ=ag.env, gpu_probe=lambda: TWO_48GB,
                       disk_free=lambda _p: 500 * GB, hub=False)
    finding = next(f for f in report.findings if f.id == "host_config_rejected")
    assert finding.evidence[0].text == (
        f"{experiments / 'site_2gpu.yaml'}: topology local_disaggregated_2gpu, execution.backend=local_process"
    )
    assert "command=submit requires execution.backend to be a Slurm backend" in finding.explanation
    fine = parse_spec(text.replace("alpamayo_1_5_local_2gpu_smoke", "site_slurm"), base=ag.root)
    report = preflight(fine, stages=["train"], target="run.toml", environ=ag.env, gpu_probe=lambda: TWO_48GB,
                       disk_free=lambda _p: 500 * GB, hub=False)
    assert "host_config_rejected" not in _ids(report)
    gone = parse_spec(text.replace("alpamayo_1_5_local_2gpu_smoke", "nowhere"), base=ag.root)
    report = preflight(gone, stages=["train"], target="run.toml", environ=ag.env, gpu_probe=lambda: TWO_48GB,
                       disk_free=lambda _p: 500 * GB, hub=False)
    assert "host_config_rejected" not in _ids(report)
    assert any("experiment nowhere is not under" in n and "You must specify 'topology'" in n for n in report.notes)


def test_preflight_missing_programs_checkout_and_token(ag: AgWorld, tmp_path: Path) -> None:
    env = {k: v for k, v in ag.env.items() if k != "HF_TOKEN"}
    env["PATH"] = "/nonexistent"
    for rel in ("install/check_nccl_p2p.py",):
        (ag.ws / rel).unlink()
    report = _preflight(ag, env=env)
    assert {"binary_missing", "alpagym_checkout_missing", "hf_token_missing"} <= _ids(report)
    missing = next(f for f in report.findings if f.id == "binary_missing").data["missing"]
    assert {"uv", "docker", "git-lfs", "redis-server"} <= set(missing)
    slurm = _preflight(ag, env=env, deploy="slurm")
    assert {"sbatch", "squeue", "sacct"} <= set(next(f for f in slurm.findings if f.id == "binary_missing")
                                                .data["missing"])
