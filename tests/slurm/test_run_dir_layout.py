"""``discover`` and ``--check`` on a run directory of ours whose train stage ran on Slurm: the logs
are read from ``<run>/slurm`` (the Cosmos-RL Slurm layout, its ``latest_run``), with the stage logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from a1x_diagnostics.engine import check
from a1x_diagnostics.parsing import LayoutError, discover

PREFIX = "[cosmos] 2025-01-01 00:00:00,000 - cosmos - INFO - "
OOM = (
    "[rank0]:Traceback (most recent call last):\n"
    '[rank0]:  File "/opt/cosmos_rl/policy/train.py", line 42, in <module>\n'
    "[rank0]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
    "of 79.10 GiB of which 1.02 GiB is free.\n"
)


def _run_dir(root: Path, compute: str, *, runs: tuple[str, ...] = (), logs_ts: bool = False) -> Path:
    run = root / "run"
    (run / "stages").mkdir(parents=True)
    (run / "run.toml").write_text(f'compute = "{compute}"\n')
    (run / "stages" / "train.log").write_text("2025-01-01T00:00:00.000+00:00 [a1x-tui] slurm: submitted job 7\n")
    (run / "logs").mkdir()
    if logs_ts:
        (run / "logs" / "logs_20250101-000000").mkdir()
        (run / "logs" / "logs_20250101-000000" / "controller.log").write_text(f"{PREFIX}Step: 1/4\n")
    slurm = run / "slurm"
    slurm.mkdir()
    for name in runs:
        (slurm / name).mkdir(parents=True)
        (slurm / name / "controller.err").write_text(f"{PREFIX}Step: 1/4, Reward Mean: 0\n")
        (slurm / name / "policy_0.err").write_text(f"{PREFIX}POLICY Replica started\n")
    if runs:
        (slurm / "latest_run").symlink_to(runs[-1])
        (slurm / "slurm_7.log").write_text("[2025-01-01 12:00:00.000 AM UTC][a1x-tui-sbatch]: Job 7 started\n")
    return run


def _names(layout_files: list) -> set[str]:  # type: ignore[type-arg]
    return {src.path for _, src in layout_files}


def test_a_cluster_run_is_read_from_its_slurm_layout(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, "cluster", runs=("part_0/run_0", "part_0/run_1"))
    layout = discover(run)
    assert (layout.kind, layout.run_name) == ("run_dir", "part_0/run_1")
    assert layout.available_runs == ["part_0/run_0", "part_0/run_1"]
    assert _names(layout.files) == {
        "slurm/part_0/run_1/controller.err",
        "slurm/part_0/run_1/policy_0.err",
        "slurm/slurm_7.log",
        "stages/train.log",
    }
    earlier = discover(run, "part_0/run_0")
    assert "slurm/part_0/run_0/controller.err" in _names(earlier.files)


def test_the_folders_decide_when_run_toml_says_local(tmp_path: Path) -> None:
    slurm_only = _run_dir(tmp_path / "a", "local", runs=("part_0/run_0",))
    assert discover(slurm_only).run_name == "part_0/run_0"  # logs/ holds no logs_<ts>
    both = _run_dir(tmp_path / "b", "local", runs=("part_0/run_0",), logs_ts=True)
    assert discover(both).run_name == "logs_20250101-000000"


def test_a_job_that_has_not_started_shows_the_stage_logs(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, "cluster")
    layout = discover(run)
    assert layout.run_name is None and _names(layout.files) == {"stages/train.log"}
    with pytest.raises(LayoutError, match=r"--run part_0/run_0: the SLURM job has not written part_N/run_M yet$"):
        discover(run, "part_0/run_0")


def test_check_on_a_cluster_run_raises_findings_from_a_job_step(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, "cluster", runs=("part_0/run_0",))
    with open(run / "slurm" / "part_0" / "run_0" / "policy_0.err", "a") as fh:
        fh.write(OOM)
    report = check(run)
    oom = [f for f in report.findings if f.id == "policy_oom"]
    assert oom, [f.id for f in report.findings]
    assert any(e.file.endswith("slurm/part_0/run_0/policy_0.err") for e in oom[0].evidence)
