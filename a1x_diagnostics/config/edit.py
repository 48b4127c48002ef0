"""Change a few keys of a TOML text and nothing else: comments, order and spacing stay as they were.

Values are set and removed with tomlkit, which keeps everything it does not touch byte for byte.
A misspelled key is renamed in place (only the key's characters change), so its value, comment
and position survive. Every result is parsed again and compared with the intended data: an edit
that would change anything else is an error, never a silent surprise. So is one that Cosmos-RL's
own parser (``cosmos_toml``) would read differently from the file it was given.

tomlkit reads TOML 1.0, whose lines end in LF or CRLF; Cosmos-RL reads the file in text mode, where
a lone CR ends a line too. The text is edited with every line end as LF and each line that the edit
leaves as it was gets its own line end back; new lines get the file's most common one.
"""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import tomlkit
from tomlkit.container import Container, OutOfOrderTableProxy
from tomlkit.items import AoT, Array, InlineTable, Item, String, StringType, Table

from a1x_diagnostics.config._locate import scan_keys
from a1x_diagnostics.config.cosmos_toml import read_like_cosmos, shown, toml10_text


class _Remove:
    def __repr__(self) -> str:
        return "REMOVE"


REMOVE: Any = _Remove()  # an Edit value: delete the key


class EditError(ValueError):
    """An edit cannot be made safely (the path crosses a value, the result would differ)."""


@dataclass(frozen=True, slots=True)
class Edit:
    path: str
    value: Any  # REMOVE to delete the key


def _split(path: str) -> tuple[str, ...]:
    return tuple(path.split("."))


def _get(data: Any, parts: Sequence[str]) -> Any:
    for part in parts:
        if not isinstance(data, dict) or part not in data:
            return REMOVE
        data = data[part]
    return data


def _pruned(node: Any) -> Any:
    """Tables without empty tables: ``d = {}`` and no ``d`` mean the same to every reader."""
    if not isinstance(node, dict):
        return node
    out = {k: _pruned(v) for k, v in node.items()}
    return {k: v for k, v in out.items() if v != {}}


def intended(data: dict[str, Any], edits: Sequence[Edit]) -> dict[str, Any]:
    """What the data must be after ``edits`` (empty tables pruned): the oracle for every edit.

    Removing the last key of a table written with dotted keys removes the table itself, so the
    comparison ignores empty tables on both sides.
    """
    out = copy.deepcopy(data)
    for e in edits:
        *parents, key = _split(e.path)
        node = out
        for part in parents:
            node = node.setdefault(part, {})
        if e.value is REMOVE:
            node.pop(key, None)
        else:
            node[key] = copy.deepcopy(e.value)
    return dict(_pruned(out))


def _key_text(name: str) -> str:
    return name if name and all(c.isalnum() or c in "_-" for c in name) else tomlkit.string(name).as_string()


def _is_respelling(old: str, new: str) -> bool:
    return difflib.SequenceMatcher(a=old, b=new).ratio() >= 0.75


def _renames(text: str, data: dict[str, Any], edits: Sequence[Edit]) -> tuple[str, list[Edit]]:
    """Turn (remove A, set B) pairs of siblings into an in-place rename of A (then B's value is set).

    A pair qualifies when B takes A's value or B is a respelling of A, and B is not set yet.
    """
    locations = scan_keys(text)
    rest = list(edits)
    claimed: list[Edit] = []
    lines = text.split("\n")
    for removal in edits:
        if removal.value is not REMOVE:
            continue
        old = _split(removal.path)
        value = _get(data, old)
        for setting in rest:
            new = _split(setting.path)
            if setting.value is REMOVE or new[:-1] != old[:-1] or new == old or setting in claimed:
                continue
            if setting.value != value and not _is_respelling(old[-1], new[-1]):
                continue
            loc = locations.get(old)
            others = [p for p in locations if p[: len(old)] == old and len(p) > len(old) and locations[p].header]
            if loc is None or others or _get(data, new) is not REMOVE:
                continue
            line = lines[loc.line - 1]
            written = line[loc.start : loc.end]
            if written.strip("\"'") != old[-1]:
                continue  # inside an inline table, or quoted oddly: fall back to remove + set
            lines[loc.line - 1] = line[: loc.start] + _key_text(new[-1]) + line[loc.end :]
            rest = [e for e in rest if e is not removal]  # the setting stays: a no-op if the value is A's
            claimed.append(setting)
            locations = scan_keys("\n".join(lines))
            break
    return "\n".join(lines), rest


def _float_item(value: float) -> Item:
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}e{int(exponent)}"  # 2e-6, not Python's 2e-06
    return tomlkit.value(text)


def _literal_ok(value: str) -> bool:
    """Whether ``value`` can be written as a 'literal string' (no quote, no control character)."""
    return "'" not in value and value.isprintable()


def _styled(old: Any, value: Any) -> Any:
    """``value`` as a TOML item written in the style of the item it replaces."""
    literal = isinstance(old, String) and old.type is StringType.SLL
    if isinstance(old, Array) and len(old) and isinstance(old[0], String):
        literal = old[0].type is StringType.SLL
    if isinstance(value, bool):
        return value
    if isinstance(value, float):
        return _float_item(value)
    if isinstance(value, str):
        return tomlkit.string(value, literal=literal and _literal_ok(value))
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        arr = tomlkit.array()
        for v in value:
            arr.append(tomlkit.string(v, literal=literal and _literal_ok(v)))
        return arr
    return value


_Node = Container | Table | InlineTable | OutOfOrderTableProxy


def _written_dotted(parent: _Node, part: str) -> bool:
    """Whether ``part`` exists in ``parent`` only through dotted keys (``part.x = 1``)."""
    body = parent.value.body if isinstance(parent, Table) else parent.body if isinstance(parent, Container) else []
    return any(key is not None and key.key == part and key.is_dotted() for key, _ in body)


def _inline(value: dict[str, Any]) -> InlineTable:
    table = tomlkit.inline_table()
    for key, item in value.items():
        table[key] = _inline(item) if isinstance(item, dict) else item
    return table


def _child(node: _Node, part: str, path: str, in_dotted: bool, created: list[Table]) -> tuple[_Node, bool]:
    """Step into (or create) table ``part``; the flag says whether we are inside dotted keys."""
    if part in node:
        child = node[part]
        if isinstance(child, (Table, InlineTable, OutOfOrderTableProxy, Container)):
            return child, in_dotted or _written_dotted(node, part)
        if isinstance(child, AoT):
            raise EditError(f"{path}: an array of tables cannot be edited by path")
        raise EditError(f"{path}: {part} is a value, not a table")
    if in_dotted or isinstance(node, InlineTable):
        # a [header] table cannot live inside dotted keys: write it inline (`a.b = { ... }`)
        node[part] = tomlkit.inline_table()
    else:
        new = tomlkit.table()
        created.append(new)
        node[part] = new
    return node[part], in_dotted


def _apply(doc: tomlkit.TOMLDocument, e: Edit, created: list[Table]) -> None:
    *parents, key = _split(e.path)
    node: _Node = doc
    dotted = False
    for i, part in enumerate(parents):
        if e.value is REMOVE and part not in node:
            return
        node, dotted = _child(node, part, ".".join(parents[: i + 1]), dotted, created)
    if e.value is REMOVE:
        if key in node:
            del node[key]
        return
    old = node.get(key)
    if old is not None and old == e.value and type(old.unwrap() if isinstance(old, Item) else old) is type(e.value):
        return
    if isinstance(e.value, dict) and (dotted or isinstance(node, InlineTable)):
        node[key] = _inline(e.value)
    else:
        node[key] = _styled(old, e.value)


def edit_text(text: str, edits: Sequence[Edit]) -> str:
    """``text`` with ``edits`` applied; raises ``EditError`` if the result is not exactly that, or if
    Cosmos-RL's parser reads the result differently while it read ``text`` as written."""
    normal = toml10_text(text)
    data = tomlkit.parse(normal).unwrap()
    renamed, rest = _renames(normal, data, edits)
    doc = tomlkit.parse(renamed)
    created: list[Table] = []
    for e in rest:
        _apply(doc, e, created)
    last = doc.body[-1][1] if doc.body else None
    for table in created:
        if table is not last and not table.is_super_table():
            table.add(tomlkit.nl())  # a blank line between a new table and whatever follows it
    edited = doc.as_string()
    try:
        got = tomlkit.parse(edited).unwrap()
    except tomlkit.exceptions.TOMLKitError as exc:
        raise EditError(f"the edited file would not parse: {exc}") from None
    want = intended(data, edits)
    if _pruned(got) != want:
        raise EditError("the edited file would differ from the intended change")
    result = with_line_ends(text, edited)
    _check_cosmos_reads(text, data, result, got)
    return result


def _check_cosmos_reads(before: str, before_data: dict[str, Any], after: str, after_data: dict[str, Any]) -> None:
    """The edited text must read the same in Cosmos-RL's parser as in TOML 1.0, if the original did."""
    reading = read_like_cosmos(after)
    problems = reading.misreads(after_data)
    if reading.rejected is None and not problems:
        return
    old = read_like_cosmos(before)
    if old.rejected is not None or old.misreads(before_data):
        return  # the file was not read as written before either: that is lint's toml_* finding, not the edit's
    if reading.rejected is not None:
        where = f"line {reading.rejected.line}: " if reading.rejected.line else ""
        raise EditError(
            f"Cosmos-RL's TOML parser (toml 0.10.2) would refuse the edited file ({where}{reading.rejected.problem})"
        )
    first = problems[0]
    raise EditError(
        f"Cosmos-RL's TOML parser (toml 0.10.2) would read {first.path} = {shown(first.written)} as "
        f"{shown(first.seen)}"
    )


_LINE = re.compile(r"([^\r\n]*)(\r\n|\r|\n|)")


def _lines(text: str) -> tuple[list[str], list[str]]:
    """The lines of ``text`` and how each ends (``\r\n``, ``\r``, ``\n`` or nothing for the last)."""
    bodies: list[str] = []
    ends: list[str] = []
    pos = 0
    while pos < len(text):
        m = _LINE.match(text, pos)
        assert m is not None
        bodies.append(m.group(1))
        ends.append(m.group(2))
        pos = m.end()
    return bodies, ends


def with_line_ends(original: str, edited: str) -> str:
    """``edited`` (LF line ends, no byte-order mark) with the line ends and byte-order mark of ``original``:
    each line the edit kept or changed in place ends as it did, each new line with ``original``'s most
    common line end."""
    bom = "\ufeff" if original.startswith("\ufeff") else ""
    old_lines, old_ends = _lines(original.removeprefix("\ufeff"))
    new_lines, new_ends = _lines(edited)
    counts = {e: old_ends.count(e) for e in ("\n", "\r\n", "\r")}
    usual = max(("\n", "\r\n", "\r"), key=lambda e: counts[e]) if any(counts.values()) else "\n"
    ends = [usual if e else "" for e in new_ends]
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("equal", "replace"):  # a kept line, or a line changed in place: its own line end
            for k in range(min(i2 - i1, j2 - j1)):
                if new_ends[j1 + k]:
                    ends[j1 + k] = old_ends[i1 + k] or usual
    return bom + "".join(body + end for body, end in zip(new_lines, ends, strict=True))
