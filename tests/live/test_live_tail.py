"""The tail state machine, step by step, on an in-memory file system."""

from __future__ import annotations

from live_fakefs import FakeFs

from a1x_diagnostics.live._tail import FileTail, History, Lines, Opened, Reset, TailOutput

P = "/run/logs_1/policy_0.log"


def lines_of(out: list[TailOutput]) -> list[str]:
    return [line for o in out if isinstance(o, Lines) for line in o.lines]


def poll(tail: FileTail) -> list[TailOutput]:
    out, more = tail.poll()
    assert not more
    return out


def run_backfill(tail: FileTail, budget: int = 4) -> list[History]:
    got: list[History] = []
    while tail.history_pending:
        got.extend(o for o in tail.backfill(budget) if isinstance(o, History))
    return got


def test_opening_at_the_end_streams_live_lines_then_backfills_history_with_numbers() -> None:
    fs = FakeFs()
    fs.write(P, b"a\nb\nc\npar")
    tail = FileTail(P, fs, from_end=True)
    out = poll(tail)
    assert out == [Opened(at_end=True)]
    assert tail.partial() == "par"
    fs.write(P, b"tial\nd\n")
    out = poll(tail)
    assert out == [Lines(None, ["partial", "d"], 6, diag=False)]  # number unknown yet
    history = run_backfill(tail)
    display = [line for h in history if h.display for line in h.lines]
    diag_only = [line for h in history if not h.display for line in h.lines]
    assert display == ["a", "b", "c"]
    assert history[0].first_lineno == 1
    assert [h for h in history if h.done] == [History(4, [], display=True, done=True)]
    assert diag_only == ["partial", "d"]  # the diagnostics see every line once, in file order
    assert tail.caught_up
    fs.write(P, b"e\n")
    assert poll(tail) == [Lines(6, ["e"], 16, diag=True)]


def test_live_lines_after_the_history_count_is_known_carry_exact_numbers() -> None:
    fs = FakeFs()
    fs.write(P, b"1\n2\n")
    tail = FileTail(P, fs, from_end=True)
    poll(tail)
    tail.backfill(3)  # reads "1\n2" (the display history is not finished)
    fs.write(P, b"3\n")
    assert poll(tail) == [Lines(None, ["3"], 4, diag=False)]
    assert tail.backfill(10) == [History(2, ["2"], display=True), History(3, [], display=True, done=True)]
    fs.write(P, b"4\n")
    assert poll(tail) == [Lines(4, ["4"], 6, diag=False)]  # numbered, diagnostics not caught up
    assert [line for h in run_backfill(tail) for line in h.lines] == ["3", "4"]
    fs.write(P, b"5\n")
    assert poll(tail) == [Lines(5, ["5"], 8, diag=True)]


def test_a_file_that_appears_later_is_read_from_its_first_byte() -> None:
    fs = FakeFs()
    tail = FileTail(P, fs, from_end=False)
    assert poll(tail) == []
    fs.write(P, b"x\ny\n")
    assert poll(tail) == [Opened(at_end=False), Lines(1, ["x", "y"], 0, diag=True)]
    assert tail.caught_up


def test_nothing_changed_means_no_read() -> None:
    fs = FakeFs()
    fs.write(P, b"x\n")
    tail = FileTail(P, fs, from_end=False)
    poll(tail)
    reads = fs.reads
    assert poll(tail) == []
    assert fs.reads == reads


def test_rotation_reads_the_old_file_to_its_end_then_follows_the_new_one() -> None:
    fs = FakeFs()
    fs.write(P, b"1\n")
    tail = FileTail(P, fs, from_end=False)
    assert lines_of(poll(tail)) == ["1"]
    fs.write(P, b"2\n3")  # not read yet when the file is rotated
    old = fs.rename(P, P + ".1")
    fs.write_to(old, b"\n4\n5")  # the writer still had the old file open
    fs.write(P, b"new1\nnew2\n")
    out = poll(tail)
    assert out == [
        Lines(2, ["2", "3", "4"], 2, diag=True),
        Lines(5, ["5"], 8, diag=True),  # its partial last line, flushed
        Reset("replaced"),
        Opened(at_end=False),
        Lines(1, ["new1", "new2"], 0, diag=True),
    ]
    assert fs.open_handles == 1


def test_deletion_then_recreation() -> None:
    fs = FakeFs()
    fs.write(P, b"a\n")
    tail = FileTail(P, fs, from_end=False)
    poll(tail)
    fs.write(P, b"b\n")
    fs.unlink(P)
    assert poll(tail) == [Lines(2, ["b"], 2, diag=True), Reset("deleted")]
    assert not tail.is_open and fs.open_handles == 0
    assert poll(tail) == []
    fs.write(P, b"again\n")
    assert poll(tail) == [Opened(at_end=False), Lines(1, ["again"], 0, diag=True)]


def test_truncation_to_a_smaller_size_restarts_at_zero() -> None:
    fs = FakeFs()
    fs.write(P, b"first line\nsecond line\n")
    tail = FileTail(P, fs, from_end=False)
    assert lines_of(poll(tail)) == ["first line", "second line"]
    fs.truncate(P)
    fs.write(P, b"after\n")
    assert poll(tail) == [Reset("truncated"), Lines(1, ["after"], 0, diag=True)]


def test_a_partial_line_cut_by_a_truncation_is_never_emitted_as_a_line() -> None:
    fs = FakeFs()
    fs.write(P, b"2025 INFO one\n2025 INFO first-half")
    tail = FileTail(P, fs, from_end=False)
    assert lines_of(poll(tail)) == ["2025 INFO one"]
    assert tail.partial() == "2025 INFO first-half"
    fs.write(P, b" second-half\n")  # the writer finishes the line...
    fs.truncate(P)  # ...and it is truncated away before the tail reads the end
    fs.write(P, b"2025 INFO after\n")
    out = poll(tail)
    assert out == [Reset("truncated", cut=True), Lines(1, ["2025 INFO after"], 0, diag=True)]
    assert "2025 INFO first-half" not in lines_of(out)  # the half line was never written as a line


def test_truncation_hidden_by_later_writes_is_seen_from_the_first_bytes() -> None:
    fs = FakeFs()
    fs.write(P, b"seq 1\n")
    tail = FileTail(P, fs, from_end=False)
    poll(tail)
    fs.truncate(P)
    fs.write(P, b"seq 2\nseq 3\nseq 4\n")  # grew past our offset before we looked again
    assert poll(tail) == [Reset("truncated"), Lines(1, ["seq 2", "seq 3", "seq 4"], 0, diag=True)]


def _regrown_to_our_offset(fs: FakeFs, tail: FileTail) -> None:
    """Copytruncate, then exactly as many bytes as the tail had read: the size says nothing."""
    fs.truncate(P)
    fs.write(P, b"seq 3\nseq 4\n")
    assert len(fs.files[P].data) == tail.offset


def test_a_truncated_file_regrown_to_our_offset_then_deleted_is_read_from_its_start() -> None:
    # A writer that logs at a steady rate and rotates its files on a line count (tests/live/live_writer.py
    # does; so does logrotate's size trigger) gives generations of equal size: CI lost one whole
    # generation this way, truncated, regrown to the follower's offset, then deleted.
    fs = FakeFs()
    fs.write(P, b"seq 1\nseq 2\n")
    tail = FileTail(P, fs, from_end=False)
    poll(tail)
    _regrown_to_our_offset(fs, tail)
    fs.unlink(P)
    fs.write(P, b"seq 5\n")  # re-created: another file under the name
    assert poll(tail) == [
        Reset("truncated"),
        Lines(1, ["seq 3", "seq 4"], 0, diag=True),
        Reset("replaced"),
        Opened(at_end=False),
        Lines(1, ["seq 5"], 0, diag=True),
    ]


def test_a_truncated_file_regrown_to_our_offset_is_found_when_verified_and_on_close() -> None:
    fs = FakeFs()
    fs.write(P, b"seq 1\nseq 2\n")
    tail = FileTail(P, fs, from_end=False)
    poll(tail)
    _regrown_to_our_offset(fs, tail)
    assert poll(tail) == []  # an ordinary look costs no read: the size is our offset
    out, more = tail.poll(verify=True)
    assert (out, more) == ([Reset("truncated"), Lines(1, ["seq 3", "seq 4"], 0, diag=True)], False)
    fs.truncate(P)
    fs.write(P, b"seq 6\nseq 7\n")
    assert lines_of(tail.close()) == ["seq 6", "seq 7"]


def test_truncation_hidden_by_later_writes_is_seen_when_every_generation_starts_alike() -> None:
    banner = b"=" * 80 + b"\n"  # more than the remembered first bytes, the same in each generation
    fs = FakeFs()
    fs.write(P, banner + b"seq 1\n")
    tail = FileTail(P, fs, from_end=False)
    poll(tail)
    fs.truncate(P)
    fs.write(P, banner + b"seq 2\nseq 3\n")  # past our offset: only the bytes before it differ
    assert lines_of(poll(tail)) == ["=" * 80, "seq 2", "seq 3"]


def test_a_file_opened_at_its_end_remembers_the_bytes_before_its_offset() -> None:
    banner = b"=" * 80 + b"\n"
    fs = FakeFs()
    fs.write(P, banner + b"seq 1\n")
    tail = FileTail(P, fs, from_end=True)
    poll(tail)
    run_backfill(tail)
    fs.truncate(P)
    fs.write(P, banner + b"seq 2\nseq 3\n")
    out = poll(tail)
    assert Reset("truncated") in out
    assert lines_of(out) == ["=" * 80, "seq 2", "seq 3"]


def test_nul_hole_left_by_a_writer_without_o_append_is_skipped() -> None:
    fs = FakeFs()
    fs.write(P, b"old 1\nold 2\n")
    tail = FileTail(P, fs, from_end=False)
    poll(tail)
    fs.truncate(P)
    fs.write(P, b"\0" * 12 + b"new\n")  # the writer's offset was 12
    assert poll(tail) == [Reset("truncated"), Lines(1, ["new"], 12, diag=True)]


def test_truncation_during_backfill_abandons_the_history() -> None:
    fs = FakeFs()
    fs.write(P, b"h1\nh2\nh3\n")
    tail = FileTail(P, fs, from_end=True)
    poll(tail)
    tail.backfill(3)
    fs.truncate(P)
    fs.write(P, b"n\n")
    out = poll(tail)
    assert out == [
        History(2, [], display=True, done=True, abandoned=True),
        Reset("truncated"),
        Lines(1, ["n"], 0, diag=True),
    ]
    assert tail.caught_up


def test_a_busy_file_is_read_in_bounded_slices() -> None:
    fs = FakeFs()
    fs.write(P, b"".join(b"line %d\n" % i for i in range(1000)))
    tail = FileTail(P, fs, from_end=False, chunk=512)
    got: list[str] = []
    rounds = 0
    more = True
    while more:
        out, more = tail.poll(budget=1024)
        got.extend(lines_of(out))
        rounds += 1
    assert got == [f"line {i}" for i in range(1000)]
    assert rounds > 5


def test_close_drains_and_flushes() -> None:
    fs = FakeFs()
    fs.write(P, b"a\n")
    tail = FileTail(P, fs, from_end=False)
    poll(tail)
    fs.write(P, b"b\nc")
    assert lines_of(tail.close()) == ["b", "c"]
    assert fs.open_handles == 0


def test_a_file_truncated_then_renamed_is_drained_from_its_new_start() -> None:
    fs = FakeFs()
    fs.write(P, b"gen1 line 1\n")
    tail = FileTail(P, fs, from_end=False)
    poll(tail)
    fs.truncate(P)
    fs.write(P, b"gen1b line 1\ngen1b line 2\n")  # more bytes than we had read
    fs.rename(P, P + ".1")
    fs.write(P, b"gen2 line 1\n")
    assert poll(tail) == [
        Reset("truncated"),
        Lines(1, ["gen1b line 1", "gen1b line 2"], 0, diag=True),
        Reset("replaced"),
        Opened(at_end=False),
        Lines(1, ["gen2 line 1"], 0, diag=True),
    ]


def test_a_one_megabyte_line_arrives_whole_through_bounded_reads() -> None:
    fs = FakeFs()
    tail = FileTail(P, fs, from_end=False, chunk=64 * 1024)
    big = b"[rank0]:" + b"y" * (1024 * 1024)
    fs.write(P, big[:300_000])
    assert lines_of(poll(tail)) == []
    assert tail.partial() is not None and len(tail.partial() or "") == 300_000
    fs.write(P, big[300_000:] + b"\nnext\n")
    assert lines_of(poll(tail)) == [big.decode(), "next"]


def test_a_path_that_cannot_be_looked_at_keeps_the_open_file_read_and_resets_nothing() -> None:
    """A permission flipped on the file's folder for a while: stat answers EACCES, not ENOENT. The file held
    open is read on through its descriptor; nothing is reset, nothing read twice (issue 37, point 3)."""
    fs = FakeFs()
    fs.write(P, b"a\n")
    tail = FileTail(P, fs, from_end=False)
    assert lines_of(poll(tail)) == ["a"]
    fs.hidden.add(P)
    fs.write(P, b"b\n")
    assert poll(tail) == [Lines(2, ["b"], 2, diag=True)]
    assert tail.blocked and tail.is_open
    fs.hidden.clear()
    fs.write(P, b"c\n")
    assert poll(tail) == [Lines(3, ["c"], 4, diag=True)]
    assert not tail.blocked


def test_a_file_that_cannot_be_opened_yet_is_followed_from_its_start_once_it_can() -> None:
    fs = FakeFs()
    fs.write(P, b"first\n")
    fs.hidden.add(P)
    tail = FileTail(P, fs, from_end=False)
    assert poll(tail) == [] and tail.blocked and not tail.is_open
    fs.hidden.clear()
    assert poll(tail) == [Opened(at_end=False), Lines(1, ["first"], 0, diag=True)]
    assert not tail.blocked
