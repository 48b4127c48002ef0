"""Helpers of the ways-in tests: the CLI as a child process, a live supervised run (the demo)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def a1x(*args: str, timeout: float = 120, env: dict[str, str] | None = None,
        input: str | None = None) -> subprocess.CompletedProcess[str]:
    """``a1x-tui ARGS`` of this checkout, to its end."""
    return subprocess.run(
        [sys.executable, "-m", "a1x_tui", *args], capture_output=True, text=True, cwd=REPO, timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})}, input=input,
        stdin=None if input is not None else subprocess.DEVNULL, check=False,
    )


def start_demo(root: Path, speed: float = 1.0) -> tuple[Path, subprocess.Popen[str]]:
    """A live supervised run: ``a1x-tui demo --headless`` under ``root`` (its supervisor is detached; the
    headless client follows it). Returns the run directory once its supervisor answers."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "a1x_tui", "demo", "--headless", "--dir", str(root), "--speed", str(speed)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        found = re.match(r"a1x-tui demo: run (\S+) \(supervisor detached", line)
        if found:
            return Path(found.group(1)), proc
    proc.kill()
    raise AssertionError("the demo's supervisor did not start")


def stop_demo(run_dir: Path, proc: subprocess.Popen[str]) -> None:
    a1x("stop", str(run_dir), timeout=120)
    proc.kill()
    proc.wait(10)


def wandb_records(wandb_dir: Path) -> list[dict[str, Any]]:
    """Every record W&B queued in the offline runs under ``wandb_dir`` (``WANDB_MODE=offline``), as dicts
    with ``kind`` (``run``, ``alert``, ``summary``, ``history``, ``exit``...) and the record's fields.

    The run file (``offline-run-*/run-*.wandb``) is a LevelDB-style log: a 7-byte header (``:W&B``, magic,
    version), then 32 KiB blocks of records, each with a 7-byte header (crc32c, length, type: 1 whole,
    2 first, 3 middle, 4 last) and a protobuf ``Record`` of wandb's own schema (``wandb.proto``)."""
    import struct

    from google.protobuf.json_format import MessageToDict
    from wandb.proto import wandb_internal_pb2

    out: list[dict[str, Any]] = []
    for path in sorted(wandb_dir.glob("**/offline-run-*/run-*.wandb")):
        data = path.read_bytes()
        assert data[:4] == b":W&B", path
        pos, pending, raws = 7, b"", []
        while pos + 7 <= len(data):
            left = 32768 - pos % 32768
            if left < 7:  # a block's trailer: too short for a header
                pos += left
                continue
            _crc, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
            if kind == 0:  # padding to the block's end
                pos += left
                continue
            chunk, pos = data[pos + 7:pos + 7 + length], pos + 7 + length
            if kind == 1:
                raws.append(chunk)
            elif kind == 2:
                pending = chunk
            elif kind == 3:
                pending += chunk
            elif kind == 4:
                raws.append(pending + chunk)
                pending = b""
        for raw in raws:
            record = wandb_internal_pb2.Record()
            record.ParseFromString(raw)
            kind_name = record.WhichOneof("record_type")
            if kind_name:
                out.append({"kind": kind_name, "file": str(path), **MessageToDict(getattr(record, kind_name))})
    return out
