"""Findings as W&B alerts (issue 39, point 5), against wandb itself: its offline mode (what was queued in the
run files) and a W&B that does not answer (one line, the run goes on). The supervisor's path
(``[alerts] wandb = true``) is held in tests/supervisor/test_wandb_alerts.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from agents_helpers import REPO, a1x, wandb_records

pytest.importorskip("wandb")

from a1x_supervisor.alerts import WandbAlerts, alert_text, alert_title

OOM = REPO / "tests" / "fixtures" / "cosmos" / "747d1bd" / "rollout_oom"
KEY = "0123456789abcdef0123456789abcdef01234567"  # the shape of a W&B key: it must never be printed


def _watch(args: list[str], env: dict[str, str], seconds: float = 10.0) -> subprocess.CompletedProcess[str]:
    """``a1x-tui watch ARGS`` for a while, then Ctrl-C, as a user ends it."""
    proc = subprocess.Popen([sys.executable, "-m", "a1x_tui", "watch", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO), **env})
    time.sleep(seconds)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.slow
def test_watch_wandb_queues_one_alert_per_finding_on_a_monitor_run(tmp_path: Path) -> None:
    env = {"WANDB_MODE": "offline", "WANDB_DIR": str(tmp_path), "WANDB_API_KEY": KEY}
    done = _watch([str(OOM), "--wandb", "alamo-rl", "--format", "json"], env)
    assert done.returncode == 2, done.stderr
    raised = [json.loads(line)["finding"] for line in done.stdout.splitlines() if '"finding_raised"' in line]
    records = wandb_records(tmp_path)
    run = next(r for r in records if r["kind"] == "run")
    assert run["project"] == "alamo-rl" and run["jobType"] == "a1x-tui-monitor"
    assert run["runGroup"] == "20261129-150226"  # the run's logs_<ts> stamp: Cosmos-RL's W&B run id
    alerts = [r for r in records if r["kind"] == "alert"]
    assert sorted(a["title"] for a in alerts) == sorted(alert_title(f) for f in raised)
    for finding in raised:
        alert = next(a for a in alerts if a["title"] == alert_title(finding))
        assert alert["level"] == {"critical": "ERROR", "warning": "WARN"}[finding["severity"]]
        assert alert["text"].startswith(finding["explanation"][:60])
        ev = finding["evidence"][0]
        assert f"Evidence: {ev['file']}:{ev['line']}: " in alert["text"]
        assert ("Fix: " in alert["text"]) == bool(finding["fixes"]) and int(alert["waitDuration"]) == 600_000
    summary = {}
    for r in records:
        if r["kind"] == "summary":
            for item in r.get("update", []):
                summary[item.get("key") or "/".join(item.get("nestedKey", []))] = json.loads(item["valueJson"])
    assert summary["a1x/outcome"] == "crashed" and summary["a1x/status"] == "critical"
    assert next(r for r in records if r["kind"] == "exit")["exitCode"] == 2
    assert KEY not in done.stdout + done.stderr


@pytest.mark.slow
def test_with_w_and_b_out_of_reach_one_line_and_the_watch_goes_on(tmp_path: Path) -> None:
    env = {"WANDB_API_KEY": KEY, "WANDB_BASE_URL": "http://127.0.0.1:9", "WANDB_INIT_TIMEOUT": "5",
           "WANDB_DIR": str(tmp_path), "WANDB_MODE": "online"}
    done = _watch([str(OOM), "--wandb", "alamo-rl"], env, seconds=12)
    assert done.returncode == 2
    assert "RAISED critical vllm_oom" in done.stdout  # the findings still come
    lines = [line for line in done.stderr.splitlines() if "W&B" in line]
    assert len(lines) == 1 and lines[0].startswith("a1x-tui watch: W&B alerts off: ") and "the run goes on" in lines[0]
    assert KEY not in done.stdout + done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow  # more than a few seconds (the fast lane, README)
def test_without_the_package_one_line_and_the_watch_goes_on(tmp_path: Path) -> None:
    fake = tmp_path / "wandb"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('no', name='wandb')\n")
    done = _watch([str(OOM), "--wandb", "alamo-rl"], {"PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}"}, seconds=6)
    assert done.returncode == 2 and "RAISED critical vllm_oom" in done.stdout
    assert "a1x-tui watch: W&B alerts off: wandb is not installed (pip install 'a1x-tui[wandb]'); the run goes on" \
        in done.stderr.splitlines()


def test_an_alert_is_rate_limited_per_finding_and_sent_again_when_it_escalates(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    said: list[str] = []
    alerts = WandbAlerts(project="p", group="g", name="a1x-monitor g", say=said.append).start()
    warning = {"id": "rollout_buffer_growth", "severity": "warning", "title": "Rollouts outpace the policy: "
               "pending rollouts keep growing and growing past what any title may hold", "explanation": "e",
               "evidence": [{"file": "controller.log", "line": 7, "text": f"WANDB_API_KEY={KEY}"}], "fixes": []}
    assert alerts.finding("k", warning)
    assert not alerts.finding("k", warning)  # updated, same severity: no new alert
    assert alerts.finding("k", {**warning, "severity": "critical"})  # escalated
    alerts.resolved("k")
    assert not alerts.finding("k", {**warning, "severity": "critical"})  # raised again within wait_s
    alerts.finish(outcome={"state": "running", "summary": "step 3/8"}, status="critical", exit_code=2,
                  open_keys=["k"])
    sent = [r for r in wandb_records(tmp_path) if r["kind"] == "alert"]
    assert [(a["level"]) for a in sent] == ["WARN", "ERROR"] and not said
    assert all(len(a["title"]) < 64 and a["title"].endswith("…") for a in sent)
    assert KEY not in json.dumps(sent)  # masked as --check masks it


def test_the_alert_text_is_the_explanation_the_first_evidence_line_and_the_fix() -> None:
    finding = {"id": "vllm_oom", "severity": "critical", "title": "A rollout replica ran out of GPU memory",
               "explanation": "rollout_0 ran out of GPU memory.",
               "evidence": [{"file": "rollout_0.log", "line": 88, "text": "torch.OutOfMemoryError: CUDA out of memory"},
                            {"file": "rollout_0.log", "line": 128, "text": "second"}],
               "fixes": [{"path": "rollout.gpu_memory_utilization", "current": 0.9, "proposed": 0.7,
                          "why": "leaves room for activations"}]}
    assert alert_text(finding) == (
        "rollout_0 ran out of GPU memory.\n\nEvidence: rollout_0.log:88: torch.OutOfMemoryError: CUDA out of memory"
        "\n\nFix: rollout.gpu_memory_utilization: 0.9 -> 0.7 (leaves room for activations)"
    )
    assert alert_title(finding) == "A rollout replica ran out of GPU memory"


def test_check_and_the_core_commands_import_no_extra() -> None:
    """--check, watch, lint, status: neither mcp, textual-serve nor wandb is imported (nor Textual by --check)."""
    probe = ("import sys, runpy; sys.argv = ['a1x-tui'] + sys.argv[1:]\n"
             "from a1x_tui.cli import main\n"
             "code = main(sys.argv[1:])\n"
             "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'textual_serve', 'wandb', 'textual'))\n"
             "print('IMPORTED', bad)\n")
    for args in (["--check", str(OOM)], ["lint", str(OOM / "rollout_oom.toml")], ["status", str(OOM)],
                 ["skill"], ["watch", "/nonexistent/run"]):
        done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, cwd=REPO,
                              env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
        assert "IMPORTED []" in done.stdout, (args, done.stdout[-300:], done.stderr[-300:])
    assert a1x("watch", "--help").returncode == 0
