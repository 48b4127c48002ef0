"""What every recorded run, example and benchmark workload is judged to be, to hold a reader change to.

``record OUT.json [WORKLOAD_DIR ...]`` writes, for every run under ``tests/fixtures/cosmos`` (each
``<generation>/<name>`` folder and each recorded driver log), every ``tests/fixtures/real-runs`` run (its
folder, or its ``run.out`` where the launcher wrote no role log, and its ``run.out`` alone) and users' log,
every ``a1x_diagnostics/examples/<name>`` and each workload folder given (``benchmarks/check_scale.py DIR
--mix M --generate-only``), the ``--check`` report (findings with their evidence, outcome, checks,
metrics, files, notes; not ``generated_at``) as the reader gives it with Hyperscan and with its pure-Python
line search (workloads: Hyperscan only, the other takes minutes a gigabyte). ``compare A.json B.json``
prints every difference and exits 1 if there is one; a record of another version of this script is
compared reader by reader where both hold it. Verdicts do not move unless a change means them to.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PATHS = {"hyperscan": {}, "pure": {"A1X_PURE_READER": "1"}}
"""The reader's two line searches (``a1x_diagnostics/parsing/_scan.py``)."""

_ONE = """
import json, sys
from a1x_diagnostics.engine import check
out = {}
for target in sys.argv[1:]:
    report = check(target).model_dump(mode="json")
    report.pop("generated_at", None)
    out[target] = report
print(json.dumps(out, sort_keys=True))
"""


def targets() -> list[str]:
    fixtures = ROOT / "tests" / "fixtures"
    cosmos = fixtures / "cosmos"
    found = [p for gen in sorted(cosmos.iterdir()) if gen.is_dir() and gen.name != "recording"
             for p in sorted(gen.iterdir()) if p.is_dir()]
    found += sorted((cosmos / "recording").glob("*.log"))
    for run in sorted(p for p in fixtures.glob("real-runs/cosmos-rl-*/*") if p.is_dir()):
        found += [run, *sorted(run.glob("run.out"))]
    found += sorted(fixtures.glob("real-runs/users-logs/*.log"))
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
        if workloads and name == "hyperscan":
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
    if not set(left) & set(right):  # records of two versions of this script: the first reader of each
        left, right = {"reports": next(iter(left.values()))}, {"reports": next(iter(right.values()))}
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
