"""Hostile run specs: `preflight --spec` answers every one with a report or one line (exit 3), never a
traceback or a hang; absurd numbers are refused by name."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import pytest
import tomlkit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from a1x_supervisor.slurm.spec import ClusterSpec
from a1x_supervisor.spec import RunSpec, SpecError, default_spec_text, parse_spec
from a1x_tui.cli import main


def _paths(model: type[BaseModel], prefix: str = "") -> list[str]:
    out: list[str] = []
    for name, info in model.model_fields.items():
        out.append(prefix + name)
        for arg in (info.annotation, *typing.get_args(info.annotation)):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                out += _paths(arg, f"{prefix}{name}.")
    return out


KEYS = [*_paths(RunSpec), *(f"cluster.{k}" for k in ClusterSpec.model_fields), "supervisor.hf_token"]
VALUES = st.one_of(
    st.sampled_from([0, -1, 1, 10**18, -(10**18), 2**63, 10**30]),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(max_size=12),
    st.sampled_from(["~nobody_here_a1x/x", "a\x00b", "", "cluster", "slurm", "joint", "1", "1.5", "04:00:00"]),
    st.lists(st.one_of(st.integers(), st.text(max_size=5)), max_size=3),
)
BASE = tomlkit.parse(default_spec_text()).unwrap()


def _set(data: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, key = dotted.split(".")
    node = data
    for part in parents:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[key] = value


# capsys is read (and so emptied) by every example
QUIET = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]


@settings(max_examples=40, deadline=None, suppress_health_check=QUIET)
@given(changes=st.lists(st.tuples(st.sampled_from(KEYS), VALUES), max_size=6))
def test_any_spec_gets_a_report_or_one_line(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], changes: list[tuple[str, Any]]
) -> None:
    data = tomlkit.parse(tomlkit.dumps(BASE)).unwrap()
    for path, value in changes:
        _set(data, path, value)
    spec = tmp_path_factory.mktemp("spec") / "run.toml"
    spec.write_text(tomlkit.dumps(data), encoding="utf-8")
    code = main(["preflight", "--spec", str(spec), "--only", "train"])
    out = capsys.readouterr()
    assert code in (0, 1, 2, 3)
    if code == 3:
        assert len(out.err.strip().splitlines()) == 1 and out.err.startswith(str(spec)), out.err


@pytest.mark.parametrize(
    ("section", "key", "value", "words"),
    [
        ("replicas", "rollout", 10**18, "replicas.rollout: Input should be less than or equal to 4096"),
        ("supervisor", "stop_grace_s", float("inf"), "supervisor.stop_grace_s: Input should be a finite number"),
        ("supervisor", "hf_retries", 10**6, "supervisor.hf_retries: Input should be less than or equal to 20"),
        ("data", "num_clips", 10**18, "data.num_clips: Input should be less than or equal to 10000000"),
    ],
)
def test_absurd_spec_numbers_are_refused_by_name(
    tmp_path: Path, section: str, key: str, value: Any, words: str
) -> None:
    data = tomlkit.parse(default_spec_text()).unwrap()
    data[section][key] = value
    with pytest.raises(SpecError) as info:
        parse_spec(tomlkit.dumps(data), base=tmp_path, source="run.toml")
    assert str(info.value) == f"run.toml: {words}"


def test_a_binary_spec_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "run.toml"
    spec.write_bytes(b"\xff\xfe\x00binary")
    assert main(["preflight", "--spec", str(spec)]) == 3
    assert capsys.readouterr().err == (
        f"{spec}: a binary file, not a run spec; --spec expects the run spec `a1x-tui init --out FILE` writes\n"
    )
