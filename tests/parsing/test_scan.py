"""``MarkerScanner`` finds exactly the lines holding a marker, with the C automaton and without it.

The live follower parses only these lines, so a line missed here is an event missed live. Both
implementations are held to the plain definition (``any(marker in line)``) on random blocks built
from marker pieces (overlapping markers, markers across line ends, ``\\r``, non-ASCII text) and on
every line of the recorded Cosmos-RL logs.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import a1x_diagnostics.parsing._scan as scan_module
from a1x_diagnostics.parsing import ALL_MARKERS, GATED_MARKERS, MarkerScanner
from a1x_diagnostics.parsing._scan import find_lines, search_plan

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "cosmos"
MARKER_SETS = {"gated": GATED_MARKERS, "all": ALL_MARKERS}


def _plain(lines: list[str], markers: tuple[str, ...]) -> list[int]:
    return [i for i, line in enumerate(lines) if any(m in line for m in markers)]


def _implementations(markers: tuple[str, ...]) -> dict[str, object]:
    out: dict[str, object] = {"find": lambda lines: find_lines("\n".join(lines), markers)}
    if scan_module.NATIVE:
        from a1x_diagnostics._scan import chunk, lines

        automaton = scan_module._automaton(markers)
        no_teddy = (*automaton[:5], b"", *automaton[6:])

        def by_chunk(block: list[str], simd: int) -> list[int]:
            data = "\n".join(block).encode("utf-8", "surrogatepass")
            items, _ = chunk(data, *automaton, (), 1, 0, 1 << 30, lambda *t: None, simd, (), b"")
            return [item[0] - 1 for item in items]

        out["native"] = MarkerScanner(markers).lines
        out["native, one position at a time"] = lambda block: lines("\n".join(block), *no_teddy)
        no_runs = (*automaton[:9], b"")  # the automaton one byte at a time, no run compared at once
        out["native, no runs"] = lambda block: lines("\n".join(block), *no_runs)
        out["chunk, 32 positions at a time"] = lambda block: by_chunk(block, 2)
        out["chunk, 16 positions at a time"] = lambda block: by_chunk(block, 1)
        out["chunk, one position at a time"] = lambda block: by_chunk(block, 0)
    return out


@pytest.mark.parametrize("name", list(MARKER_SETS))
def test_random_blocks_give_the_lines_a_plain_search_gives(name: str) -> None:
    markers = MARKER_SETS[name]
    assert any(members for _, members in search_plan(markers))  # the fallback groups some markers
    rng = random.Random(7)
    pieces = [*markers, "INFO - ", "INFO - [Ro", "INFO", " - ", "x", "[Rollout] batch 3", "\r", "é", "日本", "\x00"]
    pieces += [m[: len(m) // 2] for m in markers] + [m[len(m) // 2 :] for m in markers]  # halves meet across lines
    impls = _implementations(markers)
    for _ in range(3000):
        lines = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 4))) for _ in range(rng.randint(0, 9))]
        expected = _plain(lines, markers)
        for label, impl in impls.items():
            assert impl(lines) == expected, (label, lines)  # type: ignore[operator]


def _confirmed(lines: list[str], markers: tuple[str, ...], confirm: scan_module.Confirm) -> list[int]:
    """The lines holding a marker outside ``confirm[0]``, or one of those with one of its keys
    (``confirm[2]``: the longest string of each rule logged under it) and every string of a group of
    ``confirm[1]``. (No confirmed marker is inside another marker, so each is found where it starts.)"""
    confirmed, groups, gate_keys = confirm
    keys = dict(gate_keys)
    return [i for i, line in enumerate(lines)
            if any(m in line for m in markers if m not in confirmed)
            or (any(m in line and any(k in line for k in keys[m]) for m in confirmed)
                and any(all(x in line for x in g) for g in groups))]


def test_a_gate_marker_takes_a_line_only_with_every_string_of_one_of_its_rules() -> None:
    """In C, ``INFO - [Policy] `` (on most lines of a policy log) counts only on a line that also holds every
    string the regex of one rule logged under a gate requires; the level gates, group starts and error
    words always count."""
    if not scan_module.NATIVE:
        pytest.skip("the C scanner is not built in this install")
    from a1x_diagnostics._scan import chunk
    from a1x_diagnostics._scan import lines as native_lines
    from a1x_diagnostics.events import Role, Source
    from a1x_diagnostics.parsing import confirm_for

    confirm = confirm_for(Source(path="policy_0.log", role=Role.POLICY, index=0))
    assert confirm is not None and "INFO - [Policy] " in confirm[0]
    assert ("Saving cosmos checkpoint at step ",) in confirm[1]
    assert any(len(g) > 2 for g in confirm[1])
    markers = GATED_MARKERS
    automaton = scan_module._automaton(markers, *confirm)
    scanner = MarkerScanner(markers, confirm)
    rng = random.Random(5)
    strings = sorted({x for g in confirm[1] for x in g})
    pieces = [*markers, *strings[:60], *(" ".join(g) for g in confirm[1][:40]), "INFO - [Policy] ", "x", " - ", "é",
              "\r"]
    pieces += [x[: len(x) // 2] for x in strings] + [" ".join(g[1:]) for g in confirm[1] if len(g) > 1]
    for _ in range(3000):
        block = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 4))) for _ in range(rng.randint(0, 30))]
        expected = _confirmed(block, markers, confirm)
        text = "\n".join(block)
        assert scanner.text(text) == expected, block
        assert native_lines(text, *automaton[:5], b"", *automaton[6:]) == expected, block
        assert native_lines(text, *automaton[:9], b"") == expected, block
        for simd in (2, 1, 0):  # the prefilter 32 and 16 positions at a time (where the CPU has it), none
            data = text.encode("utf-8", "surrogatepass")
            items, _ = chunk(data, *automaton, (), 1, 0, 1 << 30, lambda *t: None, simd, (), b"")
            assert [item[0] - 1 for item in items] == expected, block
    assert not any(a in b for a in confirm[0] for b in markers if a != b)  # what _confirmed assumes
    noise = "[rank3]:[cosmos] 2025-06-09 12:00:00,000 - cosmos - INFO - [Policy] Optimizer step 12 done: loss 0.1"
    saving = "[cosmos] 2025-06-09 12:00:00,000 - cosmos - INFO - [Policy] Saving cosmos checkpoint at step 10"
    # One word of a rule is not enough: the send rule's regex also requires "All ", " at step ", " finished in ".
    request = ("[rank5]:[cosmos] 2025-06-09 03:47:57,077 - cosmos - INFO - [Policy] Received weight sync request for "
               "step 77 from controller, preparing send operations")
    assert scanner.lines([noise, saving, noise.replace("INFO", "WARNING"), request]) == [1, 2]
    # A [Policy] line holding the whole of a rule logged under [Controller] only: none of [Policy]'s keys.
    stat = ("[cosmos] 2025-06-09 12:00:00,000 - cosmos - INFO - [Policy] [Controller] Stat: 3 samples, 4 completion "
            "tokens, 5 pending rollouts, 1.5 seconds elapsed")
    assert native_lines(stat, *automaton) == [] and native_lines(stat.replace("[Policy]", "[Controller]"),
                                                                     *automaton) == [0]


@pytest.mark.parametrize("name", list(MARKER_SETS))
def test_long_blocks_give_the_lines_a_plain_search_gives(name: str) -> None:
    """Blocks long enough for the 16-position prefilter, markers at every alignment."""
    markers = MARKER_SETS[name]
    rng = random.Random(11)
    noise = ["[cosmos] 2025-06-09 12:00:00,000 - cosmos - DEBUG - [Rollout main_loop 1.0s] rank=0", "INFO - [Ro",
             "x" * 17, "CRITICA", "é日本", "\r", "Tra", "[Alpam"]
    impls = _implementations(markers)
    for _ in range(300):
        lines = []
        for _ in range(rng.randint(1, 60)):
            parts = [rng.choice(noise)[: rng.randint(0, 40)] for _ in range(rng.randint(0, 3))]
            if rng.random() < 0.2:
                parts.insert(rng.randint(0, len(parts)), rng.choice(markers))
            lines.append("".join(parts))
        expected = _plain(lines, markers)
        for label, impl in impls.items():
            assert impl(lines) == expected, (label, lines)  # type: ignore[operator]


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.text(alphabet=st.sampled_from(list("INFOWARGCLTe -[]:()\r\né日")), max_size=60), max_size=12))
def test_arbitrary_text_never_disagrees(lines: list[str]) -> None:
    lines = [line.replace("\n", "") for line in lines]  # a block's lines hold no newline
    markers = ("INFO - [", "ERROR - ", "WARNING - ", "e日", "Traceback (", "-[", "CL", "ARN")
    expected = _plain(lines, markers)
    for label, impl in _implementations(markers).items():
        assert impl(lines) == expected, label  # type: ignore[operator]


def test_recorded_logs_give_the_same_lines() -> None:
    files = sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix in {".log", ".out", ".err"})
    assert len(files) > 50
    for path in files:
        lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
        for markers in MARKER_SETS.values():
            expected = _plain(lines, markers)
            for label, impl in _implementations(markers).items():
                assert impl(lines) == expected, (label, path)  # type: ignore[operator]


def test_bytes_and_non_latin1_text_are_read_as_utf8() -> None:
    if not scan_module.NATIVE:
        pytest.skip("the C scanner is not built in this install")
    scanner = MarkerScanner(("WARNING - ",))
    text = "日本 - WARNING - x\nplain\n€ WARNING - y"
    assert scanner.text(text) == [0, 2]
    from a1x_diagnostics._scan import lines as native_lines

    assert native_lines(text.encode(), *scan_module._automaton(("WARNING - ",))) == [0, 2]


def test_a_corrupt_automaton_is_refused_not_read_past() -> None:
    if not scan_module.NATIVE:
        pytest.skip("the C scanner is not built in this install")
    from a1x_diagnostics._scan import lines as native_lines

    classes, table, accept, width, pairs, teddy, root, ends, groups, runs = scan_module._automaton(("abc",))
    bad = bytes([0xFF, 0xFF]) * (len(table) // 2)  # every next state out of range
    with pytest.raises(ValueError, match="out of range"):
        native_lines("xabcy", classes, bad, accept, width, pairs, teddy, root, ends, groups, runs)
    # Tables checked once are remembered by their objects: a buffer that can change is checked each time.
    mutable = bytearray(classes)
    assert native_lines("xabcy", mutable, table, accept, width, pairs, teddy, root, ends, groups, runs) == [0]
    mutable[:] = bytes([255]) * 256
    with pytest.raises(ValueError, match="byte class out of range"):
        native_lines("xabcy", mutable, table, accept, width, pairs, teddy, root, ends, groups, runs)
    with pytest.raises(ValueError, match="inconsistent"):
        native_lines("xabcy", classes[:10], table, accept, width, pairs, teddy, root, ends, groups, runs)
    with pytest.raises(ValueError, match="inconsistent"):
        native_lines("xabcy", classes, b"", b"", width, pairs, teddy, root, ends, groups, runs)  # no state at all
    with pytest.raises(ValueError, match="byte class out of range"):
        native_lines("xabcy", bytes([255]) * 256, table, accept, width, pairs, teddy, root, ends, groups, runs)
    with pytest.raises(ValueError, match="needle root out of range"):
        native_lines("xabcy", classes, table, accept, width, pairs, teddy, len(accept), ends, groups, runs)
    gated = scan_module._automaton(("abc", "xy"), frozenset({"xy"}), (("abd", "ghi"),))
    assert native_lines("xy abd ghi\nxy abd\nabc", *gated) == [0, 2]
    with pytest.raises(ValueError, match="needle ends"):
        native_lines("xy", *gated[:7], gated[7][:-1], *gated[8:])
    with pytest.raises(ValueError, match="needle groups"):
        native_lines("xy", *gated[:8], gated[8][:-1], gated[9])
    keys = 8 * (len(gated[7]) // (len(gated[2]) - gated[6]))  # a bit per string of a needle state's set
    one = bytes(4) + (3).to_bytes(4, "little") * keys  # the groups of string 0: 3 bytes
    with pytest.raises(ValueError, match="needle index out of range"):
        native_lines("xy", *gated[:8], one + bytes([1, 0xFF, 0xFF]), gated[9])
    with pytest.raises(ValueError, match="needle groups"):
        native_lines("xy", *gated[:8], one + bytes([1, 0]), gated[9])  # shorter than its offsets say
    with pytest.raises(ValueError, match="needle groups"):
        native_lines("xy", *gated[:8], gated[8][: 4 * keys], gated[9])  # not even the offsets
    keyed = scan_module._automaton(("abc", "xy"), frozenset({"xy"}), (("abd", "ghi"),), (("xy", ("ghi",)),))
    assert native_lines("xy abd ghi\nxy abd\nabc\nxy ghi", *keyed) == [0, 2]
    assert keyed[8].endswith(b"\x03\x00\x00\x00ghi") and 3 in keyed[2]  # one set (anchor "g"), its state 3 + 0
    for cut in (1, 4, 11):
        with pytest.raises(ValueError, match="key sets"):
            native_lines("xy", *keyed[:8], keyed[8][:-cut], keyed[9])
    with pytest.raises(ValueError, match="key set out of range"):
        native_lines("xy", keyed[0], keyed[1], keyed[2].replace(b"\x03", b"\x04"), *keyed[3:])
    # The runs compared at once (a state's 8 bytes: length, 0, state after, offset in the pool).
    chained = scan_module._automaton(("INFO - [Policy] ", "INFO - Step: "))
    head = 8 * len(chained[2])
    assert len(chained[9]) > head and any(chained[9][i] for i in range(0, head, 8))
    assert native_lines("a INFO - [Policy] x\nINFO - [Pol\nINFO - Step: 3", *chained) == [0, 2]
    with pytest.raises(ValueError, match="runs"):
        native_lines("x", *chained[:9], chained[9][: head - 1])  # not a head for every state
    state = next(i for i in range(0, head, 8) if chained[9][i])
    for bad in (bytes([255, 0, 0, 0]) + bytes(4),  # longer than the pool holds
                bytes([2, 0, 0xFF, 0xFF]) + bytes(4)):  # the state after it out of range
        broken = chained[9][:state] + bad + chained[9][state + 8 :]
        with pytest.raises(ValueError, match="runs"):
            native_lines("x", *chained[:9], broken)


def _runs_by_walking(trie: list[dict[int, int]], accept: bytearray, alphabet: list[int],
                     ) -> dict[int, tuple[int, bytes]]:
    """The runs' definition: from each state, the bytes while it has one edge on and no marker ends."""
    out = {}
    for state in range(1, len(trie)):
        run, at = bytearray(), state
        while not accept[at] and len(trie[at]) == 1 and len(run) < 255:
            ((cls, at),) = trie[at].items()
            run.append(alphabet[cls - 1])
        if len(run) >= scan_module.MIN_RUN:
            out[state] = (at, bytes(run))
    return out


@pytest.mark.parametrize("name", [*MARKER_SETS, "long and shared"])
def test_the_runs_are_what_walking_from_each_state_gives(name: str) -> None:
    """``_chains`` stores each chain once and walks it once; every state still gets its own run."""
    markers = MARKER_SETS.get(name) or ("x" * 600, "x" * 300 + "yz", "abcdef", "abcxyz", "ab", "q" * 256)
    patterns = [m.encode() for m in dict.fromkeys(markers)]
    alphabet = sorted({b for p in patterns for b in p})
    classes = bytearray(256)
    for i, b in enumerate(alphabet, 1):
        classes[b] = i
    _, accept, _, trie = scan_module._dfa(patterns, [1] * len(patterns), bytes(classes), len(alphabet) + 1)
    runs = scan_module._chains(trie, accept, alphabet)
    pool = runs[8 * len(accept):]
    got = {}
    for state in range(len(accept)):
        entry = runs[8 * state : 8 * state + 8]
        if entry[0]:
            at = int.from_bytes(entry[4:], "little")
            got[state] = (int.from_bytes(entry[2:4], "little"), pool[at : at + entry[0]])
    assert got == _runs_by_walking(trie, accept, alphabet) and got
    if scan_module.NATIVE and name == "long and shared":
        block = ["x" * 599, "x" * 601, "x" * 300 + "yz", "x" * 300 + "y", "acxy", "abcxyz"]
        assert MarkerScanner(markers).lines(block) == [1, 2, 5]


def test_a_marker_with_any_one_byte_changed_is_not_found() -> None:
    """Runs of every length are compared at once (C ``same_bytes``: word loads, overlapping at the end): a
    marker of n bytes with byte i changed, for every n and i, is not found; the marker itself is, at every
    alignment, and not without its last byte."""
    letters = "abcdefghijklmnopqrstuvwxyz0123456789"
    markers = tuple(f"<{letters[:n]}>" for n in range(1, 37))
    impls = _implementations(markers)
    for marker in markers:
        block = [" " * pad + marker for pad in range(9)]
        for i in range(len(marker)):
            changed = marker[:i] + "#" + marker[i + 1 :]
            block.append(changed + " " + changed[: len(changed) // 2])
        block.append(marker[:-1])
        want = list(range(9))
        assert _plain(block, markers) == want
        for name, impl in impls.items():
            assert impl(block) == want, (name, marker)  # type: ignore[operator]


def test_a_gate_key_is_found_at_every_place_in_lines_of_every_length() -> None:
    """A key set of ``TABLE_KEYS`` keys or more is searched in one pass over the line (C: 32 bytes at a time,
    the pair of the anchor and the byte after it, the line's last 32 bytes again for its end; one byte at a
    time below AVX2): every key at every offset of lines of 1 to 90 bytes, and the same lines with the key
    cut short, give what the plain definition and a search without the table give."""
    if not scan_module.NATIVE:
        pytest.skip("the C scanner is not built in this install")
    from a1x_diagnostics._scan import chunk
    from a1x_diagnostics._scan import lines as native_lines

    keys = ("Alpha", "bRAVO", "charlie!", "xyz!", "q", "delta-x")  # '!': anchored on the last byte
    groups = tuple((k,) for k in keys)
    confirm = (frozenset({"GATE "}), groups, (("GATE ", keys),))
    markers = ("GATE ", "PLAIN")
    automaton = scan_module._automaton.__wrapped__(markers, *confirm)
    set_bytes = automaton[8]
    assert b"\x01" in set_bytes  # the set has its table
    plain_scan = scan_module._automaton.__wrapped__
    original = scan_module.TABLE_KEYS
    scan_module.TABLE_KEYS = 99
    try:
        no_table = plain_scan(markers, *confirm)
    finally:
        scan_module.TABLE_KEYS = original
    assert no_table[8] != set_bytes
    for length in range(1, 91):
        block = []
        for key in keys:
            for at in range(0, max(1, length - len(key) + 1)):
                filler = ("GATE " + "ab-Cd_ef " * 12)[:length]
                line = (filler[:at] + key + filler[at + len(key):])[:length]
                block += [line, line.replace(key, key[:-1] + "#") if len(key) > 1 else line.replace(key, "#")]
        expected = [i for i, line in enumerate(block)
                    if "PLAIN" in line or ("GATE " in line and any(k in line for k in keys))]
        text = "\n".join(block)
        assert native_lines(text, *automaton) == expected, length
        assert native_lines(text, *no_table) == expected, length
        for simd in (2, 1, 0):
            items, _ = chunk(text.encode(), *automaton, (), 1, 0, 1 << 30, lambda *t: None, simd, (), b"")
            assert [item[0] - 1 for item in items] == expected, (length, simd)
    # A table that does not say what its keys give is refused, not followed.
    groups_bytes = automaton[8]
    i = groups_bytes.index(scan_module._key_set(tuple(sorted(k.encode() for k in keys))))  # its flag, masks, table
    for offset in (1, 1 + 64 + 2 * ord("A")):
        bad = bytearray(groups_bytes)
        bad[i + offset] ^= 0x40
        with pytest.raises(ValueError, match="key sets"):
            native_lines("GATE Alpha", *automaton[:8], bytes(bad), automaton[9])


def test_the_prefilter_passes_every_marker_start_in_four_bytes_and_its_mixtures_it_drops() -> None:
    """The teddy masks look at four bytes and, where every marker has four, a hash of them (``quads``):
    each marker is found at every place in a line, a marker of three bytes too (its fourth mask passes any
    byte), and a mixture of one bucket's markers (``date`` from ``deat``, ``fail``, ``out ``, ``more``) is
    not a line; the bitmap holds exactly the markers' hashes."""
    four = ("deat", "fail", "out of", "more", "[c10d]", "INFO - ")
    masks = scan_module.teddy_masks([m.encode() for m in four])
    assert len(masks) == 128 + scan_module.QUAD_BITS // 8
    bits = {i * 8 + b for i, byte in enumerate(masks[128:]) for b in range(8) if byte >> b & 1}
    assert bits == {scan_module.quad_hash(m.encode()[:4]) for m in four}
    short = scan_module.teddy_masks([b"abc", b"defg"])
    assert len(short) == 128 and short[96:] == b"\xff" * 32  # no quads; byte 3: any byte
    for markers in (four, ("abc", "defg", "hij")):
        impls = _implementations(markers)
        block = [pad * "x" + m + tail for m in markers for pad in range(40) for tail in ("", "\r", " z")]
        block += ["date outd fore mate ward", "deaf faiL ou of mor", "ab", "abd defx"]
        want = _plain(block, markers)
        assert want == list(range(len(block) - 4))
        for name, impl in impls.items():
            assert impl(block) == want, (name, markers)  # type: ignore[operator]
