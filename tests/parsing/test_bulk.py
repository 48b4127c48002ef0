"""The native reader's bulk templates: a record must say what the Python parser says of its line.

``a1x_diagnostics._scan.chunk`` reads lines of a few exact shapes into records (``_templates.TEMPLATES``). For
every template, instances with random numbers, ranks, times (also across daylight-saving changes)
and random damage must either come back as a record whose every field and time equal the event
the parser builds from the same line, or as a candidate line (then the parser decides). The
native file reader must also give, event for event, what ``read_run`` gives, whatever the block
size (lines cut across blocks, over-long lines, no newline at the end).
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from parsing_helpers import cosmos
from test_failure_lines import tb

from a1x_diagnostics.events import (
    Event,
    Role,
    Source,
    Stat,
    SyncPhase,
    WeightSync,
    epoch,
)
from a1x_diagnostics.parsing import GATED_MARKERS, LineParser, _bulk, _lines, _prefilter, read_run
from a1x_diagnostics.parsing._layout import RunLayout
from a1x_diagnostics.parsing._scan import _automaton
from a1x_diagnostics.parsing.records import Pending, built, event_fields, is_record

pytestmark = pytest.mark.skipif(not _bulk.available(), reason="C extension not built")

B = _bulk.Bulk
SRC = Source("rollout_0.log", Role.ROLLOUT, 0)
AUTOMATON = _automaton(GATED_MARKERS)


def _scan(text: str | bytes, lineno: int = 1, offset: int = 0) -> list[Any]:
    data = text.encode() if isinstance(text, str) else text
    items, _ = _bulk._chunk(data, *AUTOMATON, _bulk._TEMPLATE_TUPLE, lineno, offset, _lines.MAX_LINE_BYTES,
                            _bulk.minute_base, _bulk.SIMD, *_bulk._NO_BATCHES)
    return items


def _stamp(rng: random.Random) -> str:
    return (f"{rng.randint(1975, 2030)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} {rng.randint(0, 23):02d}:"
            f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d},{rng.randint(0, 999):03d}")


def _num(rng: random.Random) -> str:
    return rng.choice(["0", "7", "12", "00", "0042", str(rng.randint(0, 10**12))])


def _dec(rng: random.Random) -> str:
    return rng.choice(["0.00", "1.5", "12", "0.470947265625", f"{rng.random() * 1000:.3f}", "3.000000000001"])


def _signed(rng: random.Random) -> str:
    return rng.choice(["-3", "0", "4", str(rng.randint(-99, 99))])


STEP_NAMES = ("Reward Mean", "Reward Std", "Reward Max", "Reward Min", "Completion Length Mean",
              "Completion Length Max", "Average loss", "Max loss", "Learning rate", "Entropy", "Effective Entropy",
              "Grad Norm", "KL Loss Avg", "KL Loss Max")
STEP_FIELDS = ("reward_mean", "reward_std", "reward_max", "reward_min", "completion_length_mean",
               "completion_length_max", "loss_avg", "loss_max", "learning_rate", "entropy", "effective_entropy",
               "grad_norm", "kl_loss_avg", "kl_loss_max", "iteration_time_s")


def _float(rng: random.Random) -> str:
    return rng.choice(["-0.2500", "0.1100", "0.0000", "-1.0000", "2.00000e-06", "1E+3", "7", "-3.5e-12", "0.00000",
                       f"{rng.uniform(-9, 9):.5f}", f"{rng.uniform(0, 1e-4):.5e}"])


REPORT_KEYS = ("train/reward_mean", "train_step", "train/total_steps", "rollout/advantage_std", "train/traj_L2",
               "rollout/weight_staleness_p50", "rollout/advantage_max", "rollout/advantage_min", "x.y-z/w_1")


MESSAGES = {
    B.TRAIN_REPORT: lambda r: (_report_message(r), "INFO"),
    B.STAT: lambda r: (f"[Controller] Stat: {_num(r)} samples, {_num(r)} completion tokens, {_num(r)} pending "
                       f"rollouts, {_num(r)} in-flight, {_num(r)} filtered (outdated), {_dec(r)}s elapsed", "INFO"),
    B.STAT_OLD: lambda r: (f"[Controller] Stat: {_num(r)} samples, {_num(r)} completion tokens, {_num(r)} pending "
                           f"rollouts, {r.choice([_dec(r), _float(r)])} seconds elapsed", "INFO"),
    B.STALENESS: lambda r: (f"[Controller] weight staleness: accepted p50={_signed(r)} p99={_signed(r)} "
                            f"max={_signed(r)}, discarded={_num(r)}/{_num(r)} (allowed_outdated_steps={_signed(r)}, "
                            f"sync_weight_interval={_signed(r)})", "INFO"),
    B.PROMPT_REJECTED: lambda r: (f"[Rollout rank={_num(r)}] prompt rejected: prompt.weight_version={_signed(r)} "
                                  f"current_weight_version={_signed(r)} allowed_outdated={_signed(r)} "
                                  f"ceiling={_signed(r)}; head-of-queue will be re-checked until "
                                  "current_weight_version advances", "INFO"),
    B.SEND_DONE: lambda r: (f"[Policy] All {_num(r)} at step {r.choice(['None', _num(r)])} send operations of "
                            f"finished in {_dec(r)} seconds with {_dec(r)} MB sent. While {_num(r)} non-trainable "
                            f"splitted params skipped and {_num(r)} splitted params transferred.", "DEBUG"),
    B.RECV_DONE: lambda r: (f"[Rollout] All {_num(r)} at step {r.choice(['None', _num(r)])} recv operations "
                            f"finished in {_dec(r)} seconds with {_dec(r)} MB received. While {_num(r)} "
                            f"non-trainable splitted params skipped and {_num(r)} trainable splitted params "
                            "transferred.", "INFO"),
    B.RECV_DONE_OLD: lambda r: (f"[Rollout] All {_num(r)} at step {r.choice(['None', _num(r)])} recv operations "
                                f"finished in {r.choice([_dec(r), _float(r)])} seconds with {_dec(r)} MB received.",
                                "INFO"),
    B.DYNAMIC_OUTDATED: lambda r: (f"Dynamic sampling rewards distribution so far: {{'outdated': {_num(r)}}}.",
                                   "INFO"),
    B.STEP: lambda r: (f"Step: {_num(r)}/{_num(r)}, " + ", ".join(f"{name}: {_float(r)}" for name in STEP_NAMES)
                       + f", Iteration time: {_float(r)}s.", "INFO"),
}


def _report_message(r: random.Random) -> str:
    values = [_float(r), _float(r), "n/a", "1, 2", "日本", " 3.5 "]
    return f"[Controller] Train report data from total {_num(r)} rollouts: " + ", ".join(
        f"{r.choice(REPORT_KEYS)}: {r.choice(values)}" for _ in range(r.randint(0, 12)))


def _train_report(r: random.Random) -> str:
    """A controller's per-step report: C hands back the text of its ``k: v`` pairs, Python reads them."""
    return cosmos(_report_message(r), ts=_stamp(r))


def _prefetch_line(r: random.Random) -> str:
    stamp = _stamp(r)[:19]
    event = r.choice(["server_get_ok", "server_get_miss", "client_get_ok", "server_cache_evict_lru"])
    rest = r.choice(["", " n=3 hit=True dt_ms=0.41 cache_size=128 socket='/tmp/a b.sock'", " d={'x': 1, 'y': [2]}",
                     " k='quoted \\' value' n=-1"])
    rank = r.choice(["", "[rank3]:", "[rank12]:"])
    level = r.choice(["info", "debug", "warn", "error"])
    return f"{rank}[AlpamayoPrefetch][{level}] {stamp} pid={_num(r)} {event}{rest}"


def _line(kind: B, r: random.Random) -> str:
    if kind is B.PREFETCH:
        return _prefetch_line(r)
    msg, level = MESSAGES[kind](r)
    return cosmos(msg, level, rank=r.choice([None, 0, 7, 15]), ts=_stamp(r))


DAMAGE = [
    lambda s: s + " ",
    lambda s: s + "\r",
    lambda s: s.replace("0", "٠", 1),  # an Arabic-Indic digit: \d in Python, not a digit here
    lambda s: s.replace(" - cosmos - ", " - cosmos.sub - ", 1),
    lambda s: s.replace("INFO", "WARNING", 1),
    lambda s: s.replace(",", ".", 1),
    lambda s: s.replace("1", "1e3", 1),
    lambda s: s.replace("]:", "] :", 1),
    lambda s: "x" + s,
    lambda s: s[:-3],
    lambda s: s.replace("-", "-13-", 1),
    lambda s: s.replace(" pid=", " pid=-", 1),
    lambda s: s.replace("] 20", "] 19", 1),  # a year the C side leaves to Python
    lambda s: s.replace("'outdated': ", "'outdated': 0", 1),
    lambda s: s.replace(": -", ": +", 1),
    lambda s: s.replace("e-", "e-00001", 1),
    lambda s: s.replace(", Entropy", ",  Entropy", 1),
    lambda s: s.replace("Iteration time: ", "Iteration time: nan", 1),
    lambda s: s.replace("s.", ".", 1),
    lambda s: s.replace(": ", ":  ", 2),
    lambda s: s.replace(", ", " , ", 2),
    lambda s: s.replace("rollouts: ", "rollouts: junk, ", 1),
    lambda s: s.replace("rollouts: ", "rollouts:", 1),
    lambda s: s + ", note: fast run",
    lambda s: s + ", a: 1, a: 2",
    lambda s: s + ", b: ",
    lambda s: s + ", c: 1e400",
    lambda s: s + ",d: 3",
]


def _fields(kind: B, event: Event) -> dict[str, Any]:
    """The event's values of the fields a ``kind`` record holds (``_bulk.FIELDS``)."""
    if kind is B.DYNAMIC_OUTDATED:
        counts = dict(event.counts)  # type: ignore[attr-defined]
        return {"outdated": counts["outdated"]} if list(counts) == ["outdated"] else {"counts": counts}
    return {name: getattr(event, name) for name in _bulk.FIELDS[kind]}


def _record_fields(kind: B, rec: Any) -> dict[str, Any]:
    assert type(rec) is _bulk.RECORDS[kind] and rec._fields[5:] == _bulk.FIELDS[kind]
    return {name: getattr(rec, name) for name in _bulk.FIELDS[kind]}


def _check(line: str, source: Source = SRC) -> str:
    """'record' or 'candidate', after holding a record to the parser's event."""
    items = _scan(line + "\n", lineno=5)
    events = LineParser(source, keep_unknown=False).ungrouped_line_events(5, line) if "\r" not in line else None
    if not items:
        assert not events, line  # no marker, no event
        return "none"
    (item,) = items
    if len(item) == 3:
        assert item == (5, 0, line)
        return "candidate"
    assert is_record(item), line
    kind = B(item.kind)
    assert events is not None and len(events) == 1, line
    (event,) = events
    assert item.line == 5 and item.rank == event.rank and item.raw == line.encode(), line
    assert item.ts == epoch(event.ts), line
    if kind is B.TRAIN_REPORT:  # the pairs' text, read by the shape's definition
        assert item.rollouts == event.rollouts, line  # type: ignore[attr-defined]
        assert repr(event_fields(item)["metrics"]) == repr(dict(event.metrics)), line  # type: ignore[attr-defined]
    else:
        assert _record_fields(kind, item) == _fields(kind, event), line
    wanted = {B.SEND_DONE: SyncPhase.POLICY_SEND_DONE, B.RECV_DONE: SyncPhase.RECV_DONE,
              B.RECV_DONE_OLD: SyncPhase.RECV_DONE}.get(kind)
    if wanted is not None:
        assert isinstance(event, WeightSync) and event.phase is wanted
    assert Pending(source, None, item).event() == event
    return "record"


@pytest.mark.parametrize("kind", list(B), ids=lambda k: k.name)
def test_every_template_instance_is_read_as_its_event(kind: B) -> None:
    rng = random.Random(kind.value)
    outcomes = [_check(_line(kind, rng)) for _ in range(400)]
    # Instances with a leading zero in the 'outdated' count are no Python literal: left to the parser.
    assert outcomes.count("record") > 200


@pytest.mark.parametrize("kind", list(B), ids=lambda k: k.name)
def test_damaged_lines_are_records_only_when_the_parser_agrees(kind: B) -> None:
    rng = random.Random(100 + kind.value)
    seen = set()
    for _ in range(600):
        line = rng.choice(DAMAGE)(_line(kind, rng))
        seen.add(_check(line))
    assert "candidate" in seen




# Tokens of a number's characters: what the C library reads must be what float() and int() read.
_EDGES = ["1e400", "-1e400", "1e-400", "4.9e-324", "2.4703282292062328e-324", "2.4703282292062329e-324",
          "1.7976931348623157e308", "1.7976931348623159e308", "9007199254740993", "0.1", ".5", "5.", "-.5e-3",
          "1e", "1e+", "+-1", "1..2", "1e5e5", "--1", "+", "-", ".", "e5", "00.000e-0", "123456789012345678"]


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.sampled_from(_EDGES), st.text(alphabet="0123456789.eE+-", min_size=1, max_size=40)))
def test_a_number_token_is_read_as_float_reads_it_or_left_to_the_parser(token: str) -> None:
    line = cosmos(f"[Controller] Stat: 1 samples, 2 completion tokens, 3 pending rollouts, {token} seconds elapsed")
    outcome = _check(line)  # a record's every field is held to the parser's event
    if outcome == "record":
        (rec,) = _scan(line + "\n", lineno=5)
        assert rec.elapsed_s == float(token) or (rec.elapsed_s != rec.elapsed_s and float(token) != float(token))
    else:
        assert outcome == "candidate"


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.sampled_from(["-0", "0", "-999999999999999999", "000000000000000042"]),
                 st.text(alphabet="0123456789-", min_size=1, max_size=20)))
def test_an_int_token_is_read_as_int_reads_it_or_left_to_the_parser(token: str) -> None:
    line = cosmos(f"[Controller] weight staleness: accepted p50={token} p99=1 max=2, discarded=0/4 "
                  "(allowed_outdated_steps=1, sync_weight_interval=1)")
    outcome = _check(line)
    if outcome == "record":
        (rec,) = _scan(line + "\n", lineno=5)
        assert rec.p50 == int(token)
    else:
        assert outcome == "candidate"


@pytest.mark.parametrize("zone", ["UTC", "America/New_York", "Europe/London", "Australia/Lord_Howe", "Asia/Tehran"])
def test_times_equal_the_parsers_in_any_time_zone(zone: str) -> None:
    old = os.environ.get("TZ")
    os.environ["TZ"] = zone
    time.tzset()
    _bulk.minute_base.cache_clear()
    try:
        rng = random.Random(zone)
        stamps = ["2025-03-09 02:30:00,500", "2025-11-02 01:30:00,250", "2025-03-30 01:59:59,999",
                  "2025-10-26 01:30:00,000", "2025-04-06 01:45:10,100", "2024-02-29 23:59:59,999"]
        stamps += [_stamp(rng) for _ in range(200)]
        for stamp in stamps:
            line = cosmos("[Controller] Stat: 1 samples, 2 completion tokens, 3 pending rollouts, 0.5 seconds elapsed",
                          ts=stamp)
            assert _check(line) == "record"
    finally:
        if old is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = old
        time.tzset()
        _bulk.minute_base.cache_clear()


def test_candidates_carry_line_numbers_offsets_and_decoded_text() -> None:
    data = "noise\n" + cosmos("Watchdog caught collective operation timeout", "ERROR") + "\nx\n"
    raw = data.encode() + b"\xff\xfe [R2R Barrier] Timed out after 5s\nlast without newline WARNING - y"
    items = _scan(raw, lineno=10, offset=100)
    assert [(i[0], i[1]) for i in items] == [(11, 106), (13, 100 + len(data)), (14, 100 + raw.rindex(b"\n") + 1)]
    assert items[1][2] == "\ufffd\ufffd [R2R Barrier] Timed out after 5s"


# ------------------------------------------------------------------ the file reader, block by block


def _random_file(rng: random.Random) -> str:
    lines: list[str] = []
    for _ in range(rng.randint(0, 120)):
        r = rng.random()
        if r < 0.45:
            lines.append(_line(rng.choice(list(B)), rng))
        elif r < 0.55:
            lines.append(rng.choice(DAMAGE)(_line(rng.choice(list(B)), rng)))
        elif r < 0.6:
            lines.extend(tb("torch.OutOfMemoryError: CUDA out of memory.", rng.choice([None, 0])))
        elif r < 0.65:
            lines.append(cosmos("Step: 3/8, Reward Mean: 0.1, Reward Std: 0.2, Iteration time: 1.0s.", ts=_stamp(rng)))
        elif r < 0.7:
            lines.append("\r".join(["10%|#| 1/10", _line(B.RECV_DONE, rng)]))
        elif r < 0.72:
            lines.append("y" * rng.randint(200, 700) + " " + _line(B.STAT, rng))  # long: cut, marker past the cut
        elif r < 0.74:
            lines.append(_train_report(rng))
        else:
            lines.append(cosmos(f"[Rollout main_loop 1.0s] rank=0 n={rng.randint(0, 9)}", "DEBUG", rank=0))
    text = "\n".join(lines)
    return text if rng.random() < 0.3 else text + "\n"


def _expanded(files: list[tuple[Path, Source]]) -> Iterator[Event]:
    for source, mtime, items in _bulk.run_items(files, lambda e: None):
        for item in items:
            if item.__class__ is list:  # a run: records, and events of other classes in their place
                yield from (built(Pending(source, mtime, r)) if is_record(r) else r for r in item)
            else:
                yield item


@pytest.mark.parametrize("simd", [2, 1, 0], ids=["32-positions", "16-positions", "one-position"])
@pytest.mark.parametrize("block", [64, 300, 4096])
def test_file_reader_gives_read_runs_events_at_any_block_size(tmp_path: Path, block: int, simd: int,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_bulk, "CHUNK_BYTES", block)
    monkeypatch.setattr(_bulk, "SIMD", simd)
    monkeypatch.setattr(_bulk, "BATCHING", False)  # every record read, to be held to its event
    for module in (_bulk, _lines, _prefilter):
        monkeypatch.setattr(module, "MAX_LINE_BYTES", 512)  # lines over 512 bytes: cut, as everywhere
    monkeypatch.setattr(_lines, "CHUNK_BYTES", 200)  # the pure reader cuts lines longer than its reads
    rng = random.Random(block)
    roles = [Role.CONTROLLER, Role.POLICY, Role.ROLLOUT, Role.LAUNCHER]
    files = []
    for i in range(24):
        path = tmp_path / f"f{i}.log"
        path.write_text(_random_file(rng), encoding="utf-8", newline="")
        files.append((path, Source(path.name, roles[i % 4], i)))
    layout = RunLayout(tmp_path, "replica_dir", tmp_path, None, [], files)
    got = list(_expanded(files))
    if _prefilter.available():  # grep's path hands groups on at their first line, as this one does
        assert got == list(read_run(layout))
    monkeypatch.setenv("A1X_NO_GREP", "1")  # the pure parser: groups come when they close
    pure = list(read_run(layout))
    assert sorted(got, key=repr) == sorted(pure, key=repr)
    assert sum(isinstance(e, (Stat, WeightSync)) for e in pure) > 50


@pytest.mark.parametrize("block", [64, 300, 4096])
def test_each_read_lands_where_its_source_lies_in_its_page_and_the_items_are_one_scans(
        tmp_path: Path, block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read whose destination lies 1-31 bytes past its source's place in a page copied 4x slower
    (docs/parsing.md, "Reads where they land"): every read of the reader lands at its file offset's
    place in a page, through split lines, over-long lines (their skipped rest holding the next lines),
    no last newline and an empty file, and the items are those of one scan of the whole file."""
    import ctypes
    import io
    import mmap

    monkeypatch.setattr(_bulk, "BATCHING", False)  # one record a line, as one scan of the whole file gives
    monkeypatch.setattr(_bulk, "CHUNK_BYTES", block)
    monkeypatch.setattr(_bulk, "MAX_LINE_BYTES", 512)
    places: list[tuple[int, int]] = []

    class Recording(io.FileIO):
        def readinto(self, b: Any) -> int | None:
            places.append((ctypes.addressof(ctypes.c_char.from_buffer(b)) % mmap.PAGESIZE,
                           self.tell() % mmap.PAGESIZE))
            return super().readinto(b)

    monkeypatch.setattr(_bulk, "open", lambda path, mode, buffering: Recording(path, "rb"), raising=False)
    rng = random.Random(block)
    texts = [_random_file(rng) for _ in range(8)] + ["", "no newline " + _line(B.STAT, rng)]
    texts.append("z" * 1500 + "\n" + "".join(_line(B.RECV_DONE, rng) + "\n" for _ in range(5)))
    buf = _bulk.block_buffer()
    for i, text in enumerate(texts):
        path = tmp_path / f"controller_{i}.log"
        path.write_text(text, encoding="utf-8", newline="")
        src = Source(path.name, Role.CONTROLLER, i)
        got = [tuple(item) for items in _bulk.scan_file(path, src, buf if i % 2 else None) for item in items]
        automaton = _automaton(_bulk.markers_for(src), *(_bulk.confirm_for(src) or ()))
        whole, _ = _bulk._chunk(path.read_bytes(), *automaton, _bulk._templates_for(src), 1, 0, 512,
                                _bulk.minute_base, _bulk.SIMD, *_bulk._NO_BATCHES)
        assert got == [tuple(item) for item in whole], path.name
    assert len(places) > 2 * len(texts) and all(dest == source for dest, source in places), places[:5]


def test_a_buffer_kept_from_file_to_file_gives_each_file_its_own_items(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker reads all its files into one buffer: a shorter file after a longer one (its last line without a
    newline) must not see the bytes the first one left there."""
    monkeypatch.setattr(_bulk, "CHUNK_BYTES", 4096)
    rng = random.Random(7)
    long, short = tmp_path / "rollout_0.log", tmp_path / "rollout_1.log"
    long.write_text("".join(_line(B.RECV_DONE, rng) + "\n" for _ in range(200)))
    short.write_text(_line(B.RECV_DONE_OLD, rng) + "\n" + _line(B.PROMPT_REJECTED, rng))
    src = Source("rollout_0.log", Role.ROLLOUT, 0)
    alone = [list(_bulk.scan_file(path, src)) for path in (long, short)]
    buf = _bulk.block_buffer()
    kept = [list(_bulk.scan_file(path, src, buf)) for path in (long, short, long)]
    assert kept == [*alone, alone[0]]
    assert sum(len(items) for items in alone[1]) == 2


def test_unreadable_file_is_reported_and_skipped(tmp_path: Path) -> None:
    good = tmp_path / "rollout_0.log"
    good.write_text(_line(B.RECV_DONE, random.Random(1)) + "\n")
    errors: list[str] = []
    files = [(tmp_path / "gone.log", SRC), (good, SRC)]
    got = [item for _, _, items in _bulk.run_items(files, errors.append) for item in items]
    assert len(got) == 1 and len(got[0]) == 1 and errors == [f"{tmp_path / 'gone.log'}: cannot read (No such file "
                                                             "or directory)"]


def test_blocks_waiting_for_the_parser_stay_within_the_budget(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A parser that stalls on its first file: the other files' scanned blocks stop at the item budget."""
    import time as _time

    monkeypatch.setattr(_bulk, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(_bulk, "MAX_LINE_BYTES", 4096)  # blocks of 4 KiB
    monkeypatch.setattr(_bulk, "AHEAD_ITEMS", 300)
    line = (cosmos("[Controller] Stat: 1 samples, 2 completion tokens, 3 pending rollouts, 0.5 seconds elapsed")
            + "\n").encode()
    files = []
    for i in range(40):  # small files: the workers finish them and take the next ones
        path = tmp_path / f"controller_{i}.log"
        path.write_bytes(line * 120)
        files.append((path, Source(path.name, Role.CONTROLLER, i)))
    _bulk.prefetch(files)
    reader = _bulk._started
    assert reader is not None
    per_file = _bulk.run_blocks(files, lambda e: None)
    _, _, _, first = next(per_file)
    got = len(next(first))  # one block of the first file taken; then the parser stalls
    _time.sleep(1.0)
    per_block = 4096 // len(line) + 1
    # the first file's rest is never held back; the others wait within the budget, plus one block
    assert reader.waiting_items <= (120 - got) + 300 + per_block
    got += sum(len(b) for b in first) + sum(len(b) for _, _, _, blocks in per_file for b in blocks)
    assert got == 40 * 120  # and every line still arrives once the parser goes on
