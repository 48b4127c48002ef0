"""Append one call to $A1X_EVAL_CALLS (JSON lines)."""

import json
import os


def record(name, *args, **kwargs):
    path = os.environ.get("A1X_EVAL_CALLS")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"call": name, "args": [_plain(a) for a in args],
                                 "kwargs": {k: _plain(v) for k, v in kwargs.items()}}) + "\n")


def _plain(value):
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return type(value).__name__
