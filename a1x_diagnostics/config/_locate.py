"""Where each key of a TOML file is written: line number, line text and the key's own span.

TOML parsers give values, not positions; findings need the line that proves them and fixes need
the exact characters of a key to rename it. This scanner walks the text once, statement by
statement, following table headers, dotted keys and values that span lines (arrays, inline
tables, multi-line strings). It assumes the text already parsed as TOML.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True, slots=True)
class KeyLocation:
    """A key or table header: ``line`` is 1-based; ``start``/``end`` index the last key part in ``text``."""

    line: int
    text: str
    start: int
    end: int
    header: bool


class _Cursor:
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.row = 0
        self.col = 0

    def char(self) -> str:
        line = self.lines[self.row]
        return line[self.col] if self.col < len(line) else "\n"

    def at_end(self) -> bool:
        return self.row >= len(self.lines)

    def startswith(self, s: str) -> bool:
        return self.lines[self.row].startswith(s, self.col)

    def advance(self, n: int = 1) -> None:
        self.col += n
        if self.col > len(self.lines[self.row]):
            self.row += 1
            self.col = 0

    def skip_spaces(self) -> None:
        while not self.at_end() and self.char() in " \t":
            self.advance()


def _read_string(cur: _Cursor) -> str:
    """Consume a TOML string starting at the cursor; return its (unescaped enough) content."""
    for quote in ('"""', "'''"):
        if cur.startswith(quote):
            cur.advance(3)
            out: list[str] = []
            while not cur.at_end():
                run = 0
                while cur.lines[cur.row].startswith(quote[0], cur.col + run):
                    run += 1
                if run >= 3:  # the last three close it; up to two more belong to the content
                    out.append(quote[0] * (run - 3))
                    cur.advance(run)
                    return "".join(out)
                if quote == '"""' and cur.char() == "\\":
                    cur.advance()
                out.append(cur.char())
                cur.advance()
            return "".join(out)
    quote = cur.char()
    cur.advance()
    out = []
    while not cur.at_end() and cur.char() not in (quote, "\n"):
        if quote == '"' and cur.char() == "\\":
            cur.advance()
            out.append(_ESCAPES.get(cur.char(), cur.char()))
        else:
            out.append(cur.char())
        cur.advance()
    cur.advance()
    return "".join(out)


_ESCAPES = {"n": "\n", "t": "\t", "b": "\b", "f": "\f", "r": "\r"}


def _read_key(cur: _Cursor) -> list[tuple[str, int, int]]:
    """A (dotted) key: each part with its start and end column."""
    parts: list[tuple[str, int, int]] = []
    while True:
        cur.skip_spaces()
        start = cur.col
        if cur.char() in "\"'":
            name = _read_string(cur)
        else:
            m = _BARE_KEY.match(cur.lines[cur.row], cur.col)
            if m is None:
                break
            name = m.group(0)
            cur.advance(len(name))
        parts.append((name, start, cur.col))
        cur.skip_spaces()
        if cur.char() != ".":
            break
        cur.advance()
    return parts


def _skip_value(cur: _Cursor) -> None:
    """Consume a value (any shape, any number of lines) and the rest of its last line."""
    depth = 0
    while not cur.at_end():
        c = cur.char()
        if c in "\"'":
            _read_string(cur)
            continue
        if c == "#":
            cur.row += 1
            cur.col = 0
            if depth == 0:
                return
            continue
        if c == "\n":
            cur.advance()
            if depth == 0:
                return
            continue
        if c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
        cur.advance()


def scan_keys(text: str) -> dict[tuple[str, ...], KeyLocation]:
    """Every key and table header of ``text``, by full key path; the first definition wins."""
    return _scan(text)[0]


def first_duplicate(text: str) -> tuple[tuple[str, ...], KeyLocation] | None:
    """The first key or table defined a second time (invalid TOML), with the second definition."""
    duplicates = _scan(text)[1]
    return duplicates[0] if duplicates else None


def _scan(text: str) -> tuple[dict[tuple[str, ...], KeyLocation], list[tuple[tuple[str, ...], KeyLocation]]]:
    lines = text.split("\n")
    cur = _Cursor(lines)
    table: tuple[str, ...] = ()
    found: dict[tuple[str, ...], KeyLocation] = {}
    duplicates: list[tuple[tuple[str, ...], KeyLocation]] = []

    def record(path: tuple[str, ...], loc: KeyLocation, *, repeatable: bool = False) -> None:
        if path in found and not repeatable:
            duplicates.append((path, loc))
        found.setdefault(path, loc)

    while not cur.at_end():
        cur.skip_spaces()
        if cur.at_end():
            break
        c = cur.char()
        row = cur.row
        if c in "#\n":
            cur.row += 1
            cur.col = 0
            continue
        if c == "[":
            double = cur.startswith("[[")
            cur.advance(2 if double else 1)
            parts = _read_key(cur)
            table = tuple(p[0] for p in parts)
            if parts:
                loc = KeyLocation(row + 1, lines[row].rstrip("\r"), parts[-1][1], parts[-1][2], True)
                record(table, loc, repeatable=double)
            cur.row += 1
            cur.col = 0
            continue
        parts = _read_key(cur)
        if not parts:  # not TOML we understand: move on rather than loop
            cur.row += 1
            cur.col = 0
            continue
        path = table + tuple(p[0] for p in parts)
        record(path, KeyLocation(row + 1, lines[row].rstrip("\r"), parts[-1][1], parts[-1][2], False))
        cur.skip_spaces()
        if cur.char() == "=":
            cur.advance()
        _skip_value(cur)
    return found, duplicates


def header_before(text: str, line: int) -> str | None:
    """The last ``[table]`` header at or above ``line`` (1-based), for messages about broken files."""
    header = None
    for raw in text.split("\n")[:line]:
        stripped = raw.strip()
        if stripped.startswith("[") and "=" not in stripped.split("]")[0]:
            header = stripped.split("#")[0].strip()
    return header
