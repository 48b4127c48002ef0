"""A seeded generator of hostile runs for ``--check``: for ``test_check_fuzz.py`` and ``benchmarks/fuzz_check.py``.

``hostile_run(seed, folder)`` makes one run folder from the seed alone (the same seed, the same bytes):
a Cosmos-RL log dir, one ``logs_<ts>``, our run folder or a single file, whose files are recorded lines
(``tests/fixtures``: all generations and users' logs, mixed) spoilt the ways a disk, a copy or a crash spoils
them: lines cut (mid-UTF-8 too), binary junk, NULs, ANSI and bidi controls, ``\\r`` redraws, a line past
the reader's 4 MiB cut, UTF-16 and Latin-1 files, BOMs, CRLF, numbers and stamps out of range, a
traceback cut short; beside them empty files, files mode 000, symlink loops, dangling and self links,
``logs_latest`` naming a file or nothing, and folders where files are expected. Every file, folder and link
is dated 2026-11-29 (its mtime), so that a check judged at a fixed moment reads every case alike, any day.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

from a1x_diagnostics.findings import Report

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MTIME = 1_795_953_600.0  # 2026-11-29 12:00 UTC


def _pool() -> list[bytes]:
    lines: list[bytes] = []
    sources = sorted((FIXTURES / "cosmos").glob("*/*/logs_2*/*.log"))
    sources += sorted((FIXTURES / "real-runs").glob("cosmos-rl-*/*/logs_2*/*.log"))
    sources += sorted((FIXTURES / "real-runs" / "users-logs").glob("*.log"))
    sources += sorted((FIXTURES / "cosmos").glob("*/*/run.out"))
    for path in sources:
        lines.extend(line + b"\n" for line in path.read_bytes().split(b"\n") if line)
    return lines


POOL = _pool()
JUNK = [b"\x00" * 64, b"\xff\xfe\xfd", b"\x1b[31mred\x1b[0m", "\u202e\u2066evil\u2069\u200b".encode(), b"\r\r\r",
        b"\xc3", b"\xe2\x82", "\ufeff".encode(), b"\x7f\x80\x81", b"Traceback (most recent call last):\n",
        b"  File \"x.py\", line 1, in <module>\n", b"Step: 99999999999999999999/0, Reward Mean: nan\n",
        b"[cosmos] 1900-01-01 00:00:00,000 - cosmos - INFO - Step: 1/2, Reward Mean: inf\n",
        b"[cosmos] 9999-13-45 99:99:99,999 - cosmos - ERROR - x\n", b"exitcode  : -999999999999 (pid: -1)\n",
        b"[rank-1]:[rank99999999999]: RuntimeError: \n", b"W9999 99:99:99.999999 0 x.py:0] \n"]


def _spoil(rng: random.Random, line: bytes) -> bytes:
    kind = rng.randrange(12)
    if kind == 0:
        return line[: rng.randrange(len(line) + 1)]  # cut, maybe mid-UTF-8, newline gone
    if kind == 1:
        at = rng.randrange(len(line) + 1)
        return line[:at] + rng.choice(JUNK) + line[at:]
    if kind == 2:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))) + b"\n"
    if kind == 3:
        return line.replace(b"\n", b"\r\n")
    if kind == 4:
        return line.rstrip(b"\n") + b"\r"
    if kind == 5:  # numbers out of range
        out = bytearray(line)
        for i, c in enumerate(out):
            if 48 <= c <= 57 and rng.random() < 0.3:
                out[i] = rng.choice(b"09-.e")
        return bytes(out)
    if kind == 6:
        return rng.choice(JUNK) + b"\n"
    return line


def _content(rng: random.Random, huge: bool) -> bytes:
    n = rng.randrange(0, 400)
    start = rng.randrange(len(POOL))
    if rng.random() < 0.5:  # a stretch of one recorded file, mostly
        lines = POOL[start : start + n]
    else:  # lines of every generation and user, mixed
        lines = [rng.choice(POOL) for _ in range(n)]
    lines = [_spoil(rng, line) if rng.random() < 0.2 else line for line in lines]
    if huge:
        lines.insert(rng.randrange(len(lines) + 1), b"[cosmos] " + b"y" * ((4 << 20) + rng.randrange(4096)) + b"\n")
    data = b"".join(lines)
    encoding = rng.randrange(10)
    if encoding == 0:
        data = data.decode("utf-8", "replace").encode("utf-16")
    elif encoding == 1:
        data = data.decode("utf-8", "replace").encode("latin-1", "replace")
    elif encoding == 2:
        data = b"\xef\xbb\xbf" + data
    return data


def _write(rng: random.Random, path: Path, huge: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    odd = rng.randrange(20)
    if odd == 0:
        path.write_bytes(b"")
    elif odd == 1:
        path.symlink_to(path.name)  # a link to itself
    elif odd == 2:
        path.symlink_to("nowhere/at/all.log")
    elif odd == 3:
        path.mkdir()  # a folder where a file is expected
    else:
        path.write_bytes(_content(rng, huge))
        if odd == 4:
            path.chmod(0)


def hostile_run(seed: int, folder: Path) -> Path:
    """Make the run of ``seed`` under ``folder`` (created); returns the path to check."""
    target = _make(random.Random(seed), folder)
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:  # links themselves, not what they name
            os.utime(os.path.join(root, name), (MTIME, MTIME), follow_symlinks=False)
    os.utime(folder, (MTIME, MTIME))
    return target


def _make(rng: random.Random, folder: Path) -> Path:
    huge = rng.random() < 0.02  # a line past the 4 MiB cut, in one run of fifty
    folder.mkdir(parents=True)
    layout = rng.randrange(5)
    ts = f"logs_2026112{rng.randrange(10)}-1{rng.randrange(10)}0000"
    if layout == 3:  # a single file
        target = folder / rng.choice(["run.out", "controller.log", "rollout_3.log", "slurm_1.log", "x.err"])
        _write(rng, target, huge)
        return target
    run_dir = folder / ts if layout in (0, 1) else folder / "logs"
    if layout == 2:  # our run folder
        (folder / "run.toml").write_bytes(rng.choice([b'compute = "local"\n', b"\x00\xff", b"compute = [\n"]))
        (folder / "state.json").write_bytes(rng.choice([b"{}", b"[1]", b'{"stages": [{"name": "train", '
                                                        b'"status": "stopped", "ended_at": "1900-01-01"}]}', b"\xff"]))
        _write(rng, folder / "stages" / "train.log", False)
        run_dir = folder / "logs"
    run_dir.mkdir(parents=True, exist_ok=True)
    names = ["controller.log"] + [f"policy_{i}.log" for i in range(rng.randrange(3))]
    names += [f"rollout_{i}.log" for i in range(rng.randrange(4))]
    for name in names:
        if rng.random() < 0.9:
            _write(rng, run_dir / name, huge and name == "controller.log")
    if layout == 0:  # a --log-dir: logs_latest and a capture beside
        link = rng.randrange(6)
        latest = folder / "logs_latest"
        if link == 0:
            latest.symlink_to("logs_latest")  # a loop
        elif link == 1:
            latest.symlink_to("logs_19000101-000000")  # dangling
        elif link == 2:
            latest.write_bytes(ts.encode())  # a file, as a copy leaves it
        elif link == 3:
            (folder / "a.log").symlink_to("b.log")
            (folder / "b.log").symlink_to("a.log")
            latest.symlink_to(ts)
        else:
            latest.symlink_to(ts)
        if rng.random() < 0.7:
            _write(rng, folder / "run.out", False)
    return run_dir if layout in (1, 4) else folder


def unlock(folder: Path) -> None:
    """Make every file and folder under ``folder`` removable again (some were made mode 000)."""
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                os.chmod(path, 0o700)


def checked(target: Path, *, timeout: float = 60.0) -> str:
    """``--check``'s two outputs of ``target`` (JSON, then text) as one string, without the moment it was made:
    what must be the same each time. Judged on 2026-12-01, whatever today is."""
    import json

    from a1x_diagnostics.engine import check
    from a1x_diagnostics.report import render

    report = check(target, now=MTIME + 2 * 86400, timeout=timeout)
    as_json = json.loads(render(report, "json", False))
    as_json.pop("generated_at", None)
    return json.dumps(as_json, sort_keys=True) + "\n" + render(report, "text", True)


def hidden_crashes(report: Report) -> list[str]:
    """What in a report is a crash caught on the way (a detector's, the outcome's, a linter's): on hostile input
    as much a failure as a traceback, only quieter."""
    out = [f"{c.id}: {c.note}" for c in report.checks if (c.note or "").startswith("detector error")]
    out += [n for n in report.notes if "lint failed" in n]
    if report.outcome is not None and "could not be read" in report.outcome.summary:
        out.append(report.outcome.summary)
    return out
