"""An install that collides with nothing: a1x-tui and supervisord in one fresh venv, both run, and removing
one leaves the other working (the wheel once installed a top-level ``supervisor`` package over
supervisord's). Its packages are all named ``a1x_*``; pyarrow is not in the core install.

Slow: it makes a venv and installs from the package index (as ``.ci/run`` may: the registries are
reachable there).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow

TOP_LEVEL = """
import importlib.metadata as md
names = set()
for f in md.distribution("a1x-tui").files or []:
    top = f.parts[0]
    if not top.endswith((".dist-info", ".pth")) and top not in ("..", "__pycache__"):
        names.add(top.split(".")[0])
print(" ".join(sorted(names)))
"""


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    # cwd outside the checkout: there, its a1x_tui.egg-info (of the dev install) would be found first
    return subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False, cwd=cwd)


def test_a1x_tui_and_supervisord_share_a_venv(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    assert _run([sys.executable, "-m", "venv", str(venv)], tmp_path).returncode == 0
    bin_dir = venv / "bin"
    pip = [str(bin_dir / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    source = tmp_path / "src"  # a copy: the build writes build/ and *.egg-info beside the sources
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(".git", "build", "*.egg-info", "__pycache__",
                                                                 ".*_cache", "tests", "benchmarks", "*.so"))
    done = _run([*pip, "supervisor"], tmp_path)
    assert done.returncode == 0, done.stderr
    done = _run([*pip, str(source)], tmp_path)
    assert done.returncode == 0, done.stderr

    version = _run([str(bin_dir / "supervisord"), "--version"], tmp_path)
    assert version.returncode == 0 and version.stdout.strip()[0].isdigit(), version.stdout + version.stderr
    conf = _run([str(bin_dir / "echo_supervisord_conf")], tmp_path)
    assert conf.returncode == 0 and "[supervisord]" in conf.stdout, conf.stderr
    ours = _run([str(bin_dir / "a1x-tui"), "--version"], tmp_path)
    assert ours.returncode == 0 and ours.stdout.startswith("a1x-tui "), ours.stderr
    check = _run([str(bin_dir / "a1x-tui"), "--check", "--example", "sick"], tmp_path)
    assert check.returncode == 2 and check.stdout.startswith("A1X-TUI CRITICAL"), check.stderr

    top = _run([str(bin_dir / "python"), "-c", TOP_LEVEL], tmp_path)
    assert set(top.stdout.split()) == {"a1x_tui", "a1x_supervisor", "a1x_diagnostics", "a1x_configs"}, top.stdout
    arrow = _run([str(bin_dir / "python"), "-c", "import importlib.util as u; print(u.find_spec('pyarrow'))"], tmp_path)
    assert arrow.stdout.strip() == "None"  # the data extra, not the core install

    uninstall = [str(bin_dir / "python"), "-m", "pip", "uninstall", "-y", "-q"]
    assert _run([*uninstall, "supervisor"], tmp_path).returncode == 0
    alone = _run([str(bin_dir / "a1x-tui"), "--check", "--example", "sick"], tmp_path)
    assert alone.returncode == 2 and alone.stdout.startswith("A1X-TUI CRITICAL")  # whole without supervisord
    assert _run([*pip, "supervisor"], tmp_path).returncode == 0
    assert _run([*uninstall, "a1x-tui"], tmp_path).returncode == 0
    again = _run([str(bin_dir / "supervisord"), "--version"], tmp_path)
    assert again.returncode == 0 and again.stdout == version.stdout  # and supervisord without a1x-tui
