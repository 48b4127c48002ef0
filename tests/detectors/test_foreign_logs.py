"""Resource failures in any format: a single captured log of another trainer handed to ``--check``.

The message strings come from the frameworks' own sources (docs/reference/foreign-errors.md, which cites
each; docs/reference/foreign_error_samples.txt holds rendered examples, many copied from users' issues).
Lines are wrapped the way real captures are: Ray actor prefixes with colour codes, torchrun ``[rankN]:``,
vLLM's logger, tqdm redraws, a terminal's hard wrap.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from a1x_diagnostics.engine import check
from a1x_diagnostics.events import Role, Signal, SignalKind, Source
from a1x_diagnostics.findings import Outcome, Status
from a1x_diagnostics.parsing import parse_lines

SAMPLES = Path(__file__).resolve().parents[2] / "docs" / "reference" / "foreign_error_samples.txt"
LAUNCHER = Source("train.log", Role.LAUNCHER)


def _check_capture(tmp_path: Path, text: str) -> tuple[Status, set[str], Outcome | None]:
    path = tmp_path / "train.log"
    path.write_text(text)
    report = check(path)
    return report.status, {f.id for f in report.findings}, report.outcome.state if report.outcome else None


def _samples() -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    current = ""
    with open(SAMPLES, encoding="utf-8", newline="") as f:  # keep the \r of tqdm redraws inside their lines
        text = f.read()
    for line in text.split("\n"):
        if line.startswith("#"):
            parts = line.split()
            current = parts[1] if len(parts) > 1 and parts[1][:1].isalpha() and parts[1][1:2].isdigit() else current
        elif line.strip():
            groups.setdefault(current[:2], []).append(line)
    return groups


def _kinds(line: str) -> set[tuple[str, str | None]]:
    out = set()
    for e in parse_lines([line], LAUNCHER):
        if isinstance(e, Signal):
            out.add((e.kind.value, e.fields.get("kind") or e.fields.get("reason")))
    return out


# (sample id, what each line of that section must be recognised as, how many of its lines at least)
SECTIONS = [
    ("A5", ("oom", "cumem"), 2),  # vLLM's cumem allocator: 'CUDA Error: out of memory at .../cumem_allocator.cpp:62'
    ("A6", ("oom", None), 10),  # vLLM's KV-cache and memory-budget ValueErrors, every version
    ("B1", ("nccl_error", "store_timeout"), 4),  # DistStoreError: wait timeout / waiting for clients
    ("B2", ("nccl_error", None), 8),  # c10d sockets, rendezvous
    ("B3", ("nccl_error", None), 12),  # ProcessGroupNCCL watchdog, NCCL error codes
    ("C1", ("gpu_layout_error", None), 3),  # 'Not enough GPUs available' (NeMo-RL, cosmos-rl)
    ("C4", ("gpu_layout_error", None), 4),  # vLLM's Ray executor: required GPUs exceed the placement group
]


@pytest.mark.parametrize(("section", "want", "least"), SECTIONS, ids=[s[0] for s in SECTIONS])
def test_the_frameworks_messages_are_recognised(section: str, want: tuple[str, str | None], least: int) -> None:
    lines = _samples()[section]
    hits = [ln for ln in lines if any(k == want[0] and (want[1] is None or v == want[1]) for k, v in _kinds(ln))]
    assert len(hits) >= least, (section, [ln[:100] for ln in lines if ln not in hits])


def test_a_ray_captured_vllm_sleep_mode_oom_is_a_vllm_oom_and_a_crash(tmp_path: Path) -> None:
    # verl colocated rollout: vLLM's cumem allocator under a Ray actor prefix with colour codes
    # (docs/reference/foreign-errors.md A5, D1; verl-project/verl#302).
    text = "\n".join([
        "\x1b[36m(WorkerDict pid=26108)\x1b[0m INFO 06-11 10:01:00 [gpu_worker.py:101] Sleep mode freed 35.43 GiB",
        "\x1b[36m(WorkerDict pid=26108)\x1b[0m CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:62",
        "Traceback (most recent call last):",
        '  File "/home/u/verl/verl/trainer/main_ppo.py", line 64, in main',
        "    run_ppo(config)",
        '  File "/usr/lib/python3/dist-packages/ray/_private/worker.py", line 2771, in get',
        "    raise value.as_instanceof_cause()",
        "ray.exceptions.RayTaskError(RuntimeError): ray::WorkerDict.actor_rollout_wake_up() (pid=26108, ip=10.0.0.2)",
        "RuntimeError: CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:62",
    ]) + "\n"
    status, ids, outcome = _check_capture(tmp_path, text)
    assert status is Status.CRITICAL and "vllm_oom" in ids and outcome is Outcome.CRASHED


def test_a_store_timeout_in_a_torchrun_capture_is_nccl_timeout(tmp_path: Path) -> None:
    text = "\n".join([
        "[rank3]: Traceback (most recent call last):",
        '[rank3]:   File "/work/train.py", line 12, in <module>',
        "[rank3]:     dist.barrier()",
        "[rank3]: torch.distributed.DistStoreError: wait timeout after 600000ms, keys: /none/torchelastic/role_info/0",
        "E0325 20:57:27.620000 2606 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) "
        "local_rank: 3 (pid: 2630) of binary: /usr/bin/python",
    ]) + "\n"
    status, ids, outcome = _check_capture(tmp_path, text)
    assert status is Status.CRITICAL and "nccl_timeout" in ids and outcome is Outcome.CRASHED


def test_a_c10d_socket_timeout_in_torchs_own_log_format_is_nccl_timeout(tmp_path: Path) -> None:
    text = ("[W304 19:44:37.543184455 socket.cpp:767] [c10d] The client socket has timed out after 600000ms while "
            "trying to connect to (10.0.0.1, 29500).\n")
    status, ids, _ = _check_capture(tmp_path, text)
    assert status is Status.CRITICAL and "nccl_timeout" in ids


def test_not_enough_gpus_from_another_trainer_is_insufficient_gpus(tmp_path: Path) -> None:
    text = ("Traceback (most recent call last):\n"
            '  File "/opt/nemo_rl/distributed/virtual_cluster.py", line 301, in _init_placement_groups\n'
            "nemo_rl.distributed.virtual_cluster.ResourceInsufficientError: Not enough GPUs available. Requested 16 "
            "GPUs, but only 8 are available in the cluster.\n")
    status, ids, _ = _check_capture(tmp_path, text)
    assert status is Status.CRITICAL and "insufficient_gpus" in ids
    assert _check_capture(tmp_path, "RuntimeError: CUDA error: invalid device ordinal\n")[1] >= {"insufficient_gpus"}
    verl = "ValueError: Total available GPUs 8.0 is less than total desired GPUs 16\n"
    assert "insufficient_gpus" in _check_capture(tmp_path, verl)[1]


def test_an_oom_glued_after_a_tqdm_redraw_is_read(tmp_path: Path) -> None:
    text = ("Training:   1%|▏         | 24/1752 [01:08<1:22:56,  2.88s/it]\rTraining:   1%|▏         | 25/1752 "
            "[01:10<1:22:50,  2.88s/it][rank5]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
            "2.00 GiB. GPU 5 has a total capacity of 79.15 GiB of which 1.02 GiB is free.\n")
    status, ids, _ = _check_capture(tmp_path, text)
    assert status is Status.CRITICAL and ids & {"policy_oom", "vllm_oom"}


def test_a_kv_cache_error_hard_wrapped_by_a_terminal_is_read(tmp_path: Path) -> None:
    # docs/reference/foreign-errors.md D4: a capture taken from a terminal screen breaks the line without any prefix
    text = ("(EngineCore_DP0 pid=563) ERROR 12-23 23:34:23 [core.py:708] ValueError: To serve at least one request "
            "with the models's max seq len (131072), (16.00 GiB KV cach\n"
            "e is needed, which is larger than the available KV cache memory (4.25 GiB). Based on the available "
            "memory, the estimated maximum model length is 34816. Try increasing `gpu_memory_utilization`\n")
    status, ids, _ = _check_capture(tmp_path, text)
    assert status is Status.CRITICAL and "vllm_oom" in ids


def test_the_ray_prefix_does_not_hide_a_traceback() -> None:
    lines = [
        "(LLMRayActor pid=1234, ip=10.0.0.2) Traceback (most recent call last):",
        '(LLMRayActor pid=1234, ip=10.0.0.2)   File "/x/vllm/worker.py", line 5, in f',
        "(LLMRayActor pid=1234, ip=10.0.0.2) ValueError: No available memory for the cache blocks. Try increasing "
        "`gpu_memory_utilization` when initializing the engine.",
    ]
    events = list(parse_lines(lines, LAUNCHER))
    tb = next(e for e in events if type(e).__name__ == "Traceback")
    assert tb.exc_type == "ValueError"  # type: ignore[attr-defined]
    assert any(isinstance(e, Signal) and e.kind is SignalKind.OOM for e in events)


def test_healthy_lines_of_other_frameworks_are_not_failures(tmp_path: Path) -> None:
    text = "\n".join(_samples()["D3"]) + "\n"  # vLLM's own INFO lines in every version's format
    status, ids, _ = _check_capture(tmp_path, text)
    assert status is not Status.CRITICAL, ids
