"""The real CLI, as a user or an agent runs it: exit codes, stdout = report only, JSON schema, secrets."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from a1x_diagnostics.catalog import CATALOG
from a1x_diagnostics.findings import Report

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "a1x_diagnostics" / "examples"


def a1x(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "a1x_tui", "--check", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, **(env or {})},
        timeout=60,
        check=False,
    )


def test_healthy_example_exits_0_with_perfdata() -> None:
    p = a1x("--example", "healthy")
    assert p.returncode == 0, p.stdout + p.stderr
    first = p.stdout.splitlines()[0]
    assert first.startswith("A1X-TUI OK - completed: no problem found (step 8/8) | ")
    assert "outcome: completed — training completed (step 8/8)" in p.stdout
    assert "'step'=8" in first and "'pending_rollouts'=" in first
    assert "metrics: step 8/8" in p.stdout
    # the checks that found nothing: one line, and each on its own line with --verbose
    summary = next(ln for ln in p.stdout.splitlines() if ln.endswith(": --verbose lists them"))
    assert summary.startswith(tuple(f"{n} checks ok" for n in range(20, 60))) and "[+]" not in p.stdout
    verbose = a1x("--example", "healthy", "--verbose").stdout
    assert "[+] replica_died ok" in verbose and "--verbose lists them" not in verbose
    assert verbose.splitlines()[0] == p.stdout.splitlines()[0]


def test_findings_come_first_most_severe_first_with_evidence_and_fix() -> None:
    lines = a1x("--example", "sick").stdout.splitlines()
    heads = [i for i, ln in enumerate(lines) if ln.startswith("[-] ")]
    checks = next(i for i, ln in enumerate(lines) if ln.endswith("--verbose lists them"))
    assert heads and max(heads) < checks  # every finding before the line of checks
    report = json.loads(a1x("--example", "sick", "--format", "json").stdout)
    severities = [f["severity"] for f in report["findings"]]
    assert severities == sorted(severities)  # "critical" < "warning"
    assert len(report["checks"]) > 30  # JSON keeps every check


def test_sick_example_exits_2_and_names_the_failures() -> None:
    p = a1x("--example", "sick")
    assert p.returncode == 2
    assert p.stdout.startswith("A1X-TUI CRITICAL - ")
    for finding_id in ("replica_died", "vllm_oom"):
        assert f"[-] {finding_id} {CATALOG[finding_id].title}" in p.stdout
    assert "rollout_0.log:" in p.stdout  # evidence as file:line: text


def test_example_list_and_unknown_example() -> None:
    p = a1x("--example")
    assert p.returncode == 0
    assert {"healthy", "sick"} <= set(p.stdout.split())
    p = a1x("--example", "nope")
    assert p.returncode == 3 and "no example 'nope'" in p.stderr


def test_json_output_validates_against_schema_and_round_trips() -> None:
    schema = json.loads(a1x("--schema").stdout)
    p = a1x("--example", "sick", "--format", "json")
    assert p.returncode == 2
    data = json.loads(p.stdout)  # stdout is exactly one JSON document
    import jsonschema  # in the dev extra: this test runs, never skips

    jsonschema.validate(data, schema)
    report = Report.model_validate(data)
    assert report.exit_code == 2 and report.status.value == "critical"
    assert {f.id for f in report.findings} >= {"replica_died", "vllm_oom"}
    assert all(f.evidence for f in report.findings)


def test_unknown_for_missing_path_still_prints_a_report(tmp_path: Path) -> None:
    p = a1x(str(tmp_path / "nothing-here"))
    assert p.returncode == 3
    assert p.stdout.startswith("A1X-TUI UNKNOWN - ")
    assert "no such file or folder" in p.stdout
    p = a1x(str(tmp_path / "nothing-here"), "--format", "json")
    assert json.loads(p.stdout)["status"] == "unknown"


def test_unknown_for_a_folder_without_cosmos_lines(tmp_path: Path) -> None:
    (tmp_path / "controller.log").write_text("hello\nnothing to see\n")
    p = a1x(str(tmp_path))
    assert p.returncode == 3
    assert "no Cosmos-RL line" in p.stdout


def test_timeout_gives_unknown() -> None:
    p = a1x("--example", "healthy", "--timeout", "0")
    assert p.returncode == 3
    assert "timed out" in p.stdout


def test_warning_exit_code_1(tmp_path: Path) -> None:
    run = tmp_path / "logs_20261129-145608"
    run.mkdir()
    lines = [
        f"[cosmos] 2025-06-11 09:00:{i:02d},000 - cosmos - INFO - Step: {i}/5, Reward Mean: -1.0000, "
        "Reward Std: 0.0000, Reward Max: -1.0000, Reward Min: -1.0000, Completion Length Mean: 1.00, "
        "Completion Length Max: 1.00, Average loss: 0.00000, Max loss: 0.00000, Learning rate: 2.00000e-06, "
        "Entropy: 0.41250, Effective Entropy: 0.41250, Grad Norm: 0.00000, KL Loss Avg: 0.00000, "
        "KL Loss Max: 0.00000, Iteration time: 4.70s."
        for i in range(1, 6)
    ]
    (run / "controller.log").write_text("\n".join(lines) + "\n")
    p = a1x(str(tmp_path))
    assert p.returncode == 1, p.stdout
    assert p.stdout.startswith("A1X-TUI WARNING - completed: grpo_collapse")


def test_stdout_carries_only_the_report(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[train\n")
    p = a1x("--example", "healthy", "--config", str(bad), "--format", "json")
    json.loads(p.stdout)  # the config problem did not leak into stdout
    assert "--config not used" in p.stderr


@pytest.mark.slow  # a1x-tui in subprocesses
def test_secrets_are_never_printed(tmp_path: Path) -> None:
    secret = "wandbkey0123456789abcdef0123456789abcdef"
    token = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"
    shutil.copytree(EXAMPLES / "sick", tmp_path / "run", symlinks=True)
    controller = tmp_path / "run" / "logs_20261129-145608" / "controller.log"
    controller.write_text(
        controller.read_text()
        + "[cosmos] 2025-06-11 09:16:00,000 - cosmos - ERROR - Failed to initialize wandb: 403 Forbidden: "
        f"permission denied for api key {secret}\n"
        "[cosmos] 2025-06-11 09:16:01,000 - cosmos - ERROR - Failed to load or parse config file /tmp/x.toml: "
        f"bad env {{'HF_TOKEN': '{token}', 'WANDB_API_KEY': '{secret}'}}.\n"
    )
    for fmt in ("text", "json"):
        p = a1x(str(tmp_path / "run"), "--format", fmt, env={"WANDB_API_KEY": secret, "HF_TOKEN": token})
        assert p.returncode == 2
        out = p.stdout + p.stderr
        assert "Failed to initialize wandb: 403 Forbidden" in out  # the evidence line itself is shown...
        assert "Failed to load or parse config file" in out
        assert secret not in out and token not in out  # ...without the secrets
    p = a1x(str(tmp_path / "run"))  # no secret in this process's environment: the patterns still mask them
    assert token not in p.stdout and "'HF_TOKEN': '***'" in p.stdout


def test_missing_logs_latest_link_falls_back_to_newest_run(tmp_path: Path) -> None:
    # symlinks may not survive packaging: the check must still find the run
    shutil.copytree(EXAMPLES / "sick", tmp_path / "run", symlinks=True)
    (tmp_path / "run" / "logs_latest").unlink()
    p = a1x(str(tmp_path / "run"))
    assert p.returncode == 2
    assert "run logs_20261129-145608" in p.stdout


TERMINAL_LIBRARIES = ("textual", "rich")
RECIPE_TOML = "tests/config/data/recipe_local_test.toml"


@pytest.mark.parametrize(
    ("argv", "exit_code"),
    [
        (["--check", "--example", "healthy"], 0),
        (["--check", "--example", "sick", "--format", "json"], 2),
        # the TOML's placeholder paths: a warning on a run that trained (CRITICAL needs a failure in the logs)
        (["--check", "--example", "healthy", "--config", RECIPE_TOML], 1),
        (["lint", RECIPE_TOML], 2),
        (["lint", RECIPE_TOML, "--format", "json"], 2),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else f"exit {value}",
)
@pytest.mark.slow  # a1x-tui in subprocesses, one per command
def test_the_headless_paths_never_import_textual_or_rich(argv: list[str], exit_code: int) -> None:
    """harlequin's habit (docs/architecture.md "Layers"): the report paths load no terminal library at all,
    checked in a fresh interpreter's sys.modules after the command has run."""
    code = (
        "import json, sys; from a1x_tui.cli import main; rc = main(json.loads(sys.argv[1])); "
        f"loaded = sorted(m for m in sys.modules if m.split('.')[0] in {TERMINAL_LIBRARIES!r}); "
        "assert not loaded, f'imported: {loaded}'; sys.exit(rc)"
    )
    command = [sys.executable, "-c", code, json.dumps(argv)]
    p = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=60, check=False)
    assert p.returncode == exit_code, p.stderr


def test_check_with_config_does_not_judge_this_shells_wandb_key(tmp_path: Path) -> None:
    """The run's environment is not the checking shell's: the logs say whether W&B worked."""
    toml = tmp_path / "run.toml"
    shutil.copy(REPO / "tests" / "config" / "data" / "recipe_local_test.toml", toml)
    env = {k: v for k, v in os.environ.items() if k not in ("WANDB_API_KEY", "WANDB_MODE")}
    p = subprocess.run(
        [sys.executable, "-m", "a1x_tui", "--check", str(EXAMPLES / "healthy"), "--config", str(toml),
         "--format", "json"],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=60, check=False,
    )
    ids = {f["id"] for f in json.loads(p.stdout)["findings"]}
    assert "wandb_key_missing" not in ids
    assert "placeholder_path" in ids  # the config findings themselves are still there


@pytest.mark.slow  # a1x-tui in subprocesses
def test_a_config_that_cannot_be_read_is_a_note_of_the_report_itself(tmp_path: Path) -> None:
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    note = f"--config not used: {binary}: not UTF-8 text: is this a TOML file?"
    text = a1x("--example", "healthy", "--config", str(binary))
    assert f"note: {note}" in text.stdout.splitlines()
    for target in (str(EXAMPLES / "healthy"), str(tmp_path / "no-such-run")):  # an UNKNOWN report too
        report = json.loads(a1x(target, "--config", str(binary), "--format", "json").stdout)
        assert note in report["notes"]


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_the_program_prints_the_whole_report_to_a_file_before_it_leaves(tmp_path: Path, fmt: str,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """``a1x-tui --check`` leaves without the interpreter's teardown (``cli.entry``, ``os._exit``): what
    it wrote to a file (block-buffered, unlike a terminal) must all be there, with its exit code."""
    from a1x_tui.cli import main

    assert main(["--check", str(EXAMPLES / "sick"), "--format", fmt]) == 2
    expected = capsys.readouterr().out
    out = tmp_path / "report"
    with out.open("w") as f:
        code = subprocess.run([sys.executable, "-m", "a1x_tui", "--check", str(EXAMPLES / "sick"), "--format", fmt],
                              stdout=f, stderr=subprocess.PIPE, cwd=REPO, timeout=60, check=False).returncode
    assert code == 2

    def unstamped(text: str) -> str:
        return re.sub(r'"generated_at": ?"[^"]*"', "", text)

    assert unstamped(out.read_text()) == unstamped(expected) and len(expected) > 2000
