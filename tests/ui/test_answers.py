"""The wizard's answers make exactly the run specs `a1x-tui run --spec` accepts; the key is never in them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from a1x_tui.ui.answers import AnswerError, default_answers, free_space, spec_from_answers


def answers_in(tmp: Path):  # type: ignore[no-untyped-def]
    a = default_answers()
    a.paths = {name: str(tmp / name) for name in a.paths}
    return a


def test_defaults_make_a_valid_spec_with_absolute_paths(tmp_path: Path) -> None:
    spec = spec_from_answers(answers_in(tmp_path))
    assert spec.alpamayo_version == "1.5"  # type: ignore[attr-defined]
    assert spec.data.chunk_ids == [3116]  # type: ignore[attr-defined]
    assert spec.paths.workspace == tmp_path / "workspace"  # type: ignore[attr-defined]


def test_choices_reach_the_spec(tmp_path: Path) -> None:
    a = replace(
        answers_in(tmp_path),
        alpamayo_version="1",
        reward_mode="joint",
        chunk_ids="3116, 3117",
        clips="8",
        wandb=True,
        wandb_project="p",
        policy_replicas="2",
    )
    spec = spec_from_answers(a)
    assert (spec.alpamayo_version, spec.reward_mode) == ("1", "joint")  # type: ignore[attr-defined]
    assert spec.data.chunk_ids == [3116, 3117] and spec.data.num_reasoning_clips == 8  # type: ignore[attr-defined]
    assert spec.wandb.enabled and spec.wandb.project == "p"  # type: ignore[attr-defined]
    assert spec.replicas.policy == 2  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"chunk_ids": "31x6"}, "PAI chunk ids: 31x6 is not a whole number"),
        ({"chunk_ids": ""}, "data.chunk_ids is empty"),
        ({"clips": "0"}, "clips: must be at least 1"),
        ({"rollout_replicas": "two"}, "rollout replicas: two is not a whole number"),
    ],
)
def test_bad_answers_give_one_line(tmp_path: Path, change: dict[str, str], message: str) -> None:
    with pytest.raises(AnswerError) as caught:
        spec_from_answers(replace(answers_in(tmp_path), **change))
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_cluster_compute_takes_the_slurm_answers(tmp_path: Path) -> None:
    a = replace(answers_in(tmp_path), compute="cluster", cluster={"partition": "batch", "nodes": "5", "time": ""})
    spec = spec_from_answers(a)
    assert spec.cluster.partition == "batch" and spec.cluster.nodes == 5  # type: ignore[attr-defined]


def test_free_space_is_measured_on_the_nearest_existing_folder(tmp_path: Path) -> None:
    assert "GB free" in free_space(str(tmp_path))
    assert free_space(str(tmp_path / "not" / "yet")).endswith("(new)")
    assert free_space("") == ""


def test_every_wrong_answer_is_named_with_its_field(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    a = replace(answers_in(tmp_path), chunk_ids="3116 x", rollout_replicas="0")
    a.paths["model_dir"] = str(tmp_path / "file")
    with pytest.raises(AnswerError) as caught:
        spec_from_answers(a)
    assert [(p.field, p.message) for p in caught.value.problems] == [
        ("chunks", "PAI chunk ids: x is not a whole number"),
        ("rollout", "rollout replicas: must be at least 1"),
        ("path-model_dir", f"converted model: {tmp_path / 'file'} is a file, not a folder"),
    ]
    only_spec = replace(answers_in(tmp_path), chunk_ids="")
    with pytest.raises(AnswerError) as caught:
        spec_from_answers(only_spec)
    assert caught.value.field == "chunks"  # the spec's own refusal, pointed at its answer
