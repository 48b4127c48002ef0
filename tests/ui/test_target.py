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


def test_a_closed_loop_run_of_ours_follows_its_alpagym_run_folders(tmp_path: Path) -> None:
    """issue 19: a supervised alpagym run keeps the host's run folders under <run>/alpagym; attach follows
    them (the newest, read closed-loop) and stays controllable; --check of the run dir reads the same."""
    import shutil

    from a1x_diagnostics.engine import check
    from a1x_supervisor.launch import prepare_run_dir
    from a1x_supervisor.spec import parse_spec

    spec = parse_spec(f"""pipeline = "alpagym"
[paths]
workspace = "{tmp_path / 'ws'}"
model_dir = "{tmp_path / 'ckpt'}"
export_dir = "{tmp_path / 'export'}"
[alpagym]
release_dir = "{tmp_path / 'release'}"
""", base=tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    prepare_run_dir(spec, run_dir)
    fixture = next((Path(__file__).resolve().parents[1] / "fixtures" / "alpagym" / "reward_hacking").iterdir())
    shutil.copytree(fixture, run_dir / "alpagym" / fixture.name)
    target = resolve_target(run_dir)
    assert target.controllable and target.follow == run_dir / "alpagym"
    report = check(run_dir)
    assert "reward_hacking" in {f.id for f in report.findings}
