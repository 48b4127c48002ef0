from collections.abc import Callable
from typing import Any

def lines(text: str | bytes, classes: bytes, table: bytes, accept: bytes, nclasses: int, pairs: bytes, teddy: bytes,
          root2: int, ends: bytes, groups: bytes, chains: bytes, /) -> list[int]: ...
SIMD: int  # the widest prefilter this CPU runs: 2 (AVX2), 1 (SSSE3), 0
ABI: int

def chunk(
    data: bytes | bytearray | memoryview,
    classes: bytes,
    table: bytes,
    accept: bytes,
    nclasses: int,
    pairs: bytes,
    teddy: bytes,
    root2: int,
    ends: bytes,
    groups: bytes,
    chains: bytes,
    templates: tuple[tuple[bytes, type[tuple[Any, ...]]], ...],
    lineno: int,
    offset: int,
    max_line: int,
    minute_base: Callable[[int, int, int, int, int], int | None],
    simd: int,
    batches: tuple[tuple[type[tuple[Any, ...]], bytes, int, int, int, int], ...],
    beside: bytes,
    /,
) -> tuple[list[tuple[Any, ...]], int]: ...
