"""docs/architecture.md is the map: every module, file and name it points at exists (issue 18, point 7).

A path in backticks (`a1x_supervisor/run_loop.py`, `detectors/facts.py`, `stages/`) is found from the
repository root or from one of the packages; a dotted name (`a1x_diagnostics.engine.check`,
`engine.Collector`) is a module of ours, then attributes of it. Placeholders (`stages/<name>.py`) and
run-directory files (`state.json`) are not code and are skipped."""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "architecture.md"
PACKAGES = ("a1x_diagnostics", "a1x_supervisor", "a1x_tui", "a1x_configs")
ROOTS = ("", "a1x_diagnostics/", "a1x_supervisor/", "a1x_tui/", "a1x_tui/ui/", "a1x_configs/")
CODE = re.compile(r"`([^`]+)`")  # spans pair up over the whole text; one with a space is prose
PATHLIKE = re.compile(r"^[\w./-]+(\.py|\.c|\.md|/)$")
DOTTED = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")
NOT_CODE = (".json", ".jsonl", ".log", ".toml", ".txt", ".yaml", ".md")
RUN_DIR = {"logs/"}  # what a run directory holds, named where the map says where a run's state lives


def _path_exists(token: str) -> bool:
    return any((REPO / (root + token)).exists() for root in ROOTS)


def _somewhere(name: str) -> bool:
    """A bare file name (`events.py` beside the package it is said to be in) is in some package."""
    return any(next(REPO.glob(f"{pkg}/**/{name}"), None) is not None for pkg in PACKAGES)


def _name_exists(dotted: str) -> bool | None:
    """True / False for a name under one of our packages; None for a token that is not ours at all."""
    parts = dotted.split(".")
    for prefix in ("", "a1x_diagnostics.", "a1x_supervisor.", "a1x_tui.", "a1x_tui.ui."):
        full = (prefix + dotted).split(".")
        if full[0] not in PACKAGES:
            continue
        for cut in range(len(full), 0, -1):
            module = ".".join(full[:cut])
            try:
                found = importlib.util.find_spec(module)
            except (ImportError, ValueError):
                found = None
            if found is None:
                continue
            obj: object = importlib.import_module(module)
            for attr in full[cut:]:
                if not hasattr(obj, attr):
                    break
                obj = getattr(obj, attr)
            else:
                return True
            break
    return False if parts[0] in PACKAGES or _first_is_ours(parts[0]) else None


def _first_is_ours(name: str) -> bool:
    return any(importlib.util.find_spec(f"{pkg}.{name}") is not None for pkg in ("a1x_diagnostics", "a1x_supervisor"))


def test_every_module_the_map_names_exists() -> None:
    missing = []
    text = DOC.read_text(encoding="utf-8").split("```")
    # not the diagram's block (its lines kept blank, so line numbers hold)
    prose = "".join(part if i % 2 == 0 else "\n" * part.count("\n") for i, part in enumerate(text))
    for m in CODE.finditer(prose):
        n = prose.count("\n", 0, m.start()) + 1
        token = m.group(1).rstrip(".,:;")
        if any(c.isspace() for c in token):
            continue
        if "<" in token or "*" in token or token.startswith(("-", "$", "~")):
            continue
        if token in RUN_DIR:
            continue
        if PATHLIKE.match(token):
            if not _path_exists(token) and not ("/" not in token and _somewhere(token)):
                missing.append(f"line {n}: {token}")
        elif DOTTED.match(token) and not token.endswith(NOT_CODE) and _name_exists(token) is False:
            missing.append(f"line {n}: {token}")
    assert not missing, "docs/architecture.md names what the code does not have:\n" + "\n".join(missing)


def test_the_map_holds_both_walks() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert "One log line, from its file to a finding" in text
    assert "One stage, from the spec to a verified output" in text
