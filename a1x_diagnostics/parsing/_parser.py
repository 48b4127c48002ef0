"""``LineParser``: lines of one file in, typed events out. Pure: no I/O, no clock.

Single lines are classified at once (``_shapes`` peels the prefix, ``_rules`` reads the message).
Two constructs span several lines and are grouped, separately for each torchrun rank so that
interleaved ``[rank0]:``/``[rank1]:`` output cannot mix them up:

- a Python traceback (``Traceback (most recent call last):`` .. frames .. ``Type: message``, with
  ``During handling of the above exception ..`` / ``The above exception was the direct cause ..``
  chains, indented message continuations and pydantic's multi-line ``N validation errors for X``)
  becomes one ``Traceback`` event, followed by the events its exception lines mean (an
  ``OutOfMemoryError`` line gives an ``OOM`` signal, a ``RuntimeError: Missing required env var``
  a ``MISSING_ENV_VAR`` signal...);
- torchrun's failure summary (``Root Cause (first observed failure):`` .. ``exitcode  : -9`` ..
  ``traceback : Signal 9 (SIGKILL) received by PID``, docs/reference/cosmos-rl.md §3.4, §15) becomes one
  ``CHILD_FAILED`` signal anchored on its ``exitcode`` line.

A group closes on the first line that cannot belong to it, at ``flush()``, or when it grows too
long or too idle (``MAX_GROUP_LINES``, ``MAX_GROUP_GAP``, ``MAX_GROUP_SPAN``): bounded memory.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from a1x_diagnostics.events import Event, LogLine, Prefetch, Role, Signal, SignalKind, Source, Traceback
from a1x_diagnostics.parsing._build import ctx_maker, maker
from a1x_diagnostics.parsing._lines import segments
from a1x_diagnostics.parsing._rules import (
    MAX_FIELD,
    RULES,
    Ctx,
    cap,
    child_signal_name,
    classify_gated,
    classify_message,
    classify_with,
)
from a1x_diagnostics.parsing._shapes import Shape, shape_of

TRACEBACK_START = "Traceback (most recent call last):"
CHILD_FAILED_START = "Root Cause (first observed failure):"
GROUP_STARTS = (TRACEBACK_START, CHILD_FAILED_START)
_CHAIN_MARKERS = (
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
)
MAX_GROUP_LINES = 500  # lines kept in one traceback
MAX_GROUP_GAP = 2000  # file lines without a line of the group's rank
MAX_GROUP_SPAN = 20000  # file lines from the group's first line
MAX_TB_LINE = 2048  # characters kept of each traceback line
GATED_ROLES = frozenset({Role.CONTROLLER, Role.POLICY, Role.ROLLOUT, Role.REFERENCE})  # see _rules "gates"

_EXC_LINE = re.compile(r"[A-Za-z_][\w.]*(?::(?:\s.*)?)?$")
# A Python frame line (``  File "x.py", line 12, in f``; faulthandler's has no comma before ``in``): an excerpt
# that starts inside a traceback, its header lost, opens one here (docs/reference/foreign-errors.md F6).
FRAME_MARK = 'File "'
_FRAME_LINE = re.compile(r'\s+File "[^"]+", line \d+, in \S')
# Loggers that print a traceback with their prefix on every line (vLLM's ``logger.exception``: ``ERROR 06-28 06:11:45
# worker_base.py:145] Traceback …``, V1's behind ``(EngineCore_DP0 pid=N)``; docs/reference/foreign-errors.md D3, F1)
PREFIXED_TRACEBACKS = frozenset({"vllm"})
# The last line of a header-less traceback: ``XxxError: msg`` or a module-qualified class (``pkg.mod.Name: msg``),
# so that the next line of a log is never taken for an exception.
_HEADERLESS_EXC = re.compile(r"(?:(?:[A-Za-z_]\w*\.)+[A-Z]\w*|[A-Z]\w*(?:Error|Exception))(?::(?:\s.*)?)?$")
_PYDANTIC_HEAD = re.compile(r"\d+ validation errors? for \S+\s*$")
_CF_FIELD = re.compile(r"\s+(\w+)\s*:\s?(.*)$")
_CF_SIGNAL = re.compile(r"Signal (\d+) \((SIG\w+)\) received by PID (\d+)")
_CF_EXIT = re.compile(r"(-?\d+)(?: \(pid: (\d+)\))?")

_ACCEPT, _ACCEPT_DONE, _REJECT = 0, 1, 2
_FULL_STAMPS = frozenset({"cosmos", "prefetch", "slurm"})  # families whose stamps carry the year
# ``Cls(...)`` / ``Cls(**ctx.kw(), ...)``, built faster (``_build``)
_make_prefetch = ctx_maker(Prefetch)
_make_log_line = ctx_maker(LogLine)
_make_signal = ctx_maker(Signal)
_make_traceback = maker(Traceback)
Key = tuple[int, int]  # (line number, index of the \r-segment within that line)


def is_group_start(body: str) -> bool:
    """Whether a line (without its rank prefix) opens a multi-line group."""
    return body.startswith(GROUP_STARTS)


# A terminal hard-wraps a long line at its width and repeats no prefix: the rest starts a line of its own
# (docs/reference/foreign-errors.md F2, D4: ``… trying to connect to (172.17.0.2`` / ``, 44737).``). A line whose
# message leaves a bracket open is held; the next line is its rest when it has no prefix, no indent, and closes
# that bracket. Read as one line, numbered as the first.
_NOT_WRAPPED = frozenset({"tqdm", "prefetch"})


def _open_bracket(shape: Shape) -> bool:
    msg = shape.msg
    if shape.family in _NOT_WRAPPED or ("(" not in msg and "[" not in msg):
        return False
    return msg.count("(") > msg.count(")") or msg.count("[") > msg.count("]")


def _continues(held: Shape, text: str, shape: Shape) -> bool:
    if not text or text[0] in " \t" or shape.family != "plain" or shape.rank is not None:
        return False
    if text.startswith(GROUP_STARTS):
        return False
    msg = held.msg
    if msg.count("(") > msg.count(")") and text.count(")") > text.count("("):
        return True
    return msg.count("[") > msg.count("]") and text.count("]") > text.count("[")


# Lines that may be an error no rule knows (``_error_line``): a level word, or ``XxxError:`` / ``XxxException:``.
ERROR_MARKERS = ("ERROR", "CRITICAL", "Error:", "Exception:")
class _Group:
    """One open multi-line construct of one rank."""

    __slots__ = ("first_key", "first_line", "keys", "last_line", "rank", "raw_first")

    def __init__(self, key: Key, raw: str, rank: int | None) -> None:
        self.first_key = key
        self.first_line = self.last_line = key[0]
        self.raw_first = raw
        self.rank = rank
        self.keys: list[Key] = [key]  # (line, segment) of every line the group took

    def offer(self, key: Key, raw: str, shape: Shape) -> int:
        raise NotImplementedError

    def close(self, parser: LineParser) -> list[Event]:
        raise NotImplementedError


class _TracebackGroup(_Group):
    __slots__ = ("exc", "headerless", "lines", "pending_blank", "prefixed", "state")

    def __init__(self, key: Key, raw: str, rank: int | None, body: str, headerless: bool = False,
                 prefixed: str | None = None) -> None:
        super().__init__(key, raw, rank)
        self.lines: list[str] = [cap(body, MAX_TB_LINE)]
        self.exc: list[tuple[int, str, str]] = []  # (lineno, raw, body) of exception lines
        self.state = "frames"  # frames | exc | pydantic | chain
        self.pending_blank: list[Key] = []
        self.headerless = headerless  # opened on a frame line: its exception line must look like one
        self.prefixed = prefixed  # a logger that prefixes every line of it (vLLM's): its lines are the messages

    def _take(self, key: Key, body: str) -> None:
        for b in self.pending_blank:
            self.lines.append("")
            self.keys.append(b)
        self.pending_blank = []
        self.lines.append(cap(body, MAX_TB_LINE))
        self.keys.append(key)
        self.last_line = key[0]

    def offer(self, key: Key, raw: str, shape: Shape) -> int:
        body = shape.body
        if self.prefixed is not None:  # every line of it carries the logger's prefix: read the messages
            if shape.family != self.prefixed:
                return _REJECT
            body, shape = shape.msg, shape._replace(family="plain", body=shape.msg)
        if len(self.lines) + len(self.pending_blank) >= MAX_GROUP_LINES:
            return _REJECT
        if not body.strip():
            if self.state in ("exc", "pydantic"):
                self.state = "exc_blank"
            self.pending_blank.append(key)
            self.last_line = key[0]
            return _ACCEPT
        indented = body[0] in " \t"
        if self.state == "frames":
            if indented:
                self._take(key, body)
                return _ACCEPT
            if shape.family != "plain" or body.startswith(GROUP_STARTS) or not _EXC_LINE.match(body):
                return _REJECT
            if self.headerless and not _HEADERLESS_EXC.match(body):
                return _REJECT
            self._take_exc(key, raw, body)
            return _ACCEPT
        if self.state in ("exc", "pydantic"):
            if indented:
                self._take(key, body)
                return _ACCEPT
            if body in _CHAIN_MARKERS:
                self._take(key, body)
                self.state = "chain"
                return _ACCEPT
            if self.state == "pydantic" and shape.family == "plain" and not body.startswith(GROUP_STARTS):
                self._take(key, body)  # a field path line of a pydantic ValidationError
                return _ACCEPT
            return _REJECT
        if self.state == "exc_blank":
            if body in _CHAIN_MARKERS:
                self._take(key, body)
                self.state = "chain"
                return _ACCEPT
            return _REJECT
        # chain: expect the next header
        if body.startswith(TRACEBACK_START):
            self._take(key, body)
            self.state = "frames"
            return _ACCEPT
        return _REJECT

    def _take_exc(self, key: Key, raw: str, body: str) -> None:
        self._take(key, body)
        self.exc.append((key[0], raw, body))
        self.state = "pydantic" if _PYDANTIC_HEAD.search(body) else "exc"

    def close(self, parser: LineParser) -> list[Event]:
        if self.headerless and not self.exc:
            return []  # frames alone (a stack dump, a quoted traceback cut before its end): no exception to read
        exc_type = exc_message = None
        if self.exc:
            last = self.exc[-1][2]
            exc_type, _, exc_message = last.partition(":")
            exc_message = exc_message.strip() or None
        tb = _make_traceback(
            source=parser.source,
            line=self.first_line,
            text=cap(self.raw_first),
            rank=self.rank,
            lines=tuple(self.lines),
            exc_type=exc_type,
            exc_message=cap(exc_message, MAX_FIELD) if exc_message else None,
        )
        out: list[Event] = [tb]
        for lineno, raw, body in self.exc:
            ctx = Ctx(parser.source, lineno, raw, None, None, self.rank)
            out.extend(classify_message(body, ctx))
        out.extend(parser.blank_lines([k[0] for k in self.pending_blank], self.rank))
        return out


class _ChildFailedGroup(_Group):
    """torchrun's ``ChildFailedError`` summary, from ``Root Cause`` to the closing ``====`` rule."""

    __slots__ = ("exit_line", "fields", "nlines")

    def __init__(self, key: Key, raw: str, rank: int | None) -> None:
        super().__init__(key, raw, rank)
        self.fields: dict[str, str] = {}
        self.exit_line: tuple[int, str] | None = None
        self.nlines = 1

    def offer(self, key: Key, raw: str, shape: Shape) -> int:
        body = shape.body
        if self.nlines >= 40 or shape.family != "plain":
            return _REJECT
        stripped = body.strip()
        if stripped.startswith("===") and stripped.strip("=") == "":
            self._add(key)
            return _ACCEPT_DONE
        if re.fullmatch(r"\[\d+\]:", stripped) or (stripped.startswith("---") and stripped.strip("-") == ""):
            self._add(key)
            return _ACCEPT
        m = _CF_FIELD.match(body)
        if m:
            name = m.group(1)
            self.fields.setdefault(name, m.group(2).strip())
            if name == "exitcode" and self.exit_line is None:
                self.exit_line = (key[0], raw)
            self._add(key)
            return _ACCEPT
        return _REJECT

    def _add(self, key: Key) -> None:
        self.keys.append(key)
        self.last_line = key[0]
        self.nlines += 1

    def close(self, parser: LineParser) -> list[Event]:
        f = self.fields
        exitcode = pid = None
        m = _CF_EXIT.match(f.get("exitcode", ""))
        if m:
            exitcode = int(m.group(1))
            pid = int(m.group(2)) if m.group(2) else None
        sig = None
        sm = _CF_SIGNAL.search(f.get("traceback", ""))
        if sm:
            sig = sm.group(2)
            pid = pid or int(sm.group(3))
        sig = sig or child_signal_name(exitcode)
        rank_m = re.match(r"(\d+)(?: \(local_rank: (\d+)\))?", f.get("rank", ""))
        fields: dict[str, Any] = {
            "exitcode": exitcode,
            "signal": sig,
            "pid": pid,
            "global_rank": int(rank_m.group(1)) if rank_m else None,
            "local_rank": int(rank_m.group(2)) if rank_m and rank_m.group(2) else None,
            "host": f.get("host"),
            "time": f.get("time"),
        }
        line, raw = self.exit_line or (self.first_line, self.raw_first)
        return [Signal(source=parser.source, line=line, text=cap(raw), rank=self.rank,
                       kind=SignalKind.CHILD_FAILED, fields=fields)]


class LineParser:
    """Parse the lines of one log file, in order. ``feed`` returns the events completed so far.

    Year-less stamps (vLLM ``MM-DD``, glog ``MMDD``) take their year from the newest full stamp
    (cosmos, prefetch, SLURM) the file showed before them, so a copied run dates them as the original
    did; before the first full stamp, from ``mtime`` (the file's modification time), and without it
    those events have ``ts=None``. ``keep_unknown=False`` drops ``LogLine`` events early (faster; the
    reader, ``_reader.FileReader``, never makes them).
    """

    def __init__(self, source: Source, *, mtime: float | None = None, keep_unknown: bool = True) -> None:
        self.source = source
        self._ref = datetime.fromtimestamp(mtime) if mtime is not None else None
        self._ref_after = False  # True once ``_ref`` is a stamp of the file (lines come after it)
        self._keep_unknown = keep_unknown
        self._gated = source.role in GATED_ROLES
        self._groups: dict[int | None, _Group] = {}
        self._held: tuple[int, str, Shape] | None = None  # a line that may continue on the next (a terminal wrap)
        self._lineno = -1
        self._seg = 0

    def feed(self, lineno: int, text: str) -> list[Event]:
        """One line (``\\r``-split segments of one physical line share its number), no newline."""
        out: list[Event] = []
        if lineno == self._lineno:
            self._seg += 1
        else:
            self._lineno, self._seg = lineno, 0
        key = (lineno, self._seg)
        if self._groups:
            self._expire(lineno, out)
        shape = shape_of(text, self._ref, self._ref_after)
        if shape.ts is not None and shape.family in _FULL_STAMPS:
            self._ref, self._ref_after = shape.ts, True
        if self._held is not None:
            joined = self._wrapped(lineno, text, shape)
            if joined is not None:
                out.extend(joined)
                return out
            out.extend(self._release())
        group = self._groups.get(shape.rank)
        if group is not None:
            verdict = group.offer(key, text, shape)
            if verdict == _ACCEPT:
                return out
            del self._groups[shape.rank]
            if verdict == _ACCEPT_DONE:
                out.extend(self._close(group))
                return out
            out.extend(self._close(group))
        body = shape.body
        if shape.family == "plain" and body.startswith(GROUP_STARTS):
            if body.startswith(TRACEBACK_START):
                self._groups[shape.rank] = _TracebackGroup(key, text, shape.rank, body)
            else:
                self._groups[shape.rank] = _ChildFailedGroup(key, text, shape.rank)
            return out
        if shape.family in PREFIXED_TRACEBACKS and shape.msg.startswith(TRACEBACK_START):
            self._groups[shape.rank] = _TracebackGroup(key, text, shape.rank, shape.msg, prefixed=shape.family)
            return out
        if shape.family == "plain" and FRAME_MARK in body and _FRAME_LINE.match(body):
            self._groups[shape.rank] = _TracebackGroup(key, text, shape.rank, body, headerless=True)
            return out
        if _open_bracket(shape):
            self._held = (lineno, text, shape)  # a terminal may have wrapped it: see the next line (``_wrapped``)
            return out
        out.extend(self._line_events(lineno, text, shape))
        return out

    def _release(self) -> list[Event]:
        """The held line on its own (the next line did not continue it)."""
        held, self._held = self._held, None
        return self._line_events(*held) if held is not None else []

    def _wrapped(self, lineno: int, text: str, shape: Shape) -> list[Event] | None:
        """The held line's events read with ``text`` joined to it, when ``text`` is its terminal-wrapped rest."""
        held = self._held
        if held is None or not _continues(held[2], text, shape):
            return None
        self._held = None
        joined = held[1] + text
        return self._line_events(held[0], joined, shape_of(joined, self._ref, self._ref_after))

    def flush(self) -> list[Event]:
        """End of input: close every open group (a traceback cut off by EOF is still one event)."""
        out: list[Event] = self._release()
        for rank in sorted(self._groups, key=lambda r: -1 if r is None else r):
            out.extend(self._close(self._groups[rank]))
        self._groups.clear()
        return out

    @property
    def in_group(self) -> bool:
        """A multi-line group (traceback, torchrun failure summary) is open, or a line is held for its
        wrapped rest: the next lines may belong to it, so a caller that skips lines without a marker must
        feed every line now."""
        return bool(self._groups) or self._held is not None

    # -- internals

    def _close(self, group: _Group) -> list[Event]:
        return group.close(self)

    def _expire(self, lineno: int, out: list[Event]) -> None:
        for rank, g in list(self._groups.items()):
            if lineno - g.last_line > MAX_GROUP_GAP or lineno - g.first_line > MAX_GROUP_SPAN:
                del self._groups[rank]
                out.extend(self._close(g))

    def blank_lines(self, linenos: Iterable[int], rank: int | None) -> list[Event]:
        if not self._keep_unknown:
            return []
        return [LogLine(source=self.source, line=n, text="", rank=rank, family="plain", msg="") for n in linenos]

    def _line_events(self, lineno: int, text: str, shape: Shape) -> list[Event]:
        family = shape.family
        if family == "prefetch" and shape.logger is not None:
            ev = _prefetch_event(shape, Ctx(self.source, lineno, text, shape.ts, shape.level, shape.rank))
            if ev is not None:
                return [ev]
        else:  # tqdm bars too: huggingface_hub's 'Fetching N files' is the catalog's (recipe_hub.py)
            ctx = Ctx(self.source, lineno, text, shape.ts, shape.level, shape.rank)
            events = classify_gated(text, shape.msg, ctx) if self._gated else classify_with(RULES, shape.msg, ctx)
            if events:
                return events
        error = _error_line(shape)
        if error is not None:
            ctx = Ctx(self.source, lineno, text, shape.ts, shape.level or error, shape.rank)
            return [_make_signal(ctx, kind=SignalKind.ERROR_LINE, fields={"message": cap(shape.msg, MAX_FIELD)})]
        if not self._keep_unknown:
            return []
        ctx = Ctx(self.source, lineno, text, shape.ts, shape.level, shape.rank)
        logger = shape.logger if family in ("cosmos", "vllm", "torchelastic") else None
        return [_make_log_line(ctx, family=family, msg=cap(shape.msg), logger=logger)]


# ``XxxError: msg`` / ``pkg.XxxException: msg`` at the start of a message (an exception printed without
# its traceback, or a traceback's last line cut from it), and the plain ``ERROR:name:msg`` / ``[ERROR] msg``
# of other loggers (Python's logging default format, transformers).
_ERROR_WORD = re.compile(r"(?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception)(?:\(.*?\))?: ")
_PLAIN_LEVEL = re.compile(r"\[?(ERROR|CRITICAL)[\]:] ?")
_ERROR_LEVELS = frozenset({"ERROR", "CRITICAL"})
# Families whose prefix spells the level out (a marker finds the line); glog's ``E1129 ...`` does not, and
# torchrun's own E-lines are followed by its failure summary, which the parser reads.
_LEVEL_WORD_FAMILIES = frozenset({"cosmos", "vllm", "uvicorn", "prefetch"})


def _error_line(shape: Shape) -> str | None:
    """The level (ERROR/CRITICAL) of a line that reports an error no rule classified, else None."""
    if shape.level in _ERROR_LEVELS and shape.family in _LEVEL_WORD_FAMILIES:
        return shape.level
    msg = shape.msg
    if shape.family == "plain":
        m = _PLAIN_LEVEL.match(msg)
        if m:
            return m.group(1)
    if ("Error" in msg or "Exception" in msg) and _ERROR_WORD.match(msg):
        return "ERROR"
    return None


_PREFETCH_HEAD = re.compile(r"pid=(\d+) (\S+)")


def _prefetch_event(shape: Shape, ctx: Ctx) -> Event | None:
    """``[AlpamayoPrefetch][lvl] ts pid=N event k=v ..`` (recipe §9.3; values are ``repr``s)."""
    rest = shape.msg
    m = _PREFETCH_HEAD.match(rest)
    if not m:
        return None
    fields = _prefetch_fields(rest[m.end() :])
    return _make_prefetch(ctx, prefetch_level=shape.logger or "", pid=int(m.group(1)), event=m.group(2),
                          fields=fields)


_PREFETCH_PAIR = re.compile(r"""(\w+)=('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[\[({]|\S*)""")


def _prefetch_fields(text: str) -> dict[str, str]:
    """``k='a b' n=3 d={'x': 1}`` -> ``{"k": "a b", "n": "3", "d": "{'x': 1}"}`` (quoted strings unquoted)."""
    out: dict[str, str] = {}
    i, n = 0, len(text)
    while i < n:
        m = _PREFETCH_PAIR.search(text, i)
        if not m:
            break
        value = m.group(2)
        if value[:1] in "[({":
            value, i = _scan_value(text, m.start(2))
        elif value[:1] in "'\"":
            value = value[1:-1] if "\\" not in value else _scan_value(text, m.start(2))[0]
            i = m.end()
        else:
            i = m.end()
        out[m.group(1)] = cap(value, MAX_FIELD)
    return out


def _scan_value(text: str, i: int) -> tuple[str, int]:
    n = len(text)
    if i >= n:
        return "", i
    c = text[i]
    if c in "'\"":
        j = i + 1
        buf: list[str] = []
        while j < n and text[j] != c:
            if text[j] == "\\" and j + 1 < n:
                nxt = text[j + 1]
                buf.append({"n": "\n", "t": "\t", "\\": "\\", "'": "'", '"': '"'}.get(nxt, "\\" + nxt))
                j += 2
                continue
            buf.append(text[j])
            j += 1
        return "".join(buf), min(j + 1, n)
    if c in "[({":
        depth, j, quote = 0, i, ""
        while j < n:
            ch = text[j]
            if quote:
                if ch == "\\":
                    j += 1
                elif ch == quote:
                    quote = ""
            elif ch in "'\"":
                quote = ch
            elif ch in "[({":
                depth += 1
            elif ch in "])}":
                depth -= 1
                if depth == 0:
                    return text[i : j + 1], j + 1
            j += 1
        return text[i:], n
    j = text.find(" ", i)
    if j < 0:
        return text[i:], n
    return text[i:j], j


def parse_lines(lines: Iterable[str], source: Source, first_lineno: int = 1) -> Iterator[Event]:
    """Events of ``lines`` (no newlines), numbered from ``first_lineno``; flushes at the end."""
    parser = LineParser(source)
    for lineno, text in enumerate(lines, first_lineno):
        for seg in segments(text):
            yield from parser.feed(lineno, seg)
    yield from parser.flush()


def read_line(text: str, role: Role) -> list[Event]:
    """The events one raw line gives, read as a line of a file of ``role`` (the supervisor's questions
    of a line: a step, a saved checkpoint)."""
    return list(parse_lines([text], Source(f"{role.value}.log", role)))
