#!/usr/bin/env python3
"""A stand-in for ``launch_controller.sh`` and the ``cosmos-rl`` launcher inside real Slurm jobs.

It takes the same arguments our sbatch script gives them and writes lines in Cosmos-RL's formats
(docs/reference/cosmos-rl.md §3.3 prefix, §4.3 Stat at 747d1bd, §4.5 Step, §3.6 replica start, §2.4/§2.7
launcher lines, a torch OOM traceback under the torchrun ``[rank0]:`` prefix) to stderr, which
the step sends to ``part_<N>/run_<M>/<role>_<t>.err``. Behaviour comes from the environment the
job inherits from sbatch:

- ``A1X_STANDIN_MODE``: ``ok`` (default), ``fail`` (the first policy replica dies of a CUDA OOM
  and the launcher exits 1), ``fail_once`` (``fail`` on the first start, ``ok`` after a requeue),
  ``hang`` (replicas never finish: a child process sleeps until the job is cancelled),
  ``until_signal`` (like ``hang`` on the first start; SIGUSR1 ends it cleanly; ``ok`` after).
  ``train`` (a trainer that saves and resumes Cosmos-RL-shaped checkpoints, below).
- ``A1X_STANDIN_STEPS``: Step lines the controller writes (default 3), or the steps ``train`` trains.
- ``A1X_STANDIN_STEP_S``: ``train``: seconds per step on the job's first start (later starts run at
  full speed, so a requeued part finishes well before its own time limit).
- ``A1X_STANDIN_MARK``: a word on the command line of the 'replica' child (the job's processes
  carry it in their environment too), so a test can look for survivors.

``train``: the launcher plays the policy and appends the controller's ``Step: n/N`` lines to this
start's ``controller.err``; the controller only waits for it (and writes ``controller-heartbeat`` in the
run folder every 0.1 s). Checkpoints go where Cosmos-RL 747d1bd puts them (docs/reference/cosmos-rl.md
§5.3, §8.1): ``<train.output_dir>/checkpoints/step_N/policy/``, where ``output_dir`` gets a
``<timestamp>`` folder appended only when ``[train] timestamp`` is empty (``Config.from_dict``), with
``cosmos_config``, ``model_rank_<r>.pth``, ``extra_info_rank_<r>.pth`` (the step, as JSON here) and the
``.rank_<r>_complete`` markers, every ``train.ckpt.save_freq`` steps and at the last one, announced by
the policy's ``checkpoint saved successfully at`` line. Saves are asynchronous: a save's markers are
written once the next save has started, so a kill always leaves the newest checkpoint without them
(sometimes the two newest). Like Cosmos-RL's checkpoint manager, it deletes its oldest checkpoint
beyond ``train.ckpt.max_keep``, counting only what this start saved (its list starts empty unless
``resume = true``). ``[train] resume`` as a path (a string) resumes from that checkpoint and refuses one
that is not complete; every trained step goes to ``<run>/standin-steps.jsonl`` with the W&B run id
Cosmos-RL would use (the timestamp, §7.3).
SIGTERM ends it at once (as it ends the real trainer; srun's forced termination is a SIGKILL, which
leaves no ``ended`` line). SIGUSR1 with ``A1X_STANDIN_REV=head`` saves a complete checkpoint of the
current step after ``A1X_STANDIN_SAVE_S`` seconds and leaves with 0 (HEAD's ``save_ckpt_at_exit``,
§2.6); without it, it ends it at once (747d1bd has no handler).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from datetime import datetime
from pathlib import Path


def _cosmos(msg: str, level: str = "INFO", rank: int | None = None) -> str:
    ts = datetime.now().strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
    prefix = f"[rank{rank}]:" if rank is not None else ""
    return f"{prefix}[cosmos] {ts} - cosmos - {level} - {msg}"


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _mode() -> str:
    mode = os.environ.get("A1X_STANDIN_MODE", "ok")
    restarted = os.environ.get("SLURM_RESTART_COUNT", "0") not in ("", "0")
    if mode in ("fail_once", "until_signal") and restarted:
        return "ok"
    return {"fail_once": "fail"}.get(mode, mode)


def _arg(argv: list[str], flag: str, default: str | None = None) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else default


def _wait_forever() -> None:
    """Sleep in a child (a 'replica'), as a launcher waits on its processes."""
    mark = os.environ.get("A1X_STANDIN_MARK", "standin")
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", mark])

    def on_usr1(*_: object) -> None:  # "checkpoint and leave", as the policy does on SIGUSR1
        child.terminate()
        sys.exit(0)

    signal.signal(signal.SIGUSR1, on_usr1)
    child.wait()


def controller(argv: list[str]) -> int:
    mode = _mode()
    _say(_cosmos(f"[Controller] Using script: {_arg(argv, '--script')}"))
    _say(_cosmos(f"Successfully loaded configuration from {_arg(argv, '--config')}"))
    if mode == "train":
        return _wait_for_training()
    steps = int(os.environ.get("A1X_STANDIN_STEPS", "3"))
    samples = 0
    for step in range(1, steps + 1):
        samples += 8
        _say(
            _cosmos(
                f"[Controller] Stat: {samples} samples, {samples * 40} completion tokens, 8 pending rollouts, "
                f"{step * 1.5} seconds elapsed"
            )
        )
        _say(
            _cosmos(
                f"Step: {step}/{steps}, Reward Mean: -0.2500, Reward Std: 0.1000, Reward Max: 0.1000, "
                "Reward Min: -0.6000, Completion Length Mean: 1.00, Completion Length Max: 1.00, "
                "Average loss: 0.01000, Max loss: 0.02000, Learning rate: 2.00000e-06, Entropy: 0.50000, "
                "Effective Entropy: 0.50000, Grad Norm: 0.30000, KL Loss Avg: 0.00000, KL Loss Max: 0.00000, "
                "Iteration time: 0.10s."
            )
        )
        time.sleep(0.05)
    if mode in ("hang", "until_signal"):
        _wait_forever()
    return 0


def launcher(argv: list[str]) -> int:
    mode = _mode()
    worker = int(_arg(argv, "--worker-idx", "0") or 0)
    workers = int(_arg(argv, "--num-workers", "1") or 1)
    plan = json.loads((Path(os.environ["A1X_RUN_DIR"]) / "slurm" / "nodeplan.json").read_text())
    slots = plan["nodes"][worker]["replicas"]
    _say(_cosmos(f"Number of policy replicas: {_arg(argv, '--policy')} with 4 gpus each"))
    _say(_cosmos(f"Number of rollout replicas: {_arg(argv, '--rollout')} with 1 gpus each"))
    _say(_cosmos(f"Number of workers required: {workers}"))
    _say(
        _cosmos(
            f"Controller will be launched on another node. This node will connect to {_arg(argv, '--url')} for control."
        )
    )
    for rank, slot in enumerate(slots):
        role = slot["name"].split("_")[0].upper()
        _say(_cosmos(f"{role} Replica started at global rank 0, with replica name: {uuid.uuid4()}", rank=0))
        del rank
    if mode == "train":
        return train(argv)
    if mode == "fail":
        for line in (
            "Traceback (most recent call last):",
            '  File "/opt/cosmos_rl/policy/train.py", line 42, in <module>',
            "    main()",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
            "of 79.10 GiB of which 1.02 GiB is free.",
        ):
            _say(f"[rank0]:{line}")
        _say(_cosmos("Process 1 failed with return code 1", level="ERROR"))
        _say(_cosmos("Terminated all processes due to failure", level="ERROR"))
        return 1
    if mode in ("hang", "until_signal"):
        _wait_forever()
        return 0
    time.sleep(0.3)
    for i in range(len(slots)):
        _say(_cosmos(f"Process {i} completed successfully"))
    return 0


def _ranks(config: dict) -> int:
    par = config.get("policy", {}).get("parallelism", {})
    ranks = 1
    for key in ("tp_size", "cp_size", "pp_size", "dp_shard_size"):
        ranks *= max(int(par.get(key, 1)), 1)
    return ranks


def _complete(ckpt: Path, ranks: int) -> bool:
    return (ckpt / "cosmos_config").exists() and all((ckpt / f".rank_{r}_complete").exists() for r in range(ranks))


def train(argv: list[str]) -> int:
    """The ``train`` mode of the launcher: see the module docstring."""
    import shutil

    import tomllib

    config = tomllib.loads(Path(_arg(argv, "--config") or "").read_text())
    total = int(os.environ.get("A1X_STANDIN_STEPS", "3"))
    # A1X_STANDIN_EVERY_START=N: the first N starts train at A1X_STANDIN_STEP_S (default: the first only)
    slow_starts = int(os.environ.get("A1X_STANDIN_EVERY_START", "1"))
    slow = int(os.environ.get("SLURM_RESTART_COUNT") or 0) < slow_starts
    step_s = float(os.environ.get("A1X_STANDIN_STEP_S", "0")) if slow else 0.0
    save_freq = int(config["train"]["ckpt"]["save_freq"])
    max_keep = int(config["train"]["ckpt"].get("max_keep", 5))
    ranks = _ranks(config)
    logs = Path(os.environ["A1X_RUN_LOGS"])
    part = logs.parent.name
    run_dir = Path(os.environ["A1X_RUN_DIR"])
    stamp = str(config["train"].get("timestamp") or "")
    out = Path(config["train"]["output_dir"])
    if not stamp:  # Config.from_dict (docs/reference/cosmos-rl.md §8.1)
        stamp = datetime.now().strftime("%Y%m%d%H%M%S")
        out = out / stamp
    saved: list[Path] = []  # the checkpoint manager's list: empty unless resume = true (§5.3)
    start = 0
    resume = config["train"].get("resume", False)
    if isinstance(resume, str):
        ckpt = Path(resume)
        _say(_cosmos(f"Trying to load checkpoint from {ckpt}...", rank=0))
        if not _complete(ckpt, ranks):
            _say(_cosmos(f"Checkpoint complete marker for rank 0 not found at {ckpt}.", level="WARNING", rank=0))
            return 1
        start = int(json.loads((ckpt / "extra_info_rank_0.pth").read_text())["step"])
        _say(_cosmos(f"Cosmos checkpoint found at {resume}. Resuming...", rank=0))
    else:
        _say(_cosmos("[Policy] Resume not set. Trying to load from HuggingFace...", rank=0))

    ledger = run_dir / "standin-steps.jsonl"
    in_flight: Path | None = None
    current = start

    def note(**event: object) -> None:
        with open(ledger, "a") as f:
            f.write(json.dumps({"part": part, "wandb_id": stamp, "t": time.time(), **event}) + "\n")

    def finish(ckpt: Path | None) -> None:
        for r in range(ranks):
            if ckpt is not None:
                (ckpt / f".rank_{r}_complete").write_text("")

    def save(step: int) -> Path:
        ckpt = out / "checkpoints" / f"step_{step}" / "policy"
        ckpt.mkdir(parents=True, exist_ok=True)
        (ckpt / "cosmos_config").write_text("{}")
        for r in range(ranks):
            (ckpt / f"model_rank_{r}.pth").write_text("w")
            (ckpt / f"extra_info_rank_{r}.pth").write_text(json.dumps({"step": step, "total_steps": total}))
        _say(_cosmos(f"[Policy] Step: {step}, checkpoint saved successfully at {ckpt}.", rank=0))
        saved.append(ckpt.parent)
        if max_keep != -1 and len(saved) > max_keep:  # utils/checkpoint.py save_check: this start's oldest
            oldest = saved.pop(0)
            _say(_cosmos(f"Deleting {oldest}", rank=0))
            shutil.rmtree(oldest, ignore_errors=True)
        return ckpt

    def die(signum: int, _frame: object) -> None:
        note(ended=signal.Signals(signum).name)
        sys.exit(143)

    def save_and_leave(signum: int, _frame: object) -> None:  # HEAD: save_ckpt_at_exit (§2.6)
        note(event="usr1")
        time.sleep(float(os.environ.get("A1X_STANDIN_SAVE_S", "0")))
        finish(in_flight)
        if current > start:
            finish(save(current))
        note(event="saved_at_exit", step=current)
        sys.exit(0)

    signal.signal(signal.SIGTERM, die)
    signal.signal(signal.SIGUSR1, save_and_leave if os.environ.get("A1X_STANDIN_REV") == "head" else die)

    with open(logs / "controller.err", "a") as controller:
        for step in range(start + 1, total + 1):
            time.sleep(step_s)
            controller.write(_cosmos(f"Step: {step}/{total}, Reward Mean: -0.2500, Reward Std: 0.1000") + "\n")
            controller.flush()
            note(step=step)
            current = step
            if step % save_freq and step != total:
                continue
            ckpt = save(step)
            finish(in_flight)  # the previous async save is done once this one has started
            in_flight = ckpt
    finish(in_flight)  # the last save is waited for (docs/reference/cosmos-rl.md §5.3: finalize)
    (logs / "standin-done").write_text("")
    _say(_cosmos("Process 0 completed successfully"))
    return 0


def _wait_for_training() -> int:
    logs = Path(os.environ["A1X_RUN_LOGS"])
    beat = Path(os.environ["A1X_RUN_DIR"]) / "controller-heartbeat"
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGUSR1, lambda *_: sys.exit(143))
    while not (logs / "standin-done").exists():
        beat.write_text(repr(time.time()))
        time.sleep(0.05)
    return 0


def main() -> int:
    argv = sys.argv[1:]
    return controller(argv) if "--port" in argv else launcher(argv)


if __name__ == "__main__":
    sys.exit(main())
