"""A process that is not part of the run: holds --gib GiB of GPU memory and sleeps."""
import json
import os
import sys
import time

import torch

gib = int(sys.argv[sys.argv.index("--gib") + 1])
status = sys.argv[sys.argv.index("--status") + 1]
x = torch.empty(gib << 30, dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
with open(status + ".tmp", "w") as f:
    json.dump({"pid": os.getpid(), "ppid": os.getppid(), "gib": gib}, f)
os.replace(status + ".tmp", status)
while True:
    time.sleep(60)
