"""No module outside the catalog keeps a message shape of its own (issue 35 point 1: the UI, the supervisor, the
detectors and the closed-loop reader ask the catalog). A regex written in one of them (``re.compile`` / ``re.search``
... of a string literal) that requires some text (it has needles: ``parsing.regex_needles``) and matches a line of
any catalog entry's samples recognises a message the catalog already holds: it fails here unless it is one of the
exceptions below, each with the reason it is not a message shape. Regexes that require no text (numbers, paths,
ids, names) are not message shapes."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from a1x_diagnostics.parsing import regex_needles
from a1x_diagnostics.signatures import BENIGN, HITS, SIGS
from a1x_diagnostics.signatures.closed_loop import SIGS as CLOSED_LOOP
from a1x_diagnostics.signatures.launcher import MONITOR

REPO = Path(__file__).resolve().parents[2]
OUTSIDE = ("a1x_tui", "a1x_supervisor", "a1x_diagnostics/detectors", "a1x_diagnostics/alpagym")
CALLS = {"compile", "search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split"}

_SSH = "the ssh link's reading of its own connection's stderr (ssh, the far shell), never a run's log"
EXCEPTIONS = {
    ("a1x_tui/remote/link.py", "_NO_PROGRAM"): _SSH,
    ("a1x_tui/remote/link.py", "_AUTH"): _SSH,
    ("a1x_tui/ui/timestamps.py", "_LEVEL_WORD"): "the log view's colour of a line by its level word, not a message",
    ("a1x_supervisor/hf_errors.py", "_URL_RE"): "the URL inside a Hub error the catalog's gated_repo / rate_limited "
    "entries named, for the user's next step",
    ("a1x_diagnostics/detectors/_probes.py", "_FORBIDDEN"): "whether a W&B failure the catalog named "
    "(wandb_init_failed.*) was a refusal: words of its error field",
    ("a1x_diagnostics/detectors/_probes.py", "_NCCL_CONTEXT"): "whether the context of an error the catalog named "
    "speaks of NCCL: words, not a line",
    ("a1x_diagnostics/detectors/config_runtime.py", "_DIMS"): "the tp and world size inside a config-validation error "
    "the catalog named, for the fix",
    ("a1x_diagnostics/detectors/facts.py", "_FRAME"): "a traceback's frame line, read for the report's 'where' (the "
    "parser groups tracebacks by their shape, docs/parsing.md)",
    ("a1x_diagnostics/detectors/failures.py", "_TOO_LONG"): "the cause inside a rollout generation failure the "
    "catalog named, to choose the fix",
    ("a1x_diagnostics/detectors/memory.py", "_FREE"): "the GiB numbers inside a vLLM memory error the catalog named "
    "(oom, kind free_memory), for the fix",
    ("a1x_diagnostics/detectors/memory.py", "_MAX_LEN"): "the length inside a vLLM KV-cache error the catalog named "
    "(oom, kind max_model_len), for the fix",
    ("a1x_diagnostics/alpagym/parser.py", "_RANK"): "torchrun's [rank<N>]: prefix, peeled before a closed-loop line "
    "is read",
    ("a1x_diagnostics/alpagym/parser.py", "_dict"): "the value format of AlpaSim's metrics field (cl.sim_metrics's "
    "metrics group)",
}


def _samples() -> list[str]:
    entries = (*SIGS, *CLOSED_LOOP, *MONITOR, *HITS, *BENIGN)
    return [line for e in entries for s in (*e.samples, *e.rendered) for line in s.split("\n")]


def _regexes(path: Path) -> list[tuple[str, str, int]]:
    """(name, pattern, flags) of each regex literal in ``path``: the name it is assigned to, else its function's."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for sub in ast.walk(node.value) if node.value is not None else ():
                names.setdefault(id(sub), next((t.id for t in targets if isinstance(t, ast.Name)), "?"))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(node):
                names.setdefault(id(sub), node.name)
    out = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in CALLS
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "re" and node.args
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            flags = 0
            for arg in [*node.args[1:], *(k.value for k in node.keywords if k.arg == "flags")]:
                for part in ast.walk(arg):
                    if isinstance(part, ast.Attribute) and isinstance(getattr(re, part.attr, None), re.RegexFlag):
                        flags |= getattr(re, part.attr)
            out.append((names.get(id(node), "?"), node.args[0].value, flags))
    return out


def test_no_module_outside_the_catalog_recognises_a_catalog_message() -> None:
    samples = _samples()
    found, used = [], set()
    for root in OUTSIDE:
        for path in sorted((REPO / root).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            for name, pattern, flags in _regexes(path):
                try:
                    regex = re.compile(pattern, flags)
                    regex_needles(pattern, flags & ~re.IGNORECASE)  # the text it requires, whatever its case
                except (re.error, ValueError):
                    continue  # requires no text: not a message shape
                hit = next((s for s in samples if regex.search(s)), None)
                if hit is None:
                    continue
                if (rel, name) in EXCEPTIONS:
                    used.add((rel, name))
                else:
                    found.append(f"{rel} {name}: {pattern!r} matches the catalog's sample {hit[:120]!r}")
    assert not found, "\n".join(found)
    assert used == set(EXCEPTIONS), f"exceptions that no longer apply: {sorted(set(EXCEPTIONS) - used)}"


def test_the_check_catches_a_message_shape_kept_outside(tmp_path: Path) -> None:
    """What the test above reads: a detector that kept 'Process N failed with return code' of its own."""
    module = tmp_path / "x.py"
    module.write_text('import re\n_FAILED = re.compile(r"Process (\\d+) failed with return code (-?\\d+)")\n')
    [(name, pattern, flags)] = _regexes(module)
    assert name == "_FAILED" and any(re.compile(pattern, flags).search(s) for s in _samples())
    assert regex_needles(pattern)[1]
