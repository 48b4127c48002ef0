"""Fixes: the diff cures the finding and changes nothing else; the write is atomic and careful."""

from __future__ import annotations

import os
import re
import stat
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import tomlkit
from config_helpers import JOINT, MOTION, cosmos_keeps, load_text, text_of, variant
from hypothesis import given, settings
from hypothesis import strategies as st
from test_config_edit import assert_only_edited_lines_changed
from test_config_rules import FAILING

from a1x_diagnostics.config import FixRefused, apply_fix, load_config, make_context, plan_fix
from a1x_diagnostics.config.edit import _pruned, intended
from a1x_diagnostics.config.fixes import leftovers, write_atomically
from a1x_diagnostics.findings import Finding, Fix, Severity

QUIET = make_context(gpus_per_node=8, env={})


def _context(**kwargs: Any) -> Any:
    kwargs.setdefault("gpus_per_node", 8)
    kwargs.setdefault("env", {})
    return make_context(**kwargs)


def _check_plan(text: str, plan: Any) -> None:
    assert _pruned(tomlkit.parse(plan.new_text).unwrap()) == intended(tomlkit.parse(text).unwrap(), plan.edits)
    assert_only_edited_lines_changed(text, plan.new_text, plan.edits)


@pytest.mark.parametrize(("finding_id", "changes", "context", "fix_path"), [c for c in FAILING if c[3]])
def test_every_fixable_finding_is_cured_by_exactly_its_edits(
    finding_id: str, changes: dict[str, Any], context: dict[str, Any], fix_path: str
) -> None:
    text = variant(MOTION, changes)
    loaded = load_text(text)
    values = {}
    if finding_id in ("placeholder_path", "grader_missing"):
        values = {fix_path: "/data/chosen"}
    plan = plan_fix(loaded, finding_id, values=values, context=_context(**context))
    _check_plan(text, plan)
    assert finding_id not in {f.id for f in plan.after.findings}
    assert plan.diff.startswith("--- a/recipe.toml\n+++ b/recipe.toml\n")


@pytest.mark.slow  # hypothesis, many values
@settings(max_examples=25, deadline=None)
@given(st.text(min_size=1, max_size=40).filter(lambda s: not s.startswith(("<", "$")) and "/path/to/" not in s))
def test_user_value_lands_exactly_as_given(value: str) -> None:
    text = text_of(MOTION)
    values = {"train.output_dir": value, "policy.model_name_or_path": "/m"}
    if not cosmos_keeps(value):
        # Cosmos-RL's launcher or controller would read another string (toml 0.10.2's dump garbles it)
        with pytest.raises(FixRefused, match="Cosmos-RL's TOML parser"):
            plan_fix(load_text(text), "placeholder_path", values=values, context=QUIET)
        return
    plan = plan_fix(load_text(text), "placeholder_path", values=values, context=QUIET)
    _check_plan(text, plan)
    assert tomlkit.parse(plan.new_text)["train"]["output_dir"] == value


def test_shipped_shape_fixes_as_it_is() -> None:
    joint = load_config(JOINT)
    plan = plan_fix(joint, "wandb_key_missing", context=QUIET)
    assert plan.diff.count("\n-") == 1 and "-logger = ['console', 'wandb']\n+logger = ['console']\n" in plan.diff
    grader = plan_fix(
        joint, "grader_missing", values={"custom.alpamayo.reasoning_grading_model_path": "/g"}, context=QUIET
    )
    assert '+reasoning_grading_model_path = "/g"' in grader.diff
    motion = load_config(MOTION)  # no newline at the end of the file
    prefetch = plan_fix(motion, "prefetch_misconfig", context=QUIET)
    assert "-capacity = 16\n+capacity = 48\n" in prefetch.diff
    _check_plan(motion.text, prefetch)


def test_misspelled_dotted_key_is_renamed_in_place() -> None:
    text = text_of(MOTION).replace("dataset.split", "dataset.splt")
    plan = plan_fix(load_text(text), "unknown_toml_key", context=QUIET)
    assert plan.new_text == text_of(MOTION)


def test_placeholder_without_a_value_is_refused_with_one_line() -> None:
    with pytest.raises(FixRefused) as info:
        plan_fix(load_config(MOTION), "placeholder_path", context=QUIET)
    message = str(info.value)
    assert "\n" not in message and "--set train.output_dir=VALUE" in message


def test_refusals() -> None:
    loaded = load_text(variant(MOTION))
    with pytest.raises(FixRefused, match="no wandb_key_missing finding"):
        plan_fix(loaded, "wandb_key_missing", context=QUIET)
    with pytest.raises(FixRefused, match="not a key this fix changes"):
        plan_fix(load_config(MOTION), "wandb_key_missing", values={"train.epoch": 1}, context=QUIET)
    one_gpu = _context(gpus_per_node=1)
    with pytest.raises(FixRefused, match="no TOML change cures insufficient_gpus"):
        plan_fix(loaded, "insufficient_gpus", context=one_gpu)


def test_fix_that_does_not_cure_is_refused() -> None:
    loaded = load_text(variant(MOTION, {"train.train_policy.mini_batch": 5}))
    with pytest.raises(FixRefused, match="would still be raised"):
        plan_fix(loaded, "batch_not_divisible", values={"train.train_policy.mini_batch": 7}, context=QUIET)


def test_fix_that_adds_a_critical_finding_is_refused() -> None:
    loaded = load_text(variant(MOTION, {"policy.parallelism.dp_shard_size": 2}))
    with pytest.raises(FixRefused, match=r"new critical finding.*batch_not_divisible"):
        plan_fix(loaded, "recommended_value", values={"policy.parallelism.dp_shard_size": 5},
                 context=_context(compute="local", gpus_per_node=8))


def test_finding_from_a_log_report_can_be_applied() -> None:
    from_logs = Finding(
        id="rollout_buffer_growth",
        severity=Severity.WARNING,
        title="Rollouts outpace the policy",
        explanation="pending rollouts grow",
        evidence=[{"file": "controller.log", "line": 9, "text": "Stat: ..."}],
        fixes=[Fix(path="train.train_policy.allowed_outdated_steps", current=50, proposed=4, why="throttle")],
    )
    plan = plan_fix(load_text(variant(MOTION)), "rollout_buffer_growth", finding=from_logs, context=QUIET)
    assert "-allowed_outdated_steps = 50\n+allowed_outdated_steps = 4\n" in plan.diff


# --- the write ------------------------------------------------------------------------------


def _file(tmp_path: Path, text: str, mode: int = 0o640) -> Path:
    path = tmp_path / "recipe.toml"
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


def test_apply_writes_atomically_keeps_backup_and_permissions(tmp_path: Path) -> None:
    original = text_of(MOTION)
    path = _file(tmp_path, original)
    result = apply_fix(path, "wandb_key_missing", context=QUIET, now=datetime(2026, 3, 1, 12, 30, 5))
    assert result.backup == tmp_path / "recipe.toml.20260301-123005.bak"
    assert result.backup.read_text(encoding="utf-8") == original
    assert path.read_text(encoding="utf-8") == original.replace("['console', 'wandb']", "['console']")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["recipe.toml", "recipe.toml.20260301-123005.bak"]
    assert "wandb_key_missing" not in {f.id for f in result.after.findings}


def test_second_backup_in_the_same_second_does_not_overwrite_the_first(tmp_path: Path) -> None:
    path = _file(tmp_path, text_of(JOINT))
    when = datetime(2026, 3, 1, 12, 30, 5)
    first = apply_fix(path, "wandb_key_missing", context=QUIET, now=when).backup
    second = apply_fix(path, "prefetch_misconfig", context=QUIET, now=when).backup
    assert first != second and re.fullmatch(r"recipe\.toml\.20260301-123005-1\.bak", second.name)
    assert first.read_text(encoding="utf-8") == text_of(JOINT)


def test_apply_refuses_when_the_file_changed_since_it_was_read(tmp_path: Path) -> None:
    path = _file(tmp_path, text_of(MOTION))
    seen = load_config(path).sha256
    path.write_text(text_of(MOTION) + "\n# edited meanwhile\n", encoding="utf-8")
    with pytest.raises(FixRefused, match="changed since it was read"):
        apply_fix(path, "wandb_key_missing", expected_sha256=seen, context=QUIET)
    assert path.read_text(encoding="utf-8").endswith("# edited meanwhile\n")
    assert [p.name for p in tmp_path.iterdir()] == ["recipe.toml"]


def test_write_refuses_if_the_file_changes_before_the_rename(tmp_path: Path) -> None:
    path = _file(tmp_path, "a = 1\n")
    stale = load_text("a = 2\n").sha256
    with pytest.raises(FixRefused):
        write_atomically(path, "a = 3\n", expected_sha256=stale)
    assert path.read_text() == "a = 1\n"
    assert [p.name for p in tmp_path.iterdir()] == ["recipe.toml"]


def test_apply_through_a_symlink_replaces_the_target(tmp_path: Path) -> None:
    target = _file(tmp_path, text_of(MOTION))
    link = tmp_path / "link.toml"
    link.symlink_to(target)
    apply_fix(link, "wandb_key_missing", context=QUIET)
    assert link.is_symlink()
    assert "logger = ['console']\n" in target.read_text(encoding="utf-8")


def test_misspelled_capacity_is_renamed_and_resized_on_one_line() -> None:
    text = text_of(MOTION).replace("capacity = 16", "capacty = 16")
    plan = plan_fix(load_text(text), "prefetch_misconfig", context=QUIET)
    assert plan.new_text == text_of(MOTION).replace("capacity = 16", "capacity = 48")
    assert [(f.path, f.proposed) for f in plan.finding.fixes] == [
        ("custom.alpamayo.prefetch.capacty", None),
        ("custom.alpamayo.prefetch.capacity", 48),
    ]


# Each step of write_atomically, and the call a kill -9 is simulated at (os._exit in a forked child).
_KILL_POINTS = [
    ("writing the temporary file", "fsync", 1),
    ("before the backup", "link", 1),
    ("before the rename", "replace", 1),
    ("after the rename", "fsync", 2),
]


@pytest.mark.parametrize(("where", "call", "nth"), _KILL_POINTS, ids=[w for w, _, _ in _KILL_POINTS])
def test_a_kill_at_any_step_leaves_old_or_new_and_the_next_run_leaves_nothing_unused(
    tmp_path: Path, where: str, call: str, nth: int
) -> None:
    original = text_of(MOTION)
    path = _file(tmp_path, original)
    fixed = original.replace("['console', 'wandb']", "['console']")
    pid = os.fork()
    if pid == 0:  # the child dies on the nth call of os.<call>, as under kill -9: no cleanup runs
        real = getattr(os, call)
        seen = [0]

        def dying(*args: object, **kwargs: object) -> object:
            seen[0] += 1
            if seen[0] == nth:
                os._exit(9)
            return real(*args, **kwargs)

        setattr(os, call, dying)
        try:
            apply_fix(path, "wandb_key_missing", context=QUIET)
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 9, f"the child was not killed {where}"
    assert path.read_text(encoding="utf-8") in (original, fixed)
    load_config(path)  # parseable either way
    renamed = path.read_text(encoding="utf-8") == fixed

    # the next run: the fix if it is still needed (else nothing to change), and no debris
    result = apply_fix(path, "wandb_key_missing", context=QUIET) if not renamed else None
    if renamed:
        with pytest.raises(FixRefused, match="nothing to fix"):
            apply_fix(path, "wandb_key_missing", context=QUIET)
        leftovers(path)  # what a later fix --apply of another finding does first
    assert path.read_text(encoding="utf-8") == fixed
    names = sorted(p.name for p in tmp_path.iterdir())
    assert not [n for n in names if n.endswith(".tmp")], names
    backups = [tmp_path / n for n in names if n.endswith(".bak")]
    assert len(backups) == 1 and backups[0].read_text(encoding="utf-8") == original  # the one that was used
    if result is not None:
        assert backups[0] == result.backup
