"""The checks every path of a run spec gets, in ``RunSpec`` and in its ``[cluster]`` section alike:
a folder is not a file, a script is not a folder (docs/supervisor.md, "The run spec")."""

from __future__ import annotations

from pathlib import Path


def must_be_folder(value: Path | None) -> Path | None:
    """Every path of the spec names a folder; one that exists as something else is refused now, not
    when a stage writes into it (a folder that does not exist yet is fine: a stage makes it)."""
    if value is not None and value.exists() and not value.is_dir():
        raise ValueError(f"{value} is a file, not a folder")
    return value


def must_be_file(value: Path | None) -> Path | None:
    """A script the spec names: a folder there is refused (a missing one is preflight's to report)."""
    if value is not None and value.is_dir():
        raise ValueError(f"{value} is a folder, not a file")
    return value
