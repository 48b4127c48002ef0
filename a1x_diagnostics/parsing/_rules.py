"""Message rules: which log message means what, in all three Cosmos-RL generations.

A rule is one declaration: ``@rule(regex, gates=...)`` on its builder, ``signal_rule(regex, kind,
gates=..., **fields)``, ``foreign_rule`` (gated by ``FOREIGN_GATES``) or ``template_rule`` (a bulk
shape, ``_templates``). Everything else about it is read from that declaration, never kept beside it:

- **Needle**: the quick ``in`` test before the regex, and a marker of launcher files. It is the
  longest string that every match of the regex holds (``_required``: ``re``'s own parse of it) and
  that the rule's gates do not already say; a line the regex matches holds it, so no event is lost
  to it. A regex whose top level is ``A|B|...`` with no such string gets one needle per alternative
  (the longest string each alternative requires), one catalogue entry each, in place, sharing the
  regex and builder: a line is looked up by whichever its alternative holds. A regex that requires
  no string of ``MIN_LENGTH`` characters in some alternative is refused at import.
- **Gates** (replica and controller logs, below): ``LEVEL_GATES`` plus the ``gates=`` of the
  declaration: the cosmos level and tag prefix the message is logged under (``INFO_CONTROLLER``...),
  a tag of its own, or ``OWN_NEEDLE`` for a message printed without either (its needle is its
  gate). A bulk shape's gates are the others' tag gates that its text holds.
- ``NEEDLES``, ``GATES`` and what the scanners look for (``_markers``, ``_prefilter``, the live
  follower) come from ``RULES``.

``classify_message`` tries the rules whose needles occur in the message, in catalogue order, and
returns the first match. "Wrapper" rules (a failure that quotes another error: ``Failed to load or
parse config file {path}: {e}``, ``[Rollout] Failed in rollout generation: {e}``...) also classify
the quoted error, so ``... : CUDA out of memory`` yields both the wrapper signal and an ``OOM`` signal.

Texts come from docs/reference/cosmos-rl.md §2.3-§2.8, §4-§6, §8.6, §13.6, §14 and
docs/reference/alpamayo-recipe.md §8, §11, §14; each group below names its section.
"""

from __future__ import annotations

import functools
import math
import re
import signal as _signal
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from a1x_diagnostics.events import (
    Checkpoint,
    CheckpointPhase,
    ConfigDump,
    DynamicSampling,
    Event,
    Prefetch,
    PromptRejected,
    Signal,
    SignalKind,
    Source,
    Staleness,
    Stat,
    Step,
    SyncPhase,
    Throttle,
    ThrottleState,
    TrainReport,
    WeightSync,
)
from a1x_diagnostics.parsing._build import MAX_TEXT, ctx_maker
from a1x_diagnostics.parsing._literal import read_literal
from a1x_diagnostics.parsing._required import needles as needles_from
from a1x_diagnostics.parsing._required import read as read_regex
from a1x_diagnostics.parsing._templates import Bulk, Template, convert, event_kwargs, message_pattern

MAX_FIELD = 2048  # characters of an error message kept in a signal field


def cap(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[:limit]


@dataclass(slots=True)
class Ctx:
    """Where a message was read: the common fields of every event built from it."""

    source: Source
    line: int
    text: str
    ts: datetime | None
    level: str | None
    rank: int | None

    def kw(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "line": self.line,
            "text": self.text if len(self.text) <= MAX_TEXT else self.text[:MAX_TEXT],
            "ts": self.ts,
            "level": self.level,
            "rank": self.rank,
        }


# ``Cls(**ctx.kw(), ...)``, built faster (``_build``); ``ctx`` supplies source, line, text, ts, level, rank.
_make_signal = ctx_maker(Signal)
_make_stat = ctx_maker(Stat)
_make_step = ctx_maker(Step)
_make_train_report = ctx_maker(TrainReport)
_make_dynamic_sampling = ctx_maker(DynamicSampling)
_make_staleness = ctx_maker(Staleness)
_make_throttle = ctx_maker(Throttle)
_make_weight_sync = ctx_maker(WeightSync)
_make_prompt_rejected = ctx_maker(PromptRejected)
_make_checkpoint = ctx_maker(Checkpoint)
_make_config_dump = ctx_maker(ConfigDump)

Builder = Callable[[Any, Ctx], Event | None]  # gets a re.Match (or a _MatchView with the same API)


@dataclass(frozen=True, slots=True)
class Rule:
    """One entry of the catalogue, all of it read from its declaration (see the module's doc)."""

    needle: str
    pattern: re.Pattern[str]
    build: Builder
    wrapper: bool = False  # the ``error`` group quotes another message: classify it too
    gates: frozenset[str] = frozenset()  # in replica/controller logs: the line must hold one of these
    alt_groups: bool = False  # the regex has ``<name>2`` alternatives to fold into ``<name>``
    literals: tuple[str, ...] = ()  # the strings every match holds (``_required``), else ``(needle,)``


# ---------------------------------------------------------------- gates for replica and controller logs
#
# controller.log / policy_<i>.log / rollout_<i>.log are most of the bytes of a run, and mostly
# DEBUG and vLLM noise. There a rule is tried only when the line also holds one of its *gates*:
# the cosmos level prefix of the level the message is logged at, or a tag that every line of the
# message carries, declared on the rule (``gates=``; levels: docs/reference/cosmos-rl.md §4-§6 tables).
# The gates of all rules together are few, so GNU grep can look for all of them at once at near disk
# speed (``_prefilter``); the pure path applies the same gates, so both paths see the same lines. Any
# rule fires on a WARNING/ERROR/CRITICAL line, and exception lines inside a traceback are read without
# gates. Launcher captures and stage logs (small) are read without gates.

LEVEL_GATES = (" - WARNING - ", " - ERROR - ", " - CRITICAL - ")
INFO_CONTROLLER = " - INFO - [Controller] "
INFO_ROLLOUT = " - INFO - [Rollout"  # also "[Rollout rank=N]"
INFO_POLICY = " - INFO - [Policy] "
WEIGHT_SYNC_THREAD = "[WeightSyncThread] "  # the async weight sender's lines, at any level
# HA_NCCL, [NCCL] and [ABNORMAL ...] lines are WARNING/ERROR (§4.7, §5.2, §5.5, §6.2, §15): the level
# gates cover them. The pynccl ``NCCL: ...`` and ``[Watchdog]`` lines have no documented level, and
# torch's ``Watchdog caught collective operation timeout`` is a glog line without a cosmos prefix.
NCCL_GATES = ("NCCL: ", "Watchdog")
# Other frameworks' lines (``foreign_rule``): a short list, so the marker scan of every replica line
# stays as fast as before those rules (a gate is also a marker).
FOREIGN_GATES = (
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


class _OwnNeedle:
    def __repr__(self) -> str:
        return "OWN_NEEDLE"


OWN_NEEDLE = _OwnNeedle()
"""``gates=OWN_NEEDLE``: a message that other code prints (bash, slurmstepd, torch, W&B...) or that has
no documented level: in a gated log, any line holding the rule's needle."""

Gates = tuple[str, ...] | _OwnNeedle


@dataclass(frozen=True, slots=True)
class _Definition:
    """A declaration as written: the regex (compiled, and what ``_required`` read from it: the strings
    every match holds, those of each top-level alternative), the builder and the declared gates
    (``None``: a bulk shape's, read from ``text`` once every rule's gates are known)."""

    pattern: re.Pattern[str]
    literals: tuple[str, ...]
    alternatives: tuple[tuple[str, ...], ...]
    build: Builder
    wrapper: bool
    gates: Gates | None
    text: str = ""


_DEFINITIONS: list[_Definition] = []
TEMPLATES: dict[Bulk, Template] = {}
"""The bulk shapes (``_templates``), each also a rule here, tried before its shape's general rule."""


def _define(pattern: str, flags: int, build: Builder, wrapper: bool, gates: Gates | None, text: str = "") -> None:
    compiled, literals, alternatives = read_regex(pattern, flags)
    _DEFINITIONS.append(_Definition(compiled, literals, alternatives, build, wrapper, gates, text))


def template_rule(t: Template) -> None:
    """The rule of a bulk shape: its message, whole, at its level; the event from its fields. Its gates
    are the other rules' tag gates that its text holds."""
    TEMPLATES[t.kind] = t
    if t.event is None or t.level is None:
        return  # a whole line, read by its family's parser (prefetch lines)
    make: Callable[..., Event] = ctx_maker(t.event)
    level = t.level

    def build(m: re.Match[str], c: Ctx) -> Event | None:
        if c.level != level:
            return None
        fields = convert(t, m.groupdict())
        return None if fields is None else make(c, **event_kwargs(t, fields))

    _define(message_pattern(t), 0, build, False, None, " - " + "".join(lit for lit, _, _ in t.parts()))


def rule(pattern: str, /, *, gates: Gates = (), wrapper: bool = False,
         flags: int = 0) -> Callable[[Builder], Builder]:
    """Declares a rule: its regex (searched in a line's message), its gates beyond ``LEVEL_GATES`` and
    its builder (the function decorated). Its needle is read from the regex."""

    def register(build: Builder) -> Builder:
        _define(pattern, flags, build, wrapper, gates)
        return build

    return register


def signal_rule(pattern: str, signal_kind: SignalKind, /, *, gates: Gates = (), wrapper: bool = False,
                flags: int = 0, **const: Any) -> None:
    """A rule whose event is a ``Signal``: named groups become fields (ints where they look like ints)."""

    def build(m: re.Match[str], c: Ctx) -> Event:
        fields: dict[str, Any] = dict(const)
        for k, v in m.groupdict().items():
            fields[k] = _auto(v)
        return _make_signal(c, kind=signal_kind, fields=fields)

    rule(pattern, gates=gates, wrapper=wrapper, flags=flags)(build)


def _auto(v: str | None) -> Any:
    if v is None:
        return None
    if re.fullmatch(r"-?\d+", v):
        return int(v)
    return cap(v, MAX_FIELD)


def _int(v: str | None) -> int | None:
    if v is None or v == "None":
        return None
    try:
        return int(v)
    except ValueError:
        return None


def _float(v: str | None) -> float | None:
    if v is None:
        return None
    try:
        return float(v)  # what the suffix stripping below gives too, whenever this succeeds
    except ValueError:
        pass
    v = v.strip().rstrip(",")
    if v.endswith("s."):
        v = v[:-2]
    elif v.endswith(("s", ".")):
        v = v[:-1]
    try:
        return float(v)
    except ValueError:
        return None


def _step_from_path(path: str | None) -> int | None:
    if not path:
        return None
    m = re.search(r"step_(\d+)", path)
    return int(m.group(1)) if m else None


# ---------------------------------------------------------------- controller metrics (§4.3-§4.5)


template_rule(Template(Bulk.STAT, "INFO - [Controller] Stat: {samples:int} samples, {completion_tokens:int} completion "
                        "tokens, {pending:int} pending rollouts, {in_flight:int} in-flight, {outdated_filtered:int} "
                        "filtered (outdated), {elapsed_s:float}s elapsed", Stat))
template_rule(Template(Bulk.STAT_OLD, "INFO - [Controller] Stat: {samples:int} samples, {completion_tokens:int} "
                       "completion tokens, {pending:int} pending rollouts, {elapsed_s:float} seconds elapsed", Stat,
                       {"in_flight": None, "outdated_filtered": None}))


@rule(
    r"\[Controller\] Stat: (\d+) samples, (\d+) completion tokens, (\d+) pending rollouts, "
    r"(?:(\d+) in-flight, (\d+) filtered \(outdated\), )?([\d.eE+-]+|nan|inf)(?:s| seconds) elapsed",
    gates=(INFO_CONTROLLER,),
)
def _stat(m: re.Match[str], c: Ctx) -> Event | None:
    samples, tokens, pending, in_flight, filtered, elapsed_text = m.groups()
    elapsed = _float(elapsed_text)
    if elapsed is None:
        return None
    return _make_stat(
        c,
        samples=int(samples),
        completion_tokens=int(tokens),
        pending=int(pending),
        in_flight=_int(in_flight),
        outdated_filtered=_int(filtered),
        elapsed_s=elapsed,
    )


# Step line names -> Step fields. GRPO shape (status.py:1805) and SFT shape (status.py:1507,
# ``Loss: x, Max Loss y, Grad norm: z``); lower-cased, so both spellings of "grad norm" map.
_STEP_FIELDS = {
    "reward mean": "reward_mean",
    "reward std": "reward_std",
    "reward max": "reward_max",
    "reward min": "reward_min",
    "completion length mean": "completion_length_mean",
    "completion length max": "completion_length_max",
    "average loss": "loss_avg",
    "loss": "loss_avg",
    "max loss": "loss_max",
    "learning rate": "learning_rate",
    "entropy": "entropy",
    "effective entropy": "effective_entropy",
    "grad norm": "grad_norm",
    "kl loss avg": "kl_loss_avg",
    "kl loss max": "kl_loss_max",
    "iteration time": "iteration_time_s",
}
_STEP_NAME = re.compile(r"([A-Za-z][A-Za-z ]*?):?")


@functools.lru_cache(maxsize=256)
def _step_field(head: str) -> str | None:
    """The Step field a piece's name part (``Reward Mean:``) stands for, or None."""
    m = _STEP_NAME.fullmatch(head)
    return _STEP_FIELDS.get(m.group(1).strip().lower()) if m else None


# The GRPO Step line of status.py (docs/reference/cosmos-rl.md §4.5).
template_rule(Template(Bulk.STEP, "INFO - Step: {step:int}/{total:int}, Reward Mean: {reward_mean:float}, Reward Std: "
                       "{reward_std:float}, Reward Max: {reward_max:float}, Reward Min: {reward_min:float}, Completion "
                       "Length Mean: {completion_length_mean:float}, Completion Length Max: "
                       "{completion_length_max:float}, Average loss: {loss_avg:float}, Max loss: {loss_max:float}, "
                       "Learning rate: {learning_rate:float}, Entropy: {entropy:float}, Effective Entropy: "
                       "{effective_entropy:float}, Grad Norm: {grad_norm:float}, KL Loss Avg: {kl_loss_avg:float}, KL "
                       "Loss Max: {kl_loss_max:float}, Iteration time: {iteration_time_s:float}s.", Step))


@rule(r"^Step: (\d+)/(\d+)(?:, (.*))?$", gates=(" - INFO - Step: ",))
def _step(m: re.Match[str], c: Ctx) -> Event | None:
    # Each ``, ``-separated piece is ``<name>:? <value>``: the value is what follows the last space (no
    # white space in it), the name what precedes it; names repeat on every line, hence the cache.
    values: dict[str, Any] = {}
    for piece in (m.group(3) or "").split(", "):
        head, space, value = piece.strip().rpartition(" ")
        if not space or not value:
            continue
        name = _step_field(head)
        if name is not None and value.split() == [value]:
            values[name] = _float(value)
    return _make_step(c, step=int(m.group(1)), total=int(m.group(2)), **values)


_REPORT_KEY = re.compile(r"(?:^|, )([A-Za-z0-9_./-]+): ")


def parse_report_pairs(text: str) -> dict[str, float | str]:
    """``k: v, k2: v2`` where a value may itself hold ``, `` (custom metrics; docs/reference/cosmos-rl.md §7.2)."""
    # split: the text before the first key, then each key and the text up to the next key's match.
    parts = _REPORT_KEY.split(text)
    out: dict[str, float | str] = {}
    for i in range(1, len(parts), 2):
        raw = parts[i + 1].strip()
        try:
            out[parts[i]] = float(raw)
        except ValueError:
            out[parts[i]] = cap(raw, MAX_FIELD)
    return out


# The controller's per-step report (docs/reference/cosmos-rl.md §4.5): C hands back the pairs' text, this module reads
# it.
template_rule(Template(Bulk.TRAIN_REPORT, "INFO - [Controller] Train report data from total {rollouts:int} rollouts: "
                       "{pairs:text}", TrainReport,
                       fold=lambda f: {"rollouts": f["rollouts"], "metrics": parse_report_pairs(f["pairs"])}))


@rule(r"Train report data from total (\d+) rollouts: ?(.*)$", gates=(INFO_CONTROLLER,))
def _train_report(m: re.Match[str], c: Ctx) -> Event | None:
    return _make_train_report(c, rollouts=int(m.group(1)), metrics=parse_report_pairs(m.group(2)))


_COUNT_PAIR = re.compile(r"'([A-Za-z_][A-Za-z0-9_]*)': (0|[1-9][0-9]*)")
_SIMPLE_COUNTS = re.compile(rf"\{{(?:{_COUNT_PAIR.pattern}(?:, {_COUNT_PAIR.pattern})*)?\}}")


template_rule(Template(Bulk.DYNAMIC_OUTDATED, "INFO - Dynamic sampling rewards distribution so far: "
                       "{{'outdated': {outdated:count}}}.", DynamicSampling, fold=lambda f: {"counts": dict(f)}))


@rule(r"Dynamic sampling rewards distribution so far: (.*)$", gates=(" - INFO - Dynamic sampling",))
def _dynamic_sampling(m: re.Match[str], c: Ctx) -> Event | None:
    raw = m.group(1)
    start, end = raw.find("{"), raw.rfind("}")
    if start < 0 or end < start:
        return None
    text = raw[start : end + 1]
    if _SIMPLE_COUNTS.fullmatch(text):  # {'outdated': 3, ...}: what read_literal would give, cheaper
        return _make_dynamic_sampling(c, counts={k: int(v) for k, v in _COUNT_PAIR.findall(text)})
    try:
        value = read_literal(text)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    counts: dict[str, int] = {}
    for k, v in value.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            counts[str(k)] = int(v)
    return _make_dynamic_sampling(c, counts=counts)


template_rule(Template(Bulk.STALENESS, "INFO - [Controller] weight staleness: accepted p50={p50:sint} p99={p99:sint} "
                       "max={max:sint}, discarded={discarded:int}/{total:int} (allowed_outdated_steps="
                       "{allowed_outdated_steps:sint}, sync_weight_interval={sync_weight_interval:sint})", Staleness))


@rule(
    r"weight staleness: accepted p50=(-?\d+) p99=(-?\d+) max=(-?\d+), discarded=(\d+)/(\d+) "
    r"\(allowed_outdated_steps=(-?\d+), sync_weight_interval=(-?\d+)\)", gates=(INFO_CONTROLLER,),
)
def _staleness(m: re.Match[str], c: Ctx) -> Event | None:
    g = [int(x) for x in m.groups()]
    return _make_staleness(c, p50=g[0], p99=g[1], max=g[2], discarded=g[3], total=g[4],
                           allowed_outdated_steps=g[5], sync_weight_interval=g[6])


# ---------------------------------------------------------------- throttle (§4.3; absent at 747d1bd)


@rule(r"Soft throttle (ENGAGED|still engaged after|RELEASED after) ?([\d.]+s)?:? "
      r"samples_on_the_fly=(\d+) (?:>= |< )?threshold=(\d+)", gates=(INFO_CONTROLLER,))
def _throttle(m: re.Match[str], c: Ctx) -> Event | None:
    word = m.group(1)
    state = (
        ThrottleState.ENGAGED if word == "ENGAGED"
        else ThrottleState.STILL_ENGAGED if word.startswith("still")
        else ThrottleState.RELEASED
    )
    return _make_throttle(c, state=state, in_flight=int(m.group(3)), threshold=int(m.group(4)),
                          seconds=_float(m.group(2)))


@rule(r"Current pending rollouts (\d+) is larger than the allowed outdated version "
      r"count (\d+)\. Generate with batch (\d+)")
def _pending_over(m: re.Match[str], c: Ctx) -> Event | None:
    # The printed "count" is allowed_outdated_steps * n_policy, not the throttle threshold (§4.3).
    return _make_throttle(c, state=ThrottleState.PENDING_OVER_ALLOWED, pending=int(m.group(1)),
                          batch=int(m.group(3)))


# ---------------------------------------------------------------- weight sync (§5.2, §6.2)


def _sync(c: Ctx, phase: SyncPhase, step: int | None = None, seconds: float | None = None, mb: float | None = None,
          qd: int | None = None) -> Event:
    return _make_weight_sync(c, phase=phase, step=step, seconds=seconds, megabytes=mb, queue_depth=qd)


@rule(r"\[Rollout\] Starting to execute (\d+); (\d+), (\d+) weight sync receives", gates=(INFO_ROLLOUT,))
def _recv_start(m: re.Match[str], c: Ctx) -> Event | None:
    return _sync(c, SyncPhase.RECV_START)


_RECV = "INFO - [Rollout] All {_:int} at step {step:int?} recv operations finished in {seconds:float} seconds with " \
        "{megabytes:float} MB received."
_DONE = {"queue_depth": None}
template_rule(Template(Bulk.RECV_DONE, _RECV + " While {_:int} non-trainable splitted params skipped and {_:int} "
                       "trainable splitted params transferred.", WeightSync, {"phase": SyncPhase.RECV_DONE, **_DONE}))
# The same line of earlier Cosmos-RL, without the ``While ...`` tail (real users' logs).
template_rule(Template(Bulk.RECV_DONE_OLD, _RECV, WeightSync, {"phase": SyncPhase.RECV_DONE, **_DONE}))


@rule(r"All (\d+) at step (\d+|None) recv operations finished in ([\d.eE+-]+) seconds"
      r"(?: with ([\d.eE+-]+) MB received)?", gates=(INFO_ROLLOUT,))
def _recv_done(m: re.Match[str], c: Ctx) -> Event | None:
    _, step, seconds, mb = m.groups()
    return _make_weight_sync(c, phase=SyncPhase.RECV_DONE, step=_int(step), seconds=_float(seconds),
                             megabytes=_float(mb), queue_depth=None)


template_rule(Template(Bulk.SEND_DONE, "DEBUG - [Policy] All {_:int} at step {step:int?} send operations of "
                       "finished in {seconds:float} seconds with {megabytes:float} MB sent. While {_:int} "
                       "non-trainable splitted params skipped and {_:int} splitted params transferred.", WeightSync,
                       {"phase": SyncPhase.POLICY_SEND_DONE, **_DONE}))


@rule(r"All (\d+) at step (\d+|None) send operations(?: of)? finished in ([\d.eE+-]+) seconds"
      r"(?: with ([\d.eE+-]+) MB sent)?", gates=OWN_NEEDLE)
def _policy_send(m: re.Match[str], c: Ctx) -> Event | None:
    _, step, seconds, mb = m.groups()
    return _make_weight_sync(c, phase=SyncPhase.POLICY_SEND_DONE, step=_int(step), seconds=_float(seconds),
                             megabytes=_float(mb), queue_depth=None)


@rule(r"Starting broadcasting of parameters", gates=(INFO_ROLLOUT,))
def _bcast_start(m: re.Match[str], c: Ctx) -> Event | None:
    return _sync(c, SyncPhase.BROADCAST_START)


@rule(r"Starting full-model broadcast", gates=(INFO_ROLLOUT,))
def _bcast_full_start(m: re.Match[str], c: Ctx) -> Event | None:
    return _sync(c, SyncPhase.BROADCAST_START)


@rule(r"Finished broadcasting of parameters", gates=(INFO_ROLLOUT,))
def _bcast_done(m: re.Match[str], c: Ctx) -> Event | None:
    return _sync(c, SyncPhase.BROADCAST_DONE)


@rule(r"Finished full-model broadcast(?:: (\d+) params, ([\d.]+) MB, ([\d.]+) s)?", gates=(INFO_ROLLOUT,))
def _bcast_full_done(m: re.Match[str], c: Ctx) -> Event | None:
    return _sync(c, SyncPhase.BROADCAST_DONE, None, _float(m.group(3)), _float(m.group(2)))


@rule(r"Setting weight_synced after broadcast(?: \(n_dst=\d+, step=(\w+)\))?", gates=(INFO_ROLLOUT,))
def _synced_after(m: re.Match[str], c: Ctx) -> Event | None:
    return _sync(c, SyncPhase.SYNCED_AFTER_BROADCAST, _int(m.group(1)))


@rule(r"\[WeightSyncThread\] Enqueued (P2R|R2R) \(step=(\w+)(?:, .*?qdepth=(\d+))?", gates=(WEIGHT_SYNC_THREAD,))
def _wst_enqueued(m: re.Match[str], c: Ctx) -> Event | None:
    return _sync(c, SyncPhase.ASYNC_ENQUEUED, _int(m.group(2)), qd=_int(m.group(3)))


@rule(r"\[WeightSyncThread\] P2R done \(step=(\w+), ver=\w+, ([\d.]+) ms"
      r"(?:, qdepth_after=(\d+))?", gates=(WEIGHT_SYNC_THREAD,))
def _wst_p2r_done(m: re.Match[str], c: Ctx) -> Event | None:
    ms = _float(m.group(2))
    return _sync(c, SyncPhase.ASYNC_DONE, _int(m.group(1)), ms / 1000 if ms is not None else None,
                 qd=_int(m.group(3)))


@rule(r"\[WeightSyncThread\] R2R done: (\d+) params, ([\d.]+) MB, ([\d.]+) ms, "
      r"step=(\w+)(?:, ver=\w+, qdepth_after=(\d+))?", gates=(WEIGHT_SYNC_THREAD,))
def _wst_r2r_done(m: re.Match[str], c: Ctx) -> Event | None:
    ms = _float(m.group(3))
    return _sync(c, SyncPhase.ASYNC_DONE, _int(m.group(4)), ms / 1000 if ms is not None else None,
                 _float(m.group(2)), _int(m.group(5)))


@rule(r"\[R2R Barrier\] Timed out after (\d+)s waiting for go signal(?: \(step=(\w+)\))?", gates=OWN_NEEDLE)
def _barrier(m: re.Match[str], c: Ctx) -> Event | None:
    return _sync(c, SyncPhase.BARRIER_TIMEOUT, _int(m.group(2)), float(m.group(1)))


# ---------------------------------------------------------------- version gate (§6.3; HEAD/0.4.7 only)


template_rule(Template(Bulk.PROMPT_REJECTED, "INFO - [Rollout rank={_:int}] prompt rejected: prompt.weight_version="
                       "{prompt_version:sint} current_weight_version={current_version:sint} allowed_outdated="
                       "{allowed_outdated:sint} ceiling={ceiling:sint}; head-of-queue will be re-checked until "
                       "current_weight_version advances", PromptRejected))


@rule(r"prompt rejected: prompt\.weight_version=(-?\d+) current_weight_version=(-?\d+) "
      r"allowed_outdated=(-?\d+) ceiling=(-?\d+)", gates=(INFO_ROLLOUT,))
def _prompt_rejected(m: re.Match[str], c: Ctx) -> Event | None:
    p, cur, a, ceil = (int(x) for x in m.groups())
    return _make_prompt_rejected(c, prompt_version=p, current_version=cur, allowed_outdated=a, ceiling=ceil)


# ---------------------------------------------------------------- checkpoints (§5.3)


def _ckpt(phase: CheckpointPhase, c: Ctx, step: int | None, path: str | None) -> Event:
    return _make_checkpoint(c, phase=phase, step=step, path=cap(path, MAX_FIELD) if path else None)


@rule(r"Saving cosmos checkpoint at step (\d+)", gates=(INFO_POLICY,))
def _ckpt_saving(m: re.Match[str], c: Ctx) -> Event | None:
    return _ckpt(CheckpointPhase.SAVING, c, int(m.group(1)), None)


@rule(r"Step: (\d+), checkpoint saved successfully at (.*?)\.?\s*$", gates=(INFO_POLICY,))
def _ckpt_saved(m: re.Match[str], c: Ctx) -> Event | None:
    return _ckpt(CheckpointPhase.SAVED, c, int(m.group(1)), m.group(2))


@rule(r"Checkpoint (?:complete marker for rank (\d+)|config) not found at "
      r"(.*?)\. Marking checkpoint as incomplete")
def _ckpt_incomplete(m: re.Match[str], c: Ctx) -> Event | None:
    return _ckpt(CheckpointPhase.INCOMPLETE, c, _step_from_path(m.group(2)), m.group(2))


@rule(r"Async checkpoint save/upload failed")
def _ckpt_failed(m: re.Match[str], c: Ctx) -> Event | None:
    return _ckpt(CheckpointPhase.FAILED, c, None, None)


@rule(r"Failed to finalize checkpoint manager")
def _ckpt_finalize_failed(m: re.Match[str], c: Ctx) -> Event | None:
    return _ckpt(CheckpointPhase.FAILED, c, None, None)


@rule(r"Final checkpoint (?:invalidation )?failed on another rank in the "
      r"policy replica")
def _ckpt_final_failed(m: re.Match[str], c: Ctx) -> Event | None:
    return _ckpt(CheckpointPhase.FAILED, c, None, None)


@rule(r"Pruned corrupted checkpoint: (.*?)\s*$", gates=OWN_NEEDLE)
def _ckpt_pruned(m: re.Match[str], c: Ctx) -> Event | None:
    return _ckpt(CheckpointPhase.PRUNED, c, _step_from_path(m.group(1)), m.group(1))


# ---------------------------------------------------------------- config dumps (§5.1, §6.1)


def _config_dump(scope: str) -> Builder:
    def build(m: re.Match[str], c: Ctx) -> Event | None:
        try:
            value = read_literal(m.group(1).strip())
        except ValueError:
            value = None
        return _make_config_dump(c, config=value if isinstance(value, dict) else None, scope=scope)

    return build


rule(r"Loaded configuration: (.*)$", gates=(INFO_POLICY,))(_config_dump("full"))
rule(r"Loaded rollout configuration: (.*)$", gates=(INFO_ROLLOUT,))(_config_dump("rollout"))

# ---------------------------------------------------------------- wrapped failures first (their cause is re-read)

S = SignalKind
signal_rule(r"Failed to load or parse config file (?P<path>.+?\.toml|\S+): "
            r"(?P<error>.*?)\.?\s*$", S.CONFIG_LOAD_FAILED, wrapper=True)
signal_rule(r"Error reading config file (?P<path>.+?\.toml|\S+): (?P<error>.*)$", S.CONFIG_READ_ERROR, wrapper=True)
signal_rule(r"Failed in rollout generation:? ?(?P<error>.*)$", S.ROLLOUT_GENERATION_FAILED, wrapper=True)

# ---------------------------------------------------------------- vLLM / CUDA out of memory (§6.7, §13.4)

signal_rule(r"No available memory for the cache blocks", S.OOM, kind="no_cache_blocks")
signal_rule(r"(?:max seq len \((?P<max_model_len>\d+)\).*?)?KV cache is needed, which is larger "
            r"than the available KV cache memory(?:.*?estimated maximum model length is (?P<estimated>\d+))?",
            S.OOM, kind="kv_cache")
signal_rule(r"max seq len \((?P<max_model_len>\d+)\) is larger than the maximum number of tokens that "
            r"can be stored in KV cache(?: \((?P<kv_tokens>\d+)\))?", S.OOM, kind="max_model_len")
signal_rule(r"Free memory on device.*? on startup is less than desired "
            r"GPU memory utilization", S.OOM, kind="free_memory")
signal_rule(r"CUDA out of memory", S.OOM, kind="cuda_oom")
signal_rule(r"OutOfMemoryError", S.OOM, kind="cuda_oom")
signal_rule(r"prompt \(length (?P<prompt_len>\d+)\) is longer than the "
            r"maximum model length(?: of (?P<max_model_len>\d+))?", S.OOM, kind="prompt_too_long")

# ---------------------------------------------------------------- other frameworks' resource failures
# Captured logs of torch, vLLM, SGLang, NCCL, Ray, verl, OpenRLHF and NeMo-RL jobs
# (docs/reference/foreign-errors.md: each string with its source and versions). Short anchors, so a line that a
# terminal wrapped still holds one. In a replica or controller log they come inside tracebacks (read without
# gates), at a cosmos WARNING/ERROR level, or in the few shapes of ``FOREIGN_GATES``.


def foreign_rule(pattern: str, signal_kind: SignalKind, /, **const: Any) -> None:
    """Another framework's failure line: a ``signal_rule`` gated by ``FOREIGN_GATES``."""
    signal_rule(pattern, signal_kind, gates=FOREIGN_GATES, **const)


foreign_rule(r"CUDA Error: out of memory(?: at (?P<where>\S+))?", S.OOM, kind="cumem")
foreign_rule(r"CUDA error: out of memory", S.OOM, kind="cuda_oom")
foreign_rule(r"CUBLAS_STATUS_ALLOC_FAILED", S.OOM, kind="cuda_oom")
foreign_rule(r"Cuda failure (?:\d+ )?'out of memory'", S.OOM, kind="cuda_oom")
foreign_rule(r"Failed to CUDA calloc(?: async)? (?P<bytes>\d+) bytes", S.OOM, kind="cuda_oom")
foreign_rule(r"Error in memory profiling\. Initial (?:free|used) memory", S.OOM, kind="free_memory")
foreign_rule(r"max seq len \((?P<max_model_len>\d+)\), \((?P<needed>[\d.]+) Gi?B KV cach", S.OOM, kind="kv_cache")
foreign_rule(r"Not enough memory\. Please try to increase --mem-fraction-static", S.OOM, kind="kv_pool")
foreign_rule(r"(?P<phase>Prefill|Decode) out of memory\. Try to lower", S.OOM, kind="cuda_oom")
foreign_rule(r"alloc_req_slots runs out of memory", S.OOM, kind="kv_pool")

foreign_rule(r"THCudaCheck FAIL.*out of mem", S.OOM, kind="cuda_oom")
foreign_rule(r"CUresult error:? +(?:result=)?2\b", S.OOM, kind="cumem")
foreign_rule(r"larger than the available KV cache memory", S.OOM, kind="kv_cache")
foreign_rule(r"wait timeout after (?P<ms>\d+) ?ms", S.NCCL_ERROR, kind="store_timeout")
foreign_rule(r"Timed out after (?P<seconds>\d+) seconds waiting for clients", S.NCCL_ERROR, kind="store_timeout")
foreign_rule(r"Timeout waiting for key:? ?(?P<key>\S*)", S.NCCL_ERROR, kind="store_timeout")
foreign_rule(r"\bSocket Timeout\b", S.NCCL_ERROR, kind="store_timeout")
foreign_rule(r"The (?:client|server) socket has timed out after (?P<after>\S+)", S.NCCL_ERROR, kind="socket_timeout")
foreign_rule(r"The client socket has failed to connect to (?P<addr>.*?)\.?$", S.NCCL_ERROR, kind="socket_connect")
foreign_rule(r"[Ff]ailed to recv, got 0 bytes", S.NCCL_ERROR, kind="peer_closed")
foreign_rule(r"[Ff]ailed to send, sent 0 bytes", S.NCCL_ERROR, kind="peer_closed")
foreign_rule(r"Connection closed by peer", S.NCCL_ERROR, kind="peer_closed")
foreign_rule(r"Timed out waiting (?P<ms>\d+)ms for recv operation to complete", S.NCCL_ERROR, kind="comm_timeout")
foreign_rule(r"RendezvousTimeoutError", S.NCCL_ERROR, kind="rendezvous_timeout")
foreign_rule(r"RendezvousConnectionError", S.NCCL_ERROR, kind="rendezvous_timeout")
foreign_rule(r"NCCL communicator was aborted on rank (?P<rank>\d+)", S.NCCL_ERROR, kind="comm_aborted")
foreign_rule(r"NCCL error in: (?P<where>\S+), (?P<error>.*?)(?:, NCCL version (?P<version>\S+))?$",
             S.NCCL_ERROR, kind="nccl_error")
foreign_rule(r"remote process exited or there was a network "
             r"error", S.NCCL_ERROR, kind="nccl_error")
foreign_rule(r"watchdog thread terminated with exception", S.NCCL_ERROR, kind="torch_watchdog")
foreign_rule(r"watchdog got stuck for (?P<seconds>\d+) seconds", S.NCCL_ERROR, kind="torch_watchdog")

foreign_rule(r"Exception \(either an error or timeout\) "
             r"detected by watchdog", S.NCCL_ERROR, kind="torch_watchdog")
foreign_rule(r"Some NCCL operations have failed or timed out", S.NCCL_ERROR, kind="torch_watchdog")
foreign_rule(r"Connection closed by remote peer", S.NCCL_ERROR, kind="peer_closed")
foreign_rule(r"ncclUnhandledCudaError", S.NCCL_ERROR, kind="nccl_error")
foreign_rule(r"ncclSystemError", S.NCCL_ERROR, kind="nccl_error")
foreign_rule(r"ncclRemoteError", S.NCCL_ERROR, kind="nccl_error")
foreign_rule(r"ncclInternalError", S.NCCL_ERROR, kind="nccl_error")

foreign_rule(r"No CUDA GPUs are available", S.GPU_LAYOUT_ERROR, reason="no_gpus")
foreign_rule(r"only supported with GPUs, no GPUs found", S.GPU_LAYOUT_ERROR, reason="no_gpus")
foreign_rule(r"does not allocate any GPUs on the driver node", S.GPU_LAYOUT_ERROR, reason="no_gpus")
foreign_rule(r"invalid device ordinal", S.GPU_LAYOUT_ERROR, reason="invalid_device")
foreign_rule(r"Total available GPUs (?P<available>[\d.]+) is less than total "
             r"desired GPUs (?P<required>\d+)", S.GPU_LAYOUT_ERROR, reason="not_enough")
foreign_rule(r"The number of required \w+s exceeds the total number of "
             r"available \w+s in the (?:placement group|cluster)(?:\. ?Required number of devices: (?P<required>\d+)"
             r"\. Total number of devices: (?P<available>\d+))?", S.GPU_LAYOUT_ERROR, reason="not_enough")
foreign_rule(r"You don't have enough GPUs available in a current node", S.GPU_LAYOUT_ERROR, reason="not_enough")
foreign_rule(r"Cannot provide a placement group", S.GPU_LAYOUT_ERROR, reason="not_enough")
foreign_rule(r"(?P<required>\d+)\*(?P<nodes>\d+) ?cannot be satisfied in "
             r"this ray cluster", S.GPU_LAYOUT_ERROR, reason="not_enough")
foreign_rule(r"less than (?:than )?max local gpu count \((?P<available>\d+)\)", S.GPU_LAYOUT_ERROR, reason="not_enough")
foreign_rule(r"No(?:t)? enough GPUs for (?:training|PPO training)", S.GPU_LAYOUT_ERROR, reason="not_enough")

foreign_rule(r"Duplicate GPU detected : rank (?P<rank_a>\d+) and rank (?P<rank_b>\d+)",
             S.GPU_LAYOUT_ERROR, reason="not_enough")
foreign_rule(r"No available node types can fulfill (?:resource|placement group) "
             r"requests?.*'GPU'", S.GPU_LAYOUT_ERROR, reason="not_enough")

# A process that died, as its parent reports it: torchrun's agent, Ray's raylet and actor errors, Ray's and UCX's
# signal handlers, libstdc++'s terminate, Hydra's last words (docs/reference/foreign-errors.md B5, E3-E6).
foreign_rule(r"failed \(exitcode: (?P<exitcode>-?\d+)\) local_rank: (?P<local_rank>\d+) \(pid: "
             r"(?P<pid>\d+)\)", S.CHILD_FAILED)
foreign_rule(r"A worker died or was killed while executing a task", S.FATAL_SIGNAL, what="worker_died", detail=None)
foreign_rule(r"Worker unexpectedly exits with a connection "
             r"error code (?P<code>\d+)", S.FATAL_SIGNAL, what="worker_died", detail=None)
foreign_rule(r"The actor died unexpectedly before finishing "
             r"this task", S.FATAL_SIGNAL, what="worker_died", detail=None)
foreign_rule(r"The actor is dead because its worker process "
             r"has died", S.FATAL_SIGNAL, what="worker_died", detail=None)
foreign_rule(r"killed due to the node running low on memory", S.FATAL_SIGNAL, what="host_oom", detail=None)
foreign_rule(r"(?P<count>\d+) Workers \(tasks / actors\) killed due to memory "
             r"pressure \(OOM\)", S.FATAL_SIGNAL, what="host_oom", detail=None)
foreign_rule(r"\*\*\* SIGSEGV received at time", S.FATAL_SIGNAL, what="segfault", detail=None)
foreign_rule(r"Caught signal 11 \((?P<detail>[^)]*)", S.FATAL_SIGNAL, what="segfault")
foreign_rule(r"terminate called after throwing an instance of "
             r"'(?P<detail>[^']+)'", S.FATAL_SIGNAL, what="terminate")
foreign_rule(r"Error executing job with overrides", S.FATAL_SIGNAL, what="hydra_job_failed", detail=None)

# ---------------------------------------------------------------- launcher (§2.3, §2.4, §2.7, §11.1)

signal_rule(r"Detected (?P<count>\d+) GPUs: ?(?P<ids>.*)$", S.GPUS_DETECTED)
signal_rule(r"Number of (?P<role>policy|rollout|reference) replicas: (?P<count>\d+) with "
            r"(?P<gpus_each>\d+) gpus each", S.REPLICAS_PLANNED)
signal_rule(r"Number of workers required: (?P<count>\d+)", S.WORKERS_REQUIRED)
signal_rule(r"Multiple worker nodes will be used", S.MULTIPLE_WORKERS)
signal_rule(r"Controller is ready at (?P<url>\S+)", S.CONTROLLER_READY)
# What the launcher starts, in order: its 'Process i' lines count positions in that list, which shrinks as
# processes end (§2.7); and where each one's output goes (its log file under --log-dir, §3.1).
signal_rule(r"Launching process with command: \S*launch_controller\.sh", S.PROCESS_LAUNCHED, role="controller")
signal_rule(r"Launching process with command: \S*launch_replica\.sh .*?--type (?P<role>policy|rollout|reference)\b",
            S.PROCESS_LAUNCHED)
signal_rule(r"Appending command: .*? output files: (?P<path>[^,\s]+)", S.PROCESS_PLANNED)
# Public (``a1x_diagnostics.parsing.PROCESS_FAILED_RE``): the supervisor's train monitor matches the
# launcher's output with it while the launcher runs.
PROCESS_FAILED_PATTERN = r"Process (?P<process>\S+) failed with return code (?P<rc>-?\d+)"
signal_rule(PROCESS_FAILED_PATTERN, S.PROCESS_FAILED)
signal_rule(r"(?P<process>Policy|Rollout|Controller|Reference) failed with exit code "
            r"(?P<rc>-?\d+)\. Terminating other processes", S.PROCESS_FAILED)
signal_rule(r"Process (?P<process>\S+) completed successfully", S.PROCESS_COMPLETED)
signal_rule(r"Process (?P<process>\S+) \((?P<role>\w+)\) exited via the coordinated shutdown "
            r"path \(rc=(?P<rc>-?\d+)\); treating as success", S.COORDINATED_SUCCESS)
signal_rule(r"Terminated all processes due to failure", S.TERMINATED_ALL)
signal_rule(r"Process (?P<pid>\S+) exited with code (?P<rc>-?\d+)\. Exiting", S.PROCESS_EXITED_EARLY)
signal_rule(r"Process (?P<pid>\S+) exited as soon as launched", S.PROCESS_EXITED_EARLY, rc=None)
# torchrun's agent when the job is stopped from outside (SIGTERM/SIGINT/SIGHUP: scancel, Ctrl-C, a supervisor):
# ``Received {sig} death signal, shutting down workers`` (torch/distributed/elastic/agent/server/api.py; the
# number, or ``Signals.SIGTERM`` in older torch). bash's own report of a child killed by SIGTERM says it too.
signal_rule(r"Received (?:Signals\.)?(?P<sig>\d+|SIG[A-Z]+) death signal", S.DEATH_SIGNAL, gates=OWN_NEEDLE)
signal_rule(r"line \d+: +(?P<pid>\d+) Terminated\b", S.DEATH_SIGNAL, gates=OWN_NEEDLE, sig=15)
# slurmstepd, on the job's output, when scancel, the time limit or a preemption ends a job or step.
signal_rule(r"\*\*\* (?:JOB|STEP) (?P<job>\S+) ON (?P<node>\S+) CANCELLED AT (?P<at>\S+)"
            r"(?: DUE TO (?P<reason>[A-Z][A-Z ]*[A-Z]))?", S.JOB_CANCELLED, gates=OWN_NEEDLE)
# A process that died hard: Python's fault handler, glibc's abort, bash reporting a child's fatal signal.
signal_rule(r"Fatal Python error: (?P<detail>.*)$", S.FATAL_SIGNAL, gates=OWN_NEEDLE, what="fatal_python")
signal_rule(r"(?P<detail>Segmentation fault|Aborted|Bus error|Illegal instruction|Floating point "
            r"exception)[^(]*\(core dumped\)", S.FATAL_SIGNAL, gates=OWN_NEEDLE, what="core_dumped")
signal_rule(r"Segmentation fault", S.FATAL_SIGNAL, gates=OWN_NEEDLE, what="segfault", detail=None)
signal_rule(r"line \d+: +(?P<pid>\d+) Killed\b", S.FATAL_SIGNAL, gates=OWN_NEEDLE, what="killed", detail=None)
signal_rule(r"Replica with GPUs larger than \d+ occurs but not on Lepton job",
            S.GPU_LAYOUT_ERROR, reason="larger_than_node")
signal_rule(r"Not enough GPUs available\.? ?(?:Required: (?P<required>\d+), "
            r"Available: (?P<available>\d+)|Requested (?P<required2>\d+) GPUs, but only (?P<available2>\d+) are "
            r"available)?", S.GPU_LAYOUT_ERROR, reason="not_enough")
signal_rule(r"No GPUs available", S.GPU_LAYOUT_ERROR, reason="no_gpus")
signal_rule(r"Number of GPUs per node must be 1, 2, 4, or 8", S.GPU_LAYOUT_ERROR, reason="bad_per_node")
signal_rule(r"Controller port (?P<port>\d+)(?: from --url (?P<url>\S+))? is already in use", S.CONTROLLER_PORT_BUSY)

# ---------------------------------------------------------------- registration and lifecycle (§3.6, §4.2, §4.7, §5, §6)

signal_rule(r"(?P<role>POLICY|ROLLOUT|REFERENCE) Replica started at global rank "
            r"(?P<global_rank>\d+), with replica name: (?P<uuid>\S+)", S.REPLICA_STARTED, gates=OWN_NEEDLE)
signal_rule(r"(?P<role>POLICY|ROLLOUT|REFERENCE) Replica (?P<uuid>\S+) registered to "
            r"controller", S.REPLICA_REGISTERED, gates=OWN_NEEDLE)
signal_rule(r"All atoms of (?:Role\.)?(?P<role>\w+) Replica (?P<uuid>\S+) has been set",
            S.REPLICA_ATOMS_SET, gates=(INFO_CONTROLLER,))
signal_rule(r"Waiting for (?P<count>-?\d+) more replicas to arrive", S.WAITING_FOR_REPLICAS, gates=OWN_NEEDLE)
signal_rule(r"No valid rollout replicas found", S.NO_VALID_ROLLOUT, gates=(INFO_CONTROLLER,))
signal_rule(r"\[Controller\] (?P<role>Policy|Rollout|Reference) (?P<uuid>\S+) is dead", S.REPLICA_DEAD,
            gates=(INFO_CONTROLLER,))
signal_rule(r"Unregistering replica (?P<uuid>\S+)", S.REPLICA_UNREGISTERING, gates=(INFO_CONTROLLER,))
signal_rule(r"Replica (?P<uuid>\S+) is stopping\.", S.REPLICA_STOPPING, gates=(INFO_CONTROLLER,))
signal_rule(r"will clean hang replicas: ?(?P<replicas>.*)$", S.HANG_REPLICAS_CLEANED, gates=(INFO_CONTROLLER,))
signal_rule(r"No policy replicas registered\. Assuming training is finished",
            S.NO_POLICY_REPLICAS, gates=(INFO_CONTROLLER,))
signal_rule(r"Received rollout end signal from (?P<uuid>\S+?)(?: rank=(?P<rank>\S+))?\s*$", S.ROLLOUT_END_SIGNAL,
            gates=(INFO_CONTROLLER,))
signal_rule(r"Job phase \w+ -> DRAINING(?: at frozen horizon (?P<horizon>-?\d+))?", S.JOB_DRAINING,
            gates=(INFO_CONTROLLER,))
signal_rule(r"All epochs finished fetching rollout prompts", S.ALL_EPOCHS_FETCHED, gates=(INFO_CONTROLLER,))
# 747d1bd end-of-data lines (run_web_panel.py:437-464 there); ``phase`` tells them apart.
signal_rule(r"All rollouts have ended, recompute total steps with (?P<remaining>\d+) "
            r"remaining rollouts", S.ALL_ROLLOUTS_ENDED, gates=(INFO_CONTROLLER,), phase="recompute")
signal_rule(r"There are still remaining steps, no op required", S.ALL_ROLLOUTS_ENDED, gates=(INFO_CONTROLLER,),
            phase="steps_remain", remaining=None)
signal_rule(r"No remaining steps, policy and rollouts happen to finish",
            S.ALL_ROLLOUTS_ENDED, gates=(INFO_CONTROLLER,), phase="finished_together", remaining=None)
signal_rule(r"Clear the rollout buffer, and trigger an extra", S.ALL_ROLLOUTS_ENDED, gates=(INFO_CONTROLLER,),
            phase="extra_fetch", remaining=None)
signal_rule(r"Policy side finished; broadcasting STOP(?: to (?P<rollouts>\d+))?",
            S.POLICY_SIDE_FINISHED, gates=(INFO_CONTROLLER,))
signal_rule(r"All replicas are finished(?: \((?P<reason>.*?)\))?[;,] finalizing",
            S.ALL_REPLICAS_FINISHED, gates=(INFO_CONTROLLER,))
signal_rule(r"Rollout checkout gate timed out after (?P<seconds>[\d.]+)s: only "
            r"(?P<posted>\d+)/(?P<expected>\d+)", S.CONTROLLER_SHUTDOWN_ABNORMAL, reason="checkout_gate_timeout")
signal_rule(r"All policy replicas are dead and COSMOS_SHUTDOWN_ON_NO_POLICY_REPLICAS", S.CONTROLLER_SHUTDOWN_ABNORMAL,
            gates=(INFO_CONTROLLER,), reason="all_policies_dead")
signal_rule(r"Building lr schedulers for total steps (?P<total_steps>\d+)", S.TRAINING_STARTED, gates=(INFO_POLICY,))
signal_rule(r"Activating validation dataloader for step "
            r"(?P<step>\d+)", S.VALIDATION, gates=(" - INFO - [DataFetcher] ",), phase="start")
signal_rule(r"Validation finished, average reward: .*? at step (?P<step>\d+)",
            S.VALIDATION, gates=(INFO_CONTROLLER,), phase="finished")
signal_rule(r"Training complete at global step (?P<step>\d+)", S.TRAINING_COMPLETE, gates=(INFO_POLICY,))
signal_rule(r"\[Rollout\] Engine initialized\.\s*$", S.ENGINE_INITIALIZED, gates=(INFO_ROLLOUT,))
signal_rule(r"\[Rollout\] Main loop of (?P<replica>\S+) finished", S.ROLLOUT_MAIN_LOOP_FINISHED, gates=(INFO_ROLLOUT,))
signal_rule(r"entering destroy_worker\(\)", S.ROLLOUT_DESTROY_WORKER, gates=(INFO_ROLLOUT,))
signal_rule(r"Successfully loaded configuration from (?P<path>.*?)\s*$", S.CONFIG_LOADED, gates=OWN_NEEDLE)

# ---------------------------------------------------------------- silent auto-adjustments at load (§8.6)
# ``key`` is the field name as printed.

signal_rule(r"setting (?P<key>allowed_outdated_steps) to (?P<value>-?\d+)", S.CONFIG_ADJUSTED)
signal_rule(r"on_policy is enabled, so (?P<key>allowed_outdated_steps) is set to "
            r"(?P<value>-?\d+)", S.CONFIG_ADJUSTED)
signal_rule(r"(?P<key>max_inflight_steps) \(\d+\) is below "
            r"allowed_outdated_steps \+ 1 \(\d+\); raising to (?P<value>\d+)", S.CONFIG_ADJUSTED)
signal_rule(r"(?P<key>coalesce_weight_sync) requires off-policy training", S.CONFIG_ADJUSTED, value="False")
signal_rule(r"(?P<key>\w+) is not positive so disable it as None", S.CONFIG_ADJUSTED, value="None")
signal_rule(r"Seed is negative, setting to (?P<value>-?\d+)", S.CONFIG_ADJUSTED, key="seed")
# Not the distillation lines: printed on every load whatever the config (§8.6 calls them noise).
signal_rule(r"(?:(?:DAPO|Decoupled loss|use_rollout_logprobs_for_loss|Distillation) is enabled), so "
            r"(?P<key>\w+) is set to (?P<value>[^\s.]+(?:\.\d+)?)", S.CONFIG_ADJUSTED)

# ---------------------------------------------------------------- NCCL (§5.5, §13.6)

signal_rule(r"NCCL: raw host call exceeded (?P<ms>\d+) ms for task (?P<task>.*?);",
            S.NCCL_ERROR, gates=NCCL_GATES, kind="host_call_timeout")
signal_rule(r"NCCL: async error detected \(err=(?P<err>.*?)\), task (?P<task>.*?) failed",
            S.NCCL_ERROR, gates=NCCL_GATES, kind="async_error")
signal_rule(r"NCCL: non-blocking enqueue timed out for task (?P<task>.*)$",
            S.NCCL_ERROR, gates=NCCL_GATES, kind="enqueue_timeout")
signal_rule(r"\[Watchdog\] NCCL block exceeded (?P<ms>\d+) ms", S.NCCL_ERROR, gates=NCCL_GATES, kind="watchdog")
signal_rule(r"\[NCCL\] Aborted communicator idx=(?P<idx>\d+)", S.NCCL_ERROR, gates=NCCL_GATES, kind="aborted")
signal_rule(r"nccl_abort_all aborted (?P<count>\d+) communicator", S.NCCL_ERROR, gates=NCCL_GATES, kind="aborted")
signal_rule(r"\[ABNORMAL teardown\] (?P<context>.*?): in-flight GPU work exceeded "
            r"(?P<seconds>[\d.]+)s", S.NCCL_ERROR, gates=NCCL_GATES, kind="abnormal_teardown")
signal_rule(r"\[ABNORMAL teardown\] WeightSyncThread\[(?P<context>.*?)\] queue did not "
            r"drain within (?P<seconds>[\d.]+)s", S.NCCL_ERROR, gates=NCCL_GATES, kind="abnormal_teardown")
signal_rule(r"recovering nccl op '(?P<op>[^']*)'.* after (?:attempt (?P<attempt>\d+)/"
            r"(?P<max_attempts>\d+)|(?P<retries>\d+) retries)(?:: (?P<error>.*))?$", S.NCCL_ERROR, gates=NCCL_GATES,
            kind="ha_recovering")
signal_rule(r"nccl op '(?P<op>[^']*)' failed after (?P<attempts>\d+) attempts", S.NCCL_ERROR, gates=NCCL_GATES,
            kind="ha_failed")
signal_rule(r"failed in create nccl comm ?, report to controller:? ?(?P<error>.*)$",
            S.NCCL_ERROR, gates=NCCL_GATES, kind="ha_failed")
signal_rule(r"wait for nccl comm ready timeout", S.NCCL_ERROR, gates=NCCL_GATES, kind="comm_timeout")
signal_rule(r"Watchdog caught collective operation timeout:? ?"
            r"(?P<detail>.*)$", S.NCCL_ERROR, gates=NCCL_GATES, kind="torch_watchdog")

# ---------------------------------------------------------------- controller unreachable (§13.6) and Redis (§4.1)

signal_rule(r"Failed to send heartbeat to controller(?: (?P<url>\S+?))?: "
            r"(?P<error>.*)$", S.HTTP_FAILURE, kind="heartbeat")
signal_rule(r"Failed to register to controller:? ?(?P<error>.*)$", S.HTTP_FAILURE, kind="register")
signal_rule(r"Failed to communicate with controller after attempts:? ?"
            r"(?P<error>.*)$", S.HTTP_FAILURE, kind="communicate")
signal_rule(r"Failed in fetching next prompt from controller after "
            r"retries ?(?P<error>.*)$", S.HTTP_FAILURE, kind="fetch_prompt")
signal_rule(r"Failed in sending rollout completion to controller "
            r"after retries ?(?P<error>.*)$", S.HTTP_FAILURE, kind="send_rollout")
signal_rule(r"Failed in (?:in )?send train ack to controller after "
            r"retries ?(?P<error>.*)$", S.HTTP_FAILURE, kind="train_ack")
signal_rule(r"Failed in query commands from controller for replica "
            r"(?P<replica>\S+)", S.HTTP_FAILURE, kind="query_commands")
signal_rule(r"Failed to start redis server with command: (?P<command>.*) with return "
            r"code (?P<rc>-?\d+)", S.REDIS_FAILURE)
signal_rule(r"Redis server failed to start after (?P<attempts>\d+) attempts", S.REDIS_FAILURE, rc=None)
signal_rule(r"\[Redis\] Failed to (?P<error>.*)$", S.REDIS_FAILURE, rc=None)

# ---------------------------------------------------------------- parallel sizes, batch, W&B
# (§2.2, §5.1, §8.5; recipe §8.4)

signal_rule(r"Invalid parallel dims: ?(?P<detail>.*)$", S.INVALID_PARALLEL_DIMS)
signal_rule(r"the tp_size \* pp_size must be equal to world size"
            r"(?P<detail>.*)$", S.INVALID_PARALLEL_DIMS)
signal_rule(r"train_batch_per_replica\s*\(?(?P<batch>\d+)\)? of \w+ must be "
            r"divisible by dp_shard_size\s*\(?(?P<dp_shard>\d+)\)? \* mini_batch\s*\(?(?P<mini_batch>\d+)\)?",
            S.BATCH_NOT_DIVISIBLE)
signal_rule(r"Batch size should be divided evenly by mini_batch", S.BATCH_NOT_DIVISIBLE)
signal_rule(r"train_batch_per_replica \((?P<batch>\d+)\) must be divisible "
            r"by pp_micro_batch_size", S.BATCH_NOT_DIVISIBLE)
signal_rule(r"train_batch_per_replica \((?P<batch>\d+)\) must be divisible by "
            r"mini_batch", S.BATCH_NOT_DIVISIBLE)
signal_rule(r"Wandb is not available", S.WANDB_UNAVAILABLE)

_FORBIDDEN = re.compile(r"\b403\b|permission denied|upsertBucket|Forbidden", re.IGNORECASE)


@rule(r"Failed to initialize wandb:? ?(.*)$")
def _wandb_failed(m: re.Match[str], c: Ctx) -> Event | None:
    err = m.group(1)
    return _make_signal(c, kind=S.WANDB_INIT_FAILED,
                        fields={"error": cap(err, MAX_FIELD), "forbidden": bool(_FORBIDDEN.search(err))})


def _wandb_error(m: re.Match[str], c: Ctx) -> Event | None:
    err = m.group(1)
    forbidden = bool(_FORBIDDEN.search(err))
    if not forbidden and "wandb.errors" not in c.text:
        return None  # a transient W&B error line; not an init failure
    return _make_signal(c, kind=S.WANDB_INIT_FAILED, fields={"error": cap(err, MAX_FIELD), "forbidden": forbidden})


rule(r"wandb: ERROR ?(.*)$", gates=OWN_NEEDLE)(_wandb_error)
rule(r"wandb\.errors\.[\w.]+: ?(.*)$")(_wandb_error)


# ---------------------------------------------------------------- recipe failures (docs/reference/alpamayo-recipe.md
# §8, §14)

signal_rule(r"Missing required env var (?P<name>\w+)", S.MISSING_ENV_VAR)
signal_rule(r"(?:No such file|not found|does not exist|FileNotFoundError|Failed to open|not exist).*?"
            r"(?P<path>[^\s'\"]*/None(?:/[^\s'\"]*)?)(?=['\"\s.,:)]|$)|(?P<path2>[^\s'\"]*/None(?:/[^\s'\"]*)?)['\"]?"
            r"(?=[\s.,:)]|$).*?(?:No such file|not found|does not exist|Failed to open)", S.HYDRA_NONE_STRING)
signal_rule(r"Reasoning grading model directory does not exist:"
            r" ?'?(?P<path>[^']*)'?", S.GRADER_MISSING)
signal_rule(r"Lingo-Judge not found", S.GRADER_MISSING, path=None)
signal_rule(r"Cannot access gated repo for url (?P<url>\S+?)\.?\s*$", S.GATED_REPO, gates=OWN_NEEDLE, reason="gated")
signal_rule(r"GatedRepoError:? ?(?P<error>.*)$", S.GATED_REPO, reason="gated", url=None)
signal_rule(r"Repository Not Found for url:? (?P<url>\S+?)\.?\s*$", S.GATED_REPO, gates=OWN_NEEDLE,
            reason="repo_not_found")
signal_rule(r"429 Client Error(?P<detail>.*)$", S.RATE_LIMITED)
signal_rule(r"Too Many Requests(?P<detail>.*)$", S.RATE_LIMITED)
signal_rule(r"HTTP Error 429(?P<detail>.*)$", S.RATE_LIMITED)
signal_rule(r"[Rr]ate limit(?:ed| exceeded| reached)", S.RATE_LIMITED)
signal_rule(r"(?i:could not|cannot|can't|failed to|unable to|error)[^\n]*?(?P<file>\S*model_rank_\S*)"
            r"|(?P<file2>\S*model_rank_\S*\.pth)[^\n]*?(?i:could not|cannot|error|failed|invalid|not a)",
            S.PTH_LOAD_FAILED)
signal_rule(r"(?P<path>\S*step_\d+\S*) does not appear to have a file named", S.PTH_LOAD_FAILED)
signal_rule(r"Model type (?P<model_type>\S+) not supported for vLLM rollout", S.MODEL_TYPE_UNSUPPORTED)
signal_rule(r"TP not supported for ReasoningVLACosmos", S.RECIPE_UNSUPPORTED_PARALLELISM, what="tp")
signal_rule(r"CP not supported for ReasoningVLACosmos", S.RECIPE_UNSUPPORTED_PARALLELISM, what="cp")
signal_rule(r"Compile not supported for ReasoningVLACosmos", S.RECIPE_UNSUPPORTED_PARALLELISM, what="compile")
signal_rule(r"Pipeline Parallel is not supported", S.RECIPE_UNSUPPORTED_PARALLELISM, what="pp")
signal_rule(r"(?P<path>[^\s'\"]*_mini\.parquet)['\"]?.*?(?:No such file|not found|does not exist|"
            r"Failed to open)|(?:FileNotFoundError|No such file|not found|does not exist|Failed to open).*?"
            r"(?P<path2>[^\s'\"]*_mini\.parquet)", S.MINI_PARQUET_MISSING)
signal_rule(r"Failed to register ReasoningVLA model with vLLM:? ?"
            r"(?P<error>.*)$", S.VLLM_REGISTER_FAILED, gates=OWN_NEEDLE)
signal_rule(r"HF/safetensors export is disabled", S.HF_EXPORT_DISABLED)


# ---------------------------------------------------------------- dispatch

# The recipe's prefetch server (docs/reference/alpamayo-recipe.md §9.3): the event name; the k=v rest is read by the
# prefetch parser (``_parser``) when the event is built.
template_rule(Template(Bulk.PREFETCH, "[AlpamayoPrefetch][{_:word}] {_:time} pid={_:int} {event:token}{_:rest}",
                       Prefetch))


def needles_of(d: _Definition, gates: tuple[str, ...]) -> tuple[str, ...]:
    """The needles of a rule from its regex (``_required.needles``), the strings its gates say left aside."""
    return needles_from(d.pattern.pattern, d.literals, d.alternatives, gates)


def _entries() -> tuple[Rule, ...]:
    """The catalogue in declaration order: one entry a definition, or one a needle of its alternatives.
    Declared gates first: a bulk shape's gates are those of them its text holds."""
    tagged: list[tuple[_Definition, tuple[tuple[str, tuple[str, ...]], ...]]] = []
    for d in _DEFINITIONS:
        if d.gates is None:
            tagged.append((d, ()))
        elif isinstance(d.gates, _OwnNeedle):
            tagged.append((d, tuple((n, (n,)) for n in needles_of(d, LEVEL_GATES))))
        else:
            tagged.append((d, tuple((n, d.gates) for n in needles_of(d, (*LEVEL_GATES, *d.gates)))))
    vocabulary = dict.fromkeys(g for _, pairs in tagged for _, gates in pairs for g in gates)
    out = []
    for d, pairs in tagged:
        if d.gates is None:
            own = tuple(g for g in vocabulary if g in d.text)
            pairs = tuple((n, own) for n in needles_of(d, (*LEVEL_GATES, *own)))
        alt_groups = any(k.endswith("2") for k in d.pattern.groupindex)
        out += [Rule(n, d.pattern, d.build, d.wrapper, frozenset((*LEVEL_GATES, *gates)), alt_groups,
                     d.literals or (n,)) for n, gates in pairs]
    return tuple(out)


RULES: tuple[Rule, ...] = _entries()
NEEDLES: tuple[str, ...] = tuple(dict.fromkeys(r.needle for r in RULES))


def literals_of(r: Rule) -> tuple[str, ...]:
    """What a line must hold for ``r`` to give an event: the strings every match of its regex holds
    (``_required``), or its needle where the regex cannot tell."""
    return r.literals


GATES: tuple[str, ...] = tuple(sorted({g for r in RULES for g in r.gates}))


def present_gates(line: str) -> frozenset[str]:
    """The gates a raw line holds (empty for most noise lines)."""
    return frozenset([g for g in GATES if g in line])


# ``gated_rule_possible``: most candidate lines of a replica log are INFO lines that hold a tag gate
# (`` - INFO - [Rollout``, `` - INFO - [Policy] ``) and none of the few needles that gate lets
# through. A rule can fire on a gated line only if the line holds one of the rule's gates and its
# needle (the message is a slice of the line), so such a line is settled with a few substring
# tests, before ``shape_of``. A level gate lets every rule through: those lines are not judged here.
def _gate_needles() -> tuple[list[tuple[str, tuple[str, ...]]], list[tuple[tuple[str, ...], tuple[str, ...]]]]:
    """(gate, needles) for the non-level gates, and the gates that share one needle list grouped (the other
    frameworks' rules: ``FOREIGN_GATES``), so that group costs one ``any`` per line."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for g in GATES:
        if g not in LEVEL_GATES:
            groups.setdefault(tuple(dict.fromkeys(r.needle for r in RULES if g in r.gates)), []).append(g)
    single = [(gates[0], needles) for needles, gates in groups.items() if len(gates) == 1]
    shared = [(tuple(gates), needles) for needles, gates in groups.items() if len(gates) > 1]
    return single, shared


_GATE_NEEDLES, _SHARED_GATE_NEEDLES = _gate_needles()


def gated_rule_possible(line: str) -> bool:
    """False when no rule can fire on ``line`` of a gated log (``classify_gated`` would give nothing).

    True is only "maybe": the line holds a level gate, or a gate together with one of its needles.
    """
    for g in LEVEL_GATES:
        if g in line:
            return True
    contains = line.__contains__
    for g, needles in _GATE_NEEDLES:  # a plain loop: no generator per line
        if g in line and any(map(contains, needles)):
            return True
    for gates, needles in _SHARED_GATE_NEEDLES:  # noqa: SIM110 (as above)
        if any(map(contains, gates)) and any(map(contains, needles)):
            return True
    return False


@functools.lru_cache(maxsize=1024)
def _eligible(gates: frozenset[str] | None) -> tuple[Rule, ...]:
    """Rules a line with these gates may match, by priority (``None``: every rule)."""
    if gates is None:
        return RULES
    if not gates:
        return ()
    return tuple(r for r in RULES if not gates.isdisjoint(r.gates))


def classify_message(msg: str, ctx: Ctx, gates: frozenset[str] | None = None, *, _depth: int = 0) -> list[Event]:
    """The events one message means (usually zero or one; a wrapper adds its cause).

    Rules are tried in catalogue order; the first whose needle occurs, whose regex matches and
    whose builder accepts wins. ``gates``: the gates of the raw line (replica/controller logs);
    ``None`` reads without gates.
    """
    return classify_with(_eligible(gates), msg, ctx, _depth)


# A long list of rules (every rule is eligible on a WARNING+ line of a replica log, and on every line of a
# launcher capture) is first asked in one pass of the C automaton whether any of its needles occurs at all:
# most such lines hold none, and one scan costs a fraction of the loop below (docs/live.md, "After the
# run's outcome").
_NEEDLE_CHECK_FROM = 48
_NEEDLE_SCANNERS: dict[int, tuple[tuple[Rule, ...], Any]] = {}


def _no_needle(rules: tuple[Rule, ...], msg: str) -> bool:
    entry = _NEEDLE_SCANNERS.get(id(rules))
    if entry is None or entry[0] is not rules:
        from a1x_diagnostics.parsing._scan import NATIVE, MarkerScanner

        scanner = MarkerScanner(tuple(dict.fromkeys(r.needle for r in rules))) if NATIVE else None
        if len(_NEEDLE_SCANNERS) >= 1024:
            _NEEDLE_SCANNERS.clear()
        entry = _NEEDLE_SCANNERS[id(rules)] = (rules, scanner)
    scanner = entry[1]
    return scanner is not None and "\n" not in msg and not scanner.text(msg)


def classify_with(rules: tuple[Rule, ...], msg: str, ctx: Ctx, _depth: int = 0) -> list[Event]:
    """``classify_message`` over ``rules`` (``RULES``, or those some gates allow), in their order."""
    if len(rules) >= _NEEDLE_CHECK_FROM and _no_needle(rules, msg):
        return []
    for r in rules:
        if r.needle in msg:
            out = _apply(r, msg, ctx, _depth)
            if out is not None:
                return out
    return []


def _apply(r: Rule, msg: str, ctx: Ctx, depth: int) -> list[Event] | None:
    """The events of rule ``r`` on ``msg`` (its needle occurs), or None when its regex or builder refuses."""
    m = r.pattern.search(msg)
    if m is None:
        return None
    event = r.build(_MatchView(m) if r.alt_groups else m, ctx)
    if event is None:
        return None
    out = [event]
    if r.wrapper and depth == 0:
        err = m.groupdict().get("error") or ""
        out.extend(e for e in classify_with(RULES, err, ctx, 1) if not _is_wrapper_kind(e))
    return out


# ``classify_gated``: the first rules of the catalogue are the metric lines (controller stats, weight
# sync, version gate, checkpoint progress) that make up most candidate lines of a run. They are tried
# needle first, each checking its own few gates; only a line none of them takes pays for finding all
# ``GATES`` it holds, and then tries the other rules that gates allow. The first rule that is eligible,
# whose needle occurs, whose regex matches and whose builder accepts wins: the same as
# ``classify_message(msg, ctx, present_gates(line))``, in a third of the time for a metric line.
_HEAD = next(i for i, r in enumerate(RULES) if r.build is _ckpt_incomplete)
_HEAD_RULES: tuple[tuple[Rule, tuple[str, ...]], ...] = tuple(
    (r, (*sorted(r.gates - set(LEVEL_GATES)), *LEVEL_GATES)) for r in RULES[:_HEAD]
)
_TAILS: dict[tuple[str, ...], tuple[Rule, ...]] = {}


def classify_gated(line: str, msg: str, ctx: Ctx) -> list[Event]:
    """``classify_message(msg, ctx, present_gates(line))``, faster: see above."""
    for r, gates in _HEAD_RULES:
        if r.needle in msg:
            for g in gates:
                if g in line:
                    out = _apply(r, msg, ctx, 0)
                    if out is not None:
                        return out
                    break
    key = tuple([g for g in GATES if g in line])
    if not key:
        return []
    tail = _TAILS.get(key)
    if tail is None:
        if len(_TAILS) >= 1024:
            _TAILS.clear()
        present = frozenset(key)
        tail = _TAILS[key] = tuple(r for r in RULES[_HEAD:] if not present.isdisjoint(r.gates))
    return classify_with(tail, msg, ctx)


_WRAPPER_KINDS = {S.CONFIG_LOAD_FAILED, S.CONFIG_READ_ERROR, S.ROLLOUT_GENERATION_FAILED}


def _is_wrapper_kind(e: Event) -> bool:
    return isinstance(e, Signal) and e.kind in _WRAPPER_KINDS


class _MatchView:
    """A match whose ``groupdict`` folds the ``<name>2`` alternatives of a regex into ``<name>``."""

    __slots__ = ("_m",)

    def __init__(self, m: re.Match[str]) -> None:
        self._m = m

    def groupdict(self) -> dict[str, str | None]:
        d = self._m.groupdict()
        for k in [k for k in d if k.endswith("2")]:
            v = d.pop(k)
            if d.get(k[:-1]) is None:
                d[k[:-1]] = v
        return d

    def group(self, *a: Any) -> Any:
        return self._m.group(*a)

    def groups(self) -> tuple[Any, ...]:
        return self._m.groups()


def child_signal_name(exitcode: int | None) -> str | None:
    """``-9`` -> ``SIGKILL`` (torchrun reports a signal death as a negative exit code)."""
    if exitcode is None or exitcode >= 0:
        return None
    try:
        return _signal.Signals(-exitcode).name
    except ValueError:
        return None


def needles_in(texts: Iterable[str]) -> set[str]:
    """Needles that occur in any of ``texts`` (for tests)."""
    return {n for n in NEEDLES for t in texts if n in t}
