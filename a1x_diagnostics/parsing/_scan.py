"""Which lines of a block hold one of a set of strings: Hyperscan where it is installed, else ``bytes.find``.

A run's files are mostly lines that can give no event (DEBUG, vLLM and tqdm noise); only lines holding
one of the strings ``_markers`` derives from the catalog can. ``Scanner.starts(block)`` gives the offset
of the start of each such line of a block of whole lines. Hyperscan (the PyPI ``hyperscan`` wheel, Intel's
multi-pattern engine: all the strings in one pass over the bytes) reports each occurrence; without it, or
with ``A1X_PURE_READER=1``, each string is looked for with ``bytes.find``: the same lines
(``tests/parsing/test_scan.py`` holds the two to each other), many times slower on a large run
(docs/parsing.md, "Speed"). Until a scanner has read ``ENGINE_FROM`` bytes (a small run) it searches
with ``bytes.find`` anyway: building Hyperscan's database (~50 ms) would cost more than it saves.
"""

from __future__ import annotations

import importlib.util
import os
import re
import threading
from collections.abc import Sequence
from typing import Any

_hs: Any = None
HYPERSCAN = not os.environ.get("A1X_PURE_READER") and importlib.util.find_spec("hyperscan") is not None
"""Whether Hyperscan (optional: a binary wheel for x86-64 Linux and macOS, pyproject.toml) is used."""
ENGINE = "hyperscan" if HYPERSCAN else "python"
"""Which engine finds the lines of a large block: ``hyperscan``, or ``python`` (``bytes.find``)."""
ENGINE_FROM = 256 << 10
_BUILD = threading.Lock()


def minimal(strings: Sequence[str]) -> tuple[bytes, ...]:
    """The strings (as UTF-8) without those that hold another of them: a line holding the longer one
    holds the shorter, so the lines found are the same, with fewer occurrences to report."""
    unique = sorted({s.encode() for s in strings if s}, key=lambda s: (len(s), s))
    kept: list[bytes] = []
    for s in unique:
        if not any(k in s for k in kept):
            kept.append(s)
    return tuple(kept)


class Scanner:
    """The lines of a block holding one of ``strings``."""

    __slots__ = ("_db", "_local", "read", "strings")

    def __init__(self, strings: Sequence[str]) -> None:
        self.strings = minimal(strings)
        self._db: Any = None
        # One Hyperscan scratch space per thread: a scanner is shared (``scanner_for``), and a scratch in use
        # by one thread's scan raises ``ScratchInUseError`` in another's (a follower beside a ``check``).
        self._local = threading.local()
        self.read = 0  # bytes searched so far

    def _database(self) -> Any:
        """Hyperscan's database of the strings, built at the first large block."""
        with _BUILD:
            if self._db is None:
                global _hs
                if _hs is None:
                    import hyperscan as _hs
                db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
                expressions = [re.escape(s.decode("latin-1")).encode("latin-1") for s in self.strings]
                db.compile(expressions=expressions, ids=list(range(len(expressions))), elements=len(expressions),
                           flags=[0] * len(expressions))
                self._db = db
        return self._db

    def starts(self, block: bytes) -> list[int]:
        """The offsets, in order, of the starts of the ``\\n``-separated lines of ``block`` that hold a string."""
        ends: list[int] = []
        self.read += len(block)
        if HYPERSCAN and self.strings and self.read >= ENGINE_FROM:
            add = ends.append
            db = self._db if self._db is not None else self._database()
            scratch = getattr(self._local, "scratch", None)
            if scratch is None:
                scratch = self._local.scratch = _hs.Scratch(db)
            db.scan(block, match_event_handler=lambda _i, _f, to, _fl, _c: add(to), scratch=scratch)
            ends.sort()
        else:
            find = block.find
            for s in self.strings:  # no string holds a newline: after a hit, the next line
                at = find(s)
                while at >= 0:
                    ends.append(at + len(s))
                    nl = find(b"\n", at)
                    at = find(s, nl + 1) if nl >= 0 else -1
            ends.sort()
        out: list[int] = []
        rfind = block.rfind
        last = -1
        next_line = -1  # the end of the line of the last start found: ends before it are on that line
        for end in ends:
            if end <= next_line:
                continue
            start = rfind(b"\n", 0, end) + 1
            if start != last:
                out.append(start)
                last = start
                nl = block.find(b"\n", start)
                next_line = len(block) if nl < 0 else nl
        return out

    def lines(self, lines: Sequence[str]) -> list[int]:
        """Indices (from 0) of the lines holding a string."""
        block = "\n".join(lines).encode("utf-8", "surrogateescape")
        starts = self.starts(block)
        out: list[int] = []
        index = 0
        counted = 0
        for start in starts:
            index += block.count(b"\n", counted, start)
            counted = start
            out.append(index)
        return out
