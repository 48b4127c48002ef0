"""``<run>/supervisor/pids.json`` and the GPU agent run beside local training."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from supervisor_helpers import World

from a1x_supervisor.daemon import Plan, Supervisor
from a1x_supervisor.pids import PidsFile, ReplicaLabeler, read_pids

SLEEPER = """
import subprocess, sys, time
if sys.argv[1:] == ["spawn"]:
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
time.sleep(60)
"""


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[dict[str, subprocess.Popen[bytes]]]:
    """A controller and two replicas as the launcher starts them: COSMOS_ROLE set, output to their log."""
    logs = tmp_path / "logs_20250101-000000"
    logs.mkdir()
    procs: dict[str, subprocess.Popen[bytes]] = {}
    for name, role, args in (
        ("controller", "Controller", []),
        ("policy_0", "Policy", ["spawn"]),  # its child (a torchrun worker) is the same replica
        ("rollout_0", "Rollout", []),
    ):
        env = dict(os.environ, COSMOS_ROLE=role, CUDA_VISIBLE_DEVICES="0")
        with open(logs / f"{name}.log", "wb") as out:
            procs[name] = subprocess.Popen([sys.executable, "-c", SLEEPER, *args], env=env, stdout=out)
    yield procs
    for proc in procs.values():
        for child in psutil.Process(proc.pid).children(recursive=True):
            child.kill()
        proc.kill()
        proc.wait()


def test_replicas_are_named_from_their_environment_and_log_file(
    tree: dict[str, subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    deadline = time.monotonic() + 10
    while not psutil.Process(tree["policy_0"].pid).children() and time.monotonic() < deadline:
        time.sleep(0.05)
    pids = [p.pid for p in tree.values()] + [c.pid for c in psutil.Process(tree["policy_0"].pid).children()]
    labels = ReplicaLabeler().labels(pids)
    assert labels == {proc.pid: name for name, proc in tree.items()}  # the policy's child: found via its parent

    pids_file = PidsFile(tmp_path / "supervisor" / "pids.json")
    pids_file.set_stage(4242, "train")
    pids_file.set_replicas(labels)
    on_disk = json.loads(pids_file.path.read_text())
    assert on_disk == {str(4242): "train", **{str(p): name for p, name in labels.items()}}
    assert read_pids(pids_file.path)[4242] == "train"
    pids_file.clear()
    assert read_pids(pids_file.path) == {}


AGENT = """
import json, os, sys, time
from pathlib import Path
pids, out = Path(sys.argv[sys.argv.index('--pids-file') + 1]), Path(sys.argv[1])
while True:
    try:
        data = json.loads(pids.read_text())
    except (OSError, ValueError):
        data = {}
    if 'train' in data.values():  # atomically: the stop's SIGTERM may land between truncate and write
        out.with_suffix('.tmp').write_text(json.dumps(data))
        os.replace(out.with_suffix('.tmp'), out)
    time.sleep(0.05)
"""


def _agents(mark: str) -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["cmdline"]) if mark in " ".join(p.info["cmdline"] or [])]


@pytest.mark.slow  # a supervised training run
def test_the_agent_runs_beside_training_with_the_pids_file_and_stops_with_it(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in world.env.items():
        monkeypatch.setenv(key, value)
    world.make_venv()
    world.configure()
    world.set_modes(train="slow", steps=8)
    saw, pids = world.root / "agent_saw.json", world.run_dir / "supervisor" / "pids.json"
    agent = [sys.executable, "-c", AGENT, str(saw), "--pids-file", str(pids), "a1x-fake-agent"]
    code = Supervisor(world.run_dir, Plan(only="train"), install_signals=False, diagnose=False, gpu_agent=agent).serve()
    assert code == 0, world.stage("train")["reason"]
    launcher = world.calls("cosmos-rl")[0]["pid"]
    assert json.loads(saw.read_text()) == {str(launcher): "train"}  # what the agent read while training ran
    assert read_pids(pids) == {}  # nothing of the stage runs any more
    assert _agents("a1x-fake-agent") == []  # stopped with the stage
    assert "GPU agent pid" in (world.run_dir / "stages" / "train.log").read_text()


@pytest.mark.slow  # a supervised training run
@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine may have NVML")
def test_an_agent_without_nvml_is_noted_once_and_training_goes_on(world: World) -> None:
    world.make_venv()
    world.configure()
    world.set_modes(train="slow", steps=10)  # 3 s: the real agent starts and gives up well before
    # The detached daemon (a child subreaper, as users run it) with the real `a1x-tui gpu-agent`.
    done = world.cli("run", "--run-dir", str(world.run_dir), "--only", "train", "--skip-preflight")
    assert done.returncode == 0, done.stdout + done.stderr
    events = [json.loads(line) for line in (world.run_dir / "events.jsonl").read_text().splitlines()]
    notes = [e["message"] for e in events if e["kind"] == "note" and "GPU agent" in e["message"]]
    assert len(notes) == 1, notes
    assert notes[0].startswith("GPU agent exited with code 1: a1x-tui gpu-agent: NVML unavailable: ")
    assert notes[0].endswith("; training goes on without GPU samples")
    assert world.stage("train")["status"] == "succeeded"
    assert "outlived the stage" not in (world.run_dir / "stages" / "train.log").read_text()  # not the stage's
    assert _agents("gpu-agent") == []
