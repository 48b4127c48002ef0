"""``--check`` on hostile run folders (issue 37, point 8): never a traceback, never a wait, the same report twice.

``hostile_runs.hostile_run(seed)`` makes a run folder from recorded lines spoilt the ways disks, copies and
crashes spoil them, with links that loop or dangle, unreadable files and folders where files belong. Each seed's
run is checked twice in this process, judged at one fixed moment: both reports must be whole (no exception, and
no crash caught on the way: a detector's, the outcome's, a linter's), not cut short by the time limit (a limit
far above what a small run takes: a hang, not a slow machine, reaches it) and identical. A few are checked by
the command itself in a fresh process, with another hash seed each: one report on stdout, an exit code of the
monitoring contract, no traceback. ``benchmarks/fuzz_check.py`` runs the same over 1,800 seeds
(docs/parsing.md "Hostile input").
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hostile_runs import MTIME, checked, hidden_crashes, hostile_run, unlock

from a1x_diagnostics.engine import check

REPO = Path(__file__).resolve().parents[2]
SEEDS = range(80)
CLI_SEEDS = (0, 4, 7, 8, 13, 21)  # a crash, a completed run, an empty logs_<ts>, a dangling link, and more


def _tree(folder: Path) -> str:
    """A digest of every name, link target, mode and byte under ``folder``."""
    h = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(folder)):
        dirs.sort()
        for name in sorted(dirs + files):
            path = Path(root, name)
            h.update(str(path.relative_to(folder)).encode())
            if path.is_symlink():
                h.update(os.readlink(path).encode())
            elif path.is_file():
                st = path.stat()
                h.update(f"{st.st_mode:o} {st.st_mtime}".encode())
                if os.access(path, os.R_OK):
                    h.update(path.read_bytes())
    return h.hexdigest()


@pytest.fixture
def scratch(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield tmp_path
    unlock(tmp_path)


def test_a_seed_makes_the_same_run_every_time(scratch: Path) -> None:
    for seed in (3, 11, 29):
        hostile_run(seed, scratch / f"a{seed}")
        hostile_run(seed, scratch / f"b{seed}")
        assert _tree(scratch / f"a{seed}") == _tree(scratch / f"b{seed}")


@pytest.mark.slow
def test_check_of_hostile_runs_is_whole_bounded_and_the_same_twice(scratch: Path) -> None:
    statuses = set()
    for seed in SEEDS:
        target = hostile_run(seed, scratch / str(seed))
        first = checked(target)  # raises if check() did: the test fails with its traceback
        assert checked(target) == first, f"seed {seed}: two reports of one run differ"
        report = check(target, now=MTIME + 2 * 86400, timeout=60)
        assert "timed out" not in report.summary, f"seed {seed}: {report.summary}"
        assert hidden_crashes(report) == [], f"seed {seed}"
        statuses.add(report.status.value)
    assert {"critical", "warning", "unknown"} <= statuses  # the seeds reach the verdicts, not only refusals


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_the_command_answers_hostile_runs_in_one_report(fmt: str, scratch: Path) -> None:
    for n, seed in enumerate(CLI_SEEDS):
        target = hostile_run(seed, scratch / str(seed))
        env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONHASHSEED": str(n)}
        done = subprocess.run([sys.executable, "-m", "a1x_tui", "--check", str(target), "--format", fmt],
                              capture_output=True, text=True, env=env, cwd=REPO, timeout=240, check=False)
        assert "Traceback" not in done.stderr, f"seed {seed}: {done.stderr}"
        assert done.returncode in (0, 1, 2, 3), f"seed {seed}: exit {done.returncode}: {done.stderr}"
        if fmt == "json":
            report = json.loads(done.stdout)
            assert report["status"] in ("ok", "warning", "critical", "unknown")
            assert report["exit_code"] == done.returncode
            assert "timed out" not in report["summary"]
        else:
            assert done.stdout.startswith("A1X-TUI "), done.stdout[:200]
            assert "timed out" not in done.stdout.splitlines()[0]
