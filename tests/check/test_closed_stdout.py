"""A closed stdout (`a1x-tui ... | head -1` after head exited) ends every command quietly with its own
exit code: no BrokenPipeError traceback, no exit 1 in place of the real status."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # every command in a subprocess with a closed stdout

REPO = Path(__file__).resolve().parents[2]
SICK = REPO / "a1x_diagnostics" / "examples" / "sick"
TOML = REPO / "tests" / "config" / "data" / "recipe_local_test.toml"


def _run(*args: str, closed: bool) -> subprocess.CompletedProcess[bytes]:
    """Run the CLI with stdout a pipe whose reader is already gone (or a normal pipe)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if not closed:
        return subprocess.run([sys.executable, "-m", "a1x_tui", *args], capture_output=True, env=env, timeout=120)
    read_end, write_end = os.pipe()
    os.close(read_end)  # every write to the pipe now fails with EPIPE
    try:
        return subprocess.run(
            [sys.executable, "-m", "a1x_tui", *args], stdout=write_end, stderr=subprocess.PIPE, env=env, timeout=120
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize(
    "args",
    [
        ("--check", str(SICK)),
        ("--check", str(SICK), "--format", "json"),
        ("--check", "--schema"),
        ("lint", str(TOML), "--gpus", "8"),
        ("fix", str(TOML), "--finding", "placeholder_path", "--set", "train.output_dir=/o",
         "--set", "policy.model_name_or_path=/m"),
        ("--help",),
        ("watch", str(SICK)),  # it ends once the first finding cannot be written
    ],
    ids=["check", "check-json", "schema", "lint", "fix", "help", "watch"],
)
def test_a_closed_stdout_keeps_the_exit_code_and_prints_no_traceback(args: tuple[str, ...]) -> None:
    closed = _run(*args, closed=True)
    err = closed.stderr.decode()
    assert "Traceback" not in err and "BrokenPipeError" not in err and "Exception ignored" not in err, err
    if args[0] == "watch":
        assert closed.returncode == 2  # the sick run's findings are critical
        return
    assert closed.returncode == _run(*args, closed=False).returncode


def test_a_stdout_closed_from_the_start_keeps_the_exit_code() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        ["sh", "-c", f'exec "{sys.executable}" -m a1x_tui --check "{SICK}" >&-'],
        capture_output=True, env=env, timeout=120,
    )
    assert done.returncode == 2 and b"Traceback" not in done.stderr, done.stderr
