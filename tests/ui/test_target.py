"""attach's targets: a run of ours is controllable, anything else read-only; bad paths say why in a line."""

from __future__ import annotations

from pathlib import Path

import pytest
from ui_helpers import COLLAPSE_RUN

from a1x_tui.ui.target import TargetError, resolve_target


def test_a_run_directory_of_ours_is_controllable_and_its_toml_is_known(run_dir: Path) -> None:
    target = resolve_target(run_dir / "logs")
    assert target.controllable and target.run_dir == run_dir
    assert target.config == run_dir / "config" / "train.toml"


def test_a_cosmos_log_folder_is_read_only(tmp_path: Path) -> None:
    toml = tmp_path / "t.toml"
    toml.write_text("", encoding="utf-8")
    target = resolve_target(COLLAPSE_RUN, toml)
    assert not target.controllable and target.follow == COLLAPSE_RUN and target.config == toml


def test_bad_paths_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(TargetError, match="no such file or folder"):
        resolve_target(tmp_path / "missing")
    with pytest.raises(TargetError, match="--config is not a file"):
        resolve_target(COLLAPSE_RUN, tmp_path / "missing.toml")
