"""RunFollower on real folders: history then live lines, new replicas, logs_latest, findings."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from live_helpers import FAST, RecordingDiagnosis, collect, wait_until

from a1x_diagnostics.events import Role
from a1x_diagnostics.findings import Evidence, Finding, Severity, Status
from a1x_diagnostics.live import (
    FileAppeared,
    FileReset,
    FindingRaised,
    FindingResolved,
    FindingUpdated,
    FollowError,
    HistoryComplete,
    HistoryLoaded,
    HistoryProgress,
    LinesAppended,
    Message,
    RunFollower,
    RunSwitched,
    Subscription,
)

RUN1 = "logs_20250101-000000"
RUN2 = "logs_20250101-010000"


def make_run(root: Path, name: str, files: dict[str, str]) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    for file, text in files.items():
        (folder / file).write_text(text)
    return folder


def point_latest(root: Path, name: str) -> None:
    """As the launcher does: a temporary link renamed over logs_latest (docs/reference/cosmos-rl.md §3.1)."""
    tmp = root / ".logs_latest.tmp"
    os.symlink(name, tmp)
    os.replace(tmp, root / "logs_latest")


def append(path: Path, text: str) -> None:
    with open(path, "a") as f:
        f.write(text)


def lines_of(messages: list[Message], name: str) -> list[tuple[int | None, str]]:
    out: list[tuple[int | None, str]] = []
    for m in messages:
        if isinstance(m, LinesAppended) and m.source.path.endswith(name):
            out.extend((None if m.first_lineno is None else m.first_lineno + i, t) for i, t in enumerate(m.lines))
    return out


def has(kind: type, **fields: object) -> Callable[[list[Message]], bool]:
    def check(messages: list[Message]) -> bool:
        return any(isinstance(m, kind) and all(getattr(m, k) == v for k, v in fields.items()) for m in messages)

    return check


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    root = tmp_path / "cosmos_logs"
    make_run(root, RUN1, {"controller.log": "c1\nc2\nc3\n", "policy_0.log": "p1\np2\n", "rollout_0.log": ""})
    point_latest(root, RUN1)
    return root


def test_history_then_live_lines_each_fed_once_to_the_diagnostics(log_dir: Path) -> None:
    diag = RecordingDiagnosis()
    follower = RunFollower(str(log_dir), options=FAST, diagnosis=lambda: diag)
    sub = follower.subscribe()
    with follower:
        got = collect(sub, has(HistoryComplete))
        appeared = {m.source.replica for m in got if isinstance(m, FileAppeared)}
        assert appeared == {"controller", "policy_0", "rollout_0"}
        loaded = [m for m in got if isinstance(m, HistoryLoaded) and "controller" in m.source.path]
        history = [line for m in loaded for line in m.lines]
        assert history == ["c1", "c2", "c3"]
        append(log_dir / RUN1 / "controller.log", "live 4\nlive 5\n")
        got = collect(sub, lambda ms: len(lines_of(ms, "controller.log")) == 2)
        assert lines_of(got, "controller.log") == [(4, "live 4"), (5, "live 5")]
        wait_until(lambda: len(diag.fed.get(f"{RUN1}/controller.log", [])) == 5)
        assert diag.fed[f"{RUN1}/controller.log"] == [(1, "c1"), (2, "c2"), (3, "c3"), (4, "live 4"), (5, "live 5")]
        assert diag.fed[f"{RUN1}/policy_0.log"] == [(1, "p1"), (2, "p2")]
        assert follower.run_name == RUN1
        assert not follower.polling


def test_live_lines_flow_before_the_history_is_read(tmp_path: Path) -> None:
    root = tmp_path / "cosmos_logs"
    history = "".join(f"history line {i}\n" for i in range(20_000))  # ~370 KB
    folder = make_run(root, RUN1, {"controller.log": history})
    point_latest(root, RUN1)
    diag = RecordingDiagnosis(delay=0.01)  # 10 ms per 8 KB chunk: about half a second of back-fill
    options = dataclasses.replace(FAST, backfill_chunk=8192)
    follower = RunFollower(str(root), options=options, diagnosis=lambda: diag)
    sub = follower.subscribe()
    with follower:
        seen = collect(sub, has(HistoryLoaded))  # the file is open, its history being read
        append(folder / "controller.log", "live A\n")
        got = collect(sub, lambda ms: bool(lines_of(ms, "controller.log")))
        assert not has(HistoryComplete)(got)
        assert lines_of(got, "controller.log") == [(None, "live A")]  # its number is not known yet
        seen += got + collect(sub, has(HistoryComplete))
        loaded = [m for m in seen if isinstance(m, HistoryLoaded)]
        assert sum(len(m.lines) for m in loaded) == 20_000 and loaded[-1].done
        append(folder / "controller.log", "live B\n")
        got = collect(sub, lambda ms: bool(lines_of(ms, "controller.log")))
        assert lines_of(got, "controller.log") == [(20_002, "live B")]
        fed = diag.fed[f"{RUN1}/controller.log"]
        assert [n for n, _ in fed] == list(range(1, 20_003))
        assert fed[-2:] == [(20_001, "live A"), (20_002, "live B")]


def test_a_new_replica_file_is_picked_up_and_read_from_its_first_line(log_dir: Path) -> None:
    follower = RunFollower(str(log_dir), options=FAST)
    sub = follower.subscribe()
    with follower:
        collect(sub, has(HistoryComplete))
        (log_dir / RUN1 / "rollout_1.log").write_text("r1 line 1\nr1 line 2\n")
        got = collect(sub, lambda ms: len(lines_of(ms, "rollout_1.log")) == 2)
        appeared = [m.source for m in got if isinstance(m, FileAppeared)]
        assert [(s.role, s.index) for s in appeared] == [(Role.ROLLOUT, 1)]
        assert lines_of(got, "rollout_1.log") == [(1, "r1 line 1"), (2, "r1 line 2")]


def test_logs_latest_moving_to_a_new_run_is_followed(log_dir: Path) -> None:
    diag_made: list[RecordingDiagnosis] = []

    def factory() -> RecordingDiagnosis:
        diag_made.append(RecordingDiagnosis())
        return diag_made[-1]

    follower = RunFollower(str(log_dir), options=FAST, diagnosis=factory)
    sub = follower.subscribe()
    with follower:
        collect(sub, has(HistoryComplete))
        make_run(log_dir, RUN2, {"controller.log": "second run 1\n", "policy_0.log": ""})
        point_latest(log_dir, RUN2)
        got = collect(sub, lambda ms: len(lines_of(ms, f"{RUN2}/controller.log")) == 1)
        assert has(RunSwitched, run_name=RUN2, previous=RUN1)(got)
        switch = next(i for i, m in enumerate(got) if isinstance(m, RunSwitched))
        assert all(RUN2 in m.source.path for m in got[switch:] if isinstance(m, FileAppeared))
        assert lines_of(got, f"{RUN2}/controller.log") == [(1, "second run 1")]
        assert follower.run_name == RUN2
        wait_until(lambda: len(diag_made) == 2 and bool(diag_made[1].fed))
        assert diag_made[1].fed == {f"{RUN2}/controller.log": [(1, "second run 1")]}
        append(log_dir / RUN1 / "controller.log", "old run keeps writing\n")
        append(log_dir / RUN2 / "controller.log", "second run 2\n")
        got = collect(sub, lambda ms: len(lines_of(ms, f"{RUN2}/controller.log")) == 1)
        assert not lines_of(got, f"{RUN1}/controller.log")


def test_polling_mode_follows_the_same_changes(log_dir: Path) -> None:
    follower = RunFollower(str(log_dir), options=dataclasses.replace(FAST, poll=True))
    sub = follower.subscribe()
    with follower:
        assert follower.polling
        collect(sub, has(HistoryComplete))
        append(log_dir / RUN1 / "policy_0.log", "p3\n")
        (log_dir / RUN1 / "rollout_2.log").write_text("new\n")
        got = collect(sub, lambda ms: bool(lines_of(ms, "policy_0.log")) and bool(lines_of(ms, "rollout_2.log")))
        assert lines_of(got, "policy_0.log") == [(3, "p3")]
        assert lines_of(got, "rollout_2.log") == [(1, "new")]


def _truncated_and_rewritten(sub: Subscription, path: Path, text: str) -> list[Message]:
    """Copytruncate ``path`` and write ``text`` to it: the messages up to its first new lines, a
    truncation among them."""
    os.truncate(path, 0)
    append(path, text)
    got = collect(sub, lambda ms: bool(lines_of(ms, path.name)))
    assert has(FileReset, reason="truncated")(got)
    return got


def test_truncation_and_deletion_are_reported(log_dir: Path) -> None:
    follower = RunFollower(str(log_dir), options=FAST)
    sub = follower.subscribe()
    path = log_dir / RUN1 / "policy_0.log"
    with follower:
        collect(sub, has(HistoryComplete))
        got = _truncated_and_rewritten(sub, path, "after truncation\n")
        assert lines_of(got, "policy_0.log") == [(1, "after truncation")]
        path.unlink()
        collect(sub, has(FileReset, reason="deleted"))
        path.write_text("recreated\n")
        got = collect(sub, lambda ms: bool(lines_of(ms, "policy_0.log")))
        assert lines_of(got, "policy_0.log") == [(1, "recreated")]


@pytest.mark.parametrize("poll", [False, True], ids=["inotify", "polling"])
def test_a_file_truncated_and_regrown_to_the_size_read_is_read_again_once_quiet(log_dir: Path, poll: bool) -> None:
    # "p1\np2\n" and "p3\np4\n" are the same size: nothing in the size shows the truncation
    follower = RunFollower(str(log_dir), options=dataclasses.replace(FAST, poll=poll))
    sub = follower.subscribe()
    path = log_dir / RUN1 / "policy_0.log"
    with follower:
        collect(sub, has(HistoryComplete))
        got = _truncated_and_rewritten(sub, path, "p3\np4\n")
        assert lines_of(got, "policy_0.log") == [(1, "p3"), (2, "p4")]


def test_an_idle_partial_line_is_shown_then_superseded(log_dir: Path) -> None:
    follower = RunFollower(str(log_dir), options=FAST)
    sub = follower.subscribe()
    path = log_dir / RUN1 / "controller.log"
    with follower:
        collect(sub, has(HistoryComplete))
        append(path, "Downloading: 42%")
        got = collect(sub, lambda ms: any(isinstance(m, LinesAppended) and m.partial for m in ms))
        shown = next(m for m in got if isinstance(m, LinesAppended) and m.partial)
        assert shown.partial == "Downloading: 42%" and shown.lines == () and shown.first_lineno == 4
        append(path, " done\n")
        got = collect(sub, lambda ms: bool(lines_of(ms, "controller.log")))
        assert lines_of(got, "controller.log") == [(4, "Downloading: 42% done")]
        assert all(m.partial is None for m in got if isinstance(m, LinesAppended))


def _finding(n: int, replica: str = "policy_0") -> Finding:
    return Finding(
        id="replica_died",
        severity=Severity.CRITICAL,
        title="t",
        explanation="e",
        evidence=[Evidence(file="x", line=i, text="x") for i in range(1, n + 1)],
        data={"replica": replica},
    )


def test_findings_are_raised_once_updated_and_resolved(log_dir: Path) -> None:
    diag = RecordingDiagnosis()
    follower = RunFollower(str(log_dir), options=FAST, diagnosis=lambda: diag)
    sub = follower.subscribe({FindingRaised, FindingUpdated, FindingResolved})
    with follower:
        wait_until(lambda: diag.evaluations > 0)
        assert follower.status() is Status.OK
        diag.findings = [_finding(1)]
        got = collect(sub, lambda ms: len(ms) == 1)
        assert got == [FindingRaised(finding=_finding(1), key="replica_died@policy_0")]
        assert follower.status() is Status.CRITICAL
        n = diag.evaluations
        wait_until(lambda: diag.evaluations > n + 2)
        assert sub.get_nowait() is None  # unchanged: no message
        diag.findings = [_finding(2)]
        got = collect(sub, lambda ms: len(ms) == 1)
        assert got == [FindingUpdated(finding=_finding(2), key="replica_died@policy_0")]
        diag.findings = []
        got = collect(sub, lambda ms: len(ms) == 1)
        assert got == [FindingResolved(finding_id="replica_died", key="replica_died@policy_0", finding=_finding(2))]
        assert follower.status() is Status.OK and follower.open_findings() == []


def test_a_folder_without_a_run_yet_is_waited_on(tmp_path: Path) -> None:
    root = tmp_path / "logs"
    root.mkdir()
    follower = RunFollower(str(root), options=FAST)
    sub = follower.subscribe()
    with follower:
        collect(sub, has(HistoryComplete, files=0))
        make_run(root, RUN1, {"controller.log": "first\n"})
        point_latest(root, RUN1)
        got = collect(sub, lambda ms: bool(lines_of(ms, "controller.log")))
        assert lines_of(got, "controller.log") == [(1, "first")]


def test_a_busy_run_switches_to_size_scans_and_back_without_losing_lines(log_dir: Path) -> None:
    options = dataclasses.replace(FAST, busy_events_per_s=20, quiet_files_per_s=1, quiet_seconds=0.3)
    follower = RunFollower(str(log_dir), options=options)
    sub = follower.subscribe()
    path = log_dir / RUN1 / "rollout_0.log"
    with follower, open(path, "a") as f:
        collect(sub, has(HistoryComplete))
        n = 0
        deadline = time.monotonic() + 10
        while not follower.scanning:  # one write per line, as Python's logging does
            assert time.monotonic() < deadline, "never switched to size scans"
            n += 1
            f.write(f"line {n}\n")
            f.flush()
            time.sleep(0.002)
        for _ in range(50):
            n += 1
            f.write(f"line {n}\n")
            f.flush()
        got = collect(sub, lambda ms: (n, f"line {n}") in lines_of(ms, "rollout_0.log"), timeout=5)
        wait_until(lambda: not follower.scanning, timeout=5)  # quiet again: back to modify events
        f.write("after\n")
        f.flush()
        got += collect(sub, lambda ms: bool(lines_of(ms, "rollout_0.log")))
    assert lines_of(got, "rollout_0.log") == [(k, f"line {k}") for k in range(1, n + 1)] + [(n + 1, "after")]


def test_an_unreadable_file_is_reported_once(log_dir: Path) -> None:
    from a1x_diagnostics.live._osfs import OsFileSystem, OsHandle

    class Refusing(OsFileSystem):  # as open(2) answers EACCES: running as root cannot show it
        def open(self, path: str) -> OsHandle | None:
            return None if path.endswith("rollout_5.log") else super().open(path)

    (log_dir / RUN1 / "rollout_5.log").write_text("x\n")
    follower = RunFollower(str(log_dir), options=FAST, fs=Refusing())
    sub = follower.subscribe({FollowError, LinesAppended})
    with follower:
        got = collect(sub, lambda ms: any(isinstance(m, FollowError) for m in ms))
        append(log_dir / RUN1 / "rollout_0.log", "still followed\n")
        got += collect(sub, lambda ms: bool(lines_of(ms, "rollout_0.log")))
    errors = [m for m in got if isinstance(m, FollowError)]
    assert len(errors) == 1 and "rollout_5.log: cannot be read" in errors[0].message


def test_a_quiet_unterminated_last_line_reaches_the_diagnostics_once(log_dir: Path) -> None:
    diag = RecordingDiagnosis()
    follower = RunFollower(str(log_dir), options=FAST, diagnosis=lambda: diag)
    sub = follower.subscribe({LinesAppended, HistoryComplete})
    path = log_dir / RUN1 / "controller.log"
    key = f"{RUN1}/controller.log"
    with follower:
        collect(sub, has(HistoryComplete))
        append(path, "Killed")  # a process killed mid-line never writes the newline
        wait_until(lambda: (4, "Killed") in diag.fed.get(key, []))
        append(path, " by the OOM killer\nnext\n")
        collect(sub, lambda ms: (5, "next") in lines_of(ms, "controller.log"))
        wait_until(lambda: (5, "next") in diag.fed[key])
    assert diag.fed[key][3:] == [(4, "Killed"), (5, "next")]


def test_with_history_tail_a_files_history_comes_once_as_its_last_lines_and_the_diagnostics_see_all(
    tmp_path: Path,
) -> None:
    """What a view that keeps only tails asks for (the dashboard's line budget): each file's last lines,
    numbered, in one message once its history is read; every line still reaches the diagnostics."""
    root = tmp_path / "cosmos_logs"
    folder = make_run(root, RUN1, {"controller.log": "".join(f"c{i}\n" for i in range(1, 5001)),
                                   "policy_0.log": "p1\np2\n"})
    point_latest(root, RUN1)
    diag = RecordingDiagnosis()
    files_then: list[int] = []

    def tail(files: int) -> int:
        files_then.append(files)
        return 100

    options = dataclasses.replace(FAST, backfill_chunk=8192, history_tail=tail)  # the controller in ~3 chunks
    follower = RunFollower(str(root), options=options, diagnosis=lambda: diag)
    sub = follower.subscribe()
    with follower:
        got = collect(sub, has(HistoryComplete))
        loaded = [m for m in got if isinstance(m, HistoryLoaded)]
        (controller,) = [m for m in loaded if m.source.path.endswith("controller.log")]
        assert controller.done and controller.first_lineno == 4901
        assert controller.lines == tuple(f"c{i}" for i in range(4901, 5001))
        (policy,) = [m for m in loaded if m.source.path.endswith("policy_0.log")]
        assert (policy.first_lineno, policy.lines) == (1, ("p1", "p2"))
        assert set(files_then) == {2}  # sized once every file present at start was known
        assert [n for n, _ in diag.fed[f"{RUN1}/controller.log"]] == list(range(1, 5001))
        paths = {m.source.replica: m.path for m in got if isinstance(m, FileAppeared)}
        assert paths["controller"] == os.path.realpath(folder / "controller.log")


def test_history_progress_is_bytes_read_of_the_bytes_before_the_live_start(tmp_path: Path) -> None:
    root = tmp_path / "cosmos_logs"
    texts = {"controller.log": "".join(f"controller line {i}\n" for i in range(20_000)),
             "policy_0.log": "".join(f"policy line {i}\n" for i in range(5_000)), "rollout_0.log": ""}
    make_run(root, RUN1, texts)
    point_latest(root, RUN1)
    options = dataclasses.replace(FAST, backfill_chunk=8192)
    diag = RecordingDiagnosis(delay=0.01)  # 10 ms per 8 KB chunk: the 500 KB take many slices of 20 ms
    follower = RunFollower(str(root), options=options, diagnosis=lambda: diag)
    sub = follower.subscribe()
    seen: list[HistoryProgress] = []
    with follower:
        got: list[Message] = []
        while not has(HistoryComplete)(got):
            message = sub.get(timeout=10)
            assert message is not None
            got.append(message)
            if isinstance(message, HistoryProgress):
                seen.append(message)
    total = sum(len(t.encode()) for t in texts.values())
    assert len(seen) > 1 and {(m.bytes_total, m.files) for m in seen} == {(total, 2)}  # the empty file has none
    assert [m.bytes_read for m in seen] == sorted(m.bytes_read for m in seen)
    assert seen[-1].bytes_read == total
    assert not [m for m in got[got.index(next(m for m in got if isinstance(m, HistoryComplete))):]
                if isinstance(m, HistoryProgress)]
