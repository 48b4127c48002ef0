"""Fixtures for the supervisor tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from supervisor_helpers import World, build_world, clean_world


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = build_world(tmp_path)
    yield w
    clean_world(w)
