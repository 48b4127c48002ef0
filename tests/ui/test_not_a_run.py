"""Input that is not a run is never called healthy: attach and watch refuse what --check calls
UNKNOWN, with its reason; log text reaches the terminal with its control bytes escaped."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.segment import Segment
from ui_helpers import run_async

from a1x_diagnostics.engine import check
from a1x_diagnostics.printable import printable
from a1x_tui.cli import main
from a1x_tui.ui import A1xApp
from a1x_tui.ui.logstore import LogStore
from a1x_tui.ui.target import RunTarget
from a1x_tui.ui.widgets.logview import LogView

BINARY = bytes(range(256)) * 8  # every byte: NUL, ESC, invalid UTF-8 sequences


def inputs(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("hello world\nnothing to see\n")
    (tmp_path / "blob.bin").write_bytes(BINARY)
    (tmp_path / "empty.toml").write_bytes(b"")
    (tmp_path / "texts").mkdir()
    (tmp_path / "texts" / "controller.log").write_text("not a cosmos line\n")
    return {p.name: p for p in tmp_path.iterdir()}


@pytest.mark.parametrize("name", ["empty", "notes.txt", "blob.bin", "empty.toml", "texts"])
def test_attach_refuses_what_check_calls_unknown_with_its_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    path = inputs(tmp_path)[name]
    report = check(path)
    assert report.exit_code == 3
    assert main(["attach", str(path)]) == 3  # the app never opens
    assert capsys.readouterr().err == f"a1x-tui attach: {report.summary}\n"


@pytest.mark.parametrize("name", ["notes.txt", "blob.bin", "empty.toml", "texts"])
def test_watch_refuses_them_too_and_exits_3(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    path = inputs(tmp_path)[name]
    assert main(["watch", str(path)]) == 3  # never followed, never ends OK
    captured = capsys.readouterr()
    assert captured.err == f"a1x-tui watch: {check(path).summary}\n" and captured.out == ""


def test_printable_escapes_control_bytes_and_keeps_text() -> None:
    line = BINARY.decode("utf-8", "replace")
    shown = printable(line)
    assert not any((ord(c) < 0x20 and c != "\t") or 0x7F <= ord(c) < 0xA0 for c in shown)
    assert printable("\x1b[31mred\x1b[0m") == "\\x1b[31mred\\x1b[0m"
    assert printable("step 3/30 · reward é 中\tok") == "step 3/30 · reward é 中\tok"


@run_async
async def test_the_log_view_shows_a_binary_file_escaped(tmp_path: Path) -> None:
    store = LogStore()
    text = BINARY.decode("utf-8", "replace")
    store.add_texts("blob.log", "blob", 1, text.split("\n"), history=True, done=True)
    app = A1xApp(target=RunTarget(follow=tmp_path, run_dir=None, config=None), live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        view = app.screen.query_one(LogView)
        view.set_source(store.files["blob.log"], show_labels=False)
        await pilot.pause()
        rows = [list(view.render_line(y)) for y in range(view.size.height)]
        drawn = "".join(segment.text for row in rows for segment in row if isinstance(segment, Segment))
    assert "\\x00\\x01\\x02" in drawn  # NUL, SOH, STX, as the file holds them
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in drawn)




def test_the_text_report_and_watch_print_evidence_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    from a1x_diagnostics.findings import Evidence, Finding, Severity
    from a1x_diagnostics.report import build_report, render
    from a1x_tui.commands.watch import _Printer

    finding = Finding(
        id="vllm_oom", severity=Severity.CRITICAL, title="t", explanation="x\x1b]0;pwned\x07",
        evidence=[Evidence(file="rollout_0.log", line=3, text="\x1b[31mCUDA out of memory\x1b[0m\x00")],
    )
    text = render(build_report(target="r", run=None, findings=[finding], checks=[], metrics={}, files=[]), "text")
    _Printer("text").finding_text("RAISED", "vllm_oom", finding)
    for out in (text, capsys.readouterr().out):
        assert "\\x1b[31mCUDA out of memory\\x1b[0m\\x00" in out and "\\x1b]0;pwned\\x07" in out
        assert not any(ord(c) < 0x20 and c not in "\t\n" for c in out)
