"""Each check on the smallest run that shows its case (docs/findings.md "Least evidence per check"): a
smoke test of 3-10 steps gets the verdict a long run would, and one step less of evidence gets none.
Buffer growth, stalls, crashes and the outcome have theirs in test_outcome.py."""

from __future__ import annotations

import pytest
from detector_helpers import cosmos, run_logs, stat, step


def starved(steps: int) -> list[str]:
    """Steps every 30 s computing 4.7 s each, the buffer always empty (rollout is the bottleneck)."""
    lines = []
    for i in range(1, steps + 1):
        t = 100 + 30.0 * i
        lines.append(stat(t - 1, 48 * i, 0, in_flight=48))
        lines.append(step(t, i, steps + 20, it=4.7))
    return lines


def test_three_starved_steps_are_enough_and_two_are_not() -> None:
    assert "rollout_starved" in run_logs({"controller.log": starved(3)}).ids
    assert "rollout_starved" not in run_logs({"controller.log": starved(2)}).ids


def test_one_busy_step_among_few_keeps_starvation_unproven() -> None:
    lines = starved(4)
    lines[-1] = step(100 + 30.0 * 4, 4, 24, it=29.0)  # the last interval was all compute
    assert "rollout_starved" not in run_logs({"controller.log": lines}).ids


def test_grpo_collapse_on_a_run_of_two_steps_and_not_on_one_collapsed_step_of_three() -> None:
    def collapsed(n: int) -> str:
        return step(100 + 10 * n, n, 40, std=0.0, loss=0.0, grad=0.0)

    assert "grpo_collapse" in run_logs({"controller.log": [collapsed(1), collapsed(2)]}).ids  # every step so far
    assert "grpo_collapse" not in run_logs({"controller.log": [collapsed(1)]}).ids
    mixed = [step(110, 1, 40), step(120, 2, 40), collapsed(3)]
    assert "grpo_collapse" not in run_logs({"controller.log": mixed}).ids
    assert "grpo_collapse" in run_logs({"controller.log": [*mixed, collapsed(4), collapsed(5)]}).ids


@pytest.mark.parametrize(
    ("file", "line", "finding"),
    [
        ("rollout_0.log", "ValueError: No available memory for the cache blocks. Try increasing "
         "`gpu_memory_utilization` when initializing the engine.", "vllm_oom"),
        ("policy_0.log", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.", "policy_oom"),
        ("policy_0.log", "[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught "
         "collective operation timeout: WorkNCCL(SeqNum=8, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
         "Timeout(ms)=600000) ran for 600012 milliseconds before timing out.", "nccl_timeout"),
        ("run.out", "RuntimeError: Replica with GPUs larger than 8 occurs but not on Lepton job, please specify "
         "--node-ip-list to provide the IPs of all nodes to enable conenctions to each Rendezvous head node.",
         "insufficient_gpus"),
    ],
)
def test_one_line_of_a_failure_is_enough(file: str, line: str, finding: str) -> None:
    controller = [cosmos(100, "Successfully loaded configuration from /tmp/x.toml")]
    rank = "[rank0]:" if file != "run.out" and not line.startswith("[rank") else ""
    r = run_logs({"controller.log": controller, file: [rank + line]})
    assert finding in r.ids, sorted(r.ids)
