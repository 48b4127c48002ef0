/* a1x_diagnostics._scan: which lines of a text hold one of a set of fixed strings, in one pass.
 *
 * The live follower asks this of every block of new lines (a1x_diagnostics/live/_engine.py) and
 * --check of every byte of a run (chunk(), below): most lines of a Cosmos-RL log are noise, and
 * only those holding a parser marker are parsed. The automaton (an Aho-Corasick DFA over byte
 * classes) and two prefilters are built in Python (a1x_diagnostics/parsing/_scan.py); this file only
 * runs them. Optional: without a C compiler the package falls back to str.find scans, which find
 * the same lines.
 *
 * Finding the lines: a position can only start a marker if its two bytes start one (`pairs`, a
 * 64 KiB table), and on x86-64 with AVX2 (SSSE3), 32 (16) positions at a time are first tested
 * against the markers' first four bytes (`teddy`: per byte position, a bucket mask looked up by
 * each nibble, the "Teddy" technique of Hyperscan). A position that passes, whose two bytes pass
 * `pairs` and whose four bytes' hash is one of the markers' (`quads`), is confirmed by running the
 * automaton from it (a run of bytes with no branch in the markers' trie compared at once: `chains`);
 * a confirmed line is reported and the scan goes on at its end.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_TEDDY 1
#include <immintrin.h>
static int teddy_ok = -1;  /* the widest prefilter the CPU runs: 2 AVX2, 1 SSSE3, 0 none (looked up once) */
#else
#define HAVE_TEDDY 0
#endif

typedef struct {
    const unsigned char *cls;    /* 256 byte classes */
    const uint16_t *next;        /* nstates * nclasses next states */
    const unsigned char *acc;    /* nstates: non-zero where a marker ends */
    Py_ssize_t nstates, nclasses;
    const unsigned char *pairs;  /* 65536: & 1 where a marker may start with bytes a, b, & 2 where a needle
                                  * may; both at every a == '\n' */
    const unsigned char *teddy;  /* 128 bytes (lo/hi nibble masks of bytes 0-3), or NULL */
    const unsigned char *quads;  /* QUAD_BYTES after them: a bit per hash of a marker's first four bytes
                                  * (quad_hash), or NULL (a marker shorter than four bytes) */
    Py_ssize_t root2;            /* the needles' DFA in the same table starts here; 0: none */
    const unsigned char *ends;   /* for each state of the needles' DFA, the needles ending there (bits) */
    Py_ssize_t ebytes;           /* bytes of one such bit set */
    const unsigned char *groups; /* needle groups by key needle: 8 * ebytes + 1 uint32 LE offsets into the
                                  * groups that follow (those of needle i: [off[i], off[i + 1])), then each
                                  * group: a count n, then n 16-bit little-endian needle indices */
    Py_ssize_t glen;             /* the groups' bytes, to the key sets that follow them */
    const unsigned char *keyoff; /* nsets + 1 uint32 LE offsets into keys, a set between two */
    const unsigned char *keys;   /* a set: a flag (1: KEY_TABLE_BYTES follow: 64 bytes of nibble masks, of
                                  * its anchors and of the bytes after them, and its anchor table, 256 uint16
                                  * LE offsets), then its keys: uint16 length, uint16 anchor, bytes; a
                                  * confirmed marker's state holds 3 + its set (2: none, walk every group) */
    Py_ssize_t nsets;
    int simd;                    /* the widest search of a set's anchors for this call: 2 AVX2, else one byte
                                  * at a time (set by lines() and chunk(), not part of the tables) */
    const unsigned char *chains; /* per state 8 bytes: a run's length (0: none), 0, the state after it (uint16
                                  * LE), its offset in pool (uint32 LE); NULL: no runs */
    const unsigned char *pool;   /* the runs' bytes */
} Automaton;

#define QUAD_BYTES 8192           /* the quads' bitmap: 65536 bits */
#define KEY_TABLE_BYTES (64 + 512) /* a key set's nibble masks and anchor table */
#define MAX_NEEDLE_BYTES 1024    /* bit sets of at most 8192 needles */

typedef struct {
    Py_buffer classes, table, accept, pairs, teddy, ends, groups, chains;
    int held;
} AutomatonArgs;

static void
release_automaton(AutomatonArgs *args)
{
    if (!args->held)
        return;
    PyBuffer_Release(&args->classes);
    PyBuffer_Release(&args->table);
    PyBuffer_Release(&args->accept);
    PyBuffer_Release(&args->pairs);
    PyBuffer_Release(&args->teddy);
    PyBuffer_Release(&args->ends);
    PyBuffer_Release(&args->groups);
    PyBuffer_Release(&args->chains);
    args->held = 0;
}

/* The little-endian uint32 at o (the offsets of the needle groups, of the key sets and of the runs). */
static Py_ssize_t
u32_at(const unsigned char *o)
{
    return (Py_ssize_t)((uint32_t)o[0] | (uint32_t)o[1] << 8 | (uint32_t)o[2] << 16 | (uint32_t)o[3] << 24);
}

/* The little-endian uint16 at o (needle indices, key lengths and anchors, the state after a run). */
static unsigned int
u16_at(const unsigned char *o)
{
    return (unsigned int)o[0] | (unsigned int)o[1] << 8;
}

static inline uint64_t
load64(const unsigned char *p)
{
    uint64_t x;
    memcpy(&x, p, 8);
    return x;
}

static inline uint32_t
load32(const unsigned char *p)
{
    uint32_t x;
    memcpy(&x, p, 4);
    return x;
}

/* The bit of the quads' bitmap for the four bytes at p, read little-endian (the SIMD scans that look at it
 * are x86-64's): the top 16 bits of their product with 2654435761 modulo 2**32 (Knuth's multiplicative
 * hash), as a1x_diagnostics/parsing/_scan.py's quad_hash sets them. */
static inline unsigned int
quad_hash(const unsigned char *p)
{
    return (unsigned int)((load32(p) * 2654435761u) >> 16);
}

/* Whether a[0:n] == b[0:n], in word loads (memcpy of a constant size: one load each), overlapping at the
 * end; reads nothing outside either range. The runs and a template's literals are a few bytes and most
 * differ early: libc's memcmp behind a call was a tenth of the noisy mix's scan (callgrind). */
static inline int
same_bytes(const unsigned char *a, const unsigned char *b, size_t n)
{
    if (n >= 8) {
        for (size_t i = 0; i + 8 < n; i += 8)
            if (load64(a + i) != load64(b + i))
                return 0;
        return load64(a + n - 8) == load64(b + n - 8);
    }
    if (n >= 4)
        return load32(a) == load32(b) && load32(a + n - 4) == load32(b + n - 4);
    if (n >= 2)
        return a[0] == b[0] && a[1] == b[1] && a[n - 1] == b[n - 1];
    return n == 0 || a[0] == b[0];
}

/* Where the groups keyed by needle i start, after the offsets (see Automaton.groups). */
static Py_ssize_t
group_offset(const Automaton *a, Py_ssize_t i)
{
    return u32_at(a->groups + 4 * i);
}

/* The key sets after the groups (len bytes at b; none when len is 0): a uint32 count, count + 1 offsets
 * that only grow, the last at the end, and every key whole inside its set. */
static int
load_key_sets(Automaton *a, const unsigned char *b, Py_ssize_t len)
{
    if (len == 0)
        return 1;
    if (len < 4 || u32_at(b) > 252 || len - 4 < 4 * (u32_at(b) + 1))
        goto bad;
    a->nsets = u32_at(b);
    a->keyoff = b + 4;
    a->keys = a->keyoff + 4 * (a->nsets + 1);
    Py_ssize_t size = b + len - a->keys;
    for (Py_ssize_t k = 0; k < a->nsets; k++) {
        Py_ssize_t at = u32_at(a->keyoff + 4 * k), end = u32_at(a->keyoff + 4 * (k + 1));
        if (at >= end || end > size || a->keys[at] > 1)
            goto bad;
        const unsigned char *tables = a->keys[at] ? a->keys + at + 1 : NULL;
        at += tables != NULL ? 1 + KEY_TABLE_BYTES : 1;
        if (at > end)
            goto bad;
        /* The anchor table is what the keys give: recomputed and compared whole, so that a search
         * led by it never starts at a byte that is not a key's first. */
        unsigned char nib[64] = {0};
        unsigned char table[512] = {0};
        Py_ssize_t first = at;
        int last = -1;
        while (at < end) {  /* each key: uint16 length (> 0), uint16 anchor (< length), the bytes */
            if (end - at < 4)
                goto bad;
            Py_ssize_t klen = u16_at(a->keys + at), anchor = u16_at(a->keys + at + 2);
            if (klen == 0 || anchor >= klen || end - at - 4 < klen)
                goto bad;
            int c = a->keys[at + 4 + anchor];
            if (tables != NULL) {
                if (c < last || c >= 0x80 || at - first + 1 > 0xFFFF)
                    goto bad;
                if (c != last) {
                    table[2 * c] = (unsigned char)((at - first + 1) & 0xFF);
                    table[2 * c + 1] = (unsigned char)((at - first + 1) >> 8);
                }
                unsigned char bit = (unsigned char)(1u << (c >> 4));
                nib[c & 15] |= bit;
                nib[16 + (c >> 4)] = bit;
                if (anchor + 1 < klen) {
                    int d = a->keys[at + 4 + anchor + 1];
                    nib[32 + (d & 15)] |= bit;
                    nib[48 + (d >> 4)] |= bit;
                } else {
                    for (int i = 0; i < 16; i++) {
                        nib[32 + i] |= bit;
                        nib[48 + i] |= bit;
                    }
                }
                last = c;
            }
            at += 4 + klen;
        }
        if (tables != NULL && (memcmp(tables, nib, 64) != 0 || memcmp(tables + 64, table, 512) != 0))
            goto bad;
    }
    if (u32_at(a->keyoff + 4 * a->nsets) != size)
        goto bad;
    return 1;
bad:
    PyErr_SetString(PyExc_ValueError, "inconsistent automaton: key sets");
    return 0;
}

/* Checks the tables' sizes and byte classes; 0 with a ValueError set if they do not fit. */
static int
check_automaton(AutomatonArgs *args, Py_ssize_t nclasses, Py_ssize_t root2, Automaton *a)
{
    if (args->classes.len != 256 || nclasses <= 0 || nclasses > 256 || args->table.len % (2 * nclasses) != 0
        || args->accept.len < 1 || args->accept.len != args->table.len / (2 * nclasses) || args->pairs.len != 65536
        || (args->teddy.len != 0 && args->teddy.len != 128 && args->teddy.len != 128 + QUAD_BYTES)) {
        PyErr_SetString(PyExc_ValueError, "inconsistent automaton");
        return 0;
    }
    for (int b = 0; b < 256; b++) {
        if (((const unsigned char *)args->classes.buf)[b] >= nclasses) {
            PyErr_SetString(PyExc_ValueError, "inconsistent automaton: byte class out of range");
            return 0;
        }
    }
    a->cls = (const unsigned char *)args->classes.buf;
    a->next = (const uint16_t *)args->table.buf;
    a->acc = (const unsigned char *)args->accept.buf;
    a->nstates = args->accept.len;
    a->nclasses = nclasses;
    a->pairs = (const unsigned char *)args->pairs.buf;
    a->teddy = args->teddy.len ? (const unsigned char *)args->teddy.buf : NULL;
    a->quads = args->teddy.len == 128 + QUAD_BYTES ? a->teddy + 128 : NULL;
    if (root2 < 0 || root2 >= a->nstates) {
        PyErr_SetString(PyExc_ValueError, "inconsistent automaton: needle root out of range");
        return 0;
    }
    a->root2 = root2;
    a->ends = (const unsigned char *)args->ends.buf;
    a->groups = (const unsigned char *)args->groups.buf;
    a->glen = args->groups.len;
    a->ebytes = 0;
    a->nsets = 0;
    a->keyoff = a->keys = NULL;
    a->simd = 0;
    if (root2 > 0) {
        Py_ssize_t nneedle = a->nstates - root2;
        if (args->ends.len % nneedle != 0 || args->ends.len / nneedle <= 0
            || args->ends.len / nneedle > MAX_NEEDLE_BYTES) {
            PyErr_SetString(PyExc_ValueError, "inconsistent automaton: needle ends");
            return 0;
        }
        a->ebytes = args->ends.len / nneedle;
        Py_ssize_t head = 4 * (8 * a->ebytes + 1), prev = 0;
        if (a->glen < head) {
            PyErr_SetString(PyExc_ValueError, "inconsistent automaton: needle groups");
            return 0;
        }
        for (Py_ssize_t i = 0; i <= 8 * a->ebytes; i++) {  /* offsets that only grow, inside the groups */
            Py_ssize_t off = group_offset(a, i);
            if (off < prev || head + off > a->glen) {
                PyErr_SetString(PyExc_ValueError, "inconsistent automaton: needle groups");
                return 0;
            }
            prev = off;
        }
        Py_ssize_t kstart = head + prev;
        if (kstart > a->glen || !load_key_sets(a, a->groups + kstart, a->glen - kstart))
            return 0;
        a->glen = kstart;
        for (Py_ssize_t g = head; g < a->glen;) {  /* every group whole, every index inside the bit sets */
            Py_ssize_t cnt = a->groups[g++];
            if (g + 2 * cnt > a->glen) {
                PyErr_SetString(PyExc_ValueError, "inconsistent automaton: needle groups");
                return 0;
            }
            for (Py_ssize_t i = 0; i < cnt; i++, g += 2) {
                if ((Py_ssize_t)u16_at(a->groups + g) >= 8 * a->ebytes) {
                    PyErr_SetString(PyExc_ValueError, "inconsistent automaton: needle index out of range");
                    return 0;
                }
            }
        }
    }
    for (Py_ssize_t st = 0; st < a->nstates; st++) {
        if (a->acc[st] >= 3 && a->acc[st] - 3 >= a->nsets) {
            PyErr_SetString(PyExc_ValueError, "inconsistent automaton: key set out of range");
            return 0;
        }
    }
    a->chains = a->pool = NULL;
    if (args->chains.len) {  /* every run inside the pool, every state after one in the table */
        const unsigned char *c = (const unsigned char *)args->chains.buf;
        Py_ssize_t head = 8 * a->nstates, pool = args->chains.len - head;
        if (pool < 0) {
            PyErr_SetString(PyExc_ValueError, "inconsistent automaton: runs");
            return 0;
        }
        for (Py_ssize_t st = 0; st < a->nstates; st++, c += 8) {
            if (c[0] && ((Py_ssize_t)u16_at(c + 2) >= a->nstates || u32_at(c + 4) + c[0] > pool)) {
                PyErr_SetString(PyExc_ValueError, "inconsistent automaton: runs");
                return 0;
            }
        }
        a->chains = (const unsigned char *)args->chains.buf;
        a->pool = a->chains + head;
    }
    return 1;
}

/* Automata checked already, by the objects holding their tables. a1x_diagnostics/parsing/_scan.py builds
 * each automaton once and hands the same bytes to every call: the live follower's lines() for each
 * block of new lines, where checking its ~6,000 states and their runs again cost more than scanning
 * a small block. Only bytes objects (which never change) are remembered, each with a reference, so
 * none can be freed and another take its address. Called with the GIL held. */
#define CHECKED_SLOTS 4
#define TABLES 8
typedef struct {
    PyObject *objs[TABLES];
    Py_ssize_t nclasses, root2;
    Automaton a;
} Checked;
static Checked checked[CHECKED_SLOTS];
static int checked_next;

static void
table_objects(const AutomatonArgs *args, PyObject **objs)
{
    const Py_buffer *b[TABLES] = {&args->classes, &args->table, &args->accept, &args->pairs,
                                  &args->teddy, &args->ends, &args->groups, &args->chains};
    for (int t = 0; t < TABLES; t++)
        objs[t] = b[t]->obj;
}

/* The tables checked (check_automaton), from the cache when these very objects were checked before. */
static int
load_automaton(AutomatonArgs *args, Py_ssize_t nclasses, Py_ssize_t root2, Automaton *a)
{
    PyObject *objs[TABLES];
    table_objects(args, objs);
    for (int s = 0; s < CHECKED_SLOTS; s++) {
        Checked *c = &checked[s];
        if (c->objs[0] != NULL && c->nclasses == nclasses && c->root2 == root2
            && memcmp(c->objs, objs, sizeof objs) == 0) {
            *a = c->a;
            return 1;
        }
    }
    if (!check_automaton(args, nclasses, root2, a))
        return 0;
    for (int t = 0; t < TABLES; t++)
        if (objs[t] == NULL || !PyBytes_CheckExact(objs[t]))
            return 1;  /* a buffer that may change: checked again next time */
    Checked *c = &checked[checked_next];
    checked_next = (checked_next + 1) % CHECKED_SLOTS;
    for (int t = 0; t < TABLES; t++) {
        PyObject *old = c->objs[t];
        c->objs[t] = Py_NewRef(objs[t]);
        Py_XDECREF(old);
    }
    c->nclasses = nclasses;
    c->root2 = root2;
    c->a = *a;
    return 1;
}

/* Whether s[0:n] holds k[0:len] (0 < len <= n): memchr for its byte at `at` (one rare in log text, chosen
 * by a1x_diagnostics/parsing/_scan.py), then the whole key where it sits. */
static int
find_bytes(const unsigned char *s, Py_ssize_t n, const unsigned char *k, Py_ssize_t len, Py_ssize_t at)
{
    const unsigned char *from = s + at, *last = s + (n - len) + at;  /* where k[at] may be */
    while (from <= last) {
        const unsigned char *hit = memchr(from, k[at], (size_t)(last - from + 1));
        if (hit == NULL)
            return 0;
        if (same_bytes(hit - at, k, (size_t)len))
            return 1;
        from = hit + 1;
    }
    return 0;
}

/* Whether one of a set's keys anchored on byte p[j] sits there, inside [ls, le) (the keys ordered by
 * anchor byte, those of p[j] from its table entry on). */
static inline int
key_at(const unsigned char *table, const unsigned char *keys, const unsigned char *e, const unsigned char *p,
       Py_ssize_t j, Py_ssize_t ls, Py_ssize_t le)
{
    unsigned char c = p[j];
    unsigned int v = u16_at(table + 2 * c);
    if (v == 0)
        return 0;
    for (const unsigned char *key = keys + v - 1; key < e;) {
        Py_ssize_t len = u16_at(key), at = u16_at(key + 2);
        if (key[4 + at] != c)
            return 0;
        if (j - at >= ls && j - at + len <= le && same_bytes(p + j - at, key + 4, (size_t)len))
            return 1;
        key += 4 + len;
    }
    return 0;
}

/* key_at for each candidate position at + c of a block (bit c of cand): whether a key sits at one. */
static inline int
key_in_block(const unsigned char *tables, const unsigned char *keys, const unsigned char *e, const unsigned char *p,
             Py_ssize_t at, unsigned int cand, Py_ssize_t ls, Py_ssize_t le)
{
    while (cand) {
        int c = __builtin_ctz(cand);
        cand &= cand - 1u;
        if (key_at(tables + 64, keys, e, p, at + c, ls, le))
            return 1;
    }
    return 0;
}

#if HAVE_TEDDY
/* key_at for each position of [j, le) whose byte is an anchor, 32 at a time (the last 32 bytes of the
 * line again for its end, past the positions seen): the nibble masks say so exactly (a bit per high
 * nibble: anchors are ASCII). *found: 1 when a key is there; returns where the bytes not looked at
 * start (a line shorter than 32 bytes: all of it). */
__attribute__((target("avx2,popcnt"))) static Py_ssize_t
anchors32(const unsigned char *tables, const unsigned char *keys, const unsigned char *e, const unsigned char *p,
          Py_ssize_t j, Py_ssize_t ls, Py_ssize_t le, int *found)
{
    const __m256i nib = _mm256_set1_epi8(0x0F), zero = _mm256_setzero_si256();
    const __m256i lo = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)tables));
    const __m256i hi = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(tables + 16)));
    const __m256i lo1 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(tables + 32)));
    const __m256i hi1 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(tables + 48)));
    for (; j + 33 <= le; j += 32) {  /* the byte after each position inside the line too: the pair's masks */
        __m256i v = _mm256_loadu_si256((const __m256i *)(p + j));
        __m256i w = _mm256_loadu_si256((const __m256i *)(p + j + 1));
        __m256i m = _mm256_and_si256(_mm256_shuffle_epi8(lo, _mm256_and_si256(v, nib)),
                                     _mm256_shuffle_epi8(hi, _mm256_and_si256(_mm256_srli_epi16(v, 4), nib)));
        m = _mm256_and_si256(m, _mm256_and_si256(_mm256_shuffle_epi8(lo1, _mm256_and_si256(w, nib)),
                                                 _mm256_shuffle_epi8(hi1, _mm256_and_si256(_mm256_srli_epi16(w, 4), nib))));
        unsigned int cand = ~(unsigned int)_mm256_movemask_epi8(_mm256_cmpeq_epi8(m, zero));
        if (key_in_block(tables, keys, e, p, j, cand, ls, le)) {
            *found = 1;
            return j;
        }
    }
    while (j + 32 <= le || (j < le && le - ls >= 32)) {
        Py_ssize_t at = j + 32 <= le ? j : le - 32;
        __m256i v = _mm256_loadu_si256((const __m256i *)(p + at));
        __m256i m = _mm256_and_si256(_mm256_shuffle_epi8(lo, _mm256_and_si256(v, nib)),
                                     _mm256_shuffle_epi8(hi, _mm256_and_si256(_mm256_srli_epi16(v, 4), nib)));
        unsigned int cand = ~(unsigned int)_mm256_movemask_epi8(_mm256_cmpeq_epi8(m, zero));
        cand &= ~0u << (j - at);  /* the end's block: from j on (j - at < 32) */
        if (key_in_block(tables, keys, e, p, at, cand, ls, le)) {
            *found = 1;
            return at;
        }
        j = at + 32;
    }
    return j;
}
#endif

/* line_has_key for a set with an anchor table (tables: its nibble masks, then the table; its keys after
 * them): one pass over the line for every anchor at once, where a memchr a key searched a noise line
 * ~20 times (docs/parsing.md, "Fourth pass"). */
static int
line_has_key_by_table(const Automaton *a, const unsigned char *tables, const unsigned char *e,
                      const unsigned char *p, Py_ssize_t ls, Py_ssize_t le)
{
    const unsigned char *keys = tables + KEY_TABLE_BYTES;
    Py_ssize_t j = ls;
#if HAVE_TEDDY
    if (a->simd >= 2) {
        int found = 0;
        j = anchors32(tables, keys, e, p, j, ls, le, &found);
        if (found)
            return 1;
    }
#else
    (void)a;
#endif
    for (; j < le; j++)
        if (tables[p[j] & 15] & tables[16 + (p[j] >> 4)] && key_at(tables + 64, keys, e, p, j, ls, le))
            return 1;
    return 0;
}

/* Whether the line starting at ls holds, in the part the needles are looked for in, one key of set
 * k: the longest string of one of the groups of the rules logged under the marker found there. A
 * line without one cannot hold a whole group of them (a1x_diagnostics/parsing/_scan.py, _key_sets). */
static int
line_has_key(const Automaton *a, Py_ssize_t k, const unsigned char *p, Py_ssize_t ls, Py_ssize_t n,
             Py_ssize_t max_line)
{
    Py_ssize_t end = n - ls > max_line ? ls + max_line : n;
    const unsigned char *nl = memchr(p + ls, '\n', (size_t)(end - ls));
    Py_ssize_t le = nl != NULL ? nl - p : end;
    const unsigned char *set = a->keys + u32_at(a->keyoff + 4 * k);
    const unsigned char *e = a->keys + u32_at(a->keyoff + 4 * (k + 1));
    if (set[0])
        return line_has_key_by_table(a, set + 1, e, p, ls, le);
    for (const unsigned char *key = set + 1; key < e;) {
        Py_ssize_t len = u16_at(key), at = u16_at(key + 2);
        key += 4;
        if (len <= le - ls && find_bytes(p + ls, le - ls, key, len, at))
            return 1;
        key += len;
    }
    return 0;
}

/* Whether the line starting at ls holds, in its first max_line bytes, every needle of one group
 * (the needles: the DFA at root2; a group: the strings every match of one rule's regex holds, as
 * a1x_diagnostics/parsing/_required.py reads them); -2: a corrupt table. Only a conservative filter:
 * the line then goes to the Python rules, which decide. */
static int
needle_in_line(const Automaton *a, const unsigned char *p, Py_ssize_t ls, Py_ssize_t n, Py_ssize_t max_line)
{
    unsigned char found[MAX_NEEDLE_BYTES];
    int any = 0;
    const unsigned int root = (unsigned int)a->root2;
    unsigned int state = root;
    Py_ssize_t end = n - ls > max_line ? ls + max_line : n;
    memset(found, 0, (size_t)a->ebytes);
    for (Py_ssize_t k = ls; k < end; k++) {
        /* At the root, a position where no needle starts (pairs & 2, as the markers' & 1 in
         * scan_scalar) leaves the DFA at the root: skip it. */
        if (state == root)
            while (k + 1 < end && !(a->pairs[p[k] << 8 | p[k + 1]] & 2))
                k++;
        unsigned char c = p[k];
        if (c == '\n')
            break;
        state = a->next[state * a->nclasses + a->cls[c]];
        if (state >= (unsigned int)a->nstates || state < (unsigned int)a->root2)
            return -2;
        if (a->acc[state]) {
            const unsigned char *e = a->ends + (Py_ssize_t)(state - a->root2) * a->ebytes;
            for (Py_ssize_t b = 0; b < a->ebytes; b++)
                found[b] |= e[b];
            any = 1;
        }
    }
    if (!any)
        return 0;
    /* Only the groups keyed by a needle the line holds can be whole. */
    Py_ssize_t head = 4 * (8 * a->ebytes + 1);
    for (Py_ssize_t b = 0; b < a->ebytes; b++) {
        for (int bit = 0; found[b] >> bit; bit++) {
            if (!(found[b] >> bit & 1))
                continue;
            Py_ssize_t key = 8 * b + bit;
            Py_ssize_t g = head + group_offset(a, key), end = head + group_offset(a, key + 1);
            while (g < end) {
                Py_ssize_t cnt = a->groups[g++], next = g + 2 * cnt, i = 0;
                for (; i < cnt; i++, g += 2) {  /* stops at the first needle of the group missing */
                    unsigned int idx = u16_at(a->groups + g);
                    if (!(found[idx >> 3] & (1u << (idx & 7))))
                        break;
                }
                if (i == cnt)
                    return 1;
                g = next;
            }
        }
    }
    return 0;
}

/* Whether the line starting at ls is taken whatever the needles say (chunk(): it is a bulk line, whose
 * template holds a rule's strings; tests/parsing/test_bulk.py); NULL: no such line. */
typedef int (*TakeFn)(void *ctx, Py_ssize_t ls);

/* The end (inclusive) of the first marker found running the automaton from position s, which it
 * leaves when back at the start state or at a newline; -1: none; -2: a corrupt table. A marker
 * that needs a needle on its line (accepting kind 2) counts only with one there (line start ls),
 * or where take() says so.
 *
 * A state with one way on, and no marker ending until the next branch (`chains`: "NFO - " after the
 * "I" of "INFO - ..."), is left by comparing that run of bytes at once. A run that differs ends
 * the search here: every marker the automaton could still meet starts later in the text, where
 * the caller searches again (the prefilter passes every position a marker starts at). */
static inline Py_ssize_t
confirm(const Automaton *a, const unsigned char *p, Py_ssize_t s, Py_ssize_t n, Py_ssize_t ls, Py_ssize_t max_line,
        TakeFn take, void *ctx)
{
    unsigned int state = 0;
    const unsigned char *chains = a->chains;
    Py_ssize_t k = s;
    while (k < n) {
        const unsigned char *run = chains == NULL ? NULL : chains + 8 * (Py_ssize_t)state;
        if (run != NULL && run[0]) {
            Py_ssize_t len = run[0];
            if (len > n - k || !same_bytes(p + k, a->pool + u32_at(run + 4), (size_t)len))
                return -1;
            k += len;
            state = u16_at(run + 2);
        } else {
            unsigned char c = p[k++];
            if (c == '\n')
                return -1;
            state = a->next[state * a->nclasses + a->cls[c]];
            if (state >= (unsigned int)a->nstates)
                return -2;
        }
        if (a->acc[state]) {
            Py_ssize_t e = k - 1;
            if (a->acc[state] == 1 || a->root2 == 0)
                return e;
            /* Keys first, templates next: a line a bulk shape's template matches holds its rule's
             * strings, its key among them (tests/parsing/test_definitions.py), so a line without any
             * of its gate's keys is no bulk line either, and a noise line is not tried on them. */
            if (a->acc[state] >= 3 && !line_has_key(a, a->acc[state] - 3, p, ls, n, max_line))
                return -1;
            if (take != NULL && take(ctx, ls))
                return e;
            int found = needle_in_line(a, p, ls, n, max_line);
            return found < 0 ? -2 : found ? e : -1;
        }
        if (state == 0)
            return -1;
    }
    return -1;
}

/* Called for each line [ls, le) holding a marker in its first max_line bytes; line counts from 0.
 * Returns 0, or -1 when out of memory. */
typedef int (*HitFn)(void *ctx, Py_ssize_t ls, Py_ssize_t le, Py_ssize_t line);

typedef struct {
    Py_ssize_t i, ls, line;  /* position, start of its line, newlines before it */
} Cursor;

/* After a marker ending at e on the line starting at cur->ls: report the line, move to its newline.
 * Returns 0, 1 at the end of the data, -1 out of memory. */
static int
take_line(const unsigned char *p, Py_ssize_t n, Py_ssize_t e, Py_ssize_t max_line, Cursor *cur, HitFn hit,
          void *ctx)
{
    const unsigned char *nl = memchr(p + e, '\n', (size_t)(n - e));
    Py_ssize_t le = nl == NULL ? n : nl - p;
    if (e - cur->ls < max_line && hit(ctx, cur->ls, le, cur->line) < 0)
        return -1;
    cur->i = le;
    return nl == NULL;
}

/* One position at a time from cur, to the end. Returns 0, -1 (memory), -2 (corrupt table). */
static int
scan_scalar(const Automaton *a, const unsigned char *p, Py_ssize_t n, Py_ssize_t max_line, Cursor *cur,
            HitFn hit, TakeFn take, void *ctx)
{
    const unsigned char *pairs = a->pairs;
    Py_ssize_t i = cur->i;
    while (i < n) {
        while (i + 1 < n && !(pairs[p[i] << 8 | p[i + 1]] & 1))
            i++;
        if (p[i] == '\n') {
            cur->line++;
            cur->ls = ++i;
            continue;
        }
        if (i - cur->ls >= max_line) {  /* past the searched part of an over-long line */
            const unsigned char *nl = memchr(p + i, '\n', (size_t)(n - i));
            i = nl == NULL ? n : nl - p;
            continue;
        }
        Py_ssize_t e = confirm(a, p, i, n, cur->ls, max_line, take, ctx);
        if (e == -2)
            return -2;
        if (e >= 0) {
            int r = take_line(p, n, e, max_line, cur, hit, ctx);
            if (r != 0)
                return r < 0 ? -1 : 0;
            i = cur->i;
            continue;
        }
        i++;
    }
    cur->i = n;
    return 0;
}

#if HAVE_TEDDY
/* The candidates of the block of positions [i, i + width): bit c of cand says position i + c passed
 * the nibble masks, bit c of nl that byte i + c is a newline. Returns where the scan goes on: the
 * newline ending a line taken (counted by the next block), else i + width with the block's
 * newlines counted; TEDDY_END at the end of the data, -1 (memory) or -2 (corrupt table). */
#define TEDDY_END (-3)
static inline Py_ssize_t
teddy_block(const Automaton *a, const unsigned char *p, Py_ssize_t n, Py_ssize_t max_line, Cursor *cur,
            HitFn hit, TakeFn take, void *ctx, Py_ssize_t i, int width, unsigned int cand, unsigned int nl)
{
    const unsigned char *pairs = a->pairs, *quads = a->quads;
    while (cand) {
        int c = __builtin_ctz(cand);
        cand &= cand - 1u;
        /* The nibble masks pass many a position no marker starts at; its two bytes say so at once,
         * before the automaton's walk (i + c + 3 < n: the loops end four bytes short of the data). */
        if (!(pairs[p[i + c] << 8 | p[i + c + 1]] & 1))
            continue;
        /* Then its four bytes, where every marker has four: the masks of a bucket of five or six
         * markers also pass their mixtures ("date" from "deat", "fail", "out ", "more"), and each such
         * position cost a walk of the automaton (docs/parsing.md, "Eighth pass"). */
        if (quads != NULL) {
            unsigned int h = quad_hash(p + i + c);
            if (!(quads[h >> 3] & (1u << (h & 7))))
                continue;
        }
        unsigned int below = nl & ((1u << c) - 1u);
        Py_ssize_t ls = below ? i + (31 - __builtin_clz(below)) + 1 : cur->ls;
        if (i + c - ls >= max_line)
            continue;
        Py_ssize_t e = confirm(a, p, i + c, n, ls, max_line, take, ctx);
        if (e == -2)
            return -2;
        if (e >= 0) {
            cur->line += __builtin_popcount(below);
            cur->ls = ls;
            int r = take_line(p, n, e, max_line, cur, hit, ctx);
            return r < 0 ? -1 : r ? TEDDY_END : cur->i;
        }
    }
    if (nl) {
        cur->line += __builtin_popcount(nl);
        cur->ls = i + (31 - __builtin_clz(nl)) + 1;
    }
    return i + width;
}

/* 16 positions at a time (SSSE3), then one at a time for the last bytes. */
__attribute__((target("ssse3,popcnt"))) static int
scan_teddy(const Automaton *a, const unsigned char *p, Py_ssize_t n, Py_ssize_t max_line, Cursor *cur, HitFn hit,
           TakeFn take, void *ctx)
{
    const __m128i nib = _mm_set1_epi8(0x0F), newline = _mm_set1_epi8('\n'), zero = _mm_setzero_si128();
    const __m128i *t = (const __m128i *)a->teddy;
    const __m128i lo0 = _mm_loadu_si128(t), hi0 = _mm_loadu_si128(t + 1), lo1 = _mm_loadu_si128(t + 2);
    const __m128i hi1 = _mm_loadu_si128(t + 3), lo2 = _mm_loadu_si128(t + 4), hi2 = _mm_loadu_si128(t + 5);
    const __m128i lo3 = _mm_loadu_si128(t + 6), hi3 = _mm_loadu_si128(t + 7);
    Py_ssize_t i = cur->i;
    while (i + 19 <= n) {
        __m128i v0 = _mm_loadu_si128((const __m128i *)(p + i));
        __m128i v1 = _mm_loadu_si128((const __m128i *)(p + i + 1));
        __m128i v2 = _mm_loadu_si128((const __m128i *)(p + i + 2));
        __m128i v3 = _mm_loadu_si128((const __m128i *)(p + i + 3));
        __m128i m = _mm_and_si128(_mm_shuffle_epi8(lo0, _mm_and_si128(v0, nib)),
                                  _mm_shuffle_epi8(hi0, _mm_and_si128(_mm_srli_epi16(v0, 4), nib)));
        m = _mm_and_si128(m, _mm_and_si128(_mm_shuffle_epi8(lo1, _mm_and_si128(v1, nib)),
                                           _mm_shuffle_epi8(hi1, _mm_and_si128(_mm_srli_epi16(v1, 4), nib))));
        m = _mm_and_si128(m, _mm_and_si128(_mm_shuffle_epi8(lo2, _mm_and_si128(v2, nib)),
                                           _mm_shuffle_epi8(hi2, _mm_and_si128(_mm_srli_epi16(v2, 4), nib))));
        m = _mm_and_si128(m, _mm_and_si128(_mm_shuffle_epi8(lo3, _mm_and_si128(v3, nib)),
                                           _mm_shuffle_epi8(hi3, _mm_and_si128(_mm_srli_epi16(v3, 4), nib))));
        unsigned int cand = ~(unsigned int)_mm_movemask_epi8(_mm_cmpeq_epi8(m, zero)) & 0xFFFFu;
        unsigned int nl = (unsigned int)_mm_movemask_epi8(_mm_cmpeq_epi8(v0, newline));
        i = teddy_block(a, p, n, max_line, cur, hit, take, ctx, i, 16, cand, nl);
        if (i < 0)
            return i == TEDDY_END ? 0 : (int)i;
    }
    cur->i = i;
    return scan_scalar(a, p, n, max_line, cur, hit, take, ctx);
}

/* The same test 32 positions at a time (AVX2: each 128-bit lane looks up the same tables), then
 * scan_teddy for the last bytes. */
__attribute__((target("avx2,popcnt"))) static int
scan_teddy32(const Automaton *a, const unsigned char *p, Py_ssize_t n, Py_ssize_t max_line, Cursor *cur,
             HitFn hit, TakeFn take, void *ctx)
{
    const __m256i nib = _mm256_set1_epi8(0x0F), newline = _mm256_set1_epi8('\n'), zero = _mm256_setzero_si256();
    const __m128i *t = (const __m128i *)a->teddy;
    const __m256i lo0 = _mm256_broadcastsi128_si256(_mm_loadu_si128(t));
    const __m256i hi0 = _mm256_broadcastsi128_si256(_mm_loadu_si128(t + 1));
    const __m256i lo1 = _mm256_broadcastsi128_si256(_mm_loadu_si128(t + 2));
    const __m256i hi1 = _mm256_broadcastsi128_si256(_mm_loadu_si128(t + 3));
    const __m256i lo2 = _mm256_broadcastsi128_si256(_mm_loadu_si128(t + 4));
    const __m256i hi2 = _mm256_broadcastsi128_si256(_mm_loadu_si128(t + 5));
    const __m256i lo3 = _mm256_broadcastsi128_si256(_mm_loadu_si128(t + 6));
    const __m256i hi3 = _mm256_broadcastsi128_si256(_mm_loadu_si128(t + 7));
    Py_ssize_t i = cur->i;
    while (i + 35 <= n) {
        __m256i v0 = _mm256_loadu_si256((const __m256i *)(p + i));
        __m256i v1 = _mm256_loadu_si256((const __m256i *)(p + i + 1));
        __m256i v2 = _mm256_loadu_si256((const __m256i *)(p + i + 2));
        __m256i v3 = _mm256_loadu_si256((const __m256i *)(p + i + 3));
        __m256i m = _mm256_and_si256(_mm256_shuffle_epi8(lo0, _mm256_and_si256(v0, nib)),
                                     _mm256_shuffle_epi8(hi0, _mm256_and_si256(_mm256_srli_epi16(v0, 4), nib)));
        m = _mm256_and_si256(m, _mm256_and_si256(_mm256_shuffle_epi8(lo1, _mm256_and_si256(v1, nib)),
                                                 _mm256_shuffle_epi8(hi1, _mm256_and_si256(_mm256_srli_epi16(v1, 4), nib))));
        m = _mm256_and_si256(m, _mm256_and_si256(_mm256_shuffle_epi8(lo2, _mm256_and_si256(v2, nib)),
                                                 _mm256_shuffle_epi8(hi2, _mm256_and_si256(_mm256_srli_epi16(v2, 4), nib))));
        m = _mm256_and_si256(m, _mm256_and_si256(_mm256_shuffle_epi8(lo3, _mm256_and_si256(v3, nib)),
                                                 _mm256_shuffle_epi8(hi3, _mm256_and_si256(_mm256_srli_epi16(v3, 4), nib))));
        unsigned int cand = ~(unsigned int)_mm256_movemask_epi8(_mm256_cmpeq_epi8(m, zero));
        unsigned int nl = (unsigned int)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v0, newline));
        i = teddy_block(a, p, n, max_line, cur, hit, take, ctx, i, 32, cand, nl);
        if (i < 0)
            return i == TEDDY_END ? 0 : (int)i;
    }
    cur->i = i;
    return scan_teddy(a, p, n, max_line, cur, hit, take, ctx);
}
#endif

/* Every line of p[0, n) holding a marker in its first max_line bytes, to hit(). Returns the number
 * of lines (a last one without a newline counts), -1 when out of memory, -2 for a corrupt table.
 * No Python API: runs without the GIL. */
static Py_ssize_t
scan_block(const Automaton *a, const unsigned char *p, Py_ssize_t n, Py_ssize_t max_line, int simd, HitFn hit,
           TakeFn take, void *ctx)
{
    Cursor cur = {0, 0, 0};
    int r;
#if HAVE_TEDDY
    int level = simd < teddy_ok ? simd : teddy_ok;
    if (level >= 2 && a->teddy != NULL)
        r = scan_teddy32(a, p, n, max_line, &cur, hit, take, ctx);
    else if (level == 1 && a->teddy != NULL)
        r = scan_teddy(a, p, n, max_line, &cur, hit, take, ctx);
    else
#endif
        r = scan_scalar(a, p, n, max_line, &cur, hit, take, ctx);
    (void)simd;
    if (r < 0)
        return r;
    return cur.line + (n > 0 && p[n - 1] != '\n');
}

static int
raise_scan_error(Py_ssize_t r)
{
    if (r == -2)
        PyErr_SetString(PyExc_ValueError, "automaton state out of range");
    else
        PyErr_NoMemory();
    return -1;
}

/* A growable array of fixed-size items. */
typedef struct {
    char *items;
    Py_ssize_t n, cap, size;
} Vec;

static void *
vec_push(Vec *v)
{
    if (v->n == v->cap) {
        Py_ssize_t grown = v->cap ? v->cap * 2 : 256;
        char *bigger = (char *)realloc(v->items, (size_t)(grown * v->size));
        if (bigger == NULL)
            return NULL;
        v->items = bigger;
        v->cap = grown;
    }
    return v->items + (v->n++) * v->size;
}

/* ----------------------------------------------------------------------------- lines() */

static int
hit_line(void *ctx, Py_ssize_t ls, Py_ssize_t le, Py_ssize_t line)
{
    (void)ls, (void)le;
    Py_ssize_t *slot = (Py_ssize_t *)vec_push((Vec *)ctx);
    if (slot == NULL)
        return -1;
    *slot = line;
    return 0;
}

/* lines(text, classes, table, accept, nclasses, pairs, teddy, root2, ends, groups, chains) -> list[int]
 *   text:     str (any kind: non-Latin-1 text is read as UTF-8) or bytes
 *   classes:  bytes(256), the class of each byte value (0: in no marker)
 *   table:    bytes, uint16 native order, nstates * nclasses next states
 *   accept:   bytes(nstates), non-zero where a marker ends
 *   pairs:    bytes(65536), & 1 at a << 8 | b where a marker starts with bytes a, b, & 2 where a
 *             needle does, both at every a that is the newline
 *   teddy:    bytes(128): the nibble masks of the markers' first four bytes (the fourth all ones where a
 *             marker has three), then the quads' bitmap (QUAD_BYTES) where every marker has four, or b""
 *   root2:    where the needles' DFA starts in table (0: none); a marker accepting with kind 2
 *             counts only on a line holding every needle of one group
 *   ends:     for each state from root2 on, the bit set of the needles ending there (b"" with no root2)
 *   groups:   the needle groups by key needle: 8 * (bytes of a bit set) + 1 uint32 LE offsets, then each
 *             group a count byte and that many uint16 little-endian needle indices
 * Line i is the text between the i-th and (i+1)-th newline, numbered from 0. */
static PyObject *
scan_lines(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *text;
    AutomatonArgs aa = {.held = 0};
    Py_ssize_t nclasses, root2;
    if (!PyArg_ParseTuple(args, "Oy*y*y*ny*y*ny*y*y*", &text, &aa.classes, &aa.table, &aa.accept, &nclasses,
                          &aa.pairs, &aa.teddy, &root2, &aa.ends, &aa.groups, &aa.chains))
        return NULL;
    aa.held = 1;

    PyObject *result = NULL;
    PyObject *encoded = NULL;
    const unsigned char *p;
    Py_ssize_t n;
    Automaton a;
    Vec hits = {NULL, 0, 0, sizeof(Py_ssize_t)};

    if (!load_automaton(&aa, nclasses, root2, &a))
        goto done;
#if HAVE_TEDDY
    a.simd = teddy_ok;
#endif
    if (PyUnicode_Check(text)) {
#if PY_VERSION_HEX < 0x030C0000
        if (PyUnicode_READY(text) < 0)
            goto done;
#endif
        if (PyUnicode_KIND(text) == PyUnicode_1BYTE_KIND) {
            p = PyUnicode_1BYTE_DATA(text);  /* Latin-1: ASCII markers match the same bytes */
            n = PyUnicode_GET_LENGTH(text);
        } else {
            encoded = PyUnicode_AsEncodedString(text, "utf-8", "surrogatepass");
            if (encoded == NULL)
                goto done;
            p = (const unsigned char *)PyBytes_AS_STRING(encoded);
            n = PyBytes_GET_SIZE(encoded);
        }
    } else if (PyBytes_Check(text)) {
        p = (const unsigned char *)PyBytes_AS_STRING(text);
        n = PyBytes_GET_SIZE(text);
    } else {
        PyErr_SetString(PyExc_TypeError, "text must be str or bytes");
        goto done;
    }

    Py_ssize_t r;
    Py_BEGIN_ALLOW_THREADS
    r = scan_block(&a, p, n, PY_SSIZE_T_MAX, 2, hit_line, NULL, &hits);
    Py_END_ALLOW_THREADS
    if (r < 0) {
        raise_scan_error(r);
        goto done;
    }
    result = PyList_New(hits.n);
    if (result == NULL)
        goto done;
    for (Py_ssize_t k = 0; k < hits.n; k++) {
        PyObject *v = PyLong_FromSsize_t(((Py_ssize_t *)hits.items)[k]);
        if (v == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, k, v);
    }

done:
    free(hits.items);
    Py_XDECREF(encoded);
    release_automaton(&aa);
    return result;
}

/* ---------------------------------------------------------------------------------------------
 * chunk(): the candidate lines of a block of a log file, and the bulk lines read in full.
 *
 * --check reads gigabytes in which a few line shapes (controller Stat and staleness lines, weight
 * sync timings, prompt rejections, ...) make most of the events. Building an event object for
 * each costs more than everything else, so for lines that match one of a few *templates* exactly
 * (a1x_diagnostics/parsing/_bulk.py) this reads the numbers here and hands back a plain tuple; every
 * other line holding a marker is handed back as text for the Python parser. A template is the
 * part of a cosmos line after ``[cosmos] <stamp> - cosmos - `` (level and message), with field
 * codes:
 *   \x01  [0-9]{1,18}                       -> int
 *   \x02  [0-9.eE+-]{1,64}                  -> float: float()'s value of the token (refused: a candidate)
 *   \x03  -?[0-9]{1,18}                     -> int
 *   \x04  [0-9]{1,18} | None                -> int or None
 *   \x05  0|[1-9][0-9]{0,17}                -> int (no leading zero)
 *   \x06  [A-Za-z0-9_]{1,63}                -> str
 *   \x07  [!-~]{1,63}, then a space or the end -> str
 *   \x08  YYYY-mm-dd HH:MM:SS                 the line's time (no field)
 *   \x09  the end, or a space and the rest of the line without \r (no field)
 *   \x0a  the rest of the line without \r -> str (strict UTF-8), for Python to read
 * A template starting with '[' is matched right after the optional torchrun prefix (it must hold
 * \x08); any other after the cosmos prefix, whose time the line then has. A code with its high bit
 * set (0x81 for \x01, ...) is checked the same way and not handed back.
 * The whole line must match: nothing before the optional torchrun ``[name<N>]:`` prefix, nothing
 * after the template. A line that does not match exactly is a candidate like any other, so a
 * template can only ever decide *how fast* a line is read, never *whether*.
 */

#define MAX_FIELDS 20

typedef struct {
    Py_ssize_t start, end;   /* the line [start, end) in the block, end cut at max_line */
    Py_ssize_t lineno;
    int tid;                 /* template index, -1: a candidate */
    int rank;                /* -1: none */
    int ymdhm[5], sec, msec;
    int nfields;
    unsigned char codes[MAX_FIELDS];
    Py_ssize_t fstart[MAX_FIELDS], fend[MAX_FIELDS];
    int bad;                 /* a number token the C library refuses: the line is then a candidate */
    union { double d; long long i; } num[MAX_FIELDS];  /* the number fields' values (read_numbers) */
    double ts;               /* its time, once its minute is known (scan_chunk) */
    Py_ssize_t batch;        /* the batch it is read into (scan_chunk), -1: none */
} Hit;

static int
digits_at(const unsigned char *p, int n)
{
    int v = 0;
    for (int k = 0; k < n; k++) {
        if (p[k] < '0' || p[k] > '9')
            return -1;
        v = v * 10 + (p[k] - '0');
    }
    return v;
}

static int
days_in_month(int y, int m)
{
    static const int dim[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
        return 29;
    return dim[m - 1];
}

static Py_ssize_t
run_digits(const unsigned char *p, Py_ssize_t i, Py_ssize_t end, Py_ssize_t most)
{
    Py_ssize_t j = i;
    while (j < end && j - i <= most && p[j] >= '0' && p[j] <= '9')
        j++;
    return (j - i > most) ? -1 : j - i;
}

/* The end of the run of a number's characters [0-9.eE+-] at p[j] (1 to 64 of them), or -1. Only a
 * token: its value is float()'s (field_value, when the record is built). */
static Py_ssize_t
float_token(const unsigned char *p, Py_ssize_t j, Py_ssize_t le)
{
    Py_ssize_t k = j;
    while (k < le && k - j <= 64
           && ((p[k] >= '0' && p[k] <= '9') || p[k] == '.' || p[k] == 'e' || p[k] == 'E' || p[k] == '+' || p[k] == '-'))
        k++;
    return (k == j || k - j > 64) ? -1 : k;
}

static int
read_stamp(const unsigned char *s, Py_ssize_t n, int *t)
{
    if (n < 19 || s[4] != '-' || s[7] != '-' || s[10] != ' ' || s[13] != ':' || s[16] != ':')
        return 0;
    t[0] = digits_at(s, 4), t[1] = digits_at(s + 5, 2), t[2] = digits_at(s + 8, 2);
    t[3] = digits_at(s + 11, 2), t[4] = digits_at(s + 14, 2), t[5] = digits_at(s + 17, 2);
    return t[0] >= 1971 && t[0] <= 2999 && t[1] >= 1 && t[1] <= 12 && t[2] >= 1 && t[3] >= 0 && t[3] <= 23
           && t[4] >= 0 && t[4] <= 59 && t[5] >= 0 && t[5] <= 59 && t[2] <= days_in_month(t[0], t[1]);
}

/* Where the run of literal bytes of template tp[0, tn) that starts at k ends (k itself when tp[k] is a
 * code: bytes 0-11 and 0x80 up are the template's codes, see above). */
static Py_ssize_t
literal_run(const unsigned char *tp, Py_ssize_t k, Py_ssize_t tn)
{
    while (k < tn && tp[k] > 11 && tp[k] < 0x80)
        k++;
    return k;
}

/* A template's first 16 literal bytes as two words and their masks (bytes past its leading literal
 * zero): a line differs from most templates tried on it there, and two compares say so. */
typedef struct {
    uint64_t w[2], m[2];
} TplWords;

static void
template_words(const unsigned char *tp, Py_ssize_t run, TplWords *t)
{
    unsigned char w[16] = {0}, m[16] = {0};
    for (Py_ssize_t k = 0; k < run && k < 16; k++) {
        w[k] = tp[k];
        m[k] = 0xFF;
    }
    memcpy(t->w, w, 16);
    memcpy(t->m, m, 16);
}

/* Match line p[ls, le) against the templates; fills h (tid, rank, time, fields) and returns 1.
 * A template starting with '[' is matched right after the optional torchrun prefix (and must
 * hold \x08, the time); any other right after a cosmos prefix. */
static int
match_templates(const unsigned char *p, Py_ssize_t ls, Py_ssize_t le, const unsigned char **tpl,
                const Py_ssize_t *tlen, const Py_ssize_t *trun, const TplWords *tw, int ntpl, Hit *h)
{
    Py_ssize_t i = ls;
    int rank = -1;
    if (le - i >= 1 && p[i] == '[' && !(le - i >= 9 && memcmp(p + i, "[cosmos] ", 9) == 0)) {
        Py_ssize_t q = i + 1;
        while (q < le && ((p[q] >= 'a' && p[q] <= 'z') || (p[q] >= 'A' && p[q] <= 'Z') || p[q] == '_'))
            q++;
        Py_ssize_t nd = q > i + 1 ? run_digits(p, q, le, 9) : 0;
        if (nd > 0 && q + nd + 2 <= le && p[q + nd] == ']' && p[q + nd + 1] == ':' && q + nd + 2 - ls <= 24) {
            rank = digits_at(p + q, (int)nd);
            i = q + nd + 2;
        }
    }
    /* [cosmos] YYYY-mm-dd HH:MM:SS,mmm - cosmos -  : its stamp read once a template's leading bytes
     * match what follows (stamp: 0 not read yet, 1 read, -1 not a stamp) */
    int cosmos_t[6], cosmos_ms = -1, stamp = 0;
    Py_ssize_t body = -1;
    if (le - i >= 9 + 23 + 12 && memcmp(p + i, "[cosmos] ", 9) == 0 && p[i + 28] == ','
        && memcmp(p + i + 32, " - cosmos - ", 12) == 0)
        body = i + 9 + 23 + 12;
    uint64_t words[2][2];  /* the 16 bytes at i and at body, where the line holds them */
    int have[2] = {le - i >= 16, body >= 0 && le - body >= 16};
    if (have[0])
        memcpy(words[0], p + i, 16);
    if (have[1])
        memcpy(words[1], p + body, 16);
    for (int t = 0; t < ntpl; t++) {
        const unsigned char *tp = tpl[t];
        Py_ssize_t tn = tlen[t], k = 0, j;
        int nf = 0, ok = 1, tm[6], ms = 0, timed = 0, at_body = !(tn > 0 && tp[0] == '[');
        if (at_body && body < 0)
            continue;
        j = at_body ? body : i;
        const uint64_t *x = words[at_body];
        if (have[at_body] && (((x[0] ^ tw[t].w[0]) & tw[t].m[0]) | ((x[1] ^ tw[t].w[1]) & tw[t].m[1])))
            continue;
        /* Its leading literal bytes (trun: counted once a call) first: most lines a template is tried on
         * are other messages under the same tag, and differ there. */
        if (trun[t] > 0) {
            if (le - j < trun[t] || !same_bytes(p + j, tp, (size_t)trun[t]))
                continue;
            j += trun[t];
            k = trun[t];
        }
        if (at_body) {
            if (stamp == 0) {
                cosmos_ms = read_stamp(p + i + 9, 19, cosmos_t) ? digits_at(p + i + 29, 3) : -1;
                stamp = cosmos_ms >= 0 ? 1 : -1;
            }
            if (stamp < 0)
                continue;
            memcpy(tm, cosmos_t, sizeof tm);
            ms = cosmos_ms;
            timed = 1;
        }
        while (k < tn && ok) {
            unsigned char c = tp[k];
            Py_ssize_t run = literal_run(tp, k, tn);
            if (run > k) {  /* a run of literal bytes */
                if (le - j < run - k || !same_bytes(p + j, tp + k, (size_t)(run - k))) {
                    ok = 0;
                    break;
                }
                j += run - k;
                k = run;
                continue;
            }
            if (c == 8) {  /* the time, without milliseconds */
                ok = read_stamp(p + j, le - j, tm);
                j += 19;
                ms = 0;
                timed = 1;
                k++;
                continue;
            }
            if (c == 9) {  /* the rest of the line, if any, after a space: no \r in it */
                if (j < le) {
                    ok = p[j] == ' ' && memchr(p + j, '\r', (size_t)(le - j)) == NULL;
                    j = le;
                }
                k++;
                continue;
            }
            int keep = c < 0x80;  /* a code with the high bit set: checked, not handed back */
            c &= 0x7F;
            if (keep && nf == MAX_FIELDS) {
                ok = 0;
                break;
            }
            Py_ssize_t f0 = j, n;
            switch (c) {
            case 1:
                n = run_digits(p, j, le, 18);
                ok = n > 0;
                j += n > 0 ? n : 0;
                break;
            case 3:
                if (j < le && p[j] == '-')
                    j++;
                n = run_digits(p, j, le, 18);
                ok = n > 0;
                j += n > 0 ? n : 0;
                break;
            case 4:
                if (le - j >= 4 && memcmp(p + j, "None", 4) == 0) {
                    j += 4;
                    break;
                }
                n = run_digits(p, j, le, 18);
                ok = n > 0;
                j += n > 0 ? n : 0;
                break;
            case 5:
                n = run_digits(p, j, le, 18);
                ok = n > 0 && !(n > 1 && p[j] == '0');
                j += n > 0 ? n : 0;
                break;
            case 2:  /* a number's characters; its value is float()'s */
                j = float_token(p, j, le);
                ok = j >= 0;
                break;
            case 6:  /* an ASCII word */
                while (j < le && j - f0 < 64 && ((p[j] >= 'a' && p[j] <= 'z') || (p[j] >= 'A' && p[j] <= 'Z')
                                                 || (p[j] >= '0' && p[j] <= '9') || p[j] == '_'))
                    j++;
                ok = j > f0 && j - f0 < 64;
                break;
            case 7:  /* printable ASCII up to a space or the end */
                while (j < le && j - f0 < 64 && p[j] > ' ' && p[j] < 127)
                    j++;
                ok = j > f0 && j - f0 < 64 && (j == le || p[j] == ' ');
                break;
            case 10:  /* the rest of the line, no \r in it: text for Python to read */
                ok = memchr(p + j, '\r', (size_t)(le - j)) == NULL;
                j = le;
                break;
            default:
                ok = 0;
            }
            if (!ok)
                break;
            if (keep) {
                h->codes[nf] = c;
                h->fstart[nf] = f0;
                h->fend[nf] = j;
                nf++;
            }
            k++;
        }
        if (ok && timed && k == tn && j == le) {
            h->tid = t;
            h->rank = rank;
            memcpy(h->ymdhm, tm, sizeof h->ymdhm);
            h->sec = tm[5];
            h->msec = ms;
            h->nfields = nf;
            return 1;
        }
    }
    return 0;
}

/* The number fields of a matched line, read while the scan runs without the GIL (they were 7 % of a
 * dense scan's cycles, all of them under the GIL, where the records are built). The C library's
 * conversions, whole token or refused: over these tokens ([0-9.eE+-] for floats, -?[0-9]{1,18} for
 * ints: no space, underscore, letter or hex) strtod and strtoll accept what float() and int() accept,
 * and strtod rounds correctly as float() does (overflow: inf, as float()). PyOS_string_to_double set
 * and restored the x87 control word on each call, 8 % of a dense scan's cycles on the dev VM
 * (docs/parsing.md, "Numbers through the C library"). A locale whose decimal point is not '.'
 * refuses every fraction: those lines go to Python, same events. */
/* Whether field f of a hit is the token None (an "int?" field). */
static int
is_none(const unsigned char *p, const Hit *h, int f)
{
    return h->codes[f] == 4 && h->fend[f] - h->fstart[f] == 4 && memcmp(p + h->fstart[f], "None", 4) == 0;
}

static void
read_numbers(const unsigned char *p, Hit *h)
{
    h->bad = 0;
    for (int f = 0; f < h->nfields; f++) {
        int code = h->codes[f];
        if (code == 6 || code == 7 || code == 10)
            continue;
        const char *s = (const char *)p + h->fstart[f];
        Py_ssize_t n = h->fend[f] - h->fstart[f];
        if (is_none(p, h, f))
            continue;
        char tmp[80];  /* tokens are at most 64 bytes (floats) or 19 (ints) */
        if (n >= (Py_ssize_t)sizeof tmp) {
            h->bad = 1;
            return;
        }
        memcpy(tmp, s, (size_t)n);
        tmp[n] = 0;
        char *stop = NULL;
        if (code == 2)
            h->num[f].d = strtod(tmp, &stop);
        else
            h->num[f].i = strtoll(tmp, &stop, 10);
        if (stop != tmp + n) {
            h->bad = 1;
            return;
        }
    }
}

/* The value of field f of a hit, as Python reads it: float() and int()'s values (read_numbers). NULL with
 * ValueError where Python refuses the token (the line is then a candidate), or another error. */
static PyObject *
field_value(const unsigned char *p, const Hit *h, int f)
{
    const char *s = (const char *)p + h->fstart[f];
    Py_ssize_t n = h->fend[f] - h->fstart[f];
    int code = h->codes[f];
    if (code == 6 || code == 7)
        return PyUnicode_DecodeASCII(s, n, "strict");
    if (code == 10)  /* not UTF-8: a UnicodeDecodeError, a ValueError: the line is then a candidate */
        return PyUnicode_DecodeUTF8(s, n, "strict");
    if (is_none(p, h, f))
        Py_RETURN_NONE;
    if (h->bad) {  /* a token read_numbers refused */
        PyErr_SetString(PyExc_ValueError, "not a number");
        return NULL;
    }
    if (code == 2)
        return PyFloat_FromDouble(h->num[f].d);
    return PyLong_FromLongLong(h->num[f].i);
}

typedef struct {
    Vec hits;
    const unsigned char *p;
    Py_ssize_t n, lineno0, max_line;
    const unsigned char **tpl;
    const Py_ssize_t *tlen, *trun;
    const TplWords *tw;
    int ntpl;
    Py_ssize_t matched_ls;  /* the line whose templates were last tried (into matched), -1: none */
    Hit matched;
} ChunkCtx;

/* The templates tried on the line starting at ls, once however often it is asked. */
static const Hit *
line_match(ChunkCtx *c, Py_ssize_t ls, Py_ssize_t le)
{
    if (c->matched_ls != ls) {
        c->matched_ls = ls;
        c->matched.tid = -1;
        if (c->ntpl > 0 && le - ls <= c->max_line)
            match_templates(c->p, ls, le, c->tpl, c->tlen, c->trun, c->tw, c->ntpl, &c->matched);
    }
    return &c->matched;
}

/* A bulk line is taken before its needles are walked: a line a template matches holds its rule's
 * strings, a group of the needles (tests/parsing/test_bulk.py), so the walk could only agree. */
static int
take_bulk(void *ctx, Py_ssize_t ls)
{
    ChunkCtx *c = (ChunkCtx *)ctx;
    if (c->ntpl == 0)
        return 0;
    const unsigned char *nl = memchr(c->p + ls, '\n', (size_t)(c->n - ls));
    return line_match(c, ls, nl == NULL ? c->n : nl - c->p)->tid >= 0;
}

static int
hit_chunk(void *ctx, Py_ssize_t ls, Py_ssize_t le, Py_ssize_t line)
{
    ChunkCtx *c = (ChunkCtx *)ctx;
    Hit *h = (Hit *)vec_push(&c->hits);
    if (h == NULL)
        return -1;
    *h = *line_match(c, ls, le);
    if (h->tid >= 0)
        read_numbers(c->p, h);
    h->start = ls;
    h->end = le - ls > c->max_line ? ls + c->max_line : le;
    h->lineno = c->lineno0 + line;
    return 0;
}

/* The record of a matched hit whose time is known: an instance of cls (kind, lineno, rank, ts, bytes,
 * *fields). NULL with *refused set where Python refuses a field's token (the line is then a candidate),
 * NULL with it clear on another error. */
static PyObject *
make_record(const unsigned char *p, const Hit *h, PyTypeObject *cls, int *refused)
{
    PyObject *vals[5 + MAX_FIELDS];
    *refused = 0;
    vals[0] = PyLong_FromLong(h->tid);
    vals[1] = PyLong_FromSsize_t(h->lineno);
    vals[2] = h->rank < 0 ? Py_NewRef(Py_None) : PyLong_FromLong(h->rank);
    vals[3] = PyFloat_FromDouble(h->ts);
    vals[4] = PyBytes_FromStringAndSize((const char *)p + h->start, h->end - h->start);
    if (!vals[0] || !vals[1] || !vals[2] || !vals[3] || !vals[4]) {
        for (int v = 0; v < 5; v++)
            Py_XDECREF(vals[v]);
        return NULL;
    }
    int nv = 5;
    for (int f = 0; nv == 5 + f && f < h->nfields; f++)
        if ((vals[nv] = field_value(p, h, f)) != NULL)
            nv++;
    int built = nv == 5 + h->nfields;
    PyObject *item = built ? cls->tp_alloc(cls, nv) : NULL;
    if (item == NULL) {
        for (int v = 0; v < nv; v++)
            Py_DECREF(vals[v]);
        if (!built && PyErr_ExceptionMatches(PyExc_ValueError)) {
            PyErr_Clear();
            *refused = 1;
        }
        return NULL;
    }
    for (int v = 0; v < nv; v++)
        PyTuple_SET_ITEM(item, v, vals[v]);
    /* Its items are ints, floats, str, bytes or None: it can be in no cycle. The collector untracks such
     * a plain tuple itself, never a named tuple, and would walk every record kept at each collection. */
    PyObject_GC_UnTrack(item);
    return item;
}

/* A batch: one family's records of a stretch of a block read into columns (scan_chunk's batches). */
#define MAX_BATCHES 4
typedef struct {
    PyTypeObject *cls;
    int first_tid, value_field, step_field;
    Py_ssize_t keep, least;
} BatchSpec;

typedef struct {
    const BatchSpec *spec;
    Py_ssize_t count, last, j;  /* last: the index of its last hit; j: its records seen so far */
    Py_ssize_t slot;            /* its place in the items: where its first record was */
    double *ts, *values;
    double lo, hi, latest_ts;
    long long latest_step;
    int has_latest;
    Py_ssize_t first_line, last_line;
    PyObject *kept;
} Batch;

/* A batch, complete (its last hit read): an instance of its class (kind, line, n, last_line, lo, hi,
 * ts, values, latest, kept, offset, nbytes, lineno0). */
static PyObject *
make_batch(Batch *b, Py_ssize_t offset0, Py_ssize_t nbytes, Py_ssize_t lineno0)
{
    PyObject *vals[13];
    int with_values = b->spec->value_field >= 0;
    vals[0] = PyLong_FromLong(b->spec->first_tid);
    vals[1] = PyLong_FromSsize_t(b->first_line);
    vals[2] = PyLong_FromSsize_t(b->count);
    vals[3] = PyLong_FromSsize_t(b->last_line);
    vals[4] = PyFloat_FromDouble(b->lo);
    vals[5] = PyFloat_FromDouble(b->hi);
    vals[6] = with_values ? PyBytes_FromStringAndSize((const char *)b->ts, b->count * (Py_ssize_t)sizeof(double))
                          : Py_NewRef(Py_None);
    vals[7] = with_values ? PyBytes_FromStringAndSize((const char *)b->values, b->count * (Py_ssize_t)sizeof(double))
                          : Py_NewRef(Py_None);
    vals[8] = b->has_latest ? Py_BuildValue("(dL)", b->latest_ts, b->latest_step) : Py_NewRef(Py_None);
    vals[9] = Py_NewRef(b->kept);
    vals[10] = PyLong_FromSsize_t(offset0);
    vals[11] = PyLong_FromSsize_t(nbytes);
    vals[12] = PyLong_FromSsize_t(lineno0);
    PyObject *item = NULL;
    int ok = 1;
    for (int v = 0; v < 13; v++)
        ok &= vals[v] != NULL;
    if (ok)
        item = b->spec->cls->tp_alloc(b->spec->cls, 13);
    if (item == NULL) {
        for (int v = 0; v < 13; v++)
            Py_XDECREF(vals[v]);
        return NULL;
    }
    for (int v = 0; v < 13; v++)
        PyTuple_SET_ITEM(item, v, vals[v]);
    return item;
}

/* A tuple subclass without instance fields (a named tuple class). */
static int
is_record_class(PyObject *cls)
{
    return PyType_Check(cls) && PyType_IsSubtype((PyTypeObject *)cls, &PyTuple_Type)
           && ((PyTypeObject *)cls)->tp_basicsize == PyTuple_Type.tp_basicsize
           && ((PyTypeObject *)cls)->tp_itemsize == PyTuple_Type.tp_itemsize;
}

/* chunk(data, classes, table, accept, nclasses, pairs, teddy, root2, ends, groups, chains, templates, lineno, offset, max_line,
 *       minute_base, simd, batches, beside) -> (items, lines)
 *   data:        a buffer of whole lines; a last line without a newline counts as a line
 *   templates:   tuple of bytes (see above); () reads no line in full
 *   lineno:      the number of the first line; offset: the file offset of data[0]
 *   max_line:    lines are searched and handed back up to this many bytes
 *   minute_base: callable (y, mo, d, hh, mi) -> int seconds since the epoch of that local minute,
 *                or None (the line is then a candidate); asked once per distinct minute in a row
 *   simd:        the widest prefilter to use where the CPU has it: 2 (32 positions, AVX2),
 *                1 (16, SSSE3), 0 (one position at a time)
 *   batches:     tuple of (class, template indices as bytes, value field, step field, keep, least), at most
 *                4: in a stretch of lines handed back that are all records of their templates or of those
 *                in beside (bytes of template indices), between two other lines (candidates, or records
 *                of other templates) or the block's ends, the records of each batch's templates come as
 *                one instance of its class where there are at least least of them (a named tuple,
 *                placed where its first record was): kind (its first template's index), line (of its
 *                first record), n, last_line, lo and hi (its least and greatest time), ts and values
 *                (the times and value field, a float field, of every record as native doubles in bytes;
 *                None for value field -1), latest ((time, step), the greatest of those whose step field,
 *                an int field, is not None; None if none is or for step field -1), kept (a list: its
 *                first keep records and its last keep, every record when there are at most 2 * keep),
 *                offset, nbytes, lineno0 (the block: this call's data, to read again without batches).
 *                A record with a text field (which may refuse its bytes) is never in a stretch.
 *   items:       in line order, a candidate as (lineno, offset, text) (decoded as UTF-8 with
 *                replacement characters), a bulk line as its record: an instance of the template's
 *                class (a named tuple) holding (template index, lineno, rank or None, ts,
 *                bytes, *fields), or its batch; lines: the number of lines in data */
static PyObject *
scan_chunk(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer data, beside;
    AutomatonArgs aa = {.held = 0};
    Py_ssize_t nclasses, root2, lineno0, offset0, max_line;
    PyObject *templates, *minute_base, *batch_specs;
    int simd;
    if (!PyArg_ParseTuple(args, "y*y*y*y*ny*y*ny*y*y*O!nnnOiO!y*", &data, &aa.classes, &aa.table, &aa.accept,
                          &nclasses, &aa.pairs, &aa.teddy, &root2, &aa.ends, &aa.groups, &aa.chains, &PyTuple_Type,
                          &templates, &lineno0, &offset0, &max_line, &minute_base, &simd, &PyTuple_Type,
                          &batch_specs, &beside))
        return NULL;
    aa.held = 1;

    PyObject *result = NULL, *items = NULL, *base_ref = NULL;
    const unsigned char *tpl[16];
    Py_ssize_t tlen[16], trun[16];
    TplWords tw[16];
    PyTypeObject *rtype[16];
    int ntpl = (int)PyTuple_GET_SIZE(templates);
    int nbatch = (int)PyTuple_GET_SIZE(batch_specs);
    BatchSpec spec[MAX_BATCHES];
    Vec batches = {NULL, 0, 0, sizeof(Batch)};
    int fam_of[16], may_beside[16];
    Automaton a;
    ChunkCtx ctx = {.hits = {NULL, 0, 0, sizeof(Hit)}, .p = (const unsigned char *)data.buf, .n = data.len,
                    .lineno0 = lineno0, .max_line = max_line, .tpl = tpl, .tlen = tlen, .trun = trun, .tw = tw,
                    .ntpl = ntpl, .matched_ls = -1};
    for (int t = 0; t < 16; t++)
        fam_of[t] = -1, may_beside[t] = 0;

    if (!load_automaton(&aa, nclasses, root2, &a))
        goto done;
#if HAVE_TEDDY
    a.simd = simd < teddy_ok ? simd : teddy_ok;
#endif
    if (max_line <= 0) {
        PyErr_SetString(PyExc_ValueError, "max_line must be positive");
        goto done;
    }
    if (ntpl > 16) {
        PyErr_SetString(PyExc_ValueError, "at most 16 templates");
        goto done;
    }
    for (int t = 0; t < ntpl; t++) {
        /* (template bytes, record class): a tuple subclass without instance fields (a named tuple) */
        PyObject *pair = PyTuple_GET_ITEM(templates, t), *o, *cls;
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 || !PyBytes_Check(o = PyTuple_GET_ITEM(pair, 0))
            || !is_record_class(cls = PyTuple_GET_ITEM(pair, 1))) {
            PyErr_SetString(PyExc_TypeError, "templates must be (bytes, named tuple class) pairs");
            goto done;
        }
        tpl[t] = (const unsigned char *)PyBytes_AS_STRING(o);
        tlen[t] = PyBytes_GET_SIZE(o);
        trun[t] = literal_run(tpl[t], 0, tlen[t]);
        template_words(tpl[t], trun[t], &tw[t]);
        rtype[t] = (PyTypeObject *)cls;
    }
    if (!PyCallable_Check(minute_base)) {
        PyErr_SetString(PyExc_TypeError, "minute_base must be callable");
        goto done;
    }
    if (nbatch > MAX_BATCHES) {
        PyErr_SetString(PyExc_ValueError, "at most 4 batches");
        goto done;
    }
    for (int b = 0; b < nbatch; b++) {
        PyObject *o = PyTuple_GET_ITEM(batch_specs, b), *tids;
        Py_ssize_t keep, least;
        if (!PyTuple_Check(o) || PyTuple_GET_SIZE(o) != 6 || !is_record_class(PyTuple_GET_ITEM(o, 0))
            || !PyBytes_Check(tids = PyTuple_GET_ITEM(o, 1)) || PyBytes_GET_SIZE(tids) < 1
            || !PyLong_Check(PyTuple_GET_ITEM(o, 2)) || !PyLong_Check(PyTuple_GET_ITEM(o, 3))
            || (keep = PyLong_AsSsize_t(PyTuple_GET_ITEM(o, 4))) < 1
            || (least = PyLong_AsSsize_t(PyTuple_GET_ITEM(o, 5))) < 1) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "batches must be (named tuple class, bytes, int, int, int > 0, int > 0)");
            goto done;
        }
        spec[b].cls = (PyTypeObject *)PyTuple_GET_ITEM(o, 0);
        spec[b].value_field = (int)PyLong_AsLong(PyTuple_GET_ITEM(o, 2));
        spec[b].step_field = (int)PyLong_AsLong(PyTuple_GET_ITEM(o, 3));
        spec[b].keep = keep;
        spec[b].least = least;
        spec[b].first_tid = ((const unsigned char *)PyBytes_AS_STRING(tids))[0];
        for (Py_ssize_t k = 0; k < PyBytes_GET_SIZE(tids); k++) {
            int t = ((const unsigned char *)PyBytes_AS_STRING(tids))[k];
            if (t >= ntpl || fam_of[t] >= 0) {
                PyErr_SetString(PyExc_ValueError, "a batch's template is not one, or in two batches");
                goto done;
            }
            fam_of[t] = b;
        }
    }
    for (Py_ssize_t k = 0; k < beside.len; k++) {
        int t = ((const unsigned char *)beside.buf)[k];
        if (t < 16)
            may_beside[t] = 1;
    }

    const unsigned char *p = (const unsigned char *)data.buf;
    Py_ssize_t nlines;
    Py_BEGIN_ALLOW_THREADS
    nlines = scan_block(&a, p, data.len, max_line, simd, hit_chunk, take_bulk, &ctx);
    Py_END_ALLOW_THREADS
    if (nlines < 0) {
        raise_scan_error(nlines);
        goto done;
    }

    /* Each matched line's time, from its minute's base: a line whose minute has none, or whose number
     * token Python refuses, is a candidate. Then the stretches of lines that batches may take (records
     * of a batch's template or of one beside them, without a text field), and their batches. */
    int last_key[5] = {-1, -1, -1, -1, -1};
    Py_ssize_t stretch = 0;  /* where the stretch being looked at starts */
    for (Py_ssize_t k = 0; k <= ctx.hits.n; k++) {
        Hit *h = k < ctx.hits.n ? &((Hit *)ctx.hits.items)[k] : NULL;
        int takes = 0;
        if (h != NULL) {
            h->batch = -1;
            if (h->tid >= 0 && memcmp(last_key, h->ymdhm, sizeof last_key) != 0) {
                Py_XDECREF(base_ref);
                base_ref = PyObject_CallFunction(minute_base, "iiiii", h->ymdhm[0], h->ymdhm[1], h->ymdhm[2],
                                                 h->ymdhm[3], h->ymdhm[4]);
                if (base_ref == NULL)
                    goto done;
                if (base_ref != Py_None && !PyLong_Check(base_ref)) {
                    PyErr_SetString(PyExc_TypeError, "minute_base must return an int or None");
                    goto done;
                }
                memcpy(last_key, h->ymdhm, sizeof last_key);
            }
            if (h->tid >= 0 && (base_ref == Py_None || h->bad))
                h->tid = -1;
            if (h->tid >= 0) {
                long long base = PyLong_AsLongLong(base_ref);
                if (base == -1 && PyErr_Occurred())
                    goto done;
                /* what datetime.timestamp() computes: whole seconds, then the microseconds / 1e6 */
                h->ts = (double)(base + h->sec) + (double)(h->msec * 1000) / 1e6;
            }
            takes = nbatch > 0 && h->tid >= 0 && (fam_of[h->tid] >= 0 || may_beside[h->tid]);
            for (int f = 0; takes && f < h->nfields; f++)
                takes = h->codes[f] != 10;
        }
        if (takes)
            continue;
        /* the stretch [stretch, k) ends: a batch for each family with at least least records in it */
        Py_ssize_t count[MAX_BATCHES] = {0}, last[MAX_BATCHES] = {0}, at[MAX_BATCHES];
        for (Py_ssize_t i = stretch; i < k; i++) {
            Hit *g = &((Hit *)ctx.hits.items)[i];
            int f = fam_of[g->tid];
            if (f >= 0)
                count[f]++, last[f] = i;
        }
        int any = 0;
        for (int f = 0; f < nbatch; f++) {
            at[f] = -1;
            if (count[f] < spec[f].least)
                continue;
            Batch *bt = (Batch *)vec_push(&batches);
            if (bt == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            memset(bt, 0, sizeof *bt);
            bt->spec = &spec[f];
            bt->count = count[f];
            bt->last = last[f];
            at[f] = batches.n - 1;
            any = 1;
        }
        for (Py_ssize_t i = stretch; any && i < k; i++) {
            Hit *g = &((Hit *)ctx.hits.items)[i];
            int f = fam_of[g->tid];
            if (f < 0 || at[f] < 0)
                continue;
            const BatchSpec *sp = &spec[f];
            if ((sp->value_field >= 0 && (sp->value_field >= g->nfields || g->codes[sp->value_field] != 2))
                || (sp->step_field >= 0 && (sp->step_field >= g->nfields || g->codes[sp->step_field] == 2
                                            || g->codes[sp->step_field] > 5))) {
                PyErr_SetString(PyExc_TypeError, "a batch's value field must be a float field, its step an int");
                goto done;
            }
            g->batch = at[f];
        }
        stretch = k + 1;
    }

    items = PyList_New(0);
    if (items == NULL)
        goto done;
    for (Py_ssize_t k = 0; k < ctx.hits.n; k++) {
        Hit *h = &((Hit *)ctx.hits.items)[k];
        PyObject *item = NULL;
        int refused = 1;
        if (h->batch >= 0) {
            Batch *bt = &((Batch *)batches.items)[h->batch];
            const BatchSpec *sp = bt->spec;
            Py_ssize_t j = bt->j++;
            if (j == 0) {
                bt->first_line = h->lineno, bt->lo = bt->hi = h->ts;
                if ((bt->kept = PyList_New(0)) == NULL)
                    goto done;
                if (sp->value_field >= 0) {
                    bt->ts = malloc((size_t)bt->count * sizeof(double));
                    bt->values = malloc((size_t)bt->count * sizeof(double));
                    if (bt->ts == NULL || bt->values == NULL) {
                        PyErr_NoMemory();
                        goto done;
                    }
                }
            }
            bt->last_line = h->lineno;
            if (h->ts < bt->lo)
                bt->lo = h->ts;
            if (h->ts > bt->hi)
                bt->hi = h->ts;
            if (sp->value_field >= 0) {
                bt->ts[j] = h->ts;
                bt->values[j] = h->num[sp->value_field].d;
            }
            if (sp->step_field >= 0 && !is_none(p, h, sp->step_field)) {
                long long step = h->num[sp->step_field].i;
                if (!bt->has_latest || h->ts > bt->latest_ts || (h->ts == bt->latest_ts && step > bt->latest_step))
                    bt->latest_ts = h->ts, bt->latest_step = step, bt->has_latest = 1;
            }
            if (j < sp->keep || j >= bt->count - sp->keep) {
                PyObject *rec = make_record(p, h, rtype[h->tid], &refused);
                if (rec == NULL) {
                    if (refused)  /* the checks above leave no field to refuse */
                        PyErr_SetString(PyExc_SystemError, "a batched record refused a field");
                    goto done;
                }
                int bad = PyList_Append(bt->kept, rec) < 0;
                Py_DECREF(rec);
                if (bad)
                    goto done;
            }
            if (j == 0) {  /* its place: the batch is put there once its last record is read */
                bt->slot = PyList_GET_SIZE(items);
                if (PyList_Append(items, Py_None) < 0)
                    goto done;
            }
            if (k == bt->last) {
                item = make_batch(bt, offset0, data.len, lineno0);
                if (item == NULL)
                    goto done;
                PyList_SetItem(items, bt->slot, item);  /* steals the reference */
            }
            continue;
        } else if (h->tid >= 0) {
            item = make_record(p, h, rtype[h->tid], &refused);
            if (item == NULL && !refused)
                goto done;
        }
        if (item == NULL) {
            PyObject *text = PyUnicode_DecodeUTF8((const char *)p + h->start, h->end - h->start, "replace");
            if (text == NULL)
                goto done;
            item = Py_BuildValue("(nnN)", h->lineno, offset0 + h->start, text);
            if (item == NULL)
                goto done;
        }
        if (PyList_Append(items, item) < 0) {
            Py_DECREF(item);
            goto done;
        }
        Py_DECREF(item);
    }
    result = Py_BuildValue("(On)", items, nlines);

done:
    for (Py_ssize_t b = 0; b < batches.n; b++) {
        Batch *bt = &((Batch *)batches.items)[b];
        free(bt->ts);
        free(bt->values);
        Py_XDECREF(bt->kept);
    }
    free(batches.items);
    free(ctx.hits.items);
    Py_XDECREF(base_ref);
    Py_XDECREF(items);
    PyBuffer_Release(&data);
    PyBuffer_Release(&beside);
    release_automaton(&aa);
    return result;
}

static PyMethodDef scan_methods[] = {
    {"lines", scan_lines, METH_VARARGS,
     "lines(text, classes, table, accept, nclasses, pairs, teddy, root2, ends, groups, chains) -> indices of the lines "
     "holding a marker"},
    {"chunk", scan_chunk, METH_VARARGS,
     "chunk(data, classes, table, accept, nclasses, pairs, teddy, root2, ends, groups, chains, templates, lineno, offset, "
     "max_line, "
     "minute_base, simd, batches, beside) -> (items, lines)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef scan_module = {
    PyModuleDef_HEAD_INIT, "a1x_diagnostics._scan", "Multi-string line scanner (Aho-Corasick DFA).", -1, scan_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__scan(void)
{
#if HAVE_TEDDY
    __builtin_cpu_init();
    teddy_ok = !__builtin_cpu_supports("ssse3") || !__builtin_cpu_supports("popcnt") ? 0
               : __builtin_cpu_supports("avx2") ? 2 : 1;
#endif
    PyObject *m = PyModule_Create(&scan_module);
#if HAVE_TEDDY
    long simd = teddy_ok;
#else
    long simd = 0;
#endif
    /* ABI: the calling convention of lines() and chunk() (a1x_diagnostics/parsing/_scan.py checks it) */
    if (m != NULL && (PyModule_AddIntConstant(m, "SIMD", simd) < 0 || PyModule_AddIntConstant(m, "ABI", 11) < 0)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
