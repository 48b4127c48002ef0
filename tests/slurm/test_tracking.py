"""Parsers over the text of real Slurm commands (recorded from Slurm 22.05.8 by record_outputs.sh)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from slurm_helpers import ReplayRunner, recorded, recorded_jobs

from a1x_diagnostics.parsing import parse_monitor_log, pinned_role_logs, role_logs
from a1x_diagnostics.parsing import read_slurm_layout as read_layout
from a1x_supervisor.slurm.tracking import (
    CommandResult,
    JobInfo,
    SlurmParseError,
    accounting_disabled,
    invalid_job,
    job_id_from_dispatch_output,
    parse_sacct,
    parse_sbatch,
    parse_scontrol_jobs,
    parse_squeue_json,
    parse_squeue_text,
    query_job,
    run_dir_from_dispatch_output,
)

JOBS = recorded_jobs()


def by_id(jobs: list[JobInfo]) -> dict[str, JobInfo]:
    return {j.job_id: j for j in jobs}


def fate(jobs: list[JobInfo], name: str) -> JobInfo:
    return by_id(jobs)[JOBS[name]]


def test_sbatch_job_ids_from_parsable_plain_and_cluster_forms() -> None:
    assert parse_sbatch(recorded("sbatch_parsable")).job_id == JOBS["running"]
    assert parse_sbatch(recorded("sbatch_plain")).job_id == JOBS["completed"]
    assert parse_sbatch("4242;a1xci\n") == parse_sbatch("Submitted batch job 4242 on cluster a1xci")
    assert parse_sbatch("4242;a1xci\n").cluster == "a1xci"
    with pytest.raises(SlurmParseError, match="Invalid generic resource"):
        parse_sbatch(recorded("sbatch_rejected"))


def test_dispatch_output_gives_the_job_and_the_run_dir() -> None:
    text = (
        "2026-01-01 10:00:00,000 - INFO - dispatch_job.py:371 - Output directory: /lustre/runs/a1x_rl_20260101100000\n"
        "Submitted batch job 777\n"
    )
    found = job_id_from_dispatch_output(text)
    assert found is not None and found.job_id == "777"
    assert run_dir_from_dispatch_output(text) == Path("/lustre/runs/a1x_rl_20260101100000")
    assert job_id_from_dispatch_output("sbatch: error: Batch job submission failed") is None


def test_squeue_text_states_nodes_and_pending_reasons() -> None:
    jobs = parse_squeue_text(recorded("squeue_text"))
    assert fate(jobs, "running") == JobInfo(
        JOBS["running"], "RUNNING", "None", "vm", name="rec_running", source="squeue"
    )
    assert fate(jobs, "pending").reason_text == "Resources: waiting for nodes to become free"
    assert fate(jobs, "held").reason_text == "JobHeldUser: held by the user (scontrol release)"
    assert (fate(jobs, "unsatisfiable").reason_text or "").startswith("PartitionConfig: the partition cannot give")
    assert fate(jobs, "requeued").reason == "BeginTime" and fate(jobs, "requeued").pending
    assert fate(jobs, "failed").terminal and fate(jobs, "failed").reason_text is None
    assert fate(jobs, "running").reason_text is None


def test_squeue_json_v0_0_38_exit_codes_are_wait_statuses() -> None:
    jobs = parse_squeue_json(recorded("squeue_json"))
    failed = fate(jobs, "failed")
    assert (failed.state, failed.exit_code, failed.signal, failed.reason) == ("FAILED", 3, 0, "NonZeroExitCode")
    cancelled = fate(jobs, "cancelled")
    assert (cancelled.state, cancelled.exit_code, cancelled.signal) == ("CANCELLED", 0, 15)
    assert fate(jobs, "requeued").restarts == 1 and fate(jobs, "requeued").nodes is None
    assert fate(jobs, "completed").succeeded


def test_squeue_json_later_shapes() -> None:
    # OpenAPI v0.0.40+ (Slurm 23.11+), written from the data_parser schema (not recorded here).
    text = (
        '{"jobs": [{"job_id": 9, "job_state": ["FAILED"], "state_reason": "NonZeroExitCode", "nodes": "n[1-2]",'
        ' "restart_cnt": 2, "name": "a1x_rl", "exit_code": {"status": ["EXITED"],'
        ' "return_code": {"set": true, "infinite": false, "number": 7}, "signal": {"id": {"set": false,'
        ' "infinite": false, "number": 0}, "name": ""}}}]}'
    )
    [job] = parse_squeue_json(text)
    assert (job.job_id, job.state, job.exit_code, job.signal, job.nodes, job.restarts) == (
        "9",
        "FAILED",
        7,
        None,
        "n[1-2]",
        2,
    )
    with pytest.raises(SlurmParseError, match="printed no JSON"):
        parse_squeue_json("slurm_load_jobs error: Unable to contact slurm controller")


@pytest.mark.parametrize("name", ["scontrol_show_job", "scontrol_show_job_oneliner"])
def test_scontrol_show_job_in_both_layouts(name: str) -> None:
    jobs = parse_scontrol_jobs(recorded(name))
    assert len(jobs) == len(JOBS)
    failed = fate(jobs, "failed")
    assert (failed.state, failed.exit_code, failed.signal, failed.reason, failed.nodes) == (
        "FAILED",
        3,
        0,
        "NonZeroExitCode",
        "vm",
    )
    assert fate(jobs, "cancelled").signal == 15
    assert (fate(jobs, "requeued").restarts, fate(jobs, "requeued").reason) == (1, "BeginTime")
    assert fate(jobs, "pending").nodes is None and fate(jobs, "pending").reason == "Resources"
    assert fate(jobs, "completed").name == "rec_completed"


def test_sacct_skips_steps_and_counts_requeues_from_duplicates() -> None:
    jobs = parse_sacct(recorded("sacct_duplicates"))
    assert set(by_id(jobs)) == set(JOBS.values())
    requeued = fate(jobs, "requeued")
    assert (requeued.state, requeued.restarts, requeued.nodes, requeued.reason) == ("PENDING", 1, None, "BeginTime")
    assert fate(jobs, "cancelled").state == "CANCELLED"  # "CANCELLED by 0"
    assert (fate(jobs, "failed").exit_code, fate(jobs, "failed").signal) == (3, 0)
    # Without -D only the current record is shown: the requeue is invisible.
    plain = fate(parse_sacct(recorded("sacct")), "requeued")
    assert (plain.state, plain.restarts) == ("PENDING", 0)


def test_error_texts_are_recognised() -> None:
    assert invalid_job(recorded("scontrol_show_job_invalid")) and invalid_job(recorded("squeue_invalid"))
    assert accounting_disabled(recorded("sacct_disabled"))


def replay(*, accounting: bool, known: bool = True) -> ReplayRunner:
    oneliner = recorded("scontrol_show_job_oneliner")
    return ReplayRunner(
        {
            ("scontrol",): CommandResult(0, oneliner)
            if known
            else CommandResult(1, "", recorded("scontrol_show_job_invalid")),
            ("sacct",): CommandResult(0, recorded("sacct_duplicates"))
            if accounting
            else CommandResult(1, "", recorded("sacct_disabled")),
            ("squeue",): CommandResult(0, recorded("squeue_text"))
            if known
            else CommandResult(1, "", recorded("squeue_invalid")),
        }
    )


def test_query_asks_scontrol_first_with_one_targeted_call() -> None:
    runner = replay(accounting=False)
    info = query_job(JOBS["failed"], runner)
    assert info is not None and (info.state, info.exit_code, info.source) == ("FAILED", 3, "scontrol")
    assert runner.calls == [["scontrol", "-o", "show", "job", JOBS["failed"]]]


def test_a_job_slurmctld_forgot_comes_from_sacct_and_else_is_unknown() -> None:
    runner = replay(accounting=True, known=False)
    info = query_job(JOBS["requeued"], runner)
    assert info is not None and (info.source, info.restarts) == ("sacct", 1)
    runner = replay(accounting=False, known=False)
    assert query_job(JOBS["failed"], runner) is None
    assert [c[0] for c in runner.calls] == ["scontrol", "sacct", "squeue"]


def write(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_layout_follows_parts_runs_and_the_latest_link(tmp_path: Path) -> None:
    slurm = tmp_path / "slurm"
    assert read_layout(slurm).parts == () and read_layout(slurm).latest_run is None
    write(slurm / "part_0" / "remaining-retries", "2\n")
    write(slurm / "part_0" / "run_0" / "policy_0.err")
    write(slurm / "part_0" / "run_1" / "policy_0.err")
    write(slurm / "part_1" / "remaining-retries", "3\n")
    write(slurm / "part_1" / "run_0" / "controller.err")
    write(slurm / "slurm_12.log")
    write(slurm / "slurm_9.log")
    os.symlink("part_1/run_0", slurm / "latest_run")
    layout = read_layout(slurm)
    assert [(p.index, p.runs, p.remaining_retries) for p in layout.parts] == [(0, (0, 1), 2), (1, (0,), 3)]
    assert (layout.current_part, layout.current_run, layout.starts) == (1, 0, 3)
    assert layout.latest_run == slurm / "part_1" / "run_0"
    assert [p.name for p in layout.job_logs] == ["slurm_9.log", "slurm_12.log"]
    # Cosmos-RL writes absolute links; mounted elsewhere they dangle: the newest run is used instead.
    os.remove(slurm / "latest_run")
    os.symlink("/nowhere/part_1/run_0", slurm / "latest_run")
    assert read_layout(slurm).latest_run == slurm / "part_1" / "run_0"
    write(tmp_path / "ABORT-AUTORESUME")
    assert read_layout(slurm).aborted


def test_the_step_a_start_resumed_from_is_read_from_the_latest_run(tmp_path: Path) -> None:
    slurm = tmp_path / "slurm"
    write(slurm / "part_0" / "run_0" / "resume-step", "0\n")
    assert read_layout(slurm).resumed_from_step == 0  # the first start trains from step 0
    write(slurm / "part_1" / "run_0" / "resume-step", "210\n")
    assert read_layout(slurm).resumed_from_step == 210
    write(slurm / "part_2" / "run_0" / "controller.err")  # Cosmos-RL's own template writes no such file
    assert read_layout(slurm).resumed_from_step is None


def test_status_shows_the_part_and_the_step_it_resumed_from() -> None:
    from a1x_tui.console import slurm_line

    job = {"job_id": "42", "state": "RUNNING", "nodes": "n1", "restarts": 1, "run": "part_1/run_0", "part": 1}
    assert slurm_line({**job, "resumed_from_step": 210}) == (
        "slurm job 42 RUNNING on n1, restart 1; part 1 resumed from step 210; logs part_1/run_0"
    )
    assert slurm_line({**job, "resumed_from_step": 0}) == (
        "slurm job 42 RUNNING on n1, restart 1; part 1 trains from step 0 (no complete checkpoint to resume from); "
        "logs part_1/run_0"
    )
    first = {**job, "restarts": 0, "run": "part_0/run_0", "part": 0, "resumed_from_step": 0}
    assert slurm_line(first) == "slurm job 42 RUNNING on n1; logs part_0/run_0"


def test_role_logs_of_a_run_and_of_the_747d1bd_layout(tmp_path: Path) -> None:
    run = tmp_path / "run_0"
    for name in (
        "controller.err",
        "controller.out",
        "policy_12.err",
        "rollout_0.out",
        "gpu_agent_3.err",
        "policy-rollout_0.err",
        "remaining-retries",
        "notes.txt",
    ):
        write(run / name)
    assert [(r.name, r.task, r.stream) for r in role_logs(run)] == [
        ("controller", 0, "err"),
        ("controller", 0, "out"),
        ("gpu_agent", 3, "err"),
        ("policy-rollout", 0, "err"),
        ("policy", 12, "err"),
        ("rollout", 0, "out"),
    ]
    root = tmp_path / "out"
    write(root / "a1x_rl" / "55" / "policy" / "1.err")
    write(root / "a1x_rl" / "55" / "controller" / "0.out")
    write(root / "55" / "x.out")
    assert [(r.name, r.task, r.stream) for r in pinned_role_logs(root, "a1x_rl", "55")] == [
        ("controller", 0, "out"),
        ("policy", 1, "err"),
        ("sbatch", 0, "out"),
    ]


MONITOR = """JOBID 4242
Using 64 policy nodes, 16 rollout nodes, and 0 reference nodes, TOTAL_NODES: 80
[2026-03-01 10:00:00.123 AM UTC][cosmos-rl-sbatch]: Job started on node001
[2026-03-01 10:00:00.456 AM UTC][cosmos-rl-sbatch]: New run dir: /lustre/runs/j/slurm/part_0/run_0
srun: error: node017: task 16: Exited with exit code 1
[2026-03-01 11:00:00.000 AM UTC][cosmos-rl-sbatch]: Policy failed with exit code 1. Terminating other processes.
[2026-03-01 11:00:01.000 AM UTC][cosmos-rl-sbatch]: Job failed with status 1. Retries remaining: 2. Requeuing...
[2026-03-01 11:05:00.000 AM UTC][cosmos-rl-sbatch]: Signal SIGUSR1 caught. Will terminate job and potentially requeue.
[2026-03-01 11:05:09.000 AM UTC][cosmos-rl-sbatch]: Received signal SIGUSR1, will requeue for autoresume
[2026-03-01 11:05:30.000 AM UTC][a1x-tui-sbatch]: Checkpoint of step 215 is not complete, not resuming from it: /o/s
[2026-03-01 11:05:30.100 AM UTC][a1x-tui-sbatch]: Resuming from checkpoint step 210: /o/t/checkpoints/step_210/policy
[2026-03-01 11:06:00.000 AM UTC][a1x-tui-sbatch]: Job failed with status 137. No retries remaining.
[2026-03-01 11:06:00.100 AM UTC][a1x-tui-sbatch]: Final exit status: 137
"""


def test_monitor_lines_of_both_sbatch_scripts() -> None:
    lines = parse_monitor_log(MONITOR)
    assert [(m.line, m.tag, m.kind, dict(m.data)) for m in lines] == [
        (3, "cosmos-rl-sbatch", "started", {"job": None, "host": "node001"}),
        (4, "cosmos-rl-sbatch", "new_run", {"path": "/lustre/runs/j/slurm/part_0/run_0"}),
        (6, "cosmos-rl-sbatch", "step_failed", {"step": "Policy", "code": 1}),
        (7, "cosmos-rl-sbatch", "retry", {"status": 1, "left": 2}),
        (8, "cosmos-rl-sbatch", "signal", {"signal": "SIGUSR1"}),
        (9, "cosmos-rl-sbatch", "autoresume", {"signal": "SIGUSR1"}),
        (10, "a1x-tui-sbatch", "resume_skipped", {"step": 215}),
        (11, "a1x-tui-sbatch", "resume", {"step": 210, "path": "/o/t/checkpoints/step_210/policy"}),
        (12, "a1x-tui-sbatch", "no_retries", {"status": 137}),
        (13, "a1x-tui-sbatch", "final", {"status": 137}),
    ]
