"""``a1x-tui gpu-agent``: one line on bad input or no NVML, samples on disk, a clean stop on SIGTERM."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from a1x_diagnostics.gpu import read_log

ROOT = Path(__file__).resolve().parents[2]

# Runs the real CLI with NVML replaced by the scripted backend (no GPU on CI).
_RUNNER = """
import sys
import a1x_diagnostics.gpu.sampler as sampler
from a1x_diagnostics.gpu.backend import unavailable_from_code
from a1x_diagnostics.gpu.fake import FakeBackend, fake_h200
mode = sys.argv[1]
if mode == "none":
    sampler.PynvmlBackend = lambda: FakeBackend(unavailable=unavailable_from_code(18, "x"))
else:
    sampler.PynvmlBackend = lambda: fake_h200(2, [(0, 1, 1 << 30)])
from a1x_tui.cli import main
raise SystemExit(main(["gpu-agent", *sys.argv[2:]]))
"""


def _agent(mode: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _RUNNER, mode, *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_not_a_directory_is_one_line(tmp_path: Path) -> None:
    _, err = _agent("fake", str(tmp_path / "missing")).communicate(timeout=30)
    assert err.strip() == f"a1x-tui gpu-agent: {tmp_path / 'missing'}: not a directory"


def test_no_nvml_is_one_line_and_a_line_on_disk(tmp_path: Path) -> None:
    p = _agent("none", str(tmp_path), "--host", "n1")
    _out, err = p.communicate(timeout=30)
    assert p.returncode == 1
    assert len(err.strip().splitlines()) == 1 and "version mismatch" in err and "Traceback" not in err
    assert read_log(tmp_path / "gpu" / "n1.jsonl").unavailable is not None


def test_once_prints_and_writes_one_sample(tmp_path: Path) -> None:
    p = _agent("fake", str(tmp_path), "--once", "--host", "n1")
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    lines = out.strip().splitlines()
    assert lines[0].startswith("GPU 0 NVIDIA H200: memory 1024/143771 MiB used")
    assert lines[1].startswith("GPU 1 ")
    assert lines[2].strip().startswith("GPU 0 pid 1 [")
    log = read_log(tmp_path / "gpu" / "n1.jsonl")
    assert len(log.snapshots) == 1 and log.snapshots[0].processes is not None


def test_runs_until_sigterm_and_stops_cleanly(tmp_path: Path) -> None:
    pids = tmp_path / "pids.json"
    pids.write_text("[not json")
    p = _agent(
        "fake",
        str(tmp_path),
        "--interval",
        "0.05",
        "--process-interval",
        "0.1",
        "--host",
        "n1",
        "--pids-file",
        str(pids),
    )
    path = tmp_path / "gpu" / "n1.jsonl"
    deadline = time.time() + 20
    while time.time() < deadline and (not path.exists() or path.read_text().count('"sample"') < 3):
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    _out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    assert "is not a JSON object" in err  # one warning, then roles from command lines
    assert err.count("is not a JSON object") == 1
    last = json.loads(path.read_text().splitlines()[-1])
    assert last["kind"] == "stop"
    log = read_log(path)
    assert len(log.snapshots) >= 3 and log.stopped
