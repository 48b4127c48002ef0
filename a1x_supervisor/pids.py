"""``<run>/supervisor/pids.json``: which process of this node is what, for the GPU agent.

The file is a JSON object ``{"pid": "label"}`` (docs/gpu.md, ``a1x-tui gpu-agent --pids-file``):
the main process of the stage that runs now under its stage name (the ``cosmos-rl`` launcher is
``train``), and during training the controller and the replicas (``controller``, ``policy_<i>``,
``rollout_<i>``) once the process tree shows them. A replica is named from its environment and the
log file the launcher points its output at (docs/reference/cosmos-rl.md §2.5 ``COSMOS_ROLE``, §3.1
``logs_<ts>/policy_<i>.log``), through the GPU monitor's own role join; only the top process of
each replica is listed, its descendants are found by the agent walking up the tree. The file is
rewritten atomically, and only when it changes.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import psutil

from a1x_supervisor.runfiles import read_text, write_atomic

_NAMED_KINDS = ("controller", "policy", "rollout", "reference")


class PidsFile:
    """The labels of this run's live processes, written to ``path`` when they change."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stages: dict[int, str] = {}
        self._replicas: dict[int, str] = {}
        self._written: dict[int, str] | None = None

    @property
    def labels(self) -> dict[int, str]:
        return {**self._replicas, **self._stages}

    def set_stage(self, pid: int, label: str) -> None:
        """A stage command started (``label``: the stage name; ``train`` for the launcher)."""
        self._stages[pid] = label
        self.write()

    def set_replicas(self, labels: Mapping[int, str]) -> None:
        self._replicas = dict(labels)
        self.write()

    def clear(self) -> None:
        """The stage ended: none of its processes is left to label."""
        self._stages.clear()
        self._replicas.clear()
        self.write()

    def write(self) -> None:
        labels = self.labels
        if labels == self._written:
            return
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        data = {str(pid): label for pid, label in sorted(labels.items())}
        write_atomic(self.path, json.dumps(data, indent=1) + "\n")
        self._written = labels


def read_pids(path: Path) -> dict[int, str]:
    """The labels in a pids file; empty when it is missing or not a JSON object."""
    try:
        raw = json.loads(read_text(path))
        return {int(pid): str(label) for pid, label in raw.items()}
    except (OSError, ValueError, AttributeError):
        return {}


class ReplicaLabeler:
    """Names the controller and replicas among a launcher's descendants (``a1x_diagnostics.gpu`` role join)."""

    def __init__(self, resolver: Any = None) -> None:
        if resolver is None:
            from a1x_diagnostics.gpu import RoleResolver

            resolver = RoleResolver(None)
        self._resolver = resolver

    def labels(self, pids: Iterable[int]) -> dict[int, str]:
        """``{pid: label}`` for the top process of each controller and replica among ``pids``."""
        alive = [pid for pid in set(pids) if psutil.pid_exists(pid)]
        if not alive:
            return {}
        join = self._resolver.join(alive)
        found: dict[int, str] = {}
        for pid, role in join.roles.items():
            kind = getattr(role.kind, "value", str(role.kind))
            if kind not in _NAMED_KINDS or not _indexed(role.label):
                continue
            found[pid] = role.label
        out = {}
        for pid, label in found.items():
            parent = _ppid(pid)
            if parent is not None and found.get(parent) == label:
                continue  # the agent finds a replica's descendants by walking up to this one
            out[pid] = label
        return out


def _indexed(label: str) -> bool:
    if label == "controller":
        return True
    head, _, index = label.rpartition("_")
    return head in _NAMED_KINDS and index.isdigit()


def _ppid(pid: int) -> int | None:
    with contextlib.suppress(psutil.Error):
        return int(psutil.Process(pid).ppid())
    return None
