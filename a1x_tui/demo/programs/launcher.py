"""The demo's ``cosmos-rl`` launcher: the log layout and launcher lines of the real one, no GPU.

``python -m a1x_tui.demo.programs.launcher --config TOML --log-dir DIR --run-dir RUN [--speed S]``.
Like the real launcher (docs/reference/cosmos-rl.md §2.3, §2.6, §3.1) it creates ``DIR/logs_<YYYYmmdd-HHMMSS>/``,
re-points ``DIR/logs_latest`` at it (temporary link + ``os.replace``), starts the controller, then
one policy and one rollout replica, each with its stdout and stderr in ``<role>_<i>.log`` and
``COSMOS_ROLE`` / ``CUDA_VISIBLE_DEVICES`` in its environment, and reports each process's exit.
Its own lines go to stdout (the supervisor keeps them in ``stages/train.log``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from a1x_tui.demo import lines
from a1x_tui.demo.gpu import SimulatedGpus
from a1x_tui.demo.programs._stop import on_first_sigterm
from a1x_tui.demo.scenario import Trouble


def say(msg: str, level: str = "INFO") -> None:
    print(lines.cosmos(datetime.now(), level, msg, rank=False), flush=True)


def make_logs_dir(log_dir: Path) -> Path:
    log_dir.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    run = log_dir / f"logs_{stamp}"
    n = 1
    while run.exists():  # a restart within the same second
        time.sleep(1.0 if n == 1 else 0.2)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        run = log_dir / f"logs_{stamp}"
        n += 1
    run.mkdir()
    tmp = log_dir / f".logs_latest.{os.getpid()}"
    tmp.unlink(missing_ok=True)
    os.symlink(run.name, tmp)
    os.replace(tmp, log_dir / "logs_latest")
    return run


def _toml(path: Path) -> dict[str, Any]:
    import tomlkit

    try:
        return dict(tomlkit.parse(path.read_text(encoding="utf-8")).unwrap())
    except (OSError, ValueError) as exc:
        raise SystemExit(f"Error reading config file {path}: {exc}") from None  # §2.4's wording


def _ranks(data: dict[str, Any]) -> int:
    par = (data.get("policy") or {}).get("parallelism") or {}
    size = 1
    for key in ("tp_size", "cp_size", "pp_size", "dp_shard_size"):
        value = par.get(key, 1)
        size *= value if isinstance(value, int) and value >= 1 else 1
    return size


def _vllm_fraction(data: dict[str, Any]) -> float:
    """``rollout.gpu_memory_utilization``: the share of its GPU the simulated vLLM engine takes."""
    value = (data.get("rollout") or {}).get("gpu_memory_utilization", 0.8)
    return float(value) if isinstance(value, (int, float)) and 0 < value <= 1 else 0.8


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="a1x_tui.demo.programs.launcher")
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--log-dir", type=Path, required=True)
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("--speed", type=float, default=1.0)
    args = parser.parse_args(argv)

    print("a1x-tui demo: a simulated cosmos-rl launcher (no GPU is used, no model is trained)", flush=True)
    data = _toml(args.config)
    trouble = Trouble.from_toml(args.config)
    print(f"a1x-tui demo: troubles this run plays: {', '.join(trouble.names()) or 'none'}", flush=True)
    say("Number of policy replicas: 1 with 1 gpus each")
    say("Number of rollout replicas: 1 with 1 gpus each")
    say("Number of reference replicas: 0 with 1 gpus each")
    say("Detected 2 GPUs: 0, 1")
    say("Controller will be launched locally on port 8000.")
    # §2.2: the launcher writes the effective config to a temporary TOML that every process loads. As
    # there: a unique name in the temp folder (TMPDIR), removed when the launcher ends.
    fd, copy_name = tempfile.mkstemp(prefix="tmp", suffix=".toml")
    with os.fdopen(fd, "w", encoding="utf-8") as copy:
        copy.write(args.config.read_text(encoding="utf-8"))
    config_copy = Path(copy_name)
    try:
        return _launch(args, data, trouble, config_copy)
    finally:
        config_copy.unlink(missing_ok=True)


def _launch(args: argparse.Namespace, data: dict[str, Any], trouble: Trouble, config_copy: Path) -> int:
    say(f"Temporary configuration file created at {config_copy}")
    say("Number of workers required: 1")

    run = make_logs_dir(args.log_dir)
    output_dir = Path(str((data.get("train") or {}).get("output_dir", args.run_dir / "outputs")))
    checkpoint = output_dir / time.strftime("%Y%m%d%H%M%S") / "checkpoints" / "step_30" / "policy"
    t0 = time.time() + 0.3
    gpus = SimulatedGpus(args.run_dir, trouble, speed=args.speed, t0=t0, vllm_fraction=_vllm_fraction(data))
    children: list[subprocess.Popen[bytes]] = []

    def stop(signum: int) -> None:
        for child in children:
            if child.poll() is None:
                child.terminate()
        gpus.stop()
        raise SystemExit(128 + signum)

    on_first_sigterm(stop)
    gpus_of = {"controller": None, "policy": "0", "rollout": "1"}
    for role in ("controller", "policy", "rollout"):
        name = "controller" if role == "controller" else f"{role}_0"
        argv_child = [
            sys.executable,
            "-m",
            "a1x_tui.demo.programs.replica",
            "--role",
            role,
            "--t0",
            repr(t0),
            "--speed",
            repr(args.speed),
            "--config",
            str(args.config),
            "--config-copy",
            str(config_copy),
            "--checkpoint-dir",
            str(checkpoint),
            "--ranks",
            str(_ranks(data)),
        ]
        env = dict(os.environ, COSMOS_ROLE=role.capitalize(), COSMOS_CONTROLLER_HOST="localhost:8000")
        if gpus_of[role] is not None:
            env["CUDA_VISIBLE_DEVICES"] = str(gpus_of[role])
            env["LOCAL_RANK"] = "0"
        with open(run / f"{name}.log", "wb") as out:  # §3.1: opened "wb", stdout and stderr together
            children.append(subprocess.Popen(argv_child, stdout=out, stderr=subprocess.STDOUT, env=env))
        say(f"Launching process with command: {' '.join(argv_child[2:6])} (simulated {name})")
        if role == "controller":
            say("Waiting for controller to be ready at localhost:8000")
            say("Controller is ready at localhost:8000")
    gpus.pids = {0: children[1].pid, 1: children[2].pid}
    gpus.start()

    pending = dict(enumerate(children))
    code = 0
    while pending:
        for i, child in list(pending.items()):
            rc = child.poll()
            if rc is None:
                continue
            del pending[i]
            if rc == 0:
                say(f"Process {i} completed successfully")  # §2.7
            else:
                say(f"Process {i} failed with return code {rc}")
                code = 1
        time.sleep(0.1)
    time.sleep(1.2 / max(1.0, args.speed / 4))  # one more GPU sample with the memory released
    gpus.stop()
    return code


if __name__ == "__main__":
    sys.exit(main())
