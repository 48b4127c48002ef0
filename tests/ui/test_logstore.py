"""The lines the log views show: numbering, history before live lines, the merged order, bounds."""

from __future__ import annotations

from a1x_tui.ui.logstore import MIN_PER_FILE, PER_FILE, RUN_BUDGET, LogStore, per_file_limit
from a1x_tui.ui.timestamps import line_level, line_time

COSMOS = "[cosmos] 2026-11-29 15:03:{s:02d},000 - cosmos - {level} - {msg}"


def cosmos(second: int, msg: str, level: str = "INFO") -> str:
    return COSMOS.format(s=second, level=level, msg=msg)


def test_live_lines_get_their_numbers_once_the_history_is_counted() -> None:
    store = LogStore()
    store.add_texts(
        "logs/policy_0.log", "policy_0", None, [cosmos(10, "live a"), cosmos(11, "live b")], history=False, done=False
    )
    store.add_texts(
        "logs/policy_0.log",
        "policy_0",
        1,
        [cosmos(1, "old 1"), cosmos(2, "old 2"), cosmos(3, "old 3")],
        history=True,
        done=True,
    )
    lines = store.files["logs/policy_0.log"]
    assert [ln.text[-5:] for ln in (lines[i] for i in range(len(lines)))] == [
        "old 1",
        "old 2",
        "old 3",
        "ive a",
        "ive b",
    ]
    assert [lines[i].lineno for i in range(len(lines))] == [1, 2, 3, 4, 5]
    assert lines.index_of(4) == 3


def test_an_exact_number_later_numbers_the_lines_before_it() -> None:
    store = LogStore()
    store.add_texts("c.log", "controller", None, ["a", "b"], history=False, done=False)
    store.add_texts("c.log", "controller", 42, ["c"], history=False, done=False)
    lines = store.files["c.log"]
    assert [lines[i].lineno for i in range(3)] == [40, 41, 42]


def test_the_merged_view_is_ordered_by_time_and_lines_without_a_stamp_follow_their_file() -> None:
    store = LogStore()
    store.add_texts("controller.log", "controller", 1, [cosmos(5, "c5"), cosmos(9, "c9")], history=False, done=False)
    store.add_texts(
        "rollout_0.log",
        "rollout_0",
        1,
        [cosmos(7, "r7"), "Traceback (most recent call last):"],
        history=False,
        done=False,
    )
    merged = [store.merged[i] for i in range(len(store.merged))]
    assert [(ln.label, ln.text[-2:]) for ln in merged] == [
        ("controller", "c5"),
        ("rollout_0", "r7"),
        ("rollout_0", "):"),
        ("controller", "c9"),
    ]


def test_memory_stays_bounded_by_one_budget_for_the_run_and_views_learn_what_was_dropped() -> None:
    store = LogStore(budget=150)
    names = ("a.log", "b.log", "c.log")
    for name in names:
        store.file(name, name[0])
    for start in range(0, 400, 50):
        for name in names:
            texts = [f"{name} {start + i + 1}" for i in range(50)]
            store.add_texts(name, name[0], start + 1, texts, history=False, done=False)
    for name in names:
        lines = store.files[name]
        assert len(lines) <= 50  # three files share the 150 lines
        assert lines.dropped == 400 - len(lines)
        assert lines[len(lines) - 1].text == f"{name} 400"
    assert len(store.merged) <= 150
    assert per_file_limit(193) == RUN_BUDGET // 193 and per_file_limit(3) == PER_FILE
    assert per_file_limit(1_000_000) == MIN_PER_FILE


def test_a_reset_file_starts_over_and_leaves_the_merged_view() -> None:
    store = LogStore()
    store.add_texts("a.log", "policy_0", 1, ["one", "two"], history=False, done=False)
    store.add_texts("b.log", "rollout_0", 1, ["three"], history=False, done=False)
    store.reset("a.log")
    assert len(store.files["a.log"]) == 0
    assert [store.merged[i].text for i in range(len(store.merged))] == ["three"]


def test_timestamps_and_levels_of_the_line_families() -> None:
    assert line_time("[rank0]:[cosmos] 2026-11-29 15:03:25,632 - cosmos - INFO - Step: 1/8") is not None
    assert line_time("2026-11-29T15:03:25.632+00:00 [a1x-tui] exit code 0") is not None
    # any fraction width and "Z", on Python 3.10 too (its fromisoformat reads 3 or 6 digits only)
    assert line_time("2026-11-29T15:03:25.6321Z x") == line_time("2026-11-29T15:03:25.632100+00:00 x")
    assert line_time("2026-11-29T15:03:25.1234567+00:00 x") == line_time("2026-11-29T15:03:25.123456+00:00 x")
    assert line_time("INFO 11-29 15:03:20 [gpu_worker.py:298] KV cache") is None
    assert line_level(cosmos(1, "boom", "ERROR")) == "error"
    assert line_level(cosmos(1, "careful", "WARNING")) == "warning"
    assert line_level(cosmos(1, "an Error: in an INFO message")) is None
    assert line_level("torch.OutOfMemoryError: CUDA out of memory") == "error"


def test_the_prefix_a_person_does_not_read_is_folded_to_time_and_level() -> None:
    from a1x_tui.ui.timestamps import fold

    line = "[rank0]:[cosmos] 2026-12-04 23:47:03,218 - cosmos - INFO - [Rollout] Generation done"
    folded = fold(line)
    assert folded.short == "23:47:03 I" and line[folded.start :] == "[Rollout] Generation done"
    assert fold("[rank3]:[cosmos] 2026-12-04 23:47:03,218 - cosmos - ERROR - boom").short == "23:47:03 E r3"
    assert fold("[rank3]:[cosmos] 2026-12-04 23:47:03,218 - cosmos - ERROR - boom").level == "error"
    stage = fold("2026-11-29T15:03:25.632+00:00 [a1x-tui] exit code 0")
    assert stage.short == "15:03:25" and stage.ts is not None
    assert fold("[rank0]:Traceback (most recent call last):")[1:] == ("error", "", 8)
    assert fold("INFO 11-29 15:03:20 [gpu_worker.py:298] KV cache") == (None, None, "", 0)


def test_the_merged_view_full_leaves_out_lines_older_than_all_it_keeps() -> None:
    store = LogStore(budget=100)
    store.add_texts("live.log", "policy_0", 1, [cosmos(50, f"new {i}") for i in range(100)], history=False, done=False)
    version = store.merged.version
    store.add_texts("old.log", "rollout_0", 1, [cosmos(1, "old")] * 30, history=True, done=True)
    assert [store.merged[i].text[-5:] for i in (0, len(store.merged) - 1)] == ["new 0", "ew 99"]
    assert store.merged.version == version  # nothing was sorted in, nothing dropped
    assert len(store.files["old.log"]) == 30  # the file itself keeps them
