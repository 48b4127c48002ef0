"""The host's frozen ``resolved_config.yaml``: read once, the facts the closed-loop checks use.

PyYAML's ``safe_load`` (already installed with ``huggingface_hub``; imported only for AlpaGym runs).
At most 4 MiB; a file that cannot be used is one line naming it and the problem, never a traceback.
Keys: docs/reference/alpagym.md §2 (the Hydra schema of ``alpagym_host.config``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_BYTES = 4 * 1024 * 1024


class ResolvedConfigError(Exception):
    """``str(e)`` is one line: the file and what is wrong with it."""


@dataclass(frozen=True)
class RewardTerm:
    kind: str  # metric | distance_to_gt
    scale: float
    metric_name: str | None = None

    @property
    def name(self) -> str:
        """The key its raw value has in ``reward.report_metrics`` (``gt_rmse_xy`` for distance_to_gt)."""
        return self.metric_name if self.kind == "metric" and self.metric_name else "gt_rmse_xy"


@dataclass(frozen=True)
class ResolvedConfig:
    path: Path
    data: Mapping[str, Any]
    lines: dict[str, int] = field(default_factory=dict)  # dotted key -> line of its key in the file

    def get(self, dotted: str, default: Any = None) -> Any:
        node: Any = self.data
        for part in dotted.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]
        return node

    def integer(self, dotted: str) -> int | None:
        value = self.get(dotted)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def line(self, dotted: str) -> int | None:
        return self.lines.get(dotted)

    @property
    def reward_terms(self) -> list[RewardTerm]:
        out = []
        for term in self.get("reward.terms") or []:
            if isinstance(term, Mapping) and isinstance(term.get("kind"), str):
                scale = term.get("scale")
                out.append(RewardTerm(term["kind"], float(scale) if isinstance(scale, (int, float)) else 0.0,
                                      term.get("metric_name") if isinstance(term.get("metric_name"), str) else None))
        return out

    @property
    def total_steps(self) -> int | None:
        return self.integer("cosmos.train.max_num_steps")

    @property
    def controller_port(self) -> int | None:
        return self.integer("cosmos.launch.controller_port")

    @property
    def slurm(self) -> bool:
        backend = self.get("execution.backend")
        return isinstance(backend, str) and backend.startswith("slurm")


def _key_lines(node: Any, prefix: str, out: dict[str, int]) -> None:
    """Dotted key -> 1-based line, from PyYAML's node tree (mapping keys only)."""
    import yaml

    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                dotted = f"{prefix}{key.value}"
                out.setdefault(dotted, key.start_mark.line + 1)
                _key_lines(value, dotted + ".", out)


def load_resolved(path: Path) -> ResolvedConfig:
    """``path`` parsed; ``ResolvedConfigError`` (one line) when it cannot be used."""
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover - PyYAML comes with huggingface_hub
        raise ResolvedConfigError(f"{path}: PyYAML is not installed ({exc})") from None
    try:
        if not path.is_file():
            raise ResolvedConfigError(f"{path}: not a regular file")
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise ResolvedConfigError(f"{path}: {size} bytes, more than a resolved config holds (at most {MAX_BYTES})")
        raw = path.read_bytes()
    except OSError as exc:
        raise ResolvedConfigError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ResolvedConfigError(f"{path}: not UTF-8 text") from None
    try:
        data = yaml.safe_load(text)
        node = yaml.compose(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ResolvedConfigError(f"{path}: not valid YAML{where}: {problem}") from None
    except RecursionError:
        raise ResolvedConfigError(f"{path}: nested too deeply to read") from None
    if not isinstance(data, Mapping):
        raise ResolvedConfigError(f"{path}: not an AlpaGym resolved config (a YAML {type(data).__name__}, "
                                  "expected a mapping)")
    lines: dict[str, int] = {}
    _key_lines(node, "", lines)
    return ResolvedConfig(path, data, lines)


__all__ = ["ResolvedConfig", "ResolvedConfigError", "RewardTerm", "load_resolved"]
