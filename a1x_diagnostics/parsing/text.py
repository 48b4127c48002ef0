"""What a raw log line says: its message without the torchrun, Ray, cosmos, vLLM or glog prefixes."""

from __future__ import annotations

from a1x_diagnostics.parsing._shapes import shape_of


def message_of(line: str) -> str:
    """The message of ``line`` as the parser reads it (docs/parsing.md, "Lines and families")."""
    return shape_of(line).msg
