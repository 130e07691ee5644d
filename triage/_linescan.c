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
 *
 * Two implementations of the pass, with the same result on every input:
 *   scalar  the original loop: eight bytes (four even pairs) per step, four lookups in the bit table.
 *           It is the fallback and the reference: `scan_scalar(...)` always runs it.
 *   avx2    x86-64 CPUs with AVX2 (checked at import with __builtin_cpu_supports; the rest of the file
 *           is built without -mavx2). It reads 64 bytes per step as 32 little-endian 16-bit lanes (each
 *           lane is exactly one even pair, PAIR(b[i], b[i+1])) and looks all 32 pairs up in the same bit
 *           table with four 8-lane gathers; a shift moves each pair's bit to the lane's sign and a
 *           movemask makes a 32-bit mask of the pairs in the table. Only those offsets are visited, in
 *           ascending order, and each visit does what the scalar loop does at that offset (finish the
 *           pending candidate, OR the flags, walk the needles filed under the pair), so the results are
 *           the same by construction; needles are compared with two 8-byte loads instead of memcmp.
 *           Newlines are counted 32 bytes at a time (compare, movemask, popcount).
 * `scan(...)` uses avx2 when the CPU has it, unless the environment variable TRIAGE_LINESCAN_SCALAR is
 * set (to anything but "" or "0") when the module is imported. The module attribute SIMD names the path
 * scan() takes: "avx2", or "" for the scalar loop. tests/test_linescan_native.py compares the two.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_AVX2_PATH 1
#include <immintrin.h>
#define TARGET_AVX2 __attribute__((target("avx2,popcnt")))
#else
#define HAVE_AVX2_PATH 0
#endif

#if defined(__GNUC__) || defined(__clang__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

enum { K_CAND = 0, K_STATS = 1, K_USAGE = 2 };
enum { F_CR = 1, F_ESC = 2, F_NUL = 4, F_RAY = 8 };

#define HSLOTS 4096  /* > 2 x the pairs two needles per anchor can use */

static unsigned slot_of(unsigned p) { return (p * 40503u) >> 4 & (HSLOTS - 1); }

#define KMUL 0x9E3779B1u  /* an odd 32-bit multiplier; the top bits of the product hash a window */
static unsigned khash(uint32_t w) { return (w * KMUL) >> 16; }             /* 16 bits: the kbits index */

typedef struct {
    const unsigned char *s;
    Py_ssize_t len, off;
    int kind;
    int32_t next;
    /* for the fast compare (len >= 3): the first 8 bytes (zero-padded) with a mask of the bytes that
       exist, and when len >= 8 also the last 8 bytes */
    uint64_t head, head_mask, tail;
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
    /* What the AVX2 path finds occurrences with (built by detect_build; see the header comment). */
    int simd_ok;                 /* 0: scan() runs the scalar loop for this matcher */
    uint8_t kbits[8192];         /* long needles: bit khash(w) for each of their four 4-byte windows w */
    int nlong;
    uint8_t tlo[3][16], thi[3][16];  /* short needles: nibble masks of 8 buckets, per trigram byte */
    int32_t tbucket[8];          /* first short needle of each bucket (-1: none); chained by tnext */
    int32_t *tnext;
    int nshort, nsingle;
    unsigned char singles[4];    /* the distinct single-byte needles */
} Matcher;

#define PAIR(a, b) ((unsigned)(a) | ((unsigned)(b) << 8))

static int use_avx2;  /* set at import: scan() takes the AVX2 path */

static void matcher_free(PyObject *cap) {
    Matcher *m = (Matcher *)PyCapsule_GetPointer(cap, "triage._linescan.Matcher");
    if (m) {
        Py_XDECREF(m->keep);
        PyMem_Free(m->nd);
        PyMem_Free(m->tnext);
        PyMem_Free(m);
    }
}

/* The words the fast compare checks (memcpy keeps them in memory order on any byte order). */
static void needle_words(Needle *nd) {
    unsigned char buf[8] = {0}, ones[8] = {0};
    size_t k = nd->len < 8 ? (size_t)nd->len : 8;
    memcpy(buf, nd->s, k);
    memset(ones, 0xff, k);
    memcpy(&nd->head, buf, 8);
    memcpy(&nd->head_mask, ones, 8);
    nd->tail = 0;
    if (nd->len >= 8) memcpy(&nd->tail, nd->s + nd->len - 8, 8);
}

/* The AVX2 path's detector for m. Long needles (7+ bytes) go under their four 4-byte windows starting at
 * f = off - 2 (clamped to [0, len - 7]): one of those four starts at a multiple of 4 wherever the needle
 * occurs, and that is the only kind of window the AVX2 loop hashes. Short needles (3-6 bytes) go into one
 * of 8 buckets by their filed trigram (at off), as nibble masks per trigram byte. Single bytes are
 * compared directly; with more than 4 distinct ones the matcher stays on the scalar loop. */
static int detect_build(Matcher *m) {
    Py_ssize_t n = m->n;
    m->tnext = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(int32_t));
    if (!m->tnext) return -1;
    for (int k = 0; k < 8; k++) m->tbucket[k] = -1;
    m->simd_ok = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        const Needle *nd = &m->nd[i];
        if (nd->len == 0) {  /* a single byte */
            unsigned char c = (unsigned char)PyBytes_AS_STRING(PyTuple_GET_ITEM(m->keep, i))[0];
            int seen = 0;
            for (int k = 0; k < m->nsingle; k++) seen |= m->singles[k] == c;
            if (seen) continue;
            if (m->nsingle == 4) m->simd_ok = 0;
            else m->singles[m->nsingle++] = c;
        } else if (nd->len >= 7) {
            m->nlong++;
            Py_ssize_t f = nd->off >= 2 ? nd->off - 2 : 0;  /* then each window holds a filed pair */
            if (f > nd->len - 7) f = nd->len - 7;
            for (Py_ssize_t w = f; w < f + 4; w++) {
                uint32_t key;
                memcpy(&key, nd->s + w, 4);
                unsigned h = khash(key);
                m->kbits[h >> 3] |= (uint8_t)(1u << (h & 7));
            }
        } else {
            /* an empty bucket while there is one; then the bucket whose masks grow least (a bucket's
               nibble masks pass every mix of its needles' nibbles, so similar trigrams share one) */
            int k = m->nshort < 8 ? m->nshort : 0, best = 99;
            for (int q = 0; m->nshort >= 8 && q < 8; q++) {
                int cost = 0;
                for (int t = 0; t < 3; t++) {
                    unsigned char c = nd->s[nd->off + t];
                    cost += !(m->tlo[t][c & 15] >> q & 1) + !(m->thi[t][c >> 4] >> q & 1);
                }
                if (cost < best) { best = cost; k = q; }
            }
            m->nshort++;
            for (int t = 0; t < 3; t++) {
                unsigned char c = nd->s[nd->off + t];
                m->tlo[t][c & 15] |= (uint8_t)(1u << k);
                m->thi[t][c >> 4] |= (uint8_t)(1u << k);
            }
            m->tnext[i] = m->tbucket[k];
            m->tbucket[k] = (int32_t)i;
        }
    }
    return 0;
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
        needle_words(&nd[i]);
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
    if (detect_build(m) < 0) { Py_DECREF(keep); PyMem_Free(nd); PyMem_Free(m); return PyErr_NoMemory(); }
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

#if HAVE_AVX2_PATH
/* Newlines in [p, q), 64 bytes per step: compare with '\n', movemask, popcount. Same result as count_nl. */
TARGET_AVX2 static Py_ssize_t count_nl_avx2(const unsigned char *p, const unsigned char *q) {
    Py_ssize_t c = 0;
    const __m256i nl = _mm256_set1_epi8('\n');
    while (q - p >= 64) {
        __m256i a = _mm256_loadu_si256((const __m256i *)p), b = _mm256_loadu_si256((const __m256i *)(p + 32));
        uint32_t ma = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, nl));
        uint32_t mb = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(b, nl));
        c += __builtin_popcount(ma) + __builtin_popcount(mb);
        p += 64;
    }
    return c + count_nl(p, q);
}
#endif

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

/* Start of the line holding offset s: just after the newline before s, or 0. */
static Py_ssize_t line_start(const unsigned char *b, Py_ssize_t s) {
#if defined(__GLIBC__)
    const unsigned char *e = s > 0 ? memrchr(b, '\n', (size_t)s) : NULL;
    return e ? e - b + 1 : 0;
#else
    while (s > 0 && b[s - 1] != '\n') s--;
    return s;
#endif
}

static Py_ssize_t line_end(const unsigned char *b, Py_ssize_t n, Py_ssize_t s) {
    const unsigned char *e = memchr(b + s, '\n', (size_t)(n - s));
    return e ? e - b : n;
}

typedef struct {
    const unsigned char *b;
    Py_ssize_t nl_pos, nl_cnt;
    PyObject *out;
    Py_ssize_t (*count)(const unsigned char *, const unsigned char *);  /* count_nl or a SIMD twin */
} Emit;

static int emit(Emit *em, int kind, Py_ssize_t bol, Py_ssize_t eol, PyObject *ids) {
    em->nl_cnt += em->count(em->b + em->nl_pos, em->b + bol);
    em->nl_pos = bol;
    PyObject *t = Py_BuildValue("(innnO)", kind, em->nl_cnt, bol, eol, ids ? ids : Py_None);
    if (!t) return -1;
    int r = PyList_Append(em->out, t);
    Py_DECREF(t);
    return r;
}

/* The state of one scan() call, shared by both loops. */
typedef struct {
    const Matcher *m;
    const unsigned char *b;
    Py_ssize_t n, quiet, next_sample, step;
    int flags;
    Emit em;
    Py_ssize_t last_mark, last_sample;  /* newest counted marker, newest sampled line start */
    Py_ssize_t c_bol, c_eol;            /* the pending candidate line (c_bol < 0: none) */
    PyObject *ids;                      /* its needle indices */
} Scan;

/* Emit the pending candidate line, if any. */
static int finish_cand(Scan *st) {
    if (st->c_bol < 0) return 0;
    PyObject *tup = PyList_AsTuple(st->ids);
    Py_CLEAR(st->ids);
    if (!tup || emit(&st->em, 0, st->c_bol, st->c_eol, tup) < 0) { Py_XDECREF(tup); return -1; }
    Py_DECREF(tup);
    st->c_bol = -1;
    return 0;
}

static int append_id(PyObject *ids, Py_ssize_t id) {
    PyObject *v = PyLong_FromSsize_t(id);
    if (!v || PyList_Append(ids, v) < 0) { Py_XDECREF(v); return -1; }
    Py_DECREF(v);
    return 0;
}

/* Needle entry e (filed under the pair at offset i) occurs at s = i - off: what it means for its line.
 * Per stats line this is two calls (its marker and its usage value); only sampled and candidate lines
 * have their bounds looked up. */
static int found(Scan *st, int32_t e, Py_ssize_t s) {
    const Matcher *m = st->m;
    const Needle *nd = &m->nd[e];
    const unsigned char *b = st->b;
    Py_ssize_t n = st->n;
    Py_ssize_t id = e < m->n ? e : e - m->n;
    if (st->c_bol >= 0 && s < st->c_eol) return append_id(st->ids, id);  /* inside the candidate line */
    int cand = nd->kind == K_CAND;
    if (nd->kind == K_STATS) {
        if (!stats_shape(b, n, s, nd->len)) cand = 1;  /* `Decode batch` in other words */
        else {
            st->quiet++;
            st->last_mark = s;
            if (s >= st->next_sample) {
                Py_ssize_t bol = line_start(b, s);
                if (b[bol] == '(') st->flags |= F_RAY;  /* a Ray actor prefix: the row's engine is its pid */
                if (b[bol] == ' ' || b[bol] == '\t') cand = 1;  /* may be traceback context */
                else {
                    if (emit(&st->em, 1, bol, line_end(b, n, s), NULL) < 0) return -1;
                    st->last_sample = bol;
                    st->next_sample = bol + st->step;
                }
            }
        }
    } else if (nd->kind == K_USAGE) {
        if (!low_usage(b, s + nd->len, n)) cand = 1;  /* Python checks it is a stats row */
    }
    if (!cand) return 0;
    Py_ssize_t bol = line_start(b, s);
    if (st->last_mark >= bol) { st->quiet--; st->last_mark = -1; }  /* counted as quiet, but Python parses it */
    if (st->last_sample == bol) {  /* sampled a moment ago: it is a candidate instead */
        Py_ssize_t k = PyList_GET_SIZE(st->em.out) - 1;
        if (PyList_SetSlice(st->em.out, k, k + 1, NULL) < 0) return -1;
        st->last_sample = -1;
    }
    st->c_bol = bol;
    st->c_eol = line_end(b, n, s);
    Py_XSETREF(st->ids, PyList_New(0));
    if (!st->ids) return -1;
    return append_id(st->ids, id);
}

/* Is needle nd at b + s? The caller has checked 0 <= s and s + len <= n. One or two 8-byte loads where
 * the buffer allows them (both within [s, s + len) or, for a short needle, within the buffer). */
static ALWAYS_INLINE int needle_at(const unsigned char *b, Py_ssize_t n, Py_ssize_t s, const Needle *nd) {
    uint64_t w;
    if (nd->len >= 8) {
        memcpy(&w, b + s, 8);
        if (w != nd->head) return 0;
        memcpy(&w, b + s + nd->len - 8, 8);
        if (w != nd->tail) return 0;
        return nd->len <= 16 || !memcmp(b + s + 8, nd->s + 8, (size_t)(nd->len - 16));
    }
    if (s + 8 <= n) {
        memcpy(&w, b + s, 8);
        return (w & nd->head_mask) == nd->head;
    }
    return !memcmp(b + s, nd->s, (size_t)nd->len);
}

/* What both loops do at an even offset i whose pair is in the table: finish the pending candidate once
 * past its line, note single-byte flags, and check the needles filed under the pair. `fast` picks
 * needle_at over memcmp (a constant at each call site; the two agree). */
static ALWAYS_INLINE int visit(Scan *st, Py_ssize_t i, int fast) {
    const Matcher *m = st->m;
    const unsigned char *b = st->b;
    Py_ssize_t n = st->n;
    if (st->c_bol >= 0 && i >= st->c_eol && finish_cand(st) < 0) return -1;
    st->flags |= m->single[b[i]] | m->single[b[i + 1]];
    unsigned p = PAIR(b[i], b[i + 1]);
    unsigned h = slot_of(p);
    while (m->slot_pair[h] && m->slot_pair[h] != p + 1) h = (h + 1) & (HSLOTS - 1);
    int32_t first = m->slot_pair[h] ? m->slot_head[h] : -1;  /* no entry: a single-byte flag pair */
    for (int32_t e = first; e >= 0; e = m->nd[e].next) {
        const Needle *nd = &m->nd[e];
        Py_ssize_t s = i - nd->off;
        if (s < 0 || s + nd->len > n) continue;
        if (fast ? !needle_at(b, n, s, nd) : memcmp(b + s, nd->s, (size_t)nd->len) != 0) continue;
        if (found(st, e, s) < 0) return -1;
    }
    return 0;
}

#define TEST(bits, p) ((bits)[(p) >> 3] >> ((p)&7))

/* The scalar loop: even offsets, eight bytes (four pairs) per table test while nothing is found. */
static int run_scalar(Scan *st) {
    const unsigned char *b = st->b;
    const uint8_t *bits = st->m->bits;
    Py_ssize_t n = st->n;
    for (Py_ssize_t i = 0; i + 1 < n; i += 2) {
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, b + i, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
            w = __builtin_bswap64(w);
#endif
            unsigned p0 = (unsigned)(w & 0xffff), p1 = (unsigned)((w >> 16) & 0xffff);
            unsigned p2 = (unsigned)((w >> 32) & 0xffff), p3 = (unsigned)(w >> 48);
            if ((TEST(bits, p0) | TEST(bits, p1) | TEST(bits, p2) | TEST(bits, p3)) & 1) break;
            i += 8;
        }
        if (i + 1 >= n) break;
        unsigned p = PAIR(b[i], b[i + 1]);
        if (!(TEST(bits, p) & 1)) continue;
        if (visit(st, i, 0) < 0) return -1;
    }
    return 0;
}

#if HAVE_AVX2_PATH
/* 8 four-byte windows (the 32-bit lanes of v) against the hashed window table: bit k of the result is
 * set when lane k's hash bit is. kbits is read as 2048 little-endian 32-bit words (x86 is little-endian):
 * hash h is bit h & 31 of word h >> 5. A gather fetches the 8 words; a shift moves each lane's bit to
 * its sign, and a movemask collects the signs. */
TARGET_AVX2 static ALWAYS_INLINE uint32_t windows8(const int *kwords, __m256i v) {
    __m256i h = _mm256_srli_epi32(_mm256_mullo_epi32(v, _mm256_set1_epi32((int)KMUL)), 16);
    __m256i w = _mm256_i32gather_epi32(kwords, _mm256_srli_epi32(h, 5), 4);
    __m256i up = _mm256_andnot_si256(h, _mm256_set1_epi32(31));  /* 31 - (h & 31) */
    return (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_sllv_epi32(w, up)));
}

/* The 8 buckets a byte may belong to at one trigram position: nibble masks looked up with pshufb. */
TARGET_AVX2 static ALWAYS_INLINE __m256i nibbles(__m256i v, __m256i lo, __m256i hi) {
    const __m256i f = _mm256_set1_epi8(0x0f);
    return _mm256_and_si256(_mm256_shuffle_epi8(lo, _mm256_and_si256(v, f)),
                            _mm256_shuffle_epi8(hi, _mm256_and_si256(_mm256_srli_epi16(v, 4), f)));
}

/* Offsets j in [q, q + 32) where a short needle's trigram may start (bytes q .. q + 33 are read). */
TARGET_AVX2 static ALWAYS_INLINE uint32_t trigrams32(const unsigned char *q, const __m256i *t) {
    __m256i x = nibbles(_mm256_loadu_si256((const __m256i *)q), t[0], t[1]);
    x = _mm256_and_si256(x, nibbles(_mm256_loadu_si256((const __m256i *)(q + 1)), t[2], t[3]));
    x = _mm256_and_si256(x, nibbles(_mm256_loadu_si256((const __m256i *)(q + 2)), t[4], t[5]));
    return ~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(x, _mm256_setzero_si256()));
}

/* The offsets to visit: a ring of bits, one per byte (only even offsets are set), 64 per word. */
#define WIN 1024   /* bytes searched before the offsets found are visited */
#define RING 64    /* words: 4 KiB of text, more than a window and the few bytes either side of it */
/* marks land at most 3 bytes before and 5 after where a needle was found, and the last window's
   unvisited words (< 64 bytes) stay: all must fit in the ring */
typedef char ring_holds_a_window[(WIN + 2 * 64 + 8 <= RING * 64) ? 1 : -1];
#define MARK(vis, i) ((vis)[((i) >> 6) & (RING - 1)] |= 1ull << ((i) & 63))

/* Mark even offset i if its pair is in the table (then the scalar loop visits it too). */
static ALWAYS_INLINE void mark_pair(const uint8_t *bits, const unsigned char *b, Py_ssize_t i, uint64_t *vis) {
    unsigned p = PAIR(b[i], b[i + 1]);
    vis[(i >> 6) & (RING - 1)] |= (uint64_t)(bits[p >> 3] >> (p & 7) & 1) << (i & 63);
}

/* Visit the marked offsets of the ring's words for text [from, to) (multiples of 64), in order. */
static ALWAYS_INLINE int visit_marked(Scan *st, uint64_t *vis, Py_ssize_t from, Py_ssize_t to) {
    for (Py_ssize_t w = from; w < to; w += 64) {
        uint64_t bits = vis[(w >> 6) & (RING - 1)];
        vis[(w >> 6) & (RING - 1)] = 0;
        for (; bits; bits &= bits - 1)
            if (visit(st, w + (Py_ssize_t)__builtin_ctzll(bits), 1) < 0) return -1;
    }
    return 0;
}

/* The AVX2 loop. It visits the offsets where a needle occurs, in ascending order, doing at each what the
 * scalar loop does there; the offsets the scalar loop also visits but finds nothing at are skipped, which
 * changes nothing (see the header comment). Per window of WIN bytes: (1) 64 bytes a step, the masks of
 * windows and trigrams that may start a needle, and any single-flag byte; (2) each such offset checked,
 * and the visit offset of each needle found marked in the ring; (3) the marked offsets below the window's
 * last 8 bytes visited (a needle found later is visited at no less than 3 bytes before where it is found).
 * The last bytes (< 72) are marked from the pair table, as the scalar loop would find them. */
TARGET_AVX2 static int run_avx2(Scan *st) {
    const Matcher *m = st->m;
    const unsigned char *b = st->b;
    const int *kwords = (const int *)(const void *)m->kbits;
    Py_ssize_t n = st->n, blk = 0, done = 0;  /* done: text before it has been visited (multiple of 128) */
    uint64_t vis[RING] = {0}, lmask[WIN / 64], tmask[WIN / 64];
    int has_long = m->nlong > 0, has_short = m->nshort > 0;
    const uint8_t *bits = m->bits;
    __m256i tt[6], sg[4], flagged = _mm256_setzero_si256();
    for (int t = 0; t < 3; t++) {
        tt[2 * t] = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)m->tlo[t]));
        tt[2 * t + 1] = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)m->thi[t]));
    }
    for (int k = 0; k < 4; k++) sg[k] = _mm256_set1_epi8((char)m->singles[k < m->nsingle ? k : 0]);
    while (blk + 64 + 8 <= n) {
        Py_ssize_t nb = (n - blk - 8) / 64;
        if (nb > WIN / 64) nb = WIN / 64;
        for (Py_ssize_t k = 0; k < nb; k++) {  /* (1) */
            const unsigned char *q = b + blk + 64 * k;
            __m256i a = _mm256_loadu_si256((const __m256i *)q), c = _mm256_loadu_si256((const __m256i *)(q + 32));
            lmask[k] = has_long ? windows8(kwords, a) | windows8(kwords, c) << 8 : 0;
            tmask[k] = has_short ? trigrams32(q, tt) | (uint64_t)trigrams32(q + 32, tt) << 32 : 0;
            if (m->nsingle) {
                __m256i f = _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(a, sg[0]), _mm256_cmpeq_epi8(a, sg[1])),
                                            _mm256_or_si256(_mm256_cmpeq_epi8(a, sg[2]), _mm256_cmpeq_epi8(a, sg[3])));
                f = _mm256_or_si256(f, _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(c, sg[0]), _mm256_cmpeq_epi8(c, sg[1])),
                                                       _mm256_or_si256(_mm256_cmpeq_epi8(c, sg[2]), _mm256_cmpeq_epi8(c, sg[3]))));
                flagged = _mm256_or_si256(flagged, f);
            }
        }
        for (Py_ssize_t k = 0; k < nb; k++) {  /* (2) */
            Py_ssize_t q = blk + 64 * k;
            for (uint64_t x = lmask[k]; x; x &= x - 1) {  /* a long needle is visited at j - 2 .. j + 4 */
                Py_ssize_t j = q + 4 * (Py_ssize_t)__builtin_ctzll(x);
                if (j >= 2) mark_pair(bits, b, j - 2, vis);
                mark_pair(bits, b, j, vis);
                mark_pair(bits, b, j + 2, vis);
                mark_pair(bits, b, j + 4, vis);
            }
            for (uint64_t x = tmask[k]; x; x &= x - 1) {  /* a short one at (j + 1) & ~1 */
                Py_ssize_t j = q + (Py_ssize_t)__builtin_ctzll(x);
                mark_pair(bits, b, (j + 1) & ~(Py_ssize_t)1, vis);
            }
        }
        blk += 64 * nb;
        Py_ssize_t safe = (blk - 8) / 64 * 64;  /* (3) */
        if (visit_marked(st, vis, done, safe) < 0) return -1;
        done = safe;
    }
    if (!_mm256_testz_si256(flagged, flagged))  /* a flag byte somewhere before blk: which ones */
        for (Py_ssize_t q = 0; q < blk; q++) st->flags |= m->single[b[q]];
    for (Py_ssize_t q = blk; q < n; q++) st->flags |= m->single[b[q]];
    for (Py_ssize_t i = blk >= 8 ? blk - 8 : 0; i + 1 < n; i += 2) {
        unsigned p = PAIR(b[i], b[i + 1]);
        if (TEST(bits, p) & 1) MARK(vis, i);
    }
    return visit_marked(st, vis, done, n + 64);
}
#endif

/* scan(matcher, buffer, next_sample, step)
 *   -> (lines, flags, quiet_stats, next_sample, [(kind, line_index, start, end, ids), ...])
 * kind 0: candidate line, ids = tuple of the needle indices found in it; kind 1: sampled stats line.
 * line_index counts newlines before the line (0 for the buffer's first line). */
static PyObject *scan_with(PyObject *args, int simd) {
    PyObject *cap;
    Py_buffer view;
    Py_ssize_t next_sample, step;
    if (!PyArg_ParseTuple(args, "Oy*nn", &cap, &view, &next_sample, &step)) return NULL;
    Matcher *m = (Matcher *)PyCapsule_GetPointer(cap, "triage._linescan.Matcher");
    if (!m) { PyBuffer_Release(&view); return NULL; }
    Scan st = {0};
    st.m = m;
    st.b = view.buf;
    st.n = view.len;
    st.next_sample = next_sample;
    st.step = step;
    st.em.b = st.b;
    st.em.count = count_nl;
    st.last_mark = st.last_sample = st.c_bol = st.c_eol = -1;
    st.em.out = PyList_New(0);
    if (!st.em.out) { PyBuffer_Release(&view); return NULL; }
    int err;
#if HAVE_AVX2_PATH
    if (simd && m->simd_ok) {
        st.em.count = count_nl_avx2;
        err = run_avx2(&st) < 0;
    } else
#endif
        err = run_scalar(&st) < 0;
    (void)simd;
    if (!err) {
        if (st.n > 0) st.flags |= m->single[st.b[st.n - 1]];  /* the last byte of an odd-length buffer */
        err = finish_cand(&st) < 0;
    }
    Py_XDECREF(st.ids);
    PyBuffer_Release(&view);
    if (err) { Py_DECREF(st.em.out); return NULL; }
    Py_ssize_t lines = st.em.nl_cnt + st.em.count(st.b + st.em.nl_pos, st.b + st.n);
    return Py_BuildValue("(ninnN)", lines, st.flags, st.quiet, st.next_sample, st.em.out);
}

static PyObject *scan(PyObject *self, PyObject *args) {
    (void)self;
    return scan_with(args, use_avx2);
}

static PyObject *scan_scalar(PyObject *self, PyObject *args) {
    (void)self;
    return scan_with(args, 0);
}

/* pair_counts(buffer) -> bytes of 65536 uint32 counts (native order) of each two-byte pair. */
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
    {"scan_scalar", scan_scalar, METH_VARARGS, "scan() on the scalar loop, whatever the CPU (the reference)"},
    {"pair_counts", pair_counts, METH_VARARGS, "pair_counts(buffer) -> 65536 uint32 counts (native order)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_linescan", "Literal line prefilter for triage.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__linescan(void) {
    PyObject *mod = PyModule_Create(&module);
    if (!mod) return NULL;
    const char *off = getenv("TRIAGE_LINESCAN_SCALAR");
    use_avx2 = 0;
#if HAVE_AVX2_PATH
    __builtin_cpu_init();
    use_avx2 = __builtin_cpu_supports("avx2") && !(off && *off && strcmp(off, "0") != 0);
#endif
    (void)off;
    if (PyModule_AddStringConstant(mod, "SIMD", use_avx2 ? "avx2" : "") < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
