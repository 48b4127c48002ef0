"""``CheckTimeout``: a check ran past its deadline. Below the engine and the readers that raise it."""

from __future__ import annotations


class CheckTimeout(Exception):
    """``check()`` ran past its deadline."""
