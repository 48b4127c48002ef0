"""Preflight knows the install's sharp edges (a1x_supervisor/preflight_install.py, docs/reference/alpamayo-recipe.md
§2.1-§2.2): nvcc and its CUDA against torch's when flash-attn will be built, the Python the recipe requires,
the uv cache's room; and the evaluate stage's GPU."""

from __future__ import annotations

from pathlib import Path

import pytest
from supervisor_helpers import World
from test_preflight import ALL_BINARIES, GB, _ids, _run, _spec, fake_commands

from a1x_supervisor import preflight_install
from a1x_supervisor.preflight import GpuInventory
from a1x_supervisor.preflight_install import find_nvcc, recipe_python, torch_cuda, uv_cache_dir, venv_python_version


def _checks(report: object) -> dict[str, str]:
    return {c.id: c.state.value for c in report.checks}  # type: ignore[attr-defined]


def test_a_machine_ready_to_build_passes(world: World) -> None:
    report = _run(world, _spec(world))
    states = _checks(report)
    assert (states["nvcc_missing"], states["nvcc_cuda_mismatch"], states["python_version_mismatch"]) == (
        "ok", "ok", "ok"
    )
    assert not {"nvcc_missing", "nvcc_cuda_mismatch", "python_version_mismatch"} & _ids(report)


def test_no_nvcc_when_flash_attn_will_be_built(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preflight_install, "DEFAULT_CUDA", world.root / "no-cuda")  # this machine's aside
    report = _run(world, _spec(world), binaries=ALL_BINARIES - {"nvcc"}, env={"HF_TOKEN": "hf_x"})
    finding = next(f for f in report.findings if f.id == "nvcc_missing")
    assert finding.severity.value == "critical"
    assert "CUDA_HOME environment variable is not set" in finding.explanation
    assert finding.evidence[0].text == "no CUDA_HOME or CUDA_PATH, no nvcc on PATH, no /usr/local/cuda"
    assert "CUDA 12.x toolkit" in (finding.action or "")
    # CUDA_HOME is where torch looks first: a folder without bin/nvcc is named
    report = _run(world, _spec(world), env={"HF_TOKEN": "hf_x", "CUDA_HOME": str(world.root / "cuda")})
    finding = next(f for f in report.findings if f.id == "nvcc_missing")
    assert finding.evidence[0].text == f"{world.root / 'cuda' / 'bin' / 'nvcc'} (from CUDA_HOME) does not exist"


@pytest.mark.parametrize(("nvcc", "wanted"), [("11.8", "12.8"), ("13.0", "12.8"), ("11.5", "12.8")])
def test_nvcc_of_another_cuda_major_than_torch(world: World, nvcc: str, wanted: str) -> None:
    report = _run(world, _spec(world), run=fake_commands(nvcc=nvcc))
    finding = next(f for f in report.findings if f.id == "nvcc_cuda_mismatch")
    assert finding.data == {"nvcc": nvcc, "torch_cuda": wanted}
    assert f"The detected CUDA version ({nvcc}) mismatches the version that was used to compile PyTorch" in (
        finding.explanation
    )
    assert ("only supported on CUDA 11.7 and above" in finding.explanation) == (nvcc == "11.5")


def test_a_minor_version_apart_only_warns_in_torch_so_passes(world: World) -> None:
    report = _run(world, _spec(world), run=fake_commands(nvcc="12.4"))
    assert "nvcc_cuda_mismatch" not in _ids(report)
    assert "torch only warns" in next(c.note for c in report.checks if c.id == "nvcc_cuda_mismatch")


def test_the_torch_cuda_comes_from_the_recipes_lock(tmp_path: Path) -> None:
    (tmp_path / "uv.lock").write_text('[[package]]\nname = "nvidia-cuda-runtime-cu13"\nversion = "13.0.48"\n')
    assert torch_cuda(tmp_path) == (13, 0)
    assert torch_cuda(tmp_path / "missing") == (12, 8)  # R §2.2


def test_no_build_no_nvcc_question(world: World) -> None:
    site = world.venv / "lib" / "python3.12" / "site-packages" / "flash_attn"
    site.mkdir(parents=True)
    (site / "__init__.py").write_text("")
    report = _run(world, _spec(world), binaries=ALL_BINARIES - {"nvcc"})
    assert "nvcc_missing" not in _ids(report) and _checks(report)["nvcc_missing"] == "skipped"
    skip = _run(world, _spec(world), env={"HF_TOKEN": "x", "FLASH_ATTENTION_SKIP_CUDA_BUILD": "TRUE"})
    assert _checks(skip)["nvcc_missing"] == "skipped"


def test_nvcc_is_found_in_torchs_order(tmp_path: Path) -> None:
    assert find_nvcc({"CUDA_HOME": "/opt/cuda-12.8"}, lambda _n: "/usr/bin/nvcc") == (
        Path("/opt/cuda-12.8/bin/nvcc"), "CUDA_HOME"
    )
    assert find_nvcc({"CUDA_PATH": "/c"}, lambda _n: None) == (Path("/c/bin/nvcc"), "CUDA_PATH")
    assert find_nvcc({}, lambda _n: "/usr/bin/nvcc") == (Path("/usr/bin/nvcc"), "PATH")


def test_an_existing_venv_of_another_python(world: World) -> None:
    world.venv.mkdir(parents=True)
    (world.venv / "pyvenv.cfg").write_text("home = /usr/bin\nimplementation = CPython\nversion_info = 3.10.12\n")
    report = _run(world, _spec(world))
    finding = next(f for f in report.findings if f.id == "python_version_mismatch")
    assert finding.data == {"have": "3.10.12", "wanted": "==3.12.*"}
    assert "remove" in (finding.action or "") and str(world.venv) in (finding.action or "")
    (world.venv / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.12.7\n")  # python -m venv's key
    assert "python_version_mismatch" not in _ids(_run(world, _spec(world)))
    assert venv_python_version(world.venv) == "3.12.7"


def test_no_python_312_and_no_downloads(world: World) -> None:
    no_python = fake_commands(python=None)
    report = _run(world, _spec(world), run=no_python, env={"HF_TOKEN": "x", "UV_PYTHON_DOWNLOADS": "never"})
    finding = next(f for f in report.findings if f.id == "python_version_mismatch")
    assert "uv may not download one (UV_PYTHON_DOWNLOADS=never)" in finding.explanation
    assert "No interpreter found" in finding.evidence[0].text
    allowed = _run(world, _spec(world), run=no_python, env={"HF_TOKEN": "x"})
    assert "python_version_mismatch" not in _ids(allowed)
    assert any("downloads a managed one" in n for n in allowed.notes)


def test_the_recipes_python_is_read_from_its_pyproject(world: World) -> None:
    recipe = world.ws / "recipes" / "alpamayo1_x_rl"
    assert recipe_python(recipe) == "==3.12.*"  # the fake checkout has none: R §2.2's
    (recipe / "pyproject.toml").write_text('[project]\nname = "x"\nrequires-python = "==3.13.*"\n')
    assert recipe_python(recipe) == "==3.13.*"


def test_the_uv_cache_is_where_uv_puts_it(world: World) -> None:
    spec = _spec(world)
    assert uv_cache_dir(spec, {"UV_CACHE_DIR": "/big/uv"}) == Path("/big/uv")
    assert uv_cache_dir(spec, {"XDG_CACHE_HOME": "/x"}) == Path("/x/uv")
    assert uv_cache_dir(spec, {"HOME": "/home/u"}) == Path("/home/u/.cache/uv")


def test_no_env_stage_no_install_questions(world: World) -> None:
    report = _run(world, _spec(world), stages=["train"], binaries=ALL_BINARIES - {"nvcc"})
    states = _checks(report)
    assert {states[c] for c in ("nvcc_missing", "nvcc_cuda_mismatch", "python_version_mismatch")} == {"skipped"}


def test_the_evaluate_stage_needs_one_gpu_here(world: World) -> None:
    none = _run(world, _spec(world), stages=["evaluate"], gpus=GpuInventory((), "test"))
    finding = next(f for f in none.findings if f.id == "gpus_too_few")
    assert finding.data == {"visible": 0, "needed": 1} and "--skip evaluate" in (finding.action or "")
    small = _run(world, _spec(world), stages=["evaluate"], gpus=GpuInventory((16 * GB,), "test"))
    assert "gpus_too_few" in _ids(small)
    one = _run(world, _spec(world), stages=["evaluate"], gpus=GpuInventory((40 * GB,), "test"))
    assert "gpus_too_few" not in _ids(one) and _checks(one)["gpus_too_few"] == "ok"
