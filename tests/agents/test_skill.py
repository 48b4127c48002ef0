"""``a1x-tui skill`` (issue 39, point 2): the SKILL.md it prints has what agents that load skills read (name,
description, when to use, set-up, check, follow, lint, fix), and every command it shows works: each
line of its ``bash`` blocks is run here on recorded runs (``$LOGS``, ``$TOML``, ``$FINDING``, ``$RUN``,
``$HOST`` set to them), and its MCP configuration starts the server."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from agents_helpers import REPO, a1x
from sshd_server import Sshd

OOM = REPO / "tests" / "fixtures" / "cosmos" / "747d1bd" / "rollout_oom"


def _skill() -> str:
    done = a1x("skill")
    assert done.returncode == 0 and not done.stderr
    return done.stdout


def _commands(text: str) -> list[str]:
    """Every command line of the skill's ``bash`` blocks, its trailing comment cut."""
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            line = re.sub(r"\s{2,}#.*$", "", line).strip()
            if line:
                lines.append(line)
    return lines


def _world(tmp_path: Path) -> dict[str, str]:
    logs = tmp_path / "logs"
    shutil.copytree(OOM, logs, symlinks=True)
    toml = tmp_path / "train.toml"
    shutil.copy(OOM / "rollout_oom.toml", toml)
    run = tmp_path / "run"  # a run directory of a1x-tui whose supervisor has ended
    (run / "stages").mkdir(parents=True)
    (run / "run.toml").write_text("# a run\n")
    (run / "state.json").write_text(json.dumps({"run_id": "run", "run_dir": str(run), "status": "stopped",
                                                "stages": [{"name": "train", "status": "stopped"}]}))
    return {"LOGS": str(logs), "TOML": str(toml), "FINDING": "policy_oom_config", "RUN": str(run)}


def _run(line: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(REPO), **env,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    if line.startswith("python3 -m pip install"):  # in this checkout; resolved, not installed over the test's
        line = line.replace("python3", shlex_quote(sys.executable), 1) + " --dry-run --no-deps"
        return subprocess.run(["bash", "-c", line], capture_output=True, text=True, cwd=REPO, env=full, timeout=300)
    line = re.sub(r"^a1x-tui\b", f"{shlex_quote(sys.executable)} -m a1x_tui", line)
    if " watch " in f" {line} ":  # follows until interrupted: Ctrl-C once the run's history is read
        proc = subprocess.Popen(["bash", "-c", f"exec {line}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, cwd=cwd, env=full)
        time.sleep(8)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        return subprocess.CompletedProcess(line, proc.returncode, out, err)
    return subprocess.run(["bash", "-c", line], capture_output=True, text=True, cwd=cwd, env=full, timeout=300)


def shlex_quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


def _holds(line: str, done: subprocess.CompletedProcess[str]) -> None:
    """What "works" means for one line: no usage error or traceback, an exit code the command gives for a
    finding (not 3, unknown), and JSON where JSON was asked for."""
    assert "Traceback" not in done.stderr, (line, done.stderr)
    if "pip install" in line:
        assert done.returncode == 0 and "Would install a1x-tui" in done.stdout, (line, done.stdout, done.stderr)
        return
    assert done.returncode in ((0,) if line.startswith("a1x-tui fix ") else (0, 1, 2)), (line, done.returncode,
                                                                                      done.stderr)
    if "--format json" in line and ">" not in line:
        if " watch " in f" {line} ":
            assert all(json.loads(row)["type"] for row in done.stdout.splitlines())
        else:
            json.loads(done.stdout)
    if "--json" in line:
        json.loads(done.stdout)


def test_the_skill_has_what_agents_read() -> None:
    text = _skill()
    front = re.match(r"^---\nname: (?P<name>[a-z0-9-]+)\ndescription: (?P<description>.+?)\n---\n", text)
    assert front and front["name"] == "a1x-tui" and len(front["description"]) < 1024
    assert "Cosmos-RL" in front["description"] and "Use when" in front["description"]
    for heading in ("## When to use", "## Set up", "## Check a run", "## Follow a live run", "## Lint a TOML",
                    "## Fix"):
        assert heading in text
    commands = _commands(text)
    assert any(c.startswith("a1x-tui --check") for c in commands)
    for word in ("watch", "lint", "fix", "status", "stop"):
        assert any(c.startswith(f"a1x-tui {word} ") for c in commands), word


@pytest.mark.slow  # more than a few seconds (the fast lane, README)
def test_every_command_the_skill_shows_works(tmp_path: Path) -> None:
    env = _world(tmp_path)
    local = [c for c in _commands(_skill()) if "$HOST" not in c]
    assert len(local) >= 10
    for line in local:
        # the report's lines fix a finding still open after the --apply line above has cured the first one
        finding = {"FINDING": "checkpointing_disabled"} if "--report" in line else {}
        _holds(line, _run(line, {**env, **finding}, tmp_path))
    assert (tmp_path / "report.json").is_file()  # the report the --report line reads
    assert Path(env["TOML"]).read_text() != (OOM / "rollout_oom.toml").read_text()  # --apply wrote the fix
    assert list(tmp_path.glob("train.toml.*.bak"))


def test_its_mcp_configuration_starts_the_server() -> None:
    text = _skill()
    config = json.loads(re.search(r"```json\n(.*?)```", text, flags=re.S).group(1))  # type: ignore[union-attr]
    server = config["mcpServers"]["a1x-tui"]
    assert server["command"] == "a1x-tui"
    done = subprocess.run([sys.executable, "-m", "a1x_tui", *server["args"]], input="", capture_output=True, text=True,
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=60)
    assert done.returncode == 0 and "Traceback" not in done.stderr  # stdin closed at once: it ends cleanly


@pytest.mark.slow
def test_its_remote_command_works_through_ssh(sshd: Sshd, tmp_path: Path) -> None:
    env = {**_world(tmp_path), **sshd.env, "HOST": sshd.host}
    remote = [c for c in _commands(_skill()) if "$HOST" in c]
    assert remote
    for line in remote:
        done = _run(line, env, tmp_path)
        _holds(line, done)
        assert json.loads(done.stdout)["target"] == f"{sshd.host}:{env['LOGS']}"
