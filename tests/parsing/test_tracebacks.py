"""Python tracebacks become one event with all their lines (issue point 1)."""

from __future__ import annotations

from parsing_helpers import SOURCES, cosmos, interesting, parse

from a1x_diagnostics.events import LogLine, Role, Signal, SignalKind, Traceback
from a1x_diagnostics.parsing import LineParser
from a1x_diagnostics.parsing._parser import MAX_GROUP_GAP, MAX_GROUP_LINES

FRAMES = ['  File "/opt/cosmos_rl/rollout/worker/rollout_control.py", line 2419, in main_loop', "    self.generate()",
          "    ^^^^^^^^^^^^^^^"]


def test_plain_traceback_is_one_event_then_the_next_line() -> None:
    lines = ["Traceback (most recent call last):", *FRAMES, "KeyError: 'train'", cosmos("[Controller] Epoch 1 start.")]
    events = parse(lines)
    trace = events[0]
    assert isinstance(trace, Traceback)
    assert trace.lines == tuple(lines[:5]) and trace.line == 1 and trace.last_line == 5
    assert (trace.exc_type, trace.exc_message) == ("KeyError", "'train'")
    assert isinstance(events[1], LogLine) and events[1].line == 6


def test_rank_prefixed_traceback_keeps_the_rank_and_strips_the_prefix() -> None:
    body = ["Traceback (most recent call last):", *FRAMES, "RuntimeError: boom"]
    (trace,) = interesting(parse([f"[rank1]:{b}" for b in body], Role.ROLLOUT))
    assert isinstance(trace, Traceback) and trace.rank == 1 and trace.lines == tuple(body)
    assert trace.text == "[rank1]:Traceback (most recent call last):"


def test_chained_tracebacks_are_one_event() -> None:
    lines = [
        "Traceback (most recent call last):", *FRAMES, "ConnectionError: refused", "",
        "During handling of the above exception, another exception occurred:", "",
        "Traceback (most recent call last):", *FRAMES, "TimeoutError: gave up", "",
        "The above exception was the direct cause of the following exception:", "",
        "Traceback (most recent call last):", *FRAMES, "RuntimeError: Failed to register to controller: gave up",
    ]
    events = interesting(parse(lines))
    trace = events[0]
    assert isinstance(trace, Traceback) and len(trace.lines) == len(lines)
    assert trace.exc_type == "RuntimeError"
    # each exception line is read for signals: the last one names a failed registration
    assert [(s.kind, s.line) for s in events[1:] if isinstance(s, Signal)] == [(SignalKind.HTTP_FAILURE, len(lines))]


def test_traceback_cut_off_by_eof_is_still_one_event() -> None:
    lines = ["[rank0]:Traceback (most recent call last):", *(f"[rank0]:{f}" for f in FRAMES[:2])]
    (trace,) = parse(lines, Role.POLICY)
    assert isinstance(trace, Traceback) and len(trace.lines) == 3 and trace.exc_type is None


def test_interleaved_rank_tracebacks_do_not_mix() -> None:
    lines = []
    for i in range(4):
        for rank in (0, 1):
            lines.append(f"[rank{rank}]:" + (["Traceback (most recent call last):", *FRAMES][i]))
    lines += ["[rank1]:ValueError: one", "[rank0]:ValueError: zero", cosmos("after", rank=0), cosmos("after", rank=1)]
    traces = [e for e in parse(lines, Role.ROLLOUT) if isinstance(e, Traceback)]
    assert sorted((t.rank, t.exc_message, t.line) for t in traces) == [(0, "zero", 1), (1, "one", 2)]
    assert all(len(t.lines) == 5 for t in traces)


def test_unprefixed_lines_do_not_end_a_rank_traceback() -> None:
    lines = ["[rank0]:Traceback (most recent call last):", "W0609 22:14:29.123 99 torch/distributed/api.py:1] noise",
             f"[rank0]:{FRAMES[0]}", "[rank0]:OSError: disk"]
    traces = [e for e in parse(lines, Role.POLICY) if isinstance(e, Traceback)]
    assert len(traces) == 1 and traces[0].exc_message == "disk" and len(traces[0].lines) == 3


def test_a_foreign_line_right_after_frames_closes_the_traceback_as_cut() -> None:
    lines = ["Traceback (most recent call last):", *FRAMES, cosmos("[Controller] Epoch 2 start.")]
    events = parse(lines)
    assert isinstance(events[0], Traceback) and events[0].exc_type is None and len(events[0].lines) == 4
    assert isinstance(events[1], LogLine) and events[1].family == "cosmos"


def test_a_traceback_is_bounded() -> None:
    parser = LineParser(SOURCES[Role.ROLLOUT])
    events = parser.feed(1, "Traceback (most recent call last):")
    for n in range(2, MAX_GROUP_LINES + 50):
        events += parser.feed(n, "  frame")
    events += parser.flush()
    traces = [e for e in events if isinstance(e, Traceback)]
    assert len(traces[0].lines) == MAX_GROUP_LINES
    # ... and one left idle for long (other ranks keep writing) closes
    parser = LineParser(SOURCES[Role.ROLLOUT])
    assert parser.feed(1, "[rank0]:Traceback (most recent call last):") == []
    closed = parser.feed(MAX_GROUP_GAP + 5, "[rank1]:x")
    assert next(type(e).__name__ for e in closed) == "Traceback"


def test_blank_lines_after_an_exception_without_a_chain_are_not_swallowed() -> None:
    lines = ["Traceback (most recent call last):", *FRAMES, "ValueError: x", "", "", "plain text after"]
    events = parse(lines)
    assert isinstance(events[0], Traceback) and len(events[0].lines) == 5
    assert [e.line for e in events[1:]] == [6, 7, 8]


def test_torch_error_printer_prefix_under_torchrun_tee() -> None:
    # Recorded shape: torchrun's tee adds "[rank0]:", torch's error printer "[rank0]: " (with a space).
    body = ["Traceback (most recent call last):", *FRAMES, "torch.OutOfMemoryError: CUDA out of memory. Tried to "
            "allocate 2.00 MiB."]
    lines = [f"[rank0]:[rank0]: {b}" for b in body] + [f"[rank1]: {b}" for b in body]
    events = interesting(parse(lines, Role.ROLLOUT))
    traces = [e for e in events if isinstance(e, Traceback)]
    assert (traces[0].rank, traces[0].lines) == (0, tuple(body))
    # without the tee prefix a frame keeps the printer's space in front of its indent (the line is
    # ambiguous with the tee's own "[rank1]:  File ..."); grouping and the exception are the same
    assert traces[1].rank == 1 and len(traces[1].lines) == len(body) and traces[1].exc_type == "torch.OutOfMemoryError"
    assert [s.fields["kind"] for s in events if isinstance(s, Signal)] == ["cuda_oom", "cuda_oom"]


def test_in_group_says_when_every_line_must_reach_the_parser() -> None:
    """The live follower skips lines without a marker only while ``in_group`` is False."""
    parser = LineParser(SOURCES[Role.ROLLOUT])
    assert not parser.in_group
    parser.feed(1, "Traceback (most recent call last):")
    assert parser.in_group
    parser.feed(2, FRAMES[0])
    assert parser.in_group
    closed = parser.feed(3, "KeyError: 'train'") + parser.feed(4, cosmos("[Rollout] next"))
    assert not parser.in_group and any(isinstance(e, Traceback) for e in closed)
    parser.feed(5, "Traceback (most recent call last):")
    assert parser.in_group
    parser.flush()
    assert not parser.in_group
