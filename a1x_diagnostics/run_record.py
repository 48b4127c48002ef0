"""What a run's own records say beside its log lines, read at the edge by ``engine.check``.

- **The folder a launcher capture names.** ``cosmos-rl``'s own output (``run.out``) holds the launcher's
  lines only; each process it starts writes to ``<--log-dir>/logs_<ts>/<role>_<i>.log``, and the launcher
  prints that path (``Appending command: … output files: PATH``, docs/reference/cosmos-rl.md §3.1). A capture
  checked on its own is read with that folder when it can be reached: the printed path, else a folder of
  that name beside the capture (a copied run).
- **Our supervisor's stop.** An a1x-tui run folder records in ``state.json`` how its train stage ended;
  ``stopped`` is the user's stop (``a1x-tui stop``, the dashboard's Stop, a SIGTERM to the supervisor),
  with its reason. The stop began at the stage log's ``[a1x-tui] stopping:`` line (``stages/train.log``,
  each line led by its ISO-8601 time). It reaches the detectors as a ``STOPPED_BY_USER`` event, so the
  processes that end of it are not failures and the outcome is ``stopped``, not "stopped from outside".
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

from a1x_diagnostics.events import Role, Signal, SignalKind, Source
from a1x_diagnostics.inputs import InputError, open_regular, read_input

STATE_FILE = "state.json"
TRAIN_STAGE = "train"
_STOPPING = "[a1x-tui] stopping:"
_TAIL_BYTES = 1 << 20  # the stop is near the end of the stage log
_STATE_MAX_BYTES = 16 << 20
_LOGS_TS = re.compile(r"logs_\d{8}-\d{6}")


def launcher_log_dir(capture: Path, printed: str | None) -> Path | None:
    """The log folder a launcher capture names, where it can be reached: the printed path, else a folder of
    that name beside the capture. None when neither holds a file, or the name is not a ``logs_<ts>`` folder's
    (a line of a log never makes ``--check`` read elsewhere)."""
    named = Path(printed or "")
    if not _LOGS_TS.fullmatch(named.name):
        return None  # the launcher always writes into a logs_<YYYYmmdd-HHMMSS> folder (§3.1): nothing else is read
    candidates = [named if named.is_absolute() else capture.parent / named, capture.parent / named.name]
    for folder in candidates:
        try:
            if folder.is_dir() and any(p.is_file() for p in folder.iterdir()):
                return folder
        except OSError:
            continue
    return None


def user_stop(run_dir: Path) -> Signal | None:
    """The supervisor's record that the user stopped the run's train stage, as an event; None when it did
    not (the stage ran to its end, failed, or this is not a run folder of ours)."""
    try:  # read_input: a state.json that is a FIFO or a device must not block --check
        state = json.loads(read_input(run_dir / STATE_FILE, limit=_STATE_MAX_BYTES, what="run state"))
    except (InputError, ValueError):
        return None
    if not isinstance(state, dict):
        return None
    stage = next((s for s in state.get("stages") or [] if isinstance(s, dict) and s.get("name") == TRAIN_STAGE), None)
    if stage is None or stage.get("status") != "stopped":
        return None
    reason = str(stage.get("reason") or state.get("message") or "stopped")
    when = _stopping_time(run_dir / "stages" / f"{TRAIN_STAGE}.log") or _iso(stage.get("ended_at"))
    if when is None:
        return None
    text = f"train stage stopped by a1x-tui: {reason} (ended {stage.get('ended_at')})"
    return Signal(source=Source(STATE_FILE, Role.STAGE), line=1, text=text, ts=when,
                  kind=SignalKind.STOPPED_BY_USER, fields={"reason": reason})


def _iso(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _stopping_time(stage_log: Path) -> datetime | None:
    """The time of the stage log's last ``[a1x-tui] stopping:`` line (the stop's SIGTERM)."""
    try:
        f, st = open_regular(stage_log)
        with f:
            f.seek(max(0, st.st_size - _TAIL_BYTES))
            tail = f.read(_TAIL_BYTES).decode("utf-8", "replace")
    except (OSError, InputError):
        return None
    for line in reversed(tail.splitlines()):
        stamp, _, rest = line.partition(" ")
        if rest.startswith(_STOPPING):
            return _iso(stamp)
    return None


__all__ = ["launcher_log_dir", "user_stop"]
