"""Every catalog entry says where its message comes from (issue 35 point 1): its ``source`` begins with
the upstream file that prints it, ``repo@rev:path[:line]`` (``org/repo`` or, as the controller's and the
replicas' entries write Cosmos-RL, ``cosmos-rl``), or with the public issue the message was seen in,
``org/repo#N``, where no source file prints it (a server's text, a metric only a user's log shows).
A docs section alone, or a repository without a revision, is not a source. The few entries that
this project prints itself are listed in ``OWN`` with the reason, and must cite a file of this tree.
"""

from __future__ import annotations

import re
from pathlib import Path

from a1x_diagnostics.signatures import GROUPS, Benign, Hit, Sig

ROOT = Path(__file__).resolve().parents[2]

# 'repo@rev:path/file.ext[:line]' or 'org/repo#N', at the start of the source.
ORIGIN = re.compile(r"(?:[\w.-]+/)?[\w.-]+@[\w.-]+:[\w./+-]*\w\.\w+(?::\d+)?\b|[\w.-]+/[\w.-]+#\d+\b")

OWN = {
    "monitor.resume": "printed by this project's own Slurm monitor (a1x_supervisor/slurm/sbatch.py): "
                      "Cosmos-RL's job template resumes nothing itself",
    "monitor.resume_skipped": "printed by this project's own Slurm monitor (a1x_supervisor/slurm/sbatch.py) "
                              "when it refuses an incomplete checkpoint",
}
"""Entries with no upstream origin, and why."""


def _entries() -> list[Sig | Hit | Benign]:
    seen: dict[int, Sig | Hit | Benign] = {}
    for module in GROUPS.values():
        for value in vars(module).values():
            if isinstance(value, tuple):
                for entry in value:
                    if isinstance(entry, (Sig, Hit, Benign)):
                        seen.setdefault(id(entry), entry)
    return list(seen.values())


def test_every_entry_names_its_origin() -> None:
    entries = _entries()
    assert len(entries) > 300  # every group's tuples, the monitor's and the closed loop's included
    missing = [f"{e.id}: {e.source}" for e in entries if e.id not in OWN and not ORIGIN.match(e.source)]
    assert not missing, "sources without repo@rev:path or org/repo#N:\n" + "\n".join(missing)


def test_own_exceptions_cite_a_file_of_this_tree() -> None:
    by_id = {e.id: e for e in _entries()}
    for entry_id in OWN:
        assert entry_id in by_id, f"{entry_id}: no such entry, drop it from OWN"
        m = re.match(r"([\w./-]+\.py):(\d+)\b", by_id[entry_id].source)
        assert m, f"{entry_id}: {by_id[entry_id].source}"
        path = ROOT / m[1]
        assert path.is_file(), m[1]
        assert int(m[2]) <= len(path.read_text(encoding="utf-8").splitlines()), m[0]


def test_the_rule_refuses_docs_only_and_revisionless_sources() -> None:
    for bad in ("docs/reference/cosmos-rl.md §4.3", "GNU bash job report (docs/reference/foreign-errors.md E5)",
                "wandb/wandb:wandb/errors (exception classes)", "SchedMD/slurm:src/slurmd/slurmstepd",
                "ray-project/ray@2.40.0:src/ray/raylet (memory monitor)", "(terminal hard wrap)"):
        assert not ORIGIN.match(bad), bad
    for good in ("nvidia-cosmos/cosmos-rl@v0.4.4:cosmos_rl/dispatcher/controller.py:390 (docs §4.3)",
                 "cosmos-rl@89f2e5b5:status.py:1806 (docs/reference/cosmos-rl.md §14)",
                 "gcc-mirror/gcc@1676372:libstdc++-v3/libsupc++/vterminate.cc:67",
                 "huggingface/huggingface_hub#3342 (seen there)"):
        assert ORIGIN.match(good), good
