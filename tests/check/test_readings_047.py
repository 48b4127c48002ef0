"""The recorded cosmos-rl 0.4.7 runs (tests/fixtures/cosmos/v0.4.7) agree with what an engineer concluded reading
their logs blind (tests/fixtures/readings/cosmos-0.4.7/*.md, written without the tool: issue 34 point 11): the
outcome, the severity, the first process that failed and the findings, for the run folder and for its launcher
output ``run.out`` checked alone.

Where the words differ and the meaning does not, the equivalence is stated here:

- a crashed run did not reach its last step: the reader's ``run_incomplete`` beside a crash is the outcome's step
  (``run_incomplete`` is the finding of a run that ended short *without* another explanation, docs/findings.md);
- ``run.out`` alone shows no training: ``replica_logs_missing`` (a warning) says so and names the folder to check,
  which makes a report the reader calls OK a WARNING (OK means "I looked and the run is healthy");
- a ``run.out`` that ends while its processes still ran is ``running`` to the reader and ``incomplete`` with no end
  line to the tool, whose ``run_incomplete`` warning says the same: the output stops, nothing shows a failure.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from a1x_diagnostics.engine import check
from a1x_diagnostics.findings import Report, Severity

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
READINGS = sorted((FIXTURES / "readings" / "cosmos-0.4.7").glob("*.md"))


def _reading(path: Path) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"([\w.]+): (.*)$", line)
        if m and m.group(1) not in fields:
            fields[m.group(1)] = m.group(2).strip()
    return fields


def _first_process(report: Report) -> str | None:
    """The process the report names as the first to fail: the outcome's first crash, or who went quiet first."""
    if report.outcome is None:
        return None
    processes = report.outcome.data.get("processes")
    if processes:
        return str(processes[0])
    stall = next((f for f in report.findings if f.id == "stalled"), None)
    return None if stall is None else stall.data.get("quiet_first")


def _agrees(report: Report, reading: dict[str, str], mode: str) -> None:
    said = (mode, report.summary, [(f.id, f.severity.value) for f in report.findings])
    outcome, severity = reading[f"{mode}.outcome"], reading[f"{mode}.severity"]
    want = {x.strip() for x in reading[f"{mode}.findings"].split(",")} - {"none"}
    got = {f.id for f in report.findings}
    assert report.outcome is not None, said
    state = report.outcome.state.value
    extra_ok = {"replica_logs_missing"} if mode == "runout" else set()
    if outcome == "running" and mode == "runout":
        assert state == "incomplete" and report.outcome.data.get("ended") == "no_end_line", said
        extra_ok.add("run_incomplete")
    else:
        assert state == outcome, said
    if state == "crashed":
        want.discard("run_incomplete")
    assert want <= got, said
    assert got - want <= extra_ok, said
    assert all(f.severity is Severity.WARNING for f in report.findings if f.id in got - want), said
    wanted_status = severity
    if severity == "ok" and "replica_logs_missing" in got:
        wanted_status = "warning"
    assert report.status.value == wanted_status, said
    process = reading.get(f"{mode}.process")
    if process and process != "none":
        assert _first_process(report) == process, said


@pytest.mark.parametrize("path", READINGS, ids=lambda p: p.stem)
def test_the_run_folder_agrees_with_the_blind_reading(path: Path) -> None:
    reading = _reading(path)
    _agrees(check(FIXTURES / reading["run"]), reading, "folder")


@pytest.mark.parametrize("path", READINGS, ids=lambda p: p.stem)
def test_its_launcher_output_alone_agrees_with_the_blind_reading(path: Path, tmp_path: Path) -> None:
    reading = _reading(path)
    alone = tmp_path / "run.out"
    shutil.copyfile(FIXTURES / reading["run"] / "run.out", alone)
    _agrees(check(alone), reading, "runout")


def test_there_is_a_reading_of_every_recorded_0_4_7_run() -> None:
    runs = {p.name for p in (FIXTURES / "cosmos" / "v0.4.7").iterdir() if p.is_dir()}
    assert {p.stem for p in READINGS} == runs
