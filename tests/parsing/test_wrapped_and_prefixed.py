"""Lines the way users paste them (docs/reference/foreign-errors.md D4, F2, F6): hard-wrapped by a terminal, behind
a container's wall-clock stamp and Ray's actor prefix, tracebacks whose header was cut off. Read as one line, one
traceback, by the parser and by the one reader alike."""

from __future__ import annotations

from pathlib import Path

from a1x_diagnostics.events import Event, Role, Signal, SignalKind, Source, Traceback
from a1x_diagnostics.parsing import LineParser, read_file
from a1x_diagnostics.parsing._shapes import shape_of

USERS = Path(__file__).resolve().parents[1] / "fixtures" / "real-runs" / "users-logs"
SOURCE = Source("captured.log", Role.LAUNCHER)


def _parse(lines: list[str], role: Role = Role.LAUNCHER) -> list[Event]:
    parser = LineParser(Source("captured.log", role), keep_unknown=False)
    out = [e for n, line in enumerate(lines, 1) for e in parser.feed(n, line)]
    return out + parser.flush()


def _reader(lines: list[str], tmp_path: Path, role: Role = Role.LAUNCHER) -> list[Event]:
    path = tmp_path / "captured.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return list(read_file(path, Source(path.name, role)))


def _signals(events: list[Event]) -> list[Signal]:
    return [e for e in events if isinstance(e, Signal)]


def test_a_terminal_wrapped_line_is_read_whole(tmp_path: Path) -> None:
    lines = (USERS / "C_openrlhf-265_vllm-actor-broadcast-timeout.log").read_text(encoding="utf-8").splitlines()
    for events in (_parse(lines), _reader(lines, tmp_path)):
        nccl = [s for s in _signals(events) if s.kind is SignalKind.NCCL_ERROR]
        assert [(s.line, s.fields["kind"]) for s in nccl] == [(1, "socket_timeout"), (12, "torch_watchdog")]
        assert nccl[0].text.endswith("(172.17.0.2, 44737).")  # its rest, on the next physical line
        assert "SeqNum=3856, OpType=ALLREDUCE" in str(nccl[1].fields["detail"])


def test_a_held_line_is_read_alone_when_the_next_does_not_close_it() -> None:
    lines = ["(Actor pid=1) [E socket.cpp:922] [c10d] The client socket has timed out after 1800s while trying to "
             "connect to (10.0.0.1", "(Actor pid=1) next line of the actor", "  an indented line )"]
    events = _parse(lines)
    nccl = [s for s in _signals(events) if s.kind is SignalKind.NCCL_ERROR]
    assert [s.line for s in nccl] == [1] and nccl[0].text == lines[0]
    # at the end of the input a held line is given too
    assert [s.line for s in _signals(_parse(lines[:1]))] == [1]


def test_a_container_stamp_and_ray_s_prefix_are_peeled() -> None:
    line = ("2024-06-28T06:11:52.685302801Z (LLMRayActor pid=20770) ERROR 06-28 06:11:45 worker_base.py:145] Error "
            "executing method initialize_cache. This might cause deadlock in distributed execution.")
    shape = shape_of(line)
    assert (shape.family, shape.level) == ("vllm", "ERROR")
    assert shape.msg.startswith("Error executing method initialize_cache")
    bare = shape_of("2024-06-28T06:11:52.685300953Z plain words")
    assert bare.ts is not None and (bare.ts.year, bare.ts.hour, bare.msg) == (2024, 6, "plain words")
    assert [s.fields["kind"] for s in _signals(_parse([line]))] == ["cache_init"]


def test_a_traceback_without_its_header_ends_in_its_exception(tmp_path: Path) -> None:
    lines = (USERS / "C_ms-swift-4906_weight-sync-diststore-timeout.log").read_text(encoding="utf-8").splitlines()
    for events in (_parse(lines), _reader(lines, tmp_path)):
        tbs = [e for e in events if isinstance(e, Traceback)]
        assert len(tbs) == 1 and (tbs[0].line, tbs[0].last_line) == (2, 16)
        assert tbs[0].exc_type == "torch.distributed.DistStoreError" and tbs[0].rank == 0
        assert any("_move_model_to_vllm" in ln for ln in tbs[0].lines)


def test_a_header_less_traceback_needs_an_exception_line_to_be_one() -> None:
    frames = ['  File "/opt/x.py", line 3, in main', "    run()"]
    module_class = _parse([*frames, "cosmos_rl.utils.resume.NoCheckpointFound: No complete checkpoint found at ['/o']"],
                          Role.POLICY)
    tbs = [e.exc_type for e in module_class if isinstance(e, Traceback)]
    assert tbs == ["cosmos_rl.utils.resume.NoCheckpointFound"]
    resumes = [s.fields["reason"] for s in _signals(module_class) if s.kind is SignalKind.RESUME_FAILED]
    assert resumes == ["no_checkpoint"]
    # a stack dump followed by an ordinary line is no crash: the line is read as itself
    not_one = _parse([*frames, "Done"])
    assert not [e for e in not_one if isinstance(e, Traceback)]
    assert not [e for e in _parse(frames) if isinstance(e, Traceback)]
    # faulthandler's frames ('line 12 in f', no comma) open nothing: the error line is read on its own
    dump = _parse(['  File "/opt/x.py", line 12 in main', "ValueError: boom"])
    assert not [e for e in dump if isinstance(e, Traceback)]
    assert [s.kind for s in _signals(dump)] == [SignalKind.ERROR_LINE]


def test_a_traceback_behind_vllm_s_prefix_on_every_line_is_one_traceback(tmp_path: Path) -> None:
    # vLLM's NewLineFormatter writes each line break of a record as "\r\n" + the record's prefix
    head = "(EngineCore_DP0 pid=563) ERROR 12-23 23:34:23 [core.py:708] "
    lines = [head + "EngineCore failed to start.\r", head + "Traceback (most recent call last):\r",
             head + '  File "/usr/lib/python3/dist-packages/vllm/v1/engine/core.py", line 699, in run_engine_core\r',
             head + "    engine_core = EngineCoreProc(*args, **kwargs)\r",
             head + "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
                    "when initializing the engine.",
             "(APIServer pid=1) INFO 12-23 23:34:24 [api_server.py:1] shutting down"]
    for events in (_parse([line.rstrip("\r") for line in lines]), _reader(lines, tmp_path)):
        tbs = [e for e in events if isinstance(e, Traceback)]
        assert len(tbs) == 1 and (tbs[0].line, tbs[0].last_line, tbs[0].exc_type) == (2, 5, "ValueError")
        assert [s.fields["kind"] for s in _signals(events) if s.kind is SignalKind.OOM] == ["no_cache_blocks"]
        # the frames are the traceback's, not error lines of their own
        assert [s.line for s in _signals(events) if s.kind is SignalKind.ERROR_LINE] == [1]
