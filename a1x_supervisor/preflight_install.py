"""Preflight of the ``env`` stage's install, the recipe's most reported failures (docs/reference/alpamayo-recipe.md
§2.1-§2.2): the Python the recipe requires, a CUDA toolkit whose ``nvcc`` matches torch's CUDA when
``uv sync`` builds flash-attn from source, and room in the uv cache for the training stack's wheels.

flash-attn 2.8.3 is in the recipe's lock as a source distribution only, built without isolation against
the venv's torch 2.8.0 (§2.1). Its build is a torch ``CUDAExtension``: torch finds the CUDA toolkit as
``CUDA_HOME`` or ``CUDA_PATH``, else the folder of ``nvcc`` on ``PATH``, else ``/usr/local/cuda``, fails
without one ("CUDA_HOME environment variable is not set") and refuses an ``nvcc`` whose major version
differs from the CUDA torch was built with (the lock's ``nvidia-cuda-runtime-cu12`` 12.8.90: CUDA 12).
flash-attn itself asks for CUDA 11.7 or newer; ``FLASH_ATTENTION_SKIP_CUDA_BUILD=TRUE`` skips the build.
"""

from __future__ import annotations

import configparser
import re
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from a1x_diagnostics.findings import CheckState
from a1x_supervisor.preflight_checks import GB, Checks
from a1x_supervisor.spec import RunSpec

# A command and its working folder -> (exit code, output); raises OSError when it cannot run.
Runner = Callable[[Sequence[str], "Path | None"], "tuple[int, str]"]

RECIPE_PYTHON = "==3.12.*"  # R §2.2: requires-python, when the checkout's pyproject cannot be read
TORCH_CUDA = (12, 8)  # R §2.2: torch 2.8.0 from PyPI, nvidia-cuda-runtime-cu12 12.8.90 in the lock
FLASH_ATTN_MIN_CUDA = (11, 7)
# The recipe's uv.lock (b790b8e) holds 5.2 GB of wheels for Linux x86_64 and CPython 3.12 (torch 0.9 GB,
# the nvidia-*-cu12 libraries, vLLM, xformers, triton...); uv keeps them unpacked in its cache, about twice
# that, plus flash-attn's build. An estimate, not a measurement.
UV_CACHE_BYTES = 12 * GB
DEFAULT_CUDA = Path("/usr/local/cuda")  # torch's last resort
_CUDA_RUNTIME = re.compile(r'name = "nvidia-cuda-runtime-cu(\d+)"\s*\nversion = "(\d+)\.(\d+)')
_NVCC_RELEASE = re.compile(r"release (\d+)\.(\d+)")


def run_command(argv: Sequence[str], cwd: Path | None) -> tuple[int, str]:
    done = subprocess.run(
        list(argv), cwd=cwd, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
    )
    return done.returncode, (done.stdout + done.stderr).strip()


def uv_cache_dir(spec: RunSpec, env: Mapping[str, str]) -> Path:
    """Where uv keeps its cache for the env stage: the spec's, ``UV_CACHE_DIR``, else uv's default."""
    if spec.paths.uv_cache_dir is not None:
        return spec.paths.uv_cache_dir
    if env.get("UV_CACHE_DIR"):
        return Path(env["UV_CACHE_DIR"]).expanduser()
    base = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else Path(env.get("HOME", "~")) / ".cache"
    return (base / "uv").expanduser()


def disk_needs(spec: RunSpec, env: Mapping[str, str]) -> list[tuple[Path, int, str]]:
    """The env stage's room: the uv cache, and the venv when it is on another filesystem (uv hard-links the
    cache's files into a venv on the same one, and copies them otherwise)."""
    cache, venv = uv_cache_dir(spec, env), spec.paths.venv_dir
    needs = [(cache, UV_CACHE_BYTES, "the uv cache: the training stack's wheels, unpacked (env)")]
    if _device(cache) != _device(venv):
        needs.append((venv, UV_CACHE_BYTES, "the a1x_rl venv, copied from the uv cache on another filesystem (env)"))
    return needs


def _device(path: Path) -> int:
    for candidate in (path, *path.parents):
        try:
            return candidate.stat().st_dev
        except OSError:
            continue
    return -1


def check_install(
    spec: RunSpec,
    todo: Sequence[str],
    checks: Checks,
    env: Mapping[str, str],
    find: Callable[[str], str | None],
    run: Runner,
) -> None:
    if "env" not in todo:
        for cid in ("python_version_mismatch", "nvcc_missing", "nvcc_cuda_mismatch"):
            checks.other(cid, CheckState.SKIPPED, "the a1x_rl venv is not (re)built in this run")
        return
    _check_python(spec, checks, env, find, run)
    _check_nvcc(spec, checks, env, find, run)


def recipe_python(recipe_dir: Path) -> str:
    """The recipe's ``requires-python`` (its pyproject), else what R §2.2 records."""
    try:
        text = (recipe_dir / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return RECIPE_PYTHON
    m = re.search(r'^requires-python\s*=\s*"([^"]+)"', text, flags=re.M)
    return m.group(1) if m else RECIPE_PYTHON


def venv_python_version(venv: Path) -> str | None:
    """The venv's Python version from its ``pyvenv.cfg`` (``version_info`` from uv and virtualenv,
    ``version`` from the venv module)."""
    parser = configparser.ConfigParser()
    try:
        parser.read_string("[venv]\n" + (venv / "pyvenv.cfg").read_text(encoding="utf-8"))
    except (OSError, configparser.Error):
        return None
    raw = parser["venv"].get("version_info") or parser["venv"].get("version")
    m = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", raw or "")
    return ".".join(p for p in m.groups() if p is not None) if m else None


def _check_python(
    spec: RunSpec, checks: Checks, env: Mapping[str, str], find: Callable[[str], str | None], run: Runner
) -> None:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    cid = "python_version_mismatch"
    recipe, venv = spec.paths.recipe_dir, spec.paths.venv_dir
    wanted = recipe_python(recipe)
    try:
        allowed = SpecifierSet(wanted)
    except InvalidSpecifier:
        checks.other(cid, CheckState.BLIND, f"the recipe's requires-python {wanted!r} cannot be read")
        return
    if venv.exists():
        have = venv_python_version(venv)
        if have is None:
            checks.other(cid, CheckState.BLIND, f"{venv}/pyvenv.cfg names no Python version")
        elif have not in allowed:
            checks.finding(
                cid,
                f"The a1x_rl venv at {venv} has Python {have}, the recipe requires {wanted} "
                "(docs/reference/alpamayo-recipe.md §2.2): the env stage keeps an existing venv, and `uv sync "
                "--active` refuses one whose Python does not satisfy requires-python.",
                evidence=[f"{venv}/pyvenv.cfg: Python {have}; recipes/alpamayo1_x_rl/pyproject.toml: "
                          f"requires-python = {wanted!r}"],
                action=f"remove {venv} (the env stage makes it again with a matching Python), or point "
                "[paths] venv at another folder",
                have=have,
                wanted=wanted,
            )
        else:
            checks.ok(cid, f"the a1x_rl venv has Python {have} ({wanted})")
        return
    # `uv venv` in the recipe folder picks an interpreter for its requires-python, downloading a managed
    # one when none is installed and downloads are allowed; `uv python find` there does the same search.
    local = Path("~/.local/bin/uv").expanduser()  # uv's own installer puts it there (R §2.1)
    uv = find("uv") or (str(local) if local.exists() else None)
    if uv is None:
        checks.other(cid, CheckState.BLIND, "uv is not installed (binary_missing): no interpreter search")
        return
    try:
        code, out = run([uv, "python", "find"], recipe if recipe.is_dir() else None)
    except (OSError, subprocess.SubprocessError) as exc:
        checks.other(cid, CheckState.BLIND, f"`uv python find` did not run ({exc})")
        return
    if code == 0:
        checks.ok(cid, f"uv finds {out.splitlines()[-1] if out else 'a Python'} for {wanted}")
        return
    downloads = (env.get("UV_PYTHON_DOWNLOADS") or "automatic").lower()
    if downloads in ("never", "manual", "0", "false") or env.get("UV_OFFLINE") in ("1", "true"):
        checks.finding(
            cid,
            f"No Python for the recipe's requires-python {wanted} is installed, and uv may not download one "
            f"(UV_PYTHON_DOWNLOADS={downloads}{', UV_OFFLINE' if env.get('UV_OFFLINE') else ''}): "
            "`uv venv a1x_rl` fails (docs/reference/alpamayo-recipe.md §2.1).",
            evidence=[f"uv python find (in {recipe}): {out.splitlines()[-1] if out else f'exit {code}'}"],
            action="install Python 3.12 (`uv python install 3.12`, or the system's python3.12), or allow uv's "
            "Python downloads",
            wanted=wanted,
        )
        return
    checks.ok(cid, f"no Python for {wanted} installed: `uv venv` will download one (needs github.com)")
    checks.notes.append(
        f"no Python for the recipe's {wanted} is installed: the env stage's `uv venv` downloads a managed one "
        "(python-build-standalone, from github.com)"
    )


def torch_cuda(recipe_dir: Path) -> tuple[int, int]:
    """The CUDA torch is built with: the recipe lock's CUDA runtime wheel, else R §2.2's 12.8."""
    try:
        text = (recipe_dir / "uv.lock").read_text(encoding="utf-8")
    except OSError:
        return TORCH_CUDA
    m = _CUDA_RUNTIME.search(text)
    return (int(m.group(2)), int(m.group(3))) if m else TORCH_CUDA


def find_nvcc(env: Mapping[str, str], find: Callable[[str], str | None]) -> tuple[Path | None, str]:
    """The ``nvcc`` torch's extension build would use, in torch's order, and where it came from."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if env.get(var):
            return Path(env[var]) / "bin" / "nvcc", var
    on_path = find("nvcc")
    if on_path:
        return Path(on_path), "PATH"
    default = DEFAULT_CUDA / "bin" / "nvcc"
    return (default, str(DEFAULT_CUDA)) if default.exists() else (None, "")


def _flash_attn_installed(venv: Path) -> bool:
    return any(venv.glob("lib/python3*/site-packages/flash_attn/__init__.py"))


def _check_nvcc(
    spec: RunSpec, checks: Checks, env: Mapping[str, str], find: Callable[[str], str | None], run: Runner
) -> None:
    venv = spec.paths.venv_dir
    if (env.get("FLASH_ATTENTION_SKIP_CUDA_BUILD") or "").upper() == "TRUE":
        for cid in ("nvcc_missing", "nvcc_cuda_mismatch"):
            checks.other(cid, CheckState.SKIPPED, "FLASH_ATTENTION_SKIP_CUDA_BUILD=TRUE: flash-attn is not compiled")
        return
    if _flash_attn_installed(venv):
        for cid in ("nvcc_missing", "nvcc_cuda_mismatch"):
            checks.other(cid, CheckState.SKIPPED, f"flash-attn is installed in {venv}: uv sync does not build it")
        return
    torch_major, torch_minor = torch_cuda(spec.paths.recipe_dir)
    nvcc, source = find_nvcc(env, find)
    if nvcc is None or (source != "PATH" and not nvcc.exists()):
        where = f"{nvcc} (from {source}) does not exist" if nvcc is not None else (
            "no CUDA_HOME or CUDA_PATH, no nvcc on PATH, no /usr/local/cuda"
        )
        checks.finding(
            "nvcc_missing",
            "uv sync's second pass builds flash-attn 2.8.3 from source against torch 2.8.0 (the recipe's lock has "
            "only its source, docs/reference/alpamayo-recipe.md §2.1), which needs a CUDA toolkit: without one "
            "the build stops with 'CUDA_HOME environment variable is not set'.",
            evidence=[where],
            action=f"install a CUDA {torch_major}.x toolkit (torch 2.8.0 is built with CUDA "
            f"{torch_major}.{torch_minor}) and export CUDA_HOME, or put its nvcc on PATH",
        )
        checks.other("nvcc_cuda_mismatch", CheckState.SKIPPED, "no nvcc (nvcc_missing)")
        return
    checks.ok("nvcc_missing", f"{nvcc} (from {source})")
    try:
        code, out = run([str(nvcc), "--version"], None)
    except (OSError, subprocess.SubprocessError) as exc:
        checks.other("nvcc_cuda_mismatch", CheckState.BLIND, f"{nvcc} --version did not run ({exc})")
        return
    m = _NVCC_RELEASE.search(out)
    if code != 0 or m is None:
        checks.other("nvcc_cuda_mismatch", CheckState.BLIND, f"{nvcc} --version gave no release (exit {code})")
        return
    have = (int(m.group(1)), int(m.group(2)))
    problems = []
    if have[0] != torch_major:
        problems.append(
            f"torch refuses to build an extension with it: 'The detected CUDA version ({have[0]}.{have[1]}) "
            f"mismatches the version that was used to compile PyTorch ({torch_major}.{torch_minor})'"
        )
    if have < FLASH_ATTN_MIN_CUDA:
        problems.append(
            "flash-attn needs CUDA 11.7 or newer ('FlashAttention is only supported on CUDA 11.7 and above')"
        )
    if problems:
        checks.finding(
            "nvcc_cuda_mismatch",
            f"The nvcc flash-attn's build would use is CUDA {have[0]}.{have[1]}, torch 2.8.0 is built with CUDA "
            f"{torch_major}.{torch_minor}: " + "; ".join(problems) + " (docs/reference/alpamayo-recipe.md §2.1).",
            evidence=[f"{nvcc} (from {source}): release {have[0]}.{have[1]}"],
            action=f"point CUDA_HOME at a CUDA {torch_major}.x toolkit (or put its nvcc first on PATH)",
            nvcc=f"{have[0]}.{have[1]}",
            torch_cuda=f"{torch_major}.{torch_minor}",
        )
        return
    note = "" if have[1] == torch_minor else " (a minor version apart: torch only warns)"
    checks.ok("nvcc_cuda_mismatch", f"nvcc CUDA {have[0]}.{have[1]}, torch CUDA {torch_major}.{torch_minor}{note}")

