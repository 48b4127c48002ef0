"""Cosmos-RL user entry script: tiny offline GRPO (custom prompts, rule-based reward, local random model).

The same script runs in every role (controller, policy, rollout); the launcher passes it to each.
Environment (inherited from the launcher's environment):
  CRL_REWARD            digit (default): 1.0 if the reference answer appears in the completion, else digits/10
                        constant: 0.5 for every completion -> every GRPO group has reward std 0 (collapse)
  CRL_ROLLOUT_MEM_FRACTION
                        fault injection, rollout role only: cap this process's CUDA caching allocator with
                        torch.cuda.set_per_process_memory_fraction(<value>) so that an allocation fails with
                        torch's own "CUDA out of memory" error.
  CRL_ROLLOUT_OOM_AFTER_GENERATES
                        unset: the cap applies from start-up (engine start fails).
                        N: the first N generate() calls run normally; call N+1 runs under the cap on a fresh
                        CUDA stream (the allocator keeps free blocks per stream, so generate() must ask for a
                        new segment, which the cap refuses); the cap is lifted again afterwards (one-shot).
  CRL_REWARD_RAISE_AFTER
                        fault injection: N: the first N reward calls (one per completion, counted over every
                        process that computes rewards, through the file CRL_REWARD_COUNT_FILE) score normally;
                        every later call raises RuntimeError("injected: reward function failed at call M").
  CRL_IMPORT_FAIL       fault injection: 1: the script imports a module that does not exist before anything
                        else (a start-up failure of the user's entry script, in whichever role runs it first).
  CRL_INJECTION_LOG     file where the injection notes its own actions (never into Cosmos's logs).
"""

from __future__ import annotations

import os
import time
from typing import Any

if os.environ.get("CRL_IMPORT_FAIL") == "1":
    if os.environ.get("CRL_INJECTION_LOG"):
        with open(os.environ["CRL_INJECTION_LOG"], "a") as _f:
            _f.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} [entry pid {os.getpid()} {os.environ.get('COSMOS_ROLE')}] "
                     "injected: CRL_IMPORT_FAIL=1: importing a_module_that_does_not_exist\n")
    # fault injection: the ModuleNotFoundError and its traceback come from Python itself
    import a_module_that_does_not_exist

    del a_module_that_does_not_exist

import cosmos_rl.policy.model.hf_models as _hf_models
from cosmos_rl.dispatcher.data import RLPayload
from cosmos_rl.dispatcher.data.packer import DecoderOnlyLLMDataPacker
from cosmos_rl.launcher.worker_entry import main as launch_worker
from torch.utils.data import Dataset

# 0.4.4 forces flash_attention_2 on every HF model (policy/model/hf_models/patch.py pre_hf_models_patch); at
# 747d1bd HFModel only tries it and logs a WARNING. flash-attn is not installed: keep PyTorch SDPA.
_orig_pre_patch = _hf_models.pre_hf_models_patch


def _pre_patch_sdpa(hf_config: Any) -> None:
    _orig_pre_patch(hf_config)
    hf_config._attn_implementation = "sdpa"


_hf_models.pre_hf_models_patch = _pre_patch_sdpa

PROMPTS = [(f"What is {a} + {b}? The answer is", str(a + b)) for a in range(4) for b in range(4)]


class TinyPromptDataset(Dataset):
    def setup(self, config: Any, *args: Any, **kwargs: Any) -> None:
        self.config = config

    def __len__(self) -> int:
        return len(PROMPTS)

    def __getitem__(self, idx: int) -> RLPayload:
        return RLPayload(prompt=PROMPTS[idx][0])

    def get_reference_answer(self, idx: int) -> str:
        return PROMPTS[idx][1]


def digit_reward(to_be_evaluated: str | None, reference: Any = None, *args: Any, **kwargs: Any) -> float:
    # example_hf returns the prompt (minus its first token) followed by the generated text: score the generated part.
    text = (to_be_evaluated or "").split("The answer is", 1)[-1]
    if reference is not None and str(reference) in text:
        return 1.0
    return min(1.0, sum(ch.isdigit() for ch in text) / 10.0)


def constant_reward(to_be_evaluated: str | None, reference: Any = None, *args: Any, **kwargs: Any) -> float:
    return 0.5


REWARDS = {"digit": digit_reward, "constant": constant_reward}


def _note(msg: str) -> None:
    path = os.environ.get("CRL_INJECTION_LOG")
    if path:
        with open(path, "a") as f:
            f.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} [entry pid {os.getpid()} "
                    f"{os.environ.get('COSMOS_ROLE')}] {msg}\n")


def _count_call() -> int:
    """Number of this reward call, counted over all processes (Cosmos computes rewards in a process pool)."""
    path = os.environ.get("CRL_REWARD_COUNT_FILE") or os.path.join(os.getcwd(), "crl_reward_calls.count")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, b".")  # one byte per call; O_APPEND writes do not interleave
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


_raise_noted = [False]


def reward_with_injected_failure(to_be_evaluated: str | None, reference: Any = None, *args: Any, **kw: Any) -> float:
    # module level (not a closure) so that it pickles by name, whatever start method the reward pool uses
    after = int(os.environ["CRL_REWARD_RAISE_AFTER"])
    n = _count_call()
    if n > after:
        if not _raise_noted[0]:  # once per process, so that injection.log stays short
            _raise_noted[0] = True
            _note(f"injected: reward call {n} raises RuntimeError (CRL_REWARD_RAISE_AFTER={after}; every later "
                  "call raises too)")
        raise RuntimeError(f"injected: reward function failed at call {n}")
    return REWARDS[os.environ.get("CRL_REWARD", "digit")](to_be_evaluated, reference, *args, **kw)


def _reward_fn() -> Any:
    after_s = os.environ.get("CRL_REWARD_RAISE_AFTER")
    if after_s is None:
        return REWARDS[os.environ.get("CRL_REWARD", "digit")]
    if os.environ.get("COSMOS_ROLE") == "Rollout":
        _note(f"armed: reward calls after call {int(after_s)} will raise RuntimeError")
    return reward_with_injected_failure


def _install_rollout_oom() -> None:
    frac_s = os.environ.get("CRL_ROLLOUT_MEM_FRACTION")
    if not frac_s or os.environ.get("COSMOS_ROLE") != "Rollout":
        return
    import torch

    frac = float(frac_s)
    after_s = os.environ.get("CRL_ROLLOUT_OOM_AFTER_GENERATES")
    if after_s is None:
        device = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_per_process_memory_fraction(frac, device)
        _note(f"injected: torch.cuda.set_per_process_memory_fraction({frac}, device={device}) at start-up")
        return
    after = int(after_s)
    from transformers.generation.utils import GenerationMixin

    orig = GenerationMixin.generate
    calls = [0]

    def generate(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] != after + 1:
            return orig(self, *args, **kwargs)
        dev = self.device
        torch.cuda.set_per_process_memory_fraction(frac, dev)
        _note(f"injected: generate() call {calls[0]} runs under set_per_process_memory_fraction({frac}, {dev}) "
              "on a fresh CUDA stream")
        try:
            with torch.cuda.stream(torch.cuda.Stream(dev)):
                return orig(self, *args, **kwargs)
        except BaseException as e:
            _note(f"generate() call {calls[0]} raised {type(e).__name__}; cap lifted, re-raised to Cosmos")
            raise
        finally:
            torch.cuda.set_per_process_memory_fraction(1.0, dev)

    GenerationMixin.generate = generate
    _note(f"armed: generate() call {after + 1} will run under memory fraction {frac}")


if __name__ == "__main__":
    _install_rollout_oom()
    launch_worker(
        dataset=lambda config: TinyPromptDataset(),
        reward_fns=[_reward_fn()],
        data_packer=DecoderOnlyLLMDataPacker(),
        val_data_packer=DecoderOnlyLLMDataPacker(),
    )
