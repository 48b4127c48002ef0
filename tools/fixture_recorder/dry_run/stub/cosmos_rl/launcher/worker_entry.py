"""Stub worker for local dry runs of the fixture recorder: fake controller, policy and rollout loops.

Every line is marked [fake]. The rollout calls the entry script's real reward function in a process pool
(like Cosmos's RewardDispatcher), so the reward fault injection is exercised for real.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from typing import Any

LOGS = os.environ.get("FAKE_CRL_LOGS", ".")
CTL = os.path.join(LOGS, "controller.log")
STEPS = int(os.environ.get("FAKE_CRL_STEPS", "8"))
PROGRESS = os.path.join(LOGS, ".fake_rollouts")


def say(msg: str, path: str | None = None) -> None:
    line = f"[fake] {time.strftime('%Y-%m-%d %H:%M:%S')} - {msg}\n"
    if path:
        with open(path, "a") as f:
            f.write(line)
    else:
        sys.stdout.write(line)
        sys.stdout.flush()


def _beat() -> None:
    while True:
        time.sleep(1)


def _count(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def main(dataset: Any = None, reward_fns: Any = None, **kwargs: Any) -> None:
    role = os.environ.get("COSMOS_ROLE")
    if role == "Controller":
        say("Application startup complete.")
        while not (os.path.exists(os.path.join(LOGS, ".fake_policy_done"))):
            time.sleep(0.3)
        say("controller done")
        return
    mp.Process(target=_beat, daemon=True).start()  # like Cosmos's heartbeat process
    name = uuid.uuid4()
    time.sleep(8.0)  # slow enough that the driver (which starts every scenario first, 1 s apart) sees each step
    say(f"[Controller] All atoms of {role.upper()} Replica {name} has been set.", CTL)
    if role == "Rollout":
        with ProcessPoolExecutor(max_workers=2) as ex:
            while _count(PROGRESS) < 8 * STEPS and not os.path.exists(os.path.join(LOGS, ".fake_policy_done")):
                if _count(PROGRESS) > 8 * (_count(os.path.join(LOGS, ".fake_steps")) + 5):
                    time.sleep(0.1)
                    continue
                futs = [ex.submit(reward_fns[0], "What is 1 + 2? The answer is 3", "3") for _ in range(4)]
                rewards = [f.result() for f in futs]
                say(f"[Rollout] generated 4 completions, rewards {rewards}")
                with open(PROGRESS, "a") as f:
                    f.write("x" * 4)
                time.sleep(0.1)
        say("[Rollout] Main loop finished")
        return
    for i in range(1, STEPS + 1):
        while _count(PROGRESS) < 8 * i:
            time.sleep(0.1)
        time.sleep(0.3)
        say(f"Step: {i}/{STEPS}, Reward Mean: 0.5000, Reward Std: 0.1000, Average loss: 0.1", CTL)
        with open(os.path.join(LOGS, ".fake_steps"), "a") as f:
            f.write("x")
    open(os.path.join(LOGS, ".fake_policy_done"), "w").close()
    say("[Policy] Main loop finished")
