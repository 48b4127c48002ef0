"""cosmos-dispatch: what the job's containers see (Cosmos-RL's templates, docs/reference/cosmos-rl.md §11.1 and §11.2).

Every path the job opens must be visible inside the container at the same path; at 747d1bd only
``/lustre`` is mounted that way, at HEAD the ``mounts`` list (default ``/lustre:/lustre/``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from slurm_helpers import cluster_spec as spec
from slurm_helpers import recipe

from a1x_diagnostics.findings import Severity
from a1x_supervisor.slurm import CosmosRev, NodePlan, Packing, SlurmSpecError, dispatch_argv, plan_nodes
from a1x_supervisor.slurm.container import (
    MountProbe,
    NeededPath,
    describe,
    filesystem_type,
    job_mounts,
    mount_problems,
    unmounted,
)
from a1x_supervisor.slurm.plan import ConfigSource
from a1x_supervisor.slurm.submit import SubmissionRefused, prepare_dispatch

HOME = {"HOME": "/home/ana"}


def needed(**paths: str) -> list[NeededPath]:
    return [NeededPath(what, Path(p), is_file=what == "entry") for what, p in paths.items()]


def test_at_747d1bd_only_lustre_is_seen_at_its_own_path() -> None:
    mounts = job_mounts(spec(), environ=HOME)
    assert [(m.source, m.target) for m in mounts] == [
        ("/lustre", "/lustre/"),
        ("/home/ana/.cache/huggingface", "/root/.cache/huggingface"),
        ("/home/ana/.cache/cosmos_rl/tmp_config", "/opt/tmp_config"),
        ("/lustre/cosmos-rl", "/opt/cosmos-rl"),
    ]
    paths = needed(
        entry="/lustre/alpamayo-recipes/recipes/alpamayo1_x_rl/models/reasoning_vla/entry.py",
        model="/home/ana/alpamayo_model_converted_from_hf",
        hf_cache="/home/ana/.cache/huggingface/hub",
        data="/lustre/PAI_mini",
    )
    missing = unmounted(paths, mounts)
    # The HF cache is mounted, but at /root/.cache/huggingface: not at the path HF_HOME names.
    assert [m.needed.what for m in missing] == ["model", "hf_cache"]
    explanation, lines, action, data = describe(spec(), missing)
    # Each line names the mount it needs: at 747d1bd, the only one at its own path is /lustre.
    only = " (747d1bd's template mounts only /lustre at its own path)"
    assert lines == [
        f"model: /home/ana/alpamayo_model_converted_from_hf is not mounted in the container{only}",
        f"hf_cache: /home/ana/.cache/huggingface/hub is not mounted in the container{only}",
    ]
    assert "move them under /lustre" in action and 'cosmos_rev = "head"' in action
    assert "--no-container-mount-home" in explanation and "docs/reference/cosmos-rl.md §11.2" in explanation
    assert data["mount"] == ["/home/ana/alpamayo_model_converted_from_hf", "/home/ana/.cache/huggingface/hub"]


def test_at_head_the_mounts_list_decides_and_the_fix_names_the_folders() -> None:
    s = spec(cosmos_rev=CosmosRev.HEAD, mounts=["/lustre:/lustre", "/scratch"])
    paths = needed(entry="/home/ana/recipes/entry.py", model="/scratch/model", out="relative/outputs")
    missing = unmounted(paths, job_mounts(s, environ=HOME))
    assert [(m.needed.what, m.why) for m in missing] == [("entry", "not under a mount"), ("out", "relative")]
    _, lines, action, _ = describe(s, missing)
    assert lines == [
        "entry: /home/ana/recipes/entry.py is not mounted in the container "
        "(needs the mount /home/ana/recipes:/home/ana/recipes)",
        "out: relative/outputs is relative (the template starts every step in the cosmos_rl folder)",
    ]
    # a file needs its folder mounted; the list replaces dispatch_job.py's default, so it is given whole
    assert action == (
        'set [cluster] mounts = ["/lustre:/lustre", "/scratch", "/home/ana/recipes:/home/ana/recipes"] '
        "(it replaces the default); give absolute paths"
    )


def test_a_link_out_of_the_mounts_is_followed(tmp_path: Path) -> None:
    shared, home = tmp_path / "shared", tmp_path / "home"
    (home / "blobs").mkdir(parents=True)
    (home / "blobs" / "abc").write_text("w")
    (shared / "model").mkdir(parents=True)
    (shared / "model" / "model-00001-of-00001.safetensors").symlink_to(home / "blobs" / "abc")
    (shared / "link").symlink_to(home)
    s = spec(cosmos_rev=CosmosRev.HEAD, mounts=[f"{shared}:{shared}"])
    from a1x_supervisor.slurm.container import model_link_targets

    paths = [NeededPath("model", shared / "model"), NeededPath("elsewhere", shared / "link")]
    paths += [NeededPath("weights", t) for t in model_link_targets(shared / "model")]
    missing = unmounted(paths, job_mounts(s, environ={"HOME": str(home)}))
    assert [m.line() for m in missing] == [
        f"elsewhere: {shared / 'link'} (a link to {home}) is not mounted in the container",
        f"weights: {home / 'blobs'} is not mounted in the container",
    ]


def test_a_relative_entry_script_is_refused_because_the_template_changes_folder() -> None:
    s = spec()
    plan = plan_nodes(recipe("recipe_cluster_80.toml"), gpus_per_node=8, packing=Packing.DISPATCH)
    assert isinstance(plan, NodePlan)
    with pytest.raises(SlurmSpecError, match="is relative: the job template runs it from the cosmos_rl package folder"):
        dispatch_argv(s, plan, config_path=Path("/lustre/cfg.toml"), launcher="recipes/x/entry.py")
    # a module name is run with python -m there, which is fine
    cmd = dispatch_argv(s, plan, config_path=Path("/lustre/cfg.toml"), launcher="cosmos_rl.dispatcher.run_web_panel")
    assert cmd.argv[-1] == "cosmos_rl.dispatcher.run_web_panel"


# This node as the tests see it: every folder exists, HOME is on NFS.
SHARED = MountProbe(exists=lambda _p: True, fs_type=lambda _p: "nfs4")


def test_prepare_dispatch_refuses_a_job_whose_paths_its_containers_cannot_see() -> None:
    data = recipe("recipe_cluster_80.toml")
    source = ConfigSource("/lustre/cfg.toml")
    entry = "/lustre/recipes/entry.py"
    ok = prepare_dispatch(
        spec(), data, config_path=Path("/lustre/cfg.toml"), launcher=entry, source=source,
        needed=needed(entry=entry, model="/lustre/model"), environ=HOME, probe=SHARED,
    )
    assert ok.argv[-1] == entry
    with pytest.raises(SubmissionRefused) as refused:
        prepare_dispatch(
            spec(), data, config_path=Path("/lustre/cfg.toml"), launcher=entry, source=source,
            needed=needed(entry=entry, model="/home/ana/model"), environ=HOME, probe=SHARED,
        )
    assert str(refused.value) == (
        "/lustre/cfg.toml: not submitted: container_path_unmounted: 1 path(s) or mount(s) of the job cannot be "
        "seen in its container (model: /home/ana/model is not mounted in the container (747d1bd's template "
        "mounts only /lustre at its own path))"
    )
    finding = refused.value.findings[-1]
    assert finding.id == "container_path_unmounted" and finding.severity is Severity.CRITICAL
    assert finding.evidence[0].file == "/lustre/cfg.toml"


def test_mounts_the_template_makes_whatever_exists_and_a_home_on_local_disk_are_refused() -> None:
    # 747d1bd mounts /lustre and ~/.cache/huggingface unconditionally (a missing source fails the step in
    # pyxis), and writes the processed TOML under the submitting user's HOME, which every compute node then
    # mounts from its own disk (docs/reference/cosmos-rl.md §11.2).
    bare = MountProbe(
        exists=lambda p: not str(p).startswith(("/lustre", "/home/ana/.cache")), fs_type=lambda _p: "ext4"
    )
    lines = mount_problems(spec(), job_mounts(spec(), environ=HOME), environ=HOME, probe=bare)
    assert lines == [
        "747d1bd's template mounts /lustre whether it exists or not, and it does not exist on this node: pyxis "
        "fails every step of the job on a missing mount source",
        "747d1bd's template (the Hugging Face cache) mounts /home/ana/.cache/huggingface whether it exists or not, "
        "and it does not exist on this node: pyxis fails every step of the job on a missing mount source",
        "the processed TOML goes to /home/ana/.cache/cosmos_rl/tmp_config (747d1bd's dispatch_job.py writes it "
        "under the submitting user's HOME), on a local ext4 filesystem of this node: every compute node mounts "
        "that folder from its own disk, where the file is not",
    ]
    assert mount_problems(spec(), job_mounts(spec(), environ=HOME), environ=HOME, probe=SHARED) == []
    # HEAD: the mounts list, each source needed; the HF cache only when it exists; the TOML under output_root.
    head = spec(cosmos_rev=CosmosRev.HEAD, mounts=["/lustre:/lustre", "/scratch:/scratch"])
    gone = MountProbe(exists=lambda p: str(p) != "/scratch", fs_type=lambda _p: "ext4")
    assert mount_problems(head, job_mounts(head, environ=HOME), environ=HOME, probe=gone) == [
        "[cluster] mounts mounts /scratch whether it exists or not, and it does not exist on this node: pyxis fails "
        "every step of the job on a missing mount source"
    ]
    _, lines, action, _ = describe(spec(), [], lines)
    assert len(lines) == 3 and "HOME on storage the compute nodes share" in action


def test_the_filesystem_of_a_path_comes_from_the_mount_table(tmp_path: Path) -> None:
    root = filesystem_type(Path("/"))
    assert root is not None and filesystem_type(tmp_path / "not" / "yet") == filesystem_type(tmp_path)
    assert filesystem_type(Path("/proc/self")) == "proc"


def test_a_relative_model_path_that_names_a_workspace_folder_is_not_a_hub_id(tmp_path: Path) -> None:
    from a1x_supervisor.stages.train_cluster import dispatch_needed_paths

    (tmp_path / "models" / "alpamayo").mkdir(parents=True)
    common = dict(entry=tmp_path / "e.py", output_dir=None, grader=None, data_var="X", data_dir=None,
                  environ={"HF_HOME": "/lustre/hf"}, workspace=tmp_path)
    paths = dispatch_needed_paths(spec(), model="models/alpamayo", **common)  # type: ignore[arg-type]
    missing = unmounted(paths, job_mounts(spec(), environ=HOME))
    assert [m.line() for m in missing if m.why == "relative"] == [
        "policy.model_name_or_path (the converted model): models/alpamayo is relative (the template starts every "
        "step in the cosmos_rl folder)"
    ]
    hub = dispatch_needed_paths(spec(), model="nvidia/Alpamayo-R1-10B", **common)  # type: ignore[arg-type]
    assert not any(p.key == "policy.model_name_or_path" for p in hub)  # a Hub id: read through the HF cache
