"""The scanner finds exactly the lines holding one of its strings, with Hyperscan and with ``bytes.find``.

``Scanner.starts`` is the one contract of ``a1x_diagnostics/parsing/_scan.py``: the offsets of the line
starts of a block that hold a string. Both engines are held to the plain definition (``any(s in line)``)
on random blocks, arbitrary text, every recorded log and a run's markers.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from a1x_diagnostics.parsing import ALL_MARKERS, GATED_MARKERS, Scanner
from a1x_diagnostics.parsing import _scan as scan_module
from a1x_diagnostics.parsing._scan import minimal

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ENGINES = ["python", *(["hyperscan"] if scan_module.HYPERSCAN else [])]


def _scanner(strings: tuple[str, ...], engine: str, monkeypatch: pytest.MonkeyPatch) -> Scanner:
    if engine == "python":
        monkeypatch.setattr(scan_module, "HYPERSCAN", False)
    else:
        monkeypatch.setattr(scan_module, "ENGINE_FROM", 0)  # every block, however small
    return Scanner(strings)


def _plain(block: bytes, strings: tuple[str, ...]) -> list[int]:
    out, pos = [], 0
    wanted = [s.encode() for s in strings]
    for line in block.split(b"\n"):
        if any(s in line for s in wanted):
            out.append(pos)
        pos += len(line) + 1
    return out


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("markers", [GATED_MARKERS, ALL_MARKERS], ids=["gated", "all"])
def test_random_blocks_give_the_lines_a_plain_search_gives(engine: str, markers: tuple[str, ...],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    scanner = _scanner(markers, engine, monkeypatch)
    rng = random.Random(3)
    pieces = [*markers, "INFO - [Rollout] noise ", "x" * 40, "é", "\r", " ", "ERRO", "Traceback (most"]
    for _ in range(300):
        lines = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 6))) for _ in range(rng.randint(1, 30))]
        block = "\n".join(lines).encode() + (b"\n" if rng.random() < 0.5 else b"")
        assert scanner.starts(block) == _plain(block, markers), lines


@pytest.mark.parametrize("engine", ENGINES)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.text(alphabet=st.sampled_from(list("ERO:abc \r[]-é")), max_size=12), max_size=20))
def test_arbitrary_text_never_disagrees(engine: str, lines: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    strings = ("ERROR", "a:b", "é[", "[]")
    block = "\n".join(lines).encode()
    assert _scanner(strings, engine, monkeypatch).starts(block) == _plain(block, strings)


@pytest.mark.parametrize("engine", ENGINES)
def test_recorded_logs_give_the_same_lines(engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    scanner = _scanner(GATED_MARKERS, engine, monkeypatch)
    n = 0
    for path in sorted(FIXTURES.rglob("*.log")):
        block = path.read_bytes()
        found = scanner.starts(block)
        assert found == _plain(block, GATED_MARKERS), path
        n += len(found)
    assert n > 1000


def test_strings_held_in_another_are_not_looked_for() -> None:
    assert minimal(("ERROR", "ERROR - ", "wandb: ERROR", "Error:", "x")) == (b"x", b"ERROR", b"Error:")


def test_line_indices_of_decoded_lines() -> None:
    scanner = Scanner(("needle",))
    assert scanner.lines(["a", "a needle", "", "é needle", "b"]) == [1, 3]


@pytest.mark.skipif(not scan_module.HYPERSCAN, reason="Hyperscan is not installed here")
def test_one_scanner_searched_from_several_threads_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scanner is shared (``scanner_for``): a live follower's thread and a ``check`` in another search
    with it at the same moment. Hyperscan's scratch space is one scan's at a time; each thread has its own."""
    import threading

    scanner = _scanner(("needle", "other"), "hyperscan", monkeypatch)
    block = (b"x" * 200 + b"\n" + b"a needle here\n") * 20_000
    want = _plain(block, ("needle", "other"))
    failures: list[BaseException] = []

    def search() -> None:
        try:
            for _ in range(20):
                assert scanner.starts(block) == want
        except BaseException as exc:  # reported below, in the test's thread
            failures.append(exc)

    threads = [threading.Thread(target=search) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
