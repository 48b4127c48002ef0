from collections.abc import Callable
from typing import Any

def lines(text: str | bytes, classes: bytes, table: bytes, accept: bytes, nclasses: int, /) -> list[int]: ...
def chunk(
    data: bytes | bytearray | memoryview,
    classes: bytes,
    table: bytes,
    accept: bytes,
    nclasses: int,
    pairs: bytes,
    templates: tuple[bytes, ...],
    lineno: int,
    offset: int,
    max_line: int,
    minute_base: Callable[[int, int, int, int, int], int | None],
    /,
) -> tuple[list[tuple[Any, ...]], int]: ...
