"""``NA``: the value of a reading the GPU or driver cannot give.

nvitop's habit (style.md, "nvitop — a typed library"): "Not available" is a value, not an
exception. A GPU that does not report power gives ``NA`` for ``power_usage``; code that renders or
compares readings checks ``is NA`` (mypy narrows on it) instead of catching errors.
"""

from __future__ import annotations

from enum import Enum
from typing import Literal, TypeAlias, TypeVar


class NotAvailable(Enum):
    """The single ``NA`` value. Falsy, renders as ``N/A``, serialises to JSON ``null``."""

    NA = "N/A"

    def __bool__(self) -> bool:
        return False

    def __str__(self) -> str:
        return "N/A"

    def __repr__(self) -> str:
        return "NA"


NA = NotAvailable.NA
NAType: TypeAlias = Literal[NotAvailable.NA]

T = TypeVar("T")
MaybeInt: TypeAlias = int | NAType
MaybeStr: TypeAlias = str | NAType

MIB = 1024 * 1024


def or_none(value: T | NAType) -> T | None:
    """For JSON: ``NA`` becomes ``None`` (null)."""
    return None if value is NA else value


def from_json_int(value: object) -> MaybeInt:
    """The inverse of ``or_none`` for integer readings; anything that is not an int is ``NA``."""
    if isinstance(value, bool) or not isinstance(value, int):
        return NA
    return value


def to_mib(value: int) -> int:
    """Bytes to whole MiB, rounded to nearest: what nvidia-smi prints for the same reading (seen on the H200)."""
    return (value + MIB // 2) // MIB


def mib(value: MaybeInt) -> str:
    """Bytes as whole MiB, as nvidia-smi prints them (``NA`` stays ``N/A``)."""
    return "N/A" if value is NA else f"{to_mib(value)} MiB"


def pct(value: MaybeInt | float) -> str:
    if value is NA:
        return "N/A"
    return f"{value:.0f}%"
