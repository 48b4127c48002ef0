"""File checks the stages' verifications share: JSON files, non-empty files (links followed), a model
folder's weight shards and tokenizer files, a PAI clip index's chunk column."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REASONING_MODEL_TYPE = "alpamayo_reasoning_vla"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def nonempty(path: Path) -> bool:
    try:
        return path.stat().st_size > 0  # stat follows symlinks: a dangling link fails here
    except OSError:
        return False


def index_shards(folder: Path) -> list[str] | str:
    """The shard names of ``model.safetensors.index.json``, or the reason they are not all there."""
    index = read_json(folder / "model.safetensors.index.json")
    if not isinstance(index, dict) or not isinstance(index.get("weight_map"), dict):
        return f"{folder}/model.safetensors.index.json is missing or has no weight_map"
    shards = sorted(set(index["weight_map"].values()))
    if not shards:
        return f"{folder}/model.safetensors.index.json: empty weight_map"
    for shard in shards:
        path = folder / shard
        if not nonempty(path):
            if path.is_symlink():
                return f"{path} is a dangling symlink (was the Hugging Face cache cleaned?)"
            return f"{path} is missing (named in the weight_map)"
    return shards


def chunk_column(names: Sequence[str]) -> str | None:
    # docs/reference/alpamayo-recipe.md §6: chunk column = 'chunk_id' if present else 'chunk'.
    if "chunk_id" in names:
        return "chunk_id"
    if "chunk" in names:
        return "chunk"
    return None


def as_ints(values: Sequence[Any]) -> list[int]:
    out = []
    for v in values:
        try:
            out.append(int(v))
        except (TypeError, ValueError):
            continue
    return out
