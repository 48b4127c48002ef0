"""Where one ``a1x-tui --check``'s wall time goes: marks from the process start to each phase.

Usage: ``python benchmarks/check_timeline.py RUN_DIR > /dev/null`` (Linux: the start is read from
/proc). Prints to stderr, in seconds since the process started: Python up, the native reader's
threads asked to start and started (``_start_reading``), the detectors' and report models' imports
done (``engine._read_into`` begins), reading done, detectors done, exit; then the CPU seconds of the
threads still alive at exit (the main one), and how long the main thread (the parser) waited on the
reader's queues for the scan threads' blocks. The reading is timed in one process (``A1X_NO_FORK=1``:
``--check``'s child process would read where these marks do not reach). It wraps module attributes and
``queue.Queue.get`` only; the run itself is ``a1x_tui.cli.main(['--check', RUN_DIR, '--format',
'json'])``, then the usual exit (the program's ``entry`` would leave without this report). docs/parsing.md,
"Second pass" and "Seventh pass".
"""

from __future__ import annotations

import atexit
import importlib.abc
import importlib.machinery
import os
import queue
import sys
import threading
import time
from types import ModuleType
from typing import Any


def _since_start() -> float:
    with open("/proc/self/stat") as f:
        start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/uptime") as f:
        up = float(f.read().split()[0])
    return up - start_ticks / os.sysconf("SC_CLK_TCK")


T0 = time.monotonic() - _since_start()
# The one-process reader: with a child process (a1x_diagnostics.reader_process) the read happens in the
# child, where these marks and the queue waits are not seen (docs/parsing.md, "Eleventh pass").
os.environ["A1X_NO_FORK"] = "1"
MARKS: list[tuple[str, float]] = []
WAIT = [0.0, 0]  # seconds the main thread spent in queue.Queue.get, and the number of calls


def mark(name: str) -> None:
    MARKS.append((name, time.monotonic() - T0))


def _patch_queue() -> None:
    """Times the main thread's ``queue.Queue.get``: the parser waiting for a block the scan threads
    have not handed over yet (docs/parsing.md, "Where the dev VM's second is spent")."""
    get = queue.Queue.get
    main_thread = threading.main_thread()

    def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
        if threading.current_thread() is not main_thread:
            return get(self, *args, **kwargs)
        t = time.perf_counter()
        try:
            return get(self, *args, **kwargs)
        finally:
            WAIT[0] += time.perf_counter() - t
            WAIT[1] += 1

    queue.Queue.get = timed  # type: ignore[method-assign]


def _patch_engine(engine: ModuleType) -> None:
    read_into, assess = engine._read_into, engine.Collector.assess

    def read(*args: Any) -> None:
        mark("imports done, read begins")
        read_into(*args)
        mark("read ends")

    def assessed(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = assess(self, *args, **kwargs)
        mark("assessed")
        return result

    engine._read_into = read
    engine.Collector.assess = assessed


class _EngineHook(importlib.abc.MetaPathFinder):
    """Wraps ``a1x_diagnostics.engine`` once it is imported, where ``--check`` imports it (not earlier)."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != "a1x_diagnostics.engine":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        loader: Any = spec.loader
        exec_module = loader.exec_module

        def run(module: ModuleType) -> None:
            exec_module(module)
            _patch_engine(module)

        loader.exec_module = run
        return spec


def _report() -> None:
    mark("exit")
    ticks = os.sysconf("SC_CLK_TCK")
    cpu: dict[str, float] = {}
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open(f"/proc/self/task/{task}/comm") as f:
            name = f.read().strip()
        cpu[name] = cpu.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / ticks
    marks = " | ".join(f"{n} {t:.3f}" for n, t in MARKS)
    sys.stderr.write(marks + "\n  cpu: " + ", ".join(f"{k} {v:.2f}" for k, v in cpu.items())
                     + f"\n  main thread waited on the reader's queues {WAIT[0]:.3f} s in {WAIT[1]} gets\n")


def main() -> None:
    mark("python up")
    import a1x_tui.commands.check as check

    start_reading = check._start_reading

    def start(*args: Any) -> Any:
        mark("prefetch asked")
        reader = start_reading(*args)
        mark("prefetch started")
        return reader

    check._start_reading = start
    _patch_queue()
    sys.meta_path.insert(0, _EngineHook())
    atexit.register(_report)
    from a1x_tui.cli import main as cli_main  # not the program's entry: it leaves without atexit hooks

    sys.exit(cli_main(["--check", sys.argv[1], "--format", "json"]))


if __name__ == "__main__":
    main()
