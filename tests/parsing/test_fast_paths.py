"""The shortcuts the parser takes for speed give exactly what the long way gives.

Each shortcut is held to its reference on the recorded fixtures and on many generated lines: fast
constructors against the dataclass constructors, the one-match cosmos prefix against the full prefix
reading, ``fromisoformat`` stamps against stamps built from their fields, needle-first gated
classification against gates-first, and the Step / dynamic-sampling / float readers against the
regex and ``literal_eval`` readings they replace (copied here as oracles).
"""

from __future__ import annotations

import dataclasses
import math
import random
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from parsing_helpers import SOURCES, cosmos

from a1x_diagnostics.events import EVENT_TYPES, Role, Signal, SignalKind, Source, Step
from a1x_diagnostics.parsing._build import MAX_TEXT, ctx_maker, maker
from a1x_diagnostics.parsing._rules import (
    GATES,
    NEEDLES,
    Ctx,
    classify_gated,
    classify_message,
    present_gates,
)
from a1x_diagnostics.parsing._shapes import _cosmos_ts, _dt, shape_in_full, shape_of
from a1x_diagnostics.signatures.fields import read_literal
from a1x_diagnostics.signatures.fields import to_float as _float

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "cosmos"
REF = datetime(2025, 6, 10, 12, 0, 0)
SRC = Source("rollout_3.log", Role.ROLLOUT, 3)


def fixture_lines() -> list[str]:
    lines: list[str] = []
    for path in sorted(FIXTURES.rglob("*")):
        if path.is_file() and path.suffix in (".log", ".out", ".err"):
            lines += path.read_bytes().decode("utf-8", "replace").split("\n")
    return lines


# ---------------------------------------------------------------- constructors


def _sample_kwargs(cls: type) -> tuple[dict[str, Any], dict[str, Any]]:
    """(every field, only the required fields) with distinct values (frozen dataclasses check no types)."""
    every: dict[str, Any] = {}
    required: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        value = f"{cls.__name__}.{f.name}"
        every[f.name] = value
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required[f.name] = value
    return every, required


@pytest.mark.parametrize("cls", EVENT_TYPES, ids=lambda c: c.__name__)
def test_makers_build_what_the_constructors_build(cls: type) -> None:
    every, required = _sample_kwargs(cls)
    make = maker(cls)
    for kw in (every, required):
        fast, slow = make(**kw), cls(**kw)
        assert type(fast) is cls and fast == slow and repr(fast) == repr(slow)
    with pytest.raises(dataclasses.FrozenInstanceError):
        make(**every).line = 1
    with pytest.raises(TypeError):
        make(**{k: v for k, v in required.items() if k != "line"})

    ctx = Ctx(SRC, 7, "x" * (MAX_TEXT + 5), REF, "INFO", 2)
    rest = {k: v for k, v in every.items() if k not in ("source", "line", "text", "ts", "level", "rank")}
    fast = ctx_maker(cls)(ctx, **rest)
    assert fast == cls(**ctx.kw(), **rest) and len(fast.text) == MAX_TEXT


def test_default_factories_are_called_for_each_event() -> None:
    make = maker(Signal)
    a = make(source=SRC, line=1, text="", kind=SignalKind.OOM)
    b = make(source=SRC, line=2, text="", kind=SignalKind.OOM)
    assert a.fields == {} and a.fields is not b.fields


def test_a_class_with_post_init_keeps_its_own_constructor() -> None:
    @dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
    class Checked:
        n: int

        def __post_init__(self) -> None:
            if self.n < 0:
                raise ValueError("negative")

    assert maker(Checked) is Checked
    with pytest.raises(ValueError, match="negative"):
        maker(Checked)(n=-1)


# ---------------------------------------------------------------- line shapes and stamps

_PIECES = [
    "[rank0]:", "[rank12]:", "[rank3]: ", "[rank3]:[rank3]: ", "[x]:", "[policy7]:", "[r0]:",
    "[abcdefghijklmnopqrst1]:", "[abcdefghijklmnopqrstu1]:", "[abcdefghijklmnopqrs12]:", "[rank\u0663]:",
    "[cosmos] 2025-06-09 10:12:14,534 - cosmos - INFO - ", "[cosmos] 2025-02-30 10:12:14,534 - log - DEBUG - ",
    "[cosmos] 2025-06-09 24:00:00,000 - a - WARNING - ", "[cosmos] 2025-06-09 10:12:14,53 - c - INFO - ",
    "[cosmos] 2025-06-09 10:12:14,534 - a b - INFO - ", "[cosmos] ", "INFO 06-09 12:00:00 [x.py:1] ", "msg", " ",
    "]:", "W0609 12:00:01.123456 1 f.py:2] ", "[AlpamayoPrefetch][info] 2025-06-09 12:00:01 pid=1 ev k=1",
]


def _random_lines(rng: random.Random, pieces: list[str], n: int, most: int = 4) -> list[str]:
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(1, most))) for _ in range(n)]


def test_cosmos_shortcut_reads_every_line_like_the_full_reading() -> None:
    lines = fixture_lines() + _random_lines(random.Random(1), _PIECES, 20000)
    for line in lines:
        for ref in (REF, None):
            assert shape_of(line, ref) == shape_in_full(line, ref), line


def _stamp_from_fields(stamp: str) -> datetime | None:
    return _dt(int(stamp[0:4]), int(stamp[5:7]), int(stamp[8:10]), int(stamp[11:13]), int(stamp[14:16]),
               int(stamp[17:19]), int(stamp[20:23]) * 1000)


def test_cosmos_stamps_read_like_datetimes_built_from_their_fields() -> None:
    rng = random.Random(2)
    stamps = ["2025-06-09 10:12:14,534", "2024-02-29 23:59:59,999", "2025-02-29 00:00:00,000",
              "2025-06-09 24:00:00,000", "2025-06-09 23:59:60,000", "0000-01-01 00:00:00,000",
              "2025-06-09 1\u0660:12:14,534"]
    for _ in range(20000):
        stamps.append(f"{rng.randint(0, 9999):04d}-{rng.randint(0, 13):02d}-{rng.randint(0, 32):02d} "
                      f"{rng.randint(0, 25):02d}:{rng.randint(0, 61):02d}:{rng.randint(0, 61):02d},"
                      f"{rng.randint(0, 999):03d}")
    for stamp in stamps:
        assert _cosmos_ts(stamp) == _stamp_from_fields(stamp), stamp


# ---------------------------------------------------------------- gated classification

_MESSAGES = [
    "[Controller] Stat: 8 samples, 800 completion tokens, 8 pending rollouts, 1.00s elapsed",
    "[Controller] Stat: 8 samples, 800 completion tokens, 8 pending rollouts, e seconds elapsed",  # builder refuses
    "[Controller] weight staleness: accepted p50=1 p99=3 max=4, discarded=0/48 (allowed_outdated_steps=4, "
    "sync_weight_interval=5)",
    "[Rollout] All 8 at step 3 recv operations finished in 1.5 seconds with 2.0 MB received.",
    "[Policy] All 8 at step 3 send operations of finished in 2.1 seconds with 16.0 MB sent.",
    "[Rollout rank=0] prompt rejected: prompt.weight_version=9 current_weight_version=3 allowed_outdated=4 ceiling=7",
    "Step: 3/9, Reward Mean: 0.5, Loss: nan", "Dynamic sampling rewards distribution so far: {'outdated': 3}.",
    "[Policy] Saving cosmos checkpoint at step 4", "Current pending rollouts 9 is larger than the allowed outdated "
    "version count 4. Generate with batch 2", "[Rollout] Failed in rollout generation: CUDA out of memory",
    "[WeightSyncThread] P2R done (step=3, ver=3, 12.5 ms, qdepth_after=0)", "NCCL: async error detected (err=5), "
    "task t failed", "POLICY Replica started at global rank 0, with replica name: u-1",
]
_LEVELS = ["INFO", "WARNING", "ERROR", "DEBUG", "CRITICAL"]


def _gated_lines(rng: random.Random, n: int) -> list[str]:
    pieces = [*GATES, *NEEDLES, *_MESSAGES, " ", ", ", "x"]
    out = []
    for _ in range(n):
        msg = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 4)))
        out.append(cosmos(msg, rng.choice(_LEVELS), rng.choice([None, 0, 5])) if rng.random() < 0.8 else msg)
    return out


@pytest.mark.slow  # every rule against generated lines (27 s)
@pytest.mark.filterwarnings("ignore::SyntaxWarning")  # literal_eval of random config dumps
def test_needle_first_gated_classification_matches_gates_first() -> None:
    rng = random.Random(3)
    lines = [cosmos(m, level) for m in _MESSAGES for level in _LEVELS] + _gated_lines(rng, 20000) + fixture_lines()
    for i, line in enumerate(lines):
        shape = shape_of(line, REF)
        ctx = Ctx(SRC, i + 1, line, shape.ts, shape.level, shape.rank)
        fast = classify_gated(line, shape.msg, ctx)
        slow = classify_message(shape.msg, ctx, present_gates(line))
        assert repr(fast) == repr(slow), line  # repr: nan fields compare equal


# ---------------------------------------------------------------- value readers (oracles: the replaced code)

_STEP_PAIR = re.compile(r"([A-Za-z][A-Za-z ]*?):? (\S+)")
_STEP_FIELDS = {"reward mean": "reward_mean", "reward std": "reward_std", "loss": "loss_avg", "max loss": "loss_max",
                "grad norm": "grad_norm", "iteration time": "iteration_time_s", "learning rate": "learning_rate",
                "average loss": "loss_avg", "kl loss avg": "kl_loss_avg"}


def _float_oracle(v: str | None) -> float | None:
    if v is None:
        return None
    v = v.strip().rstrip(",")
    if v.endswith("s."):
        v = v[:-2]
    elif v.endswith(("s", ".")):
        v = v[:-1]
    try:
        return float(v)
    except ValueError:
        return None


def _step_values_oracle(rest: str) -> dict[str, float | None]:
    values: dict[str, float | None] = {}
    for piece in rest.split(", "):
        pm = _STEP_PAIR.fullmatch(piece.strip())
        if pm:
            name = _STEP_FIELDS.get(pm.group(1).strip().lower())
            if name is not None:
                values[name] = _float_oracle(pm.group(2))
    return values


_VALUES = ["1.0", "-0.25", "nan", "inf", "5.12s.", "5s", "3.", "1e-5", "abc", "", "1.0,", "2.0\t", "\t2", "1_0",
           "1.2.3", " 4", "6 ", "s", ".", "\u0663.5", "  7 ,", "-inf"]


def test_float_reader_matches_the_suffix_stripping_reader() -> None:
    for v in [*_VALUES, None]:
        assert repr(_float(v)) == repr(_float_oracle(v)), v


def test_step_pieces_read_like_the_regex_reading() -> None:
    rng = random.Random(4)
    names = [*(n.title() for n in _STEP_FIELDS), "Grad norm", "foo", "x y z", "", " Loss", "Loss ", "Loss:"]
    for _ in range(5000):
        pieces = [rng.choice(names) + rng.choice([": ", " ", ":  ", ":", " : "]) + rng.choice(_VALUES)
                  for _ in range(rng.randint(0, 8))]
        rest = ", ".join(pieces)
        line = f"Step: 3/9, {rest}" if pieces else "Step: 3/9"
        found = classify_message(line, Ctx(SOURCES[Role.CONTROLLER], 1, line, None, None, None))
        assert len(found) == 1 and isinstance(found[0], Step)
        got = {k: getattr(found[0], k) for k in set(_STEP_FIELDS.values())}
        want = {k: None for k in got} | _step_values_oracle(rest if pieces else "")
        assert repr(got) == repr(want), line


def test_dynamic_sampling_counts_read_like_literal_eval() -> None:
    texts = ["{}", "{'outdated': 3}", "{'outdated': 3, 'rollout_failed': 10}", "{'a': 01}", "{'a': 1, 'a': 2}",
             "{'a b': 1}", "{'a':1}", "{'a': -1}", "{'x': 1.5}", "{'x': nan}", "{'a': True}", "{1: 2}", "{'k': 1,}"]
    for text in texts:
        line = f"Dynamic sampling rewards distribution so far: {text}."
        found = classify_message(line, Ctx(SOURCES[Role.CONTROLLER], 1, line, None, None, None))
        try:
            value = read_literal(text)
        except ValueError:
            value = None
        if not isinstance(value, dict):
            assert found == []
            continue
        want = {str(k): int(v) for k, v in value.items()
                if isinstance(v, (int, float)) and not isinstance(v, bool) and not math.isnan(v)}
        assert len(found) == 1 and found[0].counts == want, text  # type: ignore[attr-defined]
