"""Stub (dry runs only)."""
from typing import Any


class RLPayload:
    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)
