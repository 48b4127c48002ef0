"""Fast constructors for the event classes: the same objects as ``Cls(**kwargs)``, cheaper to build.

A frozen dataclass sets every field through ``object.__setattr__`` in a generated ``__init__`` that
takes keyword arguments only (``kw_only``), paid for each of the events of a cluster run (docs/parsing.md
has the figures). ``maker(cls)`` generates a function with the same keyword parameters and
defaults that writes the slots through their descriptors (which the frozen ``__setattr__`` does not
guard); ``ctx_maker(cls)`` takes the common fields (source, line, text cut at ``MAX_TEXT``, ts,
level, rank) from a ``Ctx`` instead. A class that is not a slotted dataclass, or has a
``__post_init__``, gets its own constructor back: a later change of ``events.py`` can cost speed,
never correctness. ``tests/parsing/test_fast_paths.py`` holds every event class to its real constructor.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable
from typing import Any, TypeVar

E = TypeVar("E")

MAX_TEXT = 8192  # characters of a line kept in an event (``_rules.MAX_TEXT``)
CTX_FIELDS = ("source", "line", "text", "ts", "level", "rank")
_MISSING = object()


def _slot_setter(cls: type, name: str) -> Callable[[Any, Any], None] | None:
    for klass in cls.__mro__:
        desc = klass.__dict__.get(name)
        if desc is not None:
            return desc.__set__ if isinstance(desc, types.MemberDescriptorType) else None
    return None


def _fields(cls: type) -> list[dataclasses.Field[Any]] | None:
    """The fields to set, or None where writing slots would not give what ``cls(...)`` gives."""
    if not dataclasses.is_dataclass(cls) or hasattr(cls, "__post_init__") or "__slots__" not in cls.__dict__:
        return None
    fields = list(dataclasses.fields(cls))
    if any(not f.init or _slot_setter(cls, f.name) is None for f in fields):
        return None
    return fields


def _generate(cls: type, fields: list[dataclasses.Field[Any]], ctx: bool) -> Callable[..., Any]:
    env: dict[str, Any] = {"_new": object.__new__, "_cls": cls, "_MISSING": _MISSING, "_MAX_TEXT": MAX_TEXT}
    params: list[str] = []
    body = ["    o = _new(_cls)"]
    if ctx:
        body.append("    t = c.text\n    if len(t) > _MAX_TEXT:\n        t = t[:_MAX_TEXT]")
    for f in fields:
        name = f.name
        env[f"_set_{name}"] = _slot_setter(cls, name)
        if ctx and name in CTX_FIELDS:
            body.append(f"    _set_{name}(o, {'t' if name == 'text' else 'c.' + name})")
            continue
        if f.default is not dataclasses.MISSING:
            env[f"_default_{name}"] = f.default
            params.append(f"{name}=_default_{name}")
        elif f.default_factory is not dataclasses.MISSING:
            env[f"_factory_{name}"] = f.default_factory
            params.append(f"{name}=_MISSING")
            body.append(f"    if {name} is _MISSING:\n        {name} = _factory_{name}()")
        else:
            params.append(name)
        body.append(f"    _set_{name}(o, {name})")
    body.append("    return o")
    args = (["c"] if ctx else []) + (["*", *params] if params else [])
    namespace: dict[str, Any] = {}
    # The same technique as ``dataclasses`` itself: code built only from the class's own field names.
    exec("\n".join([f"def make({', '.join(args)}):", *body]), env, namespace)
    make: Callable[..., Any] = namespace["make"]
    make.__name__ = make.__qualname__ = f"make_{cls.__name__}"
    return make


def _ctx_kw(c: Any) -> dict[str, Any]:
    t = c.text
    return {"source": c.source, "line": c.line, "text": t if len(t) <= MAX_TEXT else t[:MAX_TEXT], "ts": c.ts,
            "level": c.level, "rank": c.rank}


def maker(cls: type[E]) -> Callable[..., E]:
    """``maker(Stat)(source=..., line=..., ...)`` == ``Stat(source=..., line=..., ...)``, faster."""
    fields = _fields(cls)
    return cls if fields is None else _generate(cls, fields, ctx=False)


def ctx_maker(cls: type[E]) -> Callable[..., E]:
    """``ctx_maker(Stat)(ctx, samples=...)`` == ``Stat(**ctx.kw(), samples=...)``, faster."""
    fields = _fields(cls)
    if fields is None:
        return lambda c, **kw: cls(**_ctx_kw(c), **kw)
    return _generate(cls, fields, ctx=True)
