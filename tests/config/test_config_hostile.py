"""Hostile input: no TOML, run spec or file type makes lint, fix, --check --config, watch --config or
preflight print a traceback or hang; absurd numbers are findings that name the key and the line."""

from __future__ import annotations

import contextlib
import json
import os
import typing
from pathlib import Path
from typing import Any

import pytest
import tomlkit
from config_helpers import MOTION, text_of, variant
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from a1x_diagnostics.config import FixRefused, load_config, plan_fix
from a1x_diagnostics.config.loader import _submodel
from a1x_diagnostics.config.report import lint_report
from a1x_diagnostics.config.schema import RecipeConfig
from a1x_diagnostics.engine import check
from a1x_tui.cli import main

REPO = Path(__file__).resolve().parents[2]
HEALTHY = REPO / "a1x_diagnostics" / "examples" / "healthy"
# Bounded, so CI stays fast: each example is a full lint (and plan) of a recipe-sized TOML.
FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _schema_paths(model: type[BaseModel] = RecipeConfig, prefix: str = "") -> list[str]:
    out: list[str] = []
    for name, info in model.model_fields.items():
        sub = _submodel(info.annotation)
        if sub is None and typing.get_origin(info.annotation) is typing.Annotated:
            sub = _submodel(typing.get_args(info.annotation)[0])
        out.append(prefix + name)
        if sub is not None:
            out += _schema_paths(sub, f"{prefix}{name}.")
    return out


KEYS = [*_schema_paths(), "custom.alpamayo.prefetch.capacity", "custom.alpamayo.reward.reasoning_weight",
        "train.train_policy.kl_beta", "policy.parallelism.bogus", "unknown_top"]
# The numbers the rules compute with, drawn as often as all the other keys together.
NUMERIC = [
    *(f"{role}.parallelism.{k}" for role in ("policy", "rollout")
      for k in ("n_init_replicas", "tp_size", "cp_size", "pp_size", "dp_shard_size", "dp_replicate_size")),
    "train.train_batch_per_replica", "train.train_policy.mini_batch", "custom.alpamayo.prefetch.capacity",
    "rollout.n_generation", "rollout.batch_size", "train.sync_weight_interval",
    "train.train_policy.allowed_outdated_steps", "rollout.gpu_memory_utilization",
]
EXTREMES = [0, -1, 1, 2, -2, 10**18, -(10**18), 2**63 - 1, 2**63, -(2**63) - 1, 10**30]
VALUES = st.one_of(
    st.sampled_from(EXTREMES),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(max_size=12),
    st.sampled_from(["/path/to/x", "$HOME", "<dir>", "grpo", "sft", "colocated", "wandb"]),
    st.lists(st.one_of(st.integers(), st.text(max_size=5)), max_size=3),
    st.dictionaries(st.sampled_from(["a", "tp_size", "capacity"]), st.integers(), max_size=2),
)
NUMBERS = st.one_of(st.sampled_from(EXTREMES), st.integers(-3, 16))
BASE = tomlkit.parse(variant(MOTION)).unwrap()


def _set(data: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, key = dotted.split(".")
    node = data
    for part in parents:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[key] = value


def _drop(data: dict[str, Any], dotted: str) -> None:
    *parents, key = dotted.split(".")
    node: Any = data
    for part in parents:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict):
        node.pop(key, None)


documents = st.builds(
    lambda changes, dropped: (changes, dropped),
    st.lists(
        st.one_of(st.tuples(st.sampled_from(NUMERIC), NUMBERS), st.tuples(st.sampled_from(KEYS), VALUES)), max_size=8
    ),
    st.lists(st.sampled_from(["train", "rollout", "policy", "custom", "logging", "train.train_policy",
                              "policy.parallelism", "rollout.parallelism", "custom.alpamayo"]), max_size=3),
)


def _document(tmp: Path, changes: list[tuple[str, Any]], dropped: list[str]) -> Path:
    data = json.loads(json.dumps(BASE, default=str))  # a deep copy of plain data
    for path in dropped:
        _drop(data, path)
    for path, value in changes:
        _set(data, path, value)
    out = tmp / "fuzz.toml"
    out.write_text(tomlkit.dumps(data), encoding="utf-8")
    return out


@pytest.mark.slow  # hypothesis, many documents
@FUZZ
@given(doc=documents, gpus=st.sampled_from([None, 1, 3, 8]), nodes=st.sampled_from([None, 1, 4]))
def test_any_document_lints_and_plans_its_fixes_without_an_exception(
    tmp_path_factory: pytest.TempPathFactory, doc: tuple[list[tuple[str, Any]], list[str]], gpus: int | None,
    nodes: int | None,
) -> None:
    path = _document(tmp_path_factory.mktemp("fuzz"), *doc)
    report = lint_report(path, gpus_per_node=gpus, nodes=nodes, env={})
    assert report.exit_code in (0, 1, 2, 3)
    if report.exit_code == 3 or any(c.id == "load" for c in report.checks):
        return  # not loadable: the report says so in one finding
    loaded = load_config(path)
    for finding in report.findings:
        if finding.fixes:
            with contextlib.suppress(FixRefused):  # refusing is an answer; an exception of another kind is not
                plan_fix(loaded, finding.id)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=documents)
def test_any_document_given_to_check_config_is_judged_or_noted(
    tmp_path_factory: pytest.TempPathFactory, doc: tuple[list[tuple[str, Any]], list[str]]
) -> None:
    path = _document(tmp_path_factory.mktemp("fuzz"), *doc)
    report = check(HEALTHY, config_path=path)
    assert report.exit_code in (0, 1, 2)
    assert not any(n.startswith("config lint failed") for n in report.notes), report.notes


@FUZZ
@given(data=st.binary(max_size=2048) | st.text(max_size=400).map(str.encode))
def test_arbitrary_bytes_are_one_clear_line(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("bytes") / "x.toml"
    path.write_bytes(data)
    report = lint_report(path, gpus_per_node=8, env={})
    if report.exit_code == 3:
        assert report.summary.startswith(f"LINT UNKNOWN: {path}")
    elif any(c.id == "load" for c in report.checks):
        assert report.findings[0].id in ("toml_rejected", "invalid_value")
        assert "\n" not in report.summary


@pytest.mark.parametrize(
    ("changes", "key"),
    [
        ({"policy.parallelism.pp_size": 0}, "policy.parallelism.pp_size"),
        ({"policy.parallelism.n_init_replicas": 10**18}, "policy.parallelism.n_init_replicas"),
        ({"rollout.parallelism.n_init_replicas": 10**18}, "rollout.parallelism.n_init_replicas"),
        ({"train.train_policy.mini_batch": 10**18}, "train.train_policy.mini_batch"),
        ({"policy.parallelism.dp_shard_size": -5}, "policy.parallelism.dp_shard_size"),
        ({"train.train_batch_per_replica": 0}, "train.train_batch_per_replica"),
        ({"custom.alpamayo.prefetch.capacity": 10**30}, "custom.alpamayo.prefetch.capacity"),
    ],
)
def test_absurd_numbers_are_an_invalid_value_naming_the_key_and_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], changes: dict[str, Any], key: str
) -> None:
    path = tmp_path / "recipe.toml"
    path.write_text(variant(MOTION, changes))
    code = main(["lint", str(path), "--gpus", "8", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 2
    finding = next(f for f in out["findings"] if f["id"] == "invalid_value")
    assert key in finding["explanation"]
    written = f"{key.rpartition('.')[2]} = {changes[key]}"
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if text.startswith(written))
    assert any(e["line"] == line for e in finding["evidence"]), finding["evidence"]
    # and --check with that TOML finishes, naming it: on these logs of a run that trained, as a note (the logs
    # refute a prediction that the run fails at load: docs/findings.md, its head)
    report = check(HEALTHY, config_path=path)
    assert any("invalid_value" in n and key in n for n in report.notes), report.notes
    assert not any(f.id == "invalid_value" for f in report.findings)


def test_a_fix_cures_an_absurd_number(tmp_path: Path) -> None:
    path = tmp_path / "recipe.toml"
    path.write_text(variant(MOTION, {"train.train_policy.mini_batch": 10**18}))
    assert main(["fix", str(path), "--finding", "invalid_value", "--apply"]) == 0
    assert "mini_batch = 1\n" in path.read_text()


@pytest.mark.timeout(60)
def test_a_fifo_is_refused_before_it_is_opened(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "recipe.toml"
    os.mkfifo(fifo)  # no writer: open() would block forever
    assert main(["lint", str(fifo)]) == 3
    out = capsys.readouterr()
    assert "not a regular file (a FIFO)" in out.out and str(fifo) in out.out
    assert main(["fix", str(fifo), "--finding", "invalid_value"]) == 2
    assert capsys.readouterr().err.strip() == f"{fifo}: not a regular file (a FIFO)"
    assert main(["--check", str(HEALTHY), "--config", str(fifo)]) == 0
    assert f"note: --config not used: {fifo}: not a regular file (a FIFO)" in capsys.readouterr().out
    good = tmp_path / "good.toml"
    good.write_text(text_of(MOTION))
    assert main(["fix", str(good), "--finding", "x", "--report", str(fifo)]) == 2
    assert "not a regular file (a FIFO)" in capsys.readouterr().err
    assert main(["preflight", "--spec", str(fifo)]) == 3
    assert "not a regular file (a FIFO)" in capsys.readouterr().err


def test_lint_refuses_a_file_larger_than_it_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "huge.toml"
    path.write_text("#" * ((2 << 20) - 1) + "\n")  # a 2 MiB comment
    assert main(["lint", str(path)]) == 3
    first = capsys.readouterr().out.splitlines()[0]
    assert first == f"LINT UNKNOWN: {path}: 2.0 MiB: larger than 1.0 MiB, the most a1x-tui reads as a recipe TOML"
