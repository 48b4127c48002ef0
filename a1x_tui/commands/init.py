"""``a1x-tui init [--out FILE]``: write a commented run spec with defaults."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out", default="run.toml", metavar="FILE", help="where to write the spec ('-' for stdout; default: run.toml)"
    )
    parser.add_argument("--force", action="store_true", help="overwrite FILE if it exists")


def run(args: argparse.Namespace) -> int:
    from a1x_supervisor.spec import default_spec_text

    text = default_spec_text()
    if args.out == "-":
        sys.stdout.write(text)
        return 0
    out = Path(args.out)
    if out.exists() and not args.force:
        print(f"{out}: already exists (pass --force to overwrite)", file=sys.stderr)
        return 2
    if out.exists() and not out.is_file():  # a FIFO would block the write until someone reads it
        print(f"{out}: not a regular file; write the spec to a file (or `--out -` for stdout)", file=sys.stderr)
        return 2
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"{out}: cannot write: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"wrote {out}: set [paths], then `a1x-tui preflight --spec {out}` and `a1x-tui run --spec {out}`")
    return 0
