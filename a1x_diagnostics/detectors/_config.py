"""What detectors know about the run's configuration, from a TOML or from the run's own logs.

Detectors read configuration only through ``ConfigLike`` (``get``, ``is_set``, ``locate``). Two
sources exist: the TOML given with ``--config`` (the config helper's ``LoadedConfig`` satisfies the
protocol) and the effective config every policy prints at start-up, ``[Policy] Loaded
configuration: {...}`` (docs/reference/cosmos-rl.md §5.1), which ``DumpConfig`` adapts. The dump is what the run
actually used (the launcher rewrites ``n_init_replicas``, §2.2), so it wins for arithmetic; the
TOML is what the user edits, so it gives a fix's ``current`` value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from a1x_diagnostics.events import ConfigDump
from a1x_diagnostics.findings import Evidence

_MISSING = object()


@runtime_checkable
class ConfigLike(Protocol):
    """The read-only view of a Cosmos-RL config that detectors use (dotted TOML paths)."""

    def get(self, dotted: str) -> Any: ...

    def is_set(self, dotted: str) -> bool: ...

    def locate(self, dotted: str) -> Evidence | None: ...


def _walk(data: Mapping[str, Any], dotted: str) -> Any:
    node: Any = data
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return _MISSING
        node = node[part]
    return node


def _joined(a: str, b: str) -> bool:
    """True when a cut between ``a`` and ``b`` would split a word or a value (``800.00``, ``1e-4``,
    ``rollout_0``, ``15:30:00``): both are word characters, or ``. _ - + % :`` sits inside one."""
    word = "._-+%:"
    return (a.isalnum() or a in word) and (b.isalnum() or b in word)


def clip_text(text: str, limit: int = 240) -> str:
    """``text`` in at most ``limit`` characters, for evidence and explanations (config dumps are one
    enormous line). A longer text is cut at a space, else between a word and punctuation, within
    the last half of ``limit``, and ends with ``…``: never inside a number or a word ("Process 1532
    has 800.00 MiB", not "has 8"). Only a single token longer than half of ``limit`` is cut inside."""
    text = text.rstrip("\r\n")
    if len(text) <= limit:
        return text
    room = limit - 1  # characters kept before the ellipsis
    floor = room // 2
    space = max(text.rfind(" ", floor, room), text.rfind("\t", floor, room))  # room - 1 at most: " …" fits
    if space > 0:
        return text[:space].rstrip(" \t,;") + " …"  # not ":": "(pid:" is a token
    for cut in range(room, floor, -1):
        if not _joined(text[cut - 1], text[cut]):
            return text[:cut] + "…"
    return text[:room] + "…"


class DumpConfig:
    """``ConfigLike`` over the ``[Policy] Loaded configuration`` dict (or the rollout-only dump)."""

    def __init__(self, dump: ConfigDump) -> None:
        self._event = dump
        self._data: Mapping[str, Any] = dump.config or {}
        self._prefix = "rollout." if dump.scope == "rollout" else ""

    @property
    def event(self) -> ConfigDump:
        return self._event

    def _lookup(self, dotted: str) -> Any:
        if self._prefix:
            if not dotted.startswith(self._prefix):
                return _MISSING
            dotted = dotted[len(self._prefix) :]
        return _walk(self._data, dotted)

    def get(self, dotted: str) -> Any:
        value = self._lookup(dotted)
        return None if value is _MISSING else value

    def is_set(self, dotted: str) -> bool:
        return self._lookup(dotted) is not _MISSING

    def locate(self, dotted: str) -> Evidence | None:
        value = self._lookup(dotted)
        if value is _MISSING:
            return None
        return Evidence(
            file=self._event.source.path,
            line=self._event.line,
            text=clip_text(f"{dotted} = {value!r} (effective config logged by {self._event.source.replica})"),
        )


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = float(seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 600:  # minutes and seconds: 150 s is "2 min 30 s", not "3 min"
        m, sec = divmod(round(seconds), 60)
        return f"{m} min {sec} s" if sec else f"{m} min"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _safe_get(config: ConfigLike | None, dotted: str) -> Any:
    if config is None:
        return None
    try:
        return config.get(dotted)
    except (KeyError, AttributeError, TypeError, ValueError):
        return None


class RunConfig:
    """The config as detectors see it: the effective dump first, then the TOML and its defaults.

    ``current(key)`` is the value to show in a ``Fix`` (the TOML's when one was given).
    """

    def __init__(self, toml: ConfigLike | None = None, dumps: tuple[DumpConfig, ...] = ()) -> None:
        self.toml = toml
        self.dumps = dumps

    @property
    def known(self) -> bool:
        return self.toml is not None or any(d.event.config for d in self.dumps)

    def get(self, dotted: str) -> Any:
        for dump in self.dumps:
            if dump.is_set(dotted):
                return dump.get(dotted)
        return _safe_get(self.toml, dotted)

    def is_set(self, dotted: str) -> bool:
        if any(d.is_set(dotted) for d in self.dumps):
            return True
        try:
            return bool(self.toml is not None and self.toml.is_set(dotted))
        except (KeyError, AttributeError, TypeError, ValueError):
            return False

    def locate(self, dotted: str) -> Evidence | None:
        if self.toml is not None:
            try:
                found = self.toml.locate(dotted)
            except (KeyError, AttributeError, TypeError, ValueError):
                found = None
            if found is not None:
                return found
        for dump in self.dumps:
            found = dump.locate(dotted)
            if found is not None:
                return found
        return None

    def current(self, dotted: str) -> Any:
        """The value a user would see in their TOML (or, without one, what the run used)."""
        if self.toml is not None:
            value = _safe_get(self.toml, dotted)
            if value is not None:
                return value
        return self.get(dotted)

    def number(self, dotted: str) -> float | None:
        value = self.get(dotted)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        return float(value)

    def integer(self, dotted: str) -> int | None:
        value = self.get(dotted)
        if isinstance(value, bool) or not isinstance(value, int):
            return None
        return value
