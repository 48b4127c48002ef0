"""The configure stage hands Cosmos-RL only a TOML its own parser reads as written (docs/reference/cosmos-rl.md
§8.1): a rendered or edited train.toml that toml 0.10.2 refuses does not verify, with the line that says why."""

from __future__ import annotations

import json
from pathlib import Path

from a1x_configs.render import TemplateChoices, render_toml
from a1x_supervisor.stages.configure import cosmos_unread, verify_configured


def _configured(tmp_path: Path, text: str) -> Path:
    entry = tmp_path / "entry.py"
    entry.write_text('SPEC = dict(hydra_config_name="alpamayo1_5_rvla_rl_pai")\n')
    toml_path = tmp_path / "train.toml"
    toml_path.write_text(text)
    record = tmp_path / "configure.json"
    record.write_text(
        json.dumps(
            {"spec_digest": "d", "toml": str(toml_path), "hydra_config_name": "alpamayo1_5_rvla_rl_pai",
             "entry_script": str(entry)}
        )
    )
    return record


def _rendered() -> str:
    return render_toml(
        TemplateChoices(alpamayo_version="1.5", reward_mode="motion", wandb=False, compute="local",
                        output_dir="/out", model_dir="/model")
    )


def _verify(record: Path) -> tuple[bool, str]:
    result = verify_configured(
        record, spec_digest="d", alpamayo_version="1.5", model_dir=Path("/model"), output_dir=Path("/out"),
        grader_dir=None,
    )
    return result.ok, result.reason


def test_a_rendered_toml_reads_the_same_in_cosmos_rl(tmp_path: Path) -> None:
    text = _rendered()
    assert cosmos_unread(text) is None
    assert _verify(_configured(tmp_path, text)) == (True, "train.toml written; hydra config alpamayo1_5_rvla_rl_pai")


def test_a_train_toml_cosmos_rl_refuses_does_not_verify(tmp_path: Path) -> None:
    text = _rendered().replace("optm_betas = [0.9, 0.999]", "optm_betas = [0.9, 1]")
    ok, reason = _verify(_configured(tmp_path, text))
    assert not ok
    assert "toml 0.10.2" in reason and "Not a homogeneous array" in reason and "toml_rejected" in reason
