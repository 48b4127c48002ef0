"""Each family of message shapes (tests/fixtures/signatures/*.tsv) checked as a user checks a log that shows it:
`--check` on a file of the family's sample lines gives the finding the mechanism says (docs/reference/cosmos-rl.md
§16, docs/reference/foreign-errors.md §F). The samples are read in the order of their table; a shape that needs
the lines around it (a traceback cut from its header, a stamp in front of a vLLM line) is checked on the user's
log its row was recorded from."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from a1x_diagnostics.engine import check
from a1x_diagnostics.findings import Report, Severity, Status

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TABLES = FIXTURES / "signatures"


def _rows(name: str) -> dict[str, dict[str, str]]:
    with (TABLES / name).open(encoding="utf-8", newline="") as f:
        return {r["shape_id"]: r for r in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)}


COSMOS = _rows("cosmos-rl-0.4.7.tsv")
FOREIGN = _rows("foreign.tsv")

# family: (its rows, the finding, its severity (None: the report has no critical), what its text must say)
FAMILIES: dict[str, tuple[dict[str, dict[str, str]], tuple[str, ...], str | None, Severity | None, str]] = {
    "0.4.7 controller terminal errors": (COSMOS, ("controller_monitor_terminal",
                                                  "controller_monitor_terminal_membership",
                                                  "controller_publication_terminal", "controller_settlement_terminal"),
                                         "process_crashed", Severity.CRITICAL, "exit 86"),
    "0.4.7 exit 86 of the launcher": (COSMOS, ("launcher_process_failed_86",), "process_crashed", Severity.CRITICAL,
                                      "Cosmos-RL's fatal exit"),
    "0.4.7 Transport FATAL": (COSMOS, ("transport_fatal", "transport_fatal_p2r_init"), "nccl_timeout",
                              Severity.CRITICAL, "transport_fatal"),
    "0.4.7 resume": (COSMOS, ("ckpt_error_loading_selected", "ckpt_no_checkpoint_found", "ckpt_metadata_missing",
                              "resume_mismatch_controller", "resume_mismatch_policy"), "resume_failed",
                     Severity.CRITICAL, "could not resume"),
    "0.4.7 R2R cancelled": (COSMOS, ("r2r_barrier_cancelled_timeout", "r2r_barrier_cancelled_source_invalid",
                                     "wst_r2r_round_cancelled"), "nccl_timeout", Severity.CRITICAL, "weight"),
    "0.4.7 P2R send": (COSMOS, ("policy_p2r_send_failed",), "nccl_p2p_hang", Severity.CRITICAL, "P2R"),
    "0.4.7 bounded HTTP": (COSMOS, ("http_training_fetch_bounded", "http_rollout_report_bounded"),
                           "controller_unreachable", Severity.CRITICAL, "fetch_prompt"),
    "0.4.7 HA NCCL": (COSMOS, ("ha_nccl_readiness_failed", "collective_deadline_elapsed", "collective_operation_error"),
                      "nccl_timeout", Severity.CRITICAL, "collective_timeout"),
    "0.4.7 mesh rebuild": (COSMOS, ("rollout_mesh_build_timeout", "controller_rollout_nccl_failure"), "nccl_timeout",
                           Severity.WARNING, "mesh_build_timeout"),
    "0.4.7 normal ends": (COSMOS, ("app_requested_stop", "app_requested_stop_colocated_exhausted",
                                   "rank_affine_dataset_exhausted"), None, None, ""),
    "F1 vLLM KV cache": (FOREIGN, ("vllm_v0_max_seq_len_kv_cache", "vllm_v1_073_kv_cache_needed_gb",
                                   "vllm_v1_085_kv_cache_needed_two_spaces", "vllm_v1_011_kv_cache_needed_estimate",
                                   "vllm_no_cache_blocks"), "vllm_oom", Severity.CRITICAL, "max_model_len"),
    "F2 c10d store and socket": (FOREIGN, ("c10d_client_socket_timeout_old", "c10d_client_socket_timeout_ms",
                                           "c10d_wait_for_input_likely_timeout", "c10d_wait_for_input_timed_out",
                                           "tcpstore_wait_timeout_keys", "tcpstore_socket_timeout_old"),
                                 "nccl_timeout", Severity.CRITICAL, "weight sync"),
    "F3 watchdog and heartbeat monitor": (FOREIGN, ("pg_nccl_heartbeat_monitor_timed_out", "pg_nccl_watchdog_stuck"),
                                          "nccl_timeout", Severity.CRITICAL, "stalled"),
    "F4 InfiniBand verbs": (FOREIGN, ("nccl_ib_completion_error_218", "nccl_ib_completion_error_220",
                                      "nccl_ib_completion_error_224", "nccl_ib_completion_error_229",
                                      "nccl_ibv_poll_cq_failed", "mlx5_got_completion_with_error"),
                            "nccl_timeout", Severity.CRITICAL, "InfiniBand"),
    "F5 Ray placement": (FOREIGN, ("ray_pg_bundle_index_invalid", "ray_pg_cannot_fit_bundle",
                                   "ray_autoscaler_infeasible", "ray_autoscaler_v2_pg_infeasible",
                                   "ray_train_pg_creation_timed_out"), "insufficient_gpus", Severity.CRITICAL,
                         "bundle"),
    "F5 Ray waiting for GPUs": (FOREIGN, ("ray_raylet_cannot_be_scheduled",), "insufficient_gpus", Severity.WARNING,
                                "waits"),
    "G other stacks' GRPO step metrics": (FOREIGN, ("trl_frac_reward_zero_std", "verl_advantages_all_zero"),
                                         "grpo_collapse", Severity.WARNING, "no learning signal"),
    "C1 TRL's vLLM device": (FOREIGN, ("trl_vllm_device_not_available",), "insufficient_gpus", Severity.CRITICAL,
                             "vllm_device must be cuda:0"),
}


def _write(tmp_path: Path, rows: dict[str, dict[str, str]], ids: tuple[str, ...]) -> Path:
    log = tmp_path / "captured.log"
    log.write_text("".join(rows[i]["sample_line"].replace("\\n", "\n") + "\n" for i in ids), encoding="utf-8")
    return log


def _finding(report: Report, finding_id: str) -> object:
    return next((f for f in report.findings if f.id == finding_id), None)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_log_of_the_family_s_samples_gives_its_finding(family: str, tmp_path: Path) -> None:
    rows, ids, finding_id, severity, says = FAMILIES[family]
    report = check(_write(tmp_path, rows, ids))
    said = (report.summary, [(f.id, f.severity.value) for f in report.findings])
    if finding_id is None:  # ways a run ends: never a finding, never worse than OK
        assert report.status is Status.OK and not report.findings, said
        return
    found = _finding(report, finding_id)
    assert found is not None, said
    assert found.severity is severity, said  # type: ignore[attr-defined]
    if severity is Severity.WARNING:
        assert report.status is Status.WARNING, said
    text = found.explanation + " " + str(found.data)  # type: ignore[attr-defined]
    assert says in text, (says, text)


def test_every_row_of_a_findings_family_is_in_one_family() -> None:
    """The rows no family lists are a run's ordinary lines (a completed process, a teardown, a launch command),
    a heartbeat failure (a finding only when repeated, docs/findings.md), or shapes of the reading checked on
    their recordings below."""
    listed = {(id(rows), i) for rows, ids, *_ in FAMILIES.values() for i in ids}
    ordinary = {"launcher_process_completed_rc", "launcher_process_completed_coordinated", "launcher_kill_all_victim",
                "launcher_process_failed_worker", "launcher_process_failed_controller", "worker_fatal",
                "ckpt_no_committed_fresh_start", "heartbeat_failed_url", "rollout_teardown_destroy_worker",
                "replica_launch_command_wrapper", "vllm_v0_initialize_cache_error", "vllm_v1_engine_core_init_failed",
                "c10d_connect_failed_errno", "pg_nccl_watchdog_timeout_old", "pg_nccl_watchdog_timeout",
                "pg_nccl_watchdog_thread_terminated", "traceback_headerless_rank_prefixed",
                "traceback_headerless_non_error_class", "wall_clock_prefixed_ray_vllm_line", "openrlhf_update_weight"}
    missing = [i for rows in (COSMOS, FOREIGN) for i in rows if (id(rows), i) not in listed and i not in ordinary]
    assert not missing, missing


# --- the shapes of the reading, on the logs their rows were recorded from -------------------------------------
USERS = FIXTURES / "real-runs" / "users-logs"


def test_a_traceback_without_its_header_is_a_crash_read_from_its_last_line() -> None:
    report = check(USERS / "C_ms-swift-4906_weight-sync-diststore-timeout.log")
    assert report.outcome is not None and report.outcome.state.value == "crashed", report.summary
    nccl = _finding(report, "nccl_timeout")
    assert nccl is not None and nccl.severity is Severity.CRITICAL  # type: ignore[attr-defined]
    assert "weight sync" in nccl.explanation  # type: ignore[attr-defined]


def test_a_stamped_ray_vllm_capture_is_read_through_its_prefixes() -> None:
    report = check(USERS / "A_openrlhf-336_kv-cache-too-small.log")
    oom = _finding(report, "vllm_oom")
    assert oom is not None and "initialize_cache" in oom.explanation  # type: ignore[attr-defined]
    assert not oom.fixes  # type: ignore[attr-defined]  # the error line is not there: words, not a guess


def test_another_stacks_logged_steps_are_not_called_a_run_that_never_began() -> None:
    # ms-swift's step metrics (a hard negative for grpo_collapse): no Cosmos-RL line, but a logged step
    report = check(USERS / "B_ms-swift-5890_grad-norm-zero-nonzero-std.log")
    assert report.status is Status.WARNING and "grpo_collapse" not in {f.id for f in report.findings}
    stop = _finding(report, "run_incomplete")
    assert stop is not None and "another trainer's: 1 logged step(s)" in stop.explanation  # type: ignore[attr-defined]
    assert "before training began" not in stop.explanation  # type: ignore[attr-defined]


def test_a_crash_quotes_the_error_line_its_process_printed_just_before_its_traceback() -> None:
    # a DataLoader worker's 'Unexpected bus error … insufficient shared memory (shm)', then the main process's
    # RuntimeError: the line that says why is the crash's, in its text and evidence (not an unexplained error)
    report = check(USERS / "E_pipedream-28_shm-bus-error.log")
    crash = _finding(report, "process_crashed")
    assert crash is not None and "insufficient shared memory" in crash.explanation  # type: ignore[attr-defined]
    assert [e.line for e in crash.evidence] == [16, 6]  # type: ignore[attr-defined]
    assert "unexplained_error" not in {f.id for f in report.findings}


def test_the_0_4_7_launcher_families_on_their_recordings(tmp_path: Path) -> None:
    """The launcher's end lines, read where they were recorded (their pids mean something only beside the launch
    lines of the same output): every process completed is never critical; a failed worker is the replica it was
    launched as; a failed controller and an exit 86 are the controller's."""
    runs = FIXTURES / "cosmos" / "v0.4.7"
    for name, want in (("healthy", None), ("rollout_killed", "rollout_0"), ("controller_killed", "controller"),
                       ("policy_killed", "controller")):
        alone = tmp_path / name / "run.out"
        alone.parent.mkdir()
        alone.write_bytes((runs / name / "run.out").read_bytes())
        report = check(alone)
        critical = [f for f in report.findings if f.severity is Severity.CRITICAL]
        if want is None:
            assert not critical and report.outcome is not None and report.outcome.state.value == "completed"
            continue
        named = {str(f.data.get("process") or f.data.get("replica")) for f in critical}
        assert want in named, (name, report.summary, named)
