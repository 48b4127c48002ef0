"""``a1x-tui --check`` reads a run in a child process and reports exactly what one process would.

``diagnostics.reader_process`` forks a child that reads the run into a ``collect.Collection`` while
the parent imports the detectors and the report models; the parent takes the child's store and
metrics. These tests hold: the same report on every recorded run and example, from the command
line too; every way the child can fail (an exception, a kill, a payload that does not load,
another set of files) leaves the parent to read the run itself, with the same report; a run past
``--timeout`` is UNKNOWN and the child is gone; the reading side imports no report model.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from diagnostics import reader_process
from diagnostics.engine import check
from diagnostics.parsing import records

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "cosmos"
RUNS = sorted(p for p in FIXTURES.glob("*/*") if p.is_dir() and any(p.glob("logs_*")))
EXAMPLES = sorted(p for p in (ROOT / "diagnostics" / "examples").iterdir() if p.is_dir() and p.name[0] != "_")
SICK = ROOT / "diagnostics" / "examples" / "sick"
NOW = 1.75e9

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the child process is forked on Linux only"),
    pytest.mark.skipif(not records.native_available(), reason="the child reads with the native reader"),
]

# Every run read by a child first, then by the process itself (the native reader's threads in the
# parent would make it refuse to fork), in a fresh interpreter: one thread, as a1x-tui --check is.
_BOTH_WAYS = """
import json, sys
from diagnostics import reader_process
from diagnostics.engine import check
def report(target, reader=None):
    r = check(target, now=1.75e9, reader=reader).model_dump(mode="json")
    r.pop("generated_at")
    return r
out = {"child": {}, "why": {}, "self": {}}
for target in sys.argv[1:]:
    child = reader_process.start(target, None, None)
    out["child"][target] = report(target, child.read_into if child else None)
    out["why"][target] = "not started" if child is None else child.why
for target in sys.argv[1:]:
    out["self"][target] = report(target)
print(json.dumps(out))
"""


def _fresh(code: str, *args: str, env: dict[str, str] | None = None) -> Any:
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}, timeout=240)
    return json.loads(proc.stdout)


def _report(path: Path, reader: Any = None, timeout: float | None = None) -> str:
    report = check(path, now=NOW, reader=reader, timeout=timeout)
    return re.sub(r'"generated_at":"[^"]*"', "", report.model_dump_json())


def test_every_recorded_run_and_example_is_reported_the_same_read_by_a_child() -> None:
    targets = [str(p) for p in RUNS + EXAMPLES]
    got = _fresh(_BOTH_WAYS, *targets)
    assert got["why"] == {t: None for t in targets}  # the child read each one, none fell back
    for target in targets:
        assert got["child"][target] == got["self"][target], target


def test_the_command_line_report_is_the_same_with_and_without_the_child() -> None:
    # The command itself, its reader watched: it says on stderr whether a child's read was taken.
    code = """
import sys
from diagnostics import reader_process
read_into = reader_process.ChildReader.read_into
def watched(self, *args):
    taken = read_into(self, *args)
    print(f"child read taken: {taken} ({self.why})", file=sys.stderr)
    return taken
reader_process.ChildReader.read_into = watched
from a1x_tui.cli import main
sys.exit(main(["--check", sys.argv[1], "--format", "json"]))
"""

    def cli(env: dict[str, str]) -> tuple[int, dict[str, Any], str]:
        proc = subprocess.run([sys.executable, "-c", code, str(SICK)], cwd=ROOT, capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT), **env}, timeout=120)
        report = json.loads(proc.stdout)
        report.pop("generated_at")
        return proc.returncode, report, proc.stderr

    forked, alone = cli({}), cli({"A1X_NO_FORK": "1"})
    assert "child read taken: True (None)" in forked[2]
    assert "child read taken" not in alone[2]
    assert forked[:2] == alone[:2]
    assert forked[0] == 2 and forked[1]["outcome"]["state"] == "crashed"


def test_the_reading_side_imports_no_report_model() -> None:
    """The child's whole read (discovery, the native reader, the Collection) in a fresh interpreter:
    neither pydantic nor the findings, the catalog or the detectors' base come in."""
    code = """
import json, sys
from pathlib import Path
from diagnostics import reader_process
from diagnostics.collect import Collection, read_into
from diagnostics.parsing import discover, records
layout = discover(Path(sys.argv[1]), None)
records.prefetch(layout.files)
c = Collection()
c.note_files(layout)
read_into(c, layout, None)
heavy = ("pydantic", "diagnostics.findings", "diagnostics.catalog", "diagnostics.detectors._base",
         "diagnostics.detectors.run", "diagnostics.report")
print(json.dumps({"events": c.store.event_count, "heavy": sorted(m for m in sys.modules if m.startswith(heavy))}))
"""
    got = _fresh(code, str(SICK))
    assert got["events"] > 100
    assert got["heavy"] == []


def test_records_and_batches_load_back_as_their_own_classes() -> None:
    from diagnostics.parsing.records import BATCHES, RECORDS

    for cls in [*RECORDS.values(), *BATCHES.values()]:
        value = cls(*range(len(cls._fields)))
        back = pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        assert type(back) is cls and back == value


def test_the_detectors_run_in_one_order_whichever_module_is_imported_first() -> None:
    code = """
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
from diagnostics.detectors.run import ordered
print(json.dumps([d.id for d in ordered()]))
"""
    canonical = _fresh(code)
    assert len(canonical) > 40
    assert _fresh(code, "diagnostics.detectors.weight_sync", "diagnostics.detectors.outcome",
                  "diagnostics.detectors.memory") == canonical


# --- the child failing: the parent reads the run itself -------------------------------------------------


@pytest.fixture
def forking(monkeypatch: pytest.MonkeyPatch) -> None:
    """``start`` forks here although pytest may run threads: each child below only raises, kills itself,
    writes or reads a run, and its deadline bounds the test."""
    monkeypatch.setattr(reader_process, "enabled", lambda: True)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _raises(fd: int, path: str, run: str | None, deadline: float | None) -> None:
    raise RuntimeError("broken child")


def _killed(fd: int, path: str, run: str | None, deadline: float | None) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _garbage(fd: int, path: str, run: str | None, deadline: float | None) -> None:
    with open(fd, "wb") as out:
        out.write(b"not a pickle")


_real_child = reader_process._child


def _other_run(fd: int, path: str, run: str | None, deadline: float | None) -> None:
    _real_child(fd, str(ROOT / "diagnostics" / "examples" / "healthy"), run, deadline)


@pytest.mark.usefixtures("forking")
@pytest.mark.parametrize(("child", "why"), [
    (_raises, "nothing read (exit status 1)"),
    (_killed, f"nothing read (exit status -{int(signal.SIGKILL)})"),
    (_garbage, "its answer does not load"),
    (_other_run, "it found other files than this process"),
], ids=["raises", "killed", "garbage", "other-files"])
def test_a_child_that_fails_leaves_the_same_report(child: Any, why: str, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _report(SICK)
    monkeypatch.setattr(reader_process, "_child", child)
    reader = reader_process.start(str(SICK), None, 60)
    assert reader is not None and reader.pid is not None
    pid = reader.pid
    assert _report(SICK, reader.read_into) == expected
    assert reader.why is not None and reader.why.startswith(why)
    assert _gone(pid)


@pytest.mark.usefixtures("forking")
def test_a_child_that_reads_reports_the_same_and_is_reaped() -> None:
    expected = _report(SICK)
    reader = reader_process.start(str(SICK), None, 60)
    assert reader is not None and reader.pid is not None
    pid = reader.pid
    assert _report(SICK, reader.read_into) == expected
    assert reader.why is None and _gone(pid)


def _hangs(fd: int, path: str, run: str | None, deadline: float | None) -> None:
    time.sleep(60)


@pytest.mark.usefixtures("forking")
def test_a_child_past_the_timeout_is_killed_and_the_run_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader_process, "_child", _hangs)
    reader = reader_process.start(str(SICK), None, 0.5)
    assert reader is not None and reader.pid is not None
    pid = reader.pid
    t0 = time.monotonic()
    report = check(SICK, now=NOW, timeout=0.5, reader=reader.read_into)
    assert time.monotonic() - t0 < 10
    assert report.exit_code == 3 and "timed out after 0.5 s" in report.summary
    assert _gone(pid)


@pytest.mark.usefixtures("forking")
def test_a_child_whose_own_read_times_out_makes_the_run_unknown() -> None:
    reader = reader_process.start(str(SICK), None, 0.0)  # a deadline already past when it reads
    assert reader is not None
    report = check(SICK, now=NOW, timeout=30, reader=reader.read_into)
    assert report.exit_code == 3 and "timed out" in report.summary


@pytest.mark.usefixtures("forking")
def test_a_report_that_does_not_need_the_child_stops_it(tmp_path: Path) -> None:
    """Not a run (UNKNOWN before any reading): ``close`` leaves no child behind."""
    reader = reader_process.start(str(tmp_path), None, 60)
    assert reader is not None and reader.pid is not None
    pid = reader.pid
    report = check(tmp_path, now=NOW, reader=reader.read_into)
    reader.close()
    assert report.exit_code == 3 and _gone(pid)
    reader.close()  # twice is harmless


def test_no_child_where_it_is_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A1X_NO_FORK", "1")
    assert reader_process.start(str(SICK), None, None) is None
