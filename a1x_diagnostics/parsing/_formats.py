"""Line prefixes read outside the parser, for the UI and the supervisor: the time and level of a cosmos
line, a prefetch line's level, the lines that tell a replica's cause of death (docs/reference/cosmos-rl.md,
sections quoted at each pattern). What a message means is the catalog's (``a1x_diagnostics.signatures``;
``read_line`` reads one line through it).
"""

from __future__ import annotations

import re

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
