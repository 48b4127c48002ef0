"""Load a recipe TOML: the plain data, the typed model, the unknown keys and where every key is.

``load_config`` raises ``ConfigError`` only when Cosmos-RL itself could not load the file (TOML
syntax, a value of the wrong type). Everything else a user can get wrong is a lint finding.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import re
import types
import typing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import tomlkit
from pydantic import BaseModel, ValidationError
from tomlkit.exceptions import ParseError, TOMLKitError

from a1x_diagnostics.config._locate import KeyLocation, first_duplicate, header_before, scan_keys
from a1x_diagnostics.config.bounds import OutOfRange, out_of_range
from a1x_diagnostics.config.cosmos_toml import CosmosReading, Misread, read_like_cosmos, toml10_text
from a1x_diagnostics.config.schema import (
    NEWER_THAN_747,
    SHIPPED_BUT_IGNORED,
    GrpoPolicy,
    RecipeConfig,
    SftPolicy,
    effective_policy_type,
)
from a1x_diagnostics.findings import Evidence
from a1x_diagnostics.inputs import InputError, read_input
from a1x_diagnostics.recipe_entries import ENTRIES, SHIPPED_UNREAD

_TOP_LEVEL_SCALARS = ("redis", "eth_ips", "mode")
# The recipe's TOMLs are a few KB; a file far larger is not one, and parsing it costs its size many
# times over in memory and seconds (50 MB: 82 s, 2.9 GB RSS). Refused before it is read.
MAX_TOML_BYTES = 1 << 20


class ConfigError(Exception):
    """The file cannot be loaded. ``str()`` is one line: ``<file>: <toml.path> (line N): problem``.

    ``finding_id`` is the lint finding it amounts to: ``toml_rejected`` when Cosmos-RL's TOML parser
    refuses the text, ``invalid_value`` when a value does not fit Cosmos-RL's schema."""

    def __init__(
        self,
        file: str,
        problem: str,
        *,
        toml_path: str | None = None,
        line: int | None = None,
        unreadable: bool = False,
        line_text: str | None = None,
        finding_id: str = "invalid_value",
        hint: str | None = None,
    ) -> None:
        self.file = file
        self.problem = problem
        self.toml_path = toml_path
        self.line = line
        self.unreadable = unreadable  # the file could not be read at all (not: read but invalid)
        self.line_text = line_text  # the text of ``line`` (the file is never read again to quote it)
        self.finding_id = finding_id
        self.hint = hint  # how to write it so that Cosmos-RL's parser reads it
        where = " ".join(p for p in (toml_path, f"(line {line})" if line else None) if p)
        super().__init__(f"{file}: {where}: {problem}" if where else f"{file}: {problem}")


@dataclass(frozen=True, slots=True)
class UnknownKey:
    """A key Cosmos-RL 747d1bd (or the recipe, under ``[custom.alpamayo]``) does not read."""

    path: str
    line: int | None
    text: str
    suggestion: str | None = None  # dotted path of the key that was probably meant
    note: str | None = None

    @property
    def message(self) -> str:
        parent, _, key = self.path.rpartition(".")
        where = f"[{parent}] " if parent else ""
        hint = f", did you mean {self.suggestion.rpartition('.')[2]}?" if self.suggestion else ""
        note = f" ({self.note})" if self.note else ""
        return f"{where}{key}: unknown key{hint}{note}"


@dataclass(slots=True)
class LoadedConfig:
    path: Path
    text: str
    data: dict[str, Any]
    model: RecipeConfig
    unknown_keys: list[UnknownKey] = field(default_factory=list)
    locations: dict[tuple[str, ...], KeyLocation] = field(default_factory=dict, repr=False)
    out_of_range: list[OutOfRange] = field(default_factory=list)  # checked before any rule computes
    # How Cosmos-RL reads the text (cosmos_toml.py): what its parser refuses or reads differently.
    cosmos: CosmosReading | None = field(default=None, repr=False)
    misreads: list[Misread] = field(default_factory=list)
    # tomlkit's refusal when only Cosmos-RL's parser reads the file (``data`` is then its reading):
    # lint works, but a1x-tui cannot edit the file.
    toml10_problem: str | None = None

    @property
    def cosmos_clean(self) -> bool:
        """Whether Cosmos-RL reads exactly what the file says (so an edit of it can be checked)."""
        return self.toml10_problem is None and not self.misreads and (self.cosmos is None or not self.cosmos.rejected)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    def text_line(self, line: int) -> str | None:
        """Line ``line`` as Cosmos-RL sees the file (universal newlines), for evidence."""
        return _line_text(self.text, line)

    def is_set(self, dotted: str) -> bool:
        """Whether the file itself sets ``dotted`` (defaults do not count)."""
        node: Any = self.data
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                return False
            node = node[part]
        return True

    def raw(self, dotted: str, default: Any = None) -> Any:
        """The value as written in the file, or ``default``."""
        node: Any = self.data
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node

    def get(self, dotted: str) -> Any:
        """The effective value: the file's, else the 747d1bd (or recipe code) default.

        Raises ``KeyError`` for a path that is neither in the schema nor in the file.
        """
        node: Any = self.model
        for part in dotted.split("."):
            if isinstance(node, BaseModel):
                extra = node.model_extra or {}
                if part in type(node).model_fields:
                    node = getattr(node, part)
                elif part in extra:
                    node = extra[part]
                elif self.is_set(dotted):
                    return self.raw(dotted)
                else:
                    raise KeyError(f"{dotted}: not a key of the recipe TOML")
            elif isinstance(node, dict) and part in node:
                node = node[part]
            elif node is None:
                return None
            else:
                raise KeyError(f"{dotted}: not a key of the recipe TOML")
        return node

    def locate(self, dotted: str) -> Evidence | None:
        """The line that sets ``dotted``, else the header of its nearest table in the file."""
        parts = tuple(dotted.split("."))
        for n in range(len(parts), 0, -1):
            loc = self.locations.get(parts[:n])
            if loc is not None and (n == len(parts) or loc.header):
                return Evidence(file=str(self.path), line=loc.line, text=loc.text)
        return None


def _submodel(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside an annotation such as ``X | None`` or ``Annotated[X, ...]``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _submodel(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            found = _submodel(arg)
            if found is not None:
                return found
    return None


def declared_policy_type(data: dict[str, Any]) -> str:
    """What the user meant: the explicit ``type``, else what the 747d1bd heuristic decides."""
    policy = data.get("train", {}).get("train_policy")
    if not isinstance(policy, dict):
        return "grpo"
    declared = policy.get("type")
    return declared if isinstance(declared, str) else effective_policy_type(policy)


def _find_unknown(
    data: dict[str, Any], model: type[BaseModel], prefix: tuple[str, ...], policy_type: str, out: list[tuple[str, ...]]
) -> None:
    """Keys Cosmos-RL's schema does not know. ``[custom]`` is not Cosmos-RL's (``_custom_unread``)."""
    fields = model.model_fields
    for key, value in data.items():
        path = (*prefix, key)
        if model is RecipeConfig and key == "custom":
            continue
        if key not in fields:
            out.append(path)
            continue
        if path == ("train", "train_policy"):
            sub: type[BaseModel] | None = GrpoPolicy if policy_type == "grpo" else SftPolicy
        else:
            sub = _submodel(fields[key].annotation)
        if sub is not None and isinstance(value, dict):
            _find_unknown(value, sub, path, policy_type, out)


def _model_at(path: tuple[str, ...], policy_type: str) -> type[BaseModel] | None:
    model: type[BaseModel] | None = RecipeConfig
    for i, part in enumerate(path):
        if model is None or part not in model.model_fields:
            return None
        if path[: i + 1] == ("train", "train_policy"):
            model = GrpoPolicy if policy_type == "grpo" else SftPolicy
        else:
            model = _submodel(model.model_fields[part].annotation)
    return model


def _describe_unknown(
    path: tuple[str, ...], policy_type: str, locations: dict[tuple[str, ...], KeyLocation]
) -> UnknownKey:
    parent, key = path[:-1], path[-1]
    dotted_parent = ".".join(parent)
    model = _model_at(parent, policy_type)
    known = list(model.model_fields) if model is not None else []
    note: str | None = None
    suggestion: str | None = None
    if key in NEWER_THAN_747.get(dotted_parent, frozenset()):
        note = "exists in newer Cosmos-RL (HEAD/0.4.7), not at 747d1bd which the recipe pins: ignored"
    elif ".".join(path) in SHIPPED_BUT_IGNORED:
        note = "shipped in the recipe's TOML, but no Cosmos-RL 747d1bd field: ignored, harmless"
    elif key in _TOP_LEVEL_SCALARS and parent:
        note = f"a top-level key written after [{dotted_parent}] belongs to that table; move it above the first table"
    else:
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.75)
        if close:
            suggestion = ".".join((*parent, close[0]))
    loc = locations.get(path)
    return UnknownKey(
        path=".".join(path),
        line=loc.line if loc else None,
        text=loc.text if loc else "",
        suggestion=suggestion,
        note=note,
    )


def _index_inline_tables(data: dict[str, Any], locations: dict[tuple[str, ...], KeyLocation]) -> None:
    """Keys inside inline tables (``x = { a = 1 }``) live on the line of their table's key."""

    def walk(node: dict[str, Any], path: tuple[str, ...], inherited: KeyLocation | None) -> None:
        for key, value in node.items():
            sub = (*path, key)
            loc = locations.get(sub)
            if loc is None and inherited is not None:
                locations[sub] = loc = inherited
            if isinstance(value, dict):
                walk(value, sub, loc if loc is not None and not loc.header else None)

    walk(data, (), None)


def _custom_leaves(node: Any, prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
    if isinstance(node, dict) and node:
        return [leaf for k, v in node.items() for leaf in _custom_leaves(v, (*prefix, str(k)))]
    return [prefix]


def _custom_unread(data: dict[str, Any], locations: dict[tuple[str, ...], KeyLocation]) -> list[UnknownKey]:
    """Keys under ``[custom]`` that no entry script of the recipe reads (``a1x_diagnostics.recipe_entries``);
    a close match to a key some entry reads in the same table is the suggestion. Which of the rest the entry
    in use reads is the lint's to say (it knows the entry)."""
    out: list[UnknownKey] = []
    custom = data.get("custom")
    if not isinstance(custom, dict):
        return out
    known = {k for e in ENTRIES.values() for k in e.reads} | set(SHIPPED_UNREAD)
    for path in _custom_leaves(custom, ("custom",)):
        if len(path) < 2 or path == ("custom", "alpamayo"):
            continue  # an empty [custom] or [custom.alpamayo]
        if path[:2] != ("custom", "alpamayo"):
            table = ".".join(path[:2])
            note = f"no entry script of the recipe reads [{table}] (only [custom.alpamayo]); your own may"
        else:
            rel = ".".join(path[2:])
            if rel in known or any(k.startswith(rel + ".") for k in known):
                continue  # an empty [table] of known keys, or a key some entry reads
            siblings = [k.rpartition(".")[2] for k in known if k.rpartition(".")[0] == rel.rpartition(".")[0]]
            close = difflib.get_close_matches(path[-1], siblings, n=1, cutoff=0.75)
            if close:
                loc = locations.get(path)
                out.append(
                    UnknownKey(
                        path=".".join(path),
                        line=loc.line if loc else None,
                        text=loc.text if loc else "",
                        suggestion=".".join((*path[:-1], close[0])),
                    )
                )
                continue
            note = "no entry script of the recipe reads it (" + ", ".join(e.name for e in ENTRIES.values()) + ")"
        loc = locations.get(path)
        out.append(UnknownKey(".".join(path), loc.line if loc else None, loc.text if loc else "", None, note))
    return out


_POSITION = re.compile(r"\s+at line \d+ col \d+$")


def _dotted_loc(data: dict[str, Any], loc: tuple[int | str, ...]) -> str:
    """The TOML path of a pydantic error location, without union-member names."""
    parts: list[str] = []
    node: Any = data
    for item in loc:  # anything that is not in the data is a union member tag ('grpo', 'list[float]')
        if isinstance(node, dict) and item in node:
            parts.append(str(item))
            node = node[item]
        elif isinstance(node, list) and isinstance(item, int) and parts and item < len(node):
            parts[-1] = f"{parts[-1]}[{item}]"
            node = node[item]
    return ".".join(parts)


def _line_text(text: str, line: int | None) -> str | None:
    """Line ``line`` as Cosmos-RL sees the file (universal newlines)."""
    if line is None or line < 1:
        return None
    lines = toml10_text(text).split("\n", line)
    return lines[line - 1] if line <= len(lines) else None


def parse_config(text: str, path: Path) -> LoadedConfig:
    """Load from text already read (``path`` is only used in messages and evidence)."""
    try:
        return _parse_config(text, path)
    except ConfigError as exc:
        if exc.line_text is None:
            exc.line_text = _line_text(text, exc.line)
        raise


def _rejected_error(
    file: str, reading: CosmosReading, text: str, fallback_line: int | None = None, toml10: str | None = None
) -> ConfigError:
    """Both parsers refuse the text: one line that says where, in Cosmos-RL's words (and tomlkit's)."""
    rejected = reading.rejected
    assert rejected is not None
    if rejected.line is None and fallback_line:
        rejected = replace(rejected, line=fallback_line)
    byte = f"; {rejected.byte}" if rejected.byte else ""
    also = f"; TOML 1.0: {toml10}" if toml10 else ""
    reader = "its copy of the file" if rejected.reader == "controller" else "it"
    problem = f"Cosmos-RL's TOML parser (toml 0.10.2) refuses {reader}: {rejected.problem}{byte}{also}"
    header = header_before(toml10_text(text), rejected.line) if rejected.line else None
    return ConfigError(
        file, problem, toml_path=header, line=rejected.line, finding_id="toml_rejected", hint=rejected.hint
    )


def _parse_config(text: str, path: Path) -> LoadedConfig:
    file = str(path)
    reading = read_like_cosmos(text)
    normal = toml10_text(text)  # the lines Cosmos-RL sees; line numbers below count these
    toml10_problem: str | None = None
    try:
        data: dict[str, Any] = tomlkit.parse(normal).unwrap()
    except ParseError as exc:
        if reading.rejected is not None or reading.launcher is None:
            toml10 = f"{_POSITION.sub('', str(exc))} (col {exc.col})"
            raise _rejected_error(file, reading, text, exc.line, toml10) from None
        toml10_problem = f"line {exc.line}: {_POSITION.sub('', str(exc))}"
        data = copy.deepcopy(reading.launcher)
    except TOMLKitError as exc:
        if reading.rejected is not None or reading.launcher is None:
            duplicate = first_duplicate(normal)
            if duplicate is not None:  # toml says only 'Duplicate keys!': name the key
                dup_path, dup_loc = duplicate
                raise ConfigError(
                    file,
                    f"Cosmos-RL's TOML parser (toml 0.10.2) refuses it: {'.'.join(dup_path)} is defined twice",
                    toml_path=".".join(dup_path),
                    line=dup_loc.line,
                    finding_id="toml_rejected",
                    hint="a key or table is set twice: keep one",
                ) from None
            raise _rejected_error(file, reading, text) from None
        toml10_problem = str(exc)
        data = copy.deepcopy(reading.launcher)
    locations = scan_keys(normal)
    _index_inline_tables(data, locations)
    misreads = reading.misreads(data if toml10_problem is None else None)
    try:
        model = RecipeConfig.model_validate(copy.deepcopy(data))
    except ValidationError as exc:
        err = exc.errors()[0]
        dotted = _dotted_loc(data, err["loc"])
        loc = locations.get(tuple(dotted.split(".")))
        more = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        problem = f"{err['msg']}, got {err['input']!r}{more}"
        raise ConfigError(file, problem, toml_path=dotted or None, line=loc.line if loc else None) from None
    policy_type = declared_policy_type(data)
    unknown_paths: list[tuple[str, ...]] = []
    _find_unknown(data, RecipeConfig, (), policy_type, unknown_paths)
    unknown = [_describe_unknown(p, policy_type, locations) for p in unknown_paths]
    unknown += _custom_unread(data, locations)
    loaded = LoadedConfig(
        path=path,
        text=text,
        data=data,
        model=model,
        unknown_keys=unknown,
        locations=locations,
        cosmos=reading,
        misreads=misreads,
        toml10_problem=toml10_problem,
    )
    loaded.out_of_range = out_of_range(data, loaded.get)
    return loaded


def load_config(path: Path) -> LoadedConfig:
    """Read and load a recipe TOML; ``ConfigError`` names the file, TOML path and line."""
    path = Path(path)
    try:
        raw = read_input(path, limit=MAX_TOML_BYTES, what="recipe TOML")
    except InputError as exc:
        raise ConfigError(str(path), str(exc), unreadable=True) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(str(path), "not UTF-8 text: is this a TOML file?", unreadable=True) from None
    return parse_config(text, path)
