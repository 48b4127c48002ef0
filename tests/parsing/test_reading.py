"""Reading files: streaming, odd bytes, long lines, ``\\r``, the grep prefilter against the pure parser."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from parsing_helpers import SOURCES, UUID, both_paths, cosmos, every_line
from test_failure_lines import LAUNCHER_CASES, NCCL_CASES, OOM_TEXTS, RECIPE_CASES, tb

from a1x_diagnostics.events import LogLine, Role, Signal, SignalKind, Source, Stat, Traceback, WeightSync
from a1x_diagnostics.parsing import discover, file_tail, read_file, read_run
from a1x_diagnostics.parsing._lines import MAX_LINE_BYTES

STAT = cosmos("[Controller] Stat: 8 samples, 800 completion tokens, 8 pending rollouts, 8 in-flight, 0 filtered "
              "(outdated), 1.00s elapsed")


def write(path: Path, data: bytes | str) -> Path:
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def events(path: Path, role: Role = Role.CONTROLLER, keep_unknown: bool = True) -> list:  # type: ignore[type-arg]
    return every_line(path, Source(path.name, role), keep_unknown=keep_unknown)


def test_partial_last_line_is_read(tmp_path: Path) -> None:
    f = write(tmp_path / "controller.log", "plain\n" + STAT)  # no newline at the end
    got = events(f)
    assert isinstance(got[1], Stat) and got[1].line == 2


def test_carriage_returns_split_a_line_into_segments_with_one_number(tmp_path: Path) -> None:
    bar = "\r".join(f"Fetching 5 files: {p}%|{'#' * (p // 20)}| {p // 20}/5" for p in (0, 40, 100))
    f = write(tmp_path / "convert.log", f"{bar}\r\n{STAT}\r\n")
    got = events(f, Role.STAGE)
    assert [(type(e).__name__, e.line) for e in got] == [("Signal", 1)] * 3 + [("Stat", 2)]
    # each redraw of huggingface_hub's bar is the catalog's hub_fetch_progress (recipe_hub.py), read in its segment
    assert [(e.kind, e.fields) for e in got[:3]] == [  # type: ignore[attr-defined]
        (SignalKind.HUB_FETCH_PROGRESS, {"done": d, "total": 5}) for d in (0, 2, 5)]


def test_non_utf8_bytes_are_replaced_not_fatal(tmp_path: Path) -> None:
    f = write(tmp_path / "rollout_0.log", b"\xff\xfe garbage \x80\n" + STAT.encode() + b" \xe2\x82\n\x00\x01\n")
    got = events(f, Role.ROLLOUT)
    assert "\ufffd" in got[0].text and len(got) == 3


def test_long_lines_are_cut_but_parsed_and_numbering_stays_right(tmp_path: Path) -> None:
    big = "{" + ", ".join(f"'key_{i}': {i}" for i in range(60000)) + "}"  # ~1 MB
    line = cosmos(f"[Policy] Loaded configuration: {big}", rank=0)
    huge = "x" * (MAX_LINE_BYTES + 1000)  # longer than a line may be: cut, the rest skipped
    f = write(tmp_path / "policy_0.log", f"{line}\n{huge}\n{STAT}\n")
    got = events(f, Role.POLICY)
    dump = got[0]
    assert dump.config["key_59999"] == 59999 and len(dump.text) <= 8192  # type: ignore[attr-defined]
    assert isinstance(got[1], LogLine) and len(got[1].text) <= 8192
    assert got[2].line == 3 and "Stat" in got[2].text


def test_file_that_vanished_is_a_layout_error(tmp_path: Path) -> None:
    from a1x_diagnostics.parsing import LayoutError

    with pytest.raises(LayoutError, match="cannot read"):
        list(read_file(tmp_path / "gone.log", SOURCES[Role.CONTROLLER]))


def test_vllm_year_comes_from_the_file_mtime(tmp_path: Path) -> None:
    f = write(tmp_path / "rollout_0.log", "INFO 12-31 23:59:58 [llm_engine.py:100] a\nINFO 06-09 10:00:00 [x.py:1] b\n")
    os.utime(f, (1736000000, 1736000000))  # 2025-01-04: the December line is from the year before
    got = events(f, Role.ROLLOUT)
    assert [e.ts.year for e in got] == [2024, 2024] and got[0].logger == "llm_engine.py:100"
    os.utime(f, (1749600000, 1749600000))  # 2025-06-11
    assert [e.ts.year for e in events(f, Role.ROLLOUT)] == [2024, 2025]


def test_file_tail(tmp_path: Path) -> None:
    lines = [cosmos(f"line {i}", ts=f"2025-06-09 10:00:{i % 60:02d},000") for i in range(5000)]
    f = write(tmp_path / "controller.log", "\n".join(lines) + "\nplain last words\n")
    tail = file_tail(f, 3)
    assert tail.last_lines == [lines[-2], lines[-1], "plain last words"]
    assert tail.last_ts is not None and tail.last_ts.second == 4999 % 60
    assert tail.size == f.stat().st_size
    assert file_tail(write(tmp_path / "empty.log", ""), 5).last_lines == []


def corpus() -> list[str]:
    """Every family, interleaved ranks, groups, noise: the fast and pure paths must agree on it."""
    lines: list[str] = []
    for line, _, _ in LAUNCHER_CASES:
        lines.append(line)
    for exc, _ in OOM_TEXTS:
        lines += tb(exc, 0)
    for msg, level, _ in NCCL_CASES:
        lines.append(cosmos(msg, level, 1))
    for group, _, _ in RECIPE_CASES:
        lines += group
    lines += [cosmos("[Controller samples_on_the_fly] source=x before=1 delta=+1 after=2", "DEBUG"), STAT,
              cosmos("Step: 1/4, Loss: 0.5, Max Loss 0.6, Grad norm: 1.0, Iteration time: 1.00s."),
              cosmos(f"POLICY Replica started at global rank 0, with replica name: {UUID}", rank=0),
              "[AlpamayoPrefetch][error] 2025-06-09 22:14:29 pid=9 client_rpc_failed socket='/tmp/s'",
              "INFO 06-09 22:14:29 [gpu_model_runner.py:1] CUDA out of memory? no, a vLLM info line"]
    # interleaved rank tracebacks with a chain, a torchrun summary, a traceback cut by EOF
    a = ["Traceback (most recent call last):", '  File "a.py", line 1', "ValueError: a", "",
         "During handling of the above exception, another exception occurred:", "",
         "Traceback (most recent call last):", '  File "b.py", line 2', "RuntimeError: Missing required env var X_Y"]
    b = ["Traceback (most recent call last):", '  File "c.py", line 3', "KeyError: 'b'"]
    for i in range(max(len(a), len(b))):
        if i < len(a):
            lines.append(f"[rank0]:{a[i]}")
        if i < len(b):
            lines.append(f"[rank1]:{b[i]}")
    lines += ["Root Cause (first observed failure):", "[0]:", "  exitcode  : -9 (pid: 5)",
              "  traceback : Signal 9 (SIGKILL) received by PID 5", "=" * 60]
    lines += ["\r".join(["10%|#| 1/10", "100%|##########| 10/10"]), "x" * 5000]
    lines += ["[rank2]:Traceback (most recent call last):", '[rank2]:  File "z.py", line 9']
    return lines


@pytest.mark.parametrize("role", [Role.CONTROLLER, Role.ROLLOUT, Role.LAUNCHER])
def test_the_reader_gives_the_events_of_parsing_every_line(tmp_path: Path, role: Role) -> None:
    f = write(tmp_path / "mixed.log", "\n".join(corpus()).encode() + b"\n\xff\xfe\n" + STAT.encode())
    fast, pure = both_paths(f, SOURCES[role])
    assert fast == pure
    assert len(fast) > 40


def test_read_run_fast_path_and_unreadable_files(tmp_path: Path) -> None:
    logs = tmp_path / "logs_20250609-120000"
    logs.mkdir()
    write(logs / "controller.log", "\n".join([STAT] * 3))
    write(logs / "rollout_0.log", "\n".join(tb("ValueError: No available memory for the cache blocks.", 0)))
    write(logs / "policy_0.log", "noise\n" * 10)
    layout = discover(logs)
    (logs / "policy_0.log").unlink()
    got = list(read_run(layout))
    assert [type(e).__name__ for e in got] == ["Stat", "Stat", "Stat", "Traceback", "Signal"]
    assert isinstance(got[3], Traceback) and got[3].source.path == "rollout_0.log"
    assert isinstance(got[4], Signal) and got[4].kind is SignalKind.OOM
    assert len(layout.unreadable) == 1 and "policy_0.log" in layout.unreadable[0]


def test_read_run_gives_no_log_lines(tmp_path: Path) -> None:
    logs = tmp_path / "logs_20250609-120000"
    logs.mkdir()
    recv = cosmos("[Rollout] All 8 at step None recv operations finished in 1.000 seconds with 2.0 MB received.",
                  rank=0)
    write(logs / "rollout_0.log", f"noise\n{recv}\n")
    got = list(read_run(discover(logs)))
    assert len(got) == 1 and isinstance(got[0], WeightSync) and got[0].step is None
    assert all(not isinstance(e, LogLine) for e in got)
    assert any(isinstance(e, LogLine) for e in every_line(logs / "rollout_0.log", SOURCES[Role.ROLLOUT]))


FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "cosmos"


@pytest.mark.slow  # every recorded run read
@pytest.mark.skipif(not FIXTURES.is_dir(), reason="no recorded fixtures yet")
def test_recorded_fixtures_parse_without_errors_and_with_sane_counts() -> None:
    runs = sorted({p.parent for p in FIXTURES.rglob("*") if p.is_file() and p.suffix in (".log", ".out", ".err")})
    assert runs
    total = 0
    for d in runs:
        try:
            layout = discover(d)
        except Exception:  # a folder that is part of a bigger layout; its parent is read instead
            continue
        all_events = [e for p, src in layout.files for e in every_line(p, src)]
        n_lines = sum(p.read_bytes().count(b"\n") + 1 for p, _ in layout.files)
        assert len([e for e in all_events if isinstance(e, LogLine)]) <= n_lines + 64
        total += len(all_events)
        for p, src in layout.files:
            fast, pure = both_paths(p, src)
            assert fast == pure, p
    assert total > 0
