"""Property tests: parsers never crash, and the grep prefilter never disagrees with the pure parser."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from parsing_helpers import SOURCES, both_paths, cosmos, every_line

from a1x_diagnostics.events import LogLine, Role, Source, Traceback
from a1x_diagnostics.parsing import LineParser, file_tail, read_file

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Pieces real logs are made of: prefixes, tracebacks, torchrun summaries, separators, odd bytes.
PIECES = [
    b"[rank0]:", b"[rank1]:", b"[cosmos] 2025-06-09 22:14:29,220 - cosmos - INFO - ", b" - ERROR - ",
    b"Traceback (most recent call last):", b"  File \"x.py\", line 1, in f", b"ValueError: x",
    b"During handling of the above exception, another exception occurred:", b"Root Cause (first observed failure):",
    b"  exitcode  : -9 (pid: 1)", b"=" * 20, b"[Controller] Stat: 1 samples, 2 completion tokens, 3 pending rollouts, ",
    b"4.0s elapsed", b"Step: 3/9, ", b"[AlpamayoPrefetch][warn] 2025-06-09 22:14:29 pid=1 ev k='v", b"\r", b"\n",
    b"\n", b"\xff\xfe", b"\xe2\x82", b"\x00", b"INFO 06-09 22:14:29 [a.py:1] ", b"{'a': [1, (2", b" ",
]
SOURCE_ROLES = [Role.CONTROLLER, Role.ROLLOUT, Role.LAUNCHER]


def _with_file(data: bytes, fn):  # type: ignore[no-untyped-def]
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "f.log"
        path.write_bytes(data)
        return fn(path)


@FAST
@given(data=st.binary(max_size=4096), role=st.sampled_from(SOURCE_ROLES))
def test_arbitrary_bytes_never_crash(data: bytes, role: Role) -> None:
    def check(path: Path) -> None:
        got = every_line(path, Source("f.log", role))
        n_lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
        assert all(1 <= e.line <= max(n_lines, 1) for e in got)
        list(read_file(path, Source("f.log", role)))
        file_tail(path, 5)

    _with_file(data, check)


@FAST
@given(parts=st.lists(st.sampled_from(PIECES), max_size=80), role=st.sampled_from(SOURCE_ROLES))
def test_log_shaped_bytes_never_crash_and_both_paths_agree(parts: list[bytes], role: Role) -> None:
    data = b"".join(parts)

    def check(path: Path) -> None:
        fast, pure = both_paths(path, SOURCES[role])
        assert fast == pure

    _with_file(data, check)


@FAST
@given(text=st.text(max_size=300), lineno=st.integers(min_value=1, max_value=10**9))
def test_line_parser_accepts_any_text(text: str, lineno: int) -> None:
    parser = LineParser(SOURCES[Role.ROLLOUT], mtime=1.7e9)
    parser.feed(lineno, text)
    parser.feed(lineno + 1, cosmos(text, "ERROR", 0))
    parser.flush()


TB_LINES = ["Traceback (most recent call last):", '  File "x.py", line 1, in f', "    f()", "ValueError: boom", "",
            "The above exception was the direct cause of the following exception:", "KeyError: 'k'",
            "Root Cause (first observed failure):", "  exitcode  : 1 (pid: 3)", "====================", "noise"]


@FAST
@given(seq=st.lists(st.tuples(st.sampled_from([None, 0, 1, 2]), st.sampled_from(TB_LINES)), max_size=120))
def test_random_interleavings_of_traceback_lines(seq: list[tuple[int | None, str]]) -> None:
    lines = [(f"[rank{r}]:" if r is not None else "") + t for r, t in seq]
    parser = LineParser(SOURCES[Role.ROLLOUT])
    events = [e for n, line in enumerate(lines, 1) for e in parser.feed(n, line)] + parser.flush()
    for e in events:
        if isinstance(e, Traceback):
            # a traceback opens on its header, or on a frame line when it was lost (docs/reference/foreign-errors.md F6)
            assert e.lines[0].startswith(("Traceback", "  File \"")) and 1 <= e.line <= len(lines)
    # every line is accounted for once: as a LogLine, inside a group, or as a one-line event
    loglines = {e.line for e in events if isinstance(e, LogLine)}
    assert len(loglines) == sum(1 for e in events if isinstance(e, LogLine))

    def check(path: Path) -> None:
        fast, pure = both_paths(path, SOURCES[Role.ROLLOUT])
        assert fast == pure

    _with_file(("\n".join(lines) + "\n").encode(), check)


@pytest.mark.parametrize("size", [1 << 20, (1 << 20) + 7])
def test_megabyte_lines(tmp_path: Path, size: int) -> None:
    body = "Traceback (most recent call last):\n" + "y" * size + "\n" + "ValueError: " + "z" * size
    path = tmp_path / "rollout_0.log"
    path.write_text(body)
    got = list(read_file(path, SOURCES[Role.ROLLOUT]))
    assert sum(len(e.text) for e in got) < 64 * 1024


def test_a_count_too_large_for_a_float_is_dropped_not_raised() -> None:
    """{'outdated': 7894775E16025} evaluates to inf: int(inf) must not end the read."""
    from parsing_helpers import cosmos, parse

    events = parse(cosmos("Dynamic sampling rewards distribution so far: {'outated': 7894775E16025, 'outdated': 3}."))
    assert [dict(e.counts) for e in events] == [{"outdated": 3}]  # type: ignore[attr-defined]
