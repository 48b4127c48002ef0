"""Stand-ins for the programs the alpagym pipeline runs: ``uv`` (its ``uv sync`` and every ``uv run``:
the download, the two conversion scripts, AlpaGym's NCCL check, the host CLI), ``docker``, ``squeue``,
``sacct`` and ``scancel``. One file, dispatched on the program's name; each call is appended to
``$A1X_FAKE_DIR/calls.jsonl``. The host copies a fixture run folder of tests/fixtures/alpagym (built
from upstream message strings, its README says) and prints that run's host lines, as the real host
makes its run folder and prints to its terminal. Modes come from ``$A1X_FAKE_DIR/fake.json``."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(os.environ["A1X_FAKE_DIR"])
FIXTURES = Path(os.environ["A1X_ALPAGYM_FIXTURES"])


def modes() -> dict:
    try:
        return dict(json.loads((ROOT / "fake.json").read_text()))
    except (OSError, ValueError):
        return {}


def record(prog: str, argv: list[str]) -> None:
    env = {k: os.environ[k] for k in ("NCCL_P2P_DISABLE", "WANDB_MODE") if k in os.environ}
    row = {"prog": prog, "argv": argv, "env": env, "hf_token": "HF_TOKEN" in os.environ, "cwd": os.getcwd()}
    with open(ROOT / "calls.jsonl", "a") as fh:
        fh.write(json.dumps(row) + "\n")


def _docker_state() -> dict:
    try:
        return dict(json.loads((ROOT / "docker.json").read_text()))
    except (OSError, ValueError):
        return {}


def _add_containers(folder: Path, ids: list[str]) -> None:
    state = _docker_state()
    state.setdefault(str(folder), []).extend(ids)
    (ROOT / "docker.json").write_text(json.dumps(state))


def docker(argv: list[str]) -> int:
    record("docker", argv)
    m = modes()
    if argv[:2] == ["compose", "version"]:
        if m.get("docker") == "no_compose":
            print("docker: 'compose' is not a docker command.", file=sys.stderr)
            return 1
        print("Docker Compose version v2.29.7")
        return 0
    if argv[:1] == ["info"]:
        if m.get("docker") == "no_daemon":
            print("permission denied while trying to connect to the Docker daemon socket", file=sys.stderr)
            return 1
        runtimes = {"runc": {"path": "runc"}}
        if m.get("docker") != "no_toolkit":
            runtimes["nvidia"] = {"path": "nvidia-container-runtime"}
        print(json.dumps(runtimes))
        return 0
    if argv[:2] == ["ps", "-aq"]:
        label = argv[argv.index("--filter") + 1].split("=", 1)[1]
        folder = label.split("=", 1)[1]
        print("\n".join(_docker_state().get(folder, [])))
        return 0
    if argv[:2] == ["rm", "-f"]:
        state = {k: [c for c in v if c not in argv[2:]] for k, v in _docker_state().items()}
        (ROOT / "docker.json").write_text(json.dumps(state))
        print("\n".join(argv[2:]))
        return 0
    return 1


def _opt(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def _write_model(folder: Path, model_type: str, *, link_to: Path | None = None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"model_type": model_type, "_target_": "alpamayo1_5.models.X"}))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (folder / name).write_text("{}")
    index = {"weight_map": {"w.a": "model-00001-of-00001.safetensors"}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    shard = folder / "model-00001-of-00001.safetensors"
    if shard.exists() or shard.is_symlink():
        shard.unlink()
    if link_to is not None:
        shard.symlink_to(link_to / "model-00001-of-00001.safetensors")
    else:
        shard.write_bytes(b"weights")


def _host(argv: list[str]) -> int:
    overrides = dict(a.split("=", 1) for a in argv if "=" in a)
    mode = modes().get("host", "ok")
    fixture = {"ok": "healthy", "hang": "config_only", "bringup_failed": "bringup_failed"}.get(mode, "healthy")
    source = next((FIXTURES / fixture).iterdir())
    run = Path(overrides["run_root"]) / f"{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%SZ')}-{uuid.uuid4().hex}"
    shutil.copytree(source, run, ignore=shutil.ignore_patterns("host.log"))
    (run / "alpasim" / "wizard_0").mkdir(parents=True, exist_ok=True)
    host_log = source / "host.log"
    if host_log.exists():
        for line in host_log.read_text().splitlines():
            print(line, flush=True)
    if overrides.get("deploy") == "slurm":
        print("Submitted Slurm job 4242", flush=True)
        print(f"Run directory: {run}", flush=True)
        return 0
    _add_containers(run / "alpasim" / "wizard_0", ["c0ffee01", "c0ffee02"])
    if mode == "hang":  # the Wizard: its own session, as the host starts it (start_new_session=True)
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
        print("Starting AlpaSim Wizard: runtime_index=0 host=localhost log_dir=" + str(run / "alpasim"), flush=True)
        time.sleep(600)
        return 0
    if mode == "bringup_failed":
        time.sleep(float(modes().get("host_s", 2.5)))  # the Wizard's start-up takes a while before it fails
        return 1
    export = run / "cosmos" / "20260701120005" / "safetensors" / "step_4"
    _write_model(export, "alpamayo_reasoning_vla_expert")
    time.sleep(float(modes().get("host_s", 2.5)))  # a run takes a while: the live diagnostics evaluate it
    return 0


def uv(argv: list[str]) -> int:
    record("uv", argv)
    if argv == ["--version"]:
        print(modes().get("uv_version", "uv 0.10.4 (0e1351e40 2026-06-20)"))
        return 0
    if argv[:2] == ["sync", "--all-packages"]:
        venv = Path.cwd() / ".venv" / "bin"
        venv.mkdir(parents=True, exist_ok=True)
        stubs = ROOT / "alpagym_stubs"
        for module in ("alpagym_host", "alpagym_runtime", "alpagym_alpamayo_r1", "cosmos_rl"):
            (stubs / module).mkdir(parents=True, exist_ok=True)
            (stubs / module / "__init__.py").write_text("")
        (venv / "python").write_text(f"#!/bin/sh\nPYTHONPATH={stubs} exec {sys.executable} \"$@\"\n")
        (venv / "python").chmod(0o755)
        print("Installed 312 packages in 41.2s")
        return 0
    if argv[:2] != ["run", "--no-sync"]:
        return 2
    rest = argv[2:]
    while rest and rest[0] in ("--all-packages", "--package"):
        rest = rest[2:] if rest[0] == "--package" else rest[1:]
    if rest[:2] == ["python", "-c"]:
        local_dir = re.search(r"local_dir='([^']+)'", rest[2])
        assert local_dir is not None
        _write_model(Path(local_dir.group(1)), "alpamayo_reasoning_vla")
        print(local_dir.group(1))
        return 0
    if rest[:3] == ["python", "-m", "alpagym_host.cli"]:
        return _host(rest[3:])
    if rest[:1] == ["torchrun"]:
        mode = modes().get("p2p", "ok")
        if mode == "one_gpu":
            print("This check needs 2 GPUs (P2P is GPU-to-GPU); found 1.")
            return 0
        if mode == "broken" and os.environ.get("NCCL_P2P_DISABLE") != "1":
            print("torch.distributed.DistBackendError: NCCL error: Watchdog caught collective operation timeout")
            return 1
        suffix = " (with NCCL_P2P_DISABLE=1)" if os.environ.get("NCCL_P2P_DISABLE") == "1" else ""
        print(f"NCCL P2P send/recv OK{suffix}: this topology works for AlpaGym.")
        return 0
    script = Path(rest[1]).name if len(rest) > 1 else ""
    if script == "convert_release_to_alpagym_checkpoint.py":
        src, out = Path(_opt(rest, "--input")), Path(_opt(rest, "--output"))
        _write_model(out, "alpamayo_reasoning_vla_expert", link_to=src)
        print(f"\nCheckpoint ready: {out}")
        return 0
    if script == "convert_alpagym_checkpoint_to_inference.py":
        out = Path(_opt(rest, "--output"))
        _write_model(out, "alpamayo1_5")
        print(f"Inference-format checkpoint ready: {out}")
        return 0
    return 2


def slurm(prog: str, argv: list[str]) -> int:
    record(prog, argv)
    if prog == "squeue":
        n = int((ROOT / "squeue.count").read_text()) if (ROOT / "squeue.count").exists() else 0
        (ROOT / "squeue.count").write_text(str(n + 1))
        states = modes().get("squeue", ["PENDING", "RUNNING"])
        print(states[n] if n < len(states) else "")
        return 0
    if prog == "sacct":
        print(modes().get("sacct", "COMPLETED"))
        return 0
    return 0  # scancel


def main() -> int:
    prog = Path(sys.argv[0]).name
    if prog == "docker":
        return docker(sys.argv[1:])
    if prog in ("squeue", "sacct", "scancel"):
        return slurm(prog, sys.argv[1:])
    return uv(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
