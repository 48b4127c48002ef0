"""The line formats read outside the parser: patterns over raw lines, for the supervisor and the UI.

The parser reads the same lines through its own rules (``_rules``, over a line's message) and
shapes (``_shapes``, its prefix), tuned for speed; these are for code that holds a raw line and
needs one fact from it: the training step, a saved checkpoint, the time and level of a cosmos
line, a replica's cause of death (docs/reference/cosmos-rl.md, sections quoted at each pattern).
"""

from __future__ import annotations

import re

# docs/reference/cosmos-rl.md §4.5: controller 'Step: {s}/{N}, Reward Mean: ...' (also the SFT shape 'Step: s/N, Loss:
# ...').
STEP_RE = re.compile(r"\bStep: (\d+)/(\d+)")
# docs/reference/cosmos-rl.md §5.3 / docs/reference/alpamayo-recipe.md §8.8:
# '[Policy] Step: {N}, checkpoint saved successfully at {.../checkpoints/step_N/policy}.'
CHECKPOINT_SAVED_RE = re.compile(r"Step: (\d+), checkpoint saved successfully at (.+?)\.?\s*$")
# docs/reference/cosmos-rl.md §3.3: '[cosmos] YYYY-mm-dd HH:MM:SS,mmm - logger - LEVEL - msg' (naive local time), maybe
# behind
# torchrun's '[rank<i>]:' tee prefix (§3.4). Groups: year, month, day, hour, minute, second, ms, level.
COSMOS_STAMP_RE = re.compile(
    r"^(?:\[rank\d+\]:)?\[cosmos\] (\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d),(\d{3}) - [\w.]+ - "
    r"(DEBUG|INFO|WARNING|ERROR|CRITICAL) - "
)
# docs/reference/alpamayo-recipe.md §9.3: the prefetch worker's '[AlpamayoPrefetch][<level>] ...' lines; group 1 is
# error or warn.
PREFETCH_LEVEL_RE = re.compile(r"\[AlpamayoPrefetch\]\[(error|warn)\]")
# torchrun's summary in the replica's own log (docs/reference/cosmos-rl.md §3.4, §15): the real cause of a death.
REPLICA_CAUSE_RE = re.compile(
    r"(exitcode\s*:\s*-?\d+|Signal \d+ \(SIG\w+\) received|ChildFailedError|"
    r"^\S*(Error|Exception): .+|CUDA out of memory|OutOfMemoryError)"
)
