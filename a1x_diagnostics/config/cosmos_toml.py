"""How Cosmos-RL 747d1bd reads a recipe TOML, and where that differs from what the file says in TOML 1.0.

The launcher opens the file in Python's text mode (universal newlines: ``\\r\\n`` and a lone ``\\r``
both end a line; UTF-8, a byte-order mark kept as U+FEFF) and parses it with the ``toml`` package
0.10.2, a TOML 0.5 parser. It then writes what it read to a temporary TOML with ``toml.dump``, and the
controller and every replica read that copy, not the user's file (docs/reference/cosmos-rl.md §8.1).
a1x-tui reads and edits TOML with tomlkit (TOML 1.0). ``read_like_cosmos`` runs the two readings the
way the launcher and the controller do, with the same ``toml`` release (a dependency of a1x-tui for
this reason), so that lint can say what Cosmos-RL refuses and what it reads differently.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

import toml

MAX_MISREADS = 8  # a file misread in more places than this is reported by its first ones


def universal_newlines(text: str) -> str:
    """``text`` as Python's text mode hands it to the parser: every line end a ``\\n``."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def toml10_text(text: str) -> str:
    """What a1x-tui parses with tomlkit: the lines Cosmos-RL sees, without a leading byte-order mark."""
    return universal_newlines(text).removeprefix("\ufeff")


@dataclass(frozen=True, slots=True)
class Rejected:
    """``toml`` refused the text: in the launcher (the user's file) or in the controller (its copy)."""

    reader: str  # "launcher" | "controller"
    problem: str  # toml's message, without its position
    line: int | None  # 1-based, in the lines Cosmos-RL sees (universal newlines)
    byte: str | None = None  # the byte that explains it, named, when one does (a BOM, a control character)
    hint: str | None = None  # how to write it so that toml 0.10.2 reads it
    key: str | None = None  # dotted: the value whose copy does not load again (the controller's case)


@dataclass(frozen=True, slots=True)
class Misread:
    """A value Cosmos-RL reads differently from what the file says in TOML 1.0."""

    path: str  # dotted, with [i] for list items
    written: Any  # the TOML 1.0 value (MISSING when TOML 1.0 has no such key)
    seen: Any  # what the reader gets (MISSING when it drops the key)
    reader: str  # "launcher" | "controller"


class _Missing:
    def __repr__(self) -> str:
        return "(absent)"


MISSING: Any = _Missing()


@dataclass(slots=True)
class CosmosReading:
    launcher: dict[str, Any] | None  # what the launcher's toml.load returns (None: it raised)
    controller: dict[str, Any] | None  # what the controller reads from the launcher's copy
    rejected: Rejected | None = None
    bom: bool = False  # the file starts with a UTF-8 byte-order mark
    round_trip: list[Misread] = field(default_factory=list)  # launcher -> controller differences

    def misreads(self, toml10: dict[str, Any] | None) -> list[Misread]:
        """Every difference: TOML 1.0 (``toml10``; None when only ``toml`` could read the file) against the
        launcher's reading, then the launcher's against the controller's."""
        out: list[Misread] = []
        if toml10 is not None and self.launcher is not None:
            _diff(toml10, self.launcher, "", "launcher", out)
        out.extend(self.round_trip)
        return out[:MAX_MISREADS]


def read_like_cosmos(text: str) -> CosmosReading:
    """Read ``text`` (the file decoded as UTF-8) as the launcher and then the controller do."""
    seen = universal_newlines(text)
    bom = seen.startswith("\ufeff")
    try:
        launcher = toml.loads(seen)
    except Exception as exc:  # toml raises TomlDecodeError, and IndexError / ValueError on some inputs
        return CosmosReading(None, None, _rejected("launcher", exc, text), bom=bom)
    try:
        controller = toml.loads(toml.dumps(launcher))
    except Exception as exc:
        rejected = Rejected(
            "controller",
            f"its copy written by toml.dump does not load again ({_message(exc)})",
            None,
            hint="a string with a control character or a backslash before x: toml.dump writes it wrongly",
            key=_unreadable_copy(launcher),
        )
        return CosmosReading(launcher, None, rejected, bom=bom)
    round_trip: list[Misread] = []
    _diff(launcher, controller, "", "controller", round_trip)
    return CosmosReading(launcher, controller, None, bom=bom, round_trip=round_trip)


def _unreadable_copy(data: dict[str, Any], prefix: str = "") -> str | None:
    """The dotted key of the first value whose ``toml.dumps`` copy ``toml.loads`` refuses (None: none alone)."""
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict):
            found = _unreadable_copy(value, dotted + ".")
            if found is not None:
                return found
            continue
        try:
            toml.loads(toml.dumps({"k": value}))
        except Exception:  # the same failures as the whole copy's (read_like_cosmos)
            return dotted
    return None


def _message(exc: Exception) -> str:
    if isinstance(exc, toml.TomlDecodeError):
        return str(exc.msg)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _rejected(reader: str, exc: Exception, text: str) -> Rejected:
    line = exc.lineno if isinstance(exc, toml.TomlDecodeError) else None
    problem = _message(exc)
    byte = odd_byte(text, line) if line is not None else None
    if byte is None and text.startswith("\ufeff"):
        byte = odd_byte(text, 1)
    return Rejected(reader, problem, line, byte, _hint(problem, text, line))


def _hint(problem: str, text: str, line: int | None) -> str | None:
    """How to write the construct so that toml 0.10.2 reads it (docs/reference/cosmos-rl.md §8.1)."""
    if "homogeneous array" in problem:
        return (
            "toml 0.10.2 (TOML 0.5) wants every element of an array to be of one type: write 1.0 for 1 "
            "among floats, and do not mix strings, numbers, tables and arrays"
        )
    lines = universal_newlines(text).split("\n")
    written = lines[line - 1] if line and line <= len(lines) else ""
    before = lines[max(0, (line or 1) - 20) : (line or 1)]  # toml names the statement's first or last line
    if any(_opens_inline_table(x) for x in before):
        return "toml 0.10.2 reads an inline table only on one line: write it on one line, or as a [table]"
    if re.search(r",\s*}", written) or "inline table" in problem.lower():
        return "toml 0.10.2 refuses a comma before the closing } of an inline table: remove it"
    if "Duplicate keys" in problem or "already exists" in problem:
        return "a key or table is set twice: keep one"
    if text.startswith("\ufeff"):
        return "save the file as UTF-8 without a byte-order mark"
    return None


def _opens_inline_table(line: str) -> bool:
    """A ``key = {`` line whose table is not closed on it (strings and comments aside, roughly)."""
    code = re.sub(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'', '""', line).split("#")[0]
    return code.count("{") > code.count("}")


_NAMES = {"\x00": "NUL", "\t": "TAB", "\x1b": "ESC", "\x7f": "DEL", "\ufeff": "U+FEFF"}


def odd_byte(text: str, line: int | None) -> str | None:
    """The character on ``line`` (1-based, universal newlines) that no parser expects there, named with
    its bytes and file offset: a byte-order mark, a control character, or a lone carriage return that ends
    the line (text mode makes it a line end)."""
    if line is None or line < 1:
        return None
    row, start = 1, 0
    i, n = 0, len(text)
    while i < n and row < line:  # find where the line starts in the file's own text
        c = text[i]
        if c == "\n" or c == "\r":
            step = 2 if c == "\r" and text.startswith("\r\n", i) else 1
            row += 1
            start = i + step
            i += step
        else:
            i += 1
    if row != line:
        return None
    j = start
    while j < n and text[j] not in "\r\n":
        c = text[j]
        if c == "\ufeff":
            what = "a UTF-8 byte-order mark" if j == 0 else "a zero-width no-break space (U+FEFF)"
            return f"{what} (bytes EF BB BF) at byte {_offset(text, j)}, line {line} column {j - start + 1}"
        if (ord(c) < 0x20 and c != "\t") or c == "\x7f":
            name = _NAMES.get(c, f"control character 0x{ord(c):02X}")
            return f"{name} (byte 0x{ord(c):02X}) at byte {_offset(text, j)}, line {line} column {j - start + 1}"
        j += 1
    if j < n and text[j] == "\r" and not text.startswith("\r\n", j):
        return (
            f"a lone carriage return (byte 0x0D) at byte {_offset(text, j)} ends line {line}: "
            "Cosmos-RL opens the file in text mode, which reads it as a line end"
        )
    return None


def _offset(text: str, index: int) -> int:
    return len(text[:index].encode("utf-8"))


def _same(a: Any, b: Any) -> bool:
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return type(a) is type(b) and a == b
    if isinstance(a, dt.datetime) and isinstance(b, dt.datetime):
        return a.replace(tzinfo=None) == b.replace(tzinfo=None) and a.utcoffset() == b.utcoffset()
    return type(a) is type(b) and bool(a == b)


def _diff(a: Any, b: Any, path: str, reader: str, out: list[Misread]) -> None:
    if len(out) >= MAX_MISREADS:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in list(a) + [k for k in b if k not in a]:
            sub = f"{path}.{key}" if path else str(key)
            if key not in b or key not in a:
                out.append(Misread(sub, a.get(key, MISSING), b.get(key, MISSING), reader))
            else:
                _diff(a[key], b[key], sub, reader, out)
        return
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _diff(x, y, f"{path}[{i}]", reader, out)
        return
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)) or not _same(a, b):
        out.append(Misread(path, a, b, reader))


def shown(value: Any) -> str:
    """A value as TOML writes it, escapes visible (never through toml.dumps, which garbles some), short."""
    text = _toml_text(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _toml_text(value: Any) -> str:
    if value is MISSING:
        return "(absent)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return repr(value)
