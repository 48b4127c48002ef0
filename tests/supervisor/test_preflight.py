"""Preflight: the machine against a run spec, as a Report with the --check contract."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from supervisor_helpers import World

from a1x_diagnostics.catalog import CATALOG
from a1x_diagnostics.findings import Report
from a1x_supervisor.pipeline import stage_names
from a1x_supervisor.preflight import GB, GpuInventory, preflight
from a1x_supervisor.spec import RunSpec, parse_spec

ALL_BINARIES = {"uv", "git", "redis-server", "nvidia-smi", "nvcc"}
EIGHT_H100 = GpuInventory((85 * GB,) * 8, "test")


def fake_commands(nvcc: str = "12.8", python: str | None = "/usr/bin/python3.12") -> Callable[..., tuple[int, str]]:
    """What the install checks run: `nvcc --version` and `uv python find` (a1x_supervisor/preflight_install.py)."""

    def run(argv: list[str], cwd: Path | None) -> tuple[int, str]:
        if argv[-1] == "--version":
            return 0, f"nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release {nvcc}, V{nvcc}.93"
        if argv[1:] == ["python", "find"]:
            missing = "error: No interpreter found for Python ==3.12.* in managed installations"
            return (0, python) if python else (2, missing)
        raise AssertionError(argv)

    return run


def _spec(world: World, **overrides: object) -> RunSpec:
    return parse_spec(world.spec_text(**overrides), base=world.root)


def _run(
    world: World,
    spec: RunSpec,
    *,
    gpus: GpuInventory | str = EIGHT_H100,
    free: int = 500 * GB,
    binaries: set[str] = ALL_BINARIES,
    env: dict[str, str] | None = None,
    stages: list[str] | None = None,
    run: Callable[..., tuple[int, str]] | None = None,
) -> Report:
    # The Hub is not asked here: tests/supervisor/test_preflight_hub.py asks a local one.
    return preflight(
        spec,
        stages=stages or stage_names(spec),
        target="run.toml",
        # NETRC: W&B's credentials file, none here whatever this machine's ~/.netrc holds.
        environ={"HF_TOKEN": "hf_abcdefgh", "HF_HOME": str(world.root / "hfhome"),
                 "NETRC": str(world.root / "no-netrc")} if env is None else env,
        gpu_probe=lambda: gpus,
        disk_free=lambda _p: free,
        which=lambda name: f"/usr/bin/{name}" if name in binaries else None,
        hub=False,
        run=run or fake_commands(),
    )


def _ids(report: Report) -> set[str]:
    return {f.id for f in report.findings}


def test_a_good_machine_passes(world: World) -> None:
    report = _run(world, _spec(world))
    assert report.kind == "preflight" and report.status.value == "ok" and report.exit_code == 0
    assert report.findings == []
    states = {c.id: c.state.value for c in report.checks}
    assert states["gpus_too_few"] == "ok" and states["recipe_checkout_missing"] == "ok"
    assert states["wandb_key_missing"] == "skipped"  # W&B is off


def test_too_few_or_too_small_gpus(world: World) -> None:
    report = _run(world, _spec(world), gpus=GpuInventory((85 * GB,) * 4, "test"))
    finding = next(f for f in report.findings if f.id == "gpus_too_few")
    assert finding.data == {"visible": 4, "usable": 4, "needed": 5}  # 1 policy x 4 + 1 rollout
    assert finding.evidence[0].file == "preflight:gpus_too_few" and finding.evidence[0].line is None
    assert report.exit_code == 2
    small = _run(world, _spec(world), gpus=GpuInventory((48 * GB,) * 8, "test"))
    assert "less than 80 GB" in next(f for f in small.findings if f.id == "gpus_too_few").evidence[0].text
    blind = _run(world, _spec(world), gpus="no NVML and no nvidia-smi on PATH")
    assert "gpus_too_few" not in _ids(blind)
    assert {c.id: c.state.value for c in blind.checks}["gpus_too_few"] == "blind"


def test_disk_token_binaries_and_checkout(world: World) -> None:
    spec = _spec(world, reward_mode="joint")
    env = {"HF_HOME": str(world.root / "hfhome"), "UV_CACHE_DIR": str(world.root / "uvcache")}
    report = _run(world, spec, free=40 * GB, binaries={"git"}, env=env)
    assert {"disk_space_low", "hf_token_missing", "binary_missing"} <= _ids(report)
    disk = next(f for f in report.findings if f.id == "disk_space_low")
    # one filesystem: 22 GB model + 90 GB joint data + 22 GB export + 12 GB of wheels in the uv cache (env)
    assert disk.evidence[0].text.startswith("40.0 GB free, about 146 GB needed on one filesystem: 22 GB in ")
    assert f"90 GB in {world.root / 'reasoning'} for joint PAI reasoning data (download)" in disk.evidence[0].text
    assert f"12 GB in {world.root / 'uvcache'} for the uv cache" in disk.evidence[0].text
    missing = next(f for f in report.findings if f.id == "binary_missing").data["missing"]
    assert missing == ["uv", "redis-server", "nvidia-smi"]
    (world.root / "hfhome" / "token").write_text("hf_fromfile_123")  # `hf auth login` writes this
    report = _run(world, spec, env={"HF_HOME": str(world.root / "hfhome")})
    assert "hf_token_missing" not in _ids(report)
    gone = _spec(world, alpamayo_version="1.5")
    gone.paths.workspace = world.root / "nowhere"
    assert "recipe_checkout_missing" in _ids(_run(world, gone))


def test_only_the_selected_stages_are_checked(world: World) -> None:
    report = _run(world, _spec(world), gpus=GpuInventory((), "test"), binaries=set(), env={}, free=0, stages=["curate"])
    assert report.findings == []  # curating needs no GPU, no token, no uv, no large disk


def test_joint_training_without_grader_and_wandb_key(world: World) -> None:
    spec = _spec(world, reward_mode="joint", wandb=True)
    report = _run(world, spec, stages=["configure", "train"])
    assert {"grader_missing", "wandb_key_missing", "missing_env_var"} <= _ids(report)
    env_var = next(f for f in report.findings if f.id == "missing_env_var")
    assert env_var.data["name"] == "ALPAMAYO_PAI_REASONING_LOCAL_DIR"
    with_key = _run(world, spec, stages=["grader", "train"], env={"HF_TOKEN": "hf_x1234567", "WANDB_API_KEY": "k" * 40})
    assert not {"grader_missing", "wandb_key_missing"} & _ids(with_key)


def test_a_wandb_login_in_the_netrc_file_is_a_key_for_both_pipelines(world: World) -> None:
    """``wandb login`` writes the key to the netrc file, where W&B reads it: not wandb_key_missing,
    and the key is never shown."""
    netrc = world.root / "netrc"
    netrc.write_text("machine api.wandb.ai\n  login user\n  password " + "s3cr3t" * 7 + "\n")
    env = {"HF_TOKEN": "hf_abcdefgh", "HF_HOME": str(world.root / "hfhome"), "NETRC": str(netrc)}
    open_loop = _run(world, _spec(world, wandb=True), stages=["train"], env=env)
    alpagym = parse_spec(world.alpagym_spec_text("[wandb]\nenabled = true\n"), base=world.root)
    closed_loop = preflight(alpagym, stages=["train"], target="run.toml", environ=env, gpu_probe=lambda: "none",
                            disk_free=lambda _p: 10**15, which=lambda name: None, hub=False)
    for report in (open_loop, closed_loop):
        assert "wandb_key_missing" not in _ids(report)
        assert "s3cr3t" not in report.model_dump_json()
    check = next(c for c in open_loop.checks if c.id == "wandb_key_missing")
    assert check.note == f"W&B credentials in {netrc}"
    netrc.write_text("machine example.com\n")
    missing = preflight(alpagym, stages=["train"], target="run.toml", environ=env, gpu_probe=lambda: "none",
                        disk_free=lambda _p: 10**15, which=lambda name: None, hub=False)
    finding = next(f for f in missing.findings if f.id == "wandb_key_missing")
    assert finding.evidence[0].text == f"WANDB_API_KEY is not set and {netrc} has no api.wandb.ai entry"


def test_every_preflight_id_is_in_the_catalog(world: World) -> None:
    report = _run(
        world,
        _spec(world, reward_mode="joint", wandb=True),
        gpus=GpuInventory((), "t"),
        free=0,
        binaries=set(),
        env={},
        stages=["env", "convert", "download", "train", "export"],
    )
    assert report.findings and all("preflight" in CATALOG[f.id].origins for f in report.findings)


@pytest.mark.slow  # a1x-tui in subprocesses
def test_preflight_command_prints_the_report(world: World) -> None:
    spec_path = world.write_spec()
    done = world.cli("preflight", "--spec", str(spec_path), "--only", "curate", "--format", "json")
    assert done.returncode == 0, done.stderr
    report = Report.model_validate(json.loads(done.stdout))
    assert report.kind == "preflight" and report.exit_code == 0
    bad = world.cli("preflight", "--spec", str(world.root / "missing.toml"))
    assert bad.returncode == 3 and "missing.toml" in bad.stderr and "Traceback" not in bad.stderr
    text = world.cli("preflight", "--spec", str(spec_path), "--only", "export")
    assert text.returncode == 0 and text.stdout.startswith("PREFLIGHT OK")


def test_run_refuses_to_start_when_preflight_is_critical(world: World) -> None:
    spec = world.write_spec()
    env = dict(world.env)
    env.pop("HF_TOKEN")
    world.env = env
    done = world.cli("run", "--spec", str(spec), "--run-dir", str(world.run_dir), "--only", "convert")
    assert done.returncode == 2
    assert "hf_token_missing" in done.stdout and "--skip-preflight" in done.stderr
    assert not (world.run_dir / "state.json").exists()  # nothing started, nothing downloaded
    assert not Path(world.root / "calls.jsonl").exists()


DISPATCH = """
[cluster]
method = "cosmos-dispatch"
partition = "batch"
account = "acct"
container = "/lustre/images/cosmos.sqsh"
output_root = "/lustre/jobs"
repo_root = "/lustre/cosmos-rl"
"""


def test_a_cosmos_dispatch_run_names_each_path_its_containers_cannot_see(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    from a1x_supervisor.slurm import container

    # This node as a login node: /lustre is there, HOME on NFS (a1x_supervisor/slurm/container.py asks).
    probe = container.MountProbe(exists=lambda p: str(p).startswith("/lustre") or p.exists(), fs_type=lambda _p: "nfs")
    monkeypatch.setattr(container, "DEFAULT_PROBE", probe)
    spec = _spec(world, compute="cluster", alpamayo_version="1", cluster=DISPATCH)
    env = {"HF_TOKEN": "hf_abcdefgh", "HF_HOME": str(world.root / "hfhome"), "HOME": str(world.root)}
    report = _run(world, spec, stages=["train"], binaries={"python", "scontrol"}, env=env)
    finding = next(f for f in report.findings if f.id == "container_path_unmounted")
    assert report.exit_code == 2 and finding.severity.value == "critical"
    r = world.root
    only = " (747d1bd's template mounts only /lustre at its own path)"
    assert [e.text for e in finding.evidence] == [
        # Alpamayo 1: the configure stage's copy of the entry in the new run's config/ (under <workspace>/runs)
        f"the entry script: {world.ws}/runs/<run>/config/alpamayo_cosmos_rl_post_training_entry.py is not mounted "
        f"in the container{only}",
        f"policy.model_name_or_path (the converted model): {r / 'model'} is not mounted in the container{only}",
        f"train.output_dir (checkpoints): {r / 'outputs'} is not mounted in the container{only}",
        f"ALPAMAYO_PAI_LOCAL_DIR (the PAI data): {r / 'pai'} is not mounted in the container{only}",
        f"the Hugging Face cache (HF_HOME; the VLM's processor files): {r / 'hfhome' / 'hub'} is not mounted in "
        f"the container{only}",
        # 747d1bd's template mounts ~/.cache/huggingface whether it exists or not (docs/reference/cosmos-rl.md §11.2)
        f"747d1bd's template (the Hugging Face cache) mounts {r}/.cache/huggingface whether it exists or not, and it "
        "does not exist on this node: pyxis fails every step of the job on a missing mount source",
    ]
    assert finding.action is not None and finding.action.startswith("move them under /lustre")
    # HEAD takes a mounts list, which replaces its default /lustre (output_root is there): with both, it passes.
    head = DISPATCH + f'cosmos_rev = "head"\nmounts = ["{r}:{r}"]\n'
    half = _run(world, _spec(world, compute="cluster", cluster=head), stages=["train"], env=env)
    lost = next(f for f in half.findings if f.id == "container_path_unmounted")
    assert [e.text for e in lost.evidence] == [
        "output_root (train.output_dir goes under it): /lustre/jobs is not mounted in the container (needs the "
        "mount /lustre/jobs:/lustre/jobs)"
    ]
    assert lost.action == f'set [cluster] mounts = ["{r}:{r}", "/lustre/jobs:/lustre/jobs"] (it replaces the default)'
    head = head.replace(f'mounts = ["{r}:{r}"]', f'mounts = ["/lustre:/lustre", "{r}:{r}"]')
    fine = _run(world, _spec(world, compute="cluster", cluster=head), stages=["train"], env=env)
    assert "container_path_unmounted" not in _ids(fine)
    assert {c.id: c.state.value for c in fine.checks}["container_path_unmounted"] == "ok"


def test_a_cluster_job_that_cannot_checkpoint_before_its_time_limit(world: World) -> None:
    # The cluster TOML saves every 50 steps; at 60 s a step that is 50 min, but a 30 min job is signalled
    # 20 min before its end and requeued: no part would ever save a checkpoint.
    cluster = '\n[cluster]\nmethod = "sbatch"\ntime = "00:30:00"\nstep_time_s = 60\n'
    report = _run(world, _spec(world, compute="cluster", cluster=cluster), stages=["train"], binaries={"sbatch"})
    finding = next(f for f in report.findings if f.id == "checkpoint_after_time_limit")
    assert finding.severity.value == "critical" and report.exit_code == 2
    assert finding.evidence[0].file == "preflight:checkpoint_after_time_limit"
    assert finding.action == "set train.ckpt.save_freq = 5 (two checkpoints per part), or raise [cluster] time"
    assert [(f.path, f.proposed) for f in finding.fixes] == [("train.ckpt.save_freq", 5)]
    longer = _spec(world, compute="cluster", cluster=cluster.replace("00:30:00", "08:00:00"))
    fine = _run(world, longer, stages=["train"])
    assert "checkpoint_after_time_limit" not in _ids(fine)
    assert {c.id: c.note for c in fine.checks}["checkpoint_after_time_limit"] == (
        "a part trains 7 h 40 min (08:00:00 minus the 1200 s pre-timeout signal); "
        "save_freq 50 x 60 s = a checkpoint every 50 min"
    )


def test_a_reused_model_whose_weight_links_dangle_and_a_dataset_left_empty(world: World) -> None:
    """A run from `configure` on: the converted model and the dataset of earlier runs are reused as found."""
    spec = _spec(world)
    model = spec.paths.model_dir
    model.mkdir(parents=True, exist_ok=True)
    (model / "model-00001-of-00002.safetensors").symlink_to(world.root / "hf-cache-cleaned" / "blob1")
    spec.data_dir.mkdir(parents=True, exist_ok=True)  # what snapshot_download leaves after a Hub failure
    report = _run(world, spec, stages=["configure", "train"])
    dangling = next(f for f in report.findings if f.id == "dangling_model_symlinks")
    assert dangling.severity.value == "critical"
    assert "model-00001-of-00002.safetensors is a dangling symlink" in dangling.evidence[0].text
    empty = next(f for f in report.findings if f.id == "download_empty")
    assert str(spec.data_dir) in empty.explanation and "--from download" in (empty.action or "")
    # the same run that converts and downloads again has nothing to say about them
    again = _run(world, spec, stages=["download", "convert", "configure", "train"])
    assert not {"dangling_model_symlinks", "download_empty"} & _ids(again)


def test_without_pyarrow_preflight_says_so_before_anything_downloads(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    import a1x_supervisor.preflight as module

    monkeypatch.setattr(module, "parquet_missing", lambda: True)
    motion = _run(world, _spec(world))
    assert any("curate stage's check reads parquet files" in n and "a1x-tui[data]" in n for n in motion.notes)
    assert not any("parquet" in n for n in _run(world, _spec(world), stages=["env", "convert"]).notes)
    monkeypatch.setattr(module, "parquet_missing", lambda: False)
    assert not any("parquet" in n for n in _run(world, _spec(world)).notes)
