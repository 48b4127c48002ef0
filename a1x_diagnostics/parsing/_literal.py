"""Read Python ``repr`` text (config dumps, dicts of counts) without evaluating code.

``ast.literal_eval`` first; when the dump holds things it refuses (``nan``, ``inf``,
``PosixPath('..')``, ``<Enum.X: 'x'>``), a small walker over the parsed tree turns those into
plain values. Nothing is ever executed.
"""

from __future__ import annotations

import ast
import math
import re
from typing import Any

_ENUM_REPR = re.compile(r"<([\w.]+): ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^<>]*)>")
_OBJ_REPR = re.compile(r"<(?:class|function|module|enum) '[^<>']*'>|<[^<>'\"]*>")
_NAMES: dict[str, Any] = {"nan": math.nan, "inf": math.inf, "None": None, "True": True, "False": False}
MAX_LITERAL_CHARS = 4 * 1024 * 1024


class _Unreadable(Exception):
    pass


def read_literal(text: str) -> Any:
    """The value of a Python literal repr, or raise ``ValueError``."""
    if len(text) > MAX_LITERAL_CHARS:
        raise ValueError("literal too long")
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    cleaned = _ENUM_REPR.sub(lambda m: m.group(2) if m.group(2)[:1] in "'\"" else repr(m.group(2)), text)
    cleaned = _OBJ_REPR.sub(lambda m: repr(m.group(0)), cleaned)
    try:
        tree = ast.parse(cleaned.strip(), mode="eval")
        return _walk(tree.body, cleaned)
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError, _Unreadable) as e:
        raise ValueError(str(e)) from None


def _walk(node: ast.AST, src: str) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Dict):
        out: dict[Any, Any] = {}
        for k, v in zip(node.keys, node.values, strict=True):
            if k is None:
                raise _Unreadable("dict unpacking")
            key = _walk(k, src)
            try:
                out[key] = _walk(v, src)
            except TypeError:  # unhashable key
                out[repr(key)] = _walk(v, src)
        return out
    if isinstance(node, ast.List):
        return [_walk(e, src) for e in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_walk(e, src) for e in node.elts)
    if isinstance(node, ast.Set):
        return [_walk(e, src) for e in node.elts]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _walk(node.operand, src)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v if isinstance(node.op, ast.USub) else v
        raise _Unreadable("unary operand")
    if isinstance(node, ast.Name):
        return _NAMES.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        return ast.get_source_segment(src, node) or node.attr
    if isinstance(node, ast.Call):
        # PosixPath('/x') -> '/x'; defaultdict(<class 'int'>, {...}) -> the dict; other calls -> text
        for arg in reversed(node.args):
            if isinstance(arg, (ast.Constant, ast.Dict, ast.List)):
                return _walk(arg, src)
        return ast.get_source_segment(src, node)
    raise _Unreadable(type(node).__name__)
