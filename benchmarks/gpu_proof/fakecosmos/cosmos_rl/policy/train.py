"""Stand-in for `python -m cosmos_rl.policy.train` on the device proof: allocates on command.

stdin commands: `alloc N` (N GiB more), `oom` (ask free + 10 GiB, catch the OOM), `free`, `exit`.
After each, the state is written (atomically) to the JSON file given by --status.
"""
import json
import os
import sys

import torch

status = sys.argv[sys.argv.index("--status") + 1]
held = []


def report(step, **extra):
    free, total = torch.cuda.mem_get_info()
    state = {
        "step": step,
        "pid": os.getpid(),
        "torch_allocated": torch.cuda.memory_allocated(),
        "torch_reserved": torch.cuda.memory_reserved(),
        "cuda_free": free,
        "cuda_total": total,
        **extra,
    }
    tmp = status + ".tmp"
    with open(tmp, "w") as f:
        json.dump(state, f)
    os.replace(tmp, status)
    print("[Policy] step", state, flush=True)


torch.empty(1, device="cuda")
report("ready")
for line in sys.stdin:
    cmd = line.split()
    if not cmd:
        continue
    if cmd[0] == "alloc":
        held.append(torch.empty(int(cmd[1]) << 30, dtype=torch.uint8, device="cuda"))
        torch.cuda.synchronize()
        report(f"alloc{cmd[1]}")
    elif cmd[0] == "oom":
        free, _ = torch.cuda.mem_get_info()
        ask = free + (10 << 30)
        try:
            extra = torch.empty(ask, dtype=torch.uint8, device="cuda")
            report("oom", oom=False, asked=ask)
            del extra
        except torch.OutOfMemoryError as exc:
            report("oom", oom=True, asked=ask, message=str(exc).splitlines()[0])
    elif cmd[0] == "free":
        held.clear()
        torch.cuda.empty_cache()
        report("freed")
    elif cmd[0] == "exit":
        break
