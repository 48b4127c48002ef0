"""Stub (dry runs only)."""
from typing import Any


def pre_hf_models_patch(hf_config: Any) -> None:
    pass
