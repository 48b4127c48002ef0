"""`a1x-tui lint` and `a1x-tui fix`: exit codes, JSON report, diff on stdout, one-line refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from config_helpers import JOINT, MOTION, text_of, variant

from a1x_diagnostics.findings import Report
from a1x_tui.cli import main


@pytest.fixture(autouse=True)
def _no_wandb_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.delenv("ALPAMAYO_MODEL_DIR", raising=False)
    monkeypatch.delenv("TRAIN_OUTPUT_DIR", raising=False)


def _write(tmp_path: Path, text: str, name: str = "recipe.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "code"),
    [
        (variant(MOTION), 0),
        (variant(MOTION, {"logging.logger": ["console", "wandb"]}), 1),
        (text_of(MOTION), 2),
    ],
)
def test_lint_exit_codes_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, code: int) -> None:
    path = _write(tmp_path, text)
    assert main(["lint", str(path), "--gpus", "8", "--format", "json"]) == code
    report = Report.model_validate_json(capsys.readouterr().out)
    assert report.kind == "lint" and report.exit_code == code and report.target == str(path)
    assert {c.id for c in report.checks} >= {"placeholder_path", "insufficient_gpus", "grpo_became_sft"}


def test_lint_text_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, text_of(JOINT))
    assert main(["lint", str(path), "--gpus", "4"]) == 2
    out = capsys.readouterr().out
    first, *rest = out.splitlines()
    assert first == "LINT CRITICAL: 3 critical, 2 warning in recipe.toml"
    assert f'  > {path}:57: model_name_or_path = "/path/to/converted_alpamayo_model"' in rest
    assert f"  apply: a1x-tui fix {path} --finding grader_missing" in rest
    assert "[ ] duplicate_samples (single node: prompt routing cannot duplicate samples across nodes)" in rest


def test_lint_unreadable_is_unknown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", str(tmp_path / "nope.toml"), "--format", "json"]) == 3
    report = Report.model_validate_json(capsys.readouterr().out)
    assert report.status.value == "unknown" and "cannot read" in report.summary


def test_lint_broken_toml_is_a_critical_finding_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, "[train]\nepoch = 15\noutput_dir = /x\n")
    assert main(["lint", str(path), "--format", "json"]) == 2
    (finding,) = Report.model_validate_json(capsys.readouterr().out).findings
    assert finding.id == "toml_rejected"  # Cosmos-RL's own parser decides (docs/reference/cosmos-rl.md §8.1)
    assert (finding.evidence[0].line, finding.evidence[0].text) == (3, "output_dir = /x")


def test_lint_never_prints_a_secret_quoted_from_the_toml(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, '[logging]\napi_key = "0123456789abcdef0123" x\n')
    for fmt in ("text", "json"):
        assert main(["lint", str(path), "--format", fmt]) == 2
        out = capsys.readouterr().out
        assert "api_key" in out and "0123456789abcdef0123" not in out


def test_lint_rejects_bad_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["lint", "x.toml", "--gpus", "0"])
    assert info.value.code == 3  # a usage error is unknown (3), never critical
    assert "must be at least 1" in capsys.readouterr().err


def test_fix_dry_run_prints_the_diff_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, text_of(MOTION))
    assert main(["fix", str(path), "--finding", "wandb_key_missing"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("--- a/recipe.toml\n+++ b/recipe.toml\n")
    assert "+logger = ['console']" in captured.out
    assert "--apply" in captured.err
    assert path.read_text(encoding="utf-8") == text_of(MOTION)


def test_fix_apply_with_a_bare_set_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = variant(MOTION, {"policy.model_name_or_path": "/path/to/converted_alpamayo_model"})
    path = _write(tmp_path, text)
    assert main(["fix", str(path), "--finding", "placeholder_path", "--set", "/models/a15", "--apply"]) == 0
    assert 'model_name_or_path = "/models/a15"' in path.read_text(encoding="utf-8")
    assert len(list(tmp_path.glob("recipe.toml.*.bak"))) == 1
    assert "lint now: LINT OK" in capsys.readouterr().err


def test_fix_refusal_is_one_line_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, text_of(MOTION))
    assert main(["fix", str(path), "--finding", "placeholder_path", "--apply"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--set train.output_dir=VALUE" in err
    assert path.read_text(encoding="utf-8") == text_of(MOTION)


def test_fix_json_and_typed_set_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, variant(MOTION, {"rollout.gpu_memory_utilization": 0.99}))
    argv = [
        "fix",
        str(path),
        "--finding",
        "gpu_memory_utilization_range",
        "--set",
        "rollout.gpu_memory_utilization=0.75",
        "--format",
        "json",
    ]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["applied"] is False and "+gpu_memory_utilization = 0.75" in out["diff"]
    assert out["after"]["status"] == "ok"


def test_fix_from_a_saved_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, variant(MOTION))
    report = {
        "kind": "check",
        "target": "logs",
        "status": "warning",
        "exit_code": 1,
        "summary": "s",
        "findings": [
            {
                "id": "rollout_buffer_growth",
                "severity": "warning",
                "title": "t",
                "explanation": "e",
                "evidence": [{"file": "controller.log", "line": 3, "text": "Stat: ..."}],
                "fixes": [{"path": "rollout.batch_size", "current": 2, "proposed": 1, "why": "slower rollouts"}],
            }
        ],
    }
    saved = _write(tmp_path, json.dumps(report), "report.json")
    assert main(["fix", str(path), "--finding", "rollout_buffer_growth", "--report", str(saved)]) == 0
    assert "-batch_size = 2\n+batch_size = 1\n" in capsys.readouterr().out


def test_fix_bad_inputs_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fix", str(tmp_path / "none.toml"), "--finding", "x"]) == 2
    path = _write(tmp_path, text_of(MOTION))
    assert main(["fix", str(path), "--finding", "x", "--report", str(tmp_path / "none.json")]) == 2
    assert "not a readable a1x-tui JSON report" in capsys.readouterr().err


def test_fix_apply_with_nothing_to_change_writes_nothing_and_keeps_no_backup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, variant(MOTION))
    finding = {"id": "rollout_buffer_growth", "severity": "warning", "title": "t", "explanation": "e",
               "evidence": [{"file": "controller.log", "line": 3, "text": "Stat: ..."}],
               "fixes": [{"path": "rollout.batch_size", "current": 2, "proposed": 1, "why": "slower rollouts"}]}
    report = {"kind": "check", "target": "logs", "status": "warning", "exit_code": 1, "summary": "s",
              "findings": [finding]}
    saved = _write(tmp_path, json.dumps(report), "report.json")
    args = ["fix", str(path), "--finding", "rollout_buffer_growth", "--report", str(saved), "--apply"]
    assert main(args) == 0
    first = capsys.readouterr()
    assert "+batch_size = 1\n" in first.out and "wrote" in first.err
    after_first = sorted(p.name for p in tmp_path.iterdir())
    text = path.read_text()
    assert main(args) == 0  # the same fix again: the file already says it
    second = capsys.readouterr()
    assert second.out == ""
    assert second.err.strip() == (
        f"nothing to change: {path} already has what the fix for rollout_buffer_growth sets; not written"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == after_first  # no second .bak
    assert path.read_text() == text
    assert main([*args, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["applied"] is False
