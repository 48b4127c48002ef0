"""The ``read=`` functions of entries whose fields are more than their regex's groups, and ``read_literal``.

Each takes the entry's match and returns the event fields it adds (None: the line is refused).
"""

from __future__ import annotations

import ast
import functools
import math
import re
from typing import Any

from a1x_diagnostics.events import ThrottleState

MAX_FIELD = 2048  # characters of an error message kept in a field


def cap(text: str, limit: int = MAX_FIELD) -> str:
    return text if len(text) <= limit else text[:limit]


def to_int(v: str | None) -> int | None:
    if v is None or v == "None":
        return None
    try:
        return int(v)
    except ValueError:
        return None


def to_float(v: str | None) -> float | None:
    """``float`` of a printed number, also with a unit or punctuation after it (``12.3s``, ``4.5,``)."""
    if v is None:
        return None
    try:
        return float(v)
    except ValueError:
        pass
    v = v.strip().rstrip(",")
    if v.endswith("s."):
        v = v[:-2]
    elif v.endswith(("s", ".")):
        v = v[:-1]
    try:
        return float(v)
    except ValueError:
        return None


# ---------------------------------------------------------------- Step (docs/reference/cosmos-rl.md §4.5)
# Names of the pieces of a GRPO Step line (status.py:1805) and an SFT one (status.py:1507, 'Loss: x, Max
# Loss y, Grad norm: z'), lower-cased, so both spellings of "grad norm" map.
_STEP_FIELDS = {
    "reward mean": "reward_mean", "reward std": "reward_std", "reward max": "reward_max", "reward min": "reward_min",
    "completion length mean": "completion_length_mean", "completion length max": "completion_length_max",
    "average loss": "loss_avg", "loss": "loss_avg", "max loss": "loss_max", "learning rate": "learning_rate",
    "entropy": "entropy", "effective entropy": "effective_entropy", "grad norm": "grad_norm",
    "kl loss avg": "kl_loss_avg", "kl loss max": "kl_loss_max", "iteration time": "iteration_time_s",
}
_STEP_NAME = re.compile(r"([A-Za-z][A-Za-z ]*?):?")


@functools.lru_cache(maxsize=256)
def _step_field(head: str) -> str | None:
    m = _STEP_NAME.fullmatch(head)
    return _STEP_FIELDS.get(m.group(1).strip().lower()) if m else None


def step_pieces(m: re.Match[str]) -> dict[str, Any]:
    """Each ``, ``-separated piece is ``<name>:? <value>``: the value what follows its last space."""
    values: dict[str, Any] = {}
    for piece in (m.group("pieces") or "").split(", "):
        head, space, value = piece.strip().rpartition(" ")
        if not space or not value:
            continue
        name = _step_field(head)
        if name is not None and value.split() == [value]:
            values[name] = to_float(value)
    return values


# ---------------------------------------------------------------- Train report (§4.5, §7.2)
_REPORT_KEY = re.compile(r"(?:^|, )([A-Za-z0-9_./-]+): ")


def report_pairs(m: re.Match[str]) -> dict[str, Any]:
    """``k: v, k2: v2`` where a value may itself hold ``, `` (custom metrics)."""
    parts = _REPORT_KEY.split(m.group("pairs"))
    out: dict[str, float | str] = {}
    for i in range(1, len(parts), 2):
        raw = parts[i + 1].strip()
        try:
            out[parts[i]] = float(raw)
        except ValueError:
            out[parts[i]] = cap(raw)
    return {"metrics": out}


# ---------------------------------------------------------------- Dynamic sampling counts (§4.5)
_COUNT_PAIR = re.compile(r"'([A-Za-z_][A-Za-z0-9_]*)': (0|[1-9][0-9]*)")
_SIMPLE_COUNTS = re.compile(rf"\{{(?:{_COUNT_PAIR.pattern}(?:, {_COUNT_PAIR.pattern})*)?\}}")


def sampling_counts(m: re.Match[str]) -> dict[str, Any] | None:
    raw = m.group("counts")
    start, end = raw.find("{"), raw.rfind("}")
    if start < 0 or end < start:
        return None
    text = raw[start : end + 1]
    if _SIMPLE_COUNTS.fullmatch(text):  # {'outdated': 3, ...}: what read_literal gives, cheaper
        return {"counts": {k: int(v) for k, v in _COUNT_PAIR.findall(text)}}
    try:
        value = read_literal(text)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    counts = {str(k): int(v) for k, v in value.items()
              if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}
    return {"counts": counts}


def config_literal(m: re.Match[str]) -> dict[str, Any]:
    """A logged config dump (§5.1, §6.1): the dict it prints, or None where it is not one."""
    return {"config": _config(m.group("config").strip())}


@functools.lru_cache(maxsize=16)
def _config(text: str) -> dict[str, Any] | None:
    """Read once for all the replicas that print the same config (thousands in a cluster run)."""
    try:
        value = read_literal(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


# ---------------------------------------------------------------- small conversions
_THROTTLE = {"ENGAGED": ThrottleState.ENGAGED, "still engaged after": ThrottleState.STILL_ENGAGED,
             "RELEASED after": ThrottleState.RELEASED}


def throttle_state(m: re.Match[str]) -> dict[str, Any]:
    return {"state": _THROTTLE[m.group("word")]}


def milliseconds(m: re.Match[str]) -> dict[str, Any]:
    ms = to_float(m.group("ms"))
    return {"seconds": ms / 1000 if ms is not None else None}


def step_of_path(m: re.Match[str]) -> dict[str, Any]:
    found = re.search(r"step_(\d+)", m.group("path") or "")
    return {"step": int(found.group(1)) if found else None}


_FORBIDDEN = re.compile(r"\b403\b|permission denied|upsertBucket|Forbidden", re.IGNORECASE)


def wandb_failed(m: re.Match[str]) -> dict[str, Any]:
    return {"forbidden": bool(_FORBIDDEN.search(m.group("error")))}


def wandb_error(m: re.Match[str]) -> dict[str, Any] | None:
    """A ``wandb: ERROR`` line is an init failure only when it is refused (403...) or names the error
    class; otherwise a transient W&B error."""
    forbidden = bool(_FORBIDDEN.search(m.group("error")))
    if not forbidden and "wandb.errors" not in m.string:
        return None
    return {"forbidden": forbidden}


# ---------------------------------------------------------------- Python repr text, never evaluated
# ``ast.literal_eval`` first; a dump holding what it refuses (``nan``, ``inf``, ``PosixPath('..')``,
# ``<Enum.X: 'x'>``) is walked instead, those made plain values.
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
        return _walk(ast.parse(cleaned.strip(), mode="eval").body, cleaned)
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
    if isinstance(node, (ast.List, ast.Set)):
        return [_walk(e, src) for e in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_walk(e, src) for e in node.elts)
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



def verl_zero_advantages(m: re.Match[str]) -> dict[str, Any] | None:
    """verl's step metrics: every advantage 0 (max = min = 0) means every GRPO group had one reward for all its
    completions; a score max = min says that reward was one value for the whole batch. Anything else: no event."""
    adv_max, adv_min = to_float(m["adv_max"]), to_float(m["adv_min"])
    score_max, score_min = to_float(m["score_max"]), to_float(m["score_min"])
    if adv_max != 0.0 or adv_min != 0.0:
        return None
    return {"fraction": 1.0, "metric": "critic/advantages",
            "constant_reward": score_max is not None and score_max == score_min}
