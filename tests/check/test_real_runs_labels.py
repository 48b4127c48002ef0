"""Every genuine run of tests/fixtures/real-runs/ held to its label (its INDEX.tsv), as a user checks it.

The Cosmos-RL runs (0.4.4 and 747d1bd, recorded on H200s) are checked three ways: the run folder, its
launcher output ``run.out`` where it lies (the launcher names the log folder beside it, which is read too),
and ``run.out`` copied alone. The labels (the folders' README: what the logs show, not what a tool says):
``healthy`` = no critical finding; ``critical`` = some critical finding; finding ids = each must appear. A
launcher output alone is judged by what it shows: the processes' starts and ends, never training itself.

The users' log excerpts (users-logs/INDEX.tsv, from public issues of other RL stacks): a ``healthy`` or
``other`` log and every category-E log gets no critical finding; the in-scope failures this tool finds stay
found; the ones it misses today are the named ``EXPECTED_MISSES`` below, so that a newly found one fails
here until it is moved out (not a silent xfail).
"""

from __future__ import annotations

import csv
import os
import re
import shutil
from pathlib import Path

import pytest

from a1x_diagnostics.engine import check
from a1x_diagnostics.findings import Report, Severity, Status

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real-runs"


def _rows(index: Path) -> list[dict[str, str]]:
    with index.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


# Labels no detector answers yet, each with its reason (strict: one that starts to hold fails here until moved).
ELSEWHERE: dict[tuple[str, str], str] = {}


def _runs(marked: bool) -> list[object]:
    out: list[object] = []
    for index in sorted(REAL.glob("cosmos-rl-*/INDEX.tsv")):
        for row in _rows(index):
            reason = ELSEWHERE.get((index.parent.name, row["folder"])) if marked else None
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(index.parent / row["folder"], row["expect"], marks=marks,
                                    id=f"{index.parent.name}-{row['folder']}"))
    return out


RUNS = _runs(marked=False)
LABELLED = _runs(marked=True)  # for the tests that need the label's finding ids


def _criticals(report: Report) -> list[str]:
    return [f.id for f in report.findings if f.severity is Severity.CRITICAL]


def _holds(report: Report, expect: str) -> None:
    ids = {f.id for f in report.findings}
    said = (report.summary, sorted(ids))
    if expect == "healthy":
        assert not _criticals(report), said
    elif expect == "critical":
        assert _criticals(report), said
    else:
        assert set(expect.split()) <= ids, said
        assert report.status is not Status.OK, said


@pytest.mark.parametrize(("path", "expect"), LABELLED)
def test_the_run_folder_holds_its_label(path: Path, expect: str) -> None:
    _holds(check(path), expect)


@pytest.mark.parametrize(("path", "expect"), LABELLED)
def test_its_launcher_output_where_it_lies_reads_the_folder_it_names_and_holds_the_label(path: Path,
                                                                                        expect: str) -> None:
    report = check(path / "run.out")
    _holds(report, expect)
    folder = check(path)
    if folder.status is not Status.UNKNOWN:  # the same files, so the same verdict
        assert (report.status, sorted(f.id for f in report.findings)) == (
            folder.status, sorted(f.id for f in folder.findings))


# What the launcher's output alone shows of each run (docs/reference/cosmos-rl.md §2.7): a process that failed
# (critical), or every process ended (never critical: training itself is not in it, a warning says where it is),
# or an output that stops while processes still ran (a warning: nothing shows a failure).
ALONE = {
    "healthy": "ended", "healthy_colocated": "ended", "grpo_collapse": "ended", "grpo_collapse_colocated": "ended",
    "weight_sync_lag": "ended", "rollout_buffer_growth": "ended",  # 0.4.4: every process completed (or the
    # controller's coordinated exit, treated as success); 747d1bd: the launcher never returned (§15.1)
    "grpo_collapse_disaggregated": "stops", "shutdown_hang": "stops",  # a rollout never ended: the harness's stop
    "replica_died": "failed", "policy_died": "failed", "insufficient_gpus": "failed", "missing_dependency": "failed",
    "insufficient_gpus_hang": "failed",  # the launcher planned a second node this run does not have (§15)
}


@pytest.mark.parametrize(("path", "expect"), RUNS)
def test_its_launcher_output_alone_is_judged_by_what_it_shows(path: Path, expect: str, tmp_path: Path) -> None:
    alone = tmp_path / "run.out"
    shutil.copyfile(path / "run.out", alone)
    report = check(alone)
    said = (report.summary, sorted(f.id for f in report.findings))
    shows = ALONE[path.name]
    if path.parent.name == "cosmos-rl-747d1bd" and shows == "ended":
        shows = "stops"
    if shows == "failed":
        assert _criticals(report), said
        if expect not in ("critical", "healthy"):
            assert set(expect.split()) <= {f.id for f in report.findings}, said
    else:
        assert not _criticals(report) and report.status is Status.WARNING, said
    if expect == "healthy":
        assert not _criticals(report), said
    if (path / "run.out").read_text(errors="replace").count("output files: ") and shows != "failed":
        logs = next(f for f in report.findings if f.id == "replica_logs_missing")
        assert "logs_" in logs.explanation and "logs_" in (logs.action or "")


def test_a_launcher_output_alone_names_each_process_by_its_role(tmp_path: Path) -> None:
    # 0.4.4 replica_died: 'Process 2 failed with return code 1' is rollout_0 (launch order: controller, policy,
    # rollout; §2.7); policy_died: 'Process 1 failed' is policy_0, then the controller's coordinated exit
    for name, replica in (("replica_died", "rollout_0"), ("policy_died", "policy_0")):
        alone = tmp_path / name / "run.out"
        alone.parent.mkdir()
        shutil.copyfile(REAL / "cosmos-rl-0.4.4" / name / "run.out", alone)
        died = next(f for f in check(alone).findings if f.id == "replica_died")
        assert died.data["replica"] == replica and f"{replica} exited (exit code 1)" in died.explanation
    healthy = tmp_path / "healthy.out"
    shutil.copyfile(REAL / "cosmos-rl-0.4.4" / "healthy" / "run.out", healthy)
    report = check(healthy)
    assert report.outcome is not None and report.outcome.state.value == "completed"
    assert "controller: completed; policy_0: completed; rollout_0: completed" in report.outcome.summary


@pytest.mark.parametrize(("path", "expect"), RUNS)
def test_a_copy_with_old_mtimes_gets_the_same_verdict(path: Path, expect: str, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(path, copy, symlinks=True)
    for p in copy.rglob("*"):
        os.utime(p, (1583064000, 1583064000), follow_symlinks=False)  # 2020-03-01, as after a copy days later

    def verdict(target: Path) -> tuple[str, list[str]]:
        r = check(target)
        return r.status.value, sorted(f.id for f in r.findings)

    assert verdict(copy) == verdict(path)
    assert verdict(copy / "run.out") == verdict(path / "run.out")


# --- the users' logs --------------------------------------------------------------------------------------------
USERS = REAL / "users-logs"
LOGS = [row for row in _rows(USERS / "INDEX.tsv") if row["file"] != "(none)"]
# The label's finding as our catalog names it (docs/findings.md): a weight update that times out is a
# torch.distributed timeout (nccl_timeout) as much as a lag.
MAPPED = {
    "vllm_oom": {"vllm_oom"},
    "grpo_collapse": {"grpo_collapse"},
    "weight_sync_lag": {"weight_sync_lag", "nccl_timeout", "nccl_p2p_hang"},
    "insufficient_gpus": {"insufficient_gpus"},
    "rollout_buffer_growth": {"rollout_buffer_growth"},
}
# In-scope failures not found, each with why: the excerpt holds no line that shows the failure (its evidence is in
# the prose or beyond the excerpt), or the stack is Cosmos-RL's predecessor, whose lines the catalog does
# not read.
EXPECTED_MISSES = {
    "A_trl-2688_grpo-vllm-init-oom.log": "the OOM line is beyond the excerpt; only vLLM's start-up profile shows",
    "C_cosmos-reason1-19_prompts-exhausted-at-step-826.log": "'All epochs finished' at step 826/4725 (prompts ran out)",
    "C_cosmos-reason1-54_pending-rollouts-stall.log": "the buffer growth is in the issue's prose, not the excerpt",
}
# Category-E logs that show a crash, positive evidence of a failure, so they stay critical (process_crashed), the E
# logs not held to "no critical": the training process raised 'RuntimeError: DataLoader worker (pid 325) is killed
# by signal: Bus error' (the INDEX calls it the crash variant of a /dev/shm problem); an excerpt that starts inside
# a traceback (its header cut off) ending in 'ConnectionResetError: [Errno 104] Connection reset by peer', then
# tqdm's last redraw of the bar at 0 % (written when the process exits; docs/reference/foreign-errors.md F6).
E_CRASHES = {"E_pipedream-28_shm-bus-error.log": "Bus error",
             "E_lerobot-3150_dataloader-connection-reset.log": "ConnectionResetError"}


def _no_alarm(row: dict[str, str]) -> bool:
    return row["expected_finding"] in ("healthy", "other") or row["category"] == "E"


@pytest.mark.parametrize("row", [r for r in LOGS if _no_alarm(r) and r["file"] not in E_CRASHES],
                         ids=lambda r: r["file"])
def test_a_healthy_or_out_of_scope_users_log_gets_no_critical(row: dict[str, str]) -> None:
    report = check(USERS / row["file"])
    assert not _criticals(report), (report.summary, [f.id for f in report.findings])


@pytest.mark.parametrize("name", sorted(E_CRASHES))
def test_a_users_log_that_shows_a_crash_is_critical(name: str) -> None:
    report = check(USERS / name)
    assert "process_crashed" in _criticals(report) and E_CRASHES[name] in report.summary + str(report.outcome)


@pytest.mark.parametrize("row", [r for r in LOGS if not _no_alarm(r)], ids=lambda r: r["file"])
def test_an_in_scope_failure_is_found_or_a_named_miss(row: dict[str, str]) -> None:
    report = check(USERS / row["file"])
    ids = {f.id for f in report.findings}
    found = bool(ids & MAPPED[row["expected_finding"]])
    if row["file"] in EXPECTED_MISSES:
        assert not found, f"{row['file']} is found now ({sorted(ids)}): move it out of EXPECTED_MISSES"
    else:
        assert found, (row["file"], report.summary, sorted(ids))
        assert _criticals(report) or report.status is Status.WARNING


def test_the_expected_misses_are_rows_of_the_index() -> None:
    assert set(EXPECTED_MISSES) | set(E_CRASHES) <= {r["file"] for r in LOGS}


# Lines that prove a failure or how the job ended (as tests/check/test_outcome_real.py strips them): take them all
# out of a failing run and what is left must still not read OK.
_PROOF = re.compile(r"Traceback|Error|error|exitcode|Exception|death signal|SIGTERM|SIGKILL|is dead|failed|Killed|"
                    r"Terminated|exited|Unregistering|is stopping|ChildFailed|Root Cause|core dumped|Fatal")


def _failing() -> list[object]:
    """The runs whose label is a failure."""
    out: list[object] = []
    for param in RUNS:
        path, expect = param.values  # type: ignore[attr-defined]
        if expect != "healthy":
            out.append(pytest.param(path, expect, id=param.id))  # type: ignore[attr-defined]
    return out


@pytest.mark.parametrize(("path", "expect"), _failing())
def test_a_failing_real_run_without_its_proof_is_still_not_ok(path: Path, expect: str, tmp_path: Path) -> None:
    for target in (path, path / "run.out"):
        copy = tmp_path / target.relative_to(REAL.parent).as_posix().replace("/", "_")
        if target.is_dir():
            shutil.copytree(target, copy, symlinks=True)
        else:
            shutil.copyfile(target, copy)
        for p in [copy] if copy.is_file() else copy.rglob("*"):
            if p.is_file() and not p.is_symlink() and p.suffix in (".log", ".out"):
                lines = p.read_bytes().decode("utf-8", "replace").splitlines()
                kept = [ln for ln in lines if not _PROOF.search(ln) and not ln.startswith(("  ", "\t", "[rank0]:  "))]
                p.write_text("\n".join(kept) + "\n")
        report = check(copy)
        assert report.status is not Status.OK, (target, report.summary)
