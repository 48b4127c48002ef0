"""``a1x-tui attach`` on a large run in a real terminal (tmux), side by side with ``a1x-tui --check`` on the same run.

Each round times ``a1x-tui --check DIR --format json`` (a fresh process, the report to /dev/null), then starts
``a1x-tui attach DIR`` in a detached tmux session of WxH and reads its screen (``capture-pane``, polled):

- first screen: the banner is drawn;
- findings: the verdict is on screen (a finding's severity, ``CRITICAL`` / ``warning``, in the Findings tab the
  read-only attach opens on; or ``N finding(s)`` in the banner);
- loading honesty: whether ``reading history`` was on screen before the findings, and whether ``no findings`` ever
  was (it must not be, for a run with findings);
- keys while the history is read: ``2`` (Logs) and ``4`` (Findings) alternately every 0.5 s, from the first screen
  until the follower's own diagnosis is in, each timed until the tab it opens is drawn (its first row), the screen
  looked at every 20 ms; then six more once the history is read, the control on the same machine and moment;
- memory: the app's peak RSS (``VmHWM``) and the peak of the app with its children (the ``--check`` it runs for the
  verdict), sampled.

Usage: ``python benchmarks/attach_history.py DIR [--rounds 3] [--size 120x40] [--timeout 300]``; ``--generate MIX``
first writes check_scale.py's 1 GiB, 193-file run of that mix into DIR (kept). ``--until-findings``: one attach,
ended once its findings are on screen, for timing the whole process from outside against ``a1x-tui --check DIR``
(pairs A B A B, e.g. with ``/usr/bin/time`` or any paired timer). The machine, its load and the code
are printed with the table: compare only figures of one run of this script.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SESSION = "a1x-attach-bench"
# The key, and how its tab's first row begins (the row under the tab bar): the Logs tab's file list, the
# Findings tab's verdict line (before the verdict: how much of the history is read).
KEYS = (("2", ("merged",)), ("4", ("run ", "reading history")))
LOADING = ("reading history", "live diagnosis once")
IDLE_KEYS = 6  # keys once the history is read, on the same machine at the same moment: the control


@dataclass
class Round:
    check_s: float = 0.0
    first_screen_s: float | None = None
    findings_s: float | None = None
    live_s: float | None = None  # the follower's own diagnosis replaced the verdict
    reading_seen: bool = False
    no_findings_seen: bool = False
    keys: list[float] = field(default_factory=list)  # seconds from a key to its tab on screen, while loading
    unanswered: int = 0
    idle_keys: list[float] = field(default_factory=list)  # the same once the history is read: the control
    app_peak_mb: float = 0.0
    tree_peak_mb: float = 0.0


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", "-L", SESSION, *args], capture_output=True, text=True, check=False).stdout


def screen() -> str:
    return tmux("capture-pane", "-p", "-t", SESSION)


def rss_kb(pid: int, field_name: str = "VmRSS") -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = []
        try:
            tasks = os.listdir(f"/proc/{p}/task")  # a child started by a worker thread is that thread's
        except OSError:
            tasks = []
        for task in tasks:
            try:
                with open(f"/proc/{p}/task/{task}/children", encoding="ascii") as f:
                    kids += [int(k) for k in f.read().split()]
            except OSError:
                pass
        out.extend(kids)
        todo.extend(kids)
    return out


def time_check(run: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "a1x_tui", "--check", str(run), "--format", "json"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def attach_round(run: Path, size: tuple[int, int], timeout: float, *, until_findings: bool = False) -> Round:
    r = Round()
    tmux("kill-server")
    command = f"exec {sys.executable} -m a1x_tui attach {run}"
    start = time.perf_counter()
    tmux("new-session", "-d", "-s", SESSION, "-x", str(size[0]), "-y", str(size[1]), command)
    pid = int(tmux("display", "-p", "-t", SESSION, "#{pane_pid}").strip() or 0)
    next_key = 0.0
    key_index = 0
    pending: tuple[float, tuple[str, ...]] | None = None  # (sent at, how its tab's first row begins)
    loading_on: dict[str, bool] = {"2": True, "4": True}  # each tab, as last drawn: still says it is loading
    while True:
        now = time.perf_counter() - start
        if now > timeout:
            break
        text = screen()
        tree = rss_kb(pid) + sum(rss_kb(c) for c in descendants(pid))
        r.tree_peak_mb = max(r.tree_peak_mb, tree / 1024)
        r.app_peak_mb = max(r.app_peak_mb, rss_kb(pid, "VmHWM") / 1024)
        if r.first_screen_s is None and "read-only" in text:
            r.first_screen_s = now
        if r.findings_s is None:
            r.reading_seen = r.reading_seen or "reading history" in text
            r.no_findings_seen = r.no_findings_seen or "no findings" in text.lower()
            banner = text.splitlines()[0] if text else ""
            if "CRITICAL" in text or "▲ warning" in text or " finding" in banner:
                r.findings_s = now
                if until_findings:
                    break
        if pending is not None:
            sent, marker = pending
            rows = text.splitlines()
            if len(rows) > 3 and rows[3].lstrip().startswith(marker):
                (r.keys if r.live_s is None or sent < r.live_s else r.idle_keys).append(now - sent)
                loading_on[KEYS[0][0] if marker == KEYS[0][1] else KEYS[1][0]] = any(m in text for m in LOADING)
                if os.environ.get("A1X_BENCH_TRACE"):
                    print(f"  key {marker[0]!r} sent at {sent:.2f} s answered in {now - sent:.3f} s", file=sys.stderr)
                pending = None
            elif now - sent > 5.0:
                r.unanswered += 1
                pending = None
        in_history = r.first_screen_s is not None and r.live_s is None
        if r.findings_s is not None and not any(loading_on.values()) and r.live_s is None:
            r.live_s = now  # neither tab says "reading history" / "live diagnosis once" any more
        keying = in_history or (r.live_s is not None and len(r.idle_keys) < IDLE_KEYS)
        if keying and pending is None and now >= next_key:
            key, marker = KEYS[key_index % len(KEYS)]
            key_index += 1
            tmux("send-keys", "-t", SESSION, key)
            pending = (now, marker)
            next_key = now + 0.5
        if r.live_s is not None and pending is None and len(r.idle_keys) >= IDLE_KEYS:
            break
        time.sleep(0.02 if pending is not None else 0.05)  # each look starts a tmux client: on 2 cores, not more
    tmux("send-keys", "-t", SESSION, "q")
    for _ in range(100):
        if not tmux("list-sessions").strip():
            break
        time.sleep(0.05)
    tmux("kill-server")
    return r


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--size", default="120x40")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--generate", metavar="MIX", help="write check_scale.py's run of this mix into DIR first")
    ap.add_argument("--until-findings", action="store_true",
                    help="one attach, ended as soon as its findings are on screen (to be timed from outside, as a "
                         "whole process, against `a1x-tui --check DIR`)")
    args = ap.parse_args()
    if shutil.which("tmux") is None:
        print("tmux is not on PATH", file=sys.stderr)
        return 3
    if args.generate:
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "check_scale.py"), str(args.dir), "--mix",
                        args.generate, "--generate-only", "--keep"], check=True)
    width, height = (int(v) for v in args.size.split("x"))
    if args.until_findings:
        r = attach_round(args.dir, (width, height), args.timeout, until_findings=True)
        print(f"findings on screen after {r.findings_s} s")
        return 0 if r.findings_s is not None else 1
    rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    size_mb = sum(p.stat().st_size for p in args.dir.rglob("*") if p.is_file()) / 2**20
    files = sum(1 for p in args.dir.rglob("*.log") if p.is_file())
    print(f"# attach vs --check: {args.dir} ({files} files, {size_mb:,.0f} MiB), code {rev.stdout.strip()}, "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}, terminal {args.size} (tmux)")
    print("| round | --check s | first screen s | findings s | ratio | history read s | keys ≤ 0.2 s while loading "
          "| key p50 / max s | after the history: p50 / max s | app peak MB | app + children MB "
          "| 'reading history' | 'no findings' |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    rounds = []
    for i in range(args.rounds):
        check_s = time_check(args.dir)
        r = attach_round(args.dir, (width, height), args.timeout)
        r.check_s = check_s
        rounds.append(r)
        ratio = f"{r.findings_s / r.check_s:.2f}x" if r.findings_s is not None else "none"
        fast = sum(1 for k in r.keys if k <= 0.2)
        keys = f"{statistics.median(r.keys):.3f} / {max(r.keys):.3f}" if r.keys else "-"
        idle = f"{statistics.median(r.idle_keys):.3f} / {max(r.idle_keys):.3f}" if r.idle_keys else "-"
        print(f"| {i + 1} | {r.check_s:.2f} | {r.first_screen_s or 0:.2f} | "
              f"{r.findings_s if r.findings_s is not None else float('nan'):.2f} | {ratio} | "
              f"{r.live_s if r.live_s is not None else float('nan'):.2f} | {fast}/{len(r.keys) + r.unanswered} | "
              f"{keys} | {idle} | {r.app_peak_mb:.0f} | {r.tree_peak_mb:.0f} | {'yes' if r.reading_seen else 'no'} | "
              f"{'YES' if r.no_findings_seen else 'no'} |", flush=True)
    found = [r.findings_s / r.check_s for r in rounds if r.findings_s is not None]
    if found:
        print(f"\nmedian ratio findings / --check: {statistics.median(found):.2f}x over {len(found)} round(s); "
              f"load {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
