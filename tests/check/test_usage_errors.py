"""A bad command line: exit 3 (unknown, as monitoring plugins answer), the usage line and one line
naming the problem on stderr, nothing on stdout."""

from __future__ import annotations

import pytest

from a1x_tui.cli import COMMANDS, main


def _usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert lines[0].startswith("usage: a1x-tui")
    return lines[-1]


def test_a_bad_option_value_exits_3_with_the_usage(capsys: pytest.CaptureFixture[str]) -> None:
    last = _usage_error(["--check", "--format", "yaml", "x"], capsys)
    assert last.startswith("a1x-tui --check: error: argument --format: invalid choice: 'yaml'")


def test_a_missing_argument_of_a_command_exits_3(capsys: pytest.CaptureFixture[str]) -> None:
    last = _usage_error(["watch"], capsys)
    assert last == "a1x-tui watch: error: the following arguments are required: PATH"


def test_an_unknown_command_is_named_with_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    last = _usage_error(["bogus"], capsys)
    assert "unknown command 'bogus'" in last
    assert all(name in last for name in COMMANDS)


def test_an_unknown_option_exits_3(capsys: pytest.CaptureFixture[str]) -> None:
    assert "unrecognized arguments: --bogus" in _usage_error(["--bogus"], capsys)


def test_help_and_version_still_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--version"], ["lint", "--help"]):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 0
    assert "a1x-tui lint" in capsys.readouterr().out
