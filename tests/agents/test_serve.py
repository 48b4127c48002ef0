"""``a1x-tui serve`` (issue 39, point 4): the app in a real browser through textual-serve, on 127.0.0.1 only
unless --public, a tab that closes leaving the run alone. The browser is Debian's Chromium, headless,
driven over the DevTools protocol (tests/agents/browser.py); skipped only where none is installed
(`.ci/run` installs it)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest
from agents_helpers import REPO, a1x, start_demo, stop_demo
from browser import CHROMIUM, png_pixels, screenshot

pytest.importorskip("textual_serve")

OOM = REPO / "tests" / "fixtures" / "cosmos" / "747d1bd" / "rollout_oom"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(*args: str) -> Iterator[tuple[int, subprocess.Popen[str]]]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "a1x_tui", "serve", *args, "--port", str(port)], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.1)
        yield port, proc
    finally:
        for child in psutil.Process(proc.pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                child.kill()
        proc.terminate()
        proc.wait(10)


def _attach_children(server: subprocess.Popen[str]) -> list[psutil.Process]:
    """The tabs' apps still running under the server (a zombie has ended)."""
    alive = []
    for child in psutil.Process(server.pid).children(recursive=True):
        try:
            line = " ".join(child.cmdline())
            if child.status() != psutil.STATUS_ZOMBIE and "attach" in line and "a1x_tui" in line:
                alive.append(child)
        except psutil.Error:  # gone, or a zombie: ended
            continue
    return alive


async def _tab(port: int, until: bytes, seconds: float = 60.0) -> bytes:
    """A tab's websocket: what the app sent until ``until`` appeared in it; then the tab is closed."""
    import aiohttp

    seen = b""
    url = f"http://127.0.0.1:{port}/ws?width=120&height=40"
    async with aiohttp.ClientSession() as http, http.ws_connect(url) as ws:
        deadline = time.monotonic() + seconds
        while until not in seen and time.monotonic() < deadline:
            try:
                msg = await ws.receive(timeout=2)
            except asyncio.TimeoutError:
                continue
            if msg.type == aiohttp.WSMsgType.BINARY:
                seen += msg.data
            elif msg.type == aiohttp.WSMsgType.TEXT:
                seen += msg.data.encode()
            elif msg.type in (aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
                break
    return seen


def test_an_address_other_than_loopback_is_refused_unless_public() -> None:
    done = a1x("serve", str(OOM), "--host", "0.0.0.0")
    assert done.returncode == 3
    assert done.stderr.strip().splitlines() == [
        "a1x-tui serve: 0.0.0.0 is not a loopback address and textual-serve has no authentication: listen on "
        "127.0.0.1 and reach it with `ssh -L 8000:127.0.0.1:8000 HOST`, or pass --public"]
    missing = a1x("serve", "/nonexistent/run")
    assert missing.returncode == 3 and missing.stderr == "a1x-tui serve: /nonexistent/run: no such file or folder\n"


@pytest.mark.slow
def test_public_warns_and_listens_where_asked() -> None:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "a1x_tui", "serve", str(OOM), "--host", "0.0.0.0", "--public",
                             "--port", str(port)], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert proc.stderr is not None
        warning = proc.stderr.readline()
        assert warning.startswith(f"a1x-tui serve: WARNING: listening on 0.0.0.0:{port} with no authentication")
        listening = {c.laddr for c in psutil.net_connections("inet") if c.status == psutil.CONN_LISTEN and
                     c.laddr.port == port}
        deadline = time.monotonic() + 20
        while not listening and time.monotonic() < deadline:
            time.sleep(0.2)
            listening = {c.laddr for c in psutil.net_connections("inet") if c.status == psutil.CONN_LISTEN and
                         c.laddr.port == port}
        assert {addr.ip for addr in listening} == {"0.0.0.0"}
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.slow
def test_the_page_loads_and_a_tab_gets_the_dashboard_over_its_websocket() -> None:
    import urllib.request

    with serving(str(OOM)) as (port, server):
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30).read().decode()
        assert f'data-session-websocket-url="ws://127.0.0.1:{port}/ws"' in page
        assert f"a1x-tui attach {OOM}" in page  # the tab's title
        listening = {c.laddr.ip for c in psutil.net_connections("inet") if c.status == psutil.CONN_LISTEN and
                     c.laddr.port == port}
        assert listening == {"127.0.0.1"}
        seen = asyncio.run(_tab(port, b"Findings (3)", seconds=120))  # replica_died, vllm_oom, stalled after it
        assert b"Findings (3)" in seen and b"run crashed" in seen
        deadline = time.monotonic() + 60  # the tab closed: its app ends, the server stays
        while _attach_children(server) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _attach_children(server) and server.poll() is None


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium here (apt-get install -y chromium)")
def test_a_real_browser_shows_the_dashboard(tmp_path: Path) -> None:
    with serving(str(OOM)) as (port, _server):
        said = asyncio.run(screenshot(f"http://127.0.0.1:{port}/", tmp_path / "dashboard.png"))
    assert said["first_byte"], said  # the app's first bytes came: textual-serve's start dialog is gone
    _width, _height, rows = png_pixels(tmp_path / "dashboard.png", max_rows=30)
    banner = rows[:20]  # the banner's line: the run's name in white, "run crashed" in the error colour
    red = sum(1 for row in banner for i in range(0, len(row), 3) if row[i] > 180 and row[i + 1] < 90)
    white = sum(1 for row in banner for i in range(0, len(row), 3) if min(row[i:i + 3]) > 200)
    assert red > 200 and white > 100, (red, white)


@pytest.mark.slow
def test_closing_the_tab_never_stops_the_run(tmp_path: Path) -> None:
    run_dir, client = start_demo(tmp_path)
    try:
        with serving(str(run_dir)) as (port, server):
            seen = asyncio.run(_tab(port, run_dir.name.encode(), seconds=120))
            assert run_dir.name.encode() in seen, seen[-500:]
            deadline = time.monotonic() + 60
            while _attach_children(server) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert not _attach_children(server)  # the tab's own app ended with it
        state = json.loads(a1x("status", str(run_dir), "--json").stdout)
        assert state["live"] is True and state["status"] in ("starting", "running"), state.get("status")
    finally:
        stop_demo(run_dir, client)
