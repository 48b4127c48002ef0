"""The demo's AlpaGym host: a closed-loop run played in real time, no GPU, no docker, no simulator.

``python -m a1x_tui.demo.programs.closed_loop --run-root DIR --model DIR [--speed S]`` does what the
real ``python -m alpagym_host.cli`` leaves on disk (docs/reference/alpagym.md §3): a run folder
``DIR/<YYYYmmddTHHMMSSZ>-<hex>/`` with ``resolved_config.yaml`` and ``cosmos_config.toml``, the host's
lines on stdout, ``logs/logs_<ts>/`` with the controller, policy and rollout logs, AlpaSim's runtime
worker log, one artifact per episode and, at the end, the trainer's safetensors export. The lines are
built from the message strings the reader matches (docs/reference/alpagym.md §4), with made-up values.

The scenario: ten steps of four episodes; at steps 3 to 5 one scene fails twice before each drive
(``episode_failures``); the reward's collision penalty is -0.1, so from step 6 on the policy drives into
collisions while the reward still rises (``reward_hacking``). ``--export OUT --input DIR`` writes the
inference-format export instead (the demo's convert_alpagym_checkpoint_to_inference.py), ``--convert OUT``
an AlpaGym-format checkpoint (its convert_release_to_alpagym_checkpoint.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from a1x_tui.demo import lines

STEPS = 10
EPISODES = 4  # per step: 2 scenes x n_generation 2
SCENES = ("clipgt-a309e228-26e1-423e-a44c-cb00aa7378cb", "clipgt-01d503d4-449b-46fc-8d78-9085e70d3554")
FAILING_STEPS = (3, 4, 5)
HACKING_FROM = 6
STEP_S = 4.0  # seconds per step at speed 1
COLLISION_SCALE = -0.1  # too small to matter: what the scenario's reward hacking exploits
_SHARD = "model-00001-of-00001.safetensors"


def ag(level: str, name: str, msg: str, *, rank: bool = True) -> str:
    """AlpaGym's ``%(asctime)s %(levelname)s %(name)s: %(message)s``, behind torchrun's ``[rank0]:``."""
    line = f"{lines.asctime(datetime.now())} {level} {name}: {msg}"
    return f"[rank0]:{line}" if rank else line


def sim(level: str, msg: str) -> str:
    """AlpaSim's runtime worker: ``HH:MM:SS.mmm [W0] LEVEL:\\t<message>``."""
    now = datetime.now()
    return f"{now:%H:%M:%S}.{now.microsecond // 1000:03d} [W0] {level}:\t{msg}"


def cosmos(msg: str, *, rank: bool = False) -> str:
    return lines.cosmos(datetime.now(), "INFO", msg, rank=rank)


def resolved(run: Path, model: Path) -> dict[str, Any]:
    """The keys of ``resolved_config.yaml`` the reader and lint read, as the local smoke experiment sets them."""
    return {
        "command": "run",
        "run_root": str(run.parent),
        "execution": {"backend": "local_process", "resolved_config_path": None},
        "dataset": {"scene_ids": list(SCENES), "test_suite_id": None},
        "policy": {"kind": "alpamayo", "model": {"kind": "alpamayo_r1", "path": str(model), "dtype": "bfloat16"}},
        "reward": {"terms": [{"kind": "metric", "scale": 1.0, "metric_name": "progress"},
                             {"kind": "metric", "scale": COLLISION_SCALE, "metric_name": "collision_any"},
                             {"kind": "metric", "scale": -5.0, "metric_name": "offroad"},
                             {"kind": "distance_to_gt", "scale": -0.01, "metric_name": None}]},
        "cosmos": {"mode": "disaggregated",
                   "launch": {"policy_replicas": 1, "rollout_replicas": 1, "controller_port": 29500},
                   "train": {"train_batch_per_replica": EPISODES, "max_num_steps": STEPS,
                             "train_policy": {"mini_batch": 1, "allowed_outdated_steps": 4}},
                   "policy": {"parallelism": {"tp_size": 1, "cp_size": 1, "dp_shard_size": 1, "pp_size": 1,
                                              "dp_replicate_size": 1}},
                   "rollout": {"n_generation": 2, "parallelism": {"tp_size": 1, "pp_size": 1}},
                   "logging": {"logger": ["console"], "log_training_metrics_every_n_steps": 1}},
        "alpasim": {"simulation_timeout_s": 600.0,
                    "wizard_args": {"topology": "alpagym_gpu1", "force_gt_duration_us": 1600000,
                                    "control_timestep_us": 200000, "n_sim_steps": 30}},
        "expected_valid_steps": 22,
        "transport": {"kind": "disk"},
    }


def cosmos_toml(run: Path, model: Path) -> str:
    """The TOML the host generates from ``cosmos.*`` (docs/reference/alpagym.md §2.1)."""
    return f"""mode = "disaggregated"

[train]
train_batch_per_replica = {EPISODES}
max_num_steps = {STEPS}
epoch = 1
output_dir = "{run / 'cosmos'}"
non_text = true
compile = false

[train.train_policy]
type = "grpo"
trainer_type = "alpagym_grpo"
use_remote_reward = false
allowed_outdated_steps = 4
on_policy = false
mini_batch = 1
kl_beta = 0.0
epsilon_low = 0.2
epsilon_high = 0.2
mu_iterations = 1

[train.ckpt]
enable_checkpoint = true
save_freq = 20
export_safetensors = true

[policy]
model_name_or_path = "{model}"

[policy.parallelism]
tp_size = 1
dp_shard_size = 1

[rollout]
backend = "alpagym_rollout"
n_generation = 2

[logging]
logger = ["console"]
log_interval = 1

[custom]
resolved_config_path = "{run / 'resolved_config.yaml'}"
"""


class Files:
    def __init__(self, run: Path) -> None:
        self.run = run

    def add(self, rel: str, *text: str) -> None:
        path = self.run / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write("".join(line + "\n" for line in text))


def scores(step: int, k: int) -> dict[str, float]:
    crash = 1.0 if step >= HACKING_FROM and (k % 2 == 0 or step >= HACKING_FROM + 2) else 0.0
    return {"progress": 0.4 + 0.06 * step + 0.01 * k, "collision_any": crash, "offroad": 0.0}


def episode(f: Files, logs: str, session: str, scene: str, s: dict[str, float], rmse: float) -> float:
    ro, w = f"{logs}/rollout_0.log", "alpasim/wizard_0/txt-logs/runtime_worker_0.log"
    f.add(ro, ag("INFO", "alpagym_runtime.alpasim.driver_server", f"Started AlpaGym driver session={session} seed=1"))
    f.add(w, sim("INFO", f"Session STARTING: uuid={session} scene={scene} steps=30"))
    f.add(w, sim("INFO", f"Session COMPLETED: uuid={session} scene={scene} simulated 6.00 sim seconds in 3.10 wall "
                 "clock seconds for 1.94x real time (total rollout 3.60s incl. setup/warmup)"))
    f.add(ro, ag("INFO", "alpagym_runtime.alpasim.driver_server",
                 f"Closed AlpaGym driver session={session} recorded_steps=22"))
    reward = s["progress"] + COLLISION_SCALE * s["collision_any"] - 5 * s["offroad"] - 0.01 * rmse
    body = {"scene_id": scene, "session_uuid": session, "num_steps": 22, "policy_outputs": [],
            "executed_ego_trajectory": [], "route_waypoints": [],
            "metrics": {"aggregated": {**s, "dist_to_gt_trajectory": rmse}, "dense": {}},
            "reward": {"total": reward, "report_metrics": {**s, "gt_rmse_xy": rmse}}, "is_valid": True}
    name = f"artifacts/{scene}_{session}_{uuid.uuid4().hex}.json"
    (f.run / name).parent.mkdir(parents=True, exist_ok=True)
    (f.run / name).write_text(json.dumps(body, indent=2), encoding="utf-8")
    return reward


def failures(f: Files, logs: str, scene: str) -> str:
    """A scene that fails twice, then drives: AlpaSim's failure, AlpaGym's retry with a fresh session."""
    ro, w = f"{logs}/rollout_0.log", "alpasim/wizard_0/txt-logs/runtime_worker_0.log"
    for attempt in (1, 2):
        bad = uuid.uuid4().hex
        f.add(ro, ag("INFO", "alpagym_runtime.alpasim.driver_server", f"Started AlpaGym driver session={bad} seed=1"))
        f.add(w, sim("WARNING", f"Rollout FAILED: job=job-{attempt} scene={scene} uuid={bad} error=Failed to create "
                     "NRE backend for scene"), "Traceback (most recent call last):",
              "RuntimeError: Failed to create NRE backend for scene")
        f.add(ro, ag("WARNING", "alpagym_runtime.episode_runner.streaming_worker",
                     f"Retrying payload uuid={bad} scene={scene} attempt={attempt} retries_left={3 - attempt}: "
                     "AlpaSim rollout failed"))
    return uuid.uuid4().hex


def play(run: Path, speed: float) -> None:
    f = Files(run)
    pause = STEP_S / speed

    def host(msg: str) -> None:
        print(ag("INFO", "root", msg, rank=False), flush=True)

    host(f"Starting AlpaGym run: backend=local_process run_dir={run} dataset=2 scene ids policy_replicas=1 "
         "rollout_replicas=1")
    host(f"Starting AlpaSim Wizard: runtime_index=0 host=localhost log_dir={run / 'alpasim' / 'wizard_0'}")
    time.sleep(pause / 2)
    host("AlpaSim RuntimeService is ready at localhost:6004")
    f.add("topology/alpasim_runtimes/alpasim-runtime-0.yaml", "id: alpasim-runtime-0", "host: localhost",
          "port: 6004", "capacity: 4")
    host("Published AlpaSim runtime: id=alpasim-runtime-0 host=localhost port=6004 capacity=4")
    host(f"Starting Cosmos launcher: backend=local_process cosmos_hosts=localhost log_dir={run / 'logs'}")
    print(cosmos("Controller will be launched locally on port 29500."), flush=True)
    logs = f"logs/logs_{time.strftime('%Y%m%d-%H%M%S')}"
    f.add(f"{logs}/controller.log", cosmos("Successfully loaded configuration from /tmp/tmpa1xdemo.toml"))
    f.add(f"{logs}/policy_0.log", cosmos("POLICY Replica started at global rank 0, with replica name: demo-policy",
                                         rank=True))
    f.add(f"{logs}/rollout_0.log", cosmos("ROLLOUT Replica started at global rank 0, with replica name: demo-rollout",
                                          rank=True),
          ag("INFO", "alpagym_runtime.cosmos.rollout_backend", "[alpagym] Streaming rollout backend ready: "
             "runtime=alpasim-runtime-0@localhost:6004 driver=alpagym-driver-0@localhost:41234 "
             "max_concurrent_rollouts=4"))
    for step in range(1, STEPS + 1):
        time.sleep(pause)
        eps: list[tuple[str, float]] = []
        for k in range(EPISODES):
            scene = SCENES[k % 2]
            session = failures(f, logs, scene) if step in FAILING_STEPS and k % 2 == 1 else uuid.uuid4().hex
            eps.append((session, episode(f, logs, session, scene, scores(step, k), 0.55 + 0.04 * k + 0.01 * step)))
        po = f"{logs}/policy_0.log"
        f.add(po, ag("INFO", "alpagym_runtime.cosmos.trainer", f"AlpaGym trainer step start current_step={step} "
                     f"total_steps={STEPS} received_rollouts={len(eps)} group_size=2 mini_batch=1"))
        for session, reward in eps:
            f.add(po, ag("INFO", "alpagym_runtime.cosmos.packer", f"Packed AlpaGym replay artifact session={session} "
                         f"total_steps=22 policy_outputs=22 valid_steps=22 padded_steps=0 reward={reward:.6f}"))
        f.add(po, ag("INFO", "alpagym_runtime.cosmos.trainer", f"AlpaGym trainer step end current_step={step} "
                     "steps=88 batches=88 loss_avg=0.012340 kl_avg=0.000000 ratio_min=0.981000 ratio_max=1.020000 "
                     "clip_fraction=0.000000 grad_norm=0.521000 lr=0.0001"))
        rewards = [r for _, r in eps]
        mean = sum(rewards) / len(rewards)
        std = (sum((r - mean) ** 2 for r in rewards) / len(rewards)) ** 0.5
        f.add(f"{logs}/controller.log", cosmos(
            f"Step: {step}/{STEPS}, Reward Mean: {mean:.4f}, Reward Std: {std:.4f}, Reward Max: {max(rewards):.4f}, "
            f"Reward Min: {min(rewards):.4f}, Completion Length Mean: 1.00, Completion Length Max: 1.00, Average "
            "loss: 0.01234, Max loss: 0.01234, Learning rate: 1.00000e-04, Entropy: 0.00000, Effective Entropy: "
            "0.00000, Grad Norm: 0.52100, KL Loss Avg: 0.00000, KL Loss Max: 0.00000, Iteration time: 0.00s."))
    export = run / "cosmos" / time.strftime("%Y%m%d%H%M%S") / "safetensors" / f"step_{STEPS}"
    write_model(export, "alpamayo_reasoning_vla_expert")
    f.add(f"{logs}/policy_0.log", ag("INFO", "alpagym_runtime.cosmos.trainer",
                                     f"[Policy] Saving huggingface checkpoint at step {STEPS} to {export}"))
    f.add(f"{logs}/controller.log", cosmos("[Controller] All replicas are finished, finalizing..."))
    for i in range(3):
        print(cosmos(f"Process {i} completed successfully"), flush=True)
    host("Cosmos launcher completed")
    host("Stopping 1 AlpaSim Wizard process(es)")


def write_model(folder: Path, model_type: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"model_type": model_type}), encoding="utf-8")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (folder / name).write_text("{}", encoding="utf-8")
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"w": _SHARD}}), encoding="utf-8")
    (folder / _SHARD).write_bytes(b"a1x-tui demo: no weights")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="a1x_tui.demo.programs.closed_loop")
    parser.add_argument("--run-root", type=Path)
    parser.add_argument("--model", type=Path)
    parser.add_argument("--speed", type=float, default=1.0)
    parser.add_argument("--export", type=Path, help="write an inference-format export here instead")
    parser.add_argument("--convert", type=Path, help="write an AlpaGym-format checkpoint here instead")
    args = parser.parse_args(argv)
    if args.convert is not None:
        write_model(args.convert, "alpamayo_reasoning_vla_expert")
        print(f"\nCheckpoint ready: {args.convert}", flush=True)
        return 0
    if args.export is not None:
        write_model(args.export, "alpamayo1_5")
        print(f"Inference-format checkpoint ready: {args.export}", flush=True)
        return 0
    if args.run_root is None or args.model is None:
        parser.error("--run-root and --model are needed")
    print("a1x-tui demo: a simulated AlpaGym host (no GPU, no docker, no simulator; the lines are made up)")
    run = args.run_root / f"{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%SZ')}-{uuid.uuid4().hex}"
    run.mkdir(parents=True)
    for folder in ("artifacts", "logs", "alpasim/wizard_0/txt-logs", "perf"):
        (run / folder).mkdir(parents=True)
    (run / "resolved_config.yaml").write_text(yaml.safe_dump(resolved(run, args.model), sort_keys=False))
    (run / "cosmos_config.toml").write_text(cosmos_toml(run, args.model))
    play(run, args.speed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
