"""A supervised run with ``[alerts] wandb = true``: the train stage's findings become alerts of a W&B monitor
run, which logs the outcome when the stage ends (issue 39, point 5), checked in wandb's offline run files."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from live_fakes import Rule, Script
from supervisor_helpers import REPO, World

from a1x_supervisor.daemon import Plan, Supervisor

pytest.importorskip("wandb")
sys.path.insert(0, str(REPO / "tests" / "agents"))
from agents_helpers import wandb_records


def test_the_spec_s_alerts_raise_each_finding_on_a_monitor_run(
    world: World, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for key, value in {**world.env, "WANDB_MODE": "offline", "WANDB_DIR": str(tmp_path / "wb")}.items():
        monkeypatch.setenv(key, value)
    (tmp_path / "wb").mkdir()
    world.make_venv()
    world.configure(live_diagnostics=True, cluster="[alerts]\nwandb = true\n")
    world.set_modes(train="slow", steps=40)
    script = Script(Rule("Step: 2/40", "replica_died", replica="policy_0"))

    code = Supervisor(world.run_dir, Plan(only="train"), diagnose=script.factory, install_signals=False).serve()
    assert code == 1 and world.stage("train")["status"] == "failed"
    records = wandb_records(tmp_path / "wb")
    run = next(r for r in records if r["kind"] == "run")
    assert run["jobType"] == "a1x-tui-monitor" and run["runGroup"] == world.run_dir.name
    assert run["project"] == "Alpamayo_RL"  # the spec's [wandb] project (the TOML's [logging] when it names one)
    alerts = [r for r in records if r["kind"] == "alert"]
    assert len(alerts) == 1 and alerts[0]["level"] == "ERROR"
    finding = json.loads((world.run_dir / "findings.jsonl").read_text().splitlines()[0])["finding"]
    assert alerts[0]["title"] == finding["title"][:63] and "Evidence: " in alerts[0]["text"]
    assert next(r for r in records if r["kind"] == "exit")["exitCode"] == 2
