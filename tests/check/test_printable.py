"""Quoted log text never changes what the terminal shows around it (issue 37 point 7)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from a1x_diagnostics.printable import printable

REPO = Path(__file__).resolve().parents[2]
SICK = REPO / "a1x_diagnostics" / "examples" / "sick"

# Each reorders, hides or breaks the text it sits in, and none is printable.
HOSTILE = ["\u202e", "\u202a", "\u2066", "\u2069", "\u061c", "\u200e", "\u200b", "\u2060", "\ufeff", "\u2028",
           "\u2029", "\u00ad", "\x1b", "\x85"]


@pytest.mark.parametrize("char", HOSTILE)
def test_each_hostile_character_is_written_as_an_escape(char: str) -> None:
    out = printable(f"a{char}b")
    assert char not in out
    assert out.startswith("a\\") and out.endswith("b")


def test_ordinary_text_is_left_alone() -> None:
    text = "Step: 8/40, Reward: 0.5 — naïve 日本語 \t tab"
    assert printable(text) is text or printable(text) == text


def test_a_bidi_override_in_quoted_evidence_is_escaped_in_the_text_report(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(SICK, run, symlinks=True)
    log = next((run / "logs_latest").glob("rollout_0.log"))
    text = log.read_text(encoding="utf-8")
    hostile = "torch.OutOfMemoryError: CUDA out of memory.\u202e\u2066 Tried"
    assert "torch.OutOfMemoryError: CUDA out of memory. Tried" in text
    log.write_text(text.replace("torch.OutOfMemoryError: CUDA out of memory. Tried", hostile), encoding="utf-8")
    out = subprocess.run(
        [sys.executable, "-m", "a1x_tui", "--check", str(run)], capture_output=True, text=True, timeout=60
    ).stdout
    assert "out of memory.\\u202e\\u2066 Tried" in out  # the user sees what is in the file
    assert "\u202e" not in out and "\u2066" not in out
