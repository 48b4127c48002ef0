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

static PyMethodDef scan_methods[] = {
    {"lines", scan_lines, METH_VARARGS,
     "lines(text, classes, table, accept, nclasses) -> indices of the lines holding a marker"},
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
