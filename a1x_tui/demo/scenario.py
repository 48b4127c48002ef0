"""The training scenario the demo plays: what each replica writes, and when.

A pure function of the troubles to play, the speed and a seed: ``script(role, ...)`` returns the
entries one replica writes (seconds after the replicas start, already divided by ``speed``). The
numbers follow the recipe's healthy motion run (docs/reference/alpamayo-recipe.md §8.8, §10: reward mean ≈ −0.28 →
−0.21,
``train/traj_L2`` ≈ 1.66 → 1.34) and three troubles, each ended by the fix the dashboard proposes:

- ``buffer_growth``: ``pending rollouts`` in the controller's ``Stat:`` lines climbs step after step
  (docs/reference/cosmos-rl.md §13.1, §15: "pending rollouts climbing ... and staying pinned"). Fix:
  ``rollout.batch_size``.
- ``vllm_oom``: two generation batches of the rollout replica fail with a CUDA out-of-memory and
  are discarded while the replica goes on (§6.3, §6.7 "At runtime"). Fix: ``rollout.gpu_memory_utilization``.
- ``grpo_collapse``: from step 18 the completions of one prompt are alike (near-greedy sampling), so every
  completion of a group gets its group's reward: rewards still differ between prompts (``Reward Std`` > 0),
  but every advantage is 0: zero loss and grad norm (§13.5). Fix: the sampling temperature.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from a1x_tui.demo import lines

STEPS = 30
BATCH = 48  # train_batch_per_replica (the local template) × 1 policy replica: completions per step
PARAMS = 1291  # trainable parameter tensors the policy announces
FIRST_STAT_S = 4.0
FIRST_STEP_S = 7.0
STEP_S = 1.6
OOM_STEPS = (9, 10)
COLLAPSE_FROM = 18
SYNC_EVERY = 2  # the local template's train.sync_weight_interval

Role = Literal["controller", "policy", "rollout"]
ROLES: tuple[Role, ...] = ("controller", "policy", "rollout")


@dataclass(frozen=True, slots=True)
class Trouble:
    """Which troubles play. ``from_toml`` reads the run's TOML: a trouble stops once its fix is in."""

    buffer_growth: bool = True
    vllm_oom: bool = True
    grpo_collapse: bool = True

    @classmethod
    def from_toml(cls, path: Path) -> Trouble:
        import tomlkit

        try:
            data: dict[str, Any] = tomlkit.parse(path.read_text(encoding="utf-8")).unwrap()
        except (OSError, ValueError):
            return cls()
        rollout = data.get("rollout") or {}
        sampling = rollout.get("sampling_config") or {}
        return cls(
            buffer_growth=int(rollout.get("batch_size", 2)) > 1,
            vllm_oom=float(rollout.get("gpu_memory_utilization", 0.8)) > 0.7,
            grpo_collapse=float(sampling.get("temperature", 0.6)) < 1.0,
        )

    def names(self) -> list[str]:
        return [name for name in ("buffer_growth", "vllm_oom", "grpo_collapse") if getattr(self, name)]


@dataclass(frozen=True, slots=True)
class Entry:
    """One line (or an action) a replica writes ``at`` seconds after the replicas started."""

    at: float
    text: str
    kind: Literal["cosmos", "raw", "vllm", "prefetch"] = "cosmos"
    level: str = "INFO"
    rank: bool = False  # the torchrun "[rank0]:" prefix
    where: str = ""  # vLLM's [file.py:line]
    action: str | None = None  # "checkpoint": write the checkpoint files named in ``text``
    fields: tuple[tuple[str, object], ...] = ()  # a prefetch line's key=value pairs

    def render(self, now: Any, pid: int = 0) -> str:
        if self.kind == "prefetch":
            return lines.prefetch(now, pid, self.text, **dict(self.fields))
        if self.kind == "raw":
            return (lines.RANK_PREFIX + self.text) if self.rank else self.text
        if self.kind == "vllm":
            return lines.vllm(now, self.where, self.text)
        return lines.cosmos(now, self.level, self.text, rank=self.rank)


@dataclass(frozen=True, slots=True)
class Context:
    """What the replicas' lines mention: names, paths, the seed of every number."""

    checkpoint_dir: str = "/tmp/outputs/20260101000000/checkpoints/step_30/policy"
    config_copy: str = "/tmp/tmpa1xdemo.toml"
    entry: str = "recipes/alpamayo1_x_rl/models/reasoning_vla/alpamayo_cosmos_rl_post_training_entry.py"
    seed: int = 7
    policy_name: str = field(default="")
    rollout_name: str = field(default="")

    def names(self) -> tuple[str, str]:
        rng = random.Random(self.seed)
        policy = self.policy_name or str(uuid.UUID(int=rng.getrandbits(128), version=4))
        rollout = self.rollout_name or str(uuid.UUID(int=rng.getrandbits(128), version=4))
        return policy, rollout


def step_time(k: int) -> float:
    """When step ``k`` (1-based) is logged, in scenario seconds."""
    return FIRST_STEP_S + (k - 1) * STEP_S


def end_time() -> float:
    return step_time(STEPS) + 1.2


def duration(speed: float = 1.0) -> float:
    """Seconds from the replicas' start to the last line, at ``speed``."""
    return (end_time() + 0.5) / speed


@dataclass(frozen=True, slots=True)
class StepValues:
    reward_mean: float
    reward_std: float
    reward_max: float
    reward_min: float
    length_mean: float
    length_max: float
    loss: float
    grad_norm: float
    entropy: float
    iteration_time: float
    traj_l2: float
    comfort: float
    advantage_std: float


def step_values(k: int, trouble: Trouble, rng: random.Random) -> StepValues:
    progress = k / STEPS
    if trouble.grpo_collapse and k >= COLLAPSE_FROM:
        # Each prompt's completions are one trajectory: its group's reward for all, different across prompts
        # (some miss the traj_L2 gate, −1), so the batch has a spread but every advantage is 0 (§13.5).
        mean = -0.62 + rng.uniform(-0.02, 0.02)
        return StepValues(
            reward_mean=mean,
            reward_std=0.45 + rng.uniform(-0.02, 0.02),
            reward_max=round(-0.18 + rng.uniform(-0.02, 0.02), 4),
            reward_min=-1.0,
            length_mean=round(212.0 + rng.uniform(-3, 3), 2),
            length_max=256.0,
            loss=0.0,
            grad_norm=0.0,
            entropy=round(0.31 + rng.uniform(-0.01, 0.01), 5),
            iteration_time=round(1.05 + rng.uniform(-0.05, 0.05), 2),
            traj_l2=round(2.42 + rng.uniform(-0.05, 0.05), 4),
            comfort=-0.5,
            advantage_std=0.0,
        )
    mean = -0.28 + 0.07 * progress + rng.uniform(-0.012, 0.012)
    return StepValues(
        reward_mean=mean,
        reward_std=0.09 + rng.uniform(-0.015, 0.015),
        reward_max=min(0.0, mean + 0.21 + rng.uniform(0, 0.02)),
        reward_min=-1.0,
        length_mean=round(184.0 + rng.uniform(-6, 6), 2),
        length_max=256.0,
        loss=rng.uniform(-0.03, 0.03),
        grad_norm=0.45 + rng.uniform(0, 0.4),
        entropy=1.22 - 0.3 * progress + rng.uniform(-0.01, 0.01),
        iteration_time=1.1 + rng.uniform(-0.1, 0.1),
        traj_l2=1.66 - 0.32 * progress + rng.uniform(-0.03, 0.03),
        comfort=-0.12 + rng.uniform(-0.02, 0.02),
        advantage_std=0.94 + rng.uniform(-0.05, 0.05),
    )


def pending_at(k: int, second: bool, trouble: Trouble, rng: random.Random) -> int:
    """``pending rollouts`` in the Stat lines logged before step ``k``: growing, or about one batch."""
    if trouble.buffer_growth:
        return BATCH + 9 * k + (6 if second else 0) + rng.randint(0, 3)
    return BATCH - 10 + rng.randint(0, 14) + (4 if second else 0)


def _controller(trouble: Trouble, ctx: Context) -> list[Entry]:
    policy, rollout = ctx.names()
    rng = random.Random(ctx.seed + 1)
    out = [
        Entry(0.0, f"[Controller] Using script: {ctx.entry}", kind="raw"),
        Entry(0.0, f"Controller CMD: python {ctx.entry} --port 8000 --config {ctx.config_copy}", kind="raw"),
        Entry(0.4, f"Attempting to load configuration from {ctx.config_copy}"),
        Entry(0.4, "Wandb is not available. Please install it to use wandb logging features.", level="WARNING"),
        Entry(
            0.5,
            "[Controller] Redis server started on port 12800 with command redis-server "
            f'{ctx.config_copy.removesuffix(".toml")}.redis_config.conf --dbfilename cosmos_rl_a1x-demo.rdb --save ""',
        ),
        Entry(0.6, f"Successfully loaded configuration from {ctx.config_copy}"),
        Entry(0.6, "INFO:     Started server process [4285]", kind="raw"),
        Entry(0.6, "INFO:     Waiting for application startup.", kind="raw"),
        Entry(0.6, "INFO:     Application startup complete.", kind="raw"),
        Entry(0.6, "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)", kind="raw"),
        Entry(2.0, f"[Controller] All atoms of ROLLOUT Replica {rollout} has been set."),
        Entry(
            2.0,
            "[Controller] No valid policy replicas found in Rollout registration or some rollout already get weight "
            "from policy, skip PolicyToRolloutUnicastCommand",
        ),
        Entry(2.1, f"[Controller] All atoms of POLICY Replica {policy} has been set."),
        Entry(2.1, f"[Controller] Trigger PolicyToRolloutUnicastCommand to {rollout} via Policy registration"),
    ]
    samples = 0
    tokens = 0
    consumed = 0
    first_stat = FIRST_STAT_S
    # Before the first step the policy still loads: the buffer fills (normal, not counted by the detector).
    for i, t in enumerate((4.0, 4.6, 5.2, 5.8, 6.4)):
        pending = 8 * (i + 2)
        samples = pending
        tokens = samples * 184 + rng.randint(0, 90)
        out.append(Entry(t, lines.stat(samples, tokens, pending, (t - first_stat) + rng.random() * 1e-3)))
    values_rng = random.Random(ctx.seed + 2)
    for k in range(1, STEPS + 1):
        t = step_time(k)
        for second, dt in ((False, 0.95), (True, 0.45)):
            if k == 1 and not second:
                continue
            pending = pending_at(k, second, trouble, rng)
            samples = max(samples + 1, consumed + pending)
            tokens = samples * 184 + rng.randint(0, 90)
            at = t - dt
            out.append(Entry(at, lines.stat(samples, tokens, pending, (at - first_stat) + rng.random() * 1e-3)))
        v = step_values(k, trouble, values_rng)
        report = {
            "train/reward_mean": v.reward_mean,
            "train/reward_std": v.reward_std,
            "train/reward_max": v.reward_max,
            "train/reward_min": v.reward_min,
            "rollout/completion_length_mean": v.length_mean,
            "rollout/completion_length_max": int(v.length_max),
            "rollout/advantage_std": v.advantage_std,
            "train/traj_L2": v.traj_l2,
            "train/comfort_reward": v.comfort,
            "train/reward": v.reward_mean,
            "train/loss_avg": v.loss,
            "train/grad_norm": v.grad_norm,
            "train/learning_rate": 2e-06,
            "train/iteration_time": v.iteration_time,
            "train/total_steps": STEPS,
            "train_step": float(k),
        }
        out.append(Entry(t, lines.train_report(BATCH, report)))
        out.append(
            Entry(
                t,
                lines.step(
                    step=k,
                    total=STEPS,
                    reward_mean=v.reward_mean,
                    reward_std=v.reward_std,
                    reward_max=v.reward_max,
                    reward_min=v.reward_min,
                    length_mean=v.length_mean,
                    length_max=v.length_max,
                    loss=v.loss,
                    learning_rate=2e-06,
                    entropy=v.entropy,
                    grad_norm=v.grad_norm,
                    iteration_time=v.iteration_time,
                ),
            )
        )
        # §15.1: at 747d1bd every Step line is followed by this one.
        out.append(Entry(t, "Dynamic sampling rewards distribution so far: {'outdated': 0}."))
        consumed += BATCH
        if k == 15:
            out.append(Entry(t + 0.01, "[Controller] Epoch 2 start."))
    end = end_time()
    for name in (policy, rollout):
        out.append(Entry(end - 0.4, f"[Controller] Unregistering replica {name}"))
        out.append(Entry(end - 0.4, f"[Controller] Replica {name} is stopping."))
    out += [
        Entry(end, "[Controller] All replicas are finished, finalizing..."),  # §4.7, 747d1bd text
        Entry(end, "Stopping redis server"),
        Entry(end, "Redis server stopped."),
        Entry(end, "INFO:     Shutting down", kind="raw"),
        Entry(end, "INFO:     Finished server process [4285]", kind="raw"),
    ]
    return out


def _replica_header(role: str, ctx: Context) -> list[Entry]:
    upper = role.upper()
    launch = (
        "torchrun --nproc-per-node=1 --nnodes=1 --role rank --tee 3 --rdzv_backend c10d "
        f"--rdzv_endpoint=localhost:0 {ctx.entry} --config {ctx.config_copy}"
    )
    return [
        Entry(0.0, f"[Cosmos-RL] {upper} Pre-setting environment variable NCCL_CUMEM_ENABLE=0", kind="raw"),
        Entry(0.0, f"[Cosmos-RL] {upper} Pre-setting environment variable TORCH_CPP_LOG_LEVEL=ERROR", kind="raw"),
        Entry(0.0, f"Launching command: {launch}", kind="raw"),
    ]


def _policy(trouble: Trouble, ctx: Context) -> list[Entry]:
    policy, _ = ctx.names()
    last = step_time(STEPS)
    return [
        *_replica_header("policy", ctx),
        Entry(1.2, "Config checked successfully", rank=True),
        Entry(1.2, f"POLICY Replica started at global rank 0, with replica name: {policy}", rank=True),
        Entry(1.3, f"POLICY Replica {policy} registered to controller", rank=True),
        Entry(1.4, "Trainer initialized at local rank 0, with seq_len_multiple: 1", rank=True),
        Entry(1.5, f"[Policy] Parse {PARAMS} trainable params to controller.", rank=True),
        Entry(1.6, "[Policy] Resume not set. Trying to load from HuggingFace...", rank=True),
        *_prefetch_start("policy", spawns=True),
        Entry(2.0, "Time taken to load model from HF: 0.41 seconds", rank=True),
        Entry(2.0, "[Policy] Model loaded from HuggingFace.", rank=True),
        Entry(FIRST_STEP_S - 1.5, f"[Policy] Building lr schedulers for total steps {STEPS}", rank=True),
        Entry(last + 0.2, f"[Policy] Saving cosmos checkpoint at step {STEPS}...", rank=True),
        Entry(last + 0.4, ctx.checkpoint_dir, kind="raw", action="checkpoint"),
        # §5.3: logged right after the (async) save was submitted; the .rank_<r>_complete marker proves it.
        Entry(
            last + 0.4,
            f"[Policy] Step: {STEPS}, checkpoint saved successfully at {ctx.checkpoint_dir}.",
            rank=True,
        ),
        Entry(end_time() - 0.5, "[Policy] Main loop finished. Shutdown background task event set.", rank=True),
        Entry(end_time() - 0.2, "[Policy] Process group destroyed.", rank=True),
    ]


_PREFETCH_SOCKET = "/tmp/alpamayo_prefetch/train-a1xdemo.sock"


def _prefetch_start(role: str, *, spawns: bool) -> list[Entry]:
    """The recipe's node prefetch server coming up (docs/reference/alpamayo-recipe.md §9.2-§9.3): the first process
    spawns it."""
    init = (("dataset_id", "pai_train"), ("server_key", "train-a1xdemo"), ("tag", "train"), ("capacity", 48))
    out = [Entry(1.7, "init_dataset_prefetch", kind="prefetch", fields=init)]
    if spawns:
        out += [
            Entry(1.7, "client_spawn_server", kind="prefetch", fields=(("socket", _PREFETCH_SOCKET),)),
            Entry(1.8, "client_spawned_server", kind="prefetch", fields=(("socket", _PREFETCH_SOCKET),)),
        ]
    else:
        out.append(Entry(1.8, "server_already_running", kind="prefetch"))
    out.append(Entry(1.9, "client_server_ready", kind="prefetch", fields=(("socket", _PREFETCH_SOCKET),)))
    return out


def _rollout(trouble: Trouble, ctx: Context) -> list[Entry]:
    _, rollout = ctx.names()
    out = [
        *_replica_header("rollout", ctx),
        Entry(1.1, "Rollout build runner normal.", rank=True),
        Entry(1.2, f"ROLLOUT Replica started at global rank 0, with replica name: {rollout}", rank=True),
        Entry(1.3, f"ROLLOUT Replica {rollout} registered to controller", rank=True),
        Entry(1.4, f"[Rollout] Building global mesh for {rollout}", rank=True),
        Entry(2.2, "[Rollout] Fetching policy_to_rollout_recv_insts from controller ...", rank=True),
        Entry(2.3, "[Rollout] Finished policy_to_rollout_recv_insts from controller.", rank=True),
        Entry(2.3, f"[Rollout] Finished fetching {PARAMS} trainable params from controller.", rank=True),
        Entry(2.3, f"[Rollout] Obtained {PARAMS} trainable params after weight unsplit.", rank=True),
        Entry(2.4, f"[Rollout] Starting to execute {PARAMS}; {PARAMS}, {PARAMS} weight sync receives ...", rank=True),
        Entry(3.1, lines.recv_done(PARAMS, None, 0.684, 19452.0078125), rank=True),
        *_prefetch_start("rollout", spawns=False),
        Entry(3.3, "Available KV cache memory: 88.91 GiB", kind="vllm", where="gpu_worker.py:298"),
        Entry(3.3, "GPU KV cache size: 1,456,640 tokens", kind="vllm", where="kv_cache_utils.py:1087"),
        Entry(3.5, "[Rollout] Engine initialized.", rank=True),
    ]
    for k in range(1, STEPS + 1):
        t = step_time(k)
        if trouble.vllm_oom and k in OOM_STEPS:
            oom = lines.cuda_oom(3.38, 1.06)
            # §6.3: the batch is discarded and the replica goes on, after printing the traceback (print_exc).
            out.append(Entry(t - 0.7, f"[Rollout] Failed in rollout generation: {oom}", level="ERROR", rank=True))
            out += [
                Entry(t - 0.7, text, kind="raw", rank=True)
                for text in (
                    "Traceback (most recent call last):",
                    '  File "cosmos_rl/rollout/vllm_rollout/vllm_rollout.py", line 717, in rollout_generation',
                    "    results = self.rollout_engine.generate(prompts, sampling_params=self.sampling_params)",
                    f"torch.OutOfMemoryError: {oom}",
                )
            ]
        if k % SYNC_EVERY == 0 and k < STEPS:
            out.append(
                Entry(
                    t + 0.05,
                    f"[Rollout] Starting to execute {PARAMS}; {PARAMS}, {PARAMS} weight sync receives ...",
                    rank=True,
                )
            )
            out.append(Entry(t + 0.3, lines.recv_done(PARAMS, k, 0.247, 19452.0078125), rank=True))
    out.append(Entry(end_time() - 0.6, f"[Rollout] Main loop of {rollout} finished", rank=True))
    return out


def script(role: Role, trouble: Trouble, *, speed: float = 1.0, context: Context | None = None) -> list[Entry]:
    """The entries ``role`` writes, ordered by time, scaled to ``speed`` (2.0 = twice as fast)."""
    ctx = context or Context()
    builders = {"controller": _controller, "policy": _policy, "rollout": _rollout}
    entries = builders[role](trouble, ctx)
    scale = 1.0 / max(0.05, speed)
    scaled = [Entry(e.at * scale, e.text, e.kind, e.level, e.rank, e.where, e.action, e.fields) for e in entries]
    return sorted(scaled, key=lambda e: e.at)
