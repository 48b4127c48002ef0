"""The checkpoint interval against the time limit: a job that reaches its limit keeps only its last checkpoint."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from slurm_helpers import MOTION_ENTRY, recipe, with_values

from a1x_supervisor.slurm import ClusterSpec, CosmosRev, SbatchJob, SubmissionRefused, prepare_sbatch
from a1x_supervisor.slurm.walltime import slurm_seconds, wall_time_problems


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 5400), ("1:30", 90), ("04:00:00", 14400), ("2-00:00:00", 172800), ("1-12", 129600), ("1-0:30", 88200)],
)
def test_slurm_time_formats(text: str, seconds: int) -> None:
    assert slurm_seconds(text) == seconds


def sbatch(**kw: object) -> ClusterSpec:
    return ClusterSpec.model_validate({"method": "sbatch", **kw})


def test_a_checkpoint_interval_longer_than_a_part_is_refused_with_the_value_that_fits() -> None:
    # 50 steps x 60 s = 50 min per checkpoint; a 30 min job is signalled 20 min before its end: 10 min.
    problems, _ = wall_time_problems(sbatch(time="00:30:00", step_time_s=60), recipe())
    (p,) = problems
    assert p.key == "train.ckpt.save_freq"
    assert "saves a checkpoint every 50 min, but a part trains only 10 min before it is signalled" in p.explanation
    assert p.action == "set train.ckpt.save_freq = 5 (two checkpoints per part), or raise [cluster] time"
    assert [(f.path, f.current, f.proposed) for f in p.fixes] == [("train.ckpt.save_freq", 50, 5)]
    fine, note = wall_time_problems(sbatch(time="04:00:00", step_time_s=60), recipe())
    assert fine == [] and note == (
        "a part trains 3 h 40 min (04:00:00 minus the 1200 s pre-timeout signal); "
        "save_freq 50 x 60 s = a checkpoint every 50 min"
    )


def test_a_requeued_job_without_checkpoints_or_with_a_signal_before_its_start() -> None:
    off = with_values(recipe(), train__ckpt__enable_checkpoint=False)
    (p,) = wall_time_problems(sbatch(time="04:00:00"), off)[0]
    assert p.key == "train.ckpt.enable_checkpoint" and "starts again from step 0" in p.explanation
    assert [(f.path, f.proposed) for f in p.fixes] == [("train.ckpt.enable_checkpoint", True)]
    assert wall_time_problems(sbatch(time="04:00:00", autoresume=False), off)[0] == []  # never requeued
    (early,) = wall_time_problems(sbatch(time="15", pre_timeout_signal_s=1200), recipe())[0]
    assert early.evidence == "time = 15, pre_timeout_signal_s = 1200" and "no part trains a step" in early.explanation


def test_what_is_not_known_is_not_judged() -> None:
    problems, note = wall_time_problems(sbatch(), recipe())
    assert problems == [] and note.startswith("no time in [cluster]")
    assert wall_time_problems(sbatch(time="UNLIMITED"), recipe())[0] == []
    assert "not compared" in wall_time_problems(sbatch(time="04:00:00"), recipe())[1]  # no step_time_s


def test_747d1bd_dispatch_has_no_requeue_and_a_4_hour_default() -> None:
    pinned = ClusterSpec.model_validate({"method": "cosmos-dispatch", "step_time_s": 400})
    (p,) = wall_time_problems(pinned, recipe())[0]  # 50 x 400 s = 5 h 33 min > 4 h, no pre-timeout signal
    assert "a part trains only 4 h 00 min before the job ends at its time limit" in p.explanation
    # HEAD requeues, 1200 s before its 4 h default: 50 x 250 s = 3 h 28 min still fits in 3 h 40 min.
    head = pinned.model_copy(update={"cosmos_rev": CosmosRev.HEAD, "step_time_s": 250})
    assert wall_time_problems(head, recipe())[0] == []


def test_the_submission_is_refused(tmp_path: Path) -> None:
    toml = tmp_path / "r.toml"
    toml.write_text("[train]\nresume = false\n")
    job = SbatchJob(run_dir=tmp_path, config_path=toml, entry=MOTION_ENTRY, workdir=tmp_path, venv=tmp_path)
    spec = sbatch(time="00:30:00", step_time_s=60, env={"ALPAMAYO_PAI_LOCAL_DIR": "/d"})
    with pytest.raises(SubmissionRefused, match=re.escape("not submitted: checkpoint_after_time_limit")) as refused:
        prepare_sbatch(spec, recipe(), job, environ={})
    finding = refused.value.findings[-1]
    assert finding.id == "checkpoint_after_time_limit" and finding.severity.value == "critical"
    assert finding.evidence[0].text.startswith("train.ckpt.save_freq = 50; step_time_s = 60; a part trains 10 min")
