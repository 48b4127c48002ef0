"""The demo's ``download`` stage: fetches nothing, prints huggingface_hub's progress bar, writes stand-ins.

``python -m a1x_tui.demo.programs.download --output-dir DIR --chunk-ids 3116 [--speed S]``. The
bar has the shape the supervisor reads for download progress (docs/reference/alpamayo-recipe.md §5: ``Fetching
{N} files``); the files are small placeholders named as the real download names them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

FILES = 12
MARKER = ".a1x-tui-demo-download.json"


def bar(done: int, total: int, elapsed: float) -> str:
    width = 10
    filled = width * done // total
    rate = done / elapsed if elapsed > 0 else 0.0
    left = (total - done) / rate if rate else 0.0
    return (
        f"Fetching {total} files: {100 * done // total:3d}%|{'█' * filled}{' ' * (width - filled)}| {done}/{total} "
        f"[00:{int(elapsed):02d}<00:{int(left):02d}, {rate:5.2f}it/s]"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="a1x_tui.demo.programs.download")
    parser.add_argument("--output-dir", type=Path, required=True)
    parser.add_argument("--chunk-ids", nargs="+", type=int, default=[3116])
    parser.add_argument("--speed", type=float, default=1.0)
    args = parser.parse_args(argv)
    chunks = " ".join(str(c) for c in args.chunk_ids)
    print(f"a1x-tui demo: simulated download of PAI chunk(s) {chunks} to {args.output_dir} (no network)", flush=True)
    out = args.output_dir
    out.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    step = 0.45 / max(0.05, args.speed)
    for done in range(FILES + 1):
        print(bar(done, FILES, time.monotonic() - start), end="\r" if done < FILES else "\n", flush=True)
        if done < FILES:
            time.sleep(step)
    for name in ("features.csv", "clip_index.parquet"):
        (out / name).write_text("a1x-tui demo placeholder\n", encoding="utf-8")
    (out / MARKER).write_text(json.dumps({"chunk_ids": args.chunk_ids, "files": FILES}) + "\n", encoding="utf-8")
    print(f"Downloaded {FILES} files for chunk(s) {chunks}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
