"""Line shapes: the prefix a line carries (torchrun rank, cosmos logger, vLLM, glog...) and its time.

A ``Shape`` says which family a line belongs to, its timestamp, level and the message after the
prefix. Message meaning (Stat, Step, signals) is decided elsewhere (``_rules``); this module only
peels prefixes. Everything here is pure and never raises on content.

Families (docs/reference/cosmos-rl.md §3.3-§3.4, §11.1; docs/reference/alpamayo-recipe.md §9.3):

- ``cosmos``: ``[cosmos] YYYY-mm-dd HH:MM:SS,mmm - logger - LEVEL - msg`` (§3.3; asctime, local time,
  no zone).
- ``vllm``: ``INFO MM-DD HH:MM:SS [file.py:123] msg`` (older vLLM: ``file.py:123] msg``; V1 engine
  core adds ``(EngineCore_0 pid=1) `` in front). No year in the stamp: see ``year_for``.
- ``torchelastic``: glog ``W1015 13:45:12.345678 1234 torch/distributed/...] msg``, also the
  bracketed C++ form ``[E1015 13:45:12.345678901 ProcessGroupNCCL.cpp:616] msg``.
- ``uvicorn``: ``INFO:     Started server process [..]``.
- ``prefetch``: ``[AlpamayoPrefetch][info] YYYY-mm-dd HH:MM:SS pid=N event k=v`` (recipe §9.3).
- ``slurm``: ``[YYYY-mm-dd hh:MM:SS.mmm PM UTC][cosmos-rl-sbatch]: msg`` (§11.1).
- ``tqdm``: a progress bar (``42%|████ | 5/12 [..]``), usually redrawn with ``\\r``.
- ``plain``: anything else (shell echoes, print, tracebacks, torchrun summaries).

A container runtime's stamp (``2024-06-28T06:11:52.685300953Z ``), Ray's ``(Actor pid=N, ip=A)`` and torch's
``[rankN]:`` are peeled in front of these.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import NamedTuple

# torch-elastic TailLog header ``[{role}{local_rank}]:`` (launch_replica.sh passes ``--role rank``).
# At least one letter, so the ``[0]:`` line of torchrun's failure summary is not taken for a prefix.
_RANK_RE = re.compile(r"\[[A-Za-z_]+(\d+)\]:")

_COSMOS_RE = re.compile(
    r"\[cosmos\] \d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} - ([^ ]+) - (DEBUG|INFO|WARNING|ERROR|CRITICAL) - "
)
# The common line in one match: an optional tee prefix right before ``[cosmos]`` (``split_rank`` peels
# exactly that: ``[cosmos]`` is no inner rank prefix), then the cosmos prefix. Same result as the long way
# (``tests/parsing/test_fast_paths.py``).
_RANKED_COSMOS_RE = re.compile(r"(?:\[[A-Za-z_]+(\d+)\]:)?(?=\[cosmos\] )" + _COSMOS_RE.pattern)
_VLLM_RE = re.compile(
    r"(?:\(([\w.-]+)(?: pid=\d+)?\) )?(DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)"
    r"(?:\.\d+)? (?:\[([\w./-]+:\d+)\]|([\w./-]+:\d+)\]) ?"
)
# torch's C++ logger leaves the month unpadded (``[E609 ...`` on June 9), glog pads it (``W0609``).
_GLOG_RE = re.compile(r"(\[)?([IWEF])(\d{1,2})(\d\d) (\d\d):(\d\d):(\d\d)\.(\d+)\s+(?:\d+\s+)?([^\]\s]+)\] ?")
_UVICORN_RE = re.compile(r"(DEBUG|INFO|WARNING|ERROR|CRITICAL):     ")
_PREFETCH_RE = re.compile(r"\[AlpamayoPrefetch\]\[(\w+)\] (\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d) ")
_SLURM_RE = re.compile(
    r"\[(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d+))?(?: ([AP]M))?(?: [A-Za-z+\-0-9]+)?\]"
    r"\[cosmos-rl-sbatch\]: ?"
)
_TQDM_RE = re.compile(r"\d+%\|.*\|")
# Ray's driver re-emits each worker line as ``(Actor pid=N[, ip=A]) line`` (``(raylet)``, ``(autoscaler +t)``
# for its own), the prefix often wrapped in ANSI colour codes that a capture keeps as ``\x1b[36m``, ``^[[36m`` or
# ``[36m``; repeated lines end ``[repeated Nx across cluster]`` (docs/reference/foreign-errors.md D1).
_COLOUR = r"(?:\x1b\[|\^\[\[|\[)[\d;]*m"
_RAY_RE = re.compile(
    rf"(?:{_COLOUR})?\((?:raylet|autoscaler[^)]*|(?:[\w.:-]+ )?pid=\d+(?:, ip=[\w.:-]+)?)\)(?:{_COLOUR})? ?"
)
_RAY_REPEATED_RE = re.compile(rf"(?:{_COLOUR})? ?\[repeated \d+x across cluster\](?:{_COLOUR})?(?: \(Ray dedup.*)?$")
# A container runtime's RFC 3339 stamp in front of every line (``docker logs -t``, Kubernetes), before Ray's and
# vLLM's prefixes (docs/reference/foreign-errors.md F6): peeled; the line's time when the rest carries none (as
# printed, its zone dropped like every stamp here).
_WALL_RE = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?(?:Z|[+-]\d\d:?\d\d)? ")

GLOG_LEVELS = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "CRITICAL"}
PREFETCH_LEVELS = {
    "trace": "DEBUG",
    "debug": "DEBUG",
    "info": "INFO",
    "warn": "WARNING",
    "warning": "WARNING",
    "error": "ERROR",
}


class Shape(NamedTuple):
    """What the prefix of one line says (a named tuple: built for every line, so it must be cheap)."""

    family: str
    body: str  # the line without its rank prefix
    msg: str  # the message after the family prefix
    rank: int | None = None
    ts: datetime | None = None
    level: str | None = None
    logger: str | None = None


def split_rank(text: str) -> tuple[int | None, str]:
    """``[rank3]:rest`` -> ``(3, "rest")``; lines without the torchrun prefix -> ``(None, text)``.

    torch's own error printer writes ``[rank3]: <line>`` (with a space) and torchrun's tee adds its
    ``[rank3]:`` in front: ``[rank3]:[rank3]: Traceback (most recent call last):``. Both prefixes
    and that one space are peeled; the outer (tee) rank is kept.
    """
    if not (text.startswith("[") and "]:" in text[:24]):
        return None, text
    m = _RANK_RE.match(text)
    if not m:
        return None, text
    rank, rest = int(m.group(1)), text[m.end() :]
    if rest.startswith("["):
        inner = _RANK_RE.match(rest)
        if inner and rest[inner.end() : inner.end() + 1] == " ":
            return rank, rest[inner.end() + 1 :]
    elif rest.startswith(" ") and rest[1:2] not in (" ", ""):
        return rank, rest[1:]  # torch's "[rank3]: <line>" without the tee prefix
    return rank, rest


def _dt(y: int, mo: int, d: int, h: int, mi: int, s: int, us: int = 0) -> datetime | None:
    try:
        return datetime(y, mo, d, h, mi, s, us)
    except ValueError:
        return None


def year_for(month: int, day: int, ref: datetime | None, after: bool = False) -> int | None:
    """Year for a ``MM-DD`` stamp (vLLM, glog) written before ``ref`` (the file's mtime), or with
    ``after`` written after it (the newest full stamp the file showed before the line).

    ``ref``'s year, unless that puts the line more than two days on the wrong side of ``ref``: a
    file last written in early January that holds December lines (the year before), or a December
    stamp followed by a January line (the year after).
    """
    if ref is None:
        return None
    try:
        candidate = datetime(ref.year, month, day)
    except ValueError:  # 02-29 outside a leap year, or garbage
        if (month, day) != (2, 29):
            return None
        return ref.year + 1 if after else ref.year - 1
    if after:
        return ref.year + 1 if (ref - candidate).days > 2 else ref.year
    return ref.year - 1 if (candidate - ref).days > 2 else ref.year


_fromisoformat = datetime.fromisoformat


def _cosmos_ts(stamp: str) -> datetime | None:
    """``YYYY-mm-dd HH:MM:SS,mmm`` (shape checked by ``_COSMOS_RE``) -> datetime, or None if no such time.

    ``fromisoformat`` (in C) reads the fixed-width stamp; what it refuses (an impossible date,
    digits other than ASCII) and hour 24 (which some Python versions may read as the next midnight)
    take the slow way, so the result is what building the datetime from the fields gives.
    """
    if stamp[11:13] != "24":
        try:
            return _fromisoformat(stamp.replace(",", "."))
        except ValueError:
            pass
    return _dt(int(stamp[0:4]), int(stamp[5:7]), int(stamp[8:10]), int(stamp[11:13]), int(stamp[14:16]),
               int(stamp[17:19]), int(stamp[20:23]) * 1000)


def shape_of(text: str, ref: datetime | None = None, after: bool = False) -> Shape:
    """Peel the prefixes of one line (without its newline). ``ref``, ``after``: the year reference of
    year-less stamps (``year_for``)."""
    m = _RANKED_COSMOS_RE.match(text)
    if m is not None:
        rank_digits, logger, level = m.groups()
        if rank_digits is None:
            return Shape("cosmos", text, text[m.end() :], None, _cosmos_ts(text[9:32]), level, logger)
        end = text.index("]:") + 2
        if end <= 24:  # split_rank looks for the prefix in the first 24 characters only
            body = text[end:]
            return Shape("cosmos", body, text[m.end() :], int(rank_digits), _cosmos_ts(body[9:32]), level, logger)
    return shape_in_full(text, ref, after)


def shape_in_full(text: str, ref: datetime | None = None, after: bool = False) -> Shape:
    """``shape_of`` without its shortcut for the common cosmos line (the reference the tests hold it to)."""
    rank, body = split_rank(text)
    if not body:
        return Shape("plain", body, body, rank)
    c = body[0]
    if c.isdigit() and body[10:11] == "T":
        m = _WALL_RE.match(body)
        if m is not None and len(body) > m.end():
            g = m.groups()
            inner = shape_in_full(body[m.end() :], ref, after)
            ts = inner.ts or _dt(int(g[0]), int(g[1]), int(g[2]), int(g[3]), int(g[4]), int(g[5]),
                                 int((g[6] or "0")[:6].ljust(6, "0")))
            return inner._replace(ts=ts, rank=rank if inner.rank is None else inner.rank)
    if c in "(\x1b^[":
        m = _RAY_RE.match(body)
        if m is not None:
            inner_rank, body = split_rank(body[m.end() :])
            rank = rank if inner_rank is None else inner_rank
            if "across cluster]" in body:
                body = _RAY_REPEATED_RE.sub("", body)
            if not body:
                return Shape("plain", body, body, rank)
            c = body[0]
    if c == "[":
        if body.startswith("[cosmos] "):
            m = _COSMOS_RE.match(body)
            if m:
                return Shape("cosmos", body, body[m.end() :], rank, _cosmos_ts(body[9:32]), m.group(2), m.group(1))
        elif body.startswith("[AlpamayoPrefetch]"):
            m = _PREFETCH_RE.match(body)
            if m:
                g = m.groups()
                ts = _dt(int(g[1]), int(g[2]), int(g[3]), int(g[4]), int(g[5]), int(g[6]))
                return Shape("prefetch", body, body[m.end() :], rank, ts, PREFETCH_LEVELS.get(g[0].lower()), g[0])
            return Shape("prefetch", body, body, rank)
        elif "[cosmos-rl-sbatch]" in body[:60]:
            m = _SLURM_RE.match(body)
            if m:
                g = m.groups()
                hour = int(g[3])
                if g[7] == "PM" and hour < 12:
                    hour += 12
                elif g[7] == "AM" and hour == 12:
                    hour = 0
                frac = (g[6] or "0")[:6].ljust(6, "0")
                ts = _dt(int(g[0]), int(g[1]), int(g[2]), hour, int(g[4]), int(g[5]), int(frac))
                return Shape("slurm", body, body[m.end() :], rank, ts)
        elif len(body) > 6 and body[1] in "IWEF" and body[2].isdigit():
            shape = _glog(body, rank, ref, after)
            if shape is not None:
                return shape
    elif c in "IWEF" and len(body) > 5 and body[1].isdigit():
        shape = _glog(body, rank, ref, after)
        if shape is not None:
            return shape
    if c in "DIWEC(":
        m = _VLLM_RE.match(body)
        if m:
            g = m.groups()
            month, day = int(g[2]), int(g[3])
            year = year_for(month, day, ref, after)
            ts = _dt(year, month, day, int(g[4]), int(g[5]), int(g[6])) if year is not None else None
            return Shape("vllm", body, body[m.end() :], rank, ts, g[1], g[7] or g[8])
        m = _UVICORN_RE.match(body)
        if m:
            return Shape("uvicorn", body, body[m.end() :], rank, None, m.group(1))
    if "%|" in body:
        m = _TQDM_RE.search(body)
        if m is not None:
            # A line written after the last redraw without a newline is glued to the bar: read it on its own.
            end = body.find("]", m.end())
            rest = body[end + 1 :] if end >= 0 else ""
            if rest.strip():
                inner = shape_in_full(rest, ref, after)
                return inner._replace(rank=rank if inner.rank is None else inner.rank)
            return Shape("tqdm", body, body, rank)
    return Shape("plain", body, body, rank)


def _glog(body: str, rank: int | None, ref: datetime | None, after: bool = False) -> Shape | None:
    m = _GLOG_RE.match(body)
    if not m:
        return None
    g = m.groups()
    month, day = int(g[2]), int(g[3])
    year = year_for(month, day, ref, after)
    us = int(g[7][:6].ljust(6, "0"))
    ts = _dt(year, month, day, int(g[4]), int(g[5]), int(g[6]), us) if year is not None else None
    return Shape("torchelastic", body, body[m.end() :], rank, ts, GLOG_LEVELS[g[1]], g[8])


def parse_cosmos_ts(text: str) -> datetime | None:
    """``2025-06-09 22:14:29,220`` (or with ``.``/no milliseconds) -> datetime; else ``None``."""
    m = re.match(r"(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[,.](\d{1,6}))?", text)
    if not m:
        return None
    g = m.groups()
    frac = int((g[6] or "0").ljust(6, "0"))
    return _dt(int(g[0]), int(g[1]), int(g[2]), int(g[3]), int(g[4]), int(g[5]), frac)
