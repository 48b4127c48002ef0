"""The UI tests run with a fixed time zone (clock texts in snapshots) and no colour overrides."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ["TZ"] = "UTC"
time.tzset()
os.environ.pop("NO_COLOR", None)


@pytest.fixture
def run_dir(tmp_path: Path) -> Iterator[Path]:
    """A run directory of ours (run.toml, state.json) with no supervisor running."""
    run = tmp_path / "runs" / "20261129-150000-motion"
    (run / "logs").mkdir(parents=True)
    (run / "stages").mkdir()
    (run / "run.toml").write_text("# a test run\n", encoding="utf-8")
    (run / "state.json").write_text("{}\n", encoding="utf-8")
    yield run
