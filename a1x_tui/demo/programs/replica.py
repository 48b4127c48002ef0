"""One demo replica (controller, policy_0 or rollout_0): plays its part of the scenario on stdout.

``python -m a1x_tui.demo.programs.replica --role policy --t0 EPOCH --speed S --config TOML
--checkpoint-dir DIR --ranks N``. The demo launcher points stdout at ``logs_<ts>/<role>.log``, as
the real launcher does (docs/reference/cosmos-rl.md §3.1). Each entry is written at ``t0 + entry.at`` with the
wall-clock timestamp of that moment.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from a1x_tui.demo import lines
from a1x_tui.demo.programs._stop import on_first_sigterm
from a1x_tui.demo.scenario import ROLES, Context, Trouble, script


def write_checkpoint(path: Path, ranks: int) -> None:
    """The files cosmos-rl writes per saving rank, the completion marker last (docs/reference/cosmos-rl.md §5.3)."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "cosmos_config").write_text('{"a1x_tui_demo": true}\n', encoding="utf-8")
    for rank in range(ranks):
        for stem in ("model", "optimizer", "scheduler", "extra_info"):
            (path / f"{stem}_rank_{rank}.pth").write_bytes(b"a1x-tui demo: not a real checkpoint\n")
        (path / f".rank_{rank}_complete").write_text("", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="a1x_tui.demo.programs.replica")
    parser.add_argument("--role", choices=ROLES, required=True)
    parser.add_argument("--t0", type=float, required=True, help="epoch seconds the scenario starts at")
    parser.add_argument("--speed", type=float, default=1.0)
    parser.add_argument("--config", type=Path, required=True, help="the run's TOML (decides the troubles)")
    parser.add_argument("--config-copy", default="/tmp/tmpa1xdemo.toml")
    parser.add_argument("--checkpoint-dir", required=True)
    parser.add_argument("--ranks", type=int, default=1)
    args = parser.parse_args(argv)

    trouble = Trouble.from_toml(args.config)
    context = Context(checkpoint_dir=args.checkpoint_dir, config_copy=args.config_copy)
    out = sys.stdout

    def stopped(signum: int) -> None:  # a1x-tui stop: the lines a real stop leaves
        for line in lines.stopped_from_outside(datetime.now(), os.getpid(), args.role):
            out.write(line + "\n")
        out.flush()
        raise SystemExit(128 + signum)

    on_first_sigterm(stopped)
    for entry in script(args.role, trouble, speed=args.speed, context=context):
        delay = args.t0 + entry.at - time.time()
        if delay > 0:
            time.sleep(delay)
        if entry.action == "checkpoint":
            write_checkpoint(Path(entry.text), args.ranks)
            continue
        # SIGTERM waits while a line is written: the handler writes to the same stream, and a handler run
        # inside write() (on its EINTR) fails with "reentrant call" and the run looked crashed.
        with _sigterm_held():
            out.write(entry.render(datetime.now(), os.getpid()) + "\n")
            out.flush()
    return 0


@contextmanager
def _sigterm_held() -> Iterator[None]:
    """Hold SIGTERM back for the block; one that came meanwhile is handled when it ends."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


if __name__ == "__main__":
    sys.exit(main())
