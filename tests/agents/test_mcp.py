"""``a1x-tui mcp`` driven by the MCP SDK's own client over stdio (issue 39, point 1).

The server is the installed command, started by ``mcp.Client`` as an agent starts it. Each tool is
called on recorded runs and compared with what the CLI prints for the same question; bad arguments
are JSON-RPC errors of one line, a path that is not a run a tool error of one line, and the server's
stderr never holds a traceback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

import anyio
from agents_helpers import REPO, a1x, start_demo, stop_demo
from mcp import Client, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

FX = REPO / "tests" / "fixtures" / "cosmos"
OOM = FX / "747d1bd" / "rollout_oom"
HEALTHY = FX / "v0.4.4" / "healthy"
TOML = OOM / "rollout_oom.toml"
TOOLS = {"check", "findings_since", "lint", "fix_preview", "fix_apply", "status", "stop"}


def session(body: Callable[[Client], Awaitable[None]]) -> str:
    """Run ``body`` against a fresh ``a1x-tui mcp``; returns what the server wrote on stderr."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "a1x_tui", "mcp"], cwd=str(REPO),
        env={"PYTHONPATH": str(REPO), "HOME": os.environ.get("HOME", "/tmp")},
    )
    with tempfile.TemporaryFile("w+", encoding="utf-8") as err:

        async def main() -> None:
            async with Client(stdio_client(params, errlog=err), read_timeout_seconds=120) as client:
                await body(client)

        anyio.run(main)
        err.seek(0)
        return err.read()


async def call(client: Client, name: str, args: dict[str, Any]) -> tuple[bool, Any]:
    result = await client.call_tool(name, args)
    text = result.content[0].text  # type: ignore[union-attr]
    if result.is_error and not text.lstrip().startswith("{"):
        return True, text
    return bool(result.is_error), json.loads(text)


def _without_clock(report: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in report.items() if k != "generated_at"}


def test_the_tools_are_listed_with_their_arguments() -> None:
    async def body(client: Client) -> None:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert set(listed) == TOOLS
        assert listed["check"].input_schema["required"] == ["path"]
        assert set(listed["check"].input_schema["properties"]) == {"path", "config", "run"}
        assert "confirm" in listed["stop"].input_schema["properties"]
        assert listed["stop"].annotations is not None and listed["stop"].annotations.destructive_hint
        assert "hash" in listed["fix_apply"].input_schema["required"]
        assert all(t.description for t in listed.values())

    assert "Traceback" not in session(body)


def test_check_answers_what_the_cli_prints_on_recorded_runs(tmp_path: Path) -> None:
    cli = {}
    for run in (OOM, HEALTHY):
        done = a1x("--check", str(run), "--format", "json")
        cli[run] = json.loads(done.stdout)
    cli_config = json.loads(a1x("--check", str(OOM), "--config", str(TOML), "--format", "json").stdout)
    empty = tmp_path / "empty"
    empty.mkdir()
    cli_empty = a1x("--check", str(empty), "--format", "json")

    async def body(client: Client) -> None:
        for run in (OOM, HEALTHY):
            error, report = await call(client, "check", {"path": str(run)})
            assert not error
            assert _without_clock(report) == _without_clock(cli[run])
        error, report = await call(client, "check", {"path": str(OOM), "config": str(TOML)})
        assert _without_clock(report) == _without_clock(cli_config)
        assert {f["id"] for f in report["findings"]} >= {"vllm_oom", "policy_oom_config"}
        # a path that is not a run: the CLI's UNKNOWN report, flagged as an error
        error, report = await call(client, "check", {"path": str(empty)})
        assert error and report["status"] == "unknown"
        assert report["summary"] == json.loads(cli_empty.stdout)["summary"] and cli_empty.returncode == 3

    assert "Traceback" not in session(body)


def test_bad_arguments_are_one_line_protocol_errors(tmp_path: Path) -> None:
    cases = [
        ("check", {"path": 3}, "check: path: Input should be a valid string"),
        ("check", {}, "check: path: required"),
        ("check", {"path": str(OOM), "pth": "x"}, "check: pth: unknown argument (check takes: path, config, run)"),
        ("check", {"path": "a\x00b"}, "check: path: String should match pattern"),
        ("lint", {"toml": str(TOML), "gpus": 0}, "lint: gpus: Input should be greater than or equal to 1"),
        ("lint", {"toml": str(TOML), "compute": "moon"}, "lint: compute: Input should be 'local' or 'cluster'"),
        ("findings_since", {"path": str(OOM), "cursor": "abc"}, "findings_since: cursor: not a cursor"),
        ("findings_since", {"path": str(OOM), "wait": 600}, "findings_since: wait: Input should be less than"),
        ("fix_apply", {"toml": str(TOML), "finding": "x", "hash": "nope"}, "fix_apply: hash: String should match"),
        ("stop", {"run_dir": str(tmp_path)}, "stop: confirm: must be true"),
        ("stop", {"run_dir": str(tmp_path), "confirm": "yes"}, "stop: confirm: Input should be a valid boolean"),
    ]

    async def body(client: Client) -> None:
        for name, args, expected in cases:
            with pytest.raises(MCPError) as caught:
                await client.call_tool(name, args)
            message = caught.value.error.message
            assert message.startswith(expected), (name, args, message)
            assert "\n" not in message

    assert "Traceback" not in session(body)


def test_paths_that_are_not_runs_get_the_command_s_one_line(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("a shopping list, not a training log\n")
    empty = tmp_path / "empty"
    empty.mkdir()
    watch = a1x("watch", str(notes), timeout=30)
    assert watch.returncode == 3
    watch_line = watch.stderr.strip().splitlines()[-1].removeprefix("a1x-tui watch: ")
    status = a1x("status", str(empty))
    assert status.returncode == 3

    async def body(client: Client) -> None:
        error, text = await call(client, "findings_since", {"path": str(notes)})
        assert error and text.endswith(watch_line) and "\n" not in text
        error, text = await call(client, "status", {"run_dir": str(empty)})
        assert error and text.endswith(status.stderr.strip())
        error, text = await call(client, "stop", {"run_dir": str(empty), "confirm": True})
        assert error and "not a run directory" in text
        error, text = await call(client, "lint", {"toml": str(tmp_path / "missing.toml")})
        assert not error and text["status"] == "unknown"  # as `a1x-tui lint` says it: exit 3, a report
        error, text = await call(client, "fix_preview", {"toml": str(tmp_path / "missing.toml"), "finding": "x"})
        assert error and "missing.toml" in text and "\n" not in text

    assert "Traceback" not in session(body)


def test_lint_answers_what_the_cli_prints() -> None:
    cli = json.loads(a1x("lint", str(TOML), "--format", "json", "--gpus", "1").stdout)

    async def body(client: Client) -> None:
        error, report = await call(client, "lint", {"toml": str(TOML), "gpus": 1})
        assert not error and _without_clock(report) == _without_clock(cli)

    session(body)


def test_fix_preview_then_apply_writes_only_the_diff_that_was_seen(tmp_path: Path) -> None:
    toml = tmp_path / "train.toml"
    shutil.copy(TOML, toml)
    cli = json.loads(a1x("fix", str(toml), "--finding", "policy_oom_config", "--format", "json").stdout)
    original = toml.read_text()

    async def body(client: Client) -> None:
        args = {"toml": str(toml), "finding": "policy_oom_config"}
        error, preview = await call(client, "fix_preview", args)
        assert not error and preview["diff"] == cli["diff"] and preview["diff"].startswith("---")
        assert {k: v for k, v in preview.items() if k != "hash"}.keys() == cli.keys()
        assert toml.read_text() == original  # a preview writes nothing
        wrong = "0" * 64
        error, text = await call(client, "fix_apply", {**args, "hash": wrong})
        assert error and "changed since fix_preview" in text and toml.read_text() == original
        toml.write_text(original + "\n# edited by hand\n")  # the file moves after the preview
        error, text = await call(client, "fix_apply", {**args, "hash": preview["hash"]})
        assert error and "changed since fix_preview" in text
        toml.write_text(original)
        error, applied = await call(client, "fix_apply", {**args, "hash": preview["hash"]})
        assert not error and applied["applied"] is True and applied["diff"] == preview["diff"]
        assert Path(applied["backup"]).read_text() == original and toml.read_text() != original
        assert "policy_oom_config" not in {f["id"] for f in applied["after"]["findings"]}
        # a finding of the logs (not of lint): taken from the run's report with this TOML
        error, text = await call(client, "fix_preview", {"toml": str(toml), "finding": "vllm_oom", "run": str(OOM)})
        assert error and "no TOML change cures vllm_oom" in text and "example_hf" in text  # not on this engine
        error, preview = await call(client, "fix_preview",
                                    {"toml": str(toml), "finding": "checkpointing_disabled", "run": str(OOM)})
        assert not error and "+enable_checkpoint = true" in preview["diff"]
        error, text = await call(client, "fix_preview", {"toml": str(toml), "finding": "no_such", "run": str(OOM)})
        assert error and "has no no_such finding" in text

    assert "Traceback" not in session(body)


@pytest.mark.slow  # more than a few seconds (the fast lane, README)
def test_findings_since_follows_a_run_as_it_is_written(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(OOM, run, symlinks=True)
    rollout = run / "logs_latest" / "rollout_0.log"
    lines = rollout.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
    rollout.write_text("".join(lines[:80]), encoding="utf-8")  # the run before its out-of-memory

    async def body(client: Client) -> None:
        error, first = await call(client, "findings_since", {"path": str(run)})
        assert not error and first["history_complete"] and not first["reset"]
        assert "vllm_oom" not in {e.get("finding", {}).get("id") for e in first["events"]}
        assert first["events"][0]["type"] == "history_complete"
        with rollout.open("a", encoding="utf-8") as f:
            f.write("".join(lines[80:]))
        seen: list[dict[str, Any]] = []
        cursor = first["cursor"]
        for _ in range(10):
            error, answer = await call(client, "findings_since", {"path": str(run), "cursor": cursor, "wait": 5})
            assert not error and not answer["reset"]
            seen += answer["events"]
            cursor = answer["cursor"]
            if "vllm_oom" in answer["open"]:
                break
        raised = [e for e in seen if e["type"] == "finding_raised" and e["finding"]["id"] == "vllm_oom"]
        assert raised and raised[0]["key"] in answer["open"]
        # the same JSON objects as `watch --format json` lines
        assert set(raised[0]) == {"type", "time", "key", "finding"}
        error, again = await call(client, "findings_since", {"path": str(run), "cursor": cursor})
        assert again["events"] == [] and again["cursor"] == cursor
        # a cursor of another server (restarted): the state now, said as a reset
        other = "a1x1.00000000.1." + cursor.rsplit(".", 1)[1]
        error, reset = await call(client, "findings_since", {"path": str(run), "cursor": other})
        assert reset["reset"] and {e["key"] for e in reset["events"] if e["type"] == "finding_raised"} == set(
            reset["open"])

    assert "Traceback" not in session(body)


@pytest.mark.slow
def test_status_and_stop_act_on_a_supervised_run(tmp_path: Path) -> None:
    run_dir, client_proc = start_demo(tmp_path)
    try:
        cli = json.loads(a1x("status", str(run_dir), "--json").stdout)

        async def body(client: Client) -> None:
            error, state = await call(client, "status", {"run_dir": str(run_dir)})
            assert not error and state["live"] is True and state["run_dir"] == cli["run_dir"]
            assert [s["name"] for s in state["stages"]] == [s["name"] for s in cli["stages"]]
            error, stopped = await call(client, "stop", {"run_dir": str(run_dir), "confirm": True})
            assert not error and stopped["stopped"] is True and stopped["exit_code"] == 0
            assert "no process of the run is left" in stopped["output"][0]
            error, state = await call(client, "status", {"run_dir": str(run_dir)})
            assert state["status"] == "stopped"

        assert "Traceback" not in session(body)
    finally:
        stop_demo(run_dir, client_proc)


def test_the_command_says_so_when_the_sdk_is_missing(tmp_path: Path) -> None:
    """Without the extra, one line and exit 3 (the SDK hidden by a stand-in package that fails to import)."""
    fake = tmp_path / "mcp"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('no', name='mcp')\n")
    done = subprocess.run([sys.executable, "-m", "a1x_tui", "mcp"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}"}, stdin=subprocess.DEVNULL)
    assert done.returncode == 3
    assert done.stderr.strip() == "a1x-tui mcp: the MCP SDK is not installed: pip install 'a1x-tui[mcp]'"
