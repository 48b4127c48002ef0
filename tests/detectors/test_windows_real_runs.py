"""Issue 34 point 3 on genuine Cosmos-RL runs (tests/fixtures/real-runs, labels in their INDEX.tsv): buffer growth
and weight-sync lag as their mechanism shows in the logs, at 0.4.4 and at 747d1bd."""

from __future__ import annotations

from pathlib import Path

import pytest

from a1x_diagnostics.engine import check

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real-runs"


def _ids(path: Path) -> set[str]:
    return {f.id for f in check(path).findings}


@pytest.mark.parametrize("version", ["cosmos-rl-0.4.4", "cosmos-rl-747d1bd"])
def test_a_6_step_run_pinned_at_a_raised_ceiling_is_buffer_growth(version: str) -> None:
    """allowed_outdated_steps = 16: pending 8 -> 128 before step 1's Step line (inside step 1: the line comes at
    its end) and 128 at every step after; 8 rollouts discarded during step 1."""
    report = check(REAL / version / "rollout_buffer_growth")
    finding = next(f for f in report.findings if f.id == "rollout_buffer_growth")
    assert "at every step, from step 1's start" in finding.explanation
    assert "128 pending rollouts = 16 steps of data" in finding.explanation
    assert finding.data["discarded"] == 8 and finding.data["saturated_steps"] == 6
    assert [(f.path, f.current, f.proposed) for f in finding.fixes] == [
        ("train.train_policy.allowed_outdated_steps", 16, 4)]
    assert report.status.value == "warning"


@pytest.mark.parametrize("run", ["shutdown_hang", "grpo_collapse_disaggregated", "healthy", "grpo_collapse"])
def test_a_buffer_at_the_default_ceiling_is_healthy(run: str) -> None:
    """Pending 28/32 with allowed_outdated_steps = 4 and staleness 4: the throttle doing its job."""
    report = check(REAL / "cosmos-rl-0.4.4" / run)
    assert "rollout_buffer_growth" not in {f.id for f in report.findings}


def test_747d1bd_runs_at_the_default_ceiling_are_healthy() -> None:
    for run in ("healthy", "grpo_collapse"):
        assert "rollout_buffer_growth" not in _ids(REAL / "cosmos-rl-747d1bd" / run)


def test_weight_sync_lag_from_its_symptoms_with_the_config_cause() -> None:
    """sync_weight_interval = 3, allowed_outdated_steps 0 raised to 2: prompts rejected while waiting for weights,
    receives every 3 steps; the loader's raise line is the cause, the sync interval the fix."""
    report = check(REAL / "cosmos-rl-0.4.4" / "weight_sync_lag")
    ids = {f.id for f in report.findings}
    assert {"weight_sync_lag", "outdated_steps_below_sync"} <= ids
    lag = next(f for f in report.findings if f.id == "weight_sync_lag")
    assert "waited for weights the policy had already trained" in lag.explanation
    assert any("prompt rejected" in e.text for e in lag.evidence)
    assert any("setting allowed_outdated_steps to 2" in e.text for e in lag.evidence)
    assert [(f.path, f.current, f.proposed) for f in lag.fixes] == [("train.sync_weight_interval", 3, 1)]
    below = next(f for f in report.findings if f.id == "outdated_steps_below_sync")
    assert [(f.path, f.proposed) for f in below.fixes] == [("train.train_policy.allowed_outdated_steps", 2)]


def test_weight_sync_lag_with_the_toml_keeps_the_users_tolerance() -> None:
    """With --config the TOML says allowed_outdated_steps = 0: only a sync every step ends the wait."""
    run = REAL / "cosmos-rl-0.4.4" / "weight_sync_lag"
    report = check(run, config_path=run / "weight_sync_lag.toml")
    lag = next(f for f in report.findings if f.id == "weight_sync_lag")
    assert [(f.path, f.current, f.proposed) for f in lag.fixes] == [("train.sync_weight_interval", 3, 1)]


def test_no_weight_sync_lag_where_weights_are_synced_every_step() -> None:
    for version, run in (("cosmos-rl-0.4.4", "healthy"), ("cosmos-rl-0.4.4", "rollout_buffer_growth"),
                         ("cosmos-rl-747d1bd", "healthy"), ("cosmos-rl-747d1bd", "rollout_buffer_growth")):
        assert "weight_sync_lag" not in _ids(REAL / version / run), (version, run)
