"""Secrets are masked by their shapes, not only by this process's secret values: in --check, lint,
watch, status and the app's log view and findings."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from a1x_diagnostics.findings import Evidence, Finding, Severity
from a1x_diagnostics.report import MASK, redact

REPO = Path(__file__).resolve().parents[2]
WANDB_KEY = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c"  # 40 hex digits, the shape of a W&B API key
HF = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"
BEARER = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl"
SECRETS = (WANDB_KEY, HF, BEARER, "s3cretQueryValue", "local-" + WANDB_KEY, "hunter2pass")

LEAKY_LINES = [
    f"wandb: Appending key for api.wandb.ai to your netrc file: {WANDB_KEY}",
    f"wandb login {WANDB_KEY}",
    f"export WANDB_API_KEY={WANDB_KEY}",
    f"W&B local server key local-{WANDB_KEY}",
    f"huggingface_hub: using token {HF}",
    f"curl -H 'Authorization: Bearer {BEARER}' https://example.com",
    f"requests: headers={{'authorization': 'Bearer {BEARER}'}}",
    "GET https://hub.example.com/api/models?token=s3cretQueryValue&revision=main 401",
    "POST https://api.example.com/v1/x?api_key=s3cretQueryValue",
    "git clone https://user:hunter2pass@github.com/org/repo.git",
]


@pytest.mark.parametrize("line", LEAKY_LINES)
def test_each_secret_shape_is_masked_without_knowing_the_value(line: str) -> None:
    out = redact(line, secrets=[])
    assert not any(s in out for s in SECRETS), out
    assert MASK in out


@pytest.mark.parametrize(
    "line",
    [
        "[cosmos] 2025-06-09 22:14:29,220 - cosmos - INFO - [Controller] Stat: 12 samples, 2048 completion "
        "tokens, 3 pending rollouts, 4.0s elapsed",
        "Step: 3/9, Reward Mean: 0.25, Average loss: 0.10000, Learning rate: 2.00000e-06",
        "cosmos-rl at commit 747d1bd0123456789abcdef0123456789abcdef0 (not a W&B line)",
        "[Controller] allowed_outdated_steps raised: key=allowed_outdated_steps value=4",
        "max_token_len_per_mini_batch = 1024",
    ],
)
def test_ordinary_log_lines_are_left_alone(line: str) -> None:
    assert redact(line, secrets=[]) == line


def _clean_env() -> dict[str, str]:
    import os

    return {
        **{k: v for k, v in os.environ.items() if k not in ("WANDB_API_KEY", "HF_TOKEN")},
        "PYTHONPATH": str(REPO),
    }


@pytest.mark.slow  # a1x-tui in subprocesses
def test_check_and_lint_mask_secrets_this_shell_does_not_have(tmp_path: Path) -> None:
    shutil.copytree(REPO / "a1x_diagnostics" / "examples" / "sick", tmp_path / "run", symlinks=True)
    controller = next((tmp_path / "run").glob("logs_*/controller.log"))
    controller.write_text(
        controller.read_text()
        + "".join(
            f"[cosmos] 2025-06-11 09:16:0{i},000 - cosmos - ERROR - Failed to load or parse config file: {line}\n"
            for i, line in enumerate(LEAKY_LINES)
        )
    )
    toml = tmp_path / "recipe.toml"
    toml.write_text(
        (REPO / "tests" / "config" / "data" / "recipe_local_test.toml").read_text()
        + f"\n# W&B: wandb login {WANDB_KEY}\n# Authorization: Bearer {BEARER}\n"
    )
    for args in (
        ["--check", str(tmp_path / "run")],
        ["--check", str(tmp_path / "run"), "--format", "json"],
        ["--check", str(tmp_path / "run"), "--config", str(toml)],
        ["lint", str(toml), "--format", "json"],
        ["lint", str(toml)],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "a1x_tui", *args], capture_output=True, text=True, env=_clean_env(), timeout=120
        )
        out = done.stdout + done.stderr
        assert not [s for s in SECRETS if s in out], (args, [s for s in SECRETS if s in out])
        if args[0] == "--check":
            assert "Failed to load or parse config file" in done.stdout  # the lines are shown, masked


def test_watch_stream_masks_secret_shapes(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from a1x_diagnostics.live import FindingRaised
    from a1x_tui.commands.watch import _Printer

    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    finding = Finding(
        id="wandb_forbidden",
        severity=Severity.WARNING,
        title="W&B refused the run",
        explanation=f"wandb key {WANDB_KEY} was refused",
        evidence=[Evidence(file="policy_0.log", line=3, text=LEAKY_LINES[5])],
    )
    for fmt in ("text", "json"):
        _Printer(fmt).message(FindingRaised(finding=finding, key="wandb_forbidden"))
    out = capsys.readouterr().out
    assert WANDB_KEY not in out and BEARER not in out


def test_the_app_log_view_and_findings_mask_secret_shapes(monkeypatch: pytest.MonkeyPatch) -> None:
    from a1x_diagnostics.live import FindingRaised
    from a1x_tui.ui.feeds.follow import FollowFeed
    from a1x_tui.ui.logstore import LineMaker
    from a1x_tui.ui.messages import FindingsChanged

    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    lines = LineMaker().make("logs_1/policy_0.log", "policy_0", 1, LEAKY_LINES)  # live lines, history tails, excerpts
    shown = "\n".join(line.text for line in lines)
    assert not [s for s in SECRETS if s in shown]
    posted: list[object] = []
    feed = FollowFeed(Path("/nonexistent"), None, posted.append)
    finding = Finding(
        id="wandb_forbidden", severity=Severity.WARNING, title="t", explanation=LEAKY_LINES[1],
        evidence=[Evidence(file="policy_0.log", line=3, text=LEAKY_LINES[6])],
    )
    feed.flush([FindingRaised(finding=finding, key="wandb_forbidden")])
    changed = next(m for m in posted if isinstance(m, FindingsChanged))
    text = json.dumps({k: f.model_dump(mode="json") for k, f in changed.open.items()})
    assert WANDB_KEY not in text and BEARER not in text
