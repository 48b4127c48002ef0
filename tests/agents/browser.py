"""A real headless Chromium driven over the DevTools protocol (aiohttp, which textual-serve brings), and a PNG
reader small enough to look at its screenshots: what the ``serve`` tests need of a browser."""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)


async def screenshot(url: str, out: Path, *, wait_s: float = 60.0, settle_s: float = 6.0) -> dict[str, Any]:
    """Open ``url``, wait until textual-serve's page has its app's first bytes (``body.-first-byte``: the start
    dialog is gone), let it draw, save a PNG; returns what the page said (``first_byte``, ``classes``)."""
    import aiohttp

    assert CHROMIUM is not None
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    profile = tempfile.mkdtemp(prefix="a1x-chromium-")
    proc = subprocess.Popen([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                             f"--remote-debugging-port={port}", f"--user-data-dir={profile}", "--window-size=1400,900",
                             "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        async with aiohttp.ClientSession() as http:
            targets: list[dict[str, Any]] = []
            for _ in range(200):
                try:
                    async with http.get(f"http://127.0.0.1:{port}/json/list") as r:
                        targets = await r.json()
                        break
                except aiohttp.ClientError:
                    await asyncio.sleep(0.1)
            page = next(t for t in targets if t["type"] == "page")
            async with http.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                ids = iter(range(1, 1 << 30))

                async def call(method: str, **params: Any) -> dict[str, Any]:
                    mine = next(ids)
                    await ws.send_json({"id": mine, "method": method, "params": params})
                    async for msg in ws:
                        data = json.loads(msg.data)
                        if data.get("id") == mine:
                            return dict(data.get("result") or {})
                    raise AssertionError("the browser went away")

                async def value(expression: str) -> Any:
                    return (await call("Runtime.evaluate", expression=expression, returnByValue=True))["result"].get(
                        "value")

                await call("Page.enable")
                await call("Page.navigate", url=url)
                first = False
                deadline = time.monotonic() + wait_s
                while time.monotonic() < deadline and not first:
                    first = bool(await value("!!document.body && document.body.classList.contains('-first-byte')"))
                    await asyncio.sleep(0.3)
                await asyncio.sleep(settle_s)
                classes = await value("document.body.className")
                shot = await call("Page.captureScreenshot", format="png")
                out.write_bytes(base64.b64decode(shot["data"]))
                return {"first_byte": first, "classes": classes}
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(profile, ignore_errors=True)


def png_pixels(path: Path, max_rows: int | None = None) -> tuple[int, int, list[bytes]]:
    """(width, height, the first ``max_rows`` rows of RGB bytes) of an 8-bit, non-interlaced RGB or RGBA PNG
    (what Chromium writes)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    height = channels = 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and color in (2, 6) and interlace == 0, (depth, color, interlace)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
    raw, stride, rows, prev = zlib.decompress(idat), width * channels, [], bytearray(width * channels)
    for y in range(height if max_rows is None else min(height, max_rows)):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b, c = prev[i], prev[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        prev = line
        rows.append(bytes(v for i, v in enumerate(line) if channels == 3 or i % 4 != 3))
    return width, height, rows
