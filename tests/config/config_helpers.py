"""Shared helpers for the recipe-TOML tests: the fixture files and variants of them."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import toml

from a1x_diagnostics.config import LoadedConfig, lint_config, parse_config
from a1x_diagnostics.config.edit import REMOVE, Edit, edit_text
from a1x_diagnostics.findings import Finding

DATA = Path(__file__).parent / "data"
MOTION = DATA / "recipe_local_test.toml"  # shape of the shipped motion TOML (no final newline)
JOINT = DATA / "recipe_local_test_with_reasoning.toml"

# The must-change keys of docs/reference/alpamayo-recipe.md §8.4 set, console logging: a clean local file.
READY = {
    "train.output_dir": "/data/alpamayo/outputs",
    "policy.model_name_or_path": "/data/alpamayo/converted",
    "logging.logger": ["console"],
    "custom.alpamayo.prefetch.capacity": 48,
}


def text_of(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def variant(base: Path | str = MOTION, changes: Mapping[str, Any] | None = None, *, ready: bool = True) -> str:
    """The fixture text with ``changes`` (``None`` removes a key); ``ready`` sets the must-change keys first."""
    text = text_of(base) if isinstance(base, Path) else base
    edits = [Edit(k, v) for k, v in READY.items()] if ready else []
    edits += [Edit(k, REMOVE if v is None else v) for k, v in (changes or {}).items()]
    return edit_text(text, edits) if edits else text


def load_text(text: str, name: str = "recipe.toml") -> LoadedConfig:
    return parse_config(text, Path(name))


def findings(text: str, **context: Any) -> dict[str, Finding]:
    context.setdefault("env", {})
    context.setdefault("gpus_per_node", 8)
    return {f.id: f for f in lint_config(load_text(text), **context)}


def cosmos_keeps(value: Any) -> bool:
    """Whether Cosmos-RL's launcher and controller read ``value`` back unchanged: toml 0.10.2 reads the file,
    dumps its copy, the controller reads that (docs/reference/cosmos-rl.md §8.1). An independent oracle for
    the editor's own check."""
    try:
        return bool(toml.loads(toml.dumps(toml.loads(toml.dumps({"v": value}))))["v"] == value)
    except Exception:
        return False
