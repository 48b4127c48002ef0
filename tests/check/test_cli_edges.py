"""The command line at its edges: a typo gets a suggestion, a wrong kind of input says which command
takes it, lists say what their items are, the same folder gets the same answer from every command, and
running a command again that has nothing left to do is not an error."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from a1x_tui.cli import main

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "tests" / "config" / "data" / "recipe_local_test.toml"


def test_a_mistyped_command_gets_a_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["lnt", "x.toml"])
    assert info.value.code == 3
    assert "unknown command 'lnt': did you mean 'lint'?" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["frobnicate"])
    assert "did you mean" not in capsys.readouterr().err  # nothing close: no guess


def test_check_on_a_toml_points_to_lint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    toml = tmp_path / "train.toml"
    shutil.copy(RECIPE, toml)
    assert main(["--check", str(toml)]) == 3
    err = capsys.readouterr().err
    assert f"`a1x-tui lint {toml}`" in err and f"--config {toml}" in err


def test_the_example_list_says_what_each_example_is(capsys: pytest.CaptureFixture[str]) -> None:
    from a1x_diagnostics.examples import DESCRIPTIONS
    from a1x_tui.commands.check import example_names

    assert main(["--check", "--example"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == example_names()
    for line, name in zip(lines, example_names(), strict=True):
        assert DESCRIPTIONS[name] in line  # every example has its line (a new one without fails here)
    assert "out of GPU memory" in next(line for line in lines if line.startswith("sick"))


@pytest.mark.parametrize("what", ["empty folder", "spec only"])
def test_stop_and_status_agree_on_a_folder_that_is_no_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], what: str
) -> None:
    folder = tmp_path / "not-a-run"
    folder.mkdir()
    if what == "spec only":  # a run.toml and nothing else: never started
        (folder / "run.toml").write_text("# a spec\n", encoding="utf-8")
    assert main(["status", str(folder)]) == 3
    assert main(["stop", str(folder)]) == 3
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all("not a run directory" in line for line in err)


def test_fix_with_an_id_that_does_not_exist_lists_the_ids(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    toml = tmp_path / "train.toml"
    shutil.copy(RECIPE, toml)
    assert main(["fix", str(toml), "--finding", "prefetch"]) == 3
    err = capsys.readouterr().err
    assert "no finding id 'prefetch' (did you mean prefetch_misconfig?)" in err
    listed = err.split("; lint raises ", 1)[1].split(f" in {toml}")[0].split(", ")  # the ids with a fix here
    assert {"placeholder_path", "prefetch_misconfig"} <= set(listed), err
    assert main(["fix", str(toml), "--finding", "vllm_oom"]) == 1  # raised from logs: take it from a report
    assert "--report REPORT.json" in capsys.readouterr().err


def test_fixing_again_what_is_fixed_is_no_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    toml = tmp_path / "train.toml"
    shutil.copy(RECIPE, toml)
    assert main(["fix", str(toml), "--finding", "prefetch_misconfig", "--apply"]) == 0
    fixed = toml.read_text(encoding="utf-8")
    backups = sorted(tmp_path.glob("train.toml.*.bak"))
    assert len(backups) == 1
    capsys.readouterr()
    assert main(["fix", str(toml), "--finding", "prefetch_misconfig", "--apply"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and "already applied" in captured.err
    assert toml.read_text(encoding="utf-8") == fixed and sorted(tmp_path.glob("train.toml.*.bak")) == backups
    assert main(["fix", str(toml), "--finding", "prefetch_misconfig", "--apply", "--format", "json"]) == 0
    assert '"applied": false' in capsys.readouterr().out


def test_demo_help_names_the_cache_variable_it_honours(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["demo", "--help"])
    assert info.value.code == 0
    assert "$XDG_CACHE_HOME/a1x-tui/demo" in " ".join(capsys.readouterr().out.split())
