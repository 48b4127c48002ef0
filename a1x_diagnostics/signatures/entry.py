"""What one catalog entry is: ``Sig`` (a line that gives an event) and ``Hit`` (a text that marks an error).

An entry is data: its regex, what it gives, where the message comes from and real lines it was seen
on. Everything the readers need beyond that (needles, the strings a scanner looks for, which lines of
a replica log may hold it) is derived from the entries by ``a1x_diagnostics.parsing``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from a1x_diagnostics.closed_loop_events import CL
from a1x_diagnostics.events import Event, Role, SignalKind

# ------------------------------------------------------------------ gates (docs/parsing.md, "Gates")
# In controller and replica logs (most of a run's bytes, mostly DEBUG and vLLM noise) an entry is read
# only on a line that also holds one of its gates: a level of WARNING or above (always), or what its
# ``gate=`` adds: the cosmos INFO prefix with the tag its message is logged under, a tag its message
# always carries, or ``OWN`` (a message printed without a cosmos prefix: its needle is its gate).
# Launcher captures and stage logs are read without gates.

LEVEL = (" - WARNING - ", " - ERROR - ", " - CRITICAL - ")
CONTROLLER = (" - INFO - [Controller] ",)
ROLLOUT = (" - INFO - [Rollout",)  # also '[Rollout rank=N]'
POLICY = (" - INFO - [Policy] ",)
STEP = (" - INFO - Step: ",)
DYNAMIC_SAMPLING = (" - INFO - Dynamic sampling",)
DATA_FETCHER = (" - INFO - [DataFetcher] ",)
WEIGHT_SYNC_THREAD = ("[WeightSyncThread] ",)  # the async weight sender's lines, at any level
# The pynccl 'NCCL: ...' and '[Watchdog]' lines have no documented level; torch's 'Watchdog caught
# collective operation timeout' is a glog line without a cosmos prefix.
NCCL = ("NCCL: ", "Watchdog")
# Other frameworks' lines: a short list, so that few lines of a replica log are candidates.
FOREIGN = (
    "[c10d]",  # torch's socket / store warnings: [W304 19:44:37.5 socket.cpp:767] [c10d] ...
    "NCCL WARN",  # NCCL's own log: host:pid:tid [dev] file:line NCCL WARN ...
    "NCCL error",  # torch's C10D_NCCL_CHECK text outside a traceback
    "Watchdog",  # ProcessGroupNCCL's watchdog lines
    "CUDA Error", "CUDA error",  # vLLM's cumem allocator on stderr; C10_CUDA_CHECK
    "out of memory",
    "failed (exitcode:",  # torchrun's agent: E0325 ... failed (exitcode: -9) local_rank: 5 (pid: 2630) ...
    "terminate called", "SIGSEGV", "Caught signal",  # C++ and signal handlers
    "Error:", "Exception:", "ERROR", "CRITICAL",  # an exception line without its traceback, other loggers' levels
)


class _Own:
    def __repr__(self) -> str:
        return "OWN"


OWN: Any = _Own()
"""``gate=OWN``: a message that other code prints (bash, slurmstepd, torch, W&B...) or that has no
documented level: in a controller or replica log, any line holding the entry's needle."""

Reader = Callable[[re.Match[str]], "Mapping[str, Any] | None"]


class Monitor(str, Enum):
    """What a line of a Slurm batch script's monitor says (``[<time>][<tag>]: message`` in ``slurm_<jobid>.log``,
    read by ``a1x_diagnostics.parsing.parse_monitor_log``; ``launcher.MONITOR``)."""

    STARTED = "started"
    NEW_RUN = "new_run"
    RESUME = "resume"
    RESUME_SKIPPED = "resume_skipped"
    RETRY = "retry"
    NO_RETRIES = "no_retries"
    AUTORESUME = "autoresume"
    STEP_FAILED = "step_failed"
    FINAL = "final"
    SIGNAL = "signal"
    ABORT = "abort"


@dataclass(frozen=True)
class Sig:
    """A message shape and the event it gives.

    ``event``: a ``SignalKind`` (a ``Signal`` whose ``fields`` are the regex's named groups, numbers
    as ints, plus ``fields``) or an event class (its fields from the named groups of the same names,
    converted to the field's type, plus ``fields``, plus what ``read`` returns; ``read`` returning
    None refuses the line). ``samples``: lines seen in real logs (a recording, a user's log);
    ``rendered``: lines rendered from the source's own format string where no recording shows the
    message (both are tests alike). ``wrapper``: the ``error`` group quotes another message, read too.
    ``read_in``: the kind of file the samples were read from (``a1x_diagnostics.events.Role``), when
    it is not the group's own. The regex is searched in a line's message (the text after its prefix).
    A ``CL`` event is a closed-loop entry (``closed_loop.py``), read by ``a1x_diagnostics.alpagym.parser``; a
    ``Monitor`` one a Slurm monitor line (``launcher.MONITOR``, its fields the named groups, numbers as ints).
    """

    id: str
    pattern: str
    event: SignalKind | type[Event] | CL | Monitor
    source: str
    samples: tuple[str, ...]
    fields: Mapping[str, Any] = field(default_factory=dict)
    gate: tuple[str, ...] | _Own = ()
    rendered: tuple[str, ...] = ()
    read: Reader | None = None
    wrapper: bool = False
    read_in: Role | None = None
    flags: int = 0


@dataclass(frozen=True)
class Hit:
    """A text that marks an error a detector asks for by ``hit`` id, read in the last lines of a
    traceback and in error lines no ``Sig`` named (``a1x_diagnostics.detectors``' hits). Any of
    ``needles``, then ``pattern`` (if given; its named groups become the hit's fields)."""

    id: str
    hit: str
    needles: tuple[str, ...]
    source: str
    samples: tuple[str, ...]
    pattern: str | None = None
    kind: str | None = None
    flags: int = 0
    rendered: tuple[str, ...] = ()


@dataclass(frozen=True)
class Benign:
    """An error text that is not a failure (docs/reference/cosmos-rl.md §15, "Healthy runs print alarming
    lines"): an error group whose text ``pattern`` matches is left out of ``unexplained_error``, for ``reason``
    (``a1x_diagnostics.detectors._errors.benign_reason``). Nothing else is ignored."""

    id: str
    pattern: str
    reason: str
    source: str
    samples: tuple[str, ...]
    rendered: tuple[str, ...] = ()
    flags: int = 0
