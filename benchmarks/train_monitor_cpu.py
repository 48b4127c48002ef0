"""CPU of the supervisor's train monitor while a cluster-size run is written: batch checks vs the follower.

    python benchmarks/train_monitor_cpu.py [--dir DIR] [--modes before,after] [--history-mb 1024]
                                           [--mb-per-s 5] [--seconds 30] [--interval 12] [--out benchmarks/out]
                                           [--name train_monitor_cpu]

Builds ``<DIR>/run/logs`` as a Cosmos-RL ``--log-dir`` whose run has the 193 files of the
Alpamayo 1.5 cluster job (``controller.log``, 64 ``policy_<i>.log``, 128 ``rollout_<i>.log``;
``--history-mb`` already written, the lines of ``live_follow_writer.py``). For each mode, in a
fresh process that drives a ``a1x_supervisor.train_monitor.TrainMonitor`` as the daemon's
stage runner (``a1x_supervisor/stage_runner.py``) does (``tick(running=True)`` every 0.5 s):

1. the monitor is created, then this attempt's ``logs_<ts>`` appears (moved in, ``logs_latest``
   re-pointed), as when the launcher starts;
2. the mode gets ready: ``before`` waits for its first batch check to end, ``after`` for the
   follower to have read the run's history (the one-time cost of opening a run that is already
   large: reported apart, since the daemon's follower starts with the run and never pays it);
3. ``live_follow_writer.py`` appends ``--mb-per-s`` in total to the 193 files for ``--seconds``;
   the figure is the CPU of the monitor's process over that window, every thread (the daemon's
   loop, the follower's and watchdog's, the check threads) and every reaped child (``grep`` of the
   check's prefilter), as % of one core.

Modes:

- ``before``: the monitor as it was up to commit 1bb7197 (``_poll_diagnostics``): every
  ``--interval`` s (``diagnostics_interval_s``, 12 by default), unless the previous one still
  runs, a thread calls ``a1x_diagnostics.engine.check(<logs>, run=<logs_ts>, now=time.time(),
  timeout=120)``, which reads every file of the run from its start. Reproduced here call for call
  over today's monitor without live diagnostics (its step and checkpoint reading is unchanged).
- ``after``: today's monitor, ``diagnosis=load_diagnosis()``: one ``RunFollower`` for the stage.
- ``off``: the monitor with ``live_diagnostics = false`` (steps, checkpoints, launcher lines): the
  share of the two figures above that is not the diagnostics.

Results: ``OUT/NAME.json`` and ``OUT/NAME.md``; the figures in ``docs/supervisor.md`` come
from this script.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from live_follow import drive_load  # the writer protocol shared with the follower benchmark

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RUN = "logs_20250609-101500"
TICK_S = 0.5  # the stage runner's loop: proc.wait(0.5), then monitor.tick()


def cpu_seconds() -> float:
    """This process (every thread) and its reaped children (the check's grep)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


class BatchChecks:
    """The monitor's diagnostics before the live follower: a whole-run ``check`` every interval."""

    def __init__(self, monitor: Any, interval_s: float) -> None:
        from a1x_diagnostics.engine import check

        self._check = check
        self._monitor = monitor
        self._interval_s = interval_s
        self._next = time.monotonic() + min(interval_s, 2.0)
        self._thread: threading.Thread | None = None
        self.done: list[dict[str, float]] = []  # wall and CPU-thread seconds of each check
        self.findings: set[str] = set()

    def poll(self) -> None:
        if self._monitor.logs_dir is None:
            return
        busy = self._thread is not None and self._thread.is_alive()
        if busy or time.monotonic() < self._next:
            return
        self._next = time.monotonic() + self._interval_s
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        t0, c0 = time.monotonic(), time.thread_time()
        report = self._check(self._monitor.log_dir, run=self._monitor.run_name, now=time.time(), timeout=120.0)
        self.findings.update(f.id for f in report.findings)
        self.done.append({"wall_s": time.monotonic() - t0, "thread_cpu_s": time.thread_time() - c0})

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()


def monitor_main(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(ROOT))
    from a1x_supervisor.secrets import Scrubber
    from a1x_supervisor.state import FindingsLog
    from a1x_supervisor.train_monitor import TrainMonitor, load_diagnosis

    base = Path(args.root)
    logs = base / "run" / "logs"
    events: list[tuple[str, str]] = []
    diagnosis = load_diagnosis() if args.mode == "after" else None
    monitor = TrainMonitor(
        log_dir=logs,
        ranks=lambda: None,
        diagnosis=diagnosis,
        interval_s=args.interval,
        grace_s=120.0,
        findings=FindingsLog(base / "findings.jsonl", Scrubber([])),
        emit=lambda kind, message, **_: events.append((kind, message)),
    )
    batch = BatchChecks(monitor, args.interval) if args.mode == "before" else None
    # The launcher starts: this attempt's logs_<ts> appears and logs_latest is re-pointed to it.
    os.rename(base / "staging" / RUN, logs / RUN)
    os.symlink(RUN, logs / "logs_latest")

    marks: dict[str, float] = {}
    commands: list[str] = []
    lock = threading.Lock()

    def read_commands() -> None:
        for line in sys.stdin:
            with lock:
                commands.append(line.strip())
                if line.strip() in ("load-start", "load-end"):
                    marks[line.strip()] = cpu_seconds()
                    marks[line.strip() + "-t"] = time.monotonic()
                    marks[line.strip() + "-checks"] = len(batch.done) if batch is not None else 0

    threading.Thread(target=read_commands, daemon=True).start()
    t_open, cpu_open = time.monotonic(), cpu_seconds()
    ready_sent = False
    while True:
        monitor.tick(running=True)
        if batch is not None:
            batch.poll()
        if not ready_sent:
            follower = monitor.follower
            if batch is not None:
                ready = bool(batch.done)
            elif args.mode == "off":
                ready = monitor.logs_dir is not None
            else:
                ready = follower is not None and follower.history_complete.is_set() and follower.evaluated
            if ready:
                ready_sent = True
                opened = {
                    "open_s": round(time.monotonic() - t_open, 2),
                    "open_cpu_s": round(cpu_seconds() - cpu_open, 2),
                }
                print(json.dumps({"event": "ready", **opened}), flush=True)
        with lock:
            if "quit" in commands:
                break
        time.sleep(TICK_S)
    checks = [] if batch is None else batch.done[int(marks["load-start-checks"]) : int(marks["load-end-checks"])]
    if batch is not None:
        batch.join()
    follower = monitor.follower
    scanning = bool(follower.scanning) if follower is not None else None
    monitor.close()
    records = base / "findings.jsonl"
    window = marks["load-end-t"] - marks["load-start-t"]
    result = {
        "event": "result",
        "mode": args.mode,
        "load_cpu_pct": round((marks["load-end"] - marks["load-start"]) / window * 100, 2),
        "window_s": round(window, 2),
        "checks_in_window": len(checks),  # ended within the window
        "check_wall_s": [round(c["wall_s"], 2) for c in checks],
        "check_findings": sorted(batch.findings) if batch is not None else None,
        "follower_size_scans": scanning,
        "findings_jsonl_lines": len(records.read_text().splitlines()) if records.exists() else 0,
        "threads_left": [t.name for t in threading.enumerate() if t.name == "a1x-live-follower"],
        "last_step": monitor.last_step,
    }
    print(json.dumps(result), flush=True)


def build_run(base: Path, history_mb: float) -> Path:
    """``staging/logs_<ts>`` with the 193 files, ``history_mb`` in all (a block of real-looking lines
    per file, repeated), and an empty ``run/logs`` for it to be moved into."""
    sys.path.insert(0, str(HERE))
    from live_follow_writer import file_names, make_line

    folder = base / "staging" / RUN
    folder.mkdir(parents=True)
    (base / "run" / "logs").mkdir(parents=True)
    names = file_names()
    per_file = int(history_mb * 1e6 / len(names))
    rng = random.Random(0)
    then = time.time() - 3600
    for name in names:
        block: list[str] = []
        size = 0
        n = 0
        while size < min(per_file, 256 * 1024):
            n += 1
            line = make_line(name, n, then + n * 0.01, rng)
            block.append(line)
            size += len(line)
        if name == "controller.log":  # steps, so the monitor has a progress to read
            block.append(
                f"[cosmos] 2025-06-09 10:15:00,000 - cosmos - INFO - Step: 1/1000, Reward Mean: 0.1 wt={then}\n"
            )
        data = "".join(block).encode()
        with open(folder / name, "wb") as f:
            written = 0
            while written < per_file:
                f.write(data)
                written += len(data)
    return folder


def run_mode(mode: str, base: Path, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--role", "monitor", "--mode", mode, str(base), "--interval", str(args.interval)]
    child = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdin is not None and child.stdout is not None
    ready = json.loads(child.stdout.readline())
    assert ready["event"] == "ready", ready
    folder = base / "run" / "logs" / RUN
    writer_out = drive_load(child, folder, args, settle_s=1.0)
    result = json.loads(child.stdout.readline())
    child.wait(timeout=300)
    return {**result, "open_s": ready["open_s"], "open_cpu_s": ready["open_cpu_s"], "writer": json.loads(writer_out)}


def markdown(results: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [
        f"Run {meta['date']} on {meta['machine']}; command: `{meta['command']}`; "
        f"load average before {meta['load_average_before'][0]:.2f}, after {meta['load_average_after'][0]:.2f}",
        "",
        "| mode | CPU during the load (% of one core) | batch checks in the window (wall s each) | ready after "
        "| written |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        checks = (
            f"{r['checks_in_window']} ({', '.join(str(w) for w in r['check_wall_s'])})"
            if r["mode"] == "before"
            else "—"
        )
        ready = f"{r['open_s']} s, {r['open_cpu_s']} CPU s"
        w = r["writer"]
        lines.append(
            f"| {r['mode']} | {r['load_cpu_pct']:.1f} % | {checks} | {ready} | "
            f"{w['mb_per_s']} MB/s, {w['lines']} lines in {w['seconds']} s |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--role", choices=("orchestrator", "monitor"), default="orchestrator")
    p.add_argument("root", nargs="?", help=argparse.SUPPRESS)
    p.add_argument("--mode", choices=("before", "after", "off"), help=argparse.SUPPRESS)
    p.add_argument("--dir", help="where to build the run (default: a temporary folder, removed after)")
    p.add_argument("--modes", default="before,after,off")
    p.add_argument("--history-mb", type=float, default=1024.0, help="what the run holds already (MB, in all)")
    p.add_argument("--mb-per-s", type=float, default=5.0, help="what the writer appends, in all (MB/s)")
    p.add_argument("--seconds", type=float, default=30.0)
    p.add_argument("--interval", type=float, default=12.0, help="diagnostics_interval_s (the spec's default: 12)")
    p.add_argument("--out", default=str(HERE / "out"))
    p.add_argument("--name", default="train_monitor_cpu", help="results: OUT/NAME.json and OUT/NAME.md")
    args = p.parse_args()
    if args.role == "monitor":
        monitor_main(args)
        return

    load_before = os.getloadavg()
    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="a1x-monitor-bench-"))
    results = []
    try:
        for mode in args.modes.split(","):
            shutil.rmtree(base / "run", ignore_errors=True)
            shutil.rmtree(base / "staging", ignore_errors=True)
            (base / "findings.jsonl").unlink(missing_ok=True)
            t0 = time.monotonic()
            build_run(base, args.history_mb)  # every mode starts from the same files
            print(
                f"[train_monitor_cpu] built the run in {time.monotonic() - t0:.1f} s; mode {mode} ...",
                file=sys.stderr,
                flush=True,
            )
            results.append(run_mode(mode, base, args))
            print(f"[train_monitor_cpu] {json.dumps(results[-1])}", file=sys.stderr, flush=True)
    finally:
        for name in ("run", "staging", "findings.jsonl"):
            target = base / name
            if target.is_dir():
                shutil.rmtree(target, ignore_errors=True)
            else:
                target.unlink(missing_ok=True)
        if not args.dir:
            shutil.rmtree(base, ignore_errors=True)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "machine": f"{platform.node()} · {platform.processor() or platform.machine()} · {os.cpu_count()} CPUs · "
        f"Python {platform.python_version()} · {platform.system()} {platform.release()}",
        "command": "python benchmarks/train_monitor_cpu.py " + " ".join(sys.argv[1:]),
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.name}.json").write_text(json.dumps({"meta": meta, "results": results}, indent=2) + "\n")
    text = markdown(results, meta)
    (out / f"{args.name}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
