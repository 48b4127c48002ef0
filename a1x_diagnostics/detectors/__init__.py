"""Detectors: pure functions of a ``DetectorContext`` that return findings with evidence.

One module per pathology family; each registers its checks with ``@detector(<catalog id>)``.
``run_detectors(ctx)`` (``a1x_diagnostics.detectors.run``) runs them all and gives a ``CheckResult`` per id
plus the findings.

Importing the package imports only the store a run is read into (``EventStore``, ``FileFacts``,
``Retained``): ``--check`` reads a run in a child process that imports neither the detectors nor the
report models (docs/architecture.md, "Reading in a child process"). Every other name below is
imported at its first use, with the detectors' registrations.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from a1x_diagnostics.detectors._store import EventStore, FileFacts, Retained

if TYPE_CHECKING:
    from a1x_diagnostics.detectors._base import Conclusion, DetectorContext, Verdict, detector, make_finding
    from a1x_diagnostics.detectors._config import ConfigLike, DumpConfig, RunConfig, clip_text
    from a1x_diagnostics.detectors.run import REGISTRY, run_detectors

_AT_FIRST_USE = {
    "REGISTRY": "run",
    "run_detectors": "run",
    "Conclusion": "_base",
    "DetectorContext": "_base",
    "Verdict": "_base",
    "detector": "_base",
    "make_finding": "_base",
    "ConfigLike": "_config",
    "DumpConfig": "_config",
    "RunConfig": "_config",
    "clip_text": "_config",
}


def __getattr__(name: str) -> Any:
    """A name of the detectors' side, imported now with every detector (their registrations first)."""
    module = _AT_FIRST_USE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    importlib.import_module(f"{__name__}.run")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "REGISTRY",
    "Conclusion",
    "ConfigLike",
    "DetectorContext",
    "DumpConfig",
    "EventStore",
    "FileFacts",
    "Retained",
    "RunConfig",
    "Verdict",
    "clip_text",
    "detector",
    "make_finding",
    "run_detectors",
]
