"""The run's outcome on REAL recorded runs (tests/fixtures/cosmos/), and the rule behind every verdict:
OK only for a completed run, or a running one without findings; a run that crashed, hung or ended early
is never OK, even when the lines that prove its failure are taken out of its logs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from a1x_diagnostics.engine import check
from a1x_diagnostics.findings import Outcome, Severity, Status

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "cosmos"
REPO = Path(__file__).resolve().parents[2]
RECORDED = sorted(p for p in FIXTURES.glob("*/*") if p.is_dir() and (any(p.glob("logs_*")) or (p / "run.out").exists()))

# (version, scenario) -> the outcome its story is (tests/fixtures/cosmos/README.md)
OUTCOMES: dict[tuple[str, str], Outcome] = {
    (v, s): o
    for v in ("v0.4.4", "747d1bd")
    for s, o in {
        "healthy": Outcome.COMPLETED,
        "healthy_debug": Outcome.COMPLETED,
        "healthy_long": Outcome.COMPLETED,
        "grpo_collapse": Outcome.COMPLETED,
        "weight_sync_gating": Outcome.COMPLETED,
        "rollout_killed": Outcome.CRASHED,
        "policy_killed": Outcome.CRASHED,
        "rollout_oom": Outcome.CRASHED,
        "reward_raises": Outcome.CRASHED,
        "entry_import_error": Outcome.CRASHED,
        "launcher_import_error": Outcome.CRASHED,
        "insufficient_gpus": Outcome.CRASHED,
        "policy_stopped": Outcome.STALLED,
        "rollout_stopped_start": Outcome.STALLED,
        "too_many_replicas": Outcome.TERMINATED,
    }.items()
}
OUTCOMES[("v0.4.4", "buffer_growth")] = Outcome.COMPLETED
OUTCOMES[("747d1bd", "buffer_growth")] = Outcome.TERMINATED  # the recorder's deadline at step 31/40
OUTCOMES[("v0.4.4", "shutdown_hang")] = Outcome.COMPLETED
OUTCOMES[("v0.4.4", "rollout_oom_start")] = Outcome.CRASHED
OUTCOMES[("v0.4.4", "ipc_port_collision")] = Outcome.CRASHED


def _cases() -> list[tuple[str, str]]:
    return [k for k in OUTCOMES if (FIXTURES / k[0] / k[1]).is_dir()]


@pytest.mark.parametrize(("version", "scenario"), _cases(), ids=[f"{v}-{s}" for v, s in _cases()])
def test_each_recorded_run_gets_the_outcome_of_its_story(version: str, scenario: str) -> None:
    report = check(FIXTURES / version / scenario)
    assert report.outcome is not None
    assert report.outcome.state is OUTCOMES[(version, scenario)], report.outcome.summary
    assert report.summary.startswith(report.outcome.state.value + ":")
    if report.outcome.state is not Outcome.COMPLETED:
        assert report.status is Status.CRITICAL, report.summary
        assert report.outcome.evidence, "the outcome quotes the lines that show it"


def test_every_recorded_run_is_ok_only_when_it_completed_or_runs() -> None:
    assert RECORDED
    for path in RECORDED:
        report = check(path)
        assert report.outcome is not None, path
        if report.status is Status.OK:
            assert report.outcome.state in (Outcome.COMPLETED, Outcome.RUNNING), (path, report.summary)


@pytest.mark.parametrize("version", ["v0.4.4", "747d1bd"])
def test_the_new_scenarios_name_what_happened(version: str) -> None:
    def one(scenario: str, fid: str) -> str:
        report = check(FIXTURES / version / scenario)
        found = [f for f in report.findings if f.id == fid]
        assert found, (scenario, [f.id for f in report.findings])
        return found[0].explanation + " " + " ".join(e.text for e in found[0].evidence)

    text = one("entry_import_error", "process_crashed")
    assert "controller" in text and "ModuleNotFoundError: No module named 'a_module_that_does_not_exist'" in text
    assert "entry_tiny_grpo.py" in text  # the last frame of the user's own code
    assert "exited with code 1" in text  # the launcher's line
    text = one("launcher_import_error", "process_crashed")
    assert "No module named 'toml'" in text and "launcher" in text
    text = one("reward_raises", "replica_died")
    assert "rollout_0" in text and "RuntimeError: injected: reward function failed" in text
    for scenario in ("policy_stopped", "rollout_stopped_start"):
        report = check(FIXTURES / version / scenario)
        stalled = next(f for f in report.findings if f.id == "stalled")
        assert stalled.data["stopped_from_outside"] is True
        assert "death signal" in " ".join(e.text for e in stalled.evidence)
        assert "stopped from outside" in report.outcome.summary  # type: ignore[union-attr]
    healthy = check(FIXTURES / version / "healthy_long")
    assert healthy.metrics["step"] == healthy.metrics["total_steps"] == 24
    assert not [f for f in healthy.findings if f.severity is Severity.CRITICAL]
    assert {f.id for f in healthy.findings} <= {"shutdown_hang"}


# Lines that prove a failure, or how the job ended: take them all out and the rest must still not read OK.
_PROOF = re.compile(
    r"Traceback|Error|error|exitcode|Exception|death signal|SIGTERM|SIGKILL|is dead|failed|Killed|Terminated|"
    r"exited|Unregistering|is stopping|ChildFailed|Root Cause|core dumped|Fatal"
)


def _strip_proof(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, symlinks=True)
    for path in dst.rglob("*"):
        if path.is_file() and not path.is_symlink() and path.suffix in (".log", ".out"):
            lines = path.read_bytes().decode("utf-8", "replace").splitlines()
            kept = [ln for ln in lines if not _PROOF.search(ln) and not ln.startswith(("  ", "\t", "[rank0]:  "))]
            path.write_text("\n".join(kept) + "\n")


FAILING = [p for p in RECORDED if OUTCOMES.get((p.parent.name, p.name), Outcome.COMPLETED) is not Outcome.COMPLETED]


@pytest.mark.parametrize("path", FAILING, ids=[f"{p.parent.name}-{p.name}" for p in FAILING])
def test_a_failing_run_without_its_proof_is_still_not_ok(path: Path, tmp_path: Path) -> None:
    stripped = tmp_path / "run"
    _strip_proof(path, stripped)
    report = check(stripped)
    assert report.status is not Status.OK, (report.summary, report.outcome)


def _verdict(path: Path) -> tuple[str, list[str], str | None]:
    r = check(path, now=None)
    return r.status.value, sorted(f.id for f in r.findings), r.outcome.state.value if r.outcome else None


@pytest.mark.parametrize("path", RECORDED, ids=[f"{p.parent.name}-{p.name}" for p in RECORDED])
def test_a_copy_gets_the_verdict_of_the_original_whatever_its_mtimes(path: Path, tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    shutil.copytree(path, fresh, symlinks=True)  # cp -r / git clone: every mtime is now
    old = tmp_path / "old"
    shutil.copytree(path, old, symlinks=True)
    for p in old.rglob("*"):
        os.utime(p, (1583064000, 1583064000), follow_symlinks=False)  # 2020-03-01
    assert _verdict(fresh) == _verdict(old) == _verdict(path)


@pytest.mark.slow  # a1x-tui in subprocesses on copies
def test_check_cli_gives_a_copy_the_verdict_of_the_original(tmp_path: Path) -> None:
    """``a1x-tui --check`` passes the wall clock: still the same verdict for fresh and old mtimes."""
    src = FIXTURES / "747d1bd" / "grpo_collapse"
    out = []
    for name, stamp in (("fresh", None), ("old", 1583064000)):
        dst = tmp_path / name
        shutil.copytree(src, dst, symlinks=True)
        if stamp is not None:
            for p in dst.rglob("*"):
                os.utime(p, (stamp, stamp), follow_symlinks=False)
        proc = subprocess.run([sys.executable, "-m", "a1x_tui", "--check", str(dst)], capture_output=True, text=True,
                              cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
        out.append((proc.returncode, proc.stdout.splitlines()[0].split(" | ")[0]))
    assert out[0] == out[1], out
