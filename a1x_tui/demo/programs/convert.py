"""The demo's ``convert`` stage: writes a stand-in training checkpoint folder, downloads nothing.

``python -m a1x_tui.demo.programs.convert --output-dir DIR --alpamayo-model ID [--speed S]``, the
arguments of ``scripts/convert_release_config_to_training.py`` (docs/reference/alpamayo-recipe.md §4).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

MARKER = ".a1x-tui-demo-convert.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="a1x_tui.demo.programs.convert")
    parser.add_argument("--output-dir", type=Path, required=True)
    parser.add_argument("--alpamayo-model", default="nvidia/Alpamayo-1.5-10B")
    parser.add_argument("--speed", type=float, default=1.0)
    args = parser.parse_args(argv)
    pause = 0.6 / max(0.05, args.speed)
    print(f"a1x-tui demo: simulated conversion of {args.alpamayo_model} (no download)", flush=True)
    for text in (
        f"Loading release config of {args.alpamayo_model}",
        "Building the training config (model_type alpamayo_reasoning_vla)",
        "Linking weight shards",
        f"Saved training checkpoint to {args.output_dir}",
    ):
        time.sleep(pause)
        print(text, flush=True)
    out = args.output_dir
    out.mkdir(parents=True, exist_ok=True)
    config = {"model_type": "alpamayo_reasoning_vla", "architectures": ["ReasoningVLA"], "a1x_tui_demo": True}
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    (out / MARKER).write_text(json.dumps({"alpamayo_model": args.alpamayo_model}) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
