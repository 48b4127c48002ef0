"""Bytes to lines: partial lines, long lines, bad UTF-8, CRLF, the NUL hole of a copytruncate."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from a1x_diagnostics.live._lines import LineAssembler


def feed_all(asm: LineAssembler, *chunks: bytes) -> list[str]:
    out: list[str] = []
    for chunk in chunks:
        out.extend(asm.feed(chunk)[1])
    return out


def test_partial_line_is_held_until_its_newline_arrives() -> None:
    asm = LineAssembler()
    assert feed_all(asm, b"one\ntw") == ["one"]
    assert asm.partial() == "tw"
    assert feed_all(asm, b"o\nthr") == ["two"]
    assert asm.partial() == "thr"
    assert asm.flush() == (8, ["thr"])
    assert asm.partial() is None


def test_offsets_are_those_of_the_first_complete_line() -> None:
    asm = LineAssembler(100)
    assert asm.feed(b"ab") == (100, [])
    assert asm.feed(b"c\nde\nf") == (100, ["abc", "de"])
    assert asm.line_start == 107
    assert asm.feed(b"\n") == (107, ["f"])


def test_invalid_utf8_is_replaced_not_refused() -> None:
    asm = LineAssembler()
    assert feed_all(asm, b"ok \xff\xfe end\n\xe2\x82") == ["ok \ufffd\ufffd end"]
    # a multi-byte character split across two reads is decoded whole
    assert feed_all(asm, b"\xac\n") == ["\u20ac"]


def test_crlf_line_endings_lose_their_cr() -> None:
    assert feed_all(LineAssembler(), b"a\r\nb\r", b"\n") == ["a", "b"]


def test_a_one_megabyte_line_arrives_whole_across_many_reads() -> None:
    line = b"x" * (1024 * 1024)
    asm = LineAssembler()
    chunks = [line[i : i + 65536] for i in range(0, len(line), 65536)]
    assert feed_all(asm, *chunks) == []
    assert feed_all(asm, b"\nnext\n") == ["x" * (1024 * 1024), "next"]


def test_a_line_beyond_the_limit_is_cut_and_the_rest_skipped_to_its_newline() -> None:
    asm = LineAssembler(max_line=10)
    assert feed_all(asm, b"0123456789abcdef", b"ghij\nshort\n") == ["0123456789", "short"]
    asm = LineAssembler(max_line=10)
    assert feed_all(asm, b"head\n0123456789abcdef\ntail\n") == ["head", "0123456789", "tail"]


def test_nul_hole_after_copytruncate_is_skipped() -> None:
    asm = LineAssembler(skip_nul=True)
    assert asm.feed(b"\0" * 1000) == (1000, [])
    assert asm.feed(b"\0\0line\n") == (1002, ["line"])
    assert feed_all(asm, b"\0kept\n") == ["\0kept"]  # only the leading hole is skipped


@settings(max_examples=200, deadline=None)
@given(
    data=st.binary(max_size=400).map(lambda b: b.replace(b"\r", b"")),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12),
)
def test_any_chunking_gives_the_same_lines_as_reading_at_once(data: bytes, cuts: list[int]) -> None:
    expected = data.split(b"\n")
    expected_lines = [b.decode("utf-8", "replace") for b in expected[:-1]]
    asm = LineAssembler()
    got: list[str] = []
    offsets = sorted({0, len(data), *(c for c in cuts if c <= len(data))})
    for a, b in itertools.pairwise(offsets):
        got.extend(asm.feed(data[a:b])[1])
    assert got == expected_lines
    rest = asm.flush()[1]
    assert rest == ([expected[-1].decode("utf-8", "replace")] if expected[-1] else [])
