"""``discover`` / ``classify_file`` on every layout (docs/reference/cosmos-rl.md §3.1, §11.1, §11.2)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from a1x_diagnostics.events import Role
from a1x_diagnostics.parsing import LayoutError, classify_file, discover


def touch(path: Path, text: str = "x\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def replica_files(d: Path, n_policy: int = 1, n_rollout: int = 2) -> None:
    touch(d / "controller.log")
    for i in range(n_policy):
        touch(d / f"policy_{i}.log")
    for i in range(n_rollout):
        touch(d / f"rollout_{i}.log")


def names(layout_files: list) -> list[str]:  # type: ignore[type-arg]
    return [src.path for _, src in layout_files]


@pytest.mark.parametrize(
    ("rel", "role", "index"),
    [
        ("logs_x/controller.log", Role.CONTROLLER, None),
        ("logs_x/policy_3.log", Role.POLICY, 3),
        ("logs_x/rollout_12.log", Role.ROLLOUT, 12),
        ("logs_x/reference_0.log", Role.REFERENCE, 0),
        ("slurm/part_0/run_1/controller.err", Role.CONTROLLER, None),
        ("slurm/part_0/run_1/policy_2.out", Role.POLICY, 2),
        ("slurm/part_0/run_1/rollout_0.err", Role.ROLLOUT, 0),
        ("slurm/slurm_12345.log", Role.LAUNCHER, None),
        ("job/999/rollout/3.err", Role.ROLLOUT, 3),
        ("job/999/controller/0.out", Role.CONTROLLER, None),
        ("run.out", Role.LAUNCHER, None),
        ("launcher.log", Role.LAUNCHER, None),
        ("stages/convert.log", Role.STAGE, None),
    ],
)
def test_classify_file(tmp_path: Path, rel: str, role: Role, index: int | None) -> None:
    src = classify_file(tmp_path / rel, tmp_path)
    assert src is not None and (src.role, src.index, src.path) == (role, index, rel)


@pytest.mark.parametrize("rel", ["run.toml", "config/config.toml", "checkpoints/model_rank_0.pth", "sbatch_script.sh"])
def test_classify_file_rejects_non_logs(tmp_path: Path, rel: str) -> None:
    assert classify_file(tmp_path / rel) is None


def test_log_dir_follows_logs_latest_and_adds_the_launcher_capture(tmp_path: Path) -> None:
    replica_files(tmp_path / "logs_20250609-120000", 1, 1)
    replica_files(tmp_path / "logs_20250610-080000", 2, 1)
    replica_files(tmp_path / "logs_20250611-090000", 1, 3)  # newest by name, but not the latest link
    (tmp_path / "logs_latest").symlink_to("logs_20250610-080000")
    touch(tmp_path / "run.out")
    layout = discover(tmp_path)
    assert layout.kind == "log_dir" and layout.run_name == "logs_20250610-080000"
    assert layout.available_runs == ["logs_20250609-120000", "logs_20250610-080000", "logs_20250611-090000"]
    assert names(layout.files) == [
        "logs_20250610-080000/controller.log",
        "logs_20250610-080000/policy_0.log",
        "logs_20250610-080000/policy_1.log",
        "logs_20250610-080000/rollout_0.log",
        "run.out",
    ]
    assert layout.run_dir == tmp_path / "logs_20250610-080000"


def test_only_launcher_output_next_to_the_runs_is_read_as_a_capture(tmp_path: Path) -> None:
    replica_files(tmp_path / "logs_20250610-080000", 1, 1)
    touch(tmp_path / "launcher.log", "Detected 8 GPUs: 0, 1, 2, 3, 4, 5, 6, 7\n")
    touch(tmp_path / "nohup.out", "anything\n")
    touch(tmp_path / "notes.log", "2025-06-10 injected: SIGKILL to the rollout (OutOfMemoryError)\n")
    layout = discover(tmp_path)
    assert [n for n in names(layout.files) if "/" not in n] == ["launcher.log", "nohup.out"]


def test_log_dir_run_selects_another_run(tmp_path: Path) -> None:
    replica_files(tmp_path / "logs_20250609-120000", 1, 1)
    replica_files(tmp_path / "logs_20250610-080000", 1, 2)
    (tmp_path / "logs_latest").symlink_to("logs_20250610-080000")
    for run in ("logs_20250609-120000", "20250609-120000"):
        layout = discover(tmp_path, run)
        assert layout.run_name == "logs_20250609-120000" and len(layout.files) == 3
    with pytest.raises(LayoutError) as e:
        discover(tmp_path, "logs_20990101-000000")
    assert "no run 'logs_20990101-000000'" in str(e.value) and "logs_20250609-120000" in str(e.value)
    assert "\n" not in str(e.value)


def test_log_dir_without_link_or_with_a_dangling_link_takes_the_newest(tmp_path: Path) -> None:
    replica_files(tmp_path / "logs_20250609-120000")
    replica_files(tmp_path / "logs_20250611-090000")
    assert discover(tmp_path).run_name == "logs_20250611-090000"
    (tmp_path / "logs_latest").symlink_to("logs_20990101-000000")
    assert discover(tmp_path).run_name == "logs_20250611-090000"


def test_empty_logs_ts_with_launcher_capture(tmp_path: Path) -> None:
    (tmp_path / "logs_20250609-120000").mkdir()
    (tmp_path / "logs_latest").symlink_to("logs_20250609-120000")
    touch(tmp_path / "cosmos.out")
    layout = discover(tmp_path)
    assert names(layout.files) == ["cosmos.out"] and layout.files[0][1].role is Role.LAUNCHER


def test_logs_ts_and_replica_dir(tmp_path: Path) -> None:
    ts = tmp_path / "logs_20250609-120000"
    replica_files(ts)
    layout = discover(ts)
    assert (layout.kind, layout.run_name, names(layout.files)[0]) == ("logs_ts", "logs_20250609-120000",
                                                                      "controller.log")
    plain = tmp_path / "copied"
    replica_files(plain, 0, 1)
    layout = discover(plain)
    assert layout.kind == "replica_dir" and layout.run_name is None and len(layout.files) == 2
    with pytest.raises(LayoutError, match="single run"):
        discover(plain, "logs_20250609-120000")
    captures = tmp_path / "captures"
    touch(captures / "cosmos-rl.log")
    touch(captures / "README.md")
    assert names(discover(captures).files) == ["cosmos-rl.log"]


def test_single_file(tmp_path: Path) -> None:
    f = touch(tmp_path / "slurm-4242.out")
    layout = discover(f)
    assert layout.kind == "single_file" and layout.files == [(f, layout.files[0][1])]
    assert layout.files[0][1].role is Role.LAUNCHER and layout.run_dir is None
    r = touch(tmp_path / "rollout_3.log")
    assert discover(r).files[0][1].index == 3


def slurm_job(root: Path) -> Path:
    slurm = root / "cosmos_job_20250609120000" / "slurm"
    for part, run in (("part_0", "run_0"), ("part_0", "run_1"), ("part_1", "run_0")):
        d = slurm / part / run
        for n in ("controller.out", "controller.err", "policy_0.out", "policy_0.err", "rollout_0.out", "rollout_1.err"):
            touch(d / n)
        touch(d / "remaining-retries", "2\n")
    touch(slurm / "slurm_777.log")
    touch(slurm / "sbatch_script.sh")
    (slurm / "latest_run").symlink_to("part_1/run_0")
    (slurm / "latest_part").symlink_to("part_1")
    return slurm.parent


def test_slurm_job_follows_latest_run(tmp_path: Path) -> None:
    job = slurm_job(tmp_path)
    for target in (job, job / "slurm"):
        layout = discover(target)
        assert layout.kind == "slurm_run" and layout.run_name == "part_1/run_0"
        assert layout.available_runs == ["part_0/run_0", "part_0/run_1", "part_1/run_0"]
        assert names(layout.files) == [
            "slurm/part_1/run_0/controller.err",
            "slurm/part_1/run_0/controller.out",
            "slurm/part_1/run_0/policy_0.err",
            "slurm/part_1/run_0/policy_0.out",
            "slurm/part_1/run_0/rollout_0.out",
            "slurm/part_1/run_0/rollout_1.err",
            "slurm/slurm_777.log",
        ]
    assert discover(job, "part_0/run_1").run_name == "part_0/run_1"
    assert discover(job / "slurm" / "part_0" / "run_0").run_name == "part_0/run_0"
    with pytest.raises(LayoutError, match="no run 'part_9/run_0'"):
        discover(job, "part_9/run_0")


def test_747d1bd_slurm_layout(tmp_path: Path) -> None:
    for jobid in ("1001", "1002"):
        for role in ("controller", "policy", "rollout"):
            touch(tmp_path / "my_job" / jobid / role / "0.out")
            touch(tmp_path / "my_job" / jobid / role / "0.err")
        touch(tmp_path / "my_job" / jobid / "rollout" / "1.err")
        touch(tmp_path / jobid / "x.out")  # sbatch's own output, in <output-root>/<jobid>/
    layout = discover(tmp_path / "my_job")
    assert layout.kind == "slurm_run" and layout.run_name == "1002" and layout.available_runs == ["1001", "1002"]
    roles = [(s.role, s.index) for _, s in layout.files]
    assert roles == [(Role.CONTROLLER, None), (Role.CONTROLLER, None), (Role.POLICY, 0), (Role.POLICY, 0),
                     (Role.ROLLOUT, 0), (Role.ROLLOUT, 0), (Role.ROLLOUT, 1), (Role.LAUNCHER, None)]
    assert discover(tmp_path / "my_job", "1001").run_name == "1001"
    assert discover(tmp_path / "my_job" / "1001").run_name == "1001"


def test_our_run_dir(tmp_path: Path) -> None:
    touch(tmp_path / "run.toml", "[run]\n")
    replica_files(tmp_path / "logs" / "logs_20250609-120000")
    (tmp_path / "logs" / "logs_latest").symlink_to("logs_20250609-120000")
    touch(tmp_path / "logs" / "launcher.log", "Controller is ready at localhost:8000\n")
    touch(tmp_path / "stages" / "convert.log")
    touch(tmp_path / "stages" / "train.log")
    touch(tmp_path / "stages" / "notes.txt")
    layout = discover(tmp_path)
    assert layout.kind == "run_dir" and layout.run_name == "logs_20250609-120000"
    assert names(layout.files)[-3:] == ["logs/launcher.log", "stages/convert.log", "stages/train.log"]
    assert [s.role for _, s in layout.files][-2:] == [Role.STAGE, Role.STAGE]


@pytest.mark.parametrize("case", ["missing", "empty_dir", "dangling_link", "not_a_run", "run_on_file"])
def test_bad_paths_give_one_line_errors(tmp_path: Path, case: str) -> None:
    target = tmp_path / "x"
    run = None
    if case == "empty_dir":
        target.mkdir()
    elif case == "dangling_link":
        target.symlink_to(tmp_path / "nowhere")
    elif case == "not_a_run":
        touch(target / "notes.md")
        touch(target / "model.safetensors")
    elif case == "run_on_file":
        touch(target)
        run = "logs_20250609-120000"
    with pytest.raises(LayoutError) as e:
        discover(target, run)
    msg = str(e.value)
    assert str(target) in msg and "\n" not in msg and len(msg) < 300


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads everything")
def test_unreadable_folder(tmp_path: Path) -> None:
    d = tmp_path / "logs_20250609-120000"
    replica_files(d)
    d.chmod(0)
    try:
        with pytest.raises(LayoutError, match="not readable"):
            discover(d)
    finally:
        d.chmod(0o755)
