/* diagnostics._scan: which lines of a text hold one of a set of fixed strings, in one pass.
 *
 * The live follower asks this of every block of new lines (diagnostics/live/_engine.py): most
 * lines of a Cosmos-RL log are noise, and only those holding a parser marker are parsed. The
 * automaton (an Aho-Corasick DFA over byte classes) is built in Python
 * (diagnostics/parsing/_scan.py); this file only runs it. Optional: without a C compiler the
 * package falls back to str.find scans, which find the same lines.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* lines(text, classes, table, accept, nclasses) -> list[int]
 *   text:     str (any kind: non-Latin-1 text is read as UTF-8) or bytes
 *   classes:  bytes(256), the class of each byte value (0: in no marker)
 *   table:    bytes, uint16 native order, nstates * nclasses next states
 *   accept:   bytes(nstates), non-zero where a marker ends
 * Line i is the text between the i-th and (i+1)-th newline, numbered from 0. A marker never holds
 * a newline, so the automaton restarts at every line. */
static PyObject *
scan_lines(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *text;
    Py_buffer classes, table, accept;
    Py_ssize_t nclasses;
    if (!PyArg_ParseTuple(args, "Oy*y*y*n", &text, &classes, &table, &accept, &nclasses))
        return NULL;

    PyObject *result = NULL;
    PyObject *encoded = NULL;
    const unsigned char *p;
    Py_ssize_t n;
    Py_ssize_t *hits = NULL;
    Py_ssize_t nhits = 0, cap = 0;

    if (classes.len != 256 || nclasses <= 0 || nclasses > 256 || table.len % (2 * nclasses) != 0
        || accept.len < 1 || accept.len != table.len / (2 * nclasses)) {
        PyErr_SetString(PyExc_ValueError, "inconsistent automaton");
        goto done;
    }
    for (int b = 0; b < 256; b++) {
        if (((const unsigned char *)classes.buf)[b] >= nclasses) {
            PyErr_SetString(PyExc_ValueError, "inconsistent automaton: byte class out of range");
            goto done;
        }
    }
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

    {
        const unsigned char *cls = (const unsigned char *)classes.buf;
        const uint16_t *next = (const uint16_t *)table.buf;
        const unsigned char *acc = (const unsigned char *)accept.buf;
        const Py_ssize_t nstates = accept.len;
        const Py_ssize_t stride = nclasses;
        int failed = 0;
        unsigned char starts[256];  /* bytes that leave the start state, and the newline */
        for (int b = 0; b < 256; b++)
            starts[b] = (b == '\n') || next[cls[b]] != 0;
        Py_BEGIN_ALLOW_THREADS
        Py_ssize_t line = 0, i = 0;
        unsigned int state = 0;
        while (i < n) {
            if (state == 0) {  /* most bytes: a tight loop with no automaton step */
                while (i < n && !starts[p[i]])
                    i++;
                if (i >= n)
                    break;
            }
            unsigned char c = p[i];
            if (c == '\n') {
                line++;
                state = 0;
                i++;
                continue;
            }
            state = next[state * stride + cls[c]];
            if (state >= (unsigned int)nstates) {  /* a corrupt table: never read past it */
                failed = 1;
                break;
            }
            if (acc[state]) {
                if (nhits == cap) {
                    Py_ssize_t grown = cap ? cap * 2 : 64;
                    Py_ssize_t *bigger = (Py_ssize_t *)realloc(hits, (size_t)grown * sizeof(Py_ssize_t));
                    if (bigger == NULL) {
                        failed = 2;
                        break;
                    }
                    hits = bigger;
                    cap = grown;
                }
                hits[nhits++] = line;
                const unsigned char *nl = memchr(p + i, '\n', (size_t)(n - i));
                if (nl == NULL)
                    break;
                i = nl - p;  /* the newline itself is counted at the top of the loop */
                continue;
            }
            i++;
        }
        Py_END_ALLOW_THREADS
        if (failed == 1) {
            PyErr_SetString(PyExc_ValueError, "automaton state out of range");
            goto done;
        }
        if (failed == 2) {
            PyErr_NoMemory();
            goto done;
        }
    }

    result = PyList_New(nhits);
    if (result == NULL)
        goto done;
    for (Py_ssize_t k = 0; k < nhits; k++) {
        PyObject *v = PyLong_FromSsize_t(hits[k]);
        if (v == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, k, v);
    }

done:
    free(hits);
    Py_XDECREF(encoded);
    PyBuffer_Release(&classes);
    PyBuffer_Release(&table);
    PyBuffer_Release(&accept);
    return result;
}


/* ---------------------------------------------------------------------------------------------
 * chunk(): the candidate lines of a block of a log file, and the bulk lines read in full.
 *
 * --check reads gigabytes in which a few line shapes (controller Stat and staleness lines, weight
 * sync timings, prompt rejections, ...) make most of the events. Building an event object for
 * each costs more than everything else, so for lines that match one of a few *templates* exactly
 * (diagnostics/parsing/_bulk.py) this reads the numbers here and hands back a plain tuple; every
 * other line holding a marker is handed back as text for the Python parser. A template is the
 * part of a cosmos line after ``[cosmos] <stamp> - cosmos - `` (level and message), with field
 * codes:
 *   \x01  [0-9]{1,18}                       -> int
 *   \x02  [0-9]{1,30}(\.[0-9]{1,30})?       -> float (as Python's float() reads it)
 *   \x03  -?[0-9]{1,18}                     -> int
 *   \x04  [0-9]{1,18} | None                -> int or None
 *   \x05  0|[1-9][0-9]{0,17}                -> int (no leading zero)
 *   \x06  [A-Za-z0-9_]{1,63}                -> str
 *   \x07  [!-~]{1,63}, then a space or the end -> str
 *   \x08  YYYY-mm-dd HH:MM:SS                 the line's time (no field)
 *   \x09  the end, or a space and the rest of the line without \r (no field)
 * A template starting with '[' is matched right after the optional torchrun prefix (it must hold
 * \x08); any other after the cosmos prefix, whose time the line then has.
 * The whole line must match: nothing before the optional torchrun ``[name<N>]:`` prefix, nothing
 * after the template. A line that does not match exactly is a candidate like any other, so a
 * template can only ever decide *how fast* a line is read, never *whether*.
 */

#define MAX_FIELDS 8

typedef struct {
    Py_ssize_t start, end;   /* the line [start, end) in the block, end cut at max_line */
    Py_ssize_t lineno;
    int tid;                 /* template index, -1: a candidate */
    int rank;                /* -1: none */
    int ymdhm[5], sec, msec;
    int nfields;
    unsigned char codes[MAX_FIELDS];
    Py_ssize_t fstart[MAX_FIELDS], fend[MAX_FIELDS];
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

/* "YYYY-mm-dd HH:MM:SS" at s (n bytes available): fills t[0..5] and returns 1 if a real time
 * (years 1971-2999: anything else goes the Python way). */
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

/* Match line p[ls, le) against the templates; fills h (tid, rank, time, fields) and returns 1.
 * A template starting with '[' is matched right after the optional torchrun prefix (and must
 * hold \x08, the time); any other right after a cosmos prefix. */
static int
match_templates(const unsigned char *p, Py_ssize_t ls, Py_ssize_t le, const unsigned char **tpl,
                const Py_ssize_t *tlen, int ntpl, Hit *h)
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
    /* [cosmos] YYYY-mm-dd HH:MM:SS,mmm - cosmos -  */
    int cosmos_t[6], cosmos_ms = -1;
    Py_ssize_t body = -1;
    if (le - i >= 9 + 23 + 12 && memcmp(p + i, "[cosmos] ", 9) == 0 && read_stamp(p + i + 9, 19, cosmos_t)
        && p[i + 28] == ',' && memcmp(p + i + 32, " - cosmos - ", 12) == 0) {
        cosmos_ms = digits_at(p + i + 29, 3);
        if (cosmos_ms >= 0)
            body = i + 9 + 23 + 12;
    }
    for (int t = 0; t < ntpl; t++) {
        const unsigned char *tp = tpl[t];
        Py_ssize_t tn = tlen[t], k = 0, j;
        int nf = 0, ok = 1, tm[6], ms = 0, timed = 0;
        if (tn > 0 && tp[0] == '[') {
            j = i;
        } else {
            if (body < 0)
                continue;
            j = body;
            memcpy(tm, cosmos_t, sizeof tm);
            ms = cosmos_ms;
            timed = 1;
        }
        while (k < tn && ok) {
            unsigned char c = tp[k];
            if (c > 9) {  /* a run of literal bytes */
                Py_ssize_t run = k;
                while (run < tn && tp[run] > 9)
                    run++;
                if (le - j < run - k || memcmp(p + j, tp + k, (size_t)(run - k)) != 0) {
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
            if (nf == MAX_FIELDS) {
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
            case 2:
                n = run_digits(p, j, le, 30);
                ok = n > 0;
                if (!ok)
                    break;
                j += n;
                if (j < le && p[j] == '.') {
                    n = run_digits(p, j + 1, le, 30);
                    ok = n > 0;
                    j += 1 + (n > 0 ? n : 0);
                }
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
            default:
                ok = 0;
            }
            if (!ok)
                break;
            h->codes[nf] = c;
            h->fstart[nf] = f0;
            h->fend[nf] = j;
            nf++;
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

static PyObject *
field_value(const unsigned char *p, const Hit *h, int f)
{
    const char *s = (const char *)p + h->fstart[f];
    Py_ssize_t n = h->fend[f] - h->fstart[f];
    if (h->codes[f] == 2) {
        char tmp[64];
        memcpy(tmp, s, (size_t)n);
        tmp[n] = 0;
        double v = PyOS_string_to_double(tmp, NULL, NULL);
        if (v == -1.0 && PyErr_Occurred())
            return NULL;
        return PyFloat_FromDouble(v);
    }
    if (h->codes[f] == 4 && n == 4 && memcmp(s, "None", 4) == 0)
        Py_RETURN_NONE;
    if (h->codes[f] == 6 || h->codes[f] == 7)
        return PyUnicode_DecodeASCII(s, n, "strict");
    long long v = 0;
    int neg = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (s[k] == '-')
            neg = 1;
        else
            v = v * 10 + (s[k] - '0');
    }
    return PyLong_FromLongLong(neg ? -v : v);
}

/* chunk(data, classes, table, accept, nclasses, pairs, templates, lineno, offset, max_line, minute_base)
 *     -> (items, lines)
 *   data:        a buffer of whole lines; a last line without a newline counts as a line
 *   pairs:       bytes(65536), non-zero at a << 8 | b where a marker starts with bytes a, b, and
 *                at every a that is the newline
 *   templates:   tuple of bytes (see above); () reads no line in full
 *   lineno:      the number of the first line; offset: the file offset of data[0]
 *   max_line:    lines are searched and handed back up to this many bytes
 *   minute_base: callable (y, mo, d, hh, mi) -> int seconds since the epoch of that local minute,
 *                or None (the line is then a candidate); asked once per distinct minute
 *   items:       in line order, a candidate as (lineno, offset, text) (decoded as UTF-8 with
 *                replacement characters), a bulk line as (template index, lineno, rank or None, ts,
 *                bytes, *fields); lines: the number of lines in data */
static PyObject *
scan_chunk(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer data, classes, table, accept, pairs;
    Py_ssize_t nclasses, lineno0, offset0, max_line;
    PyObject *templates, *minute_base;
    if (!PyArg_ParseTuple(args, "y*y*y*y*ny*O!nnnO", &data, &classes, &table, &accept, &nclasses, &pairs,
                          &PyTuple_Type, &templates, &lineno0, &offset0, &max_line, &minute_base))
        return NULL;

    PyObject *result = NULL, *cands = NULL;
    Hit *hits = NULL;
    Py_ssize_t nhits = 0, cap = 0, nlines = 0;
    const unsigned char *tpl[16];
    Py_ssize_t tlen[16];
    int ntpl = (int)PyTuple_GET_SIZE(templates);

    if (classes.len != 256 || nclasses <= 0 || nclasses > 256 || table.len % (2 * nclasses) != 0
        || accept.len < 1 || accept.len != table.len / (2 * nclasses) || max_line <= 0 || pairs.len != 65536) {
        PyErr_SetString(PyExc_ValueError, "inconsistent automaton");
        goto done;
    }
    for (int b = 0; b < 256; b++) {
        if (((const unsigned char *)classes.buf)[b] >= nclasses) {
            PyErr_SetString(PyExc_ValueError, "inconsistent automaton: byte class out of range");
            goto done;
        }
    }
    if (ntpl > 16) {
        PyErr_SetString(PyExc_ValueError, "at most 16 templates");
        goto done;
    }
    for (int t = 0; t < ntpl; t++) {
        PyObject *o = PyTuple_GET_ITEM(templates, t);
        if (!PyBytes_Check(o)) {
            PyErr_SetString(PyExc_TypeError, "templates must be bytes");
            goto done;
        }
        tpl[t] = (const unsigned char *)PyBytes_AS_STRING(o);
        tlen[t] = PyBytes_GET_SIZE(o);
    }
    if (!PyCallable_Check(minute_base)) {
        PyErr_SetString(PyExc_TypeError, "minute_base must be callable");
        goto done;
    }

    {
        const unsigned char *p = (const unsigned char *)data.buf;
        const Py_ssize_t n = data.len;
        const unsigned char *cls = (const unsigned char *)classes.buf;
        const uint16_t *next = (const uint16_t *)table.buf;
        const unsigned char *acc = (const unsigned char *)accept.buf;
        const Py_ssize_t nstates = accept.len;
        int failed = 0;
        /* starts[a << 8 | b]: a marker may start at byte a followed by b, or a is the newline (built
         * in Python from the markers' first two bytes). Most positions of a log line fail this
         * test, which carries nothing from one position to the next. */
        const unsigned char *starts2 = (const unsigned char *)pairs.buf;
        Py_BEGIN_ALLOW_THREADS
        Py_ssize_t line = 0, i = 0, ls = 0;
        unsigned int state = 0;
        while (i < n) {
            if (state == 0) {
                while (i + 1 < n && !starts2[p[i] << 8 | p[i + 1]])
                    i++;
                if (i >= n)
                    break;
            }
            unsigned char c = p[i];
            if (c == '\n') {
                line++;
                state = 0;
                ls = ++i;
                continue;
            }
            if (i - ls >= max_line) {  /* past the part of an over-long line that is read: skip it */
                const unsigned char *nl = memchr(p + i, '\n', (size_t)(n - i));
                state = 0;
                if (nl == NULL) {
                    i = n;
                    break;
                }
                i = nl - p;
                continue;
            }
            state = next[state * nclasses + cls[c]];
            if (state >= (unsigned int)nstates) {
                failed = 1;
                break;
            }
            if (!acc[state]) {
                i++;
                continue;
            }
            const unsigned char *nl = memchr(p + i, '\n', (size_t)(n - i));
            Py_ssize_t le = nl == NULL ? n : nl - p;
            if (nhits == cap) {
                Py_ssize_t grown = cap ? cap * 2 : 256;
                Hit *bigger = (Hit *)realloc(hits, (size_t)grown * sizeof(Hit));
                if (bigger == NULL) {
                    failed = 2;
                    break;
                }
                hits = bigger;
                cap = grown;
            }
            Hit *h = &hits[nhits++];
            h->start = ls;
            h->end = le - ls > max_line ? ls + max_line : le;
            h->lineno = lineno0 + line;
            h->tid = -1;
            if (ntpl > 0 && le - ls <= max_line)
                match_templates(p, ls, le, tpl, tlen, ntpl, h);
            state = 0;
            i = le;
            if (nl == NULL)
                break;
        }
        if (n > 0)
            nlines = line + (p[n - 1] != '\n');
        Py_END_ALLOW_THREADS
        if (failed == 1) {
            PyErr_SetString(PyExc_ValueError, "automaton state out of range");
            goto done;
        }
        if (failed == 2) {
            PyErr_NoMemory();
            goto done;
        }

        cands = PyList_New(0);
        if (cands == NULL)
            goto done;
        int last_key[5] = {-1, -1, -1, -1, -1};
        PyObject *last_base = NULL;  /* borrowed from the call's result, kept alive in base_ref */
        PyObject *base_ref = NULL;
        for (Py_ssize_t k = 0; k < nhits; k++) {
            Hit *h = &hits[k];
            PyObject *item = NULL;
            if (h->tid >= 0) {
                if (memcmp(last_key, h->ymdhm, sizeof last_key) != 0) {
                    Py_XDECREF(base_ref);
                    base_ref = PyObject_CallFunction(minute_base, "iiiii", h->ymdhm[0], h->ymdhm[1], h->ymdhm[2],
                                                     h->ymdhm[3], h->ymdhm[4]);
                    if (base_ref == NULL)
                        goto fail_loop;
                    memcpy(last_key, h->ymdhm, sizeof last_key);
                    last_base = base_ref;
                }
                if (last_base == Py_None)
                    h->tid = -1;
            }
            if (h->tid >= 0) {
                long long base = PyLong_AsLongLong(last_base);
                if (base == -1 && PyErr_Occurred())
                    goto fail_loop;
                double ts = (double)(base + h->sec) + (double)(h->msec * 1000) / 1e6;
                item = PyTuple_New(5 + h->nfields);
                if (item == NULL)
                    goto fail_loop;
                PyObject *rank = h->rank < 0 ? Py_NewRef(Py_None) : PyLong_FromLong(h->rank);
                PyObject *vals[5] = {PyLong_FromLong(h->tid), PyLong_FromSsize_t(h->lineno), rank,
                                     PyFloat_FromDouble(ts),
                                     PyBytes_FromStringAndSize((const char *)p + h->start, h->end - h->start)};
                for (int v = 0; v < 5; v++) {
                    if (vals[v] == NULL) {
                        for (int w = v; w < 5; w++)
                            Py_XDECREF(vals[w]);
                        Py_DECREF(item);
                        goto fail_loop;
                    }
                    PyTuple_SET_ITEM(item, v, vals[v]);
                }
                for (int f = 0; f < h->nfields; f++) {
                    PyObject *v = field_value(p, h, f);
                    if (v == NULL) {
                        Py_DECREF(item);
                        goto fail_loop;
                    }
                    PyTuple_SET_ITEM(item, 5 + f, v);
                }
                if (PyList_Append(cands, item) < 0) {
                    Py_DECREF(item);
                    goto fail_loop;
                }
            } else {
                PyObject *text = PyUnicode_DecodeUTF8((const char *)p + h->start, h->end - h->start, "replace");
                if (text == NULL)
                    goto fail_loop;
                item = Py_BuildValue("(nnN)", h->lineno, offset0 + h->start, text);
                if (item == NULL || PyList_Append(cands, item) < 0) {
                    Py_XDECREF(item);
                    goto fail_loop;
                }
            }
            Py_DECREF(item);
            continue;
        fail_loop:
            Py_XDECREF(base_ref);
            goto done;
        }
        Py_XDECREF(base_ref);
    }
    result = Py_BuildValue("(On)", cands, nlines);

done:
    free(hits);
    Py_XDECREF(cands);
    PyBuffer_Release(&pairs);
    PyBuffer_Release(&data);
    PyBuffer_Release(&classes);
    PyBuffer_Release(&table);
    PyBuffer_Release(&accept);
    return result;
}

static PyMethodDef scan_methods[] = {
    {"lines", scan_lines, METH_VARARGS,
     "lines(text, classes, table, accept, nclasses) -> indices of the lines holding a marker"},
    {"chunk", scan_chunk, METH_VARARGS,
     "chunk(data, classes, table, accept, nclasses, pairs, templates, lineno, offset, max_line, minute_base) -> "
     "(items, lines)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef scan_module = {
    PyModuleDef_HEAD_INIT, "diagnostics._scan", "Multi-string line scanner (Aho-Corasick DFA).", -1, scan_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__scan(void)
{
    return PyModule_Create(&scan_module);
}
