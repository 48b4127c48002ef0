"""The demo's ``export`` stage: "exports" the newest complete checkpoint into a fresh folder.

``python -m a1x_tui.demo.programs.export --log-dir DIR --export-dir DIR [--ranks N] [--speed S]``.
The checkpoint is found as the real export stage finds it: the newest run's highest-step checkpoint
whose ``checkpoint saved successfully`` line points at a complete folder (docs/reference/alpamayo-recipe.md §12.1).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

PROVENANCE = "cosmos_export_provenance.json"


def main(argv: list[str] | None = None) -> int:
    from a1x_supervisor.cosmos_logs import latest_complete_checkpoint

    parser = argparse.ArgumentParser(prog="a1x_tui.demo.programs.export")
    parser.add_argument("--log-dir", type=Path, required=True)
    parser.add_argument("--export-dir", type=Path, required=True)
    parser.add_argument("--ranks", type=int, default=None)
    parser.add_argument("--speed", type=float, default=1.0)
    args = parser.parse_args(argv)
    ckpt = latest_complete_checkpoint(args.log_dir, args.ranks)
    if ckpt is None:
        print(f"no complete checkpoint under {args.log_dir}", file=sys.stderr)
        return 1
    out = args.export_dir / f"step_{ckpt.step}"
    n = 2
    while out.exists():
        out = args.export_dir / f"step_{ckpt.step}-{n}"
        n += 1
    out.mkdir(parents=True)
    pause = 0.5 / max(0.05, args.speed)
    print(f"a1x-tui demo: simulated export of {ckpt.path}", flush=True)
    for shard in range(1, 4):
        time.sleep(pause)
        print(f"Merging rank shards into model-0000{shard}-of-00003.safetensors", flush=True)
        (out / f"model-0000{shard}-of-00003.safetensors").write_bytes(b"a1x-tui demo placeholder\n")
    config = {"model_type": "alpamayo_reasoning_vla", "a1x_tui_demo": True}
    (out / "config.json").write_text(json.dumps(config) + "\n", encoding="utf-8")
    provenance = {"checkpoint": str(ckpt.path), "step": ckpt.step, "ranks": list(range(args.ranks or 1))}
    (out / PROVENANCE).write_text(json.dumps(provenance, indent=2) + "\n", encoding="utf-8")
    print(f"Exported step {ckpt.step} to {out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
