"""Which lines of a block hold one of the parser's markers: one pass of a compiled automaton.

The live follower parses only the lines holding a marker (``_markers``), so finding them is paid
for every line a run writes. ``MarkerScanner.lines`` runs an Aho-Corasick automaton over the
block's bytes in C (``a1x_diagnostics._scan``, built at install when a C compiler is there): one table
step per byte, whatever the number of markers. Without the extension it falls back to one
``str.find`` scan per group of markers (``find_lines``), which finds exactly the same lines;
``tests/parsing/test_scan.py`` holds the two to each other. Measured in ``docs/live.md``.
"""

from __future__ import annotations

import functools
import os
from array import array
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

EXTENSION_ABI = 11
"""The calling convention of ``a1x_diagnostics._scan`` this code speaks; an extension built from older
sources (a stale build in a source tree) is not used rather than called wrongly."""

_native: Callable[[str | bytes, bytes, bytes, bytes, int, bytes, bytes, int, bytes, bytes, bytes], list[int]] | None
_native_chunk: Callable[..., tuple[list[Any], int]] | None
try:  # the optional C extension (setup.py); A1X_NO_NATIVE=1 forces the fallback
    from a1x_diagnostics import _scan as _extension

    if getattr(_extension, "ABI", 1) != EXTENSION_ABI:
        raise ImportError("a1x_diagnostics._scan was built from other sources")
    _native = _extension.lines
    _native_chunk = _extension.chunk
except ImportError:  # pragma: no cover - depends on the install
    _native = _native_chunk = None
if os.environ.get("A1X_NO_NATIVE"):
    _native = _native_chunk = None

NATIVE = _native is not None
"""Whether the C scanner is in use."""

Plan = tuple[tuple[str, tuple[str, ...] | None], ...]
"""How ``find_lines`` looks for markers: (string searched, the markers starting with it, or None
when the string is the marker itself)."""


@functools.lru_cache(maxsize=16)
def search_plan(markers: tuple[str, ...]) -> Plan:
    """One search per group of markers sharing a head of at least 7 characters (the five
    ``INFO - …`` gates share ``INFO - ``): each occurrence of the shared head is checked with one
    ``startswith``. Every occurrence of a marker starts with an occurrence of its group's head, so
    the lines found are exactly those holding a marker."""
    groups: dict[str, list[str]] = {}
    for marker in dict.fromkeys(markers):
        groups.setdefault(marker[:7], []).append(marker)
    plan: list[tuple[str, tuple[str, ...] | None]] = []
    for members in groups.values():
        head = os.path.commonprefix(members)  # noqa: RUF071 (character prefix of strings, as wanted)
        plan.append((head, None) if len(members) == 1 or head in members else (head, tuple(members)))
    return tuple(plan)


def find_lines(text: str, markers: tuple[str, ...]) -> list[int]:
    """Indices of the ``\\n``-separated lines of ``text`` holding a marker, with ``str.find`` scans
    (one per group of ``search_plan``); each occurrence is located by counting the newlines before
    it. The fallback of ``MarkerScanner``."""
    hits: set[int] = set()
    for key, members in search_plan(markers):
        at = text.find(key)
        index = 0
        counted = 0
        while at >= 0:
            if members is not None and not text.startswith(members, at):
                at = text.find(key, at + 1)  # the head without any of its markers
                continue
            index += text.count("\n", counted, at)
            counted = at
            hits.add(index)
            end = text.find("\n", at)
            if end < 0:
                break
            at = text.find(key, end)
    return sorted(hits)


def start_pairs(patterns: list[bytes]) -> bytes:
    """``pairs[a << 8 | b]`` non-zero where a pattern starts with the bytes ``a, b`` (every ``b``
    after the first byte of a one-byte pattern), and at every pair starting with the newline."""
    table = bytearray(65536)
    table[10 << 8 : 11 << 8] = b"\x01" * 256
    for raw in patterns:
        if len(raw) >= 2:
            table[raw[0] << 8 | raw[1]] = 1
        elif raw:
            table[raw[0] << 8 : (raw[0] + 1) << 8] = b"\x01" * 256
    return bytes(table)


QUAD_BITS = 1 << 16
"""The quads' bitmap after the teddy masks: a bit per 16-bit hash of four bytes (``quad_hash``)."""


def quad_hash(four: bytes) -> int:
    """The bit of ``four`` (a marker's first four bytes) in the quads' bitmap: the top 16 bits of their
    little-endian value times 2654435761, modulo 2**32 (``quad_hash`` in ``a1x_diagnostics/_scan.c``)."""
    return (int.from_bytes(four, "little") * 2654435761 & 0xFFFFFFFF) >> 16


def teddy_masks(patterns: list[bytes]) -> bytes:
    """The SIMD prefilter's tables (``a1x_diagnostics/_scan.c``), or b"" if a pattern is shorter than
    three bytes: for bytes 0 to 3 of a pattern, a low-nibble and a high-nibble table of 16 bucket
    masks (128 bytes; byte 3's pass every byte where a pattern has only three). A position passes
    when, for each of the four bytes there, both nibbles' masks share the bucket of one pattern;
    every position a pattern starts at passes. Patterns are sorted into 8 buckets by their first
    bytes, so that a bucket's nibble sets stay small.

    Where every pattern has four bytes, the quads' bitmap follows (``QUAD_BITS`` bits): a position
    that passes the masks and the start pairs is walked only if the hash of its four bytes is one of
    the patterns'. Three bytes' masks alone passed ~4.5 positions a line, each a lookup and half of
    them a walk of the automaton (docs/parsing.md, "Eighth pass")."""
    if not patterns or any(len(p) < 3 for p in patterns):
        return b""
    four = all(len(p) >= 4 for p in patterns)
    heads = sorted({p[:4] if four else p[:3] for p in patterns})
    masks = bytearray(96) + (bytes(32) if four else b"\xff" * 32)  # byte 3: any byte without four
    for i, head in enumerate(heads):
        bit = 1 << (i * 8 // len(heads))
        for k in range(len(head)):
            masks[32 * k + (head[k] & 15)] |= bit
            masks[32 * k + 16 + (head[k] >> 4)] |= bit
    if not four:
        return bytes(masks)
    quads = bytearray(QUAD_BITS // 8)
    for p in patterns:
        h = quad_hash(p[:4])
        quads[h >> 3] |= 1 << (h & 7)
    return bytes(masks + quads)


def _dfa(patterns: list[bytes], kinds: list[int], classes: bytes,
         width: int, base: int = 0) -> tuple[array[int], bytearray, list[int], list[dict[int, int]]]:
    """The Aho-Corasick DFA of ``patterns``: its transition rows (state 0 the start), accepting
    states (the kind of the pattern ending there; where several end, the lowest kind) and, for each
    state, the patterns ending there (bit i: ``patterns[i]``, also where it ends inside a longer one).
    ``base``: the number of its first state in a table it is appended to (the rows hold ``base + s``;
    offset here, not by a pass over the table's million entries in Python afterwards). Last, the
    trie the DFA was built from (each state's own edges, by byte class: ``_chains`` reads it)."""
    goto: list[dict[int, int]] = [{}]
    accept = bytearray(1)
    ends = [0]
    for i, (p, kind) in enumerate(zip(patterns, kinds, strict=True)):
        state = 0
        for b in p:
            c = classes[b]
            nxt = goto[state].get(c)
            if nxt is None:
                nxt = len(goto)
                goto[state][c] = nxt
                goto.append({})
                accept.append(0)
                ends.append(0)
            state = nxt
        accept[state] = min(accept[state] or kind, kind)
        ends[state] |= 1 << i
    # Breadth-first: each state's row is its failure state's row with its own edges over it.
    table = array("H", [base]) * (len(goto) * width)
    fail = [0] * len(goto)
    queue: deque[int] = deque()
    for c, s in goto[0].items():
        table[c] = base + s
        queue.append(s)
    while queue:
        state = queue.popleft()
        f = fail[state]
        if accept[f] and (not accept[state] or accept[f] < accept[state]):
            accept[state] = accept[f]  # a marker ends inside this one
        ends[state] |= ends[f]
        row = state * width
        table[row : row + width] = table[f * width : f * width + width]
        for c, s in goto[state].items():
            fail[s] = table[f * width + c] - base
            table[row + c] = base + s
            queue.append(s)
    return table, accept, ends, goto


Automaton = tuple[bytes, bytes, bytes, int, bytes, bytes, int, bytes, bytes, bytes]

Confirm = tuple[frozenset[str], tuple[tuple[str, ...], ...], tuple[tuple[str, tuple[str, ...]], ...]]
"""What ``_automaton`` takes beyond its markers: the confirmed markers, the needle groups, each confirmed
marker's keys (``_markers.confirm_for``)."""


def group_key(group: tuple[str, ...]) -> str:
    """The string a needle group is filed under, and a gate's key for its rule: the group's longest (the
    likeliest to be missing from a noise line)."""
    return max(group, key=len)


@functools.lru_cache(maxsize=16)
def _automaton(markers: tuple[str, ...], confirmed: frozenset[str] = frozenset(),
               groups: tuple[tuple[str, ...], ...] = (),
               gate_keys: tuple[tuple[str, tuple[str, ...]], ...] = ()) -> Automaton:
    """(byte classes, transition table, accepting states, number of classes, start pairs (& 1: a
    marker may start there, & 2: a needle), teddy masks, needle root, needle ends, groups) of the
    Aho-Corasick DFA of ``markers`` (UTF-8), in the layout ``a1x_diagnostics._scan`` reads. A line
    holding only markers of ``confirmed`` is taken only if it also holds every string of one of
    ``groups`` (each a rule's required strings,
    ``_rules.literals_of``): a second DFA of those strings in the same table, rooted at the needle
    root (0: none), whose states say which strings end there (needle ends: a bit set of
    ``(len(strings) + 7) // 8`` bytes a state of it), and the groups filed under their longest
    string: ``8 * size + 1`` 32-bit offsets, then each group a count and that many 16-bit string
    indices (all little-endian). A gate such as ``INFO - [Policy] `` is on most
    lines of a replica log, a whole rule's strings on few (docs/parsing.md, "Gates").

    ``gate_keys``: for a confirmed marker, the keys (longest strings) of the groups of the rules logged
    under it; a line holding none of its marker's keys cannot hold a whole group of its rules, so C
    rejects it before walking the needles. After the groups come the key sets: a uint32 count, that
    many + 1 uint32 offsets into what follows, and each set (``_key_set``: its anchor table if it has
    one, then its keys, a uint16 length, a uint16 anchor and the bytes each);
    a confirmed marker's accepting state is ``3 + set`` (2: no set, every group is walked). Last, the
    runs of the markers' trie that ``confirm`` compares at once (``_chains``)."""
    patterns = [m.encode() for m in dict.fromkeys(markers) if m]
    strings = list(dict.fromkeys(x for g in groups for x in g if x)) if confirmed else []
    needle_bytes = [x.encode() for x in strings]
    if any(b"\n" in p for p in (*patterns, *needle_bytes)):
        raise ValueError("a marker cannot hold a newline")
    if len(strings) > 0xFFFF or any(len(g) > 0xFF for g in groups):
        raise ValueError("too many required strings for the scanner")
    plain = [p for p in patterns if p.decode() not in confirmed]
    # A confirmed marker that starts a plain one would hide it from the anchored search: plain too.
    kinds = [1 if p.decode() not in confirmed or any(q.startswith(p) for q in plain) else 2 for p in patterns]
    alphabet = sorted({b for p in (*patterns, *needle_bytes) for b in p})
    classes = bytearray(256)  # class 0: every byte in no marker
    for i, b in enumerate(alphabet, 1):
        classes[b] = i
    width = len(alphabet) + 1
    table, accept, marker_ends, trie = _dfa(patterns, kinds, bytes(classes), width)
    root = 0
    ends = bytearray()
    packed = bytearray()
    if needle_bytes and 2 in kinds:
        root = len(accept)
        more, more_accept, more_ends, _ = _dfa(needle_bytes, [1] * len(needle_bytes), bytes(classes), width, root)
        table.extend(more)
        accept.extend(more_accept)
        size = (len(strings) + 7) // 8
        for bits in more_ends:
            ends += bits.to_bytes(size, "little")
        # Each group under its key: C checks only the groups whose key the line holds.
        index = {x: i for i, x in enumerate(strings)}
        by_key: list[bytearray] = [bytearray() for _ in range(8 * size)]
        for g in groups:
            entry = by_key[index[group_key(g)]]
            entry.append(len(g))
            for x in g:
                entry += index[x].to_bytes(2, "little")
        packed += _indexed(by_key)
        packed += _key_sets(patterns, accept, marker_ends, dict(gate_keys))
    if len(accept) > 0xFFFF:
        raise ValueError("too many markers for a 16-bit automaton")
    pairs = start_pairs(patterns)
    if root:  # & 2: a needle may start there (0/1 bytes, so one shift marks them all)
        both = int.from_bytes(pairs, "big") | int.from_bytes(start_pairs(needle_bytes), "big") << 1
        pairs = both.to_bytes(len(pairs), "big")
    return (bytes(classes), table.tobytes(), bytes(accept), width, pairs, teddy_masks(patterns),
            root, bytes(ends), bytes(packed), _chains(trie, accept, alphabet))


MIN_RUN = 2
"""A shorter run is one step of the automaton: not worth a comparison."""


def _chains(trie: list[dict[int, int]], accept: bytearray, alphabet: list[int]) -> bytes:
    """The runs ``a1x_diagnostics/_scan.c``'s ``confirm`` compares at once: for each state of the markers' trie
    with one edge on and no marker ending before the next branch, the bytes up to that branch (or to
    where a marker ends; at most 255) and the state there; 8 bytes a state of ``accept`` (length, 0,
    state uint16, offset uint32, little-endian), then the runs' bytes. Byte class ``c`` is
    ``alphabet[c - 1]`` alone (``_automaton`` gives each byte of a marker a class of its own), so a run
    is compared byte for byte.

    Each maximal chain of such states is walked once and its bytes stored once: the run of a state on
    it is the rest of the chain from there (walking from every state was quadratic in a marker's
    length: 0.12 s of each start-up, before the first block could be scanned)."""
    head = bytearray(8 * len(accept))
    pool = bytearray()
    single = [s > 0 and not accept[s] and len(edges) == 1 for s, edges in enumerate(trie)]
    inner = bytearray(len(trie))  # 1: the one edge of a single state leads here (not a chain's start)
    for s, edges in enumerate(trie):
        if single[s]:
            inner[next(iter(edges.values()))] = 1
    for first in range(1, len(trie)):
        if not single[first] or inner[first]:
            continue
        states = [first]
        run = bytearray()
        at = first
        while single[at]:
            ((cls, at),) = trie[at].items()
            run.append(alphabet[cls - 1])
            states.append(at)
        base = len(pool)
        pool += run
        for i in range(len(run)):
            length = min(255, len(run) - i)
            if length >= MIN_RUN:
                entry = bytes([length, 0]) + states[i + length].to_bytes(2, "little") + (base + i).to_bytes(4, "little")
                head[8 * states[i] : 8 * states[i] + 8] = entry
    return bytes(head + pool)


# Bytes by how often they are in log text, most often first: a key is looked for by its rarest byte.
_COMMON = b" etaoinsrlcdhumpfgy.,:-_=0123456789bwvkxjqz"


def _anchor(key: bytes) -> int:
    """The index of the byte of ``key`` that C looks for first: the one latest in ``_COMMON`` (absent:
    rarer still, capitals and punctuation), the first of equals."""
    rank = [_COMMON.find(b) if b in _COMMON else len(_COMMON) for b in key]
    return rank.index(max(rank))


def _key_sets(patterns: list[bytes], accept: bytearray, ends: list[int],
              gate_keys: dict[str, tuple[str, ...]]) -> bytes:
    """The key sets of ``_automaton`` (``accept`` of the markers' confirmed states set to ``3 + set``).

    The search anchored where a marker starts stops at the first marker ending, so a state's keys are
    those of every confirmed marker that starts with one of the markers ending there (a longer gate
    found no further); a state with a marker of no known keys keeps 2 (every group walked)."""
    decoded = [p.decode() for p in patterns]
    sets: dict[tuple[bytes, ...], int] = {}
    for state in range(len(ends)):  # the markers' states (the needles' come after, all kind 1)
        if accept[state] != 2:
            continue
        keys: set[bytes] = set()
        known = True
        for i, marker in enumerate(decoded):
            if not ends[state] >> i & 1:
                continue
            for longer in decoded:
                if longer.startswith(marker):
                    if longer not in gate_keys:
                        known = False
                    else:
                        keys.update(k.encode() for k in gate_keys[longer])
        if not known or not keys or any(len(k) > 0xFFFF for k in keys):
            continue
        key = tuple(sorted(keys))
        if key not in sets and len(sets) == 0xFF - 3:
            continue  # no room in a byte: walked as before
        accept[state] = 3 + sets.setdefault(key, len(sets))
    if not sets:
        return b""  # C: no key sets, every group walked
    return len(sets).to_bytes(4, "little") + _indexed([_key_set(key) for key in sets])


TABLE_KEYS = 4
"""A key set of this many keys or more is looked for in one pass over the line (its anchor table), not a
``memchr`` a key: a noise line under ``INFO - [Rollout`` or ``[Controller]`` was searched ~20 times."""


def _key_set(keys: tuple[bytes, ...]) -> bytes:
    """One key set: a flag byte (1: anchor tables follow), the tables, then each key: a uint16 length, a
    uint16 anchor (``_anchor``), its bytes. The tables, for a set of ``TABLE_KEYS`` keys or more whose
    anchor bytes are ASCII, the keys then ordered by anchor byte: nibble masks of the anchor byte (16
    bytes by low nibble, a bit per high nibble of an anchor with it; 16 by high nibble, its own bit), so
    that a byte is an anchor exactly when its two masks share a bit; the same for the byte after it in
    the keys of each such bit (every byte where the anchor ends its key), which only narrows the
    positions C verifies; and 256 uint16: 0, or 1 plus where the first key anchored on that byte starts."""
    ordered = sorted(((k[_anchor(k)], _anchor(k), k) for k in keys), key=lambda entry: entry[0])  # by anchor byte
    entries = [len(k).to_bytes(2, "little") + index.to_bytes(2, "little") + k for _, index, k in ordered]
    body = b"".join(entries)
    if len(keys) < TABLE_KEYS or ordered[-1][0] >= 0x80 or len(body) >= 0xFFFF:
        return b"\0" + body
    masks = bytearray(64)
    table = [0] * 256
    at = 0
    for (byte, index, k), entry in zip(ordered, entries, strict=True):
        bit = 1 << (byte >> 4)
        masks[byte & 15] |= bit
        masks[16 + (byte >> 4)] = bit
        after = index + 1
        for low, high in [(k[after] & 15, k[after] >> 4)] if after < len(k) else [(i, i) for i in range(16)]:
            masks[32 + low] |= bit
            masks[48 + high] |= bit
        if not table[byte]:
            table[byte] = at + 1
        at += len(entry)
    return b"\1" + bytes(masks) + b"".join(v.to_bytes(2, "little") for v in table) + body


def _indexed(entries: Sequence[bytes | bytearray]) -> bytes:
    """``len(entries) + 1`` little-endian uint32 offsets (where each entry starts in what follows, then
    the end), then the entries: how C finds the needle groups of a key and the keys of a set."""
    out = bytearray()
    offset = 0
    for entry in entries:
        out += offset.to_bytes(4, "little")
        offset += len(entry)
    out += offset.to_bytes(4, "little")
    for entry in entries:
        out += entry
    return bytes(out)


class MarkerScanner:
    """The lines of a block holding one of ``markers``: ``scanner.lines(lines)``."""

    __slots__ = ("_automaton", "markers")

    def __init__(self, markers: Sequence[str], confirm: Confirm | None = None) -> None:
        """``confirm``: (markers, groups of strings, each marker's keys) for ``_automaton``: in C, a line
        holding only those markers is taken only with one of their keys and every string of a group
        too; the pure-Python search takes it anyway (a superset)."""
        self.markers = tuple(markers)
        extra = confirm or ()
        ascii_only = all(m.isascii() for m in (*self.markers, *(x for g in (extra[1] if extra else ()) for x in g)))
        self._automaton = _automaton(self.markers, *extra) if _native is not None and ascii_only else None

    def lines(self, lines: Sequence[str]) -> list[int]:
        """Indices (from 0) of the lines holding a marker, in order."""
        return self.text("\n".join(lines))

    def text(self, text: str) -> list[int]:
        """Indices (from 0) of the ``\\n``-separated lines of ``text`` holding a marker."""
        if _native is not None and self._automaton is not None:
            return _native(text, *self._automaton)
        return find_lines(text, self.markers)
