"""``a1x-tui --check`` reads a run in a child process and reports exactly what one process would.

``a1x_diagnostics.reader_process`` forks a child that reads the run into a ``collect.Collection`` while
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
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from a1x_diagnostics import reader_process
from a1x_diagnostics.parsing import records

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "cosmos"
RUNS = sorted(p for p in FIXTURES.glob("*/*") if p.is_dir() and any(p.glob("logs_*")))
EXAMPLES = sorted(p for p in (ROOT / "a1x_diagnostics" / "examples").iterdir() if p.is_dir() and p.name[0] != "_")
SICK = ROOT / "a1x_diagnostics" / "examples" / "sick"

pytestmark = [
    pytest.mark.slow,  # forks and child processes reading every recorded run
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the child process is forked on Linux only"),
    pytest.mark.skipif(not records.native_available(), reason="the child reads with the native reader"),
]

# Every run read by a child first, then by the process itself (the native reader's threads in the
# parent would make it refuse to fork), in a fresh interpreter: one thread, as a1x-tui --check is.
_BOTH_WAYS = """
import json, sys
from a1x_diagnostics import reader_process
from a1x_diagnostics.engine import check
def report(target, reader=None):
    r = check(target, now=1.75e9, reader=reader).model_dump(mode="json")
    r.pop("generated_at")
    return r
out = {"child": {}, "why": {}, "self": {}}
for target in sys.argv[1:]:
    child = reader_process.start(target, None, None)
    out["child"][target] = report(target, child.read_into if child else None)
    out["why"][target] = "not started" if child is None else child.why if not child.taken else "taken"
for target in sys.argv[1:]:
    out["self"][target] = report(target)
print(json.dumps(out))
"""


def _fresh(code: str, *args: str, env: dict[str, str] | None = None) -> Any:
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}, timeout=240)
    return json.loads(proc.stdout)


def test_every_recorded_run_and_example_is_reported_the_same_read_by_a_child() -> None:
    targets = [str(p) for p in RUNS + EXAMPLES]
    got = _fresh(_BOTH_WAYS, *targets)
    assert got["why"] == {t: "taken" for t in targets}  # the child read each one, none fell back
    for target in targets:
        assert got["child"][target] == got["self"][target], target


def test_the_command_line_report_is_the_same_with_and_without_the_child() -> None:
    # The command itself, its reader watched: it says on stderr whether a child's read was taken.
    code = """
import sys
from a1x_diagnostics import reader_process
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


@pytest.mark.parametrize("timeout", ["inf", "nan"])
def test_a_timeout_that_is_no_number_of_seconds_is_no_limit(timeout: str) -> None:
    """``--timeout inf`` (or nan) sets no limit, read by a child as by one process."""
    proc = subprocess.run([sys.executable, "-m", "a1x_tui", "--check", str(SICK), "--timeout", timeout], cwd=ROOT,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stdout.startswith("A1X-TUI CRITICAL - crashed")


def test_the_reading_side_imports_no_report_model() -> None:
    """The child's whole read (discovery, the native reader, the Collection) in a fresh interpreter:
    neither pydantic nor the findings, the catalog or the detectors' base come in."""
    code = """
import json, sys
from pathlib import Path
from a1x_diagnostics import reader_process
from a1x_diagnostics.collect import Collection, read_into
from a1x_diagnostics.parsing import discover, records
layout = discover(Path(sys.argv[1]), None)
records.prefetch(layout.files)
c = Collection()
c.note_files(layout)
read_into(c, layout, None)
heavy = ("pydantic", "a1x_diagnostics.findings", "a1x_diagnostics.catalog", "a1x_diagnostics.detectors._base",
         "a1x_diagnostics.detectors.run", "a1x_diagnostics.report")
print(json.dumps({"events": c.store.event_count, "heavy": sorted(m for m in sys.modules if m.startswith(heavy))}))
"""
    got = _fresh(code, str(SICK))
    assert got["events"] > 100
    assert got["heavy"] == []


def test_records_and_batches_load_back_as_their_own_classes() -> None:
    from a1x_diagnostics.parsing.records import BATCHES, RECORDS

    for cls in [*RECORDS.values(), *BATCHES.values()]:
        value = cls(*range(len(cls._fields)))
        back = pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        assert type(back) is cls and back == value


def test_the_detectors_run_in_one_order_whichever_module_is_imported_first() -> None:
    code = """
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
from a1x_diagnostics.detectors.run import ordered
print(json.dumps([d.id for d in ordered()]))
"""
    canonical = _fresh(code)
    assert len(canonical) > 40
    assert _fresh(code, "a1x_diagnostics.detectors.weight_sync", "a1x_diagnostics.detectors.outcome",
                  "a1x_diagnostics.detectors.memory") == canonical


# --- the child failing: the parent reads the run itself ------------------------------------------------

# Each way a child can end, in a fresh interpreter (one thread: a child forked from pytest's process could
# meet a lock another thread held). Before each fork the threads of a read in this process are let end.
_ENDINGS = """
import json, os, signal, sys, threading, time
from a1x_diagnostics import reader_process
from a1x_diagnostics.engine import check
sick, healthy = sys.argv[1], sys.argv[2]

def report(reader=None, timeout=None):
    r = check(sick, now=1.75e9, reader=reader, timeout=timeout).model_dump(mode="json")
    r.pop("generated_at")
    return r

def gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False

real = reader_process._child
def raises(*args): raise RuntimeError("broken child")
def killed(*args): os.kill(os.getpid(), signal.SIGKILL)
def garbage(fd, *args):
    with open(fd, "wb") as out:
        out.write(b"not a pickle")
def other_run(fd, path, run, deadline, watch): real(fd, healthy, run, deadline, watch)
def hangs(*args): time.sleep(60)

out = {}
for name, child, timeout in [("real", real, 60), ("raises", raises, 60), ("killed", killed, 60),
                             ("garbage", garbage, 60), ("other_run", other_run, 60), ("hangs", hangs, 0.5),
                             ("own_deadline", real, 0.0)]:
    for t in threading.enumerate():
        if t is not threading.main_thread():
            t.join(10)
    reader_process._child = child
    reader = reader_process.start(sick, None, timeout)
    pid = reader.pid
    t0 = time.monotonic()
    got = report(reader.read_into, timeout=timeout or 30)
    out[name] = {"report": got, "why": reader.why, "taken": reader.taken, "gone": gone(pid),
                 "seconds": time.monotonic() - t0}
reader_process._child = real
out["self"] = report()
print(json.dumps(out))
"""

FALLBACKS = {"raises": "nothing read (exit status 1)", "killed": f"nothing read (exit status -{int(signal.SIGKILL)})",
             "garbage": "its answer does not load", "other_run": "it found other files than this process"}


@pytest.fixture(scope="module")
def endings() -> Any:
    return _fresh(_ENDINGS, str(SICK), str(ROOT / "a1x_diagnostics" / "examples" / "healthy"))


def test_a_child_that_reads_is_taken_and_reaped(endings: Any) -> None:
    real = endings["real"]
    assert real["taken"] and real["why"] is None and real["gone"]
    assert real["report"] == endings["self"]


@pytest.mark.parametrize("ending", sorted(FALLBACKS))
def test_a_child_that_fails_leaves_the_same_report_read_by_the_parent(endings: Any, ending: str) -> None:
    got = endings[ending]
    assert not got["taken"] and got["why"].startswith(FALLBACKS[ending]), got["why"]
    assert got["gone"]
    assert got["report"] == endings["self"]


def test_a_child_past_the_timeout_is_killed_and_the_run_unknown(endings: Any) -> None:
    got = endings["hangs"]
    assert got["report"]["status"] == "unknown" and "timed out after 0.5 s" in got["report"]["summary"]
    assert got["gone"] and got["seconds"] < 10 and not got["taken"]


def test_a_child_whose_own_read_times_out_makes_the_run_unknown(endings: Any) -> None:
    got = endings["own_deadline"]  # its deadline already past when it reads; the parent's is 30 s away
    assert got["report"]["status"] == "unknown" and "timed out" in got["report"]["summary"]
    assert got["gone"] and not got["taken"]


def test_a_report_that_does_not_need_the_child_stops_it(tmp_path: Path) -> None:
    """Not a run (UNKNOWN before any reading): ``close`` leaves no child behind."""
    code = """
import json, os, sys
from a1x_diagnostics import reader_process
from a1x_diagnostics.engine import check
reader = reader_process.start(sys.argv[1], None, 60)
pid = reader.pid
report = check(sys.argv[1], reader=reader.read_into)
reader.close()
reader.close()
try:
    os.kill(pid, 0)
    gone = False
except ProcessLookupError:
    gone = True
print(json.dumps({"status": report.status.value, "gone": gone, "taken": reader.taken}))
"""
    assert _fresh(code, str(tmp_path)) == {"status": "unknown", "gone": True, "taken": False}


def test_a_killed_parent_leaves_no_child_holding_its_output() -> None:
    """A harness that kills ``a1x-tui --check`` (``subprocess.run(timeout=...)`` kills the parent only)
    gets the end of its output at once: the child holds none of its streams, and stops reading when
    it finds its parent gone."""
    code = """
import os, sys, time
from a1x_diagnostics import reader_process
real = reader_process._child
def slow(fd, path, run, deadline, watch):
    time.sleep(3)  # not looking: the output's end must not wait for this
    for _ in range(200):  # looking: gone within 0.05 s of this, 10 s before its read would end it
        watch()
        time.sleep(0.05)
    real(fd, path, run, deadline, watch)
reader_process._child = slow
reader = reader_process.start(sys.argv[1], None, 60)
print(reader.pid, flush=True)
time.sleep(60)
"""
    proc = subprocess.Popen([sys.executable, "-c", code, str(SICK)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    proc.kill()
    t0 = time.monotonic()
    proc.communicate(timeout=30)  # EOF on both pipes: nothing but the parent held them
    assert time.monotonic() - t0 < 1.5
    while time.monotonic() - t0 < 8 and not _gone(child):
        time.sleep(0.05)
    assert _gone(child)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_no_child_where_it_is_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A1X_NO_FORK", "1")
    assert reader_process.start(str(SICK), None, None) is None
