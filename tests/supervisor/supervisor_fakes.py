"""Stand-in programs for every stage, run as real subprocesses by the supervisor under test.

Each fake parses the flags of the program it replaces (so a wrong flag fails like the real one),
records its command line and the environment variables that matter in ``calls.jsonl``, and
produces outputs shaped like the real ones. ``fake.json`` in ``$A1X_FAKE_DIR`` picks a behaviour
per stage (``ok`` by default). Secret values are printed on purpose: the supervisor must scrub them.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(os.environ["A1X_FAKE_DIR"])
WATCHED = (
    "ALPAMAYO_PAI_LOCAL_DIR",
    "ALPAMAYO_PAI_REASONING_LOCAL_DIR",
    "COSMOS_LOG_LEVEL",
    "WANDB_MODE",
    "HF_HUB_OFFLINE",
    "VIRTUAL_ENV",
    "UV_CACHE_DIR",
)


def mode(stage: str) -> str:
    try:
        return str(json.loads((ROOT / "fake.json").read_text()).get(stage, "ok"))
    except (OSError, ValueError):
        return "ok"


def setting(key: str, default: int) -> int:
    try:
        return int(json.loads((ROOT / "fake.json").read_text()).get(key, default))
    except (OSError, ValueError):
        return default


def record(prog: str) -> None:
    entry = {
        "prog": prog,
        "argv": sys.argv[1:],
        "cwd": os.getcwd(),
        "env": {k: os.environ.get(k) for k in WATCHED},
        "has_hf_token": bool(os.environ.get("HF_TOKEN")),
        "has_wandb_key": bool(os.environ.get("WANDB_API_KEY")),
        "pid": os.getpid(),
    }
    with open(ROOT / "calls.jsonl", "a") as fh:
        fh.write(json.dumps(entry) + "\n")
    # a careless program that prints its secrets: the stage log must not keep them
    print(f"debug: HF_TOKEN={os.environ.get('HF_TOKEN', '')} WANDB_API_KEY={os.environ.get('WANDB_API_KEY', '')}")
    sys.stdout.flush()


def bump(name: str) -> int:
    path = ROOT / f"count_{name}"
    n = int(path.read_text()) + 1 if path.exists() else 1
    path.write_text(str(n))
    return n


def sleep_forever() -> None:
    while True:
        time.sleep(0.2)


def _touch(path: Path, data: bytes = b"x") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


# -- python scripts of the recipe checkout ------------------------------------------------------------


def convert_release() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--output-dir", type=Path)
    p.add_argument("--vlm-name-or-path", default="nvidia/Cosmos-Reason2-8B")
    p.add_argument("--alpamayo-model", default="nvidia/Alpamayo-1.5-10B")
    args = p.parse_args()
    record("convert")
    if mode("convert") == "gated":
        print("huggingface_hub.errors.GatedRepoError: 403 Client Error.", file=sys.stderr)
        print(
            f"Cannot access gated repo for url https://huggingface.co/{args.alpamayo_model}/resolve/main/config.json.",
            file=sys.stderr,
        )
        return 1
    out = args.output_dir
    out.mkdir(parents=True, exist_ok=True)
    blob = ROOT / "hfcache" / "blob-00001"
    _touch(blob, b"weights")
    shard = out / "model-00001-of-00001.safetensors"
    if shard.is_symlink() or shard.exists():
        shard.unlink()
    shard.symlink_to(blob)
    index = {"metadata": {}, "weight_map": {"a.weight": shard.name, "b.weight": shard.name}}
    (out / "model.safetensors.index.json").write_text(json.dumps(index))
    config = {"model_type": "alpamayo_reasoning_vla", "architectures": ["ReasoningVLA"]}
    config["vlm_name_or_path"] = args.vlm_name_or_path
    (out / "config.json").write_text(json.dumps(config))
    for name in ("preprocessor_config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"):
        (out / name).write_text("{}")
    print("Fetching 3 files:  33%|███       | 1/3 [00:00<00:00]\r", end="")
    print("Fetching 3 files: 100%|██████████| 3/3 [00:00<00:00]")
    print(f"Done! Training checkpoint written to:\n  {out}\nContents:")
    return 0


def _clip_table(rows_per_chunk: dict[int, int]):  # type: ignore[no-untyped-def]
    import pyarrow as pa

    ids, chunks = [], []
    for chunk, n in rows_per_chunk.items():
        for i in range(n):
            ids.append(f"clip-{chunk}-{i:03d}")
            chunks.append(chunk)
    return pa.table({"clip_id": ids, "chunk": chunks})


def _chunk_files(out: Path, chunks: list[int], args: argparse.Namespace) -> None:
    for component, subs in (("camera", args.camera), ("calibration", args.calibration), ("labels", args.labels)):
        for sub in subs or []:
            for chunk in chunks:
                _touch(out / component / sub / f"{sub}.chunk_{chunk:04d}.zip")


def download_pai() -> int:
    import pyarrow.parquet as pq

    p = argparse.ArgumentParser()
    p.add_argument("--output-dir", type=Path, default=Path("nvidia/PhysicalAI-Autonomous-Vehicles"))
    p.add_argument("--chunk-ids", type=str, default=None)
    p.add_argument("--camera", nargs="+")
    p.add_argument("--calibration", nargs="+")
    p.add_argument("--labels", nargs="+")
    p.add_argument("--lidar", nargs="+")
    p.add_argument("--radar", nargs="+")
    p.add_argument("--reasoning", nargs="+")
    p.add_argument("--only-reasoning-chunks", action="store_true")
    p.add_argument("--num-reasoning-clips", type=int, default=None)
    p.add_argument("--random-seed", type=int, default=11)
    args = p.parse_args()
    record("download")
    behaviour = mode("download")
    out = args.output_dir
    out.mkdir(parents=True, exist_ok=True)
    if behaviour == "empty":
        # docs/reference/alpamayo-recipe.md §5: the Hub failed, snapshot_download returned the existing dir, rc 0
        print(f"Returning existing local_dir `{out}` as remote repo cannot be accessed in `snapshot_download` (x).")
        return 0
    if behaviour == "429_once" and bump("download") == 1:
        print(
            "huggingface_hub.errors.HfHubHTTPError: 429 Client Error: Too Many Requests for url: "
            "https://huggingface.co/api/datasets/nvidia/PhysicalAI-Autonomous-Vehicles/revision/main",
            file=sys.stderr,
        )
        return 1
    if behaviour == "gated":
        print(
            "huggingface_hub.errors.GatedRepoError: Cannot access gated repo for url "
            "https://huggingface.co/datasets/nvidia/PhysicalAI-Autonomous-Vehicles/resolve/main/clip_index.parquet.",
            file=sys.stderr,
        )
        return 1
    if behaviour == "hang":
        print("Fetching 12 files:   0%|          | 0/12 [00:00<?, ?it/s]", flush=True)
        sleep_forever()
    (out / "features.csv").write_text("feature,chunk_path\n")
    _touch(out / "metadata" / "feature_presence.parquet")
    pq.write_table(_clip_table({3116: 20, 3117: 5}), out / "clip_index.parquet")
    for k in range(1, 4):
        print(f"Fetching 3 files: {k * 33}%|███       | {k}/3 [00:00<00:00]\r", end="", flush=True)
    print()
    if args.only_reasoning_chunks:
        _touch(out / "reasoning" / "ood_reasoning.parquet")
        n = min(args.num_reasoning_clips, 20)
        pq.write_table(_clip_table({3116: n}), out / "clip_index_reasoning_mini.parquet")
        print(f"[download_pai] Wrote mini clip_index ({n} row(s)) to: {out / 'clip_index_reasoning_mini.parquet'}")
        _chunk_files(out, [3116], args)
    else:
        chunks = [int(c) for c in args.chunk_ids.split()]
        _chunk_files(out, chunks, args)
    print(f"Downloaded dataset snapshot to: {out}")
    return 0


def curate() -> int:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    p = argparse.ArgumentParser()
    p.add_argument("--clip-index-path", "-p", required=True)
    p.add_argument("--chunk", "-c")
    p.add_argument("--num-samples", "-n", type=int, required=True)
    p.add_argument("--output-path", "-o", required=True)
    p.add_argument("--only-reasoning-chunks", action="store_true")
    args = p.parse_args()
    record("curate")
    table = pq.read_table(args.clip_index_path)
    chunks = [int(c) for c in args.chunk.split()]
    table = table.filter(pc.is_in(table.column("chunk"), value_set=__import__("pyarrow").array(chunks)))
    n = min(args.num_samples, table.num_rows)
    if mode("curate") == "too_many":
        n = table.num_rows
    print(f"[curate_pai_samples] Restricting to chunk ID(s): {args.chunk.split()}")
    pq.write_table(table.slice(0, n), args.output_path)
    return 0


def export_checkpoint() -> int:
    import re

    p = argparse.ArgumentParser()
    p.add_argument("--cosmos-policy-ckpt", required=True, type=Path)
    p.add_argument("--base-hf-ckpt", required=True, type=Path)
    p.add_argument("--output-dir", required=True, type=Path)
    p.add_argument("--max-shard-size", default="4GB")
    p.add_argument("--overwrite", action="store_true")
    args = p.parse_args()
    record("export")
    out = args.output_dir
    out.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "preprocessor_config.json", "tokenizer.json", "tokenizer_config.json"):
        (out / name).write_text((args.base_hf_ckpt / name).read_text())
    ranks = sorted(
        int(m.group(1)) for f in args.cosmos_policy_ckpt.iterdir() if (m := re.match(r"model_rank_(\d+)\.pth$", f.name))
    )
    _touch(out / "model-00001.safetensors", b"tensor")
    index = {
        "metadata": {"total_size": 6},
        "weight_map": {"a": "model-00001.safetensors", "b": "model-00001.safetensors"},
    }
    (out / "model.safetensors.index.json").write_text(json.dumps(index))
    provenance = {
        "cosmos_policy_ckpt": str(args.cosmos_policy_ckpt),
        "base_hf_ckpt": str(args.base_hf_ckpt),
        "ranks": ranks,
        "num_keys": 2,
        "num_shards": 1,
    }
    (out / "cosmos_export_provenance.json").write_text(json.dumps(provenance))
    print(f"Done. output_dir={out}")
    return 0


# -- programs on PATH / in the venv -----------------------------------------------------------------------

VENV_WRAPPER = '#!/bin/sh\nPYTHONPATH="{stubs}${{PYTHONPATH:+:$PYTHONPATH}}" exec {python} "$@"\n'
PROGRAM = "#!{python}\nimport sys\nsys.path.insert(0, {stubs!r})\nimport fakes\nsys.exit(fakes.{func}())\n"


def make_venv(venv: Path) -> None:
    """What ``uv venv`` creates here: a python that sees the stub packages, cosmos-rl, hf."""
    stubs = os.environ.get("A1X_FAKE_STUBS", str(Path(__file__).parent))
    bin_dir = venv / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    (bin_dir / "python").write_text(VENV_WRAPPER.format(stubs=stubs, python=sys.executable))
    (bin_dir / "cosmos-rl").write_text(PROGRAM.format(python=sys.executable, stubs=stubs, func="cosmos_rl"))
    (bin_dir / "hf").write_text(PROGRAM.format(python=sys.executable, stubs=stubs, func="hf_cli"))
    for name in ("python", "cosmos-rl", "hf"):
        (bin_dir / name).chmod(0o755)


def uv() -> int:
    record("uv")
    args = sys.argv[1:]
    if args[:1] == ["venv"]:
        target = Path(args[1])
        make_venv(target if target.is_absolute() else Path.cwd() / target)
        print(f"Creating virtual environment at: {args[1]}")
        return 0
    if args[:1] == ["sync"]:
        if mode("env") == "fail" and "--no-install-package" not in args:
            print("error: Failed to build `flash-attn==2.8.3`", file=sys.stderr)
            return 1
        print("Resolved 312 packages in 1ms")
        print("Installed 0 packages")
        return 0
    print(f"uv: unknown command {args}", file=sys.stderr)
    return 2


def hf_cli() -> int:
    p = argparse.ArgumentParser(prog="hf")
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("download")
    d.add_argument("repo_id")
    d.add_argument("--local-dir", type=Path)
    args = p.parse_args()
    record("hf")
    out = args.local_dir
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text("{}")
    (out / "tokenizer.json").write_text("{}")
    _touch(out / "model.safetensors", b"w")
    print(f"{out}")
    return 0


def _cosmos_line(msg: str, rank: bool = False) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S") + ",000"
    return ("[rank0]:" if rank else "") + f"[cosmos] {stamp} - cosmos - INFO - {msg}\n"


def _child_sleeper(new_session: bool) -> None:
    code = "import time\nwhile True: time.sleep(0.2)\n"
    subprocess.Popen([sys.executable, "-c", code], start_new_session=new_session)


def cosmos_rl() -> int:
    import tomlkit

    if "--num-workers" in sys.argv:  # a node of a Slurm job (our sbatch script)
        return cosmos_rl_worker()
    p = argparse.ArgumentParser(prog="cosmos-rl")
    p.add_argument("--config", required=True)
    p.add_argument("--policy", type=int)
    p.add_argument("--rollout", type=int)
    p.add_argument("--log-dir")
    p.add_argument("--debug", action="store_true")
    p.add_argument("script", nargs="?")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    args = p.parse_args()
    record("cosmos-rl")
    behaviour = mode("train")
    if behaviour == "ignore_term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    conf = tomlkit.parse(Path(args.config).read_text()).unwrap()
    ranks = int(conf["policy"]["parallelism"].get("dp_shard_size", 1))
    output_dir = Path(conf["train"]["output_dir"])
    steps = setting("steps", 4)
    log_dir = Path(args.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    while True:  # one logs_<ts> per attempt (the real launcher shares a folder within one second)
        logs = log_dir / ("logs_" + time.strftime("%Y%m%d-%H%M%S"))
        if not logs.exists():
            break
        time.sleep(0.1)
    logs.mkdir()
    latest = log_dir / "logs_latest"
    if latest.is_symlink():
        latest.unlink()
    latest.symlink_to(logs.name)
    print("Detected 8 GPUs: 0, 1, 2, 3, 4, 5, 6, 7", flush=True)
    print("Controller is ready at http://localhost:8000", flush=True)
    controller = open(logs / "controller.log", "a")  # noqa: SIM115 - open for the whole fake run
    policy = open(logs / "policy_0.log", "a")  # noqa: SIM115
    (logs / "rollout_0.log").write_text(_cosmos_line("[Rollout] Engine initialized.", rank=True))
    last = steps
    if behaviour in ("replica_dies", "crash_success"):
        last = 2
    step_sleep = 0.3 if behaviour == "slow" else 0.02
    if behaviour in ("slow", "ignore_term", "spawn"):
        if behaviour == "spawn":
            _child_sleeper(new_session=False)  # stays in the stage's process group
            _child_sleeper(new_session=True)  # escapes it, like a daemonizing redis-server
        last = steps if behaviour == "slow" else 1
    for s in range(1, last + 1):
        controller.write(_cosmos_line(f"Step: {s}/{steps}, Reward Mean: -0.2500, Reward Std: 0.1000"))
        controller.flush()
        time.sleep(step_sleep)
    if behaviour in ("ignore_term", "spawn"):
        sleep_forever()
    if behaviour == "replica_dies":
        (logs / "rollout_0.log").write_text(
            "[rank0]: torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\nexitcode  : -9\n"
        )
        print("Process 2 failed with return code 1", flush=True)
        _child_sleeper(new_session=False)
        sleep_forever()
    if behaviour == "crash_success":
        print("Process 0 (controller) exited via the coordinated shutdown path (rc=143); treating as success")
        return 0
    stamp = time.strftime("%Y%m%d%H%M%S")
    ckpt = output_dir / stamp / "checkpoints" / f"step_{steps}" / "policy"
    ckpt.mkdir(parents=True, exist_ok=True)
    (ckpt / "cosmos_config").write_text("{}")
    for r in range(ranks):
        _touch(ckpt / f"model_rank_{r}.pth")
        _touch(ckpt / f".rank_{r}_complete", b"")
    policy.write(_cosmos_line(f"[Policy] Saving cosmos checkpoint at step {steps}...", rank=True))
    policy.write(_cosmos_line(f"[Policy] Step: {steps}, checkpoint saved successfully at {ckpt}.", rank=True))
    policy.flush()
    if behaviour == "hang_after_finish":
        sleep_forever()
    print("Process 0 completed successfully", flush=True)
    return 0


# -- the same two programs inside a Slurm job (compute = "cluster", our sbatch script) ---------------
# The job step sends their stderr to slurm/part_<N>/run_<M>/<role>_<t>.err (docs/reference/cosmos-rl.md §11.1).


def _say(msg: str, rank: bool = False) -> None:
    sys.stderr.write(_cosmos_line(msg, rank=rank))
    sys.stderr.flush()


def _hang_with_child() -> None:
    """Sleep in a child, as a launcher waits on its replicas; SIGTERM (scancel) ends both."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "a1x-fake-replica"])
    signal.signal(signal.SIGTERM, lambda *_: (child.terminate(), sys.exit(143)))
    child.wait()


def _script_opens(script: str) -> bool:
    """``python SCRIPT`` from this process's folder, as launch_controller.sh / launch_replica.sh run it."""
    if not script.endswith(".py") or Path(script).is_file():
        return True
    print(f"python: can't open file {os.path.abspath(script)!r}: [Errno 2] No such file or directory", file=sys.stderr)
    return False


def controller() -> int:
    """``launch_controller.sh --port P --config C --script ENTRY`` (docs/reference/cosmos-rl.md §2.8)."""
    p = argparse.ArgumentParser(prog="launch_controller.sh")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--config", required=True)
    p.add_argument("--script", required=True)
    args = p.parse_args()
    record("controller")
    if not _script_opens(args.script):
        return 2
    _say(f"[Controller] Using script: {args.script}")
    steps = setting("steps", 4)
    for s in range(1, steps + 1):
        _say(f"Step: {s}/{steps}, Reward Mean: -0.2500, Reward Std: 0.1000")
        time.sleep(0.02)
    if mode("train") == "hang":
        _hang_with_child()
    return 0


def cosmos_rl_worker() -> int:
    """``cosmos-rl --num-workers N --worker-idx k --url HOST:PORT ...`` on one node of the job."""
    import tomlkit

    p = argparse.ArgumentParser(prog="cosmos-rl")
    p.add_argument("--config", required=True)
    p.add_argument("--num-workers", type=int, required=True)
    p.add_argument("--worker-idx", type=int, required=True)
    p.add_argument("--url", required=True)
    p.add_argument("--policy", type=int)
    p.add_argument("--rollout", type=int)
    p.add_argument("script")
    args = p.parse_args()
    record("cosmos-rl")
    if not _script_opens(args.script):
        return 2
    _say(f"Controller will be launched on another node. This node will connect to {args.url} for control.")
    _say("POLICY Replica started at global rank 0, with replica name: 3f9c-fake", rank=True)
    if mode("train") == "hang":
        _hang_with_child()
    conf = tomlkit.parse(Path(args.config).read_text()).unwrap()
    ranks = int(conf["policy"]["parallelism"].get("dp_shard_size", 1))
    steps = setting("steps", 4)
    stamp = time.strftime("%Y%m%d%H%M%S")
    ckpt = Path(conf["train"]["output_dir"]) / stamp / "checkpoints" / f"step_{steps}" / "policy"
    ckpt.mkdir(parents=True, exist_ok=True)
    (ckpt / "cosmos_config").write_text("{}")
    for r in range(ranks):
        _touch(ckpt / f"model_rank_{r}.pth")
        _touch(ckpt / f".rank_{r}_complete", b"")
    _say(f"[Policy] Step: {steps}, checkpoint saved successfully at {ckpt}.", rank=True)
    _say("Process 0 completed successfully")
    return 0
