"""The Slurm monitor's entries (a1x_diagnostics/signatures/launcher.py ``MONITOR``) are their samples' tests: each
sample, read as a line of ``slurm_<jobid>.log``, is of the entry's kind with every named group of its regex, named
by no earlier entry; where an entry cites our own sbatch script, the cited lines print its message."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from a1x_diagnostics.parsing import parse_monitor_log, regex_needles
from a1x_diagnostics.signatures.entry import Monitor, Sig
from a1x_diagnostics.signatures.launcher import MONITOR

REPO = Path(__file__).resolve().parents[2]
OURS = re.compile(r"a1x_supervisor/slurm/sbatch\.py:(\d+)((?:, :\d+)*)")


@pytest.mark.parametrize("sig", MONITOR, ids=lambda s: s.id)
def test_each_sample_is_a_monitor_line_of_its_entry_s_kind(sig: Sig) -> None:
    assert isinstance(sig.event, Monitor) and (sig.samples or sig.rendered), sig.id
    for sample in (*sig.samples, *sig.rendered):
        [line] = parse_monitor_log(sample)
        assert line.kind == sig.event.value, (sig.id, sample, line.kind)
        assert set(line.data) == set(re.compile(sig.pattern).groupindex), (sig.id, line.data)
        first = next(s for s in MONITOR if re.search(s.pattern, line.msg, s.flags))
        assert first is sig, f"{sig.id}: {sample!r} is taken by {first.id}"


@pytest.mark.parametrize("sig", [s for s in MONITOR if OURS.search(s.source)], ids=lambda s: s.id)
def test_our_sbatch_script_prints_the_message_where_the_entry_says(sig: Sig) -> None:
    m = OURS.search(sig.source)
    assert m is not None
    lines = (REPO / "a1x_supervisor" / "slurm" / "sbatch.py").read_text(encoding="utf-8").splitlines()
    cited = [int(m[1]), *(int(n) for n in re.findall(r"\d+", m[2]))]
    needles = regex_needles(sig.pattern, sig.flags)[1]  # what every line the regex reads holds
    assert all(len(n) > 5 for n in needles), needles
    assert any(n in lines[k - 1] for n in needles for k in cited), (sig.id, needles, [lines[k - 1] for k in cited])
