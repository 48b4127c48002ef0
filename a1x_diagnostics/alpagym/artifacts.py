"""Reading one episode artifact (``artifacts/<scene>_<uuid>_<hex>.json``, docs/reference/alpagym.md §3.3).

The file is ``json.dumps(..., indent=2)`` of ``scene_id, session_uuid, num_steps, policy_outputs,
executed_ego_trajectory, route_waypoints, metrics, reward, is_valid`` in that order. The policy
outputs carry the replay tensors (megabytes as JSON lists), the scores are at the end: the head
(64 KiB) gives the ids, the tail (the last 256 KiB, from the top-level ``"metrics"`` key) the
scores. A smaller file is parsed whole. I/O at the edge: ``read_artifact`` returns a value or a
one-line problem, never raises for a bad file.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from a1x_diagnostics.closed_loop_events import EpisodeArtifact

HEAD = 64 * 1024
TAIL = 256 * 1024
WHOLE = 1024 * 1024  # parse files up to this size whole
_TAIL_KEY = '\n  "metrics": '
_HEAD_FIELD = re.compile(r'^  "(scene_id|session_uuid|num_steps)": ("(?:[^"\\]|\\.)*"|-?\d+|null),?$', re.M)


def _numbers(node: Any) -> dict[str, float]:
    if not isinstance(node, dict):
        return {}
    out: dict[str, float] = {}
    for key, value in node.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[str(key)] = float(value)
    return out


def _from_parts(display: str, ids: dict[str, Any], tail: dict[str, Any]) -> EpisodeArtifact:
    metrics = tail.get("metrics") if isinstance(tail.get("metrics"), dict) else {}
    reward = tail.get("reward") if isinstance(tail.get("reward"), dict) else {}
    total = reward.get("total") if isinstance(reward, dict) else None
    num_steps = ids.get("num_steps")
    valid = tail.get("is_valid")
    return EpisodeArtifact(
        path=display,
        uuid=str(ids.get("session_uuid") or ""),
        scene=str(ids["scene_id"]) if ids.get("scene_id") is not None else None,
        num_steps=num_steps if isinstance(num_steps, int) else None,
        reward=float(total) if isinstance(total, (int, float)) and not isinstance(total, bool) else None,
        terms=_numbers(reward.get("report_metrics")) if isinstance(reward, dict) else {},
        metrics=_numbers(metrics.get("aggregated")) if isinstance(metrics, dict) else {},
        valid=valid if isinstance(valid, bool) else None,
    )


def _loads(text: str) -> Any:
    # json.dumps writes NaN / Infinity for non-finite floats (allow_nan's default): keep them.
    return json.loads(text, parse_constant=lambda c: {"NaN": math.nan, "Infinity": math.inf,
                                                      "-Infinity": -math.inf}[c])


def read_artifact(path: Path, display: str) -> EpisodeArtifact | str:
    """The episode's scores, or ``"<display>: <problem>"``."""
    try:
        with path.open("rb") as f:
            size = f.seek(0, 2)
            f.seek(0)
            if size <= WHOLE:
                data = _loads(f.read().decode("utf-8", "replace"))
                if not isinstance(data, dict):
                    return f"{display}: not an AlpaGym episode artifact (a JSON {type(data).__name__})"
                return _from_parts(display, data, data)
            head = f.read(HEAD).decode("utf-8", "replace")
            f.seek(max(0, size - TAIL))
            tail = f.read().decode("utf-8", "replace")
    except OSError as exc:
        return f"{display}: cannot read ({exc.strerror or exc})"
    except (ValueError, RecursionError) as exc:
        return f"{display}: not valid JSON ({str(exc).splitlines()[0][:120]})"
    ids: dict[str, Any] = {}
    for key, value in _HEAD_FIELD.findall(head):
        try:
            ids[key] = json.loads(value)
        except ValueError:
            continue
    at = tail.rfind(_TAIL_KEY)
    if at < 0 or "session_uuid" not in ids:
        return f"{display}: not an AlpaGym episode artifact (no session_uuid at its head or metrics at its end)"
    try:
        data = _loads("{" + tail[at + 1:])
    except ValueError as exc:
        return f"{display}: its metrics and reward are not valid JSON ({str(exc).splitlines()[0][:120]})"
    if not isinstance(data, dict):
        return f"{display}: not an AlpaGym episode artifact"
    return _from_parts(display, ids, data)


__all__ = ["read_artifact"]
