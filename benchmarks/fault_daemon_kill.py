"""Kill -9 of the supervisor at random moments of a run, then stop and resume (issue 37 point 8).

Each trial builds the stand-in world of the supervisor tests (tests/supervisor/supervisor_helpers.py:
the real daemon, stages and executor; stand-in programs for uv, convert, download, the ``cosmos-rl``
launcher and its replicas), starts the whole pipeline detached, waits a random time drawn from the
span a clean run takes, SIGKILLs the daemon, and checks what a user relies on afterwards:

- ``state.json`` is whole and valid (it is written by rename: never half a file);
- ``a1x-tui stop RUN`` leaves no process of the run behind (every stand-in process of the world,
  found by its environment), whatever stage was running;
- ``a1x-tui run --run-dir RUN`` then resumes the run to ``succeeded``, skipping stages whose outputs
  verify.

Usage: ``python benchmarks/fault_daemon_kill.py [--trials 20] [--seed 1] [--out DIR]``. Prints one
row per trial and a summary line; exit 1 when any trial broke one of the three. Figures:
docs/supervisor.md "Faults".
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "supervisor"))

from supervisor_helpers import World, build_world, clean_world, fake_processes, wait_gone  # noqa: E402

from a1x_supervisor.state import load_state  # noqa: E402


def _start(world: World) -> float:
    spec = world.write_spec()
    world.set_modes(train="slow")
    began = time.monotonic()
    done = world.cli("run", "--spec", str(spec), "--run-dir", str(world.run_dir), "--skip-preflight", "--detach")
    if done.returncode != 0:
        raise SystemExit(f"the run did not start: {done.stdout}{done.stderr}")
    return began


def _clean_span(base: Path) -> float:
    """How long one whole run takes here, from `run` to its end."""
    world = build_world(base / "clean")
    try:
        began = _start(world)
        state = world.wait_final(timeout=300)
        if state["status"] != "succeeded":
            raise SystemExit(f"the clean run ended {state['status']}: {state['message']}")
        return time.monotonic() - began
    finally:
        clean_world(world)


def trial(base: Path, index: int, at: float) -> dict[str, object]:
    world = build_world(base / f"trial_{index}")
    try:
        began = _start(world)
        time.sleep(max(0.0, began + at - time.monotonic()))
        pid = world.daemon_pid()
        before = load_state(world.run_dir / "state.json")
        stage = before.current_stage if before is not None else None
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
            wait_gone(pid, 10)
        valid = load_state(world.run_dir / "state.json") is not None
        stop = world.cli("stop", str(world.run_dir), timeout=120)
        time.sleep(0.5)
        orphans = len(fake_processes(world.root))
        resumed = world.cli("run", "--run-dir", str(world.run_dir), "--skip-preflight", timeout=300)
        final = load_state(world.run_dir / "state.json")
        return {
            "trial": index, "kill_at_s": round(at, 2), "stage": stage or "-", "daemon_alive": pid is not None,
            "state_valid": valid, "stop_rc": stop.returncode, "orphans": orphans,
            "resumed": final.status if final is not None else "unreadable", "resume_rc": resumed.returncode,
        }
    finally:
        clean_world(world)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="a1x-fault-") as tmp:
        base = Path(tmp)
        span = _clean_span(base)
        print(f"a clean run takes {span:.1f} s here; kill moments drawn from [0.2, {span:.1f}] s (seed {args.seed})")
        print("| trial | kill at (s) | stage running | state.json valid | stop rc | orphans after stop | resumed |")
        print("|---|---|---|---|---|---|---|")
        rows = []
        for i in range(args.trials):
            row = trial(base, i, rng.uniform(0.2, span))
            rows.append(row)
            print(f"| {row['trial']} | {row['kill_at_s']} | {row['stage']} | {row['state_valid']} | {row['stop_rc']} | "
                  f"{row['orphans']} | {row['resumed']} |", flush=True)
    bad = [r for r in rows if not r["state_valid"] or r["orphans"] or r["resumed"] != "succeeded"]
    print(f"{len(rows)} kills: {sum(not r['state_valid'] for r in rows)} invalid state, "
          f"{sum(int(str(r['orphans'])) for r in rows)} orphans after stop, "
          f"{sum(r['resumed'] == 'succeeded' for r in rows)} resumed to succeeded")
    if args.out is not None:
        args.out.write_text(json.dumps(rows, indent=1) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
