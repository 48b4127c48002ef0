"""Writing a recorded run again, as the run wrote it: for the live tests and ``benchmarks/watch_faults.py``.

``timeline(layout)`` orders every line of a recorded run (``tests/fixtures/cosmos/**``,
``tests/fixtures/real-runs/cosmos-rl-*/**``) by its stamp: a line without one comes at its predecessor's
moment, a file's first lines at its first stamp. ``RunWriter`` writes those lines into a fresh folder in
that order, as the launcher and its processes did: the ``logs_<ts>`` folder and its ``logs_latest`` link
first, each file created at its first line and appended to from then on, the run's hours pressed into
``span`` seconds (a burst of lines of one file at one moment is one write). The rest of the recorded
folder (the TOML, ``exit_status.txt``, README) is copied first, as it would be there.

``RunWriter.fault(kind)`` does to one file what a log rotation, a clean-up or a person does, mid-run:
``rename`` (rotation: renamed to ``<name>.1``, the writer carries on in a new file), ``copytruncate``
(copied to ``<name>.1`` and truncated in place; the writer keeps its handle), ``delete`` (unlinked; the
writer carries on in a new file), ``chmod`` (the file and its folder unreadable for ``flip_s`` seconds
while the writer keeps writing, then readable again).
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from a1x_diagnostics.events import epoch
from a1x_diagnostics.parsing import LayoutError, RunLayout, discover
from a1x_diagnostics.parsing._shapes import shape_of

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FAULTS = ("rename", "copytruncate", "delete", "chmod")


def recorded_runs() -> list[Path]:
    """Every recorded run folder; where the launcher failed before any role log, its captured output."""
    out = []
    folders = [p for p in sorted((FIXTURES / "cosmos").glob("*/*")) if p.is_dir() and p.parent.name != "recording"]
    for folder in folders + [p for p in sorted(FIXTURES.glob("real-runs/cosmos-rl-*/*")) if p.is_dir()]:
        try:
            discover(folder)
            out.append(folder)
        except LayoutError:
            out.append(folder / "run.out")
    return out


def _raw_lines(path: Path) -> list[bytes]:
    data = path.read_bytes()
    lines = data.split(b"\n")
    out = [line + b"\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])  # a last line without its newline stays so
    return out


def timeline(layout: RunLayout) -> list[tuple[float, int, int, bytes]]:
    """(time, file index, line number, raw line with its newline) of every line, in the order written."""
    out: list[tuple[float | None, int, int, bytes]] = []
    first: dict[int, float] = {}
    for fi, (path, _) in enumerate(layout.files):
        last: float | None = None
        for lineno, raw in enumerate(_raw_lines(path), 1):
            ts = epoch(shape_of(raw.decode("utf-8", "replace").rstrip("\n")).ts)
            if ts is not None:
                last = ts
                first.setdefault(fi, ts)
            out.append((last, fi, lineno, raw))
    timed = [(t if t is not None else first.get(fi, 0.0), fi, n, x) for t, fi, n, x in out]
    return sorted(timed, key=lambda r: (r[0], r[1], r[2]))


@dataclass
class RunWriter:
    """Writes the recorded run ``recorded`` (a folder, or a launcher capture) into ``dest``."""

    recorded: Path
    dest: Path
    span: float = 2.0  # seconds the whole run takes to write
    flip_s: float = 3.0  # how long a ``chmod`` fault leaves the file and its folder unreadable
    binary_mode: str = "ab"  # "wb": the launcher's own mode (docs/reference/cosmos-rl.md §3.1): no O_APPEND
    target: Path = field(init=False)  # what to follow: the copy of ``recorded``
    _handles: dict[Path, object] = field(default_factory=dict, init=False)
    _timers: list[threading.Timer] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        single = self.recorded.is_file()
        folder = self.recorded.parent if single else self.recorded
        self.layout = discover(self.recorded)
        self.lines = timeline(self.layout)
        self.files = [self.dest / p.relative_to(folder) for p, _ in self.layout.files]
        self.target = self.dest / self.recorded.name if single else self.dest
        self._folder = folder

    def prepare(self) -> None:
        """The folder before the launch: what is not a log file, and the run's ``logs_<ts>`` with its link."""
        logs = {p.resolve() for p, _ in self.layout.files}
        self.dest.mkdir(parents=True, exist_ok=True)
        for path in sorted(self._folder.rglob("*")):
            rel = path.relative_to(self._folder)
            if rel.parts[0] == "logs_latest" or path.resolve() in logs or path.is_dir():
                continue
            (self.dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, self.dest / rel)
        run_dirs = {f.parent for f in self.files if f.parent != self.dest}
        for run_dir in sorted(run_dirs):
            run_dir.mkdir(parents=True, exist_ok=True)
        if (self._folder / "logs_latest").exists() or (self._folder / "logs_latest").is_symlink():
            latest = sorted(d for d in run_dirs if d.parent == self.dest and d.name.startswith("logs_"))
            if latest:
                os.symlink(latest[-1].name, self.dest / "logs_latest")

    def write(self, start: int = 0, stop: int | None = None, *,
              between: Callable[[int], None] | None = None) -> None:
        """Lines ``start`` to ``stop`` of the timeline, at the run's pace pressed into ``span`` s;
        ``between(i)`` is called before line ``i`` is written when the time comes to write it."""
        lines = self.lines[start:stop]
        if not lines:
            return
        t0, t1 = self.lines[0][0], self.lines[-1][0]
        scale = self.span / (t1 - t0) if t1 > t0 else 0.0
        began = time.monotonic() - (lines[0][0] - t0) * scale
        i = 0
        while i < len(lines):
            t, fi, _, _ = lines[i]
            j = i
            chunk = []
            while j < len(lines) and lines[j][1] == fi and lines[j][0] == t:
                chunk.append(lines[j][3])
                j += 1
            wait = began + (t - t0) * scale - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            if between is not None:
                between(start + i)
            self._append(self.files[fi], b"".join(chunk))
            i = j

    def write_each(self, start: int, stop: int | None = None, *, every: float) -> None:
        """Lines ``start`` to ``stop`` of the timeline one by one, ``every`` seconds apart (a traceback
        written a line at a time)."""
        for _, fi, _, raw in self.lines[start:stop]:
            self._append(self.files[fi], raw)
            time.sleep(every)

    def _append(self, path: Path, data: bytes) -> None:
        f = self._handles.get(path)
        if f is None:
            f = self._handles[path] = open(path, self.binary_mode)  # noqa: SIM115 - closed in close()
        f.write(data)  # type: ignore[attr-defined]
        f.flush()  # type: ignore[attr-defined]

    def fault(self, kind: str, path: Path) -> None:
        """Do ``kind`` (``FAULTS``) to ``path``; ``chmod`` makes it readable again ``flip_s`` later (the writer
        goes on meanwhile; ``close`` waits for it)."""
        if kind == "rename":
            self._close(path)
            os.replace(path, path.with_name(path.name + ".1"))
        elif kind == "copytruncate":
            shutil.copyfile(path, path.with_name(path.name + ".1"))
            os.truncate(path, 0)
        elif kind == "delete":
            self._close(path)
            path.unlink()
        elif kind == "chmod":
            folder_mode, file_mode = path.parent.stat().st_mode & 0o7777, path.stat().st_mode & 0o7777
            path.chmod(0)
            path.parent.chmod(0)

            def restore() -> None:
                path.parent.chmod(folder_mode)
                path.chmod(file_mode)

            timer = threading.Timer(self.flip_s, restore)
            timer.start()
            self._timers.append(timer)
        else:
            raise ValueError(kind)

    def _close(self, path: Path) -> None:
        f = self._handles.pop(path, None)
        if f is not None:
            f.close()  # type: ignore[attr-defined]

    def close(self) -> None:
        for timer in self._timers:
            timer.join()
        for path in list(self._handles):
            self._close(path)
