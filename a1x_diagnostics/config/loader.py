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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomlkit
from pydantic import BaseModel, ValidationError
from tomlkit.exceptions import ParseError, TOMLKitError

from a1x_diagnostics.config._locate import KeyLocation, first_duplicate, header_before, scan_keys
from a1x_diagnostics.config.bounds import OutOfRange, out_of_range
from a1x_diagnostics.config.schema import (
    NEWER_THAN_747,
    SHIPPED_BUT_IGNORED,
    CustomSection,
    GrpoPolicy,
    RecipeConfig,
    SftPolicy,
    effective_policy_type,
)
from a1x_diagnostics.findings import Evidence
from a1x_diagnostics.inputs import InputError, read_input

_TOP_LEVEL_SCALARS = ("redis", "eth_ips", "mode")
# The recipe's TOMLs are a few KB; a file far larger is not one, and parsing it costs its size many
# times over in memory and seconds (50 MB: 82 s, 2.9 GB RSS). Refused before it is read.
MAX_TOML_BYTES = 1 << 20


class ConfigError(Exception):
    """The file cannot be loaded. ``str()`` is one line: ``<file>: <toml.path> (line N): problem``."""

    def __init__(
        self,
        file: str,
        problem: str,
        *,
        toml_path: str | None = None,
        line: int | None = None,
        unreadable: bool = False,
        line_text: str | None = None,
    ) -> None:
        self.file = file
        self.problem = problem
        self.toml_path = toml_path
        self.line = line
        self.unreadable = unreadable  # the file could not be read at all (not: read but invalid)
        self.line_text = line_text  # the text of ``line`` (the file is never read again to quote it)
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

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

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
    fields = model.model_fields
    for key, value in data.items():
        path = (*prefix, key)
        if key not in fields:
            if model is not CustomSection:
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
    if line is None or line < 1:
        return None
    lines = text.split("\n", line)
    return lines[line - 1].rstrip("\r") if line <= len(lines) else None


def parse_config(text: str, path: Path) -> LoadedConfig:
    """Load from text already read (``path`` is only used in messages and evidence)."""
    try:
        return _parse_config(text, path)
    except ConfigError as exc:
        if exc.line_text is None:
            exc.line_text = _line_text(text, exc.line)
        raise


def _parse_config(text: str, path: Path) -> LoadedConfig:
    file = str(path)
    try:
        document = tomlkit.parse(text)
    except ParseError as exc:
        header = header_before(text, exc.line)
        problem = _POSITION.sub("", str(exc))
        raise ConfigError(
            file, f"TOML syntax error: {problem} (col {exc.col})", toml_path=header, line=exc.line
        ) from None
    except TOMLKitError as exc:
        duplicate = first_duplicate(text)
        if duplicate is None:
            raise ConfigError(file, f"TOML error: {exc}") from None
        dup_path, dup_loc = duplicate
        raise ConfigError(
            file,
            f"TOML error: {'.'.join(dup_path)} is defined twice ({exc})",
            toml_path=".".join(dup_path),
            line=dup_loc.line,
        ) from None
    data: dict[str, Any] = document.unwrap()
    locations = scan_keys(text)
    _index_inline_tables(data, locations)
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
    loaded = LoadedConfig(path=path, text=text, data=data, model=model, unknown_keys=unknown, locations=locations)
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
