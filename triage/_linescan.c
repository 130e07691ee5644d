/* _linescan: the literal prefilter of triage/fastscan.py, over a bytes buffer of whole lines.
 *
 * One pass over the buffer finds every line that holds one of a set of literal needles. Each needle
 * is filed under one two-byte pair it contains (the rarest in the file, chosen by the caller); a
 * 64 Ki-bit table of those pairs is the only thing looked at for most bytes. A pair hit is checked
 * against the needles filed under it.
 *
 * The loop looks at even offsets only: each needle of three or more bytes is filed under two adjacent
 * pairs (offsets o and o+1), one of which starts at an even offset wherever the needle occurs.
 *
 * Needle kinds:
 *   CAND   any occurrence makes its line a candidate (rule anchors, parser anchors, error words)
 *   STATS  `Decode batch` / `Prefill batch`: where it starts SGLang's stats shape
 *          (\b(Decode|Prefill) batch(\(mixed #running-req: N\))?( \[N\])?[.,] ) it counts a stats row;
 *          elsewhere its line is a candidate
 *   USAGE  `usage: `: unless its value is plainly below 0.9 (0.[0-8]d*), the line becomes a candidate,
 *          so every row with a high pool usage is parsed in Python (which drops non-stats lines)
 *   flags  a stats line with a Ray actor prefix `(`, and the single bytes \r, ESC, NUL
 *
 * scan() returns the candidate lines (with the needles they hold), a sample of the other stats lines
 * (the first one at or after `next_sample`, then one every `step` bytes), the count of stats lines
 * that were not candidates, the newline count and the flags. Nothing here decides what a line means:
 * that stays in Python (scan.py), which the results feed.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum { K_CAND = 0, K_STATS = 1, K_USAGE = 2 };
enum { F_CR = 1, F_ESC = 2, F_NUL = 4, F_RAY = 8 };

#define HSLOTS 4096  /* > 2 x the pairs two needles per anchor can use */

static unsigned slot_of(unsigned p) { return (p * 40503u) >> 4 & (HSLOTS - 1); }

typedef struct {
    const unsigned char *s;
    Py_ssize_t len, off;
    int kind;
    int32_t next;
} Needle;

typedef struct {
    uint8_t bits[8192];
    /* pair -> first needle filed under it: a small open-addressing table, so it stays in cache */
    uint32_t slot_pair[HSLOTS];  /* pair + 1; 0 = empty */
    int32_t slot_head[HSLOTS];
    uint8_t single[256];
    Py_ssize_t n;
    Needle *nd;
    PyObject *keep;
} Matcher;

#define PAIR(a, b) ((unsigned)(a) | ((unsigned)(b) << 8))

static void matcher_free(PyObject *cap) {
    Matcher *m = (Matcher *)PyCapsule_GetPointer(cap, "triage._linescan.Matcher");
    if (m) {
        Py_XDECREF(m->keep);
        PyMem_Free(m->nd);
        PyMem_Free(m);
    }
}

/* compile(needles) -> matcher; needles: sequence of (bytes, pair_offset, kind) */
static PyObject *compile(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *seq;
    if (!PyArg_ParseTuple(args, "O", &seq)) return NULL;
    PyObject *fast = PySequence_Fast(seq, "needles must be a sequence");
    if (!fast) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n > HSLOTS / 4) {
        Py_DECREF(fast);
        PyErr_Format(PyExc_ValueError, "at most %d needles", HSLOTS / 4);
        return NULL;
    }
    Matcher *m = PyMem_Calloc(1, sizeof(Matcher));
    Needle *nd = PyMem_Calloc(n ? n : 1, sizeof(Needle));
    PyObject *keep = PyTuple_New(n);
    if (!m || !nd || !keep) {
        PyMem_Free(m); PyMem_Free(nd); Py_XDECREF(keep); Py_DECREF(fast);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(fast, i);
        PyObject *b;
        Py_ssize_t off;
        int kind;
        if (!PyArg_ParseTuple(item, "Sni", &b, &off, &kind)) goto fail;
        Py_INCREF(b);
        PyTuple_SET_ITEM(keep, i, b);
        Py_ssize_t len = PyBytes_GET_SIZE(b);
        const unsigned char *s = (const unsigned char *)PyBytes_AS_STRING(b);
        if (len == 1) {
            int flag = kind;  /* for single bytes, `kind` carries the flag bit */
            m->single[s[0]] |= (uint8_t)flag;
            for (int x = 0; x < 256; x++) {
                unsigned p = PAIR(s[0], x), q = PAIR(x, s[0]);
                m->bits[p >> 3] |= (uint8_t)(1u << (p & 7));
                m->bits[q >> 3] |= (uint8_t)(1u << (q & 7));
            }
            nd[i].len = 0;  /* never matched through the chains */
            continue;
        }
        if (off < 0 || kind < K_CAND || kind > K_USAGE) {
            PyErr_Format(PyExc_ValueError, "needle %zd: bad length/offset/kind", i);
            goto fail;
        }
        if (len < 3 || off + 3 > len) {
            PyErr_Format(PyExc_ValueError, "needle %zd: needs 3+ bytes and an offset with two pairs after it", i);
            goto fail;
        }
        nd[i].s = s; nd[i].len = len; nd[i].off = off; nd[i].kind = kind;
    }
    /* file each needle under its pairs at off and off+1 (the second copy lives at index n + i) */
    Needle *all = PyMem_Realloc(nd, (size_t)(2 * (n ? n : 1)) * sizeof(Needle));
    if (!all) { PyErr_NoMemory(); goto fail; }
    nd = all;
    for (Py_ssize_t i = 0; i < n; i++) {
        nd[n + i] = nd[i];
        if (nd[i].len == 0) { nd[n + i].len = 0; continue; }
        nd[n + i].off = nd[i].off + 1;
        for (Py_ssize_t k = i; k <= n + i; k += n) {
            unsigned p = PAIR(nd[k].s[nd[k].off], nd[k].s[nd[k].off + 1]);
            unsigned h = slot_of(p);
            while (m->slot_pair[h] && m->slot_pair[h] != p + 1) h = (h + 1) & (HSLOTS - 1);
            if (!m->slot_pair[h]) { m->slot_pair[h] = p + 1; m->slot_head[h] = -1; }
            nd[k].next = m->slot_head[h];
            m->slot_head[h] = (int32_t)k;
            m->bits[p >> 3] |= (uint8_t)(1u << (p & 7));
        }
    }
    Py_DECREF(fast);
    m->n = n; m->nd = nd; m->keep = keep;
    PyObject *cap = PyCapsule_New(m, "triage._linescan.Matcher", matcher_free);
    if (!cap) { Py_DECREF(keep); PyMem_Free(nd); PyMem_Free(m); }
    return cap;
fail:
    Py_DECREF(fast); Py_DECREF(keep); PyMem_Free(nd); PyMem_Free(m);
    return NULL;
}

/* Newlines in [p, q): eight bytes at a time (a zero-byte count after xor with '\n'). */
static Py_ssize_t count_nl(const unsigned char *p, const unsigned char *q) {
    Py_ssize_t c = 0;
    const uint64_t ones = 0x0101010101010101ULL, nlw = ones * '\n', hi = ones * 0x80, lo7 = ones * 0x7f;
    while (q - p >= 8) {
        uint64_t w, x, t, z;
        memcpy(&w, p, 8);
        x = w ^ nlw;
        t = ((x & lo7) + lo7) | x;
        z = (~t & hi) >> 7;              /* one 0/1 per byte */
        c += (Py_ssize_t)((z * ones) >> 56);  /* their sum lands in the top byte */
        p += 8;
    }
    while (p < q) c += (*p++ == '\n');
    return c;
}

static int is_word(unsigned char c) {
    return c >= 0x80 || c == '_' || (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

static int digits(const unsigned char *b, Py_ssize_t n, Py_ssize_t *t) {
    Py_ssize_t start = *t;
    while (*t < n && b[*t] >= '0' && b[*t] <= '9') (*t)++;
    return *t > start;
}

/* Does SGLang's stats shape start at s (the marker `Decode batch`/`Prefill batch` of length len)? */
static int stats_shape(const unsigned char *b, Py_ssize_t n, Py_ssize_t s, Py_ssize_t len) {
    static const char mixed[] = "(mixed #running-req: ";
    Py_ssize_t t = s + len, ml = (Py_ssize_t)sizeof(mixed) - 1;
    if (s > 0 && is_word(b[s - 1])) return 0;
    if (t < n && b[t] == '(') {
        if (n - t < ml || memcmp(b + t, mixed, (size_t)ml)) return 0;
        t += ml;
        if (!digits(b, n, &t) || t >= n || b[t] != ')') return 0;
        t++;
    }
    if (t + 1 < n && b[t] == ' ' && b[t + 1] == '[') {
        t += 2;
        if (!digits(b, n, &t) || t >= n || b[t] != ']') return 0;
        t++;
    }
    return t + 1 < n && (b[t] == '.' || b[t] == ',') && b[t + 1] == ' ';
}

/* A usage value plainly below 0.9: 0.[0-8][0-9]* ending the pair (comma, blank, end of line). */
static int low_usage(const unsigned char *b, Py_ssize_t v, Py_ssize_t n) {
    if (v + 3 > n || b[v] != '0' || b[v + 1] != '.' || b[v + 2] < '0' || b[v + 2] > '8') return 0;
    v += 3;
    while (v < n && b[v] >= '0' && b[v] <= '9') v++;
    return v == n || b[v] == ',' || b[v] == ' ' || b[v] == '\t' || b[v] == '\n';
}

static Py_ssize_t line_start(const unsigned char *b, Py_ssize_t s) {
    while (s > 0 && b[s - 1] != '\n') s--;
    return s;
}

static Py_ssize_t line_end(const unsigned char *b, Py_ssize_t n, Py_ssize_t s) {
    const unsigned char *e = memchr(b + s, '\n', (size_t)(n - s));
    return e ? e - b : n;
}

typedef struct {
    const unsigned char *b;
    Py_ssize_t nl_pos, nl_cnt;
    PyObject *out;
} Emit;

static int emit(Emit *em, int kind, Py_ssize_t bol, Py_ssize_t eol, PyObject *ids) {
    em->nl_cnt += count_nl(em->b + em->nl_pos, em->b + bol);
    em->nl_pos = bol;
    PyObject *t = Py_BuildValue("(innnO)", kind, em->nl_cnt, bol, eol, ids ? ids : Py_None);
    if (!t) return -1;
    int r = PyList_Append(em->out, t);
    Py_DECREF(t);
    return r;
}

/* scan(matcher, buffer, next_sample, step)
 *   -> (lines, flags, quiet_stats, next_sample, [(kind, line_index, start, end, ids), ...])
 * kind 0: candidate line, ids = tuple of the needle indices found in it; kind 1: sampled stats line.
 * line_index counts newlines before the line (0 for the buffer's first line).
 * Per stats line the cost is two needle checks (its marker and its usage value); only sampled and
 * candidate lines have their bounds looked up. */
static PyObject *scan(PyObject *self, PyObject *args) {
    PyObject *cap;
    Py_buffer view;
    Py_ssize_t next_sample, step;
    (void)self;
    if (!PyArg_ParseTuple(args, "Oy*nn", &cap, &view, &next_sample, &step)) return NULL;
    Matcher *m = (Matcher *)PyCapsule_GetPointer(cap, "triage._linescan.Matcher");
    if (!m) { PyBuffer_Release(&view); return NULL; }
    const unsigned char *b = view.buf;
    Py_ssize_t n = view.len, quiet = 0;
    int flags = 0;
    Emit em = {b, 0, 0, PyList_New(0)};
    if (!em.out) { PyBuffer_Release(&view); return NULL; }
    Py_ssize_t last_mark = -1, last_sample = -1;  /* newest counted marker, newest sampled line start */
    Py_ssize_t c_bol = -1, c_eol = -1;            /* the pending candidate line */
    PyObject *ids = NULL;
    int err = 0;
    const uint8_t *bits = m->bits;

#define FINISH_CAND()                                                             \
    do {                                                                          \
        if (c_bol >= 0) {                                                         \
            PyObject *tup = PyList_AsTuple(ids);                                  \
            Py_CLEAR(ids);                                                        \
            if (!tup || emit(&em, 0, c_bol, c_eol, tup) < 0) { Py_XDECREF(tup); err = 1; goto done; } \
            Py_DECREF(tup);                                                       \
            c_bol = -1;                                                           \
        }                                                                         \
    } while (0)
#define TEST(p) (bits[(p) >> 3] >> ((p)&7))

    for (Py_ssize_t i = 0; i + 1 < n; i += 2) {
        while (i + 8 <= n) {  /* eight bytes (four pairs) per test while nothing is found */
            uint64_t w;
            memcpy(&w, b + i, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
            w = __builtin_bswap64(w);
#endif
            unsigned p0 = (unsigned)(w & 0xffff), p1 = (unsigned)((w >> 16) & 0xffff);
            unsigned p2 = (unsigned)((w >> 32) & 0xffff), p3 = (unsigned)(w >> 48);
            if ((TEST(p0) | TEST(p1) | TEST(p2) | TEST(p3)) & 1) break;
            i += 8;
        }
        if (i + 1 >= n) break;
        unsigned p = PAIR(b[i], b[i + 1]);
        if (!(bits[p >> 3] & (1u << (p & 7)))) continue;
        if (c_bol >= 0 && i >= c_eol) FINISH_CAND();
        flags |= m->single[b[i]] | m->single[b[i + 1]];
        unsigned h = slot_of(p);
        while (m->slot_pair[h] && m->slot_pair[h] != p + 1) h = (h + 1) & (HSLOTS - 1);
        int32_t first = m->slot_pair[h] ? m->slot_head[h] : -1;  /* no entry: a single-byte flag pair */
        for (int32_t e = first; e >= 0; e = m->nd[e].next) {
            const Needle *nd = &m->nd[e];
            Py_ssize_t s = i - nd->off;
            if (s < 0 || s + nd->len > n || memcmp(b + s, nd->s, (size_t)nd->len)) continue;
            Py_ssize_t id = e < m->n ? e : e - m->n;
            if (c_bol >= 0 && s < c_eol) {  /* inside the candidate line: just note the needle */
                PyObject *v = PyLong_FromSsize_t(id);
                if (!v || PyList_Append(ids, v) < 0) { Py_XDECREF(v); err = 1; goto done; }
                Py_DECREF(v);
                continue;
            }
            int cand = nd->kind == K_CAND;
            if (nd->kind == K_STATS) {
                if (!stats_shape(b, n, s, nd->len)) cand = 1;  /* `Decode batch` in other words */
                else {
                    quiet++;
                    last_mark = s;
                    if (s >= next_sample) {
                        Py_ssize_t bol = line_start(b, s);
                        if (b[bol] == '(') flags |= F_RAY;  /* a Ray actor prefix: the row's engine is its pid */
                        if (b[bol] == ' ' || b[bol] == '\t') cand = 1;  /* may be traceback context */
                        else {
                            if (emit(&em, 1, bol, line_end(b, n, s), NULL) < 0) { err = 1; goto done; }
                            last_sample = bol;
                            next_sample = bol + step;
                        }
                    }
                }
            } else if (nd->kind == K_USAGE) {
                if (!low_usage(b, s + nd->len, n)) cand = 1;  /* Python checks it is a stats row */
            }
            if (!cand) continue;
            Py_ssize_t bol = line_start(b, s);
            if (last_mark >= bol) { quiet--; last_mark = -1; }  /* counted as quiet, but Python parses it */
            if (last_sample == bol) {  /* sampled a moment ago: it is a candidate instead */
                Py_ssize_t k = PyList_GET_SIZE(em.out) - 1;
                if (PyList_SetSlice(em.out, k, k + 1, NULL) < 0) { err = 1; goto done; }
                last_sample = -1;
            }
            c_bol = bol;
            c_eol = line_end(b, n, s);
            ids = PyList_New(0);
            PyObject *v = PyLong_FromSsize_t(id);
            if (!ids || !v || PyList_Append(ids, v) < 0) { Py_XDECREF(v); err = 1; goto done; }
            Py_DECREF(v);
        }
    }
    if (n > 0) flags |= m->single[b[n - 1]];  /* the last byte of an odd-length buffer */
    FINISH_CAND();
done:
    Py_XDECREF(ids);
    PyBuffer_Release(&view);
    if (err) { Py_DECREF(em.out); return NULL; }
    Py_ssize_t lines = em.nl_cnt + count_nl(b + em.nl_pos, b + n);
    return Py_BuildValue("(ninnN)", lines, flags, quiet, next_sample, em.out);
}

/* pair_counts(buffer) -> bytes of 65536 saturating one-byte counts of each two-byte pair (x / 16). */
static PyObject *pair_counts(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view)) return NULL;
    uint32_t *cnt = PyMem_Calloc(65536, sizeof(uint32_t));
    if (!cnt) { PyBuffer_Release(&view); return PyErr_NoMemory(); }
    const unsigned char *b = view.buf;
    for (Py_ssize_t i = 0; i + 1 < view.len; i++) cnt[PAIR(b[i], b[i + 1])]++;
    PyBuffer_Release(&view);
    PyObject *out = PyBytes_FromStringAndSize(NULL, 65536 * 4);
    if (out) memcpy(PyBytes_AS_STRING(out), cnt, 65536 * 4);
    PyMem_Free(cnt);
    return out;
}

static PyMethodDef methods[] = {
    {"compile", compile, METH_VARARGS, "compile(needles) -> matcher"},
    {"scan", scan, METH_VARARGS, "scan(matcher, buffer, next_sample, step) -> (lines, flags, quiet, next_sample, hits)"},
    {"pair_counts", pair_counts, METH_VARARGS, "pair_counts(buffer) -> 65536 uint32 counts (native order)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_linescan", "Literal line prefilter for triage.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__linescan(void) { return PyModule_Create(&module); }
