"""``HOST:PATH`` for ``--check``, ``watch`` and ``attach`` through a real sshd on 127.0.0.1 (issue 39, point 3).

The far side is this machine, reached by OpenSSH with a throw-away key (``conftest.sshd``); its a1x-tui
is this checkout. What must hold: the far side's answers arrive unchanged (exit codes, reports, the
stream), each failure that ssh or the far side can give is one line and exit 3, a connection cut in
the middle of ``watch`` is said in one line and followed by a new one with nothing said twice, and the
dashboard gets a supervised run's state, logs, GPUs and findings, applies a fix and stops the run
over the forwarded control socket, with no port opened."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from agents_helpers import REPO, a1x, start_demo, stop_demo
from sshd_server import Sshd

from a1x_tui.remote.address import RemotePath, parse_remote
from a1x_tui.remote.book import FindingBook

FX = REPO / "tests" / "fixtures" / "cosmos"
OOM = FX / "747d1bd" / "rollout_oom"


def _without(report: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in report.items() if k not in keys}


# --- HOST:PATH, read as scp reads it ---------------------------------------------------------------------


def test_host_path_is_remote_only_where_scp_would_say_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_remote("node1:/data/logs") == RemotePath("node1", "/data/logs")
    assert parse_remote("me@node1:runs/r1") == RemotePath("me@node1", "runs/r1")
    assert parse_remote("[fe80::1]:/logs") == RemotePath("fe80::1", "/logs")
    assert parse_remote("node1:~/my logs").shell_word() == "~/'my logs'"  # type: ignore[union-attr]
    for local in ("/data/logs_10:00", "./a:b", "logs/x:y", "plain", ":x", "-oProxyCommand=evil:x"):
        assert parse_remote(local) is None, local
    monkeypatch.chdir(tmp_path)
    (tmp_path / "logs_10:00").mkdir()
    assert parse_remote("logs_10:00") is None  # it exists here: local, whatever it looks like


def test_a_local_run_whose_name_holds_a_colon_is_checked_here(tmp_path: Path) -> None:
    run = tmp_path / "run:1"
    shutil.copytree(OOM, run, symlinks=True)
    here = subprocess.run([sys.executable, "-m", "a1x_tui", "--check", "run:1", "--format", "json"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO),
                                                                             "A1X_TUI_SSH": "false"})
    assert here.returncode == 2, here.stderr
    assert json.loads(here.stdout)["target"] == "run:1"


# --- the far side's answers -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_check_over_ssh_prints_the_far_side_s_report(sshd: Sshd) -> None:
    local = a1x("--check", str(OOM), "--format", "json")
    remote = a1x("--check", f"{sshd.host}:{OOM}", "--format", "json", env=sshd.env)
    assert remote.returncode == local.returncode == 2, remote.stderr
    there, here = json.loads(remote.stdout), json.loads(local.stdout)
    assert there["target"] == f"{sshd.host}:{OOM}"
    assert _without(there, "target", "generated_at") == _without(here, "target", "generated_at")
    text = a1x("--check", f"{sshd.host}:{OOM}", "--config", str(OOM / "rollout_oom.toml"), env=sshd.env)
    assert text.returncode == 2 and text.stdout.startswith("A1X-TUI CRITICAL - crashed: ")
    assert "policy_oom_config" in text.stdout  # --config is read on the far side
    for huge in ("inf", "1e10"):  # no limit, there as here (issue 37 point 5)
        done = a1x("--check", f"{sshd.host}:{OOM}", "--timeout", huge, env=sshd.env)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("command", [["--check"], ["watch"], ["attach"]])
def test_what_ssh_or_the_far_side_refuses_is_one_line(sshd: Sshd, command: list[str], tmp_path: Path) -> None:
    cases = [
        ("a1xnokey", str(OOM), {}, "ssh cannot log in without asking for a password or passphrase"),
        ("a1xunknown", str(OOM), {}, "the host key is unknown or has changed"),
        ("a1xtest", str(OOM), {"A1X_TUI_REMOTE": "/nonexistent/bin/a1x-tui"},
         "a1x-tui is not installed on the far side"),
        ("a1xtest", "/nonexistent/logs", {}, "/nonexistent/logs: no such file or folder"),
    ]
    for host, path, extra, expected in cases:
        done = a1x(*command, f"{host}:{path}", env={**sshd.env, **extra}, timeout=60)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 3, (command, host, done.stderr)
        if command == ["--check"] and path.startswith("/nonexistent"):  # as here: the UNKNOWN report says why
            assert done.stdout.startswith(f"A1X-TUI UNKNOWN - {expected}") and not lines
            continue
        assert len(lines) == 1 and expected in lines[0] and lines[0].startswith("a1x-tui "), (command, lines)
        assert f"{host}: " in lines[0] and "Traceback" not in done.stderr
        assert command != ["--check"] or "UNKNOWN" in done.stdout or not done.stdout


def _read_json_lines(proc: subprocess.Popen[str], until: Any, timeout: float, seen: list[dict[str, Any]]) -> None:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    os.set_blocking(proc.stdout.fileno(), False)
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            time.sleep(0.05)
            continue
        seen.append(json.loads(line))
        if until(seen):
            return
    raise AssertionError(f"not seen in {timeout} s: {[o['type'] for o in seen]}")


@pytest.mark.slow
def test_watch_over_ssh_comes_back_after_a_cut_connection_and_says_nothing_twice(sshd: Sshd, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(OOM, run, symlinks=True)
    rollout = run / "logs_latest" / "rollout_0.log"
    lines = rollout.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
    rollout.write_text("".join(lines[:80]), encoding="utf-8")  # before its out-of-memory
    proc = subprocess.Popen([sys.executable, "-m", "a1x_tui", "watch", f"{sshd.host}:{run}", "--format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO), **sshd.env})
    seen: list[dict[str, Any]] = []
    try:
        _read_json_lines(proc, lambda s: any(o["type"] == "history_complete" for o in s), 60, seen)
        before = {o["key"] for o in seen if o["type"] == "finding_raised"}
        time.sleep(1.0)
        assert sshd.cut_connections() >= 1
        _read_json_lines(proc, lambda s: any(o.get("state") == "restored" for o in s), 60, seen)
        with rollout.open("a", encoding="utf-8") as f:
            f.write("".join(lines[80:]))
        _read_json_lines(proc, lambda s: any(o["type"] == "finding_raised" and o["finding"]["id"] == "vllm_oom"
                                             for o in s), 60, seen)
        time.sleep(2.0)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    seen += [json.loads(line) for line in out.splitlines() if line.strip()]
    connection = [o for o in seen if o["type"] == "connection"]
    assert [c["state"] for c in connection][:1] == ["lost"] and connection[-1]["state"] == "restored"
    raised = [o["key"] for o in seen if o["type"] == "finding_raised"]
    assert len(raised) == len(set(raised)), raised  # nothing raised twice across the reconnection
    assert before <= set(raised) and any(k.startswith("vllm_oom") for k in raised)
    assert seen[-1]["type"] == "ended" and proc.returncode == seen[-1]["exit_code"] == 2
    notes = [line for line in err.splitlines() if "connection was lost" in line]
    assert len(notes) == 1 and "trying again in" in notes[0], err
    assert "Traceback" not in err
    assert _far_watches_end(str(run))  # the one whose connection was cut as well as the one that was stopped


def _far_watches_end(path: str, seconds: float = 20.0) -> bool:
    """Whether every far-side watch of ``path`` has ended (they end with their ssh connection: --end-with-stdin)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        alive = [p for p in psutil.process_iter(["cmdline", "status"])
                 if p.info["status"] != psutil.STATUS_ZOMBIE and "--end-with-stdin" in (p.info["cmdline"] or [])
                 and path in (p.info["cmdline"] or [])]
        if not alive:
            return True
        time.sleep(0.2)
    return False


def test_a_finding_gone_while_the_link_was_down_is_resolved_once_the_run_is_read_again() -> None:
    book = FindingBook()
    f1, f2 = {"id": "stalled", "severity": "warning"}, {"id": "vllm_oom", "severity": "critical"}
    said = []
    outcome = {"state": "running", "summary": "step 3/8"}
    stream = [  # as the far side's watch says them: history read, then its first evaluation (findings, outcome)
        {"type": "history_complete"}, {"type": "finding_raised", "key": "a", "finding": f1},
        {"type": "finding_raised", "key": "b", "finding": f2}, {"type": "outcome", "outcome": outcome},
        {"type": "connection", "state": "lost"}, {"type": "connection", "state": "restored"},
        {"type": "history_complete"}, {"type": "finding_raised", "key": "b", "finding": f2},
        {"type": "outcome", "outcome": outcome},
    ]
    for obj in stream:
        said += book.take(obj)
    kinds = [(o["type"], o.get("key")) for o in said]
    assert kinds == [("history_complete", None), ("finding_raised", "a"), ("finding_raised", "b"), ("outcome", None),
                     ("connection", None), ("connection", None), ("finding_resolved", "a")]
    assert set(book.open) == {"b"}


# --- the dashboard from a laptop --------------------------------------------------------------------------------


@pytest.mark.slow
def test_attach_over_ssh_shows_a_supervised_run_applies_a_fix_and_stops_it(
    sshd: Sshd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from a1x_tui.remote.session import RemoteRun
    from a1x_tui.ui import A1xApp
    from a1x_tui.ui.screens.dashboard import DashboardScreen
    from a1x_tui.ui.target import remote_target
    from a1x_tui.ui.widgets.stages import StagesTable

    for name, value in sshd.env.items():
        monkeypatch.setenv(name, value)
    run_dir, client = start_demo(tmp_path)
    toml = run_dir / "config" / "train.toml"
    listening_before = _inet_listeners()
    try:
        session = RemoteRun.open(RemotePath(sshd.host, str(run_dir)))
        assert session.controllable and session.target["run_dir"] == str(run_dir)

        async def drive() -> None:
            app = A1xApp(target=remote_target(session))
            async with app.run_test(size=(120, 40), notifications=True) as pilot:
                screen = app.screen
                assert isinstance(screen, DashboardScreen)

                async def until(what: Any, seconds: float) -> None:
                    for _ in range(int(seconds * 10)):
                        await pilot.pause(0.1)
                        if what():
                            return
                    panel = screen.query_one("#findings-panel")
                    raise AssertionError(f"not in {seconds} s: {[(n.title, n.message) for n in app._notifications]} "
                                         f"{screen._planning} {screen._apply_after_plan} {panel.plans} "
                                         f"{[(w.name, w.state, w.error) for w in app.workers]}")

                await until(lambda: screen.state is not None and screen.store.files and screen.series, 60)
                assert screen.supervisor_live and screen.query_one(StagesTable).row_count >= 5
                assert any(f.label == "rollout_0" for f in screen.store.files.values())
                gpus = str(screen.query_one("#gpus").render())
                assert "SIMULATED" in gpus  # the far side's samples, not this machine's NVML
                await until(lambda: any(f.fixes for f in screen.findings_open.values()), 120)
                await pilot.press("4")
                panel = screen.query_one("#findings-panel")
                index = next(i for i, s in enumerate(panel.shown) if s.finding.fixes)  # type: ignore[attr-defined]
                panel.query_one("#finding-list").highlighted = index  # type: ignore[attr-defined]
                before = toml.read_text()
                await pilot.press("a")
                await until(lambda: app.screen is not screen, 30)  # the confirmation, with the far side's diff
                await pilot.press("y")
                await until(lambda: toml.read_text() != before, 30)
                assert list(toml.parent.glob("train.toml.*.bak"))  # backed up there, by its supervisor
                await pilot.press("s")
                await until(lambda: app.screen is not screen, 10)
                await pilot.press("y")
                await until(lambda: (screen.state or {}).get("status") == "stopped", 120)
                assert f"left the dashboard of {sshd.host}:{run_dir}" in (screen.leave_message() or "")
                socket = str(session.target["socket"])  # the run's socket, or a short link to it there
                forwards = [p.info["cmdline"] for p in psutil.process_iter(["name", "cmdline"])
                            if p.info["name"] == "ssh" and "-N" in (p.info["cmdline"] or [])
                            and any(socket in arg for arg in p.info["cmdline"])]
                assert len(forwards) == 1
                local, _, far = forwards[0][forwards[0].index("-L") + 1].partition(f":{socket}")
                assert local.startswith("/") and local.endswith("supervisor.sock") and not far  # socket to socket
                assert _inet_listeners() <= listening_before  # no new port, here or there

        asyncio.run(drive())
        session.close()
        assert _far_watches_end(str(run_dir))
    finally:
        stop_demo(run_dir, client)


def _inet_listeners() -> set[tuple[str, int]]:
    return {(c.laddr.ip, c.laddr.port) for c in psutil.net_connections("inet") if c.status == psutil.CONN_LISTEN}
