"""Helpers for the supervisor tests (imported as ``supervisor_helpers``).

A fake world: a recipe checkout, a venv and programs on PATH, all stand-ins (``supervisor_fakes.py``,
copied as ``fakes.py``) that run as real subprocesses. No GPU, no network."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
HF_SECRET = "hf_TESTSECRETabcdef123456"
WANDB_SECRET = "wandbSECRET0123456789abcdef"

_STUB_MODULES = {
    "alpamayo_r1/__init__.py": "",
    "alpamayo/__init__.py": "",
    "alpamayo/utils/__init__.py": "",
    "alpamayo/utils/checkpoint_utils.py": "def collect_targets(): pass\ndef remap_targets(): pass\n",
    "cosmos_rl/__init__.py": "",
    "vllm/__init__.py": "",
    "flash_attn/__init__.py": "",
    "alpamayo1_x_rl/__init__.py": "",
    "alpamayo1_x_rl/models/__init__.py": "",
    "alpamayo1_x_rl/models/reasoning_vla/__init__.py": "",
    "alpamayo1_x_rl/models/reasoning_vla/base_model.py": "class RLWrapperReasoningVLA: pass\n",
}
_ENTRY = (
    'import os\n_PAI = os.getenv("ALPAMAYO_PAI_LOCAL_DIR")\n'
    'SPEC = dict(hydra_config_path="hydra_configs", hydra_config_name="alpamayo1_5_rvla_rl_pai")\n'
)
_SCRIPTS = {
    "convert_release_config_to_training.py": "convert_release",
    "download_pai.py": "download_pai",
    "curate_pai_samples.py": "curate",
    "convert_cosmos_rl_checkpoint.py": "export_checkpoint",
}


@dataclass
class World:
    root: Path
    env: dict[str, str]
    spec_values: dict[str, Any] = field(default_factory=dict)

    @property
    def ws(self) -> Path:
        return self.root / "ws"

    @property
    def venv(self) -> Path:
        return self.ws / "recipes" / "alpamayo1_x_rl" / "a1x_rl"

    @property
    def run_dir(self) -> Path:
        return self.root / "run"

    def set_modes(self, **modes: Any) -> None:
        (self.root / "fake.json").write_text(json.dumps(modes))

    def calls(self, prog: str | None = None) -> list[dict[str, Any]]:
        path = self.root / "calls.jsonl"
        if not path.exists():
            return []
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        return [r for r in rows if prog is None or r["prog"] == prog]

    def make_venv(self) -> None:
        """What the env stage would have built (``uv venv`` of the fake uv)."""
        subprocess.run([str(self.root / "bin" / "uv"), "venv", str(self.venv)], env=self.env, check=True)
        (self.root / "calls.jsonl").unlink()

    def configure(self, **overrides: Any) -> None:
        """A run directory whose configure stage is done (for runs of later stages only)."""
        from a1x_supervisor.launch import prepare_run_dir
        from a1x_supervisor.spec import parse_spec
        from a1x_supervisor.stages.configure import configure

        prepare_run_dir(parse_spec(self.spec_text(**overrides), base=self.root), self.run_dir)
        configure(self.run_dir)

    def alpagym_spec_text(self, extra: str = "") -> str:
        """The least run spec of ``pipeline = "alpagym"`` in this world, ``extra`` TOML after it."""
        return f"""pipeline = "alpagym"
[paths]
workspace = "{self.ws}"
model_dir = "{self.root / 'ckpt'}"
export_dir = "{self.root / 'export'}"
[alpagym]
release_dir = "{self.root / 'release'}"
{extra}"""

    def spec_text(self, **overrides: Any) -> str:
        values: dict[str, Any] = {
            "alpamayo_version": "1.5",
            "reward_mode": "motion",
            "chunk_ids": [3116],
            "num_clips": 16,
            "wandb": False,
            "stop_grace_s": 1.0,
            "shutdown_grace_s": 1.0,
            "diagnostics_interval_s": 0.5,
            "live_diagnostics": False,
            "hf_backoff_s": 0.1,
            "compute": "local",
            "cluster": "",
        }
        values.update(self.spec_values)
        values.update(overrides)
        r = self.root
        return f"""
alpamayo_version = "{values["alpamayo_version"]}"
reward_mode = "{values["reward_mode"]}"
compute = "{values["compute"]}"

[data]
chunk_ids = {json.dumps(values["chunk_ids"])}
num_clips = {values["num_clips"]}
num_reasoning_clips = 8

[wandb]
enabled = {str(values["wandb"]).lower()}

[paths]
workspace = "{self.ws}"
model_dir = "{r / "model"}"
pai_dir = "{r / "pai"}"
reasoning_dir = "{r / "reasoning"}"
grader_dir = "{r / "judge"}"
output_dir = "{r / "outputs"}"
export_dir = "{r / "export"}"

[supervisor]
stop_grace_s = {values["stop_grace_s"]}
shutdown_grace_s = {values["shutdown_grace_s"]}
diagnostics_interval_s = {values["diagnostics_interval_s"]}
live_diagnostics = {str(values["live_diagnostics"]).lower()}
hf_backoff_s = {values["hf_backoff_s"]}
{values["cluster"]}
"""

    def write_spec(self, **overrides: Any) -> Path:
        path = self.root / "run.toml"
        path.write_text(self.spec_text(**overrides))
        return path

    def cli(self, *args: str, timeout: float = 60.0, check: bool = False) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "a1x_tui", *args],
            cwd=str(self.root),
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"a1x-tui {' '.join(args)} -> {done.returncode}\n{done.stdout}\n{done.stderr}")
        return done

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "a1x_tui", *args],
            cwd=str(self.root),
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def state(self) -> dict[str, Any]:
        return dict(json.loads((self.run_dir / "state.json").read_text()))

    def stage(self, name: str) -> dict[str, Any]:
        return next(s for s in self.state()["stages"] if s["name"] == name)

    def wait_state(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        last: dict[str, Any] = {}
        while time.monotonic() < deadline:
            try:
                last = self.state()
                if predicate(last):
                    return last
            except (OSError, ValueError):
                pass
            time.sleep(0.05)
        raise AssertionError(f"state never matched; last: {json.dumps(last, indent=1)[:3000]}")

    def wait_final(self, timeout: float = 60.0) -> dict[str, Any]:
        return self.wait_state(lambda s: s["status"] in ("succeeded", "failed", "stopped", "blocked"), timeout)

    def daemon_pid(self) -> int | None:
        try:
            return int((self.run_dir / "supervisor.pid").read_text())
        except (OSError, ValueError):
            return None


def wait_gone(pid: int, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def fake_processes(root: Path) -> list[psutil.Process]:
    """Every live process started from this test's fake world (by command line)."""
    out = []
    for proc in psutil.process_iter(["cmdline", "status", "environ"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            env = proc.info.get("environ") or {}
            if env.get("A1X_FAKE_DIR") == str(root) and "a1x_tui" not in " ".join(proc.info["cmdline"] or []):
                out.append(proc)
        except (psutil.Error, TypeError):
            continue
    return out


def build_world(root: Path) -> World:
    ws = root / "ws"
    recipe = ws / "recipes" / "alpamayo1_x_rl"
    (recipe / "models" / "reasoning_vla").mkdir(parents=True)
    (recipe / "pyproject.toml").write_text('[project]\nname = "alpamayo1_x_rl"\n')
    for entry in ("alpamayo_cosmos_rl_post_training_entry.py", "alpamayo_cosmos_rl_post_training_reasoning_entry.py"):
        (recipe / "models" / "reasoning_vla" / entry).write_text(_ENTRY)
    (ws / "scripts").mkdir()
    for script, func in _SCRIPTS.items():
        (ws / "scripts" / script).write_text(f"import sys\nimport fakes\nsys.exit(fakes.{func}())\n")
    stubs = root / "stubs"
    for rel, text in _STUB_MODULES.items():
        (stubs / rel).parent.mkdir(parents=True, exist_ok=True)
        (stubs / rel).write_text(text)
    (stubs / "fakes.py").write_text((HERE / "supervisor_fakes.py").read_text())
    # The recipe's packages as the evaluate stage's program calls them (eval_standins/README.md).
    shutil.copytree(HERE / "eval_standins", stubs, dirs_exist_ok=True)
    # Found by our sbatch script through the venv's cosmos_rl package (launcher/launch_controller.sh).
    controller = stubs / "cosmos_rl" / "launcher" / "launch_controller.sh"
    controller.parent.mkdir()
    program = f"import sys\nsys.path.insert(0, {str(stubs)!r})\nimport fakes\nsys.exit(fakes.controller())\n"
    controller.write_text(f"#!{sys.executable}\n{program}")
    controller.chmod(0o755)
    bin_dir = root / "bin"
    bin_dir.mkdir()
    (bin_dir / "uv").write_text(
        f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(stubs)!r})\nimport fakes\nsys.exit(fakes.uv())\n"
    )
    (bin_dir / "uv").chmod(0o755)
    (root / "hfhome").mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("HF_TOKEN", "WANDB_API_KEY", "HF_HOME", "PYTHONPATH", "CUDA_VISIBLE_DEVICES")
    }
    env.update(
        {
            "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
            "PYTHONPATH": str(REPO),
            "A1X_FAKE_DIR": str(root),
            "A1X_FAKE_STUBS": str(stubs),
            "HF_HOME": str(root / "hfhome"),
            "HF_TOKEN": HF_SECRET,
            "HOME": str(root),
        }
    )
    return World(root=root, env=env)


def clean_world(w: World) -> None:
    """Never leave a stand-in or a supervisor behind, whatever the test did."""
    pid = w.daemon_pid()
    if pid is not None:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    for proc in fake_processes(w.root):
        with contextlib.suppress(psutil.Error):
            proc.send_signal(signal.SIGKILL)
