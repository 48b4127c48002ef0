"""The logs a person reads, evidence one key away, and a dashboard honest while the history is read.

Issue 36 points 1-3 and issue 35 point 3 (attach): messages first at 80 columns, a sideways step that
keeps the line number and replica in place and does not survive escape, the whole line on enter;
enter on every evidence line of a recorded run opens its file at that line, the first time and every
time, also when that line is older than the tail kept in memory; a read-only attach opens on the
verdict and says "reading history, N %" wherever the history is still missing, never "no findings".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import OptionList, Static
from ui_helpers import FIXED_NOW, OOM_RUN, dashboard_messages, run_async

from a1x_diagnostics.live import finding_key
from a1x_tui.ui import A1xApp, resolve_target
from a1x_tui.ui.feeds.excerpt import read_lines
from a1x_tui.ui.logstore import Excerpt, FileLines
from a1x_tui.ui.messages import (
    FindingsChanged,
    HistoryProgress,
    HistoryRead,
    MetricsChanged,
    VerdictRead,
)
from a1x_tui.ui.screens.dashboard import DashboardScreen
from a1x_tui.ui.target import RunTarget
from a1x_tui.ui.widgets.findings import FindingsPanel
from a1x_tui.ui.widgets.logs import LogsPanel, cursor_line
from a1x_tui.ui.widgets.logview import LogView, message_text

RUN = Path("/runs/20261129-150000-motion")


def row_texts(view: LogView) -> list[str]:
    return [view.render_line(y).text for y in range(view.scrollable_content_region.height)]


async def wait_for(pilot: Any, ready: Any, seconds: float = 30.0) -> None:
    for _ in range(int(seconds / 0.1)):
        if ready():
            return
        await pilot.pause(0.1)
    raise AssertionError("not ready in time")


async def open_evidence(pilot: Any, screen: DashboardScreen, finding: int, evidence: int) -> None:
    """4, the finding, enter, the evidence line, enter: as a person does it."""
    await pilot.press("4")
    await pilot.pause()
    await pilot.press("home", *["down"] * finding, "enter")
    await pilot.pause()
    assert screen.focused is screen.query_one("#evidence", OptionList)
    await pilot.press("home", *["down"] * evidence, "enter")
    await pilot.pause()


# -- 36.2: evidence is one key away -------------------------------------------------------------------
@pytest.mark.slow  # more than a few seconds (the fast lane, README)
@run_async
async def test_enter_on_every_evidence_line_opens_its_file_at_that_line_first_time_and_every_time() -> None:
    app = A1xApp(target=resolve_target(OOM_RUN))  # live: the real verdict, follower and diagnostics
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        await wait_for(pilot, lambda: screen.live_diagnosed and screen.reading is None and screen.findings_open)
        panel = screen.query_one(FindingsPanel)
        logs = screen.query_one(LogsPanel)
        shown = [(i, k, ev) for i, s in enumerate(panel.shown) for k, ev in enumerate(s.finding.evidence)
                 if ev.line is not None]
        assert len(shown) >= 2
        for _ in range(2):  # every time, not only the first
            for i, k, ev in shown:
                await open_evidence(pilot, screen, i, k)
                assert screen.query_one("#tabs").active == "logs"  # type: ignore[attr-defined]
                line = cursor_line(logs)
                assert line is not None and (line.source, line.lineno) == (ev.file, ev.line)
                view = logs.view
                top = int(view.scroll_offset.y)
                assert top <= view.cursor < top + view.scrollable_content_region.height  # on screen
                assert not view.follow


@run_async
async def test_evidence_older_than_the_kept_tail_is_read_from_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("a1x_tui.ui.logstore.PER_FILE", 20)  # a file keeps its last 20 lines
    monkeypatch.setattr("a1x_tui.ui.logstore.MIN_PER_FILE", 20)
    app = A1xApp(target=resolve_target(OOM_RUN))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        await wait_for(pilot, lambda: screen.live_diagnosed and screen.reading is None and screen.findings_open)
        panel = screen.query_one(FindingsPanel)
        i, k, ev = next((i, k, ev) for i, s in enumerate(panel.shown) for k, ev in enumerate(s.finding.evidence)
                        if ev.line is not None)
        logs = screen.query_one(LogsPanel)
        kept = screen.store.files[ev.file]
        assert ev.line is not None and kept.index_of(ev.line) is None  # older than the tail
        await open_evidence(pilot, screen, i, k)
        await wait_for(pilot, lambda: logs.excerpt is not None)
        await pilot.pause()
        line = cursor_line(logs)
        assert line is not None and (line.source, line.lineno) == (ev.file, ev.line)
        assert ev.text.strip()[:60] in line.text
        assert "read from the file" in str(logs.query_one("#log-status", Static).render())
        await pilot.press("end")  # back to the tail, following
        await pilot.pause()
        assert logs.excerpt is None and logs.view.source is kept and logs.view.follow


# -- 36.3 and 35.3: honest while loading ----------------------------------------------------------------
def verdict_of(path: Path) -> VerdictRead:
    from a1x_diagnostics.engine import check

    report = check(path, now=FIXED_NOW)
    return VerdictRead(report, {finding_key(f): f for f in report.findings})


@run_async
async def test_a_read_only_attach_opens_on_the_verdict_and_says_reading_history_until_it_is_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(DashboardScreen, "start_feeds", lambda self: None)  # the messages come from this test
    monkeypatch.setattr(DashboardScreen, "_start_following", lambda self: None)
    app = A1xApp(target=RunTarget(follow=OOM_RUN, run_dir=None, config=None), clock=lambda: FIXED_NOW)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        await pilot.pause()
        tabs = screen.query_one("#tabs")
        banner = screen.query_one("#banner")

        def says(selector: str) -> str:
            return str(screen.query_one(selector, Static).render())

        assert tabs.active == "findings"  # type: ignore[attr-defined]
        screen.post_message(HistoryProgress(42, 193, 2**30))
        screen.post_message(FindingsChanged({}, {}))  # a run switch at start: not a diagnosis
        await pilot.pause()
        assert "reading history 42 %" in str(banner.render()) and "no findings" not in str(banner.render())
        assert "reading history, 42 % (193 files, 1,024 MiB)" in says("#verdict")
        assert not screen.query_one(FindingsPanel).display  # no "No findings" either
        assert "reading history, 42 %" in says("#plots-note")
        assert "reading history, 42 %" in says("#log-status")

        verdict = verdict_of(OOM_RUN)
        screen.post_message(verdict)
        await pilot.pause()
        assert set(screen.findings_open) == set(verdict.findings) and screen.query_one(FindingsPanel).display
        assert verdict.report is not None and verdict.report.outcome is not None
        assert f"run {verdict.report.outcome.state.value}" in says("#verdict")
        assert "live diagnosis once the history is read: 42 %" in says("#verdict")
        assert "reading history, 42 %" in says("#log-status")  # the logs' tails are not in yet
        assert "finding" in str(banner.render())

        screen.post_message(HistoryRead(193, 6_700_000, 9.5))
        screen.post_message(MetricsChanged({"step": 8}, verdict.report.outcome))
        screen.post_message(FindingsChanged(dict(verdict.findings), {}, first=True))
        await pilot.pause()
        assert screen.live_diagnosed and "reading history" not in says("#log-status")
        assert "live diagnosis" not in says("#verdict") and screen.query_one("#plots-note").has_class("hidden")
        assert not app._notifications  # the first evaluation's findings are the run's past, not news


# -- 36.1: logs a person reads -----------------------------------------------------------------------
async def logs_of_a_recorded_run(pilot: Any) -> tuple[DashboardScreen, LogsPanel]:
    screen = pilot.app.screen
    for message in dashboard_messages(RUN):
        screen.post_message(message)
    await pilot.pause()
    await pilot.press("2")
    await pilot.pause()
    return screen, screen.query_one(LogsPanel)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
@run_async
async def test_every_row_shows_its_message_at_80_and_120_columns(size: tuple[int, int]) -> None:
    app = A1xApp(target=RunTarget(follow=RUN, run_dir=RUN, config=None), live=False, clock=lambda: FIXED_NOW)
    async with app.run_test(size=size) as pilot:
        screen, logs = await logs_of_a_recorded_run(pilot)
        for key in ["*merged*", *screen.store.files]:
            logs._select(key)
            for position in ("home", "end"):
                await pilot.press(position)
                await pilot.pause()
                view = logs.view
                top = int(view.scroll_offset.y)
                number, label, short = view._columns()
                gutter = number + 1 + (label + 1 if label else 0) + (short + 1 if short else 0)
                assert gutter <= 32  # the columns before the message stay narrow
                for y, text in enumerate(row_texts(view)):
                    line = view.line_at(top + y)
                    if line is None or not message_text(line).strip():
                        continue
                    shown = text[gutter:].rstrip()
                    assert shown and shown == message_text(line)[: len(shown)], (key, position, text)
                    if "[cosmos]" in line.text:
                        assert "[cosmos]" not in text and line.short in text[:gutter]  # "15:03:53 I"


@run_async
async def test_right_steps_the_message_8_columns_keeping_number_and_replica_and_escape_undoes_it() -> None:
    app = A1xApp(target=RunTarget(follow=RUN, run_dir=RUN, config=None), live=False, clock=lambda: FIXED_NOW)
    async with app.run_test(size=(80, 24)) as pilot:
        _, logs = await logs_of_a_recorded_run(pilot)
        view = logs.view
        before = row_texts(view)
        await pilot.press("right")
        await pilot.pause()
        after = row_texts(view)
        assert view.shift == 8
        line = view.line_at(view.cursor)
        assert line is not None
        y = view.cursor - int(view.scroll_offset.y)
        gutter = before[y].index(line.message[:12])
        assert after[y][:gutter] == before[y][:gutter]  # line number, replica and time stay
        assert after[y][gutter:].rstrip() == before[y][gutter + 8 :].rstrip()[: len(after[y][gutter:].rstrip())]
        await pilot.press("escape")
        await pilot.pause()
        assert view.shift == 0 and row_texts(view) == before


@run_async
async def test_enter_shows_the_whole_line_with_its_prefix() -> None:
    app = A1xApp(target=RunTarget(follow=RUN, run_dir=RUN, config=None), live=False, clock=lambda: FIXED_NOW)
    async with app.run_test(size=(80, 24)) as pilot:
        _, logs = await logs_of_a_recorded_run(pilot)
        await pilot.press("slash", *"Step: 8/40", "enter")
        await pilot.pause()
        line = cursor_line(logs)
        assert line is not None and line.text.startswith("[cosmos] 2026-11-29 15:03:55,")
        await pilot.press("enter")
        await pilot.pause()
        detail = logs.query_one("#log-detail", Static)
        assert detail.display and "[cosmos] 2026-11-29 15:03:55," in str(detail.render())
        await pilot.press("escape")
        await pilot.pause()
        assert not detail.has_class("shown")


# -- reading lines back from a file --------------------------------------------------------------------
def test_lines_are_read_back_from_the_file_numbered_as_the_follower_numbers_them(tmp_path: Path) -> None:
    log = tmp_path / "rollout_0.log"
    log.write_bytes(b"".join(f"line {i}\r\n".encode() for i in range(1, 100_001)) + b"no newline at the end")
    assert read_lines(str(log), 1, 2) == ["line 1", "line 2"]
    assert read_lines(str(log), 99_999, 5) == ["line 99999", "line 100000", "no newline at the end"]
    assert read_lines(str(log), 200_000, 3) == []
    file = FileLines("logs/rollout_0.log", "rollout_0", str(log))
    from a1x_tui.ui.logstore import LineMaker

    excerpt = Excerpt(file, LineMaker().make(file.source, file.label, 50_000, read_lines(str(log), 50_000, 10)), 50_005)
    index = excerpt.index_of(50_005)
    assert index is not None and excerpt[index].text == "line 50005" and excerpt.index_of(60_000) is None
