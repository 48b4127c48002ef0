"""Hyperscan against ``a1x_diagnostics/_scan.c`` on the same files: what each costs to find the lines.

Usage: ``python benchmarks/engine_compare.py DIR [DIR ...]`` (runs from ``benchmarks/check_scale.py
DIR --mix M --generate-only``), with the optional PyPI package ``hyperscan`` importable. For every
run, one thread, files in the page cache, CPU seconds of this process (``time.process_time``):

  (a) ``_scan.c``: ``chunk()`` over every file with the automaton and templates ``--check`` uses for
      the file's role (marker search, tag gates confirmed by their rules' strings, bulk lines read
      into records): lines handed to Python and records;
  (b) Hyperscan, the marker literals: the same strings as (a)'s markers, one database, block mode,
      every match reported to a Python callback that only counts it (the Python binding's only way
      to hand matches back);
  (c) the same with every rule regex Hyperscan compiles (``HS_FLAG_MULTILINE``), the closest it
      comes to "lines that match a definition", anchors read per line rather than per message;
  (d) (c) with ``HS_FLAG_SINGLEMATCH``: each regex reported once per 4 MiB block, the engine's own
      speed without the callbacks (not a reader: it cannot say which lines matched).
      None of (b)-(d) yields a line or a field: Python would still cut each line out, read its
      prefix and fields.

Prints a markdown table per run. Issue 14, point 5.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from a1x_diagnostics.parsing import _bulk, _rules, confirm_for, discover, markers_for  # noqa: E402
from a1x_diagnostics.parsing._scan import _automaton  # noqa: E402

BLOCK = 4 << 20


def _blocks(data: bytes) -> list[memoryview]:
    view, out, start = memoryview(data), [], 0
    while start < len(data):
        end = data.rfind(b"\n", start, start + BLOCK) + 1 or len(data)
        if end <= start:
            end = min(len(data), start + BLOCK)
        out.append(view[start:end])
        start = end
    return out


def scan_c(files: list[tuple[Path, Any, bytes]]) -> tuple[float, int, int]:
    t, lines, records = time.process_time(), 0, 0
    for _, source, data in files:
        automaton = _automaton(markers_for(source), *(confirm_for(source) or ()))
        templates = _bulk._templates_for(source)
        for block in _blocks(data):
            items, _ = _bulk._chunk(block, *automaton, templates, 1, 0, 1 << 16, _bulk.minute_base, _bulk.SIMD,
                                    *_bulk._NO_BATCHES)
            for item in items:
                if len(item) == 3:
                    lines += 1
                else:
                    records += 1
    return time.process_time() - t, lines, records


def scan_hs(hyperscan: Any, db: Any, files: list[tuple[Path, Any, bytes]]) -> tuple[float, int]:
    count = [0]

    def on_match(*_: Any) -> None:
        count[0] += 1

    scratch = hyperscan.Scratch(db)
    t = time.process_time()
    for _, _, data in files:
        for block in _blocks(data):
            db.scan(bytes(block), match_event_handler=on_match, scratch=scratch)
    return time.process_time() - t, count[0]


def main() -> int:
    try:
        import hyperscan
    except ImportError:
        print("hyperscan is not installed (pip install hyperscan): nothing to compare")
        return 1
    exprs, ids, refused = [], [], 0
    for i, r in enumerate(_rules.RULES):
        expr = re.sub(r"\(\?P<", "(?<", r.pattern.pattern).encode()
        try:
            one = hyperscan.Database()
            one.compile(expressions=[expr], ids=[i], flags=[hyperscan.HS_FLAG_MULTILINE])
        except hyperscan.error:  # look-arounds and the like
            refused += 1
            continue
        exprs.append(expr)
        ids.append(i)
    t = time.perf_counter()
    rules_db = hyperscan.Database()
    rules_db.compile(expressions=exprs, ids=ids, flags=[hyperscan.HS_FLAG_MULTILINE] * len(exprs))
    compile_s = time.perf_counter() - t
    once_db = hyperscan.Database()
    once_db.compile(expressions=exprs, ids=ids,
                    flags=[hyperscan.HS_FLAG_MULTILINE | hyperscan.HS_FLAG_SINGLEMATCH] * len(exprs))
    print(f"hyperscan {hyperscan.__version__}: {len(exprs)} rule regexes compiled in {compile_s:.2f} s, "
          f"{refused} refused; {len(_rules.RULES)} rules")
    for folder in map(Path, sys.argv[1:]):
        layout = discover(folder, None)
        files = [(p, s, p.read_bytes()) for p, s in layout.files]
        size = sum(len(d) for _, _, d in files) >> 20
        markers = sorted({m for _, s, _ in files for m in markers_for(s)})
        marker_db = hyperscan.Database()
        marker_db.compile(expressions=[re.escape(m).encode() for m in markers], ids=list(range(len(markers))),
                          flags=[0] * len(markers))
        c_cpu, c_lines, c_records = scan_c(files)
        m_cpu, m_matches = scan_hs(hyperscan, marker_db, files)
        r_cpu, r_matches = scan_hs(hyperscan, rules_db, files)
        o_cpu, o_matches = scan_hs(hyperscan, once_db, files)
        print(f"\n## {folder.name}: {len(files)} files, {size} MiB, one thread\n")
        print("| engine | what it yields | CPU s | MiB/s |\n| --- | --- | ---: | ---: |")
        print(f"| `_scan.c` chunk() | {c_lines} lines for Python, {c_records} records with their fields "
              f"| {c_cpu:.2f} | {size / c_cpu:.0f} |")
        print(f"| Hyperscan, {len(markers)} marker literals | {m_matches} match callbacks (no lines, no fields) "
              f"| {m_cpu:.2f} | {size / m_cpu:.0f} |")
        print(f"| Hyperscan, {len(exprs)} rule regexes | {r_matches} match callbacks (no lines, no fields) "
              f"| {r_cpu:.2f} | {size / r_cpu:.0f} |")
        print(f"| Hyperscan, {len(exprs)} rule regexes, once a block | {o_matches} match callbacks (not a reader) "
              f"| {o_cpu:.2f} | {size / o_cpu:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
