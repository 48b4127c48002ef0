"""Samples on disk: ``<run_dir>/gpu/<hostname>.jsonl``, one JSON object a line, bounded in size.

The agent on each node appends; a client anywhere reads. Kinds of line: ``start`` (the agent's
host, pid, driver and the static facts of each GPU), ``sample`` (a ``GpuSnapshot``),
``unavailable`` (NVML cannot be used here: the one-line reason) and ``stop``. When the file passes
``max_bytes`` it becomes ``<hostname>.jsonl.1`` (replacing an older one) and a new file starts with
a copy of the last ``start`` line, so the two files together never exceed about twice the bound and
every file can be read on its own. Each line is written with one ``write`` on a file opened for
appending, so readers on a shared filesystem see whole lines; a torn last line is skipped.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from a1x_diagnostics.gpu.samples import FORMAT_VERSION, DeviceInfo, GpuSnapshot

DEFAULT_MAX_BYTES = 16 * 1024 * 1024  # ~3 h of 1 Hz samples for 8 GPUs, per file


def samples_dir(run_dir: str | Path) -> Path:
    return Path(run_dir) / "gpu"


def samples_path(run_dir: str | Path, host: str | None = None) -> Path:
    return samples_dir(run_dir) / f"{host or socket.gethostname()}.jsonl"


class SampleWriter:
    """Appends lines to one samples file and rotates it at ``max_bytes``."""

    def __init__(self, path: str | Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.path = Path(path)
        self.max_bytes = max(4096, max_bytes)
        self._start_line: str | None = None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._size = self.path.stat().st_size
        except FileNotFoundError:
            self._size = 0
        self.rotations = 0

    def write_start(
        self, *, host: str, driver: str | None, devices: list[DeviceInfo], interval_s: float, pid: int | None = None
    ) -> None:
        obj: dict[str, Any] = {
            "v": FORMAT_VERSION,
            "kind": "start",
            "ts": _now(),
            "host": host,
            "pid": os.getpid() if pid is None else pid,
            "driver": driver,
            "interval_s": interval_s,
            "devices": [d.to_json() for d in devices],
        }
        self._start_line = _dumps(obj)
        self._append(self._start_line)

    def write_sample(self, snapshot: GpuSnapshot) -> None:
        self._append(_dumps(snapshot.to_json()))

    def write_event(self, kind: str, **fields: Any) -> None:
        """``unavailable`` (with ``reason``), ``stop``..."""
        self._append(_dumps({"v": FORMAT_VERSION, "kind": kind, "ts": _now(), **fields}))

    def _append(self, line: str) -> None:
        data = (line + "\n").encode()
        if self._size > 0 and self._size + len(data) > self.max_bytes:
            self._rotate()
        with open(self.path, "ab") as f:
            f.write(data)
        self._size += len(data)

    def _rotate(self) -> None:
        os.replace(self.path, self.path.with_name(self.path.name + ".1"))
        self._size = 0
        self.rotations += 1
        if self._start_line is not None:
            with open(self.path, "ab") as f:
                data = (self._start_line + "\n").encode()
                f.write(data)
            self._size = len(data)


@dataclass(slots=True)
class SampleLog:
    """What a samples file (and its ``.1`` predecessor) holds, in order."""

    path: Path
    snapshots: list[GpuSnapshot] = field(default_factory=list)
    infos: dict[int, DeviceInfo] = field(default_factory=dict)
    host: str | None = None
    driver: str | None = None
    agent_pid: int | None = None
    unavailable: str | None = None  # the reason of the last 'unavailable' line after the last start
    stopped: bool = False
    bad_lines: int = 0

    @property
    def latest(self) -> GpuSnapshot | None:
        return self.snapshots[-1] if self.snapshots else None

    def latest_with_processes(self) -> GpuSnapshot | None:
        for snap in reversed(self.snapshots):
            if snap.processes is not None:
                return snap
        return None


def read_log(path: str | Path, *, max_samples: int | None = None, tail_bytes: int | None = None) -> SampleLog:
    """Read a samples file, after its rotated predecessor. Bad or torn lines are counted, not raised.

    ``tail_bytes`` reads only about that much from the end (plus the ``start`` line for GPU names);
    line numbers stay exact.
    """
    path = Path(path)
    log = SampleLog(path=path)
    older = path.with_name(path.name + ".1")
    budget = tail_bytes
    files: list[tuple[Path, int | None]] = []
    for file in (path, older):
        try:
            size = file.stat().st_size
        except FileNotFoundError:
            continue
        files.insert(0, (file, budget))
        if budget is not None:
            budget -= size
            if budget <= 0:
                break
    for file, tail in files:
        for lineno, obj in _lines(file, log, tail):
            _take(log, obj, file, lineno)
    if max_samples is not None and len(log.snapshots) > max_samples:
        log.snapshots = log.snapshots[-max_samples:]
    return log


def read_run(run_dir: str | Path) -> dict[str, SampleLog]:
    """Every host's samples under ``<run_dir>/gpu/``, by host name."""
    out: dict[str, SampleLog] = {}
    folder = samples_dir(run_dir)
    if not folder.is_dir():
        return out
    for file in sorted(folder.glob("*.jsonl")):
        out[file.stem] = read_log(file)
    return out


def _lines(file: Path, log: SampleLog, tail: int | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        f = open(file, "rb")  # noqa: SIM115 - a missing file is normal (no rotation yet)
    except FileNotFoundError:
        return
    with f:
        first = 1
        size = os.fstat(f.fileno()).st_size
        if tail is not None and size > tail:
            head = f.readline()  # the start line names the GPUs
            obj = _parse(head, log)
            if obj is not None and obj.get("kind") == "start":
                _take(log, obj, file, 1)
            skipped = 1
            target = size - tail
            while f.tell() < target:  # count the lines we skip, so evidence line numbers stay exact
                chunk = f.read(min(1 << 20, target - f.tell()))
                if not chunk:
                    break
                skipped += chunk.count(b"\n")
            f.readline()  # the rest of a line cut in the middle
            first = skipped + 2
        for lineno, raw in enumerate(f, start=first):
            obj = _parse(raw, log)
            if obj is not None:
                yield lineno, obj


def _parse(raw: bytes, log: SampleLog) -> dict[str, Any] | None:
    if not raw.endswith(b"\n"):
        log.bad_lines += 1  # being written right now
        return None
    try:
        obj = json.loads(raw)
    except ValueError:
        log.bad_lines += 1
        return None
    if not isinstance(obj, dict):
        log.bad_lines += 1
        return None
    return obj


def _take(log: SampleLog, obj: dict[str, Any], file: Path, lineno: int) -> None:
    kind = obj.get("kind")
    try:
        if kind == "sample":
            log.snapshots.append(GpuSnapshot.from_json(obj, log.infos, path=str(file), line=lineno))
        elif kind == "start":
            log.infos = {d.index: d for d in (DeviceInfo.from_json(x) for x in obj.get("devices", ()))}
            log.host = str(obj.get("host")) if obj.get("host") is not None else log.host
            log.driver = obj.get("driver") if isinstance(obj.get("driver"), str) else None
            log.agent_pid = obj.get("pid") if isinstance(obj.get("pid"), int) else None
            log.unavailable = None
            log.stopped = False
        elif kind == "unavailable":
            log.unavailable = str(obj.get("reason", "NVML unavailable"))
        elif kind == "stop":
            log.stopped = True
    except (KeyError, TypeError, ValueError):
        log.bad_lines += 1


def _dumps(obj: dict[str, Any]) -> str:
    return json.dumps(obj, separators=(",", ":"), allow_nan=False)


def _now() -> float:
    return round(time.time(), 3)
