"""``a1x-tui --check`` against ``grep -c`` (one fixed pattern) on the same files, whole processes, in turn.

Usage: ``python benchmarks/vs_grep.py DIR [DIR ...] [--rounds 5] [--base PATH]``. For each DIR (a
run made by ``benchmarks/check_scale.py DIR --mix M --generate-only``), runs ``python3 -m a1x_tui
--check DIR --format json`` from this checkout (A), optionally from another checkout ``--base``
(the code before a change), and ``grep -c -F "pending rollouts"`` over the run's log files (B),
A B A B ... after compiling each checkout's bytecode (as an install has it) and one warm-up of each
(the files are then in the page cache for all of them), and
prints, per command, the min / median / max of wall seconds, CPU seconds (user + system of the
process and the children it waited for) and peak resident memory (the largest single process),
and the ratio A/B taken round by round; also the CPU time the hypervisor stole from the machine meanwhile
(``/proc/stat``: a VM's slow minutes). Only public means: ``os.wait4``'s resource usage.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _steal() -> float:
    """Seconds of all CPUs' time the hypervisor gave to other guests so far (Linux /proc/stat; 0 elsewhere).
    A 2-vCPU VM's slow minutes show here, not in the single-threaded grep's time (docs/parsing.md, "Ninth pass")."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        return int(fields[8]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, float, int, float]:
    """(wall s, cpu s, peak MiB, exit status, steal s) of one whole process."""
    stolen = _steal()
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.chdir(cwd)
            fd = os.open(os.devnull, os.O_RDWR)
            for k in (0, 1, 2):
                os.dup2(fd, k)
            os.execvpe(argv[0], argv, env)
        finally:
            os._exit(127)
    _, status, ru = os.wait4(pid, 0)
    wall = time.monotonic() - t0
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, os.waitstatus_to_exitcode(status), _steal() - stolen


def _compile(root: Path) -> None:
    """The checkout's bytecode, as an install has it (pip compiles what it installs). Without it, where
    ``PYTHONDONTWRITEBYTECODE`` is set (both machines of docs/parsing.md set it), every timed run compiled
    the package's sources again: 0.3 s of each run on the GPU node before 2026-12-02's figures."""
    import compileall

    for package in ("a1x_tui", "a1x_diagnostics", "a1x_supervisor", "a1x_configs"):
        if (root / package).is_dir():
            compileall.compile_dir(root / package, quiet=1)


def _row(name: str, values: list[float], fmt: str) -> str:
    return f"| {name} | " + " | ".join(fmt % v for v in (min(values), statistics.median(values), max(values))) + " |"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--base", type=Path, help="another checkout of the project, timed the same way")
    args = ap.parse_args()
    checkouts = {"A": ROOT} | ({"base": args.base.resolve()} if args.base else {})
    for root in checkouts.values():
        _compile(root)
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"# {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}, {when}")
    for folder in args.dirs:
        files = sorted(str(p) for p in folder.resolve().glob("logs_*/*.log") if not p.parent.is_symlink())
        size = sum(os.path.getsize(f) for f in files) / 2**20
        cmds: dict[str, tuple[list[str], dict[str, str], Path]] = {}
        for name, root in checkouts.items():
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (str(root), os.environ.get("PYTHONPATH")))))
            cmds[name] = ([sys.executable, "-m", "a1x_tui", "--check", str(folder.resolve()), "--format", "json",
                           "--timeout", "3600"],
                          env, root)
        cmds["grep"] = (["grep", "-c", "-F", "pending rollouts", *files], dict(os.environ), ROOT)
        for argv, env, cwd in cmds.values():  # warm-up: page cache, bytecode
            _run(argv, env, cwd)
        got: dict[str, list[tuple[float, float, float, int, float]]] = {k: [] for k in cmds}
        for _ in range(args.rounds):
            for name, (argv, env, cwd) in cmds.items():
                got[name].append(_run(argv, env, cwd))
        print(f"\n## {folder.name}: {len(files)} files, {size:.0f} MiB, {args.rounds} rounds (min | median | max)\n")
        print("| figure | min | median | max |\n| --- | --- | --- | --- |")
        for name, runs in got.items():
            print(_row(f"{name} wall s", [r[0] for r in runs], "%.3f"))
            print(_row(f"{name} cpu s", [r[1] for r in runs], "%.3f"))
            print(_row(f"{name} peak MiB", [r[2] for r in runs], "%.1f"))
            print(_row(f"{name} steal s", [r[4] for r in runs], "%.2f"))
        for name in checkouts:
            print(_row(f"{name}/grep wall", [a[0] / b[0] for a, b in zip(got[name], got["grep"], strict=True)], "%.2f"))
            print(_row(f"{name}/grep cpu", [a[1] / b[1] for a, b in zip(got[name], got["grep"], strict=True)], "%.2f"))
        codes = {name: sorted({r[3] for r in runs}) for name, runs in got.items()}
        print(f"\nexit codes: {codes}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
