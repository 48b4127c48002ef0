"""Explanations and evidence are cut at a word or a value, never inside a number."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st

from a1x_diagnostics.detectors._config import clip_text

REPO = Path(__file__).resolve().parents[2]
OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 MiB. GPU 0 has a total capacity of "
    "139.80 GiB of which 121.84 GiB is free. Process 1532 has 800.00 MiB memory in use. Process 1554 has"
)


def test_a_cut_falls_between_values_and_says_so() -> None:
    assert clip_text(OOM, 160).endswith("Process 1532 has …")
    assert clip_text(OOM, 130).endswith("of which 121.84 …")  # the number is whole: a space before the …
    assert clip_text(OOM, 500) == OOM and len(clip_text(OOM, 160)) <= 160


def test_a_long_token_is_cut_at_punctuation_and_only_a_huge_one_inside() -> None:
    assert clip_text("/data/checkpoints/step_1200/policy/model.safetensors", 30) == "/data/checkpoints/step_1200/…"
    assert clip_text("x" * 50, 10) == "x" * 9 + "…"


numbers = st.lists(
    st.one_of(
        st.integers(-10**6, 10**9).map(str),
        st.floats(-1e6, 1e6, allow_nan=False).map(lambda f: f"{f:.2f}"),
        st.sampled_from(["MiB", "GiB", "step", "rollout_0", "15:30:00", "1e-4", "(pid:", "1926)"]),
    ),
    min_size=1,
    max_size=60,
)


@given(numbers, st.integers(30, 200))  # half of 30 holds a space: no token is longer
@example(["0", "rollout_0", "rollout_0", "(pid:", "0.00"], 30)  # the cut once dropped the colon of "(pid:"
def test_every_token_kept_is_whole(tokens: list[str], limit: int) -> None:
    text = " ".join(tokens)
    clipped = clip_text(text, limit)
    assert len(clipped) <= limit
    if clipped == text:
        return
    kept = clipped.removesuffix("…").split()
    assert kept == tokens[: len(kept)]


def test_the_sick_example_no_longer_ends_a_number_early() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "a1x_tui", "--check", "--example", "sick"],
        capture_output=True, text=True, cwd=REPO, timeout=60, check=False,
    )
    text = " ".join(done.stdout.split())  # the report wraps explanations at 110 columns
    assert "Process 1532 has 8." not in text
    assert "Process 1532 has …. The launcher did not stop the run" in text
