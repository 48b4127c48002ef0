"""Hostile run specs: `preflight --spec` answers every one with a report or one line (exit 3), never a
traceback or a hang; absurd numbers are refused by name."""

from __future__ import annotations

import re
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


# -- strings that would reach a shell, a folder name or Hydra (a1x_supervisor/spec_values.py) ------------------

NASTY = st.one_of(
    st.lists(st.sampled_from(["\n", "\r", "\x00", "\x1b", "\u2028", " ", "'", "$(", "`", ";", "/", "..", "a", "_",
                              "0", ".", "-"]), max_size=6).map("".join),
    st.sampled_from(["../../../../etc/passwd", "a/b", "..", "x\n#SBATCH --wrap=id", "ok_name"]),
)
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
AG_TEXT = (
    'pipeline = "alpagym"\n[paths]\nworkspace = "/ws"\nmodel_dir = "/ws/ckpt"\nexport_dir = "/ws/export"\n'
    '[alpagym]\nrelease_dir = "/ws/release"\n'
)


def _try(data: dict[str, Any], tmp_path: Path) -> RunSpec | None:
    try:
        return parse_spec(tomlkit.dumps(data), base=tmp_path, source="run.toml")
    except SpecError as exc:
        assert str(exc).startswith("run.toml: ") and "\n" not in str(exc), str(exc)
        return None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=NASTY, field=st.sampled_from(["experiment", "overrides"]))
def test_alpagym_names_reach_hydra_as_one_plain_word(tmp_path: Path, value: str, field: str) -> None:
    from a1x_supervisor.stages.alpagym.train import host_argv

    data = tomlkit.parse(AG_TEXT).unwrap()
    data["alpagym"][field] = [f"reward={value}"] if field == "overrides" else value
    spec = _try(data, tmp_path)
    if spec is None or spec.alpagym is None:
        return
    if field == "experiment":  # a config name of the experiment group: no other group, no other file
        assert "/" not in value and ".." not in value and value and not CONTROL.search(value)
    else:
        assert not CONTROL.search(value)
    argv = host_argv(_ContextStub(spec, tmp_path))  # type: ignore[arg-type]
    assert f"experiment={spec.alpagym.experiment}" in argv and all(not CONTROL.search(a) for a in argv)


class _ContextStub:
    """What host_argv reads of a StageContext."""

    def __init__(self, spec: RunSpec, root: Path) -> None:
        from a1x_supervisor.rundir import RunDir

        self.spec = spec
        self.paths = spec.paths
        self.rundir = RunDir(root / "run")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=NASTY, key=st.sampled_from(["data.cameras", "data.labels", "data.calibration", "wandb.project",
                                         "wandb.experiment", "supervisor.cosmos_log_level"]))
def test_names_that_become_folders_or_log_values_are_plain(tmp_path: Path, value: str, key: str) -> None:
    data = tomlkit.parse(tomlkit.dumps(BASE)).unwrap()
    _set(data, key, [value] if key.startswith("data.") else value)
    spec = _try(data, tmp_path)
    if spec is None:
        return
    assert not CONTROL.search(value)
    if key.startswith("data."):  # PAI feature names: download_pai.py makes folders of them
        assert "/" not in value and ".." not in value and value


def test_alpagym_on_slurm_needs_a_slurm_topology(tmp_path: Path) -> None:
    # AlpaGym's host refuses command=submit with a local topology (config_validation.py:50-51 at 85ed1f5).
    with pytest.raises(SpecError) as info:
        parse_spec(AG_TEXT + 'deploy = "slurm"\n', base=tmp_path, source="run.toml")
    assert str(info.value).startswith(
        'run.toml: alpagym.deploy = "slurm" with topology local_disaggregated_2gpu (execution.backend=local_process, '
        "from experiment alpamayo_1_5_local_2gpu_smoke): AlpaGym refuses it ('command=submit requires "
        "execution.backend to be a Slurm backend')"
    )
    for extra in ('overrides = ["topology=slurm_partial_node_1_2_1"]', 'experiment = "alpamayo_1_5_clrl_test_run"',
                  'experiment = "my_site_experiment"'):  # the last: unknown here, preflight reads the checkout
        spec = parse_spec(AG_TEXT + f'deploy = "slurm"\n{extra}\n', base=tmp_path, source="run.toml")
        assert spec.alpagym is not None and spec.alpagym.deploy == "slurm"
    with pytest.raises(SpecError, match="topology local_colocated_1gpu"):
        parse_spec(AG_TEXT + 'deploy = "slurm"\nexperiment = "alpamayo_1_5_clrl_test_run"\n'
                   'overrides = ["topology=local_colocated_1gpu"]\n', base=tmp_path, source="run.toml")
