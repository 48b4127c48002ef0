"""Which engine should find the lines the reader parses: the candidates side by side on the same files.

Usage: ``python benchmarks/engine_compare.py DIR [DIR ...] [--rounds 3]`` (workloads of
``benchmarks/check_scale.py DIR --mix M --generate-only``). For every file of each run, read in the reader's
blocks (``a1x_diagnostics.parsing._reader.blocks``), the starts of the lines holding one of the strings the
catalog derives for that file (``markers_for``) are found by:

- Hyperscan (PyPI ``hyperscan``): one database of the strings, one callback a match;
- google-re2 (PyPI ``google-re2``): the strings as one alternation, searched from each line after a hit;
- pyahocorasick (PyPI ``pyahocorasick``): one automaton, ``iter`` over the decoded block (its PyPI build
  reads ``str`` only);
- ``bytes.find`` (the reader's pure-Python search): one search a string.

Each engine must find the same lines (checked); printed: CPU seconds of each, median of the rounds, in a
markdown table. An engine whose package is missing is left out.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from a1x_diagnostics.parsing import _scan as scan  # noqa: E402
from a1x_diagnostics.parsing import discover, markers_for  # noqa: E402
from a1x_diagnostics.parsing._reader import blocks  # noqa: E402

Finder = Callable[[bytes], list[int]]


def _line_starts(block: bytes, ends: list[int]) -> list[int]:
    out: list[int] = []
    for end in sorted(ends):
        start = block.rfind(b"\n", 0, end) + 1
        if not out or start != out[-1]:
            out.append(start)
    return out


def hyperscan_finder(strings: tuple[str, ...]) -> Finder:
    scanner = scan.Scanner(strings)
    return lambda block: scanner.starts(block)


def python_finder(strings: tuple[str, ...]) -> Finder:
    scanner = scan.Scanner(strings)

    def find(block: bytes) -> list[int]:
        scan.HYPERSCAN = False
        try:
            return scanner.starts(block)
        finally:
            scan.HYPERSCAN = True

    return find


def re2_finder(strings: tuple[str, ...]) -> Finder:
    import re2

    pattern = re2.compile(b"|".join(re2.escape(s) for s in scan.minimal(strings)))

    def find(block: bytes) -> list[int]:
        ends, pos = [], 0
        while (m := pattern.search(block, pos)) is not None:
            ends.append(m.end())
            nl = block.find(b"\n", m.end())
            if nl < 0:
                break
            pos = nl + 1
        return _line_starts(block, ends)

    return find


def aho_finder(strings: tuple[str, ...]) -> Finder:
    import ahocorasick

    automaton = ahocorasick.Automaton()
    for s in scan.minimal(strings):
        automaton.add_word(s.decode(), len(s))
    automaton.make_automaton()

    def find(block: bytes) -> list[int]:
        text = block.decode("utf-8", "replace")
        starts, last = [], -1
        for end, _ in automaton.iter(text):
            start = text.rfind("\n", 0, end) + 1
            if start != last:
                starts.append(start)
                last = start
        # offsets of the decoded text: the same as the bytes' where the block is ASCII (the workloads are)
        return starts

    return find


ENGINES = {"hyperscan": hyperscan_finder, "google-re2": re2_finder, "pyahocorasick": aho_finder,
           "bytes.find": python_finder}


def run(directory: Path, engine: str) -> tuple[float, int]:
    layout = discover(directory)
    finders: dict[tuple[str, ...], Finder] = {}
    t, lines = time.process_time(), 0
    for path, source in layout.files:
        strings = markers_for(source)
        finder = finders.get(strings) or finders.setdefault(strings, ENGINES[engine](strings))
        with open(path, "rb") as f:
            for _, block in blocks(f):
                lines += len(finder(block))
    return time.process_time() - t, lines


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    usable = []
    for name in ENGINES:
        try:
            ENGINES[name](("x",))
            usable.append(name)
        except ImportError:
            print(f"{name}: not installed, left out", file=sys.stderr)
    print("| run | " + " | ".join(f"{n} CPU s" for n in usable) + " | lines found |")
    print("|---|" + "---:|" * (len(usable) + 1))
    for d in args.dirs:
        cpu: dict[str, list[float]] = {n: [] for n in usable}
        found: set[int] = set()
        for _ in range(args.rounds):
            for name in usable:
                seconds, lines = run(d, name)
                cpu[name].append(seconds)
                found.add(lines)
        assert len(found) == 1, f"{d}: the engines found different lines: {found}"
        cells = " | ".join(f"{statistics.median(cpu[n]):.2f}" for n in usable)
        print(f"| {d.name} | {cells} | {found.pop()} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
