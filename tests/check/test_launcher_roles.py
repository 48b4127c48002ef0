"""A controller killed mid-run, from a genuine recording: the launcher's failure named by role and signal.

No recording has the controller killed, so one is derived from the genuine healthy 0.4.4 run
(tests/fixtures/real-runs/cosmos-rl-0.4.4/healthy): every log cut at step 3 of 8, and the launcher's output
given the two lines its monitoring loop prints when the controller's process dies of SIGKILL, rendered from
its own format strings (``launch_all.py:984, :993`` at v0.4.4, docs/reference/cosmos-rl.md §2.7:
``Process {i} failed with return code {returncode}``, ``Terminated all processes due to failure``).
"""

from __future__ import annotations

import re
import shutil
from datetime import datetime, timedelta
from pathlib import Path

from a1x_diagnostics.engine import check
from a1x_diagnostics.findings import Outcome, Report, Severity

HEALTHY = Path(__file__).resolve().parents[1] / "fixtures" / "real-runs" / "cosmos-rl-0.4.4" / "healthy"
_STAMP = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})")


def _stamp(line: str) -> datetime | None:
    m = _STAMP.search(line)
    return datetime.strptime(f"{m.group(1)}.{m.group(2)}", "%Y-%m-%d %H:%M:%S.%f") if m else None


def _controller_killed_at_step_3(dst: Path) -> Path:
    shutil.copytree(HEALTHY, dst)
    logs = next(dst.glob("logs_2*"))
    controller = (logs / "controller.log").read_text().splitlines()
    cut = next(i for i, line in enumerate(controller) if " - Step: 3/8," in line)
    killed = _stamp(controller[cut]) + timedelta(seconds=1)  # type: ignore[operator]
    (logs / "controller.log").write_text("\n".join(controller[: cut + 1]) + "\n")
    for replica in ("policy_0.log", "rollout_0.log"):  # killed with the rest: their logs just stop
        lines = (logs / replica).read_text(errors="replace").splitlines()
        kept = [ln for ln in lines if (_stamp(ln) or datetime.min) < killed]
        last = max(i for i, ln in enumerate(lines) if ln in kept)
        (logs / replica).write_text("\n".join(lines[: last + 1]) + "\n")
    out = (dst / "run.out").read_text().splitlines()
    out = out[: next(i for i, ln in enumerate(out) if "Process 0 completed successfully" in ln)]
    at = f"{killed:%Y-%m-%d %H:%M:%S},{killed.microsecond // 1000:03d}"
    out += [f"[cosmos] {at} - cosmos - ERROR - Process 0 failed with return code 137",
            f"[cosmos] {at} - cosmos - ERROR - Terminated all processes due to failure"]
    (dst / "run.out").write_text("\n".join(out) + "\n")
    return dst


def _the_controller_died_of_sigkill(report: Report) -> None:
    said = (report.summary, [f.id for f in report.findings])
    assert report.outcome is not None and report.outcome.state is Outcome.CRASHED, said
    crashed = next(f for f in report.findings if f.id == "process_crashed")
    assert crashed.severity is Severity.CRITICAL and crashed.data["process"] == "controller"
    assert "killed by SIGKILL (return code 137)" in crashed.explanation
    assert "terminated every process" in crashed.explanation
    assert "dmesg" in (crashed.action or "") and "traceback" not in (crashed.action or "").lower()
    assert any("Process 0 failed with return code 137" in e.text for e in crashed.evidence)
    assert "replica_died" not in {f.id for f in report.findings}, said  # the controller is not a replica


def test_a_sigkilled_controller_is_named_by_role_with_its_signal(tmp_path: Path) -> None:
    run = _controller_killed_at_step_3(tmp_path / "run")
    folder = check(run)
    _the_controller_died_of_sigkill(folder)
    assert "at step 3/8" in folder.outcome.summary  # type: ignore[union-attr]


def test_the_launchers_output_alone_says_the_same(tmp_path: Path) -> None:
    run = _controller_killed_at_step_3(tmp_path / "run")
    alone = tmp_path / "alone" / "run.out"
    alone.parent.mkdir()
    shutil.copyfile(run / "run.out", alone)
    report = check(alone)
    _the_controller_died_of_sigkill(report)
    assert "replica_logs_missing" in {f.id for f in report.findings}


def test_without_the_launchers_lines_the_run_is_still_not_ok(tmp_path: Path) -> None:
    # the proof removed: only logs that stop at step 3/8 are left, which is a warning, never OK
    run = _controller_killed_at_step_3(tmp_path / "run")
    (run / "run.out").unlink()
    report = check(run)
    assert report.status.value == "warning" and report.outcome.state is Outcome.INCOMPLETE  # type: ignore[union-attr]
    assert "step 3/8" in report.summary


def test_a_launcher_output_makes_check_read_only_a_logs_ts_folder(tmp_path: Path) -> None:
    # the folder comes from a line of the file: anything but the launcher's logs_<YYYYmmdd-HHMMSS> is not read
    elsewhere = tmp_path / "private"
    elsewhere.mkdir()
    (elsewhere / "notes.log").write_text("Traceback (most recent call last):\nValueError: secret\n")
    out = (HEALTHY / "run.out").read_text().replace("/workspace/out/healthy/logs_20261129-135902", str(elsewhere))
    capture = tmp_path / "run.out"
    capture.write_text(out)
    report = check(capture)
    assert report.files == ["run.out"] and "secret" not in report.model_dump_json()


def test_a_launcher_output_reads_the_folder_at_the_path_it_printed(tmp_path: Path) -> None:
    logs = tmp_path / "out" / "logs_20261129-135902"
    shutil.copytree(next(HEALTHY.glob("logs_2*")), logs)
    out = (HEALTHY / "run.out").read_text().replace("/workspace/out/healthy", str(tmp_path / "out"))
    capture = tmp_path / "elsewhere" / "run.out"
    capture.parent.mkdir()
    capture.write_text(out)
    report = check(capture)
    assert report.status.value == "ok" and report.run == "logs_20261129-135902"
    assert f"{logs}/controller.log" in report.files and "run.out" in report.files
