"""Hostile spec strings never reach a shell, an #SBATCH line or Hydra as something else: every string field
of the cluster spec and of the run spec is either refused (one line) or, once accepted, renders every
script safely (a1x_supervisor/spec_values.py; docs/supervisor.md "The run spec").

For each accepted value: our sbatch script passes ``bash -n`` and keeps its #SBATCH options; a value that
Cosmos-RL's job templates paste unquoted into a shell line (docs/reference/cosmos-rl.md §11.1-§11.2) reads
back from bash as the same single word; a value we quote reads back from bash unchanged; an #SBATCH value
has no whitespace or control character; a Hydra config name has no '/' and no '..'.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from slurm_helpers import MOTION_ENTRY, cluster_spec, recipe

from a1x_supervisor.slurm import ClusterSpec, NodePlan, Packing, SbatchJob, dispatch_argv, plan_nodes, render_sbatch
from a1x_supervisor.slurm.spec import SlurmSpecError

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

NASTY = (
    "\n", "\r", "\t", " ", "\x00", "\x1b", "\x7f", "\x85", "\u2028", "'", '"', "`", "$", "$(", ")", ";", "&", "|", "<",
    ">", "\\", "#", "%", "*", "?", "[", "~", ",", ":", "=", "/", "..", "-", "{", "}", "!",
)
HOSTILE = st.one_of(
    st.lists(st.one_of(st.sampled_from(NASTY), st.sampled_from(("a", "Z", "0", "_", ".", "gpu", "x1"))), max_size=8)
    .map("".join),
    st.sampled_from([
        "gpu\n#SBATCH --wrap=id", "a; touch /tmp/a1x_pwned", "$(touch /tmp/a1x_pwned)", "`id`",
        "../../../../etc/passwd",
        "/lustre/x y", "/lustre/$HOME", "/lustre:/x,/y", "--qos=high\n--x", "--qos high", "--exclusive", "04:00:00\n",
    ]),
    st.text(max_size=10),
)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
JOB = SbatchJob(
    run_dir=Path("/lustre/runs/r1"), config_path=Path("/lustre/runs/r1/t.toml"), entry=MOTION_ENTRY,
    workdir=Path("/lustre/ws"), venv=Path("/lustre/ws/venv"),
)
SBATCH_BASE: dict[str, Any] = {"method": "sbatch", "partition": "gpu", "account": "acct", "time": "04:00:00"}


def _bash(program: str) -> subprocess.CompletedProcess[str]:
    """bash's output as written (no newline translation: a value may hold a carriage return)."""
    done = subprocess.run(["bash", "--norc", "-c", program], capture_output=True, check=False,
                          env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())


def _unquoted_word(value: str) -> None:
    """What a template pastes unquoted into a shell line reads back as that one word."""
    out = _bash(f"set -f; printf '%s\\n' {value}")
    assert out.returncode == 0 and out.stdout == value + "\n", (value, out)


def _sbatch_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("#SBATCH")]


def _script(spec: ClusterSpec) -> str:
    plan = plan_nodes(recipe(), gpus_per_node=spec.gpus_per_node, packing=Packing.LAUNCHER)
    assert isinstance(plan, NodePlan)
    text = render_sbatch(spec, plan, JOB)
    checked = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stderr
    for line in _sbatch_lines(text):
        assert not re.search(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]", line), line
    return text


BASELINE = [line.split("=")[0].split(" ")[1] for line in _sbatch_lines(_script(ClusterSpec(**SBATCH_BASE)))]


def _accepted(**fields: Any) -> ClusterSpec | None:
    try:
        return ClusterSpec(**{**SBATCH_BASE, **fields})
    except ValidationError as exc:
        assert exc.error_count() >= 1
        return None


@pytest.mark.parametrize("field", ["partition", "account", "time", "memory", "job_name"])
@SETTINGS
@given(value=HOSTILE)
def test_a_value_on_an_sbatch_line_is_one_word_or_refused(field: str, value: str) -> None:
    spec = _accepted(**{field: value})
    if spec is None:
        return
    assert value and not re.search(r"[\s\x00-\x1f\x7f-\x9f\u2028\u2029'\"`$\\;&|<>()]", value), value
    options = [line.split("=")[0].split(" ")[1] for line in _sbatch_lines(_script(spec))]
    assert options == BASELINE
    if field in ("partition", "account", "job_name"):  # pasted unquoted into 747d1bd's template lines
        _unquoted_word(value)


@SETTINGS
@given(value=HOSTILE)
def test_an_extra_sbatch_option_is_one_line_or_refused(value: str) -> None:
    spec = _accepted(extra_sbatch_args=[value])
    if spec is None:
        return
    lines = _sbatch_lines(_script(spec))
    assert lines[-1] == f"#SBATCH {value}" and len(lines) == len(BASELINE) + 1
    opt, _, arg = value.replace("=", " ", 1).partition(" ")
    _unquoted_word(opt)
    if arg:
        _unquoted_word(arg)


@pytest.mark.parametrize("field", ["container", "output_root", "repo_root", "mount"])
@SETTINGS
@given(value=HOSTILE)
def test_a_value_the_dispatch_templates_paste_unquoted_reads_back_as_one_word(field: str, value: str) -> None:
    fields: dict[str, Any] = {"mounts": [value]} if field == "mount" else {field: value}
    if field in ("output_root", "repo_root") and (not value.startswith("/") or Path(value).exists()):
        fields[field] = "/nonexistent_a1x/" + value  # never an existing file (a folder is checked separately)
    try:
        spec = cluster_spec(cosmos_rev="head", **fields)
    except ValidationError:
        return
    plan = plan_nodes(recipe("recipe_cluster_80.toml"), gpus_per_node=8, packing=Packing.DISPATCH)
    assert isinstance(plan, NodePlan)
    argv = dispatch_argv(spec, plan, config_path=Path("/lustre/cfg/rl.toml"), launcher="/lustre/e.py").argv
    words = spec.mounts[0].split(":") if field == "mount" else [str(getattr(spec, field))]
    for word in words:
        _unquoted_word(word)
        assert word in " ".join(argv)


@pytest.mark.parametrize("field", ["python", "a1x_tui"])
@SETTINGS
@given(value=HOSTILE)
def test_a_command_line_has_no_control_character_and_is_quoted_word_by_word(field: str, value: str) -> None:
    spec = _accepted(**{field: value})
    if spec is None:
        return
    assert not re.search(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]", value)
    if field == "a1x_tui":
        try:
            words = shlex.split(value)
        except ValueError:
            with pytest.raises(ValueError):  # an unbalanced quote: the script cannot be written
                _script(spec)
            return
        text = _script(spec)
        agent = next(line for line in text.splitlines() if "gpu-agent" in line)
        echoed = _bash(f"set -f; printf '%s\\n' {agent.strip().split(' gpu-agent ')[0]}")
        assert echoed.stdout.splitlines() == words


@SETTINGS
@given(value=HOSTILE)
def test_an_exported_value_reads_back_unchanged(value: str) -> None:
    spec = _accepted(env={"A1X_VALUE": value})
    if spec is None:
        assert "\x00" in value
        return
    text = _script(spec)
    # the export may span lines (a quoted newline): from it to the next export
    rest = text[text.index("\nexport A1X_VALUE=") + 1 :]
    out = _bash(rest[: rest.index("\nexport ", 1) + 1] + 'printf "%s" "$A1X_VALUE"')
    assert out.returncode == 0 and out.stdout == value, (value, out)


def test_refusals_are_one_line_naming_the_field() -> None:
    cases = {
        "partition": "gpu\n#SBATCH --wrap=id",
        "account": "a;b",
        "container": "$(id)",
        "time": "04:00:00\n",
        "job_name": "a\x01",
        "extra_sbatch_args": ["--qos=high\n#SBATCH --x"],
        "mounts": ["/a b:/a b"],
    }
    for field, value in cases.items():
        with pytest.raises(ValidationError) as exc:
            ClusterSpec(**{**SBATCH_BASE, field: value})
        (error,) = exc.value.errors()
        assert "\n" not in error["msg"] and error["loc"][0] == field, error


def test_the_run_directory_on_the_output_line_is_checked_when_rendering() -> None:
    from dataclasses import replace

    plan = plan_nodes(recipe(), gpus_per_node=8, packing=Packing.LAUNCHER)
    assert isinstance(plan, NodePlan)
    for bad, why in (("/lustre/my runs/r1", "spaces, % or"), ("/lustre/r%j", "spaces, % or"),
                     ("/lustre/r\nx", "control character \\x0a")):
        with pytest.raises(SlurmSpecError, match=re.escape(why)):
            render_sbatch(ClusterSpec(**SBATCH_BASE), plan, replace(JOB, run_dir=Path(bad)))
