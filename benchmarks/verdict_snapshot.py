"""What every recorded run, example and benchmark workload is judged to be, to hold a reader change to.

``record OUT.json [WORKLOAD_DIR ...]`` writes, for every run under ``tests/fixtures/cosmos`` (each
``<generation>/<name>`` folder and each recorded driver log), every ``a1x_diagnostics/examples/<name>``
and each workload folder given (``benchmarks/check_scale.py DIR --mix M --generate-only``), the
``--check`` report (findings with their evidence, outcome, checks, metrics, files, notes; not
``generated_at``) as each reader gives it: the native reader, the grep prefilter, pure Python and the
native reader in ``--check``'s child process (workloads: all but pure Python, which takes minutes a
gigabyte). ``compare A.json B.json``
prints every difference and exits 1 if there is one. Issue 14: verdicts do not move.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PATHS = {"native": {}, "grep": {"A1X_NO_NATIVE": "1"}, "pure": {"A1X_NO_NATIVE": "1", "A1X_NO_GREP": "1"},
         "child": {"A1X_SNAPSHOT_CHILD": "1"}}
"""The readers: ``child`` is the native reader in ``a1x-tui --check``'s child process
(``a1x_diagnostics.reader_process``); a report whose read it did not give says why in ``child_declined``."""

_ONE = """
import json, os, sys
from a1x_diagnostics import reader_process
from a1x_diagnostics.engine import check
out = {}
for target in sys.argv[1:]:
    child = reader_process.start(target, None, None) if os.environ.get("A1X_SNAPSHOT_CHILD") else None
    report = check(target, reader=child.read_into if child else None).model_dump(mode="json")
    if os.environ.get("A1X_SNAPSHOT_CHILD"):
        if child is not None:
            child.close()
        if child is None or not child.taken:
            report["child_declined"] = "not started" if child is None else child.why or "not taken"
    report.pop("generated_at", None)
    out[target] = report
print(json.dumps(out, sort_keys=True))
"""


def targets() -> list[str]:
    cosmos = ROOT / "tests" / "fixtures" / "cosmos"
    found = [p for gen in sorted(cosmos.iterdir()) if gen.is_dir() and gen.name != "recording"
             for p in sorted(gen.iterdir()) if p.is_dir()]
    found += sorted((cosmos / "recording").glob("*.log"))
    found += sorted(p for p in (ROOT / "a1x_diagnostics" / "examples").iterdir() if p.is_dir() and p.name[0] != "_")
    return [str(p.relative_to(ROOT)) for p in found]


def _reports(paths: list[str], env: dict[str, str]) -> dict[str, Any]:
    full = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH")))),
                **env)
    proc = subprocess.run([sys.executable, "-c", _ONE, *paths], cwd=ROOT, env=full, capture_output=True, check=True)
    return json.loads(proc.stdout)


def record(out: Path, workloads: list[str]) -> None:
    snapshot: dict[str, Any] = {}
    for name, env in PATHS.items():
        snapshot[name] = _reports(targets(), env)
        if workloads and name != "pure":
            snapshot[name].update({f"workload:{Path(w).name}": r for w, r in _reports(workloads, env).items()})
    out.write_text(json.dumps(snapshot, indent=1, sort_keys=True) + "\n")
    n = sum(len(v) for v in snapshot.values())
    print(f"{out}: {n} reports ({len(targets())} runs x {len(PATHS)} readers, "
          f"{len(workloads)} workloads x {len(PATHS) - 1})")


def _diff(a: Any, b: Any, where: str, out: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            _diff(a.get(k, "<absent>"), b.get(k, "<absent>"), f"{where}.{k}", out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _diff(x, y, f"{where}[{i}]", out)
    elif a != b:
        out.append(f"{where}: {json.dumps(a)[:300]} -> {json.dumps(b)[:300]}")


def compare(a: Path, b: Path) -> int:
    left, right = json.loads(a.read_text()), json.loads(b.read_text())
    out: list[str] = []
    _diff(left, right, "", out)
    for line in out:
        print(line)
    n = sum(len(v) for v in right.values())
    print(f"{len(out)} difference(s) over {n} reports")
    return 1 if out else 0


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "record":
        record(Path(argv[1]), argv[2:])
        return 0
    if len(argv) == 3 and argv[0] == "compare":
        return compare(Path(argv[1]), Path(argv[2]))
    print(__doc__, file=sys.stderr)
    return 3


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
