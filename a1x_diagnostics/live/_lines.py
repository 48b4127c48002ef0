"""Bytes in, complete lines out: the partial-line, long-line and bad-UTF-8 rules of the tailer.

Pure (no I/O). A line is the bytes up to a ``\\n``; the bytes after the last ``\\n`` are held as the
partial line until its newline arrives. Decoding is UTF-8 with replacement characters, so a log
with stray bytes is shown, never refused. A ``\\n`` can never sit inside a multi-byte UTF-8
sequence, so decoding a block of whole lines at once gives the same text as decoding each line.
"""

from __future__ import annotations

# The parsing package's limit, so --check and watch cut and number lines alike: longer lines keep
# their first MAX_LINE_BYTES bytes; the rest, up to the newline, is skipped.
from a1x_diagnostics.parsing import MAX_LINE_BYTES

__all__ = ["MAX_LINE_BYTES", "LineAssembler", "decode"]


def decode(data: bytes | bytearray) -> str:
    return data.decode("utf-8", "replace")


def _strip_cr(lines: list[str]) -> list[str]:
    return [line[:-1] if line.endswith("\r") else line for line in lines]


class LineAssembler:
    """Cuts a byte stream that starts at absolute offset ``start`` into lines.

    ``skip_nul``: drop a run of NUL bytes at the start of the stream. A writer that did not open
    its file with O_APPEND keeps writing at its old offset after a copytruncate, which leaves a
    hole of NULs at the start of the truncated file (the Cosmos-RL launcher opens its logs with
    mode "wb": docs/reference/cosmos-rl.md §3.1).
    """

    __slots__ = ("_overflow", "_pending", "line_start", "max_line", "pos", "skip_nul")

    def __init__(self, start: int = 0, *, max_line: int = MAX_LINE_BYTES, skip_nul: bool = False) -> None:
        self.pos = start  # absolute offset of the next byte to feed
        self.line_start = start  # absolute offset where the held (partial) line starts
        self.max_line = max_line
        self.skip_nul = skip_nul
        self._pending = bytearray()
        self._overflow = False  # the held line reached max_line: drop bytes until its newline

    @property
    def holding(self) -> bool:
        """True while a partial line is held."""
        return bool(self._pending) or self._overflow

    def feed(self, data: bytes) -> tuple[int, list[str]]:
        """Consume ``data``; return the offset of the first complete line and the complete lines."""
        if self.skip_nul and data:
            stripped = data.lstrip(b"\0")
            skipped = len(data) - len(stripped)
            self.pos += skipped
            if not self.holding:
                self.line_start = self.pos
            data = stripped
            if data:
                self.skip_nul = False
        first_offset = self.line_start
        if not data:
            return first_offset, []
        first_nl = data.find(b"\n")
        if first_nl < 0:
            self._hold(data)
            self.pos += len(data)
            return first_offset, []
        out: list[str] = []
        block_start = 0
        if self.holding:
            self._hold(data[:first_nl])
            out.append(self._take_held())
            block_start = first_nl + 1
        last_nl = data.rfind(b"\n")
        if last_nl >= block_start:
            block = data[block_start:last_nl]
            text = decode(block)
            lines = text.split("\n")
            if "\r" in text:
                lines = _strip_cr(lines)
            if len(block) > self.max_line:
                lines = [line[: self.max_line] for line in lines]
            out.extend(lines)
        rest = data[last_nl + 1 :]
        self.pos += len(data)
        self.line_start = self.pos - len(rest)
        if rest:
            self._hold(rest)
        return first_offset, out

    def flush(self) -> tuple[int, list[str]]:
        """End of this stream: the held partial line, if any, becomes a complete line."""
        first_offset = self.line_start
        if not self.holding:
            return first_offset, []
        line = self._take_held()
        self.line_start = self.pos
        return first_offset, [line]

    def partial(self) -> str | None:
        """The held partial line as text (for display), or None."""
        if not self.holding:
            return None
        text = decode(self._pending)
        return text[:-1] if text.endswith("\r") else text

    def _hold(self, data: bytes) -> None:
        if self._overflow:
            return
        room = self.max_line - len(self._pending)
        if len(data) > room:
            self._pending += data[:room]
            self._overflow = True
        else:
            self._pending += data

    def _take_held(self) -> str:
        text = decode(self._pending)
        self._pending = bytearray()
        self._overflow = False
        return text[:-1] if text.endswith("\r") else text
