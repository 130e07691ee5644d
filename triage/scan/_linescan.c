/* _linescan: the literal prefilter of triage/scan/prefiltered.py, over a bytes buffer of whole lines.
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
 *          so every row with a high pool usage is parsed in Python (which drops non-stats lines), unless
 *          the call folds such rows (gap > 0: see Fold) and the row is plain
 *   flags  a stats line with a Ray actor prefix `(`, and the single bytes \r, ESC, NUL
 *
 * scan() returns the candidate lines (with the needles they hold), a sample of the other stats lines
 * (the first one at or after `next_sample`, then one every `step` bytes), the count of stats lines
 * that were not candidates, the newline count and the flags. Nothing here decides what a line means:
 * that stays in Python (scan.py), which the results feed.
 *
 * Three loops make the pass, with the same result on every input:
 *   scalar      the original loop: eight bytes (four even pairs) per step, four lookups in the bit
 *               table, and a visit (below) at each even offset whose pair is in it. The fallback and
 *               the reference: `scan_scalar(...)` always runs it.
 *   avx2        64 bytes per step read as 32 little-endian 16-bit lanes (each lane is one even pair,
 *               PAIR(b[i], b[i+1])), looked up in the same bit table with four 8-lane gathers; a shift
 *               moves each pair's bit to its lane's sign and a movemask makes a 32-bit mask. It visits
 *               exactly the offsets the scalar loop visits.
 *   avx512vbmi  64 bytes per step through a Bloom filter of the needles' pairs held in six registers:
 *               three 10-bit hashes of each 16-bit lane (a 16-bit multiply), each picking a byte of its
 *               128-byte table (vpermi2b) and a bit of that byte. An offset that passes is tested in the
 *               bit table and visited if there. The single bytes (\r, ESC, NUL) are left out of the
 *               filter and found by byte compares instead, so the offsets whose pair is in the table
 *               only because it holds such a byte are not visited: the scalar loop finds nothing there
 *               but that byte's flag (and, at most, finishes the pending candidate line a little earlier,
 *               which it otherwise does at the next visit: nothing is emitted in between), so skipping
 *               them changes nothing. With more than 4 distinct single bytes a matcher uses avx2.
 * A visit at offset i (visit(), shared by the three loops) is what the original loop did there: emit
 * the pending candidate once past its line, OR the flags of the two bytes, walk the needles filed under
 * the pair and handle each one present (found()). The SIMD loops visit in ascending order, as the scalar
 * loop does; they work a window of WIN bytes at a time (masks first, with no branches, then the window's
 * offsets in one loop), compare needles with two 8-byte loads instead of memcmp, and count newlines as
 * they read (compare, movemask, popcount), so that a line index costs only the bytes between the line's
 * start and the end of the window.
 * The SIMD functions carry __attribute__((target(...))) (the file is built without -mavx2 and the like)
 * and run only where __builtin_cpu_supports says the CPU has the instructions (checked at import); they
 * are compiled for x86-64 with gcc or clang only (the AVX-512 one with gcc >= 8 or clang >= 7).
 * `scan(...)` takes the fastest loop the CPU has (module attribute PATHS lists the SIMD ones, SIMD names
 * the one scan() takes, "" for the scalar loop); `set_simd(name)` switches it (tests), and setting the
 * environment variable TRIAGE_LINESCAN_SCALAR (to anything but "" or "0") before import makes it the
 * scalar loop. tests/test_linescan_native.py runs every path against the scalar loop.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <float.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_AVX2_PATH 1
#include <immintrin.h>
#define TARGET_AVX2 __attribute__((target("avx2,popcnt")))
/* the AVX-512 path wants a compiler that knows VBMI targets, intrinsics and cpu names (gcc 8, clang 7) */
#if (defined(__clang__) && __clang_major__ >= 7) || (!defined(__clang__) && __GNUC__ >= 8)
#define HAVE_AVX512_PATH 1
#define TARGET_AVX512 __attribute__((target("avx2,avx512f,avx512bw,avx512vbmi,popcnt")))
#else
#define HAVE_AVX512_PATH 0
#endif
#else
#define HAVE_AVX2_PATH 0
#define HAVE_AVX512_PATH 0
#endif

#if defined(__GNUC__) || defined(__clang__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

enum { K_CAND = 0, K_STATS = 1, K_USAGE = 2 };
enum { F_CR = 1, F_ESC = 2, F_NUL = 4, F_RAY = 8, F_MANY = 16 };

#define HSLOTS 8192  /* > 2 x the pairs two needles per anchor can use; MAX_NEEDLES is a quarter of it */

static unsigned slot_of(unsigned p) { return (p * 2654435761u) >> 19; }  /* top 13 bits of 32: < HSLOTS */

/* The AVX-512 path's Bloom filter of pairs: hash k of pair p is the top 10 bits of the 16-bit product
 * p * BLOOM_MUL[k]: byte (h >> 3) of table k, bit (h & 7). */
#define BLOOM_K 3
static const uint16_t BLOOM_MUL[BLOOM_K] = {0x9E37, 0x85EB, 0xC2B3};  /* odd, otherwise arbitrary */
static unsigned bloom_hash(unsigned p, int k) { return (uint16_t)(p * BLOOM_MUL[k]) >> 6; }

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
    struct { uint32_t pair; int32_t head; } slot[HSLOTS];  /* pair + 1 (0 = empty), first needle */
    uint8_t single[256];
    Py_ssize_t n;
    Needle *nd;
    PyObject *keep;
    /* For the AVX-512 path (built by simd_build; see the header comment). */
    int simd_ok;                 /* 0: more than 4 distinct single bytes, so scan() takes avx2 instead */
    int nsingle;
    unsigned char singles[4];    /* the distinct single-byte needles */
    uint8_t bloom[BLOOM_K][128]; /* the needles' pairs under BLOOM_K hashes of 10 bits (1024-bit tables) */
} Matcher;

#define PAIR(a, b) ((unsigned)(a) | ((unsigned)(b) << 8))

/* The loops scan() can take; path_ok says which this CPU runs (set at import). */
enum { P_SCALAR = 0, P_AVX2 = 1, P_AVX512 = 2, P_COUNT = 3 };
static const char *const PATH_NAME[P_COUNT] = {"", "avx2", "avx512vbmi"};
static int path_ok[P_COUNT] = {1, 0, 0};
static int path;  /* the loop scan() takes */

static void matcher_free(PyObject *cap) {
    Matcher *m = (Matcher *)PyCapsule_GetPointer(cap, "triage.scan._linescan.Matcher");
    if (m) {
        Py_XDECREF(m->keep);
        PyMem_Free(m->nd);
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

/* What the AVX-512 path needs beyond the pair table: the distinct single bytes (compared directly; with
 * more than 4 the matcher stays on the scalar loop there) and the Bloom filter of the needles' pairs. */
static void simd_build(Matcher *m) {
    m->simd_ok = 1;
    for (Py_ssize_t k = 0; k < 2 * m->n; k++) {
        const Needle *nd = &m->nd[k];
        if (nd->len == 0) {
            if (k >= m->n) continue;
            unsigned char c = (unsigned char)PyBytes_AS_STRING(PyTuple_GET_ITEM(m->keep, k))[0];
            int seen = 0;
            for (int q = 0; q < m->nsingle; q++) seen |= m->singles[q] == c;
            if (seen) continue;
            if (m->nsingle == 4) m->simd_ok = 0;
            else m->singles[m->nsingle++] = c;
            continue;
        }
        unsigned p = PAIR(nd->s[nd->off], nd->s[nd->off + 1]);
        for (int q = 0; q < BLOOM_K; q++) {
            unsigned h = bloom_hash(p, q);
            m->bloom[q][h >> 3] |= (uint8_t)(1u << (h & 7));
        }
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
            while (m->slot[h].pair && m->slot[h].pair != p + 1) h = (h + 1) & (HSLOTS - 1);
            if (!m->slot[h].pair) { m->slot[h].pair = p + 1; m->slot[h].head = -1; }
            nd[k].next = m->slot[h].head;
            m->slot[h].head = (int32_t)k;
            m->bits[p >> 3] |= (uint8_t)(1u << (p & 7));
        }
    }
    Py_DECREF(fast);
    m->n = n; m->nd = nd; m->keep = keep;
    simd_build(m);
    PyObject *cap = PyCapsule_New(m, "triage.scan._linescan.Matcher", matcher_free);
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

#if HAVE_AVX512_PATH
/* Newlines in [p, q), 64 bytes per step and the last < 64 in one masked load (masked-off bytes are not read, so
 * nothing past q is touched). Same result as count_nl. The fold counts the ~100-300 bytes between two rows this
 * way, where count_nl_avx2 left up to 63 bytes to the 8-byte loop. */
TARGET_AVX512 static Py_ssize_t count_nl_avx512(const unsigned char *p, const unsigned char *q) {
    Py_ssize_t c = 0;
    const __m512i nl = _mm512_set1_epi8('\n');
    while (q - p >= 64) {
        c += __builtin_popcountll(_mm512_cmpeq_epi8_mask(_mm512_loadu_si512((const void *)p), nl));
        p += 64;
    }
    if (q > p) {
        __mmask64 k = (1ULL << (q - p)) - 1;  /* q - p < 64 */
        c += __builtin_popcountll(_mm512_mask_cmpeq_epi8_mask(k, _mm512_maskz_loadu_epi8(k, (const void *)p), nl));
    }
    return c;
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
/* Where SGLang's stats shape that starts at s ends (just past its `, `), or 0 when it does not start there. */
static ALWAYS_INLINE Py_ssize_t stats_shape(const unsigned char *b, Py_ssize_t n, Py_ssize_t s, Py_ssize_t len) {
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
    return t + 1 < n && (b[t] == '.' || b[t] == ',') && b[t + 1] == ' ' ? t + 2 : 0;
}

/* A usage value plainly below 0.9: 0.[0-8][0-9]* ending the pair (comma, blank, end of line). */
static ALWAYS_INLINE int low_usage(const unsigned char *b, Py_ssize_t v, Py_ssize_t n) {
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
    /* fused: the loop counts newlines as it reads; nl_w of them lie before w (the bytes it has read),
       n_pos before nl_pos. Counts then come from the few bytes between a line start and w. */
    int fused;
    Py_ssize_t w, nl_w, n_pos;
} Emit;

/* The line index of the line starting at bol (bol never goes back). */
static Py_ssize_t em_line(Emit *em, Py_ssize_t bol) {
    if (em->fused) {  /* the same number: newlines in [nl_pos, bol), or 0 if bol <= nl_pos */
        Py_ssize_t n_bol = em->nl_w - em->count(em->b + bol, em->b + em->w);
        if (bol > em->nl_pos) em->nl_cnt += n_bol - em->n_pos;
        em->n_pos = n_bol;
    } else
        em->nl_cnt += em->count(em->b + em->nl_pos, em->b + bol);
    em->nl_pos = bol;
    return em->nl_cnt;
}

/* Append (kind, line_index, bol, eol, ids) to the output; ids: a new reference or NULL (None), stolen. */
static int emit(Emit *em, int kind, Py_ssize_t bol, Py_ssize_t eol, PyObject *ids) {
    em_line(em, bol);
    PyObject *t = PyTuple_New(5);
    if (!t) { Py_XDECREF(ids); return -1; }
    if (!ids) { ids = Py_None; Py_INCREF(ids); }
    PyTuple_SET_ITEM(t, 4, ids);
    PyObject *v[4] = {PyLong_FromLong(kind), PyLong_FromSsize_t(em->nl_cnt), PyLong_FromSsize_t(bol),
                      PyLong_FromSsize_t(eol)};
    for (int k = 0; k < 4; k++) PyTuple_SET_ITEM(t, k, v[k]);
    int r = v[0] && v[1] && v[2] && v[3] ? PyList_Append(em->out, t) : -1;
    Py_DECREF(t);
    return r;
}

/* Origins: one file may hold the stats rows of several engines (a Ray driver log, each line behind its actor's
 * `(ActorName pid=N, ip=...)`; DP-attention groups, each printing its own rows as `[time DP3 TP3]`). A row's origin
 * is what Python's engine_key reads of its line: `pid=N` of a leading Ray prefix, a blank, the ` DP<digits>` tag of
 * the bracket that starts the rest of the line; empty for a row with neither. Python maps it to the engine timeline
 * (prefiltered.origin_key). A line Python may read otherwise has no origin here (origin_of gives ORG_ODD, and Python
 * parses the row): a `(` that does not start a Ray prefix, or one after other prefixes (split_ray finds those), a
 * colour code's remains, vLLM's `Engine NNN:` in the first 120 characters, a bracket not closed before the marker,
 * a tag with blanks or bytes outside printable ASCII.
 * With origins=True the origin of every row is found and the quiet rows are counted per origin; more than
 * MAX_ORIGINS in one buffer set F_MANY (the chunk goes through the Python path). Otherwise only the rows the fold
 * needs are looked up, and the call takes one origin: a second sets F_MANY, and Python scans the chunk again per
 * origin. Each origin has its own fold state (OFold, see Fold). */
#define MAX_ORIGINS 64
#define ORIGIN_MAX 64  /* bytes of an origin: `pid=` and up to 24 digits, a blank, the DP tag */
enum { ORG_FULL = -1, ORG_ODD = -2, ORG_UNKNOWN = -3, ORG_ERR = -4 };
typedef struct OFold OFold;
typedef struct {
    Py_ssize_t n, last, cap;  /* last: the slot found last time (rows of one engine come in runs); cap: slots allowed */
    Py_ssize_t len[MAX_ORIGINS], count[MAX_ORIGINS];
    unsigned char buf[MAX_ORIGINS][ORIGIN_MAX];
    OFold *fold[MAX_ORIGINS];  /* each origin's fold state, while the call folds */
} Origins;

/* Byte classes of a Ray actor prefix (prefixes.RAY_ACTOR, ASCII): the name's bytes after its first, and the ip's. */
enum { C_NAME = 1, C_IP = 2 };
static uint8_t RAY_CLASS[256];

static void ray_class_init(void) {
    for (int c = 0; c < 128; c++) {
        if ((c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || c == '_' || c == '.' || c == ':'
            || c == '-') RAY_CLASS[c] |= C_NAME;
        if ((c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') || c == '.' || c == ':')
            RAY_CLASS[c] |= C_IP;
    }
}

/* The length of the Ray actor prefix at b + p as prefixes.RAY_ACTOR matches it (`(Name pid=N, ip=A)`, pid and ip
 * optional), 0 when there is none before lim; *pid, *pid_len: its pid digits (pid_len 0: none). */
static Py_ssize_t ray_prefix(const unsigned char *b, Py_ssize_t p, Py_ssize_t lim, Py_ssize_t *pid,
                             Py_ssize_t *pid_len) {
    Py_ssize_t t = p + 1;
    *pid_len = 0;
    if (t >= lim || !(((b[t] | 0x20) >= 'a' && (b[t] | 0x20) <= 'z') || b[t] == '_')) return 0;
    for (t++; t < lim && RAY_CLASS[b[t]] & C_NAME; t++) {}
    if (t + 6 <= lim && !memcmp(b + t, " pid=", 5) && b[t + 5] >= '0' && b[t + 5] <= '9') {
        *pid = t + 5;
        for (t += 5; t < lim && b[t] >= '0' && b[t] <= '9'; t++) {}
        *pid_len = t - *pid;
    }
    if (t + 6 <= lim && !memcmp(b + t, ", ip=", 5) && RAY_CLASS[b[t + 5]] & C_IP)
        for (t += 5; t < lim && RAY_CLASS[b[t]] & C_IP; t++) {}
    else if (t + 7 <= lim && !memcmp(b + t, ", ip=[", 6) && RAY_CLASS[b[t + 6]] & C_IP) {
        /* an IPv6 node address in brackets: `, ip=[fdbd:dccd::1]` (prefixes.RAY_IP) */
        for (t += 6; t < lim && RAY_CLASS[b[t]] & C_IP; t++) {}
        if (t >= lim || b[t] != ']') return 0;
        t++;
    }
    return t < lim && b[t] == ')' ? t + 1 - p : 0;
}

/* ---- The fold: plain SGLang stats rows with a high pool usage, kept as runs instead of returned ----
 *
 * Python reads a row whose usage is not plainly below 0.9 (EngineStats.add: pressure rows, episodes). In a
 * pool saturated for hours that is every row, and one Python call per row is 30x grep. So scan(...,
 * fold=...) parses such a row here when it has the plain shape (ASCII, at most FOLD_ROW_MAX bytes, `key:
 * value` pairs after the marker, see fold_parse), is not a lone-decode row and has an origin (see Origins), and
 * keeps it in a run of its origin (OFold: each engine's rows fold apart, never mixed):
 *   a segment  consecutive pressed rows (usage >= 0.9 and a queue) of one engine, no two more than `gap`
 *              lines apart and no other row of the engine between them: rows, first/last/peak row, peaks,
 *              and the first `evidence` pressed rows of the engine in the call (the texts of those rows only);
 *   a close    another row of the engine (below 0.9, or no queue) after pressed rows Python may still hold
 *              an open episode for.
 * Records (kind 2) name their origin and go into the output before any line Python parses: every origin's open
 * run is written out before another line is returned (fold_flush), so Python applies each engine's records in
 * the order its rows came (EngineStats.fold), and before any row of it that Python parses itself. Folded rows
 * stay counted as quiet rows (per origin with origins=True); one the sampler picks is returned as kind 3 (for
 * the timeline only). Without origins=True the call folds the rows of one origin (the rows it looks up: high
 * ones, and the quiet rows that may close a run); a row of a second sets F_MANY, and Python scans the chunk again
 * with origins=True. */
#define FOLD_ROW_MAX 1024
#define FOLD_EVIDENCE 20

typedef struct {
    Py_ssize_t ln, bol, eol;  /* line index in the buffer, bounds */
    double t, u, q;           /* time stamp (s, -1 none, T_UNREAD not read yet: row_t), usage, queue */
} FoldRow;
#define T_UNREAD -2.0

/* A batch: closed segments of one engine that each start a new episode in Python (a quiet row ended the one
 * before, or none was open) and that follow each other with no line for Python between them. Instead of a record
 * each, they are handed over as one record (kind 4) at the place of the first: their count, rows, seconds and
 * peaks, the rows' evidence, and a bounded choice of the episodes themselves: the first, the last, the first of
 * the highest peak (usage, then queue) and those that may be among the `keep` longest (seconds, then rows) Python
 * keeps (Episodes.batch): any that beats the engine's `bar` (Python's shortest kept, or -1 while it has room or
 * Python has named no bar for the origin), at most `keep` of them. A pool whose rows flip in and out of pressure
 * then costs Python a record per batch, not per episode. */
typedef struct {
    FoldRow first, last, peak;
    Py_ssize_t rows;
    double max_u, max_q, max_run, secs;
} Ep;

typedef struct {
    double bar_s;             /* what an episode must beat to be handed over as one of the longest */
    Py_ssize_t bar_r;
    Py_ssize_t n, rows;       /* episodes and their rows */
    double secs, max_u, max_q;
    int close_lone;
    Ep first, last, top;
    Ep *cand;                 /* the longest candidates (at most keep), heap memory (made on first use) */
    Py_ssize_t ncand, minpos;
    Py_ssize_t nev;
    FoldRow ev[FOLD_EVIDENCE];
    Py_ssize_t all;
    FoldRow all_first, all_last;
    double all_u, all_q;
} Batch;

/* The fold state of one origin. */
struct OFold {
    PyObject *key;            /* the origin, as bytes: its records name it */
    /* the open segment */
    int seg, seg_self;        /* seg_self: it starts a new episode in Python (see Batch) */
    Py_ssize_t rows;
    FoldRow first, last, peak;
    double max_u, max_q, max_run;
    Py_ssize_t nev, evidence; /* evidence: pressed rows whose text the call may still return */
    FoldRow ev[FOLD_EVIDENCE];
    /* every folded row since the last record (pressed or not): what the timeline's peaks and ends need */
    Py_ssize_t all;
    FoldRow all_first, all_last;
    double all_u, all_q;
    int close_lone;           /* a folded row ends a lone-decode episode */
    int py_open;              /* Python may hold an open pressure episode of the engine */
    int closing;              /* a row ended it while no segment was open */
    FoldRow close;            /* that row (line index and bounds) */
    Batch bat;
};

/* The keys of the last plain row of each kind (decode, prefill) parsed: rows of one engine repeat their keys, so a
 * row whose `key: ` bytes are those of the row before needs no second look at them (fold_parse). */
#define SKEL_SEGS 32
#define SKEL_BYTES 1024
/* the fields the fold reads; then those a sampled row's values give (row_parse), and keys Python's parse reads
 * otherwise (F_ODD: `usage`, `phase`, `t`, `engine`, `preempted`, `prompt throughput (token/s)`) */
enum { F_USAGE = 1, F_FULL, F_QUEUE, F_RUNNING, F_PRE, F_RET, F_GEN, F_INPUT, F_MAMBA, F_ODD };
typedef struct {
    int n;                            /* segments: a key, blanks, `: ` */
    uint16_t off[SKEL_SEGS], len[SKEL_SEGS];
    uint8_t field[SKEL_SEGS];         /* which field the key is (F_*), 0 none */
    uint8_t big_e[SKEL_SEGS];         /* the segment holds an `E` (of vLLM's `Engine NNN:`, see origin_key) */
    unsigned char bytes[SKEL_BYTES];
} Skeleton;

typedef struct {
    int on;                   /* this call folds */
    Py_ssize_t gap;           /* lines: rows further apart do not continue a segment */
    Py_ssize_t evidence;      /* pressed rows of each origin whose text the call may return */
    Py_ssize_t keep;          /* > 0: closed episodes in a row are batched (see Batch) */
    double bar_s;             /* the bar of the origins `bars` does not name */
    Py_ssize_t bar_r;
    PyObject *bars;           /* None, or {origin: (seconds, rows)} */
    /* the row whose marker was counted last, until its line is done: 1 quiet, 2 folded; and its origin slot */
    int p_kind, p_pressed;
    Py_ssize_t p_s, p_mlen, p_bol, p_eol, p_org;
    double p_u, p_q, p_run, p_t;
    int p_big_e;              /* the pending row holds an `E` from its marker on (RowVals.big_e) */
    /* the line index of folded rows (its own counter: records are not emitted at their rows' offsets) */
    Py_ssize_t nl_pos, nl_cnt, n_pos;
    long day[2];              /* the date of the last time stamp read (yyyymmdd, 0 none) and its day number */
    Skeleton skel[2];         /* the keys of the last decode and prefill rows parsed */
    Py_ssize_t s_at;          /* the output index of a sampled row the rows before it are not written out for yet
                                 (-1 none): see sample_settle */
} Fold;

/* ---- The prefix of the last row read whole ----
 * Rows of one engine start with the same prefix but for the time stamp's digits (`[2026-05-24 02:54:42 DP0 TP0] `,
 * or that behind a Ray prefix). What the fold and the origin lookup read of a row's prefix (bytes before its marker)
 * does not change when only those digits do: a prefix with the stamp `[DDDD-DD-DD DD:DD:DD` (no byte of it a `(`,
 * `E`, `]`, `D`, `b` or a control byte) at its start, or where origin_key reads the line from after a Ray prefix, and
 * no `E` from there on, is printable ASCII with no `batch` and gives one origin slot for every line whose prefix
 * equals it but for the stamp's digits, when the rest of the line holds no `Engine NNN:` within reach (origin_key's
 * vLLM test, run on the rest alone). So the prefix of the last row whose origin was looked up
 * is kept with its slot, and a row whose prefix matches it skips those reads (prefix_memo). */
#define PREFIX_MAX 96
#define STAMP_LEN 20
typedef struct {
    Py_ssize_t len;           /* 0: none */
    Py_ssize_t slot;
    Py_ssize_t hit;           /* the line start whose prefix matched it last */
    Py_ssize_t stamp, from;   /* offsets: of its time stamp; where origin_key reads the line from (after a Ray prefix) */
    unsigned char bytes[PREFIX_MAX];
} Prefix;

/* ---- A family: candidate lines that fold into the line Python kept last (origins.Families) ----
 * Python says, for the call, which line its next candidate lines may fold into: that line's text with its digit
 * runs removed, its needle indices, its last line (index relative to this buffer, may be negative), the gap
 * allowed and which digit run (0-based, -1: none) holds the count its event adds up. While the candidate lines
 * that come are printable ASCII of at most FAM_LINE_MAX bytes, hold the same needles, equal that text but for
 * their digit runs and are at most `gap` lines after the last one, they are only counted (see fam_folds for
 * what other lines do). The count goes out as one record (kind 5) before the next line returned: (5, line
 * index of the last folded, 0, 0, (lines, sum of their counts)), for the line Python kept last. Stats rows
 * between do not matter (Python keeps them out of the context). */
#define FAM_LINE_MAX 4096
typedef struct {
    int on;                   /* armed and not yet ended in this call */
    const unsigned char *text;
    Py_ssize_t len;
    Py_ssize_t ids[32], nids;
    Py_ssize_t until, gap, run;
    int waiting;              /* other candidate lines came: the next line of the family is returned, not counted */
    int restart;              /* the pending line is of the family, returned to start its next episode (fam_folds) */
    Py_ssize_t n;             /* lines folded, not yet written out */
    long long sum;
} Family;

/* The state of one scan() call, shared by all loops. */
typedef struct {
    const Matcher *m;
    const unsigned char *b;
    Py_ssize_t n, quiet, next_sample, step;
    int flags;
    Emit em;
    Py_ssize_t last_mark, last_sample;  /* newest counted marker, newest sampled line start */
    Py_ssize_t last_mark_id;            /* its needle index */
    int origins;                        /* count quiet rows per origin (see Origins) */
    Py_ssize_t last_mark_origin;        /* the origin slot the newest marker was counted under */
    Origins org;                        /* the origins of rows, and their fold states */
    Prefix memo;                        /* the last row prefix read whole (see Prefix) */
    Py_ssize_t c_bol, c_eol;            /* the pending candidate line (c_bol < 0: none) */
    Py_ssize_t *ids, nids, ids_cap;     /* its needle indices (ids_local, or a larger heap array) */
    Py_ssize_t ids_local[32];
    Fold fold;                          /* pressure rows kept as runs (fold.on: this call folds) */
    Family fam;                         /* candidate lines of the family of Python's last line, counted here */
    struct Cols *cols;                  /* lines of registered numeric shapes, kept as columns (NULL: off) */
    Py_ssize_t col_skip;                /* offsets below it are not visited: a line of a stable shape (cols_early) */
    Py_ssize_t jump, jump_nl;           /* >= 0: the loop goes on from this line start, jump_nl newlines before
                                           it (lines taken whole by cols_run); -1: none */
    struct Errs *errs;                  /* error-like lines counted per key (NULL: off; see Errs) */
    Py_ssize_t tb_bol;                  /* >= 0: a traceback's end line starts here, returned before the next (tb_end) */
} Scan;

/* Errs (see its section before Columns). */
struct Errs;
static int err_take(Scan *st);
static int err_early(Scan *st, Py_ssize_t id);
static int err_end(Scan *st, Py_ssize_t lines);
static void err_begin(struct Errs *E, long long base, Py_ssize_t ahead);
static struct Errs *errs_of(PyObject *cap);
static PyObject *errfold_new(PyObject *self, PyObject *args);
static PyObject *errfold_key(PyObject *self, PyObject *args);
static PyObject *errfold_add(PyObject *self, PyObject *args);
static PyObject *errfold_find(PyObject *self, PyObject *args);
static PyObject *errfold_lookup(PyObject *self, PyObject *args);
static PyObject *errfold_commit(PyObject *self, PyObject *args);
static PyObject *errfold_mark(PyObject *self, PyObject *args);
static PyObject *errfold_settle(PyObject *self, PyObject *args);
static PyObject *errfold_take(PyObject *self, PyObject *args);
static PyObject *errfold_whole(PyObject *self, PyObject *args);

/* The columns (see the Columns section at the end of the file). */
#define COL_LINE_MAX 4096  /* bytes: longer lines are not rows */
#define COL_TOKENS 64      /* number tokens a shape holds at most */
#define COL_SHAPES 64      /* shapes one call matches at most */
#define COL_TOP 16         /* the highest values of a series the store keeps (series_store.TOP) */
static int cols_take(Scan *st);
static int cols_early(Scan *st);
static ALWAYS_INLINE Py_ssize_t jumped(Scan *st, Py_ssize_t *nls);
static int cols_before(Scan *st);
static int cols_flush(Scan *st);
static struct Cols *cols_new(PyObject *cap);
static void cols_free(struct Cols *c);
static PyObject *shapes(PyObject *self, PyObject *args);
static PyObject *col_join(PyObject *self, PyObject *args);

/* ---- the fold (see the Fold comment above) ---- */

/* Newlines before bol: the fold's own counter, the way emit() counts (bol never goes back). Folded rows are close
 * to each other: with the fused count, from the last row when that is nearer than the end of the bytes read. */
static Py_ssize_t fold_line(Scan *st, Py_ssize_t bol) {
    Fold *f = &st->fold;
    Emit *em = &st->em;
    if (em->fused) {
        Py_ssize_t n_bol = bol - f->nl_pos < em->w - bol ? f->n_pos + em->count(em->b + f->nl_pos, em->b + bol)
                                                         : em->nl_w - em->count(em->b + bol, em->b + em->w);
        if (bol > f->nl_pos) f->nl_cnt += n_bol - f->n_pos;
        f->n_pos = n_bol;
    } else
        f->nl_cnt += em->count(em->b + f->nl_pos, em->b + bol);
    f->nl_pos = bol;
    return f->nl_cnt;
}

/* The origin slot of the stats row whose marker is at s (line start bol): ORG_ODD when Python may read the line's
 * origin otherwise (see Origins), ORG_FULL when the call holds as many origins as it may, ORG_ERR on error. */
static Py_ssize_t origin_of(Scan *st, Py_ssize_t bol, Py_ssize_t s);

/* The fold state of a new origin slot i (its bytes in place): Python may hold an episode of it from before. */
static int ofold_new(Scan *st, Py_ssize_t i) {
    Fold *f = &st->fold;
    OFold *g = PyMem_Calloc(1, sizeof(OFold));
    if (!g) { PyErr_NoMemory(); return -1; }
    st->org.fold[i] = g;
    g->key = PyBytes_FromStringAndSize((const char *)st->org.buf[i], st->org.len[i]);
    if (!g->key) return -1;
    g->py_open = 1;
    g->evidence = f->evidence;
    g->bat.bar_s = f->bar_s;
    g->bat.bar_r = f->bar_r;
    if (f->bars != Py_None) {
        PyObject *bar = PyDict_GetItemWithError(f->bars, g->key);
        if (bar ? !PyArg_ParseTuple(bar, "dn", &g->bat.bar_s, &g->bat.bar_r) : PyErr_Occurred() != NULL) return -1;
    }
    return 0;
}

/* The length of a colour code's remains before a Ray prefix at bol (`[36m(`, its escape byte lost: split_ray's
 * COLOUR_RESIDUE, where its cheap test finds `m(` in the line's characters 2-13), else 0. */
static Py_ssize_t residue(const unsigned char *b, Py_ssize_t bol, Py_ssize_t s) {
    Py_ssize_t t = bol + 1;
    if (b[bol] != '[') return 0;
    for (;;) {
        Py_ssize_t d = t;
        while (t < s && t - d < 3 && b[t] >= '0' && b[t] <= '9') t++;
        if (t == d || (t < s && b[t] >= '0' && b[t] <= '9')) return 0;  /* 1-3 digits */
        if (t < s && b[t] == ';') { t++; continue; }
        break;
    }
    return t + 1 < s && b[t] == 'm' && b[t + 1] == '(' && t - bol <= 12 ? t + 1 - bol : 0;
}

/* Whether the first `Engine ` in [t, lim) is vLLM V1's `Engine NNN:` (a byte >= 0x80 may be a digit). */
static int engine_tag(const unsigned char *b, Py_ssize_t n, Py_ssize_t t, Py_ssize_t lim) {
    for (const unsigned char *e = memchr(b + t, 'E', (size_t)(lim - t)); e && e + 7 <= b + lim;
         e = memchr(e + 1, 'E', (size_t)(b + lim - e - 1))) {
        if (memcmp(e, "Engine ", 7)) continue;
        Py_ssize_t at = e + 7 - b, digit = 0;  /* the first one only */
        for (Py_ssize_t v = at; v < at + 3 && v < n; v++) digit += (b[v] >= '0' && b[v] <= '9') || b[v] >= 0x80;
        return digit == 3 && at + 3 < n && (b[at + 3] == ':' || b[at + 3] >= 0x80);
    }
    return 0;
}

/* The origin of the line at bol whose prefixes end before s (a row's marker; a candidate line's end) into key, its
 * length into *k: 0, or ORG_ODD (see Origins). */
static int origin_key(const unsigned char *b, Py_ssize_t n, Py_ssize_t bol, Py_ssize_t s, unsigned char *key,
                      Py_ssize_t *k, Py_ssize_t *from) {
    Py_ssize_t t = bol, r = residue(b, bol, s);
    *k = 0;
    if (b[bol] == '(' || r) {  /* engine_key reads the Ray prefix's pid, and the line after the prefix and a blank */
        Py_ssize_t pid = 0, plen = 0, e = ray_prefix(b, bol + r, s, &pid, &plen);
        if (!e || plen > 24) return ORG_ODD;
        if (plen) {
            memcpy(key, "pid=", 4);
            memcpy(key + 4, b + pid, (size_t)plen);
            *k = 4 + plen;
        }
        t = r ? bol : bol + e;  /* after a colour code's remains, the whole line (RAY_PREFIX is not at its start) */
        if (!r && t < s && b[t] == ' ') t++;
    } else if (memchr(b + bol, '(', (size_t)(s - bol))) return ORG_ODD;  /* a Ray prefix after other prefixes */
    Py_ssize_t lim = t + 120 < n ? t + 120 : n;  /* vLLM V1's `Engine NNN:` in the first 120 characters */
    const unsigned char *nl = lim > s ? memchr(b + s, '\n', (size_t)(lim - s)) : NULL;
    if (nl) lim = nl - b;
    *from = t;  /* where engine_key reads the line from */
    if (engine_tag(b, n, t, lim)) return ORG_ODD;
    if (t < s && b[t] == '[') {  /* the first ` DP` before the bracket closes; a digit after it makes it the tag */
        const unsigned char *c = memchr(b + t, ']', (size_t)(s - t));
        if (!c) return ORG_ODD;  /* engine_key would read on past the marker */
        Py_ssize_t ce = c - b;
        for (const unsigned char *d = memchr(b + t, 'D', (size_t)(ce - t)); d && d + 2 <= b + ce;
             d = memchr(d + 1, 'D', (size_t)(b + ce - d - 1))) {
            if (d == b + t || d[-1] != ' ' || d[1] != 'P') continue;  /* the first ` DP` */
            if (d + 2 < b + ce && d[2] >= '0' && d[2] <= '9') {  /* to the next blank or the bracket's end */
                if (*k) key[(*k)++] = ' ';
                for (const unsigned char *v = d; v < b + ce && *v != ' '; v++) {
                    if (*v < 0x21 || *v >= 0x7f || *k == ORIGIN_MAX) return ORG_ODD;
                    key[(*k)++] = *v;
                }
            }
            break;
        }
    }
    return 0;
}

/* The slot of origin key (k bytes), -1 when the call has not seen it. */
static Py_ssize_t origin_slot(Origins *o, const unsigned char *key, Py_ssize_t k) {
    Py_ssize_t l = o->last;
    if (l < o->n && o->len[l] == k && !memcmp(o->buf[l], key, (size_t)k)) return l;
    for (Py_ssize_t i = 0; i < o->n; i++)
        if (o->len[i] == k && !memcmp(o->buf[i], key, (size_t)k)) return o->last = i;
    return -1;
}

static int printable(const unsigned char *p, Py_ssize_t len);

/* Does p (len bytes) start with a time stamp `[DDDD-DD-DD DD:DD:DD`? Three 8-byte words (bytes 0-7, 8-15, 12-19),
 * each xored with the stamp ('0' at a digit): a separator's byte must then be 0, a digit's at most 9 (its high
 * nibble 0, and adding 6 carries nothing into bit 4; no lane carries into the next). */
static uint64_t STAMP_X[3], STAMP_LOW[3], STAMP_SIX[3], STAMP_B4[3];
static void stamp_init(void) {
    static const char shape[STAMP_LEN + 1] = "[0000-00-00 00:00:00";
    static const int at[3] = {0, 8, 12};
    for (int w = 0; w < 3; w++)
        for (int j = 0; j < 8; j++) {
            char c = shape[at[w] + j];
            int sh = 8 * j;  /* little-endian: byte j of the word */
            STAMP_X[w] |= (uint64_t)(unsigned char)c << sh;
            if (c == '0') {
                STAMP_LOW[w] |= (uint64_t)0x0f << sh;
                STAMP_SIX[w] |= (uint64_t)0x06 << sh;
                STAMP_B4[w] |= (uint64_t)0x10 << sh;
            }
        }
}

static ALWAYS_INLINE int stamped(const unsigned char *p, Py_ssize_t len) {
    static const int at[3] = {0, 8, 12};
    if (len < STAMP_LEN) return 0;
    for (int w = 0; w < 3; w++) {
        uint64_t x;
        memcpy(&x, p + at[w], 8);
        x ^= STAMP_X[w];
        if ((x & ~STAMP_LOW[w]) || ((x + STAMP_SIX[w]) & STAMP_B4[w])) return 0;
    }
    return 1;
}

/* The memo's slot when the row prefix [bol, s) matches the one kept (see Prefix), else -1. `rest`: also look for
 * vLLM's tag in the rest of the line within origin_key's reach (the origin lookup); without it, only what the fold
 * reads of the prefix is asked (printable, no `batch`). */
static ALWAYS_INLINE Py_ssize_t prefix_memo(Scan *st, Py_ssize_t bol, Py_ssize_t s, int rest) {
    Prefix *pm = &st->memo;
    const unsigned char *b = st->b;
    Py_ssize_t len = s - bol;
    if (!pm->len) return -1;  /* none kept */
    if (bol != pm->hit) {  /* not the prefix matched a moment ago (fold_parse, then the row's origin) */
        Py_ssize_t at = pm->stamp, after = at + STAMP_LEN;
        if (len != pm->len || !stamped(b + bol + at, len - at) || memcmp(b + bol, pm->bytes, (size_t)at) ||
            memcmp(b + bol + after, pm->bytes + after, (size_t)(len - after)))
            return -1;
        pm->hit = bol;
    } else if (len != pm->len)
        return -1;
    if (rest) {
        Py_ssize_t lim = bol + pm->from + 120 < st->n ? bol + pm->from + 120 : st->n;
        const unsigned char *nl = lim > s ? memchr(b + s, '\n', (size_t)(lim - s)) : NULL;
        if (nl) lim = nl - b;
        if (lim > s && engine_tag(b, st->n, s, lim)) return -1;
    }
    return pm->slot;
}

/* Keep the prefix [bol, s) of a row whose origin is slot i (origin_key read its line from `from`), when it is of
 * the kind Prefix describes: the stamp at its start, or right where origin_key reads from after a Ray prefix. */
static void prefix_keep(Scan *st, Py_ssize_t bol, Py_ssize_t s, Py_ssize_t i, Py_ssize_t from) {
    const unsigned char *b = st->b;
    Py_ssize_t len = s - bol, at = b[bol] == '(' ? from - bol : 0;
    st->memo.len = 0;
    st->memo.hit = -1;
    if (len > PREFIX_MAX || from < bol || from > s || !stamped(b + bol + at, len - at) ||
        memchr(b + from, 'E', (size_t)(s - from)) || !printable(b + bol, len))
        return;
    for (const unsigned char *k = memchr(b + bol, 'b', (size_t)len); k && k + 5 <= b + s;
         k = memchr(k + 1, 'b', (size_t)(b + s - k - 1)))
        if (!memcmp(k, "batch", 5)) return;
    memcpy(st->memo.bytes, b + bol, (size_t)len);
    st->memo.slot = i;
    st->memo.stamp = at;
    st->memo.from = from - bol;
    st->memo.len = len;
}

/* origin_of for a row whose line, from s on, is known to hold no `E` when rest is 0 (no `Engine NNN:` to look for
 * there when its prefix is the one kept). */
static Py_ssize_t origin_of_row(Scan *st, Py_ssize_t bol, Py_ssize_t s, int rest) {
    Origins *o = &st->org;
    unsigned char key[ORIGIN_MAX];
    Py_ssize_t k, from = bol;
    Py_ssize_t i = prefix_memo(st, bol, s, rest);
    if (i >= 0) return i;
    if (origin_key(st->b, st->n, bol, s, key, &k, &from) < 0) return ORG_ODD;
    i = origin_slot(o, key, k);
    if (i >= 0) {
        prefix_keep(st, bol, s, i, from);
        return i;
    }
    if (o->n == o->cap) return ORG_FULL;
    memcpy(o->buf[o->n], key, (size_t)k);
    o->len[o->n] = k;
    o->count[o->n] = 0;
    if (st->fold.on && ofold_new(st, o->n) < 0) return ORG_ERR;
    return o->last = o->n++;
}

static Py_ssize_t origin_of(Scan *st, Py_ssize_t bol, Py_ssize_t s) {
    return origin_of_row(st, bol, s, 1);
}

static int dig2(const unsigned char *p, int *v) {
    if (p[0] < '0' || p[0] > '9' || p[1] < '0' || p[1] > '9') return 0;
    *v = (p[0] - '0') * 10 + (p[1] - '0');
    return 1;
}

static int is_leap(long y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; H. Hinnant's days_from_civil). */
static long days_from_civil(long y, int m, int d) {
    y -= m <= 2;
    long era = (y >= 0 ? y : y - 399) / 400;
    long yoe = y - era * 400;
    long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* engine_stats.row_time over an ASCII line without control bytes: the first STAMP match that ends within the
 * line's first 80 characters, in seconds (a year-less date is put in 2001; an impossible date is -1), or -1. */
static double stamp_time(const unsigned char *p, Py_ssize_t len, long *day) {
    static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    Py_ssize_t L = len < 80 ? len : 80;
    int Y, Y2, mo, d, H, M, S;
    for (Py_ssize_t i = 0; i < L; i++) {
        const unsigned char *q = p + i;
        long year = -1;
        int at = -1;  /* offset of the month digits */
        if (i + 19 <= L && dig2(q, &Y) && dig2(q + 2, &Y2) && q[4] == '-') {
            const unsigned char *r = q + 5;
            if (dig2(r, &mo) && r[2] == '-' && dig2(r + 3, &d) && (r[5] == ' ' || r[5] == 'T') && dig2(r + 6, &H)
                && r[8] == ':' && dig2(r + 9, &M) && r[11] == ':' && dig2(r + 12, &S)) {
                year = Y * 100 + Y2;
                at = 5;
            }
        }
        if (at < 0 && i + 14 <= L && dig2(q, &mo) && q[2] == '-' && dig2(q + 3, &d) && (q[5] == ' ' || q[5] == 'T')
            && dig2(q + 6, &H) && q[8] == ':' && dig2(q + 9, &M) && q[11] == ':' && dig2(q + 12, &S)) {
            year = 2001;
            at = 0;
        }
        if (at >= 0) {
            if (year < 1 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] + (mo == 2 && is_leap(year))) return -1.0;
            long ymd = year * 10000 + mo * 100 + d;  /* day[0], day[1]: the date read last and its day number */
            if (day[0] != ymd) { day[0] = ymd; day[1] = days_from_civil(year, mo, d); }
            return (double)day[1] * 86400.0 + H * 3600 + M * 60 + S;
        }
        if (q[0] == '[' && i + 10 <= L && dig2(q + 1, &H) && q[3] == ':' && dig2(q + 4, &M) && q[6] == ':'
            && dig2(q + 7, &S) && (q[9] == ']' || q[9] == '.' || q[9] == ',' || q[9] == ' '))
            return (double)(H * 3600 + M * 60 + S);
    }
    return -1.0;
}

/* Printable ASCII (0x20-0x7e) only, eight bytes at a time: a byte below 0x20 borrows into its top bit, one above
 * 0x7e carries into it, and one of 0x80 or more has it already. */
static int printable(const unsigned char *p, Py_ssize_t len) {
    const uint64_t ones = 0x0101010101010101ULL, hi = ones * 0x80;
    Py_ssize_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        if (((w - ones * 0x20) | (w + ones * 0x01) | w) & hi) return 0;
    }
    for (; i < len; i++)
        if (p[i] < 0x20 || p[i] >= 0x7f) return 0;
    return 1;
}

/* The bytes of a stats key after its first (sglang.STAT_PAIR: [A-Za-z0-9 #-/().]). */
static const uint8_t KEY_CHAR[256] = {
    [' '] = 1, ['#'] = 1, ['-'] = 1, ['/'] = 1, ['('] = 1, [')'] = 1, ['.'] = 1,
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1,
    ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1, ['I'] = 1, ['J'] = 1,
    ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1,
    ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1, ['Y'] = 1, ['Z'] = 1,
    ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1, ['i'] = 1, ['j'] = 1,
    ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1,
    ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1,
};

/* Whether n bytes at a and b are the same: eight at a time, the last eight overlapping (n >= 8), else one by one. */
static ALWAYS_INLINE int same_bytes(const unsigned char *a, const unsigned char *b, Py_ssize_t n) {
    uint64_t x, y;
    if (n < 8) {
        for (Py_ssize_t i = 0; i < n; i++)
            if (a[i] != b[i]) return 0;
        return 1;
    }
    for (Py_ssize_t i = 0; i + 8 < n; i += 8) {
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y) return 0;
    }
    memcpy(&x, a + n - 8, 8);
    memcpy(&y, b + n - 8, 8);
    return x == y;
}

#define KEY_IS(k, len, name) ((len) == (Py_ssize_t)sizeof(name) - 1 && same_bytes((k), (const unsigned char *)(name), (len)))

/* The value of a decimal `-?D+(.D+)?` of at most 16 digits, as strtod (and Python's float) round it: an integer up
 * to 2^53 over an exact power of ten up to 1e22 is exact over exact, and one IEEE division rounds it correctly
 * (Clinger's fast path); anything else goes to strtod. */
static const double P10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                             1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
static double decimal(const unsigned char *p, Py_ssize_t len) {
    const double *p10 = P10;
    uint64_t m = 0;
    int frac = -1;
    for (Py_ssize_t i = p[0] == '-'; i < len; i++) {
        if (p[i] == '.') { frac = 0; continue; }
        m = m * 10 + (uint64_t)(p[i] - '0');
        frac += frac >= 0;
    }
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
    if (m <= (1ull << 53)) {
        double v = frac > 0 ? (double)m / p10[frac] : (double)m;
        return p[0] == '-' ? -v : v;
    }
#endif
    char num[24];
    memcpy(num, p, (size_t)len);
    num[len] = 0;
    return strtod(num, NULL);
}

/* decimal() of the `-?D+(.D+)?` at p (len bytes) whose digits, read already, make mant, fd of them after the dot. */
static ALWAYS_INLINE double decimal_read(const unsigned char *p, Py_ssize_t len, uint64_t mant, int fd) {
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
    if (mant <= (1ull << 53)) {
        double v = fd ? (double)mant / P10[fd] : (double)mant;
        return p[0] == '-' ? -v : v;
    }
#endif
    return decimal(p, len);
}

/* What row_parse reads of a plain row: the fields as EngineStats.store reads them from sglang.parse_stats. */
typedef struct {
    double usage, queue, running, gen, input, mamba;
    int have_gen, have_input, have_mamba;
    int novals;               /* a key Python's parse reads otherwise (Python parses the row), or (want) a boolean
                                 where store wants a number (Python parses the sampled row) */
    int big_e;                /* an `E` from the marker on (only a key may hold one) */
} RowVals;

/* Parse the row whose stats marker (of length mlen) is at s, line [bol, eol), into v (with `want`, the fields only a
 * sampled row gives too); 0 when it is not plain (Python parses it). Plain: ASCII with no
 * control byte, no other `batch` before the marker, then `key: value` pairs separated by `, ` (an optional
 * `,` and blanks at the end); a key is `#?[A-Za-z][A-Za-z0-9 #-/().]*` of at most 60 bytes, a value `-?D+(.D+)?`
 * (at most 15 digits) or True/False. On such a line sglang.STAT_PAIR finds exactly these pairs. */
static ALWAYS_INLINE int row_parse(Scan *st, Py_ssize_t s, Py_ssize_t mlen, Py_ssize_t bol, Py_ssize_t eol, RowVals *out,
                                    int want) {
    const unsigned char *b = st->b;
    Fold *f = &st->fold;
    if (eol - bol > FOLD_ROW_MAX || b[bol] == ' ') return 0;
    if (prefix_memo(st, bol, s, 0) < 0) {  /* the prefix as the last row's: printable, no `batch` (see Prefix) */
        if (!printable(b + bol, s - bol)) return 0;  /* from the marker on, the shape and the pairs allow only such bytes */
        for (const unsigned char *k = memchr(b + bol, 'b', (size_t)(s - bol)); k && k + 5 <= b + s;
             k = memchr(k + 1, 'b', (size_t)(b + s - k - 1)))
            if (!memcmp(k, "batch", 5)) return 0;
    }
    Py_ssize_t pos = stats_shape(b, eol, s, mlen);
    if (!pos) return 0;
    double usage = -1.0, full = -1.0, queue = 0.0, extra = 0.0, running = 0.0;
    int have_usage = 0, have_full = 0, have_pre = 0, have_ret = 0;
    double pre = 0.0, ret = 0.0;
    out->have_gen = out->have_input = out->have_mamba = out->novals = out->big_e = 0;
    out->gen = out->input = out->mamba = -1.0;
    Skeleton *sk = &f->skel[b[s] == 'P'];
    for (int seg = 0; pos < eol; seg++) {
        int field;
        if (seg < sk->n && eol - pos >= sk->len[seg] && same_bytes(b + pos, sk->bytes + sk->off[seg], sk->len[seg])) {
            field = sk->field[seg];  /* the key of the row before (so checked already) */
            out->big_e |= sk->big_e[seg];
            pos += sk->len[seg];
        } else {
            Py_ssize_t k0 = pos;
            if (b[pos] == '#') pos++;
            if (pos >= eol || !(((b[pos] | 0x20) >= 'a' && (b[pos] | 0x20) <= 'z'))) return 0;
            pos++;
            while (pos < eol && KEY_CHAR[b[pos]]) pos++;
            if (pos < eol && b[pos] != ':') return 0;
            Py_ssize_t k1 = pos;
            if (k1 - k0 > 60 || pos + 1 >= eol || b[pos + 1] != ' ') return 0;
            while (k1 > k0 && b[k1 - 1] == ' ') k1--;  /* the key as key.strip() gives it */
            pos += 2;
            const unsigned char *key = b + k0;
            Py_ssize_t klen = k1 - k0;
            field = KEY_IS(key, klen, "token usage") ? F_USAGE : KEY_IS(key, klen, "full token usage") ? F_FULL
                    : KEY_IS(key, klen, "#queue-req") ? F_QUEUE : KEY_IS(key, klen, "#running-req") ? F_RUNNING
                    : KEY_IS(key, klen, "#prealloc-req") ? F_PRE : KEY_IS(key, klen, "#retracted-req") ? F_RET
                    : KEY_IS(key, klen, "gen throughput (token/s)") ? F_GEN
                    : KEY_IS(key, klen, "input throughput (token/s)") ? F_INPUT
                    : KEY_IS(key, klen, "mamba usage") ? F_MAMBA
                    : KEY_IS(key, klen, "usage") || KEY_IS(key, klen, "phase") || KEY_IS(key, klen, "t")
                      || KEY_IS(key, klen, "engine") || KEY_IS(key, klen, "preempted")
                      || KEY_IS(key, klen, "prompt throughput (token/s)") ? F_ODD : 0;
            sk->n = seg;  /* the skeleton is this row's from here on */
            int big_e = memchr(key, 'E', (size_t)(pos - k0)) != NULL;
            out->big_e |= big_e;
            Py_ssize_t at = seg ? sk->off[seg - 1] + sk->len[seg - 1] : 0;
            if (seg < SKEL_SEGS && at + (pos - k0) <= SKEL_BYTES) {
                memcpy(sk->bytes + at, key, (size_t)(pos - k0));
                sk->off[seg] = (uint16_t)at;
                sk->len[seg] = (uint16_t)(pos - k0);
                sk->field[seg] = (uint8_t)field;
                sk->big_e[seg] = (uint8_t)big_e;
                sk->n = seg + 1;
            }
        }
        Py_ssize_t v0 = pos;
        int boolean = 0, fd = 0;
        uint64_t mant = 0;  /* the value's digits, read as they are checked (wraps past 19: refused below) */
        if (eol - pos >= 4 && !memcmp(b + pos, "True", 4)) { pos += 4; boolean = 1; }
        else if (eol - pos >= 5 && !memcmp(b + pos, "False", 5)) { pos += 5; boolean = 1; }
        else {
            if (pos < eol && b[pos] == '-') pos++;
            Py_ssize_t d0 = pos;
            while (pos < eol && (unsigned)(b[pos] - '0') < 10) mant = mant * 10 + (uint64_t)(b[pos++] - '0');
            if (pos == d0) return 0;
            if (pos < eol && b[pos] == '.') {
                Py_ssize_t f0 = ++pos;
                while (pos < eol && (unsigned)(b[pos] - '0') < 10) mant = mant * 10 + (uint64_t)(b[pos++] - '0');
                if (pos == f0) return 0;
                fd = (int)(pos - f0);
            }
            if (pos - d0 > 16) return 0;
        }
        Py_ssize_t v1 = pos;
        if (pos < eol) {  /* what may follow a value: `, ` and the next pair, a final `,`, blanks to the end */
            if (b[pos] == ',' && pos + 1 == eol) pos = eol;
            else if (b[pos] == ',' && b[pos + 1] == ' ' && pos + 2 < eol && b[pos + 2] != ' ') pos += 2;
            else if (b[pos] == ' ' || b[pos] == ',') {
                Py_ssize_t t = pos + (b[pos] == ',');
                while (t < eol && b[t] == ' ') t++;
                if (t != eol) return 0;
                pos = eol;
            } else return 0;
        }
        if (field == F_ODD) { out->novals = 1; continue; }  /* Python's parse reads it: it parses the row */
        if (field >= F_GEN) {  /* read for a sampled row only */
            if (!want) continue;
            if (boolean) out->novals = 1;
            else {
                double v = decimal_read(b + v0, v1 - v0, mant, fd);
                if (field == F_GEN) { out->gen = v; out->have_gen = 1; }
                else if (field == F_INPUT) { out->input = v; out->have_input = 1; }
                else { out->mamba = v; out->have_mamba = 1; }
            }
        } else if (field) {
            if (boolean) return 0;
            double v = decimal_read(b + v0, v1 - v0, mant, fd);
            switch (field) {
            case F_USAGE: usage = v; have_usage = 1; break;
            case F_FULL: full = v; have_full = 1; break;
            case F_QUEUE: queue = v; break;
            case F_RUNNING: running = v; break;
            case F_PRE: pre = v; have_pre = 1; break;
            default: ret = v; have_ret = 1;
            }
        }
    }
    if (!have_usage && have_full) { usage = full; have_usage = 1; }
    if (have_pre) extra += pre;
    if (have_ret) extra += ret;
    queue += extra;
    out->usage = have_usage ? usage : -1.0;
    out->queue = queue;
    out->running = running;
    return 1;
}

/* Parse the row whose stats marker (of length mlen) is at s, line [bol, eol), into the pending row; 0 when it
 * is not plain or holds a key Python's parse reads otherwise (Python parses it), or decodes alone (a lone-decode row
 * is Python's too). */
static int fold_parse(Scan *st, Py_ssize_t s, Py_ssize_t mlen, Py_ssize_t bol, Py_ssize_t eol) {
    Fold *f = &st->fold;
    RowVals v;
    if (!row_parse(st, s, mlen, bol, eol, &v, 0) || v.novals) return 0;
    double usage = v.usage, queue = v.queue, running = v.running;
    if (st->b[s] == 'D' && running > 0 && running <= 2 && queue == 0) return 0;  /* lone decode: EngineStats.lone_episodes */
    f->p_u = usage;
    f->p_q = queue;
    f->p_run = running;
    f->p_big_e = v.big_e;
    f->p_t = T_UNREAD;
    f->p_pressed = f->p_u >= 0.9 && queue > 0;
    f->p_bol = bol;
    f->p_eol = eol;
    return 1;
}

/* The values of a sampled row (its marker of length mlen at s, line [bol, eol)), so that Python need not parse it:
 * (origin, usage, queue, running, time, decode, throughput, mamba usage) as EngineStats.store reads them (the
 * origin as Origins names it; throughput gen's, else input's, else -1; -1 for a usage or time it lacks). None when
 * Python is to parse it: not plain (row_parse), a key its parse reads otherwise, or an origin it reads otherwise. */
static PyObject *sample_vals(Scan *st, Py_ssize_t s, Py_ssize_t mlen, Py_ssize_t bol, Py_ssize_t eol) {
    RowVals v;
    unsigned char key[ORIGIN_MAX];
    Py_ssize_t k, from;
    if (!row_parse(st, s, mlen, bol, eol, &v, 1) || v.novals || origin_key(st->b, st->n, bol, s, key, &k, &from) < 0)
        Py_RETURN_NONE;
    double thr = v.have_gen ? v.gen : v.have_input ? v.input : -1.0;
    return Py_BuildValue("(y#dddd" "idd)", (const char *)key, k, v.usage, v.queue, v.running,
                         stamp_time(st->b + bol, eol - bol, st->fold.day), st->b[s] == 'D', thr, v.mamba);
}

/* A folded row's time stamp, read when a record or an episode needs it (most rows are neither's first or last). */
static double row_t(Scan *st, const FoldRow *r) {
    return r->t != T_UNREAD ? r->t : stamp_time(st->b + r->bol, r->eol - r->bol, st->fold.day);
}

static PyObject *fold_row(Scan *st, const FoldRow *r, int text) {
    if (text)
        return Py_BuildValue("(nddd y#)", r->ln, row_t(st, r), r->u, r->q, (const char *)st->b + r->bol,
                             r->eol - r->bol);
    return Py_BuildValue("(ndddO)", r->ln, row_t(st, r), r->u, r->q, Py_None);
}

static double ep_secs(const Ep *e) {
    return e->first.t >= 0 && e->last.t >= e->first.t ? e->last.t - e->first.t : 0.0;
}

/* a is longer than b: (seconds, rows), the earlier among equals */
static int ep_longer(const Ep *a, const Ep *b) {
    if (a->secs != b->secs) return a->secs > b->secs;
    if (a->rows != b->rows) return a->rows > b->rows;
    return a->first.ln < b->first.ln;
}

static PyObject *ep_tuple(Scan *st, const Ep *e) {
    PyObject *first = fold_row(st, &e->first, 1);
    PyObject *last = !first || e->last.bol == e->first.bol ? Py_XNewRef(first) : fold_row(st, &e->last, 1);
    PyObject *peak = !first || e->peak.bol == e->first.bol ? Py_XNewRef(first)
                     : e->peak.bol == e->last.bol ? Py_XNewRef(last) : fold_row(st, &e->peak, 1);
    if (!first || !last || !peak) { Py_XDECREF(first); Py_XDECREF(last); Py_XDECREF(peak); return NULL; }
    return Py_BuildValue("(NNNnddd)", first, last, peak, e->rows, e->max_u, e->max_q, e->max_run);
}

static int cmp_ep_ln(const void *a, const void *b) {
    Py_ssize_t x = (*(const Ep *const *)a)->first.ln, y = (*(const Ep *const *)b)->first.ln;
    return x < y ? -1 : x > y;
}

/* Write out origin g's batch, if any (kind 4): (4, line index, first row start, end, (origin, (count, rows,
 * seconds, max_u, max_q, close_lone, episodes, evidence, all, all_first, all_last, all_u, all_q))); an episode is
 * (first, last, peak, rows, max_u, max_q, max_running), in log order, each once. */
static int batch_flush(Scan *st, OFold *g) {
    Batch *bt = &g->bat;
    if (!bt->n) return 0;
    Py_ssize_t cap = bt->ncand + 3, k = 0;
    const Ep **all = PyMem_Malloc((size_t)cap * sizeof(Ep *));
    if (!all) { PyErr_NoMemory(); return -1; }
    all[k++] = &bt->first;
    all[k++] = &bt->top;
    all[k++] = &bt->last;
    for (Py_ssize_t i = 0; i < bt->ncand; i++) all[k++] = &bt->cand[i];
    qsort(all, (size_t)k, sizeof(Ep *), cmp_ep_ln);
    PyObject *eps = PyList_New(0), *ev = PyTuple_New(bt->nev);
    int err = !eps || !ev;
    for (Py_ssize_t i = 0; !err && i < k; i++) {
        if (i && all[i]->first.ln == all[i - 1]->first.ln) continue;
        PyObject *t = ep_tuple(st, all[i]);
        err = !t || PyList_Append(eps, t) < 0;
        Py_XDECREF(t);
    }
    PyMem_Free(all);
    for (Py_ssize_t i = 0; !err && i < bt->nev; i++) {
        PyObject *r = fold_row(st, &bt->ev[i], 1);
        if (!r) err = 1;
        else PyTuple_SET_ITEM(ev, i, r);
    }
    if (err) { Py_XDECREF(eps); Py_XDECREF(ev); return -1; }
    PyObject *payload = Py_BuildValue("(nndddiNNnNNdd)", bt->n, bt->rows, bt->secs, bt->max_u, bt->max_q,
                                      bt->close_lone, eps, ev, bt->all,
                                      bt->all ? fold_row(st, &bt->all_first, 1) : Py_NewRef(Py_None),
                                      bt->all ? fold_row(st, &bt->all_last, 0) : Py_NewRef(Py_None),
                                      bt->all_u, bt->all_q);
    if (!payload) return -1;
    PyObject *t = Py_BuildValue("(innn(ON))", 4, bt->first.first.ln, bt->first.first.bol, bt->first.first.eol,
                                g->key, payload);
    if (!t) return -1;
    int r = PyList_Append(st->em.out, t);
    Py_DECREF(t);
    bt->n = bt->rows = bt->ncand = bt->nev = bt->all = 0;
    bt->secs = bt->max_u = bt->max_q = 0.0;
    bt->close_lone = 0;
    return r;
}

/* g's open segment, closed and starting a new episode, goes into its batch with what was folded before it. */
static int batch_add(Scan *st, OFold *g) {
    Batch *bt = &g->bat;
    Py_ssize_t keep = st->fold.keep;
    if (!bt->cand && !(bt->cand = PyMem_Malloc((size_t)keep * sizeof(Ep)))) { PyErr_NoMemory(); return -1; }
    Ep e = {g->first, g->last, g->peak, g->rows, g->max_u, g->max_q, g->max_run, 0.0};
    e.first.t = row_t(st, &e.first);
    e.last.t = row_t(st, &e.last);
    e.secs = ep_secs(&e);
    if (!bt->n) { bt->first = bt->top = e; bt->max_u = e.max_u; bt->max_q = e.max_q; }
    else if (e.max_u > bt->top.max_u || (e.max_u == bt->top.max_u && e.max_q > bt->top.max_q)) bt->top = e;
    bt->last = e;
    bt->n++;
    bt->rows += e.rows;
    bt->secs += e.secs;
    if (e.max_u > bt->max_u) bt->max_u = e.max_u;
    if (e.max_q > bt->max_q) bt->max_q = e.max_q;
    bt->close_lone |= g->close_lone;
    if (e.secs > bt->bar_s || (e.secs == bt->bar_s && e.rows > bt->bar_r)) {  /* may be one of the longest */
        if (bt->ncand < keep) {
            bt->cand[bt->ncand++] = e;
            if (bt->ncand == keep)
                for (Py_ssize_t i = bt->minpos = 0; i < bt->ncand; i++)
                    if (ep_longer(&bt->cand[bt->minpos], &bt->cand[i])) bt->minpos = i;
        } else if (ep_longer(&e, &bt->cand[bt->minpos])) {  /* the shortest of keep others is out */
            bt->cand[bt->minpos] = e;
            for (Py_ssize_t i = bt->minpos = 0; i < bt->ncand; i++)
                if (ep_longer(&bt->cand[bt->minpos], &bt->cand[i])) bt->minpos = i;
        }
    }
    for (Py_ssize_t k = 0; k < g->nev && bt->nev < FOLD_EVIDENCE; k++) bt->ev[bt->nev++] = g->ev[k];
    if (g->all) {
        if (!bt->all) { bt->all_first = g->all_first; bt->all_u = g->all_u; bt->all_q = g->all_q; }
        bt->all += g->all;
        bt->all_last = g->all_last;
        if (g->all_u > bt->all_u) bt->all_u = g->all_u;
        if (g->all_q > bt->all_q) bt->all_q = g->all_q;
    }
    g->py_open = 0;
    g->seg = g->closing = g->close_lone = 0;
    g->all = 0;
    g->nev = 0;
    return 0;
}

/* Write out origin g's open segment and what its folded rows since its last record add (kind 2):
 * (2, line index, key row start, key row end, (origin, (fresh, closed, close_lone, rows, first, last, peak, max_u,
 *  max_q, max_running, evidence, all, all_first, all_last, all_u, all_q))); rows are (line index, t, usage, queue,
 *  bytes). */
static int fold_record(Scan *st, OFold *g, int closed) {
    if (closed && g->seg && g->seg_self && st->fold.keep > 0) return batch_add(st, g);
    if (batch_flush(st, g) < 0) return -1;
    const FoldRow *key = g->seg ? &g->first : g->all ? &g->all_first : &g->close;  /* a close alone: its row */
    PyObject *ev = PyTuple_New(g->seg ? g->nev : 0);
    if (!ev) return -1;
    for (Py_ssize_t k = 0; g->seg && k < g->nev; k++) {
        PyObject *r = fold_row(st, &g->ev[k], 1);
        if (!r) { Py_DECREF(ev); return -1; }
        PyTuple_SET_ITEM(ev, k, r);
    }
    PyObject *payload;
    if (g->seg) {  /* a row that is first, last, peak or the first of all is one tuple (one Line in Python) */
        PyObject *first = fold_row(st, &g->first, 1);
        PyObject *last = !first || g->last.bol == g->first.bol ? Py_XNewRef(first) : fold_row(st, &g->last, 1);
        PyObject *peak = !first || g->peak.bol == g->first.bol ? Py_XNewRef(first)
                         : g->peak.bol == g->last.bol ? Py_XNewRef(last) : fold_row(st, &g->peak, 1);
        PyObject *all_first = !g->all ? Py_NewRef(Py_None)
                              : g->all_first.bol == g->first.bol ? Py_XNewRef(first) : fold_row(st, &g->all_first, 1);
        payload = Py_BuildValue("(iiinNNNdddNnNNdd)", g->closing, closed, g->close_lone, g->rows, first, last, peak,
                                g->max_u, g->max_q, g->max_run, ev, g->all, all_first,
                                g->all ? fold_row(st, &g->all_last, 0) : Py_NewRef(Py_None), g->all_u, g->all_q);
    } else
        payload = Py_BuildValue("(iiinOOOdddNnNNdd)", g->closing, closed, g->close_lone, (Py_ssize_t)0, Py_None, Py_None,
                                Py_None, -1.0, 0.0, 0.0, ev, g->all,
                                g->all ? fold_row(st, &g->all_first, 1) : Py_NewRef(Py_None),
                                g->all ? fold_row(st, &g->all_last, 0) : Py_NewRef(Py_None), g->all_u, g->all_q);
    if (!payload) return -1;
    PyObject *t = Py_BuildValue("(innn(ON))", 2, key->ln, key->bol, key->eol, g->key, payload);
    if (!t) return -1;
    int r = PyList_Append(st->em.out, t);
    Py_DECREF(t);
    g->py_open = g->seg && !closed ? 1 : (g->seg || g->closing ? 0 : g->py_open);
    g->seg = g->closing = g->close_lone = 0;
    g->all = 0;
    g->nev = 0;
    return r;
}

/* A row of origin g that is not a pressure row (its marker at s, line start bol, or -1 when not looked up) ends the
 * engine's episode. */
static int fold_close(Scan *st, OFold *g, Py_ssize_t s, Py_ssize_t bol) {
    if (g->seg) return fold_record(st, g, 1);
    if (g->py_open && !g->closing) {
        if (bol < 0) bol = line_start(st->b, s);
        FoldRow row = {fold_line(st, bol), bol, line_end(st->b, st->n, s), -1.0, -1.0, 0.0};
        g->closing = 1;
        g->close = row;
    }
    return 0;
}

/* The quiet row pending since its marker at s is done. Its origin matters only where it may close a run: without
 * origins=True it is looked up then (or to take the call's one origin), and a second origin sets F_MANY. */
static int fold_quiet(Scan *st, Py_ssize_t s) {
    Origins *o = &st->org;
    Py_ssize_t k = st->fold.p_org;
    if (k == ORG_UNKNOWN) {
        OFold *g = o->n ? o->fold[0] : NULL;
        if (g && !g->seg && !(g->py_open && !g->closing)) return 0;  /* nothing of the one origin to close */
        Py_ssize_t bol = line_start(st->b, s);
        k = origin_of(st, bol, s);
        if (k == ORG_ERR) return -1;
        if (k < 0) { st->flags |= F_MANY; return 0; }
        return fold_close(st, o->fold[k], s, bol);
    }
    return k >= 0 ? fold_close(st, o->fold[k], s, -1) : 0;
}

static int sample_settle(Scan *st);

/* The row pending since its marker is done: fold it (or note that a quiet row ended an episode). */
static int fold_commit(Scan *st) {
    Fold *f = &st->fold;
    if (f->s_at >= 0 && sample_settle(st) < 0) return -1;  /* a sampled row that is not folded */
    int kind = f->p_kind;
    f->p_kind = 0;
    if (kind == 0) return 0;
    if (kind == 1) return fold_quiet(st, f->p_s);
    OFold *g = st->org.fold[f->p_org];
    FoldRow row = {fold_line(st, f->p_bol), f->p_bol, f->p_eol, f->p_t, f->p_u, f->p_q};
    if (!g->all) { g->all_first = row; g->all_u = row.u; g->all_q = row.q; }
    g->all++;
    g->all_last = row;
    if (row.u > g->all_u) g->all_u = row.u;
    if (row.q > g->all_q) g->all_q = row.q;
    g->close_lone = 1;
    if (!f->p_pressed) return fold_close(st, g, f->p_s, f->p_bol);
    if (g->seg && row.ln - g->last.ln > f->gap && fold_record(st, g, 0) < 0) return -1;
    if (!g->seg) {
        g->seg = 1;
        g->seg_self = g->closing || !g->py_open;
        g->rows = 0;
        g->first = g->peak = row;
        g->max_u = row.u; g->max_q = row.q; g->max_run = f->p_run;
        g->nev = 0;
    }
    g->rows++;
    g->last = row;
    if (row.u > g->peak.u || (row.u == g->peak.u && row.q > g->peak.q)) g->peak = row;
    if (row.u > g->max_u) g->max_u = row.u;
    if (row.q > g->max_q) g->max_q = row.q;
    if (f->p_run > g->max_run) g->max_run = f->p_run;
    if (g->evidence > 0) { g->ev[g->nev++] = row; g->evidence--; }
    return 0;
}

/* A usage value not plainly below 0.9 at s: 1 when its row is folded (plain, of an origin the call folds), 0 when
 * Python is to parse the line, -1 on error. */
static int fold_high(Scan *st, Py_ssize_t s) {
    Fold *f = &st->fold;
    if (!f->on || !f->p_kind) return 0;
    const unsigned char *b = st->b;
    Py_ssize_t bol = line_start(b, s);
    if (f->p_s < bol || f->p_s > s) return 0;  /* no counted marker before it on its line */
    if (f->p_kind == 2) return 1;  /* a second usage (mamba) on a row already folded */
    if (!fold_parse(st, f->p_s, f->p_mlen, bol, line_end(b, st->n, s))) return 0;
    if (f->p_org == ORG_UNKNOWN) {  /* without origins=True: the call's one origin */
        Py_ssize_t k = origin_of_row(st, bol, f->p_s, f->p_big_e);
        if (k == ORG_ERR) return -1;
        if (k == ORG_FULL) st->flags |= F_MANY;  /* a second engine: Python scans the chunk again, per origin */
        if (k < 0) return 0;
        f->p_org = k;
    }
    f->p_kind = 2;
    if (st->last_sample == bol) {  /* sampled: for the timeline only (kind 3) */
        Py_ssize_t k = PyList_GET_SIZE(st->em.out) - 1;
        PyObject *old = PyList_GET_ITEM(st->em.out, k);
        if (PyTuple_GET_ITEM(old, 4) != Py_None) f->s_at = -1;  /* its values go to the arrays only: in any order */
        else {  /* Python parses it (EngineStats.store): after the rows before, which go in before it */
            if (sample_settle(st) < 0) return -1;
            k = PyList_GET_SIZE(st->em.out) - 1;
            old = PyList_GET_ITEM(st->em.out, k);
        }
        PyObject *t = PyTuple_New(5);
        if (!t) return -1;
        PyTuple_SET_ITEM(t, 0, PyLong_FromLong(3));
        for (int j = 1; j < 5; j++) PyTuple_SET_ITEM(t, j, Py_NewRef(PyTuple_GET_ITEM(old, j)));
        if (!PyTuple_GET_ITEM(t, 0) || PyList_SetItem(st->em.out, k, t) < 0) return -1;
    }
    return 1;
}

/* Before a line is returned to Python: every origin's rows before it are written out. A candidate line (pending)
 * with a usage not plainly below 0.9 (a `usage: ` needle among its ids) may be a row that opens a pressure episode
 * in Python: of its origin's engine, or of any when Python may read its origin otherwise; a second origin where the
 * call takes one sets F_MANY. Other lines (and sampled rows, all quiet) open none. */
static int fold_origins(Scan *st) {
    Origins *o = &st->org;
    for (Py_ssize_t i = 0; i < o->n; i++) {
        OFold *g = o->fold[i];
        if (batch_flush(st, g) < 0) return -1;
        if ((g->seg || g->closing || g->all) && fold_record(st, g, 0) < 0) return -1;
    }
    return 0;
}

/* A sampled row is written out at its marker, before what it is is known (its usage comes later on its line). The
 * rows before it are written out (fold_origins) before it only once it turns out to need that: when Python judges
 * it (a quiet row, EngineStats.add, or one it parses). A folded row sampled with its values goes to the arrays only
 * (EngineStats.add_row), which does not care what comes first: its run goes on, and a saturated pool costs Python
 * a record per line returned, not per row sampled. The records go in at the sampled row's place. */
static int sample_settle(Scan *st) {
    Fold *f = &st->fold;
    Py_ssize_t at = f->s_at;
    if (at < 0) return 0;
    f->s_at = -1;
    PyObject *out = st->em.out, *mine = PyList_New(0);
    if (!mine) return -1;
    st->em.out = mine;
    int r = fold_origins(st);
    st->em.out = out;
    if (r == 0 && PyList_GET_SIZE(mine) && PyList_SetSlice(out, at, at, mine) < 0) r = -1;
    Py_DECREF(mine);
    return r;
}

static int fold_flush(Scan *st) {
    Fold *f = &st->fold;
    if (!f->on) return 0;
    if (fold_commit(st) < 0) return -1;
    Origins *o = &st->org;
    if (fold_origins(st) < 0) return -1;
    int opens = 0;
    for (Py_ssize_t k = 0; st->c_bol >= 0 && k < st->nids && !opens; k++) opens = st->m->nd[st->ids[k]].kind == K_USAGE;
    if (opens) {
        Py_ssize_t i = origin_of(st, st->c_bol, st->c_eol);
        if (i == ORG_ERR) return -1;
        if (i == ORG_FULL) st->flags |= F_MANY;
        for (Py_ssize_t j = 0; j < o->n; j++)
            if (i < 0 || j == i) o->fold[j]->py_open = 1;
    }
    return 0;
}

/* Before a line of the family Python kept last is returned (fam_folds: the first of its next episode): the row
 * pending before it is done, but the origins' runs go on. Python takes such a line as it took the kept one (a claim,
 * a retraction event, a context line: Scanner.line), which reads no engine's rows, and the records of the rows on
 * both sides of it are applied as if it had read each row (EngineStats.fold), wherever they are cut; a storm's
 * episodes so cost no write-out of every engine's runs each (~7,000 a GiB). A line holding a usage needle is
 * written out before as any other (fold_flush: it may open an episode). */
static int fold_settle(Scan *st) {
    for (Py_ssize_t k = 0; k < st->nids; k++)
        if (st->m->nd[st->ids[k]].kind == K_USAGE) return fold_flush(st);
    return st->fold.on ? fold_commit(st) : 0;
}

/* The fold states of the call's origins, freed. */
static void ofolds_free(Scan *st) {
    for (Py_ssize_t i = 0; i < MAX_ORIGINS; i++) {
        OFold *g = st->org.fold[i];
        if (!g) continue;
        PyMem_Free(g->bat.cand);
        Py_XDECREF(g->key);
        PyMem_Free(g);
    }
}


/* Write out the lines the family folded, if any. */
static int fam_flush(Scan *st) {
    Family *fm = &st->fam;
    if (!fm->n) return 0;
    PyObject *t = Py_BuildValue("(inii(nL))", 5, fm->until, 0, 0, fm->n, fm->sum);
    if (!t) return -1;
    int r = PyList_Append(st->em.out, t);
    Py_DECREF(t);
    fm->n = 0;
    fm->sum = 0;
    return r;
}

/* The first ASCII digit in [k, e), else e: 16 bytes a step where SSE2 is there. */
static ALWAYS_INLINE Py_ssize_t fam_digit(const unsigned char *b, Py_ssize_t k, Py_ssize_t e) {
#if defined(__SSE2__) && (defined(__GNUC__) || defined(__clang__))
    const __m128i c0 = _mm_set1_epi8('0'), c9 = _mm_set1_epi8(9);
    for (; k + 16 <= e; k += 16) {
        __m128i d = _mm_sub_epi8(_mm_loadu_si128((const __m128i *)(b + k)), c0);
        unsigned mask = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(d, c9), d));
        if (mask) return k + __builtin_ctz(mask);
    }
#endif
    while (k < e && !(b[k] >= '0' && b[k] <= '9')) k++;
    return k;
}

/* Whether the pending candidate line is of the family: the same needles, printable ASCII, the family's text but for
 * its digit runs (the count run parsed into *count). The text holds no digit and only printable ASCII (else the
 * family is not armed), so a line whose other bytes equal it is printable ASCII too. */
static int fam_match(Scan *st, long long *count) {
    Family *fm = &st->fam;
    const unsigned char *b = st->b;
    Py_ssize_t bol = st->c_bol, eol = st->c_eol;
    if (eol - bol > FAM_LINE_MAX || st->nids != fm->nids) return 0;
    for (Py_ssize_t k = 0; k < st->nids; k++)
        if (st->ids[k] != fm->ids[k]) return 0;
    Py_ssize_t j = 0, run = 0;
    *count = -1;
    for (Py_ssize_t k = bol; k < eol;) {
        /* the bytes up to the next digit are the text's next ones (printable: fm->printable), compared at once */
        Py_ssize_t d = fam_digit(b, k, eol);
        if (d > k) {
            if (d - k > fm->len - j || !same_bytes(b + k, fm->text + j, d - k)) return 0;
            j += d - k;
            k = d;
            if (k == eol) break;
        }
        Py_ssize_t d0 = k;
        if (run++ != fm->run) {  /* a run whose value is not read */
            while (k < eol && b[k] >= '0' && b[k] <= '9') k++;
            continue;
        }
        long long v = 0;
        while (k < eol && b[k] >= '0' && b[k] <= '9') { if (k - d0 < 18) v = v * 10 + (b[k] - '0'); k++; }
        if (k - d0 > 18) return 0;
        *count = v;
    }
    return j == fm->len && (fm->run < 0 || *count >= 0);
}

/* The pending candidate line and the family: 1 when it is counted (not returned). A line of the family too far
 * from the last one, or the first after other candidate lines (`waiting`), is returned: Python keeps it as the
 * line its family folds into (as it kept the one the call began with: same text but digits, same needles, so
 * the same rules and the same decision), and counting goes on after it. */
static int fam_folds(Scan *st) {
    Family *fm = &st->fam;
    long long count;
    fm->restart = 0;
    if (!fam_match(st, &count)) {
        fm->waiting = 1;
        return fam_flush(st) < 0 ? -1 : 0;
    }
    Py_ssize_t ln = em_line(&st->em, st->c_bol);
    if (fm->waiting || ln - fm->until > fm->gap) {
        if (fam_flush(st) < 0) return -1;  /* what the line before it took, first */
        fm->waiting = 0;
        fm->until = ln;
        fm->restart = 1;
        return 0;
    }
    fm->until = ln;
    fm->n++;
    fm->sum += fm->run >= 0 ? count : 0;
    return 1;
}

/* A traceback's final line may hold no needle (`StopIteration`): after a frame line, the first line indented less than
 * the frame, behind the frame line's own prefix, within TB_LOOK lines (tb_end), is returned as a candidate line with no
 * needles, before the next line returned (tb_flush), as signals.traceback_end and Scanner.candidates find it. */
#define TB_LOOK 6
/* After a Rust panic's location line (Rust >= 1.73: `thread 'x' panicked at f.rs:1:2:`), the next line behind the same
 * prefix holds its message: returned as that line's start (signals.panic_detail); -1 when the line is no such panic. */
static Py_ssize_t panic_end(const unsigned char *b, Py_ssize_t n, Py_ssize_t bol, Py_ssize_t eol) {
    Py_ssize_t k = -1, e = eol;
    for (Py_ssize_t i = bol; i + 8 <= eol; i++)
        if (b[i] == 't' && memcmp(b + i, "thread '", 8) == 0) { k = i; break; }
    while (e > bol && (b[e - 1] == ' ' || b[e - 1] == '\t' || b[e - 1] == '\r')) e--;
    if (k < 0 || e == bol || b[e - 1] != ':') return -1;
    Py_ssize_t p = eol + 1, plen = k - bol;
    if (p >= n || n - p < plen || memcmp(b + p, b + bol, (size_t)plen) != 0) return -1;
    Py_ssize_t q = p + plen;
    while (q < n && (b[q] == ' ' || b[q] == '\t')) q++;
    return q >= n || b[q] == '\r' || b[q] == '\n' ? -1 : p;
}

static int holds(const unsigned char *b, Py_ssize_t bol, Py_ssize_t eol, const char *s, size_t len) {
    for (const unsigned char *f; bol + (Py_ssize_t)len <= eol
         && (f = memchr(b + bol, s[0], (size_t)(eol - bol - (Py_ssize_t)len + 1))) != NULL; bol = f - b + 1)
        if (memcmp(f, s, len) == 0) return 1;
    return 0;
}

static Py_ssize_t tb_end(const unsigned char *b, Py_ssize_t n, Py_ssize_t bol, Py_ssize_t eol) {
    Py_ssize_t e = eol;  /* a panic's location line ends in `:` (the test every other line fails at once) */
    while (e > bol && (b[e - 1] == ' ' || b[e - 1] == '\t' || b[e - 1] == '\r')) e--;
    if (e > bol && b[e - 1] == ':' && holds(b, bol, e, "panicked at ", 12)) return panic_end(b, n, bol, eol);
    Py_ssize_t f = bol;
    for (;;) {  /* the line's first `File "`, then a quote-free path, `", line ` and a digit (signals.TB_FRAME) */
        const unsigned char *c = f < eol ? memchr(b + f, 'F', (size_t)(eol - f)) : NULL;
        if (!c) return -1;
        f = c - b;
        if (eol - f >= 6 && memcmp(b + f, "File \"", 6) == 0) break;
        f++;
    }
    const unsigned char *q = memchr(b + f + 6, '"', (size_t)(eol - f - 6));
    if (!q) return -1;
    Py_ssize_t r = q - b;  /* at the closing quote */
    if (eol - r < 9 || memcmp(b + r, "\", line ", 8) != 0 || b[r + 8] < '0' || b[r + 8] > '9') return -1;
    Py_ssize_t k = f;
    while (k > bol && (b[k - 1] == ' ' || b[k - 1] == '\t')) k--;
    Py_ssize_t indent = f - k, plen = k - bol, p = eol + 1;
    if (!indent) return -1;
    for (int t = 0; t < TB_LOOK; t++) {
        if (p >= n || n - p < plen || memcmp(b + p, b + bol, (size_t)plen) != 0) return -1;
        Py_ssize_t e = p + plen;
        while (e < n && (b[e] == ' ' || b[e] == '\t')) e++;
        if (e >= n || b[e] == '\n' || b[e] == '\r') return -1;
        if (e - p - plen < indent) return p;
        const unsigned char *nl = memchr(b + e, '\n', (size_t)(n - e));
        if (!nl) return -1;
        p = nl - b + 1;
    }
    return -1;
}

static int finish_cand(Scan *st);

/* A needle (or a line taken whole) at s at or past the pending traceback end line: that line first, unless s is in it
 * (a candidate line of its own then). */
static int tb_flush(Scan *st, Py_ssize_t s) {
    Py_ssize_t bol = st->tb_bol, eol = line_end(st->b, st->n, bol);
    if (st->c_bol >= 0 && st->c_bol < bol && finish_cand(st) < 0) return -1;  /* the line before it, first */
    st->tb_bol = -1;
    if (s < eol || st->c_bol >= 0) return 0;
    st->c_bol = bol;
    st->c_eol = eol;
    st->nids = 0;
    return finish_cand(st);
}

/* Emit the pending candidate line, if any. */
static int finish_cand(Scan *st) {
    if (st->c_bol < 0) return 0;
    if (st->tb_bol >= 0 && st->c_bol >= st->tb_bol) st->tb_bol = -1;  /* (the line itself, returned now) */
    if (st->nids) {  /* (a line with no needle holds no `File "`) */
        Py_ssize_t t = tb_end(st->b, st->n, st->c_bol, st->c_eol);
        if (t >= 0) st->tb_bol = t;
    }
    if (st->fam.on) {
        int r = fam_folds(st);
        if (r < 0) return -1;
        if (r) { st->c_bol = -1; return 0; }
    }
    if (st->errs) {  /* an error-like line of a registered key: counted (see Errs) */
        int r = err_take(st);
        if (r < 0) return -1;
        if (r) { st->c_bol = -1; return 0; }
    }
    if (st->cols) {  /* a line of a registered shape becomes a row of its columns; any other line, the rows first */
        int r = cols_take(st);
        if (r < 0) return -1;
        if (r) { st->c_bol = -1; return 0; }
    }
    if ((st->fam.on && st->fam.restart ? fold_settle(st) : fold_flush(st)) < 0) return -1;
    if (st->cols && cols_before(st) < 0) return -1;
    PyObject *tup = PyTuple_New(st->nids);
    if (!tup) return -1;
    for (Py_ssize_t k = 0; k < st->nids; k++) {
        PyObject *v = PyLong_FromSsize_t(st->ids[k]);
        if (!v) { Py_DECREF(tup); return -1; }
        PyTuple_SET_ITEM(tup, k, v);
    }
    if (emit(&st->em, 0, st->c_bol, st->c_eol, tup) < 0) return -1;
    st->c_bol = -1;
    return 0;
}

static int append_id(Scan *st, Py_ssize_t id) {
    if (st->nids == st->ids_cap) {
        Py_ssize_t cap = 2 * st->ids_cap;
        Py_ssize_t *a = st->ids == st->ids_local ? PyMem_Malloc((size_t)cap * sizeof(Py_ssize_t))
                                                 : PyMem_Realloc(st->ids, (size_t)cap * sizeof(Py_ssize_t));
        if (!a) { PyErr_NoMemory(); return -1; }
        if (st->ids == st->ids_local) memcpy(a, st->ids_local, sizeof(st->ids_local));
        st->ids = a;
        st->ids_cap = cap;
    }
    st->ids[st->nids++] = id;
    return 0;
}

/* A line taken whole (err_run, cols_run): [p, eol) becomes the pending candidate line with these needles, as the
 * search would have made it at its first needle, and is finished at once, as the next visit would (nl: newlines
 * before p). */
static int take_whole(Scan *st, Py_ssize_t p, Py_ssize_t eol, Py_ssize_t nl, const Py_ssize_t *ids, Py_ssize_t nids) {
    if (st->tb_bol >= 0 && p >= st->tb_bol && tb_flush(st, p) < 0) return -1;
    st->c_bol = p;
    st->c_eol = eol;
    st->nids = 0;
    for (Py_ssize_t k = 0; k < nids; k++)
        if (append_id(st, ids[k]) < 0) return -1;
    if (st->em.fused) {  /* a line returned here is counted from p, past the bytes the loop has read maybe */
        st->em.w = p;
        st->em.nl_w = nl;
    }
    return finish_cand(st);
}

/* Lines taken whole from p0 up to p (nl newlines before p; w0, nlw0: the bytes the loop had read, and their newlines,
 * before): the loop goes on from p (jump), none of the bytes before it visited (col_skip). */
static void whole_end(Scan *st, Py_ssize_t p0, Py_ssize_t p, Py_ssize_t nl, Py_ssize_t w0, Py_ssize_t nlw0) {
    if (st->em.fused) {
        if (w0 >= p) {
            st->em.w = w0;
            st->em.nl_w = nlw0;
        } else {
            st->em.w = p;
            st->em.nl_w = nl;
        }
    }
    if (p > p0) {
        st->col_skip = p;
        st->jump = p;
        st->jump_nl = nl;
    }
}

/* Needle entry e (filed under the pair at offset i) occurs at s = i - off: what it means for its line.
 * Per stats line this is two calls (its marker and its usage value); only sampled and candidate lines
 * have their bounds looked up. */
static ALWAYS_INLINE int found(Scan *st, int32_t e, Py_ssize_t s) {
    const Matcher *m = st->m;
    const Needle *nd = &m->nd[e];
    const unsigned char *b = st->b;
    Py_ssize_t n = st->n;
    Py_ssize_t id = e < m->n ? e : e - m->n;
    if (s < st->col_skip) return 0;  /* in a line matched whole, its needles noted (cols_early) */
    if (st->c_bol >= 0 && s < st->c_eol) return append_id(st, id);  /* inside the candidate line */
    if (st->tb_bol >= 0 && s >= st->tb_bol && tb_flush(st, s) < 0) return -1;
    int cand = nd->kind == K_CAND;
    if (nd->kind == K_STATS) {
        if (!stats_shape(b, n, s, nd->len)) cand = 1;  /* `Decode batch` in other words */
        else {
            st->quiet++;
            st->last_mark = s;
            st->last_mark_id = id;
            if (st->fold.on && fold_commit(st) < 0) return -1;  /* the row before is done */
            Py_ssize_t o = ORG_UNKNOWN;
            if (st->origins) {  /* which engine's row: find its line start and origin */
                o = origin_of(st, line_start(b, s), s);
                if (o == ORG_ERR) return -1;
                if (o == ORG_FULL) st->flags |= F_MANY;
                else if (o >= 0) st->org.count[o]++;
            }
            st->last_mark_origin = o;
            if (o == ORG_ODD) cand = 1;  /* Python reads which engine's row it is */
            else if (s >= st->next_sample) {
                Py_ssize_t bol = line_start(b, s);
                if (b[bol] == '(') st->flags |= F_RAY;  /* a Ray actor prefix: the row's engine is its pid */
                if (b[bol] == ' ' || b[bol] == '\t') cand = 1;  /* may be traceback context */
                else {
                    Py_ssize_t eol = line_end(b, n, s);
                    PyObject *vals = sample_vals(st, s, nd->len, bol, eol);
                    if (!vals || emit(&st->em, 1, bol, eol, vals) < 0) return -1;
                    if (st->fold.on) st->fold.s_at = PyList_GET_SIZE(st->em.out) - 1;  /* see sample_settle */
                    st->last_sample = bol;
                    st->next_sample = bol + st->step;
                }
            }
            if (st->fold.on && o != ORG_ODD && o != ORG_FULL) {  /* quiet until its usage says otherwise */
                st->fold.p_kind = 1;
                st->fold.p_s = s;
                st->fold.p_mlen = nd->len;
                st->fold.p_org = o;
            }
        }
    } else if (nd->kind == K_USAGE) {
        if (!low_usage(b, s + nd->len, n)) {
            int r = fold_high(st, s);  /* a plain row: folded here */
            if (r < 0) return -1;
            if (r) return 0;
            cand = 1;  /* Python checks it is a stats row */
        }
    }
    if (!cand) return 0;
    Py_ssize_t bol = line_start(b, s);
    if (st->fold.p_kind && st->fold.p_s >= bol) st->fold.p_kind = 0;  /* its row is Python's after all */
    Py_ssize_t marker = -1;  /* the stats marker counted on this line before it became a candidate */
    if (st->last_mark >= bol) {  /* counted as quiet, but Python parses it */
        st->quiet--;
        if (st->origins && st->last_mark_origin >= 0) st->org.count[st->last_mark_origin]--;
        st->last_mark = -1;
        marker = st->last_mark_id;
    }
    if (st->last_sample == bol) {  /* sampled a moment ago: it is a candidate instead */
        Py_ssize_t k = PyList_GET_SIZE(st->em.out) - 1;
        if (PyList_SetSlice(st->em.out, k, k + 1, NULL) < 0) return -1;
        st->last_sample = -1;
        st->fold.s_at = -1;  /* the rows before it go out before the line (finish_cand) */
    }
    st->c_bol = bol;
    st->c_eol = line_end(b, n, s);
    st->nids = 0;
    if (marker >= 0 && append_id(st, marker) < 0) return -1;  /* so the candidate's needles name it too */
    if (append_id(st, id) < 0) return -1;
    if (st->errs) return err_early(st, id);
    return st->cols ? cols_early(st) : 0;
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

/* What every loop does at an even offset i whose pair is in the table: finish the pending candidate once
 * past its line, note single-byte flags, and check the needles filed under the pair. `mode` (a constant
 * at each call site): 0 compares needles with memcmp, 1 with needle_at (the two agree), 2 also leaves
 * the flags to the caller, which finds the single bytes itself. */
static ALWAYS_INLINE int visit(Scan *st, Py_ssize_t i, int mode) {
    const Matcher *m = st->m;
    const unsigned char *b = st->b;
    Py_ssize_t n = st->n;
    if (i < st->col_skip) return 0;  /* inside a line of a stable shape: its needles are known (cols_early) */
    if (st->c_bol >= 0 && i >= st->c_eol && finish_cand(st) < 0) return -1;
    if (mode < 2) st->flags |= m->single[b[i]] | m->single[b[i + 1]];
    unsigned p = PAIR(b[i], b[i + 1]);
    unsigned h = slot_of(p);
    while (m->slot[h].pair && m->slot[h].pair != p + 1) h = (h + 1) & (HSLOTS - 1);
    int32_t first = m->slot[h].pair ? m->slot[h].head : -1;  /* no entry: a single-byte flag pair */
    for (int32_t e = first; e >= 0; e = m->nd[e].next) {
        const Needle *nd = &m->nd[e];
        Py_ssize_t s = i - nd->off;
        if (s < 0 || s + nd->len > n) continue;
        if (mode ? !needle_at(b, n, s, nd) : memcmp(b + s, nd->s, (size_t)nd->len) != 0) continue;
        if (found(st, e, s) < 0) return -1;
    }
    return 0;
}

#define TEST(bits, p) ((bits)[(p) >> 3] >> ((p)&7))

/* The scalar loop: even offsets, eight bytes (four pairs) per table test while nothing is found. */
/* The SIMD loops' last bytes (less than one block, from blk on), the scalar way; nls: newlines before blk. */
static int scalar_tail(Scan *st, Py_ssize_t blk, Py_ssize_t nls) {
    const unsigned char *b = st->b;
    const uint8_t *bits = st->m->bits;
    Py_ssize_t n = st->n;
    st->em.nl_w = nls + count_nl(b + blk, b + n);
    st->em.w = n;
    for (Py_ssize_t i = blk; i + 1 < n; i += 2) {
        unsigned p = PAIR(b[i], b[i + 1]);
        if ((TEST(bits, p) & 1) && visit(st, i, 1) < 0) return -1;
        if (st->jump >= 0) i = jumped(st, NULL) - 2;  /* lines taken whole (cols_run): on from the next */
    }
    return 0;
}

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
        if (st->jump >= 0) i = jumped(st, NULL) - 2;  /* lines taken whole (cols_run): on from the next */
    }
    return 0;
}

#if HAVE_AVX2_PATH
/* ---- AVX2: the pair table itself, 32 pairs per 64 bytes through gathers ---- */

/* Table bits of 8 even pairs (eight 16-bit lanes): bit k of the result is pair k's bit. The table is
 * read as 2048 little-endian 32-bit words (x86 is little-endian): pair p is bit p & 31 of word p >> 5.
 * A gather fetches the 8 words; a shift moves each pair's bit to its lane's sign; a movemask collects. */
TARGET_AVX2 static ALWAYS_INLINE uint32_t pairs8(const int *words, __m128i pairs) {
    __m256i p = _mm256_cvtepu16_epi32(pairs);
    __m256i w = _mm256_i32gather_epi32(words, _mm256_srli_epi32(p, 5), 4);
    __m256i up = _mm256_andnot_si256(p, _mm256_set1_epi32(31));  /* 31 - (p & 31) */
    return (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_sllv_epi32(w, up)));
}

/* Table bits of the 32 even pairs in the 64 bytes at q (bit k is the pair at q + 2k); adds the newlines
 * among those bytes to *nls. */
TARGET_AVX2 static ALWAYS_INLINE uint32_t pairs32(const int *words, const unsigned char *q, Py_ssize_t *nls) {
    __m256i a = _mm256_loadu_si256((const __m256i *)q), c = _mm256_loadu_si256((const __m256i *)(q + 32));
    const __m256i nl = _mm256_set1_epi8('\n');
    *nls += __builtin_popcount((uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, nl)))
          + __builtin_popcount((uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(c, nl)));
    uint32_t m0 = pairs8(words, _mm256_castsi256_si128(a)), m1 = pairs8(words, _mm256_extracti128_si256(a, 1));
    uint32_t m2 = pairs8(words, _mm256_castsi256_si128(c)), m3 = pairs8(words, _mm256_extracti128_si256(c, 1));
    return m0 | m1 << 8 | m2 << 16 | m3 << 24;
}

#define WIN 1024  /* bytes whose masks are computed (no branches) before their offsets are visited */
#define JUMP_WIN 2  /* blocks of the first window after a jump (lines taken whole: cols_run), doubling up to WIN */

/* The offsets base + scale * k of the set bits k of x, in order, into out; returns how many. The first
 * four are written whatever the count (past it they are junk): the usual 0-4 bits cost no loop and no
 * mispredicted branch. out needs room for 4 more than the count. */
static ALWAYS_INLINE int flatten(Py_ssize_t *out, Py_ssize_t base, uint64_t x, int scale) {
    const uint64_t top = 1ull << 63;  /* keeps ctz defined once x is empty */
    int cnt = __builtin_popcountll(x);
    for (int k = 0; k < 4; k++) {
        out[k] = base + scale * (Py_ssize_t)__builtin_ctzll(x | top);
        x &= x - 1;
    }
    for (int k = 4; x; k++) {
        out[k] = base + scale * (Py_ssize_t)__builtin_ctzll(x);
        x &= x - 1;
    }
    return cnt;
}

/* The AVX2 loop: exactly the offsets run_scalar visits, in the same order. Per window of WIN bytes the
 * masks (and the newline count) first, with no branches, then the window's offsets in one loop; the
 * tail (< 64 bytes) pair by pair. */
TARGET_AVX2 static int run_avx2(Scan *st) {
    const unsigned char *b = st->b;
    const uint8_t *bits = st->m->bits;
    const int *words = (const int *)(const void *)bits;
    Py_ssize_t n = st->n, blk = 0, nls = 0;  /* nls: newlines before the bytes read so far */
    uint32_t masks[WIN / 64];
    Py_ssize_t cand[WIN / 2 + 4];
    Py_ssize_t win = WIN / 64;  /* blocks a window holds: fewer just after a jump (the next row is near) */
    while (blk + 64 <= n) {
        Py_ssize_t nb = (n - blk) / 64;
        if (nb > win) nb = win;
        for (Py_ssize_t k = 0; k < nb; k++) masks[k] = pairs32(words, b + blk + 64 * k, &nls);
        st->em.w = blk + 64 * nb;
        st->em.nl_w = nls;
        int nc = 0;
        for (Py_ssize_t k = 0; k < nb; k++) nc += flatten(cand + nc, blk + 64 * k, masks[k], 2);
        for (int k = 0; k < nc; k++) {
            if (visit(st, cand[k], 1) < 0) return -1;
            if (st->jump >= 0) break;
        }
        if (st->jump >= 0) {  /* lines taken whole (cols_run): on from the next */
            blk = jumped(st, &nls);
            win = JUMP_WIN;
            continue;
        }
        if (win < WIN / 64) win *= 2;
        blk += 64 * nb;
    }
    return scalar_tail(st, blk, nls);
}
#endif

#if HAVE_AVX512_PATH
/* ---- AVX-512 (BW + VBMI): a Bloom filter of the needles' pairs held in registers ---- */

/* Which of the 32 even pairs (16-bit lanes of v) pass all BLOOM_K hashes: per hash, a 16-bit multiply,
 * the table byte picked by the top 7 bits (vpermi2b over the 128-byte table in two registers; the byte
 * lands in the low half of the lane) and the bit by the next 3 (a shifted one, tested). */
TARGET_AVX512 static ALWAYS_INLINE uint32_t bloom32(__m512i v, const __m512i *tbl) {
    __mmask32 k = (__mmask32)~0u;
    for (int q = 0; q < BLOOM_K; q++) {
        __m512i h = _mm512_mullo_epi16(v, _mm512_set1_epi16((short)BLOOM_MUL[q]));
        __m512i byte = _mm512_permutex2var_epi8(tbl[2 * q], _mm512_srli_epi16(h, 9), tbl[2 * q + 1]);
        __m512i col = _mm512_and_si512(_mm512_srli_epi16(h, 6), _mm512_set1_epi16(7));
        k &= _mm512_test_epi16_mask(byte, _mm512_sllv_epi16(_mm512_set1_epi16(1), col));
    }
    return (uint32_t)k;
}

/* The AVX-512 loop. Per window of WIN bytes: the Bloom masks of 64 bytes at a time and a compare with the
 * single-byte needles (no branches), then each offset that passes is tested in the pair table and, if
 * there, visited. These are the offsets run_scalar visits, in the same order, less those whose pair is
 * only in the table for a single-byte needle: the scalar loop finds nothing there but the flag byte,
 * which the compare finds (see the header comment). The tail (< 64 bytes) goes pair by pair. */
TARGET_AVX512 static int run_avx512(Scan *st) {
    const Matcher *m = st->m;
    const unsigned char *b = st->b;
    const uint8_t *bits = m->bits;
    Py_ssize_t n = st->n, blk = 0;
    uint32_t masks[WIN / 64];
    Py_ssize_t cand[WIN / 2 + 4];
    uint64_t seen[4] = {0, 0, 0, 0};  /* where single byte q was seen (bits of some blocks) */
    Py_ssize_t nls = 0;  /* newlines before blk + 64 * k */
    const __m512i nl = _mm512_set1_epi8('\n');
    __m512i tbl[2 * BLOOM_K], sg[4];
    for (int q = 0; q < BLOOM_K; q++) {
        tbl[2 * q] = _mm512_loadu_si512((const void *)m->bloom[q]);
        tbl[2 * q + 1] = _mm512_loadu_si512((const void *)(m->bloom[q] + 64));
    }
    for (int k = 0; k < 4; k++) sg[k] = _mm512_set1_epi8((char)m->singles[k < m->nsingle ? k : 0]);
    Py_ssize_t win = WIN / 64;  /* blocks a window holds: fewer just after a jump (the next row is near) */
    while (blk + 64 <= n) {
        Py_ssize_t nb = (n - blk) / 64;
        if (nb > win) nb = win;
        for (Py_ssize_t k = 0; k < nb; k++) {
            __m512i v = _mm512_loadu_si512((const void *)(b + blk + 64 * k));
            masks[k] = bloom32(v, tbl);
            nls += __builtin_popcountll(_mm512_cmpeq_epi8_mask(v, nl));
            for (int q = 0; q < 4; q++) seen[q] |= _mm512_cmpeq_epi8_mask(v, sg[q]);
        }
        st->em.w = blk + 64 * nb;
        st->em.nl_w = nls;
        int nc = 0;  /* the offsets that passed, in order (one loop for the window: fewer mispredictions) */
        for (Py_ssize_t k = 0; k < nb; k++) nc += flatten(cand + nc, blk + 64 * k, masks[k], 2);
        for (int k = 0; k < nc; k++) {
            Py_ssize_t i = cand[k];
            unsigned p = PAIR(b[i], b[i + 1]);
            if ((TEST(bits, p) & 1) && visit(st, i, 2) < 0) return -1;
            if (st->jump >= 0) break;
        }
        if (st->jump >= 0) {  /* lines taken whole (cols_run): on from the next */
            blk = jumped(st, &nls);
            win = JUMP_WIN;
            continue;
        }
        if (win < WIN / 64) win *= 2;
        blk += 64 * nb;
    }
    for (int q = 0; q < m->nsingle; q++)
        if (seen[q]) st->flags |= m->single[m->singles[q]];
    return scalar_tail(st, blk, nls);
}
#endif

/* scan(matcher, buffer, next_sample, step, origins=False, gap=0, evidence=0, keep=0, bar_s=-1, bar_r=-1,
 *      family=None, bars=None, shapes=None, errs=None)
 *   -> (lines, flags, quiet_stats, next_sample, [(kind, line_index, start, end, ids), ...], per_origin)
 * per_origin: None, or with origins=True {origin bytes: quiet stats rows} (see Origins).
 * kind 0: candidate line, ids = tuple of the needle indices found in it; kind 1: sampled stats line, ids = its
 * values (sample_vals) or None;
 * with gap > 0 high-usage rows are folded per origin (see Fold): kind 2, a record (ids = (origin bytes, payload),
 * start/end = a row of its engine); kind 3, a folded row sampled for the timeline. With keep > 0, closed episodes
 * of an engine in a row are handed over as one record (see Batch): kind 4; bars: None or {origin bytes: (seconds,
 * rows)}, the bar of each origin it names, (bar_s, bar_r) that of the others (see Batch). family: None or (text
 * without digit runs, needle indices, last line index, gap, count run): see Family; kind 5. shapes: None or
 * what shapes() made: lines of those shapes become rows of columns (see Columns); kind 6.
 * errs: None or (errfold_new's state, lines before the buffer[, lines after it that read nothing]): candidate lines
 * of its registered keys are counted there, not returned (see Errs; not with shapes).
 * line_index counts newlines before the line (0 for the buffer's first line). */
static PyObject *scan_with(PyObject *args, int loop) {
    PyObject *cap;
    Py_buffer view;
    Py_ssize_t next_sample, step;
    int origins = 0;
    Py_ssize_t gap = 0, evidence = 0, keep = 0, bar_r = -1;
    double bar_s = -1.0;
    PyObject *family = Py_None, *bars = Py_None, *shape_set = Py_None, *errs = Py_None;
    if (!PyArg_ParseTuple(args, "Oy*nn|pnnndnOOOO", &cap, &view, &next_sample, &step, &origins, &gap, &evidence,
                          &keep, &bar_s, &bar_r, &family, &bars, &shape_set, &errs)) return NULL;
    PyObject *errs_cap = NULL;
    long long errs_base = 0;
    Py_ssize_t errs_ahead = 0;
    if (errs != Py_None && !PyArg_ParseTuple(errs, "OL|n", &errs_cap, &errs_base, &errs_ahead)) {
        PyBuffer_Release(&view);
        return NULL;
    }
    if (bars != Py_None && !PyDict_Check(bars)) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_TypeError, "bars must be None or a dict");
        return NULL;
    }
    Py_buffer fam_text = {0};
    PyObject *fam_ids = NULL;
    Py_ssize_t fam_until = 0, fam_gap = 0, fam_run = -1;
    if (family != Py_None && !PyArg_ParseTuple(family, "y*O!nnn", &fam_text, &PyTuple_Type, &fam_ids, &fam_until,
                                               &fam_gap, &fam_run)) { PyBuffer_Release(&view); return NULL; }
    Matcher *m = (Matcher *)PyCapsule_GetPointer(cap, "triage.scan._linescan.Matcher");
    Scan *st = m ? PyMem_Calloc(1, sizeof(Scan)) : NULL;  /* the origin table makes it ~10 KB: not on the stack */
    if (!st) {
        PyBuffer_Release(&view);
        if (fam_ids) PyBuffer_Release(&fam_text);
        return m ? PyErr_NoMemory() : NULL;
    }
    st->origins = origins;
    if (shape_set != Py_None && !(st->cols = cols_new(shape_set))) goto fail;
    if (errs_cap && shape_set == Py_None) {  /* (columns take lines out of order around the lines they return) */
        if (!(st->errs = errs_of(errs_cap))) goto fail;
        err_begin(st->errs, errs_base, errs_ahead);
    }
    int fam_ok = fam_ids && PyTuple_GET_SIZE(fam_ids) <= 32;
    for (Py_ssize_t k = 0; fam_ok && k < fam_text.len; k++) {  /* (Families.native sends such a text only) */
        unsigned char c = ((const unsigned char *)fam_text.buf)[k];
        fam_ok = c >= 0x20 && c < 0x7f && !(c >= '0' && c <= '9');
    }
    if (fam_ok) {
        Family *fm = &st->fam;
        fm->on = 1;
        fm->text = fam_text.buf;
        fm->len = fam_text.len;
        fm->nids = PyTuple_GET_SIZE(fam_ids);
        for (Py_ssize_t k = 0; k < fm->nids; k++) fm->ids[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(fam_ids, k));
        fm->until = fam_until;
        fm->gap = fam_gap;
        fm->run = fam_run;
        if (PyErr_Occurred()) goto fail;
    }
    st->org.cap = origins ? MAX_ORIGINS : 1;
    st->fold.on = gap > 0;
    st->fold.gap = gap;
    st->fold.evidence = evidence < FOLD_EVIDENCE ? evidence : FOLD_EVIDENCE;
    st->fold.keep = keep > 0 ? keep : 0;
    st->fold.bar_s = bar_s;
    st->fold.bar_r = bar_r;
    st->fold.bars = bars;
    st->m = m;
    st->b = view.buf;
    st->n = view.len;
    st->next_sample = next_sample;
    st->step = step;
    st->em.b = st->b;
    st->em.count = count_nl;
    st->last_mark = st->last_sample = st->c_bol = st->c_eol = st->jump = st->fold.s_at = st->tb_bol = -1;
    st->ids = st->ids_local;
    st->ids_cap = (Py_ssize_t)(sizeof(st->ids_local) / sizeof(st->ids_local[0]));
    st->em.out = PyList_New(0);
    if (!st->em.out) goto fail;
    int err;
    if (loop == P_AVX512 && !m->simd_ok) loop = P_AVX2;  /* more single bytes than its compare takes */
    switch (loop) {
#if HAVE_AVX512_PATH
    case P_AVX512:
        st->em.count = count_nl_avx512;
        st->em.fused = 1;
        err = run_avx512(st) < 0;
        break;
#endif
#if HAVE_AVX2_PATH
    case P_AVX2:
        st->em.count = count_nl_avx2;
        st->em.fused = 1;
        err = run_avx2(st) < 0;
        break;
#endif
    default:
        err = run_scalar(st) < 0;
    }
    if (!err) {
        if (st->n > 0) st->flags |= m->single[st->b[st->n - 1]];  /* the last byte of an odd-length buffer */
        err = finish_cand(st) < 0 || (st->tb_bol >= 0 && tb_flush(st, st->n) < 0) || fold_flush(st) < 0
              || fam_flush(st) < 0 || cols_flush(st) < 0;
    }
    if (!err && st->errs) {
        Py_ssize_t n_lines = st->em.nl_cnt + (st->em.fused ? st->em.nl_w - st->em.n_pos
                                                          : st->em.count(st->b + st->em.nl_pos, st->b + st->n));
        err = err_end(st, n_lines) < 0;
    }
    cols_free(st->cols);
    if (fam_ids) PyBuffer_Release(&fam_text);
    if (st->ids != st->ids_local) PyMem_Free(st->ids);
    ofolds_free(st);
    PyObject *per_origin = Py_None;
    Py_INCREF(per_origin);
    if (!err && origins) {  /* {origin bytes: quiet rows} */
        Py_DECREF(per_origin);
        per_origin = PyDict_New();
        for (Py_ssize_t i = 0; per_origin && i < st->org.n; i++) {
            PyObject *k = PyBytes_FromStringAndSize((const char *)st->org.buf[i], st->org.len[i]);
            PyObject *v = PyLong_FromSsize_t(st->org.count[i]);
            if (!k || !v || PyDict_SetItem(per_origin, k, v) < 0) Py_CLEAR(per_origin);
            Py_XDECREF(k);
            Py_XDECREF(v);
        }
        if (!per_origin) err = 1;
    }
    PyBuffer_Release(&view);
    if (err) { Py_DECREF(st->em.out); Py_XDECREF(per_origin); PyMem_Free(st); return NULL; }
    Py_ssize_t lines = st->em.nl_cnt + (st->em.fused ? st->em.nl_w - st->em.n_pos  /* w = n here */
                                                   : st->em.count(st->b + st->em.nl_pos, st->b + st->n));
    PyObject *out = Py_BuildValue("(ninnNN)", lines, st->flags, st->quiet, st->next_sample, st->em.out, per_origin);
    PyMem_Free(st);
    return out;
fail:
    PyBuffer_Release(&view);
    if (fam_ids) PyBuffer_Release(&fam_text);
    cols_free(st->cols);
    ofolds_free(st);
    PyMem_Free(st);
    return NULL;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    (void)self;
    return scan_with(args, path);
}

static PyObject *scan_scalar(PyObject *self, PyObject *args) {
    (void)self;
    return scan_with(args, P_SCALAR);
}

/* set_simd(name) -> the previous name: the loop scan() takes from now on ("" = the scalar one). */
static PyObject *set_simd(PyObject *self, PyObject *args) {
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
    for (int k = 0; k < P_COUNT; k++) {
        if (strcmp(name, PATH_NAME[k]) != 0) continue;
        if (!path_ok[k]) break;
        int old = path;
        path = k;
        if (PyModule_AddStringConstant(self, "SIMD", PATH_NAME[k]) < 0) return NULL;
        return PyUnicode_FromString(PATH_NAME[old]);
    }
    PyErr_Format(PyExc_ValueError, "no SIMD path %R on this CPU or build", PyTuple_GET_ITEM(args, 0));
    return NULL;
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

/* How common a byte is in a log, roughly: blanks and newlines most, then lower-case letters, then the rest. */
static int head_commonness(unsigned char c) {
    if (c == ' ' || c == '\n') return 3;
    if (c >= 'a' && c <= 'z') return 2;
    return 1;
}

/* Whether q[0, m) is in t[0, n): memchr on the needle's rarest-looking byte (a capital, a digit, punctuation before a
 * lower-case letter before a blank), each stop checked whole. (glibc's memmem and Python's search both ran slower on
 * a small log's head.) */
static int head_has(const unsigned char *t, Py_ssize_t n, const unsigned char *q, Py_ssize_t m) {
    if (m == 0) return 1;
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 1; i < m; i++) if (head_commonness(q[i]) < head_commonness(q[k])) k = i;
    for (Py_ssize_t at = k; at + (m - k) <= n;) {
        const unsigned char *f = memchr(t + at, q[k], (size_t)(n - (m - k) - at + 1));
        if (!f) return 0;
        Py_ssize_t x = (f - t) - k;  /* where the needle would start */
        if (!memcmp(t + x, q, (size_t)m)) return 1;
        at = (f - t) + 1;
    }
    return 0;
}

/* contains_any(buffer, needles) -> whether one of the needles (bytes) is in the buffer: `in` of each, in one call
 * and by memchr on each needle's first byte that is no blank (Python's search runs at ~0.5 GB/s on a log's bytes,
 * ~20-40 us a small file's head for two needles). */
static PyObject *contains_any(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    PyObject *needles;
    if (!PyArg_ParseTuple(args, "y*O!", &view, &PyTuple_Type, &needles)) return NULL;
    int found = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(needles) && !found; i++) {
        PyObject *q = PyTuple_GET_ITEM(needles, i);
        if (!PyBytes_Check(q)) { PyBuffer_Release(&view); PyErr_SetString(PyExc_TypeError, "needles: bytes"); return NULL; }
        found = head_has(view.buf, view.len, (const unsigned char *)PyBytes_AS_STRING(q), PyBytes_GET_SIZE(q));
    }
    PyBuffer_Release(&view);
    return PyBool_FromLong(found);
}

/* Whether the first 8 bytes of two lines differ once digits 1-9 read as 0 (unwrap.DIGITS_0: records of one format). */
static int head_differ8(const unsigned char *a, Py_ssize_t na, const unsigned char *b, Py_ssize_t nb) {
    na = na < 8 ? na : 8;
    nb = nb < 8 ? nb : 8;
    if (na != nb) return 1;
    for (Py_ssize_t i = 0; i < na; i++) {
        unsigned char x = a[i], y = b[i];
        if (x >= '1' && x <= '9') x = '0';
        if (y >= '1' && y <= '9') y = '0';
        if (x != y) return 1;
    }
    return 0;
}

/* Whether a line may continue a wrapped one as far as its first bytes tell: unwrap.NOT_CONTINUATION's alternatives of
 * one or two bytes (two blanks, a tab, an escape, a bracket, a parenthesis or a list mark start a line of its own). */
static int head_may_go_on(const unsigned char *x, Py_ssize_t n) {
    static const char own[] = "\t\x1b[({<#*=+|>-";
    if (n > 0 && memchr(own, x[0], sizeof own - 1)) return 0;
    if (n > 1 && strchr(" \t\n\r\f\v", x[0]) && x[0] && strchr(" \t\n\r\f\v", x[1]) && x[1]) return 0;
    return 1;
}

/* head_gate(head, min_width, levels) -> (may_wrap, may_rich): what unwrap.wrap_width and its rich-log gate would
 * rule out at their first tests, in one pass of C instead of a split and a search a level (~80 us a small file's
 * head in Python, a third of a small file's cost). may_wrap is False only where wrap_width returns 0: the head's
 * widest line (the first of that length) is plain (ASCII, no tab or CR) and either shorter than min_width, the only
 * line that long, or fewer than two lines of that length are followed by a line that could continue them (no longer,
 * not empty, its first 8 bytes not the wrapped line's, digits aside): wrap_width's own first tests, which it needs
 * two distinct pairs to pass. may_rich: a level of `levels` (bytes) is in the head. */
static PyObject *head_gate(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    Py_ssize_t min_width;
    PyObject *levels;
    if (!PyArg_ParseTuple(args, "y*nO!", &view, &min_width, &PyTuple_Type, &levels)) return NULL;
    const unsigned char *b = view.buf;
    Py_ssize_t n = view.len, nl = 0;
    for (const unsigned char *f = b; (f = memchr(f, '\n', (size_t)(n - (f - b)))) != NULL; f++) nl++;
    int may_wrap = 0;
    Py_ssize_t *st = nl ? PyMem_Malloc((size_t)(nl + 1) * sizeof(Py_ssize_t)) : NULL;
    if (nl && !st) { PyBuffer_Release(&view); return PyErr_NoMemory(); }
    if (nl) {  /* line i is [st[i], st[i + 1] - 1): the lines that end with a newline (split's last piece dropped) */
        Py_ssize_t k = 0;
        st[k++] = 0;
        for (const unsigned char *f = b; k <= nl && (f = memchr(f, '\n', (size_t)(n - (f - b)))) != NULL; f++)
            st[k++] = f - b + 1;
        Py_ssize_t top = -1, first = 0, count = 0;
        for (Py_ssize_t i = 0; i < nl; i++) {
            Py_ssize_t len = st[i + 1] - 1 - st[i];
            if (len > top) { top = len; first = i; count = 1; }
            else if (len == top) count++;
        }
        int plain = 1;
        for (Py_ssize_t j = st[first]; j < st[first] + top && plain; j++)
            plain = b[j] < 0x80 && b[j] != '\t' && b[j] != '\r';
        if (!plain) may_wrap = 1;
        else if (top >= min_width && count >= 2) {
            Py_ssize_t pairs = 0;
            for (Py_ssize_t i = first; i + 1 < nl && pairs < 2; i++) {
                Py_ssize_t la = st[i + 1] - 1 - st[i], lb = st[i + 2] - 1 - st[i + 1];
                if (la == top && lb > 0 && lb <= la && head_differ8(b + st[i], la, b + st[i + 1], lb)
                    && head_may_go_on(b + st[i + 1], lb)) pairs++;
            }
            may_wrap = pairs >= 2;
        }
    }
    PyMem_Free(st);
    int may_rich = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(levels) && !may_rich; i++) {
        PyObject *lv = PyTuple_GET_ITEM(levels, i);
        if (!PyBytes_Check(lv)) { PyBuffer_Release(&view); PyErr_SetString(PyExc_TypeError, "levels: bytes"); return NULL; }
        may_rich = head_has(b, n, (const unsigned char *)PyBytes_AS_STRING(lv), PyBytes_GET_SIZE(lv));
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("(OO)", may_wrap ? Py_True : Py_False, may_rich ? Py_True : Py_False);
}

static PyMethodDef methods[] = {
    {"compile", compile, METH_VARARGS, "compile(needles) -> matcher"},
    {"scan", scan, METH_VARARGS, "scan(matcher, buffer, next_sample, step) -> (lines, flags, quiet, next_sample, hits)"},
    {"scan_scalar", scan_scalar, METH_VARARGS, "scan() on the scalar loop, whatever the CPU (the reference)"},
    {"set_simd", set_simd, METH_VARARGS, "set_simd(name) -> previous: the loop scan() takes (one of PATHS, or \"\")"},
    {"pair_counts", pair_counts, METH_VARARGS, "pair_counts(buffer) -> 65536 uint32 counts (native order)"},
    {"contains_any", contains_any, METH_VARARGS, "contains_any(buffer, needles) -> whether a needle is in the buffer"},
    {"head_gate", head_gate, METH_VARARGS, "head_gate(head, min_width, levels) -> (may_wrap, may_rich) (unwrap.py)"},
    {"errfold_new", errfold_new, METH_VARARGS, "errfold_new(classes, reach, pieces=None) -> state (see Errs)"},
    {"errfold_whole", errfold_whole, METH_VARARGS, "errfold_whole(state) -> lines scan() took whole so far"},
    {"errfold_key", errfold_key, METH_VARARGS, "errfold_key(line) -> its key's text, or None"},
    {"errfold_add", errfold_add, METH_VARARGS, "errfold_add(state, line, ids) -> slot or -1"},
    {"errfold_find", errfold_find, METH_VARARGS, "errfold_find(state, buffer, start, end, ids) -> slot or -1"},
    {"errfold_lookup", errfold_lookup, METH_VARARGS, "errfold_lookup(state, buffer, hits) -> per hit a slot, -1 or -2"},
    {"errfold_commit", errfold_commit, METH_VARARGS, "errfold_commit(state): the last call's counts are kept"},
    {"errfold_settle", errfold_settle, METH_VARARGS, "errfold_settle(state, buffer) -> lines to scan again for"},
    {"errfold_mark", errfold_mark, METH_VARARGS, "errfold_mark(state, lineno): a line there reads its neighbours"},
    {"errfold_take", errfold_take, METH_VARARGS, "errfold_take(state) -> the counts per key, reset"},
    {"shapes", shapes, METH_VARARGS, "shapes([(segments, allowed, columns, ids, record, ctx), ...]) -> shapes"},
    {"col_join", col_join, METH_VARARGS, "col_join([vals, ...], nout, mean, longest) -> (vals, stats)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_linescan", "Literal line prefilter for triage.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__linescan(void) {
    PyObject *mod = PyModule_Create(&module);
    if (!mod) return NULL;
    ray_class_init();
    stamp_init();
#if HAVE_AVX2_PATH
    __builtin_cpu_init();
    path_ok[P_AVX2] = __builtin_cpu_supports("avx2");
#endif
#if HAVE_AVX512_PATH
    path_ok[P_AVX512] = path_ok[P_AVX2] && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
                        && __builtin_cpu_supports("avx512vbmi");
#endif
    PyObject *paths = PyTuple_New(0);
    for (int k = 1; paths && k < P_COUNT; k++) {
        if (!path_ok[k]) continue;
        PyObject *name = PyUnicode_FromString(PATH_NAME[k]);
        if (!name || _PyTuple_Resize(&paths, PyTuple_GET_SIZE(paths) + 1) < 0) { Py_XDECREF(name); Py_CLEAR(paths); break; }
        PyTuple_SET_ITEM(paths, PyTuple_GET_SIZE(paths) - 1, name);
        path = k;  /* the last one is the fastest */
    }
    const char *off = getenv("TRIAGE_LINESCAN_SCALAR");
    if (off && *off && strcmp(off, "0") != 0) path = P_SCALAR;
    if (!paths || PyModule_AddObject(mod, "PATHS", paths) < 0) {  /* steals paths only on success */
        Py_XDECREF(paths);
        Py_DECREF(mod);
        return NULL;
    }
    if (PyModule_AddIntConstant(mod, "COL_TOP", COL_TOP) < 0 || PyModule_AddIntConstant(mod, "COL_SHAPES", COL_SHAPES) < 0
        || PyModule_AddIntConstant(mod, "COL_TOKENS", COL_TOKENS) < 0
        || PyModule_AddIntConstant(mod, "MAX_NEEDLES", HSLOTS / 4) < 0
        || PyModule_AddIntConstant(mod, "COL_LINE_MAX", COL_LINE_MAX) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    if (PyModule_AddStringConstant(mod, "SIMD", PATH_NAME[path]) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}

/* ---- Errs: error-like lines no rule can claim, counted per shape (scan/errfold.py) ----
 *
 * A log may hold millions of error-like lines of a few hundred messages whose numbers, ids and hex change. Python
 * registers a line's key (errfold_add) once it has judged a line of it: an error-like line no rule can claim
 * (its needles are error words only: none is a rule's, a parser's, a signal's or a traceback's), kept foldable
 * (scan/unexplained.py). The key is the line's shape (template.shape: digits, hex tokens, UUIDs and numbers standing
 * alone folded; err_key below does the same, tests/test_errfold.py compares the two) followed by its needle indices.
 * A later candidate line with a registered key is counted here instead of returned: per key, how many, the first,
 * the last and the one before it (line numbers and text), handed over once per file (errfold_take).
 * A line is only counted when no line that may read it as context is near: no candidate line holding another needle,
 * or a needle of a rule (ERR_RULED) and no key Python registered as foldable (a rule's claim reads `near` windows and the side lookup, a traceback reads the lines before it, a family its gap)
 * within `reach` lines before or after it, in this buffer or (before) the ones before; of the last `reach` lines of a
 * buffer, those within `reach` of the first line after it that may read around are returned (the caller says how many
 * lines after the buffer read nothing, `ahead`: the lines it looked at past the buffer's end, errfold.ErrFold.ahead;
 * none, and the next buffer may start with such a line). A line that turns out to be near one is
 * returned in its place. A ruled line whose key is not registered yet (a rare variant: a digest of digits only, a
 * hex name of letters only) is taken for one that reads nothing while the buffer is scanned; once Python has judged
 * the buffer's new keys, errfold_settle registers those it did not fold as keys whose lines read around (`nofold`)
 * and Python scans the buffer again before committing, so a new key costs one line, not the 2 * reach around it. From the first line holding a signal's needle on, nothing is counted (lines after an
 * orderly shutdown are kept whole). A call's counts become the file's only when Python commits them
 * (errfold_commit): a buffer scanned again (colour codes, origins) counts once. */
#define ERR_LINE_MAX 4000  /* bytes (template.FAMILY_TEXT characters: these lines are ASCII) */
#define ERR_KEYS 4096      /* keys a file registers at most */
#define ERR_HEAD_MAX 64    /* bytes of a line's `[...] ` header whose key err_head keeps */
enum { ERR_ALLOWED = 0, ERR_SPECIAL = 1, ERR_STOP = 2, ERR_RULED = 3 };

typedef struct { Py_ssize_t ln, bol, eol; } ErrAt;
typedef struct { long long no; char *text; Py_ssize_t len; } ErrLine;
typedef struct {
    uint64_t hash;
    unsigned char *key;
    Py_ssize_t klen;
    Py_ssize_t *ids, nids;
    long long count;
    ErrLine first, prev, last;     /* committed */
    long long c_count;             /* this call */
    ErrLine c_first, c_prev, c_last;
    ErrAt a_first, a_prev, a_last; /* this call's, in its buffer (copied at its end) */
    int touched;
    int nofold;                    /* a key Python judged a rule may claim (errfold_settle): its lines read around */
    int gated;                     /* a key of the gated kind (never taken whole) */
    int whole;                     /* its lines may be taken whole: 0 not known yet, 1 yes, 2 no (err_slot_whole) */
    Py_ssize_t tlen;               /* the key's text: key[:tlen] (its needles' part after it) */
    uint64_t thash;                /* err_hash of the text */
} ErrSlot;
/* An entry of the table of texts (v: slot index + 1, 0 empty): the text's hash, length and bytes beside the slot's
 * index, so that a probe reads this entry alone, not the slot (a line taken whole is looked up there: err_text_slot) */
typedef struct { uint64_t h; const unsigned char *key; int32_t v, tlen; } ErrTT;
typedef struct { Py_ssize_t bol, eol, ids, nids; } ErrOpt;  /* a ruled line of a key not known yet (err_take) */
typedef struct { Py_ssize_t ln, bol, eol, slot, pos; int out; } ErrQ;
struct Errs {
    unsigned char *cls;            /* per needle index: ERR_ALLOWED, ERR_SPECIAL, ERR_STOP */
    Py_ssize_t ncls, reach;
    long long last_special, c_last_special;  /* line numbers (1-based) */
    int stop, c_stop;
    ErrSlot *slots;
    Py_ssize_t nslots;
    Py_ssize_t *table, tcap;       /* slot index + 1, open addressing */
    Py_ssize_t *touched, ntouched;
    long long base;                /* lines before this call's buffer */
    Py_ssize_t ahead;              /* lines after it known to read nothing (errfold_ahead: its look-ahead) */
    ErrQ *q;
    Py_ssize_t nq, qcap;
    ErrOpt *opt;                   /* this call's ruled lines of unknown keys, taken for lines that read nothing */
    Py_ssize_t nopt, optcap;
    Py_ssize_t *optids;            /* their needle indices, one after another */
    Py_ssize_t noptids, optidscap;
    /* Lines taken whole (err_run): each needle's pieces (NULL: runs off; see errfold.pieces), the slots of the plain
     * keys by their text alone, the matcher their `whole` was worked out for, the line keyed before it was finished */
    Py_ssize_t npc, *pc_first, *pc_count;  /* per needle index: its first piece and how many (-1: stable) */
    Py_ssize_t *pc_off, *pc_len;
    unsigned char *pc_bytes;
    int runs;
    ErrTT *ttable;                 /* the slots of the plain keys by their text's hash, open addressing */
    Py_ssize_t ttcap, ntext;
    const void *whole_m;
    int m_ok;                      /* the matcher lets lines be taken whole at all (err_slot_whole) */
    Py_ssize_t pre_bol, pre_slot;  /* the line at pre_bol is of whole slot pre_slot (err_early, err_run) */
    long long taken;               /* lines taken whole (errfold_whole: for tests) */
    Py_ssize_t text_bol, text_len; /* E->kbuf holds the plain text of the key of the line at text_bol (-1: none) */
    Py_ssize_t head_len, head_olen;  /* the last header keyed (err_head): its bytes (a digit as 0), its key */
    unsigned char head_raw[ERR_HEAD_MAX], head_out[ERR_HEAD_MAX];
    unsigned char kbuf[ERR_LINE_MAX + 2 * 256 + 8];
};

/* Character classes of the key (err_key): one lookup a byte. */
enum { EC_WORD = 1, EC_HEXL = 2, EC_DIGIT = 4, EC_BAD = 8, EC_GATE = 16, EC_APART = 32 };
static uint8_t ERR_CLS[256];
static void err_cls_init(void) {
    for (int c = 0; c < 256; c++) {
        uint8_t k = 0;
        if (c < 0x20 || c > 0x7e || c == '"' || c == '\'') k |= EC_BAD;
        if (c == '_' || (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')) k |= EC_WORD;
        if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) k |= EC_HEXL;
        if (c >= '0' && c <= '9') k |= EC_DIGIT;
        if (c == 'a' || c == 'A' || c == 'r' || c == 'R') k |= EC_GATE;  /* beside a digit in `ya29`, `r8_`, `gr1348941` */
        if (c && strchr(" ()[]{}=,;/#<>!?|*&%", c)) k |= EC_APART;  /* err_apart's bytes */
        ERR_CLS[c] = k;
    }
}

static ALWAYS_INLINE int err_hexl(unsigned char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }
static ALWAYS_INLINE int err_hex(unsigned char c) { return err_hexl(c) || (c >= 'A' && c <= 'F'); }
static ALWAYS_INLINE int err_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static ALWAYS_INLINE int err_wordc(unsigned char c) {
    return c == '_' || err_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}
/* Where an address ends (template.MASKS: `\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b`) whose first part, of 1-3 digits,
 * ends at q: after its fourth part, or its port; -1 when there is none there (fewer parts, a part of more digits, or
 * a word byte, `.` or `:` right after it). err_fast512 and err_key_body's loop both ask it. */
static ALWAYS_INLINE Py_ssize_t err_addr_end(const unsigned char *s, Py_ssize_t n, Py_ssize_t q) {
    Py_ssize_t k = q, parts = 1;
    while (parts < 4 && k + 1 < n && s[k] == '.' && err_digit(s[k + 1])) {
        Py_ssize_t d = k + 1;
        while (d < n && err_digit(s[d])) d++;
        if (d - k - 1 > 3) return -1;
        k = d;
        parts++;
    }
    if (parts < 4) return -1;
    if (k + 1 < n && s[k] == ':' && err_digit(s[k + 1])) {
        k++;
        while (k < n && err_digit(s[k])) k++;
    }
    return k == n || (!err_wordc(s[k]) && s[k] != '.' && s[k] != ':') ? k : -1;
}
/* template._APART: what may stand beside a number standing alone (ASCII: \s is only the blank here) */
static ALWAYS_INLINE int err_apart(unsigned char c) {  /* (ERR_CLS is set: err_key_body's callers) */
    return (ERR_CLS[c] & EC_APART) != 0;
}
static int err_ci(const unsigned char *s, Py_ssize_t n, Py_ssize_t i, const char *lit) {
    for (Py_ssize_t k = 0; lit[k]; k++) {
        if (i + k >= n) return 0;
        unsigned char c = s[i + k];
        if (c >= 'A' && c <= 'Z') c |= 0x20;
        if (c != (unsigned char)lit[k]) return 0;
    }
    return 1;
}

/* Whether the gate `1//0` (redact.PATTERNS) touches a span of digits [p, q) a mark replaces. */
static ALWAYS_INLINE int err_slash_gate(const unsigned char *s, Py_ssize_t n, Py_ssize_t p, Py_ssize_t q) {
    return (s[q - 1] == '1' && q + 2 < n && s[q] == '/' && s[q + 1] == '/' && s[q + 2] == '0')
           || (s[p] == '0' && p >= 3 && s[p - 1] == '/' && s[p - 2] == '/' && s[p - 3] == '1');
}

/* Bits [p, p + len) of a line's mask (len <= 64; nb: the mask's words), as the low bits of the result. */
static ALWAYS_INLINE uint64_t err_bits(const uint64_t *M, Py_ssize_t p, Py_ssize_t len, Py_ssize_t nb) {
    Py_ssize_t b = p >> 6;
    int off = (int)(p & 63);
    uint64_t x = M[b] >> off;
    if (off && b + 1 < nb) x |= M[b + 1] << (64 - off);
    return len == 64 ? x : x & ((1ULL << len) - 1);
}
#define UUID_HEX (((1ULL << 36) - 1) & ~((1ULL << 8) | (1ULL << 13) | (1ULL << 18) | (1ULL << 23)))


/* The key of a line of printable ASCII, no quote, no secret pattern's gate: its text with hex tokens masked, numbers
 * standing alone as `1` (`1.1` with a fraction), every other digit `1`: template.shape without its `~`, but for a
 * fraction and the case of a `0x` handle's letters, which it keeps apart (lines of one key are lines of one shape;
 * the rules' regexes may read those: scan/masked.py); -1 when the line is not such a line (it is returned).
 * An address (four parts of 1-3 digits, a port) is one mark: coarser than the shape there, as the template is, so a
 * key's lines are lines of one template, not always of one shape (Python folds a key's lines into the fold of the
 * shape it registered: unclassified findings group by template). `gated`: the key of a line that holds a gate
 * (template.shape leaves its numbers alone: every digit is `1`, an address's too). The gates that hold a digit (`1//0`, `ya29`,
 * `r8_`, `gr1348941`) are looked for here: masking digits would hide them. The others hold a letter no mask
 * writes, so two lines of one key hold them alike, and Python registers only lines without them. */
/* The classes err_key reads, as bits (one a byte, 64 a word): word bytes, digits, [0-9a-f]. Returns 1 when the line
 * holds a byte of none of the classes a key may hold (EC_BAD). The word and digit runs are then found by the bits
 * (a count of trailing zeros), not byte by byte: a line's word ends were a mispredicted branch each. */
#define ERR_BLOCKS ((ERR_LINE_MAX + 63) / 64)
static int err_masks_scalar(const unsigned char *s, Py_ssize_t n, uint64_t *W, uint64_t *D, uint64_t *H, uint64_t *G) {
    unsigned bad = 0;
    for (Py_ssize_t b = 0; b * 64 < n; b++) {
        const unsigned char *t = s + b * 64;
        Py_ssize_t e = n - b * 64 < 64 ? n - b * 64 : 64;
        uint64_t w = 0, d = 0, h = 0, g = 0;
        for (Py_ssize_t i = 0; i < e; i++) {
            unsigned k = ERR_CLS[t[i]];
            w |= (uint64_t)(k & EC_WORD) << i;
            h |= (uint64_t)((k >> 1) & 1) << i;
            d |= (uint64_t)((k >> 2) & 1) << i;
            g |= (uint64_t)((k >> 4) & 1) << i;
            bad |= k & EC_BAD;
        }
        W[b] = w;
        D[b] = d;
        H[b] = h;
        G[b] = g;
    }
    return bad != 0;
}

#if HAVE_AVX2_PATH
/* The classes of 32 bytes as bits (err_masks_avx2): word, digit, [0-9a-f], a byte no key holds, a/A/r/R. */
TARGET_AVX2 static ALWAYS_INLINE void err_cls32(__m256i x, uint32_t *wm, uint32_t *dm, uint32_t *hm, uint32_t *bm,
                                                uint32_t *gm) {
    const __m256i c0 = _mm256_set1_epi8('0'), c9 = _mm256_set1_epi8(9), ca = _mm256_set1_epi8('a');
    const __m256i c25 = _mm256_set1_epi8(25), c5 = _mm256_set1_epi8(5), c20 = _mm256_set1_epi8(0x20);
    const __m256i c5e = _mm256_set1_epi8(0x5e), us = _mm256_set1_epi8('_');
    const __m256i dq = _mm256_set1_epi8('"'), sq = _mm256_set1_epi8('\''), lr = _mm256_set1_epi8('r');
    __m256i d = _mm256_sub_epi8(x, c0);
    __m256i isd = _mm256_cmpeq_epi8(_mm256_min_epu8(d, c9), d);
    __m256i low = _mm256_or_si256(x, c20);  /* (only A and R fold onto a and r among the bytes G reads) */
    __m256i a = _mm256_sub_epi8(low, ca);
    __m256i alpha = _mm256_cmpeq_epi8(_mm256_min_epu8(a, c25), a);
    __m256i l = _mm256_sub_epi8(x, ca);
    __m256i hexl = _mm256_cmpeq_epi8(_mm256_min_epu8(l, c5), l);
    __m256i pr = _mm256_sub_epi8(x, c20);
    __m256i printable = _mm256_cmpeq_epi8(_mm256_min_epu8(pr, c5e), pr);
    __m256i quote = _mm256_or_si256(_mm256_cmpeq_epi8(x, dq), _mm256_cmpeq_epi8(x, sq));
    *wm = (uint32_t)_mm256_movemask_epi8(_mm256_or_si256(_mm256_or_si256(isd, alpha), _mm256_cmpeq_epi8(x, us)));
    *dm = (uint32_t)_mm256_movemask_epi8(isd);
    *hm = (uint32_t)_mm256_movemask_epi8(_mm256_or_si256(isd, hexl));
    *bm = ~(uint32_t)_mm256_movemask_epi8(printable) | (uint32_t)_mm256_movemask_epi8(quote);
    *gm = (uint32_t)_mm256_movemask_epi8(_mm256_or_si256(_mm256_cmpeq_epi8(low, ca), _mm256_cmpeq_epi8(low, lr)));
}

/* The classes of the k bytes at t (0 < k <= 32; the line starts at s, ends at t + k): a load that ends at the
 * line's end when the line has 32 bytes (its bits shifted down), else the bytes copied into a block of zeros. */
TARGET_AVX2 static ALWAYS_INLINE void err_cls_part(const unsigned char *s, const unsigned char *t, Py_ssize_t k,
                                                   uint32_t *wm, uint32_t *dm, uint32_t *hm, uint32_t *bm,
                                                   uint32_t *gm) {
    if (k == 32) {
        err_cls32(_mm256_loadu_si256((const __m256i *)t), wm, dm, hm, bm, gm);
    } else if (t + k - 32 >= s) {
        int sh = (int)(32 - k);
        err_cls32(_mm256_loadu_si256((const __m256i *)(t + k - 32)), wm, dm, hm, bm, gm);
        *wm >>= sh;
        *dm >>= sh;
        *hm >>= sh;
        *bm >>= sh;
        *gm >>= sh;
    } else {
        unsigned char tail[32];
        memset(tail, 0, sizeof tail);
        memcpy(tail, t, (size_t)k);
        err_cls32(_mm256_loadu_si256((const __m256i *)tail), wm, dm, hm, bm, gm);
        *bm &= (1u << k) - 1;  /* (the zeros are bad bytes) */
    }
}

/* The same, 64 bytes a step (the last ones read by a load that ends at the line's end: err_cls_part). */
TARGET_AVX2 static ALWAYS_INLINE int err_masks_avx2_body(const unsigned char *s, Py_ssize_t n, uint64_t *W,
                                                         uint64_t *D, uint64_t *H, uint64_t *G) {
    uint32_t bad = 0, w0, d0, h0, b0, g0, w1 = 0, d1 = 0, h1 = 0, b1 = 0, g1 = 0;
    Py_ssize_t b = 0;
    for (; (b + 1) * 64 <= n; b++) {
        const unsigned char *t = s + b * 64;
        err_cls32(_mm256_loadu_si256((const __m256i *)t), &w0, &d0, &h0, &b0, &g0);
        err_cls32(_mm256_loadu_si256((const __m256i *)(t + 32)), &w1, &d1, &h1, &b1, &g1);
        W[b] = (uint64_t)w0 | (uint64_t)w1 << 32;
        D[b] = (uint64_t)d0 | (uint64_t)d1 << 32;
        H[b] = (uint64_t)h0 | (uint64_t)h1 << 32;
        G[b] = (uint64_t)g0 | (uint64_t)g1 << 32;
        bad |= b0 | b1;
    }
    Py_ssize_t e = n - b * 64;
    if (e > 0) {
        const unsigned char *t = s + b * 64;
        err_cls_part(s, t, e < 32 ? e : 32, &w0, &d0, &h0, &b0, &g0);
        w1 = d1 = h1 = b1 = g1 = 0;
        if (e > 32) err_cls_part(s, t + 32, e - 32, &w1, &d1, &h1, &b1, &g1);
        W[b] = (uint64_t)w0 | (uint64_t)w1 << 32;
        D[b] = (uint64_t)d0 | (uint64_t)d1 << 32;
        H[b] = (uint64_t)h0 | (uint64_t)h1 << 32;
        G[b] = (uint64_t)g0 | (uint64_t)g1 << 32;
        bad |= b0 | b1;
    }
    return bad != 0;
}
TARGET_AVX2 static int err_masks_avx2(const unsigned char *s, Py_ssize_t n, uint64_t *W, uint64_t *D, uint64_t *H,
                                      uint64_t *G) {
    return err_masks_avx2_body(s, n, W, D, H, G);
}
#endif

#if HAVE_AVX512_PATH
/* The same, 64 bytes a step into mask registers (the last ones read through a mask: zeros past the line). */
TARGET_AVX512 static ALWAYS_INLINE int err_masks_avx512_body(const unsigned char *s, Py_ssize_t n, uint64_t *W,
                                                             uint64_t *D, uint64_t *H, uint64_t *G) {
    const __m512i c0 = _mm512_set1_epi8('0'), c10 = _mm512_set1_epi8(10), ca = _mm512_set1_epi8('a');
    const __m512i c26 = _mm512_set1_epi8(26), c6 = _mm512_set1_epi8(6), c20 = _mm512_set1_epi8(0x20);
    const __m512i c5f = _mm512_set1_epi8(0x5f), us = _mm512_set1_epi8('_'), dq = _mm512_set1_epi8('"');
    const __m512i sq = _mm512_set1_epi8('\''), lr = _mm512_set1_epi8('r');
    uint64_t bad = 0;
    for (Py_ssize_t b = 0; b * 64 < n; b++) {
        Py_ssize_t e = n - b * 64 < 64 ? n - b * 64 : 64;
        __mmask64 in = e == 64 ? ~0ULL : (1ULL << e) - 1;
        __m512i x = _mm512_maskz_loadu_epi8(in, s + b * 64);
        __m512i low = _mm512_or_si512(x, c20);
        __mmask64 d = _mm512_cmplt_epu8_mask(_mm512_sub_epi8(x, c0), c10);
        __mmask64 alpha = _mm512_cmplt_epu8_mask(_mm512_sub_epi8(low, ca), c26);
        __mmask64 hexl = _mm512_cmplt_epu8_mask(_mm512_sub_epi8(x, ca), c6);
        __mmask64 pr = _mm512_cmplt_epu8_mask(_mm512_sub_epi8(x, c20), c5f);
        __mmask64 quote = _mm512_cmpeq_epi8_mask(x, dq) | _mm512_cmpeq_epi8_mask(x, sq);
        W[b] = d | alpha | _mm512_cmpeq_epi8_mask(x, us);
        D[b] = d;
        H[b] = d | hexl;
        G[b] = _mm512_cmpeq_epi8_mask(low, ca) | _mm512_cmpeq_epi8_mask(low, lr);  /* (only A and R fold onto a, r) */
        bad |= (~pr | quote) & in;
    }
    return bad != 0;
}
TARGET_AVX512 static int err_masks_avx512(const unsigned char *s, Py_ssize_t n, uint64_t *W, uint64_t *D, uint64_t *H,
                                          uint64_t *G) {
    return err_masks_avx512_body(s, n, W, D, H, G);
}
#endif

static int err_masks(const unsigned char *s, Py_ssize_t n, uint64_t *W, uint64_t *D, uint64_t *H, uint64_t *G) {
#if HAVE_AVX512_PATH
    if (path == P_AVX512) return err_masks_avx512(s, n, W, D, H, G);
#endif
#if HAVE_AVX2_PATH
    if (path != P_SCALAR) return err_masks_avx2(s, n, W, D, H, G);
#endif
    return err_masks_scalar(s, n, W, D, H, G);
}

static ALWAYS_INLINE int err_ctz(uint64_t x) {  /* x != 0 */
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(x);
#else
    int k = 0;
    while (!(x & 1)) { x >>= 1; k++; }
    return k;
#endif
}

static ALWAYS_INLINE int err_clz(uint64_t x) {  /* x != 0 */
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_clzll(x);
#else
    int k = 0;
    while (!(x >> 63)) { x <<= 1; k++; }
    return k;
#endif
}

/* The first offset in [p, n) whose bit in M (each word xor `flip`: ~0 finds a clear bit) is set, else n. */
static ALWAYS_INLINE Py_ssize_t err_next(const uint64_t *M, Py_ssize_t p, Py_ssize_t n, uint64_t flip) {
    if (p >= n) return n;
    Py_ssize_t b = p >> 6;
    uint64_t x = (M[b] ^ flip) & (~0ULL << (p & 63));
    while (!x) {
        if (++b << 6 >= n) return n;
        x = M[b] ^ flip;
    }
    Py_ssize_t i = (b << 6) + err_ctz(x);
    return i < n ? i : n;
}

/* len bytes from s to o; o has room for as many bytes as s has from s on (end: the end of s's bytes) */
static ALWAYS_INLINE void err_copy(unsigned char *o, const unsigned char *s, Py_ssize_t len, const unsigned char *end) {
    if (s + len + 15 <= end) {  /* 16 bytes a step, no call (the bytes past len are written again after) */
        for (Py_ssize_t k = 0; k < len; k += 16) memcpy(o + k, s + k, 16);
    } else memcpy(o, s, (size_t)len);
}

/* (masks: how the masks are made: err_masks, or err_masks_avx2_body, inlined into a build for AVX2) */
typedef int (*ErrMasksFn)(const unsigned char *, Py_ssize_t, uint64_t *, uint64_t *, uint64_t *, uint64_t *);
typedef void (*ErrCopyFn)(unsigned char *, const unsigned char *, Py_ssize_t, const unsigned char *);
#if HAVE_AVX512_PATH && !defined(__clang__)
/* err_copy through a mask: the last 1-64 bytes read and written as they are, no byte past them */
TARGET_AVX512 static ALWAYS_INLINE void err_copy512(unsigned char *o, const unsigned char *s, Py_ssize_t len,
                                                   const unsigned char *end) {
    (void)end;
    for (; len > 64; len -= 64, o += 64, s += 64) _mm512_storeu_si512((void *)o, _mm512_loadu_si512((const void *)s));
    __mmask64 m = len == 64 ? ~0ULL : (1ULL << len) - 1;
    _mm512_mask_storeu_epi8((void *)o, m, _mm512_maskz_loadu_epi8(m, s));
}
#endif
/* A line of up to ERR_FAST_MAX bytes whose words the key masks are all of three kinds is keyed without a branch a word
 * (err_fast512): its bits as one 128-bit number, each word's properties found at the bit after it by a carry through
 * its bytes (as err_key_body finds the words it may mask), moved to its first byte by their order among the words
 * (pext, pdep: the k-th word's end is the k-th end, its start the k-th start), spread over its bytes by a carry again,
 * and the key made of the line's bytes at once (the marks written, the bytes a number drops left out: vpcompressb).
 * The kinds: a number standing alone shorter than a hex token (`1`), a hex token (every byte `a`, or `1` when all
 * are digits; the first `1` when one is), any other word holding a digit (each digit `1`). A line that may hold
 * another mark or a gate is left to err_key_body's loop (-2): more than four `0x` words, `//` (the gate `1//0`),
 * a/A/r/R followed by a digit in a word
 * of the third kind (the gates `ya29`, `r8_`, `gr1348941`), more than two words of 8 hex digits followed by `-`,
 * more than four words of digits followed by `.` and a digit; so is a gated key. A UUID (8-4-4-4-12 hex digits) is
 * one mark, an address (and its port) another, a fraction `1.1`, a `0x` handle `\0x` and a letter a digit, as in
 * the loop, found by its tests on the bytes.
 * The same bytes as the loop's, or -2. */
#define ERR_FAST_MAX 127
typedef unsigned __int128 ErrU128;
typedef Py_ssize_t (*ErrFastFn)(const unsigned char *, Py_ssize_t, unsigned char *, const uint64_t *, const uint64_t *,
                                const uint64_t *, const uint64_t *);
static ALWAYS_INLINE Py_ssize_t err_fast_none(const unsigned char *s, Py_ssize_t n, unsigned char *o, const uint64_t *W,
                                              const uint64_t *D, const uint64_t *H, const uint64_t *G) {
    (void)s; (void)n; (void)o; (void)W; (void)D; (void)H; (void)G;
    return -2;
}
#if HAVE_AVX512_PATH && !defined(__clang__)  /* (as err_key_bmi: the build err_key_512 is one of) */
#define TARGET_FAST __attribute__((target("avx2,avx512f,avx512bw,avx512vbmi,avx512vbmi2,bmi,bmi2,popcnt")))
/* ERR_PUNCT's bits: what err_fast512 reads of a byte beside the classes err_masks makes */
enum { EP_APART = 1, EP_DOT = 2, EP_DASH = 4, EP_SLASH = 8, EP_ZERO = 16, EP_X = 32, EP_UHEX = 64 };
static uint8_t ERR_PUNCT[128];
static void err_punct_init(void) {
    for (int c = 0; c < 128; c++) {
        uint8_t k = 0;
        if (c && strchr(" ()[]{}=,;/#<>!?|*&%", c)) k |= EP_APART;  /* (err_apart's bytes) */
        if (c == '.') k |= EP_DOT;
        if (c == '-') k |= EP_DASH;
        if (c == '/') k |= EP_SLASH;
        if (c == '0') k |= EP_ZERO;
        if (c == 'x') k |= EP_X;
        if (c >= 'A' && c <= 'F') k |= EP_UHEX;
        ERR_PUNCT[c] = k;
    }
}
/* The bytes of the words (W, starts S, the bits after them E) whose bit after is in F. */
TARGET_FAST static ALWAYS_INLINE ErrU128 err_spread(ErrU128 F, ErrU128 E, ErrU128 S, ErrU128 W) {
    uint64_t e0 = (uint64_t)E, s0 = (uint64_t)S;
    /* (n <= 127: at most 32 words end or start in the low 64 bits, 64 in all) */
    uint64_t seq = _pext_u64((uint64_t)F, e0) | (_pext_u64((uint64_t)(F >> 64), (uint64_t)(E >> 64)) << _mm_popcnt_u64(e0));
    uint64_t lo = _pdep_u64(seq, s0), hi = _pdep_u64(seq >> _mm_popcnt_u64(s0), (uint64_t)(S >> 64));
    ErrU128 st = (ErrU128)lo | (ErrU128)hi << 64;
    return W & ~(W + st);
}
TARGET_FAST static ALWAYS_INLINE Py_ssize_t err_fast512(const unsigned char *s, Py_ssize_t n, unsigned char *o,
                                                       const uint64_t *Wb, const uint64_t *Db, const uint64_t *Hb,
                                                       const uint64_t *Gb) {
    if (n > ERR_FAST_MAX || n < 1) return -2;
    int two = n > 64;
    ErrU128 W = (ErrU128)Wb[0] | (two ? (ErrU128)Wb[1] << 64 : 0);
    ErrU128 D = (ErrU128)Db[0] | (two ? (ErrU128)Db[1] << 64 : 0);
    ErrU128 H = (ErrU128)Hb[0] | (two ? (ErrU128)Hb[1] << 64 : 0);
    ErrU128 G = (ErrU128)Gb[0] | (two ? (ErrU128)Gb[1] << 64 : 0);
    __mmask64 m0 = n >= 64 ? ~0ULL : (1ULL << n) - 1, m1 = n > 64 ? (1ULL << (n - 64)) - 1 : 0;
    __m512i v0 = _mm512_maskz_loadu_epi8(m0, s), v1 = _mm512_maskz_loadu_epi8(m1, s + 64);
    const __m512i plo = _mm512_loadu_si512((const void *)ERR_PUNCT), phi = _mm512_loadu_si512((const void *)(ERR_PUNCT + 64));
    __m512i c0 = _mm512_permutex2var_epi8(plo, v0, phi), c1 = _mm512_permutex2var_epi8(plo, v1, phi);  /* (ASCII) */
#define ERR_P(bit) ((ErrU128)_mm512_test_epi8_mask(c0, _mm512_set1_epi8(bit)) \
                    | (ErrU128)_mm512_test_epi8_mask(c1, _mm512_set1_epi8(bit)) << 64)
    ErrU128 AP = ERR_P(EP_APART), DOT = ERR_P(EP_DOT), SL = ERR_P(EP_SLASH);
    ErrU128 WS = W & ~(W << 1), E = ~W & (W << 1);  /* the words' first bytes; the bits after their last */
    /* the lines left to the loop */
    if (SL & (SL >> 1)) return -2;
    ErrU128 one = 1, OX = WS & ERR_P(EP_ZERO) & (ERR_P(EP_X) >> 1), UHX = ERR_P(EP_UHEX);
    ErrU128 R8 = W & (W >> 1), R9, R12;  /* bytes that start a run of 8, 9, 12 word bytes */
    R8 &= R8 >> 2;
    R8 &= R8 >> 4;
    R9 = R8 & (W >> 8);
    R12 = R8 & (R8 >> 4);
#define ERR_NONE(X) ((((W & ~(X)) + WS)) & E)  /* the bits after the words holding no byte of X */
    ErrU128 DWa = E & ~ERR_NONE(D), AHa = ERR_NONE(~H), ADa = ERR_NONE(~D);
    ErrU128 L8a = E & ~ERR_NONE(R8), L9a = E & ~ERR_NONE(R9), L12a = E & ~ERR_NONE(R12);
#undef ERR_NONE
    /* UUIDs: a word of 8 hex digits, `-`, ... (err_key_body's test, on the bits); at most two looked at */
    ErrU128 CAND = AHa & L8a & ~L9a & ERR_P(EP_DASH), UR = 0, U1 = 0, UA = 0, X0 = 0, XU = 0;
#undef ERR_P
    for (int k = 0; CAND; k++) {
        if (k == 2) return -2;
        uint64_t lo = (uint64_t)CAND;
        int e = lo ? err_ctz(lo) : 64 + err_ctz((uint64_t)(CAND >> 64));
        CAND &= CAND - 1;
        int p = e - 8;
        if ((UR >> p) & 1) continue;  /* within a UUID already */
        const uint64_t m36 = (1ULL << 36) - 1;
        uint64_t w = (uint64_t)(W >> p) & m36, h = (uint64_t)(H >> p) & m36, db = (uint64_t)(D >> p) & m36;
        if (p + 36 > n || w != UUID_HEX || (h & UUID_HEX) != UUID_HEX || ((W >> (p + 36)) & 1)) continue;
        if (s[p + 8] != '-' || s[p + 13] != '-' || s[p + 18] != '-' || s[p + 23] != '-') continue;
        ErrU128 at = (ErrU128)UUID_HEX << p, first = one << p;
        UR |= (ErrU128)m36 << p;
        if (UUID_HEX & ~db) {  /* a letter: `a`, the first `1` when a digit is there */
            UA |= at & ~first;
            if (db) U1 |= first;
            else UA |= first;
        } else U1 |= at;
    }
    ErrU128 PAa = (W + (WS & ((AP << 1) | one))) & E;  /* a word whose byte before stands it apart (or none) */
    ErrU128 NAa = E & (AP | (one << n));               /* ... whose byte after does (or none) */
    ErrU128 HTa = AHa & (L12a | (L8a & DWa));          /* hex tokens */
    ErrU128 NUa = ADa & ~L8a & PAa & NAa;              /* numbers standing alone */
    ErrU128 MXa = DWa & ~HTa & ~NUa;                   /* other words holding a digit */
    /* `0x` handles: a word of `0x` and hex digits (either case); at most four looked at */
    for (int k = 0; OX; k++) {
        if (k == 4) return -2;
        uint64_t lo = (uint64_t)OX;
        int p = lo ? err_ctz(lo) : 64 + err_ctz((uint64_t)(OX >> 64));
        OX &= OX - 1;
        ErrU128 after = (W + (one << p)) & E;  /* the bit after the word */
        uint64_t al = (uint64_t)after;
        int q = al ? err_ctz(al) : 64 + err_ctz((uint64_t)(after >> 64));
        if (q - p < 3) continue;
        ErrU128 r = ((one << q) - 1) & ~((one << p) - 1), digs = r & ~((one << (p + 2)) - 1);
        if (digs & ~(H | UHX)) continue;  /* not all hex digits: a word holding a digit */
        UR |= r;
        X0 |= one << p;
        XU |= digs & UHX;
        UA |= digs & ~UHX;
    }
    /* Addresses and fractions: a word of digits followed by `.` and a digit, in order (err_key_body's tests, on the
     * bytes); at most four looked at */
    ErrU128 C2 = E & ADa & DOT & (D >> 1), R2 = 0, X1 = 0, DR = 0;
    for (int k = 0; C2; k++) {
        if (k == 4) return -2;
        uint64_t lo = (uint64_t)C2;
        Py_ssize_t q = lo ? err_ctz(lo) : 64 + err_ctz((uint64_t)(C2 >> 64));
        C2 &= C2 - 1;
        ErrU128 before = WS & ((one << q) - 1);  /* its first byte: the last word start before q */
        uint64_t bh = (uint64_t)(before >> 64);
        Py_ssize_t p = bh ? 127 - err_clz(bh) : 63 - err_clz((uint64_t)before), L = q - p;
        if (((UR | R2) >> p) & 1) continue;  /* within a mark already */
        if (L <= 3 && (p == 0 || s[p - 1] != '.')) {  /* an address (the byte before is no word's) */
            Py_ssize_t kk = err_addr_end(s, n, q);
            if (kk >= 0) {
                ErrU128 r = ((one << kk) - 1) & ~((one << p) - 1);
                R2 |= r;
                X1 |= one << p;
                DR |= r & ~(one << p);
                continue;
            }
        }
        if (L < 8 && (p == 0 || err_apart(s[p - 1]))) {  /* a fraction (8 digits or more: a hex token first) */
            Py_ssize_t f = q + 1;
            while (f < n && err_digit(s[f])) f++;
            if (f - q - 1 <= 11 && (f == n || err_apart(s[f]))) {
                ErrU128 r = ((one << f) - 1) & ~((one << p) - 1);
                R2 |= r;
                U1 |= (one << p) | (one << (q + 1));
                DR |= r & ~((one << p) | (one << q) | (one << (q + 1)));
            }
        }
    }
    if (R2 & UR) return -2;  /* (an address's port of 8 hex digits before a `-`: the loop's order decides) */
    UR |= R2;
    ErrU128 NU = err_spread(NUa, E, WS, W) & ~UR, MX = err_spread(MXa, E, WS, W) & ~UR;
    ErrU128 HT = err_spread(HTa, E, WS, W) & ~UR;
    ErrU128 HTD = err_spread(HTa & ADa, E, WS, W) & ~UR, HT1 = WS & err_spread(HTa & DWa, E, WS, W) & ~UR;
    if (G & (D >> 1) & MX) return -2;  /* a letter of a gate beside a digit the loop would read */
    ErrU128 ONE = (NU & WS) | (MX & D) | HTD | HT1 | U1, AA = (HT & ~ONE) | UA;
    ErrU128 keep = ~((NU & ~WS) | DR);
    const __m512i c1s = _mm512_set1_epi8('1'), cas = _mm512_set1_epi8('a');
    v0 = _mm512_mask_mov_epi8(_mm512_mask_mov_epi8(v0, (__mmask64)ONE, c1s), (__mmask64)AA, cas);
    v1 = _mm512_mask_mov_epi8(_mm512_mask_mov_epi8(v1, (__mmask64)(ONE >> 64), c1s), (__mmask64)(AA >> 64), cas);
    if (X0) {
        v0 = _mm512_mask_mov_epi8(_mm512_mask_mov_epi8(v0, (__mmask64)X0, _mm512_setzero_si512()), (__mmask64)XU,
                                  _mm512_set1_epi8('A'));
        v1 = _mm512_mask_mov_epi8(_mm512_mask_mov_epi8(v1, (__mmask64)(X0 >> 64), _mm512_setzero_si512()),
                                  (__mmask64)(XU >> 64), _mm512_set1_epi8('A'));
    }
    if (X1) {
        v0 = _mm512_mask_mov_epi8(v0, (__mmask64)X1, _mm512_set1_epi8(1));
        v1 = _mm512_mask_mov_epi8(v1, (__mmask64)(X1 >> 64), _mm512_set1_epi8(1));
    }
    __mmask64 k0 = (__mmask64)keep & m0, k1 = (__mmask64)(keep >> 64) & m1;
    Py_ssize_t j0 = (Py_ssize_t)_mm_popcnt_u64(k0), j1 = (Py_ssize_t)_mm_popcnt_u64(k1);
    _mm512_mask_storeu_epi8((void *)o, j0 == 64 ? ~0ULL : (1ULL << j0) - 1, _mm512_maskz_compress_epi8(k0, v0));
    if (j1) _mm512_mask_storeu_epi8((void *)(o + j0), (1ULL << j1) - 1, _mm512_maskz_compress_epi8(k1, v1));
    return j0 + j1;
}
#endif

static ALWAYS_INLINE Py_ssize_t err_key_body(const unsigned char *s, Py_ssize_t n, unsigned char *o, int gated,
                                             ErrMasksFn masks, ErrCopyFn copy,
                                             ErrFastFn fast) {
    if (n > ERR_LINE_MAX) return -1;
    Py_ssize_t j = 0;
    if (!ERR_CLS['a']) err_cls_init();
    uint64_t W[ERR_BLOCKS + 1], D[ERR_BLOCKS], H[ERR_BLOCKS], G[ERR_BLOCKS], ME[ERR_BLOCKS + 1];
    if (masks(s, n, W, D, H, G)) return -1;  /* a byte no key holds */
    if (!gated) {
        Py_ssize_t f = fast(s, n, o, W, D, H, G);
        if (f >= 0) return f;
    }
    Py_ssize_t nb = (n + 63) >> 6;
    W[nb] = 0;
    /* The words the key may mask (a word: [A-Za-z0-9_]+; it may be masked when it holds a digit or 8 hex digits in a
     * row: I), found at once rather than one after the other: ME, the bit after each such word's last byte. Adding
     * each word's first bit to its bytes without I carries through a word that holds none (out of its last byte,
     * onto a byte no word holds) and stops inside one that does, so such words are those whose end no carry left.
     * The words are then taken in order, each one's first byte found back from its end (a word's bits only: the
     * chain of one word's work no longer waits on the search for the next). */
    uint64_t cw = 0, cy = 0;  /* the bit of W before the block's first; the sum's carry into the block */
    for (Py_ssize_t b = 0; b <= nb; b++) {
        uint64_t w = W[b], i = 0;
        if (b < nb) {  /* the bytes a word the key may mask holds: a digit, 8 hex digits in a row */
            uint64_t h = H[b], hn = b + 1 < nb ? H[b + 1] : 0;  /* bit i: bits i..i+7 of (hn:h) all set, by doubling */
            uint64_t a1 = h & ((h >> 1) | (hn << 63)), a1n = hn & (hn >> 1);
            uint64_t a2 = a1 & ((a1 >> 2) | (a1n << 62)), a2n = a1n & (a1n >> 2);
            i = D[b] | (a2 & ((a2 >> 4) | (a2n << 60)));
        }
        uint64_t prev = (w << 1) | cw;
        uint64_t ws = w & ~prev, we = ~w & prev;  /* words' first bits; the bits after their last */
        uint64_t a = w & ~i, t = a + ws, t2 = t + cy;
        cy = (uint64_t)(t < a) | (uint64_t)(t2 < t);
        ME[b] = we & ~(t2 & ~w);  /* (a carry out of a word lands on the bit after it) */
        cw = w >> 63;
    }
    Py_ssize_t p = 0, mb = 0;
    uint64_t mx = ME[0];
    for (;;) {
        while (!mx && mb < nb) mx = ME[++mb];
        if (!mx) break;
        Py_ssize_t q = (mb << 6) + err_ctz(mx);  /* the end of the next word that may be masked */
        mx &= mx - 1;
        Py_ssize_t b = (q - 1) >> 6;  /* back to its first byte */
        uint64_t x = ~W[b] & ((1ULL << ((q - 1) & 63)) - 1);
        while (!x && b > 0) x = ~W[--b];
        Py_ssize_t p0 = x ? (b << 6) + 64 - err_clz(x) : 0;
        if (p0 < p) continue;  /* within a mark made already (a UUID's, an address's, a fraction's: they end a word) */
        /* the bytes up to it, as they are (a key is never longer than the bytes it was made of, so o has room for
         * what s has left) */
        if (p0 > p) {
            copy(o + j, s + p, p0 - p, s + n);
            j += p0 - p;
        }
        p = p0;
        unsigned char c = s[p];
        int anyd, allhex, alldig, gate;
        if ((p >> 6) == ((q - 1) >> 6)) {  /* a word within one word of bits (most): its bits at once */
            Py_ssize_t b = p >> 6;
            uint64_t rm = (q - p == 64 ? ~0ULL : (1ULL << (q - p)) - 1) << (p & 63);
            anyd = (D[b] & rm) != 0;
            allhex = (H[b] & rm) == rm;
            alldig = (D[b] & rm) == rm;
            gate = (G[b] & rm) != 0;
        } else {
            anyd = err_next(D, p, q, 0) < q;
            allhex = err_next(H, p, q, ~0ULL) == q;
            alldig = anyd && err_next(D, p, q, ~0ULL) == q;
            gate = err_next(G, p, q, 0) < q;
        }
        if (!anyd && !(allhex && q - p >= 8)) {  /* no digit, no token: as it is */
            copy(o + j, s + p, q - p, s + n);
            j += q - p;
            p = q;
            continue;
        }
        Py_ssize_t L = q - p;
        if (alldig && L < 8 && !gated && (p == 0 || err_apart(s[p - 1])) && (q == n || err_apart(s[q]))) {
            /* a number standing alone, the commonest word masked, first: none of the marks below takes it (no `x`,
             * shorter than a hex token, no `-` or `.` after it for a UUID or an address), as the branch below */
            if (err_slash_gate(s, n, p, q)) return -1;
            o[j++] = '1';
            p = q;
            continue;
        }
        if (L >= 3 && c == '0' && s[p + 1] == 'x') {  /* 0x + hex digits */
            Py_ssize_t k = p + 2;
            while (k < q && err_hex(s[k])) k++;
            if (k == q) {
                o[j++] = 0;
                o[j++] = 'x';
                for (k = p + 2; k < q; k++) o[j++] = s[k] >= 'A' && s[k] <= 'F' ? 'A' : 'a';  /* (finer: see masked.py) */
                p = q;
                continue;
            }
        }
        if (allhex && L == 8 && p + 36 <= n && (p + 36 == n || !err_wordc(s[p + 36]))  /* a UUID */
            && (err_bits(H, p, 36, nb) & UUID_HEX) == UUID_HEX
            && s[p + 8] == '-' && s[p + 13] == '-' && s[p + 18] == '-' && s[p + 23] == '-') {
            uint64_t db = err_bits(D, p, 36, nb);  /* its mask, as template._whole makes it */
            int let = (UUID_HEX & ~db) != 0;
            memset(o + j, let ? 'a' : '1', 36);
            o[j + 8] = o[j + 13] = o[j + 18] = o[j + 23] = '-';
            if (let) o[j] = db ? '1' : 'a';
            j += 36;
            p += 36;
            continue;
        }
        if (allhex && (L >= 12 || (L >= 8 && anyd))) {  /* [0-9a-f]{12,}, or 8-11 with a digit (and a letter) */
            memset(o + j, alldig ? '1' : 'a', (size_t)L);  /* (template._whole) */
            if (!alldig) o[j] = anyd ? '1' : 'a';
            j += L;
            p = q;
            continue;
        }
        if (!gated && alldig && L <= 3 && (p == 0 || (!err_wordc(s[p - 1]) && s[p - 1] != '.'))) {
            /* an address (template.MASKS: `\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b`, all of it `<ip>`): one mark,
             * whatever its digits; where the address ends otherwise (`.`, a word), the digits are kept */
            Py_ssize_t k = err_addr_end(s, n, q);
            if (k >= 0) {
                if (err_slash_gate(s, n, p, k)) return -1;
                o[j++] = 1;
                p = k;
                continue;
            }
        }
        if (!gated && alldig && L <= 11 && (p == 0 || err_apart(s[p - 1]))) {  /* a number standing alone */
            if (q == n || err_apart(s[q])) {
                if (err_slash_gate(s, n, p, q)) return -1;
                o[j++] = '1';
                p = q;
                continue;
            }
            if (s[q] == '.' && q + 1 < n && err_digit(s[q + 1])) {
                Py_ssize_t f = q + 1;
                while (f < n && err_digit(s[f])) f++;
                if (f - q - 1 <= 11 && (f == n || err_apart(s[f]))) {  /* `1.1`: finer than the shape (masked.py) */
                    if (err_slash_gate(s, n, p, f)) return -1;
                    o[j++] = '1';
                    o[j++] = '.';
                    o[j++] = '1';
                    p = f;
                    continue;
                }
            }
        }
        if (!gate && (q == n || s[q] != '/') && (p == 0 || s[p - 1] != '/')) {
            /* no gate can hold a digit of the word (its letters beside a digit: a or A, r or R; `1//0`: a slash
             * after or before it): every digit is `1`, no branch a byte */
            for (Py_ssize_t k = p; k < q; k++) o[j++] = err_digit(s[k]) ? '1' : s[k];
            p = q;
            continue;
        }
        for (Py_ssize_t k = p; k < q; k++) {
            unsigned char d = s[k];
            if (err_digit(d)) {  /* the gates that hold a digit */
                if ((d == '1' && k + 3 < n && s[k + 1] == '/' && s[k + 2] == '/' && s[k + 3] == '0')
                    || (d == '2' && k >= 2 && s[k + 1 < n ? k + 1 : k] == '9' && err_ci(s, n, k - 2, "ya29"))
                    || (d == '8' && k >= 1 && (s[k - 1] | 0x20) == 'r' && err_ci(s, n, k - 1, "r8_"))
                    || (d == '1' && k >= 2 && (s[k - 1] | 0x20) == 'r' && err_ci(s, n, k - 2, "gr1348941")))
                    return -1;
                d = '1';
            }
            o[j++] = d;
        }
        p = q;
    }
    if (p < n) {  /* the bytes after the last word masked, as they are */
        copy(o + j, s + p, n - p, s + n);
        j += n - p;
    }
    return j;
}

/* err_key_body compiled twice: for any x86-64, and with AVX2 and BMI1/BMI2 (one-uop variable shifts, tzcnt; the
 * masks' bit tricks are most of its work; the masks made inline), taken on a CPU that has them (err_bmi, set at
 * import) when the scan takes a SIMD path. Same bytes out either way. */
#if HAVE_AVX2_PATH && !defined(__clang__)
#define HAVE_BMI_KEY 1
__attribute__((target("avx2,bmi,bmi2,popcnt"))) static Py_ssize_t err_key_bmi(const unsigned char *s, Py_ssize_t n,
                                                                               unsigned char *o, int gated) {
    return err_key_body(s, n, o, gated, err_masks_avx2_body, err_copy, err_fast_none);
}
#if HAVE_AVX512_PATH
TARGET_FAST static Py_ssize_t
err_key_512(const unsigned char *s, Py_ssize_t n, unsigned char *o, int gated) {
    return err_key_body(s, n, o, gated, err_masks_avx512_body, err_copy512, err_fast512);
}
#endif
static int err_bmi = -1;  /* the CPU has BMI1 and BMI2: 1; not known yet: -1 */
static int err_vbmi2;     /* ... and AVX-512 VBMI2 (err_key_512) */
#else
#define HAVE_BMI_KEY 0
#endif
static Py_ssize_t err_key_plain(const unsigned char *s, Py_ssize_t n, unsigned char *o, int gated) {
    return err_key_body(s, n, o, gated, err_masks, err_copy, err_fast_none);
}
static Py_ssize_t err_key(const unsigned char *s, Py_ssize_t n, unsigned char *o, int gated) {
#if HAVE_BMI_KEY
    if (err_bmi < 0) {
        __builtin_cpu_init();
        err_bmi = __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
#if HAVE_AVX512_PATH
        err_vbmi2 = __builtin_cpu_supports("avx512vbmi2");
        err_punct_init();
#endif
    }
#if HAVE_AVX512_PATH
    if (err_bmi && err_vbmi2 && path == P_AVX512) return err_key_512(s, n, o, gated);
#endif
    if (err_bmi && path != P_SCALAR) return err_key_bmi(s, n, o, gated);
#endif
    return err_key_plain(s, n, o, gated);
}

#define ERR_MIX(h, w) ((h) = ((h) ^ (w)) * 0x9E3779B97F4A7C15ULL, (h) ^= (h) >> 29)
/* (err_hash's body: inlined where a line taken whole is looked up, err_run_512) */
static ALWAYS_INLINE uint64_t err_hash_body(const unsigned char *k, Py_ssize_t n) {  /* 32 bytes a step in four lanes (a key is ~100) */
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)n, h1 = 0xC2B2AE3D27D4EB4FULL, h2 = 0x165667B19E3779F9ULL,
             h3 = 0x27D4EB2F165667C5ULL, w;
    Py_ssize_t i = 0;
    for (; i + 32 <= n; i += 32) {
        uint64_t w1, w2, w3;
        memcpy(&w, k + i, 8);
        memcpy(&w1, k + i + 8, 8);
        memcpy(&w2, k + i + 16, 8);
        memcpy(&w3, k + i + 24, 8);
        ERR_MIX(h, w);
        ERR_MIX(h1, w1);
        ERR_MIX(h2, w2);
        ERR_MIX(h3, w3);
    }
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, k + i, 8);
        ERR_MIX(h, w);
    }
    if (i < n) {  /* the last 1-7 bytes in one word: the 8 that end the key, or the key alone when shorter */
        w = 0;
        if (n >= 8) memcpy(&w, k + n - 8, 8);
        else memcpy(&w, k, (size_t)n);
        ERR_MIX(h1, w);
    }
    ERR_MIX(h, h1);
    ERR_MIX(h, h2 ^ (h3 << 1));
    return h | 1;
}
static uint64_t err_hash(const unsigned char *k, Py_ssize_t n) { return err_hash_body(k, n); }

/* A line's header (`[2026-05-24 00:50:01 DP0 TP0] `: up to the first `] `) is most of the digits err_key reads, and
 * a log's lines repeat it but for its digits. Its key is the key of the header alone (what follows `] ` is not read
 * to key it, nor is it read from there on: a space and a bracket end every word and mark), and it is the same for
 * two headers whose bytes differ only in digit values, provided the header holds none of the bytes a
 * value-dependent mark or gate reads beside a digit (`0x`, `1//0`, `ya29`, `r8_`, `gr1348941`): every other
 * decision reads the characters' classes. Returns the header's length when line s starts with the header whose key
 * E keeps (keeping this line's header first when it is another one), else 0. Plain keys only. */
static Py_ssize_t err_head(struct Errs *E, const unsigned char *s, Py_ssize_t n) {
    if (n < 4 || s[0] != '[') return 0;
    Py_ssize_t P = E->head_len;
    if (P && P < n) {
        Py_ssize_t i = 0;
#if defined(__SSE2__)
        const __m128i zero = _mm_setzero_si128(), c0 = _mm_set1_epi8('0'), c9 = _mm_set1_epi8(9);
        while (P >= 16 && i < P) {  /* 16 bytes a step, the last step ending at P: each the kept byte, or a digit
                                     * where it kept one */
            Py_ssize_t at = i + 16 <= P ? i : P - 16;
            __m128i c = _mm_loadu_si128((const __m128i *)(s + at)), h = _mm_loadu_si128((const __m128i *)(E->head_raw + at));
            __m128i d = _mm_sub_epi8(c, c0);
            __m128i ok = _mm_or_si128(_mm_cmpeq_epi8(c, h), _mm_and_si128(_mm_cmpeq_epi8(h, zero),
                                                                       _mm_cmpeq_epi8(_mm_min_epu8(d, c9), d)));
            if (_mm_movemask_epi8(ok) != 0xffff) break;
            i = at + 16;
        }
#endif
        for (; i < P; i++) {
            unsigned char c = s[i], h = E->head_raw[i];
            if (h ? c != h : !err_digit(c)) break;
        }
        if (i == P) return P;
    }
    Py_ssize_t e = n < ERR_HEAD_MAX ? n : ERR_HEAD_MAX;
    for (P = 1; P + 1 < e && !(s[P] == ']' && s[P + 1] == ' '); P++) {}
    if (P + 1 >= e) return 0;
    P += 2;
    if (P >= n) return 0;
    for (Py_ssize_t i = 0; i < P; i++)
        if (!s[i] || strchr("/xXyYaArRgG", s[i])) return 0;
    Py_ssize_t olen = err_key(s, P, E->head_out, 0);
    if (olen < 0) { E->head_len = 0; return 0; }
    for (Py_ssize_t i = 0; i < P; i++) E->head_raw[i] = err_digit(s[i]) ? 0 : s[i];
    E->head_len = P;
    E->head_olen = olen;
    return P;
}

static Py_ssize_t err_key_ids(struct Errs *E, Py_ssize_t j, const Py_ssize_t *ids, Py_ssize_t nids, int gated);

/* The text of the key of line [bol, eol) (of the `gated` kind) into E->kbuf: its length, or -1. (key: err_key, or the
 * build of it err_key would take, inlined into a loop built for the same CPU: err_run_512) */
typedef Py_ssize_t (*ErrKeyFn)(const unsigned char *, Py_ssize_t, unsigned char *, int);
static ALWAYS_INLINE Py_ssize_t err_line_text_body(struct Errs *E, const unsigned char *b, Py_ssize_t bol,
                                                   Py_ssize_t eol, int gated, ErrKeyFn key) {
    const unsigned char *s = b + bol;
    Py_ssize_t n = eol - bol, j;
    Py_ssize_t P = gated || n > ERR_LINE_MAX ? 0 : err_head(E, s, n);
    if (P) {  /* the kept header's key, then the rest's */
        memcpy(E->kbuf, E->head_out, (size_t)E->head_olen);
        j = key(s + P, n - P, E->kbuf + E->head_olen, 0);
        if (j >= 0) j += E->head_olen;
    } else j = key(s, n, E->kbuf, gated);
    return j;
}
static Py_ssize_t err_line_text(struct Errs *E, const unsigned char *b, Py_ssize_t bol, Py_ssize_t eol, int gated) {
    return err_line_text_body(E, b, bol, eol, gated, err_key);
}

/* The key of line [bol, eol) with these needles into E->kbuf (of the `gated` kind): its length, or -1. */
static Py_ssize_t err_line_key(struct Errs *E, const unsigned char *b, Py_ssize_t bol, Py_ssize_t eol,
                               const Py_ssize_t *ids, Py_ssize_t nids, int gated) {
    if (nids > 256) return -1;
    Py_ssize_t j = err_line_text(E, b, bol, eol, gated);
    E->text_bol = -1;
    if (j < 0) return -1;
    return err_key_ids(E, j, ids, nids, gated);
}

/* The key whose text E->kbuf holds (j bytes) completed with these needles: its length. */
static Py_ssize_t err_key_ids(struct Errs *E, Py_ssize_t j, const Py_ssize_t *ids, Py_ssize_t nids, int gated) {
    if (gated) E->kbuf[j++] = 0xfe;  /* the two kinds of key apart */
    E->kbuf[j++] = 0xff;  /* never in a key's text */
    for (Py_ssize_t k = 0; k < nids; k++) {
        E->kbuf[j++] = (unsigned char)(ids[k] & 0xff);
        E->kbuf[j++] = (unsigned char)((ids[k] >> 8) & 0xff);
    }
    return j;
}

static Py_ssize_t err_find(struct Errs *E, Py_ssize_t klen, uint64_t h) {
    if (!E->tcap) return -1;
    for (Py_ssize_t i = (Py_ssize_t)(h & (uint64_t)(E->tcap - 1));; i = (i + 1) & (E->tcap - 1)) {
        Py_ssize_t v = E->table[i];
        if (!v) return -1;
        ErrSlot *sl = &E->slots[v - 1];
        if (sl->hash == h && sl->klen == klen && same_bytes(sl->key, E->kbuf, klen)) return v - 1;
    }
}

static void err_line_free(ErrLine *l) { PyMem_Free(l->text); l->text = NULL; l->len = 0; }
static int err_line_set(ErrLine *l, long long no, const unsigned char *t, Py_ssize_t len) {
    char *c = PyMem_Realloc(l->text, (size_t)(len ? len : 1));
    if (!c) { PyErr_NoMemory(); return -1; }
    memcpy(c, t, (size_t)len);
    l->text = c;
    l->len = len;
    l->no = no;
    return 0;
}
static void err_line_swap(ErrLine *a, ErrLine *b) {
    ErrLine t = *a;
    *a = *b;
    *b = t;
}

static void errs_free(PyObject *cap) {
    struct Errs *E = PyCapsule_GetPointer(cap, "triage.scan._linescan.Errs");
    if (!E) return;
    for (Py_ssize_t i = 0; i < E->nslots; i++) {
        ErrSlot *sl = &E->slots[i];
        PyMem_Free(sl->key);
        PyMem_Free(sl->ids);
        err_line_free(&sl->first); err_line_free(&sl->prev); err_line_free(&sl->last);
        err_line_free(&sl->c_first); err_line_free(&sl->c_prev); err_line_free(&sl->c_last);
    }
    PyMem_Free(E->slots);
    PyMem_Free(E->table);
    PyMem_Free(E->touched);
    PyMem_Free(E->q);
    PyMem_Free(E->opt);
    PyMem_Free(E->optids);
    PyMem_Free(E->cls);
    PyMem_Free(E->ttable);
    PyMem_Free(E->pc_first);
    PyMem_Free(E->pc_count);
    PyMem_Free(E->pc_off);
    PyMem_Free(E->pc_len);
    PyMem_Free(E->pc_bytes);
    PyMem_Free(E);
}

/* E's pieces from errfold.pieces: a tuple with, per needle index, None (stable) or a tuple of bytes. 0, or -1 with
 * an error set. */
static int err_pieces(struct Errs *E, PyObject *pieces) {
    if (!PyTuple_Check(pieces)) { PyErr_SetString(PyExc_TypeError, "pieces must be a tuple"); return -1; }
    Py_ssize_t n = PyTuple_GET_SIZE(pieces), np = 0, nb = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PyTuple_GET_ITEM(pieces, i);
        if (t == Py_None) continue;
        if (!PyTuple_Check(t)) { PyErr_SetString(PyExc_TypeError, "a needle's pieces must be None or a tuple"); return -1; }
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(t); k++) {
            PyObject *b = PyTuple_GET_ITEM(t, k);
            if (!PyBytes_Check(b)) { PyErr_SetString(PyExc_TypeError, "a piece must be bytes"); return -1; }
            np++;
            nb += PyBytes_GET_SIZE(b);
        }
    }
    E->pc_first = PyMem_Malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    E->pc_count = PyMem_Malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    E->pc_off = PyMem_Malloc((size_t)(np + 1) * sizeof(Py_ssize_t));
    E->pc_len = PyMem_Malloc((size_t)(np + 1) * sizeof(Py_ssize_t));
    E->pc_bytes = PyMem_Malloc((size_t)(nb + 1));
    if (!E->pc_first || !E->pc_count || !E->pc_off || !E->pc_len || !E->pc_bytes) { PyErr_NoMemory(); return -1; }
    Py_ssize_t q = 0, at = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PyTuple_GET_ITEM(pieces, i);
        E->pc_first[i] = q;
        E->pc_count[i] = t == Py_None ? -1 : PyTuple_GET_SIZE(t);
        if (t == Py_None) continue;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(t); k++, q++) {
            PyObject *b = PyTuple_GET_ITEM(t, k);
            E->pc_off[q] = at;
            E->pc_len[q] = PyBytes_GET_SIZE(b);
            memcpy(E->pc_bytes + at, PyBytes_AS_STRING(b), (size_t)E->pc_len[q]);
            at += E->pc_len[q];
        }
    }
    E->npc = n;
    E->runs = 1;
    return 0;
}

/* errfold_new(classes: bytes, one per needle index (0 an error word, 1 other, 2 a signal's, 3 an error word some
 * rule is anchored on), reach, pieces=None: errfold.pieces of each needle, or None: no line is taken whole) -> state */
static PyObject *errfold_new(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer cls;
    Py_ssize_t reach;
    PyObject *pieces = Py_None;
    if (!PyArg_ParseTuple(args, "y*n|O", &cls, &reach, &pieces)) return NULL;
    struct Errs *E = PyMem_Calloc(1, sizeof(struct Errs));
    if (E) E->cls = PyMem_Malloc((size_t)(cls.len ? cls.len : 1));
    if (!E || !E->cls) { PyBuffer_Release(&cls); if (E) PyMem_Free(E); return PyErr_NoMemory(); }
    memcpy(E->cls, cls.buf, (size_t)cls.len);
    E->ncls = cls.len;
    E->reach = reach;
    E->last_special = E->c_last_special = -(1LL << 40);
    E->pre_bol = E->text_bol = -1;
    PyBuffer_Release(&cls);
    PyObject *cap = PyCapsule_New(E, "triage.scan._linescan.Errs", errs_free);
    if (!cap) { PyMem_Free(E->cls); PyMem_Free(E); return NULL; }
    if (pieces != Py_None && err_pieces(E, pieces) < 0) { Py_DECREF(cap); return NULL; }
    return cap;
}

static struct Errs *errs_of(PyObject *cap) { return PyCapsule_GetPointer(cap, "triage.scan._linescan.Errs"); }

/* errfold_key(line bytes, gated=False) -> the key's text (template.shape without its `~`), or None */
static PyObject *errfold_key(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer v;
    int gated = 0;
    if (!PyArg_ParseTuple(args, "y*|p", &v, &gated)) return NULL;
    unsigned char *o = PyMem_Malloc((size_t)v.len * 2 + 8);
    if (!o) { PyBuffer_Release(&v); return PyErr_NoMemory(); }
    Py_ssize_t j = err_key(v.buf, v.len, o, gated);
    PyBuffer_Release(&v);
    PyObject *out = j < 0 ? (Py_INCREF(Py_None), Py_None) : PyBytes_FromStringAndSize((const char *)o, j);
    PyMem_Free(o);
    return out;
}

/* Slot i into the table of texts, unless a slot of its text is there already: 0, or -1 with an error set. */
static int err_text_add(struct Errs *E, Py_ssize_t i) {
    if (2 * (E->ntext + 1) > E->ttcap) {
        Py_ssize_t cap2 = E->ttcap ? 2 * E->ttcap : 64;
        ErrTT *t = PyMem_Calloc((size_t)cap2, sizeof(ErrTT));
        if (!t) { PyErr_NoMemory(); return -1; }
        for (Py_ssize_t k = 0; k < E->ttcap; k++) {
            if (!E->ttable[k].v) continue;
            Py_ssize_t x = (Py_ssize_t)(E->ttable[k].h & (uint64_t)(cap2 - 1));
            while (t[x].v) x = (x + 1) & (cap2 - 1);
            t[x] = E->ttable[k];
        }
        PyMem_Free(E->ttable);
        E->ttable = t;
        E->ttcap = cap2;
    }
    const ErrSlot *sl = &E->slots[i];
    Py_ssize_t x = (Py_ssize_t)(sl->thash & (uint64_t)(E->ttcap - 1));
    for (; E->ttable[x].v; x = (x + 1) & (E->ttcap - 1)) {
        const ErrSlot *o = &E->slots[E->ttable[x].v - 1];
        if (o->thash == sl->thash && o->tlen == sl->tlen && !memcmp(o->key, sl->key, (size_t)sl->tlen)) return 0;
    }
    E->ttable[x].h = sl->thash;
    E->ttable[x].key = sl->key;
    E->ttable[x].v = (int32_t)(i + 1);
    E->ttable[x].tlen = (int32_t)sl->tlen;
    E->ntext++;
    return 0;
}

/* A new slot for the key in E->kbuf[:klen] (hash h): its index, or -1 with an error set. The caller has checked
 * that the file has fewer than ERR_KEYS keys. */
static Py_ssize_t err_new_slot(struct Errs *E, Py_ssize_t klen, uint64_t h, const Py_ssize_t *ids, Py_ssize_t nids,
                               int nofold, int gated) {
    if (2 * (E->nslots + 1) > E->tcap) {  /* grow the table (and the slots) */
        Py_ssize_t cap2 = E->tcap ? 2 * E->tcap : 64;
        Py_ssize_t *t = PyMem_Calloc((size_t)cap2, sizeof(Py_ssize_t));
        ErrSlot *s = PyMem_Realloc(E->slots, (size_t)(cap2 / 2) * sizeof(ErrSlot));
        Py_ssize_t *tc = PyMem_Realloc(E->touched, (size_t)(cap2 / 2) * sizeof(Py_ssize_t));
        if (s) E->slots = s;
        if (tc) E->touched = tc;
        if (!t || !s || !tc) { PyMem_Free(t); PyErr_NoMemory(); return -1; }
        for (Py_ssize_t i = 0; i < E->nslots; i++) {
            Py_ssize_t k = (Py_ssize_t)(E->slots[i].hash & (uint64_t)(cap2 - 1));
            while (t[k]) k = (k + 1) & (cap2 - 1);
            t[k] = i + 1;
        }
        PyMem_Free(E->table);
        E->table = t;
        E->tcap = cap2;
    }
    ErrSlot *sl = &E->slots[E->nslots];
    memset(sl, 0, sizeof(*sl));
    sl->key = PyMem_Malloc((size_t)klen);
    sl->ids = PyMem_Malloc((size_t)(nids ? nids : 1) * sizeof(Py_ssize_t));
    if (!sl->key || !sl->ids) { PyMem_Free(sl->key); PyMem_Free(sl->ids); PyErr_NoMemory(); return -1; }
    memcpy(sl->key, E->kbuf, (size_t)klen);
    memcpy(sl->ids, ids, (size_t)nids * sizeof(Py_ssize_t));
    sl->nids = nids;
    sl->klen = klen;
    sl->hash = h;
    sl->nofold = nofold;
    sl->gated = gated;
    sl->tlen = klen - (gated ? 2 : 1) - 2 * nids;
    sl->thash = err_hash(sl->key, sl->tlen);
    Py_ssize_t k = (Py_ssize_t)(h & (uint64_t)(E->tcap - 1));
    while (E->table[k]) k = (k + 1) & (E->tcap - 1);
    E->table[k] = E->nslots + 1;
    if (E->runs && !gated && !nofold && err_text_add(E, E->nslots) < 0) return -1;
    return E->nslots++;
}

/* errfold_add(state, line bytes, needle indices, gated) -> the key's slot (the same for a key registered before), or
 * -1 when the line has no key or the file has ERR_KEYS keys. `gated`: the line holds a secret pattern's gate. */
static PyObject *errfold_add(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *cap, *ids;
    Py_buffer v;
    int gated = 0;
    if (!PyArg_ParseTuple(args, "Oy*O!p", &cap, &v, &PyTuple_Type, &ids, &gated)) return NULL;
    struct Errs *E = errs_of(cap);
    if (!E) { PyBuffer_Release(&v); return NULL; }
    Py_ssize_t nids = PyTuple_GET_SIZE(ids), local[256];
    Py_ssize_t klen = -1;
    if (nids <= 256) {
        for (Py_ssize_t k = 0; k < nids; k++) local[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(ids, k));
        if (PyErr_Occurred()) { PyBuffer_Release(&v); return NULL; }
        klen = err_line_key(E, v.buf, 0, v.len, local, nids, gated);
    }
    PyBuffer_Release(&v);
    if (klen < 0) return PyLong_FromLong(-1);
    uint64_t h = err_hash(E->kbuf, klen);
    Py_ssize_t at = err_find(E, klen, h);
    if (at >= 0) return PyLong_FromSsize_t(E->slots[at].nofold ? -1 : at);
    if (E->nslots >= ERR_KEYS) return PyLong_FromLong(-1);
    at = err_new_slot(E, klen, h, local, nids, 0, gated);
    return at < 0 ? NULL : PyLong_FromSsize_t(at);
}

/* errfold_find(state, buffer, start, end, needle indices) -> the slot of the line's key (either kind), or -1 */
static PyObject *errfold_find(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *cap, *ids;
    Py_buffer v;
    Py_ssize_t start, end;
    if (!PyArg_ParseTuple(args, "Oy*nnO!", &cap, &v, &start, &end, &PyTuple_Type, &ids)) return NULL;
    struct Errs *E = errs_of(cap);
    Py_ssize_t nids = PyTuple_GET_SIZE(ids), local[256], slot = -1;
    if (!E || start < 0 || end > v.len || start > end || nids > 256) {
        PyBuffer_Release(&v);
        if (E && !PyErr_Occurred()) return PyLong_FromLong(-1);
        return NULL;
    }
    for (Py_ssize_t k = 0; k < nids; k++) local[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(ids, k));
    if (PyErr_Occurred()) { PyBuffer_Release(&v); return NULL; }
    for (int gated = 0; gated < 2 && slot < 0 && E->nslots; gated++) {
        Py_ssize_t klen = err_line_key(E, v.buf, start, end, local, nids, gated);
        if (klen < 0) break;
        slot = err_find(E, klen, err_hash(E->kbuf, klen));
    }
    PyBuffer_Release(&v);
    return PyLong_FromSsize_t(slot >= 0 && E->slots[slot].nofold ? -1 : slot);
}

/* errfold_lookup(state, buffer, hits) -> per hit, errfold_find's answer for a candidate line (kind 0) whose needles
 * are all error words (ERR_ALLOWED or ERR_RULED), else -2: the per-hit loops of errfold.ErrFold (learn, known) in one
 * call a chunk, not one call a line. */
static PyObject *errfold_lookup(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *cap, *hits;
    Py_buffer v;
    if (!PyArg_ParseTuple(args, "Oy*O!", &cap, &v, &PyList_Type, &hits)) return NULL;
    struct Errs *E = errs_of(cap);
    if (!E) { PyBuffer_Release(&v); return NULL; }
    Py_ssize_t nh = PyList_GET_SIZE(hits), local[256];
    PyObject *out = PyList_New(nh);
    if (!out) { PyBuffer_Release(&v); return NULL; }
    for (Py_ssize_t h = 0; h < nh; h++) {
        PyObject *t = PyList_GET_ITEM(hits, h);
        Py_ssize_t slot = -2;
        if (PyTuple_Check(t) && PyTuple_GET_SIZE(t) == 5 && PyLong_Check(PyTuple_GET_ITEM(t, 0))
            && PyLong_AsLong(PyTuple_GET_ITEM(t, 0)) == 0 && PyTuple_Check(PyTuple_GET_ITEM(t, 4))) {
            PyObject *ids = PyTuple_GET_ITEM(t, 4);
            Py_ssize_t nids = PyTuple_GET_SIZE(ids), start = PyLong_AsSsize_t(PyTuple_GET_ITEM(t, 2)),
                       end = PyLong_AsSsize_t(PyTuple_GET_ITEM(t, 3));
            int ok = nids > 0;
            for (Py_ssize_t k = 0; ok && k < nids; k++) {
                PyObject *id = PyTuple_GET_ITEM(ids, k);
                Py_ssize_t i = PyLong_Check(id) ? PyLong_AsSsize_t(id) : -1;
                if (k < 256) local[k] = i;
                ok = i >= 0 && i < E->ncls && (E->cls[i] == ERR_ALLOWED || E->cls[i] == ERR_RULED);
            }
            if (PyErr_Occurred()) { Py_DECREF(out); PyBuffer_Release(&v); return NULL; }
            if (ok) {
                slot = -1;
                if (start >= 0 && end <= v.len && start <= end && nids <= 256)
                    for (int gated = 0; gated < 2 && slot < 0 && E->nslots; gated++) {  /* as errfold_find */
                        Py_ssize_t klen = err_line_key(E, v.buf, start, end, local, nids, gated);
                        if (klen < 0) break;
                        slot = err_find(E, klen, err_hash(E->kbuf, klen));
                    }
                if (slot >= 0 && E->slots[slot].nofold) slot = -1;
            }
        }
        PyObject *x = PyLong_FromSsize_t(slot);
        if (!x) { Py_DECREF(out); PyBuffer_Release(&v); return NULL; }
        PyList_SET_ITEM(out, h, x);
    }
    PyBuffer_Release(&v);
    return out;
}

/* A call begins: what an earlier call that was not committed counted is forgotten. */
static void err_begin(struct Errs *E, long long base, Py_ssize_t ahead) {
    for (Py_ssize_t i = 0; i < E->ntouched; i++) {
        ErrSlot *sl = &E->slots[E->touched[i]];
        sl->touched = 0;
        sl->c_count = 0;
    }
    E->ntouched = 0;
    E->nq = 0;
    E->nopt = E->noptids = 0;
    E->base = base;
    E->ahead = ahead < 0 ? 0 : ahead;
    E->c_last_special = E->last_special;
    E->c_stop = E->stop;
    E->pre_bol = E->text_bol = -1;
}

/* ---- Lines taken whole ----
 * An error-like line's needles follow from its key's text alone when every needle either is stable (errfold.pieces:
 * no digit and no word a hex token could hold, so it lies in the text a key keeps as it is, and a line holds it
 * exactly where its key does) or cannot occur in any line of the key (a piece of it that the masks keep as it is is
 * not in the key's text). err_slot_whole works out, per plain key and matcher, whether the needle search finds in each
 * line of the key exactly the needles of the line that registered it, in the same order: the stable needles'
 * occurrences in the key's text, ordered as the loops visit them (by the pair each is filed under; at one pair, the
 * later needle first, as compile() chains them), are its ids, all of them candidate needles (K_CAND), and no two
 * occurrences of different needles are filed under pairs one byte apart (which of the two the loops meet first
 * would then depend on where the line's even offsets fall, and lines of one key differ in length before them);
 * no needle holds a newline and no byte a key masks or keeps is a single-byte needle (a flag the search would raise:
 * a keyed line holds none of the others). Such a line is finished as soon as its first needle is found (err_early)
 * and the lines after it are taken whole (err_run) while they are lines of such keys: each becomes the pending
 * candidate line with its key's ids and is finished at once, as the search would have done at its first needle and
 * next visit; the loops go on from the first line that is not (jump), none of the bytes before it visited. */
typedef struct { Py_ssize_t x, e; } ErrOcc;

/* The first occurrence of needle [q, q + m) in [t, t + n), or NULL (memmem is not everywhere). */
static const unsigned char *err_in(const unsigned char *t, Py_ssize_t n, const unsigned char *q, Py_ssize_t m) {
    if (m == 0) return t;
    for (const unsigned char *f = t; n >= m && (f = memchr(t, q[0], (size_t)(n - m + 1))) != NULL;) {
        if (!memcmp(f, q, (size_t)m)) return f;
        n -= f + 1 - t;
        t = f + 1;
    }
    return NULL;
}

static int err_occ_cmp(const void *a, const void *b) {
    const ErrOcc *p = a, *q = b;
    if (p->x != q->x) return p->x < q->x ? -1 : 1;
    return p->e > q->e ? -1 : p->e < q->e;  /* at one pair: the needle compiled later first */
}

static int err_slot_whole(struct Errs *E, ErrSlot *sl, const Matcher *m) {
    if (E->whole_m != m) {  /* another matcher: the matcher's own test, and every slot's again */
        E->whole_m = m;
        E->m_ok = 1;
        for (Py_ssize_t i = 0; i < E->nslots; i++) E->slots[i].whole = 0;
        static const char masked[] = "0123456789abcdefABCDEFxX.:-";
        for (const char *t = masked; *t; t++)
            if (m->single[(unsigned char)*t]) E->m_ok = 0;
        for (Py_ssize_t e = 0; e < m->n; e++)
            if (m->nd[e].len > 0 && memchr(m->nd[e].s, '\n', (size_t)m->nd[e].len)) E->m_ok = 0;
        if (m->n > E->npc) E->m_ok = 0;
    }
    if (!E->m_ok || sl->gated || sl->nofold || !sl->nids || sl->nids > 64) return 0;
    const unsigned char *t = sl->key;
    Py_ssize_t tl = sl->tlen, nocc = 0;
    ErrOcc occ[64];
    for (Py_ssize_t i = 0; i < tl; i++)  /* (a mark's byte, 0 or 1, stands for line bytes tested above) */
        if (t[i] > 1 && m->single[t[i]]) return 0;
    for (Py_ssize_t e = 0; e < m->n; e++) {
        if (m->nd[e].len == 0 || E->pc_count[e] < 0) continue;  /* a single byte (above), a stable needle (below) */
        /* unstable: may it occur in a line of this key? */
        Py_ssize_t k = 0, c = E->pc_count[e];
        for (; k < c; k++) {
            Py_ssize_t q = E->pc_first[e] + k;
            if (!E->pc_len[q]) continue;
            if (!err_in(t, tl, E->pc_bytes + E->pc_off[q], E->pc_len[q])) break;
        }
        if (k == c) return 0;  /* every piece is there (or it has none) */
    }
    /* the stable needles' occurrences in the text, found as the search finds them: each pair of the text looked up
     * in the matcher's table, each occurrence once, at its first filing's pair (x = its start + off), not every
     * needle looked for in turn (a text's pairs are ~100, a matcher's needles up to 1024: this was most of the cost
     * of a file's keys) */
    for (Py_ssize_t i = 0; i + 1 < tl; i++) {
        unsigned p = PAIR(t[i], t[i + 1]);
        if (!(m->bits[p >> 3] & (1u << (p & 7)))) continue;
        unsigned h = slot_of(p);
        while (m->slot[h].pair && m->slot[h].pair != p + 1) h = (h + 1) & (HSLOTS - 1);
        for (int32_t e = m->slot[h].pair ? m->slot[h].head : -1; e >= 0; e = m->nd[e].next) {
            const Needle *nd = &m->nd[e];
            Py_ssize_t s = i - nd->off;
            if (e >= m->n || E->pc_count[e] >= 0 || s < 0 || s + nd->len > tl || memcmp(t + s, nd->s, (size_t)nd->len))
                continue;  /* (the second filing; an unstable needle: above; no occurrence here) */
            if (nd->kind != K_CAND || nocc == 64) return 0;
            occ[nocc].x = i;
            occ[nocc].e = e;
            nocc++;
        }
    }
    if (nocc != sl->nids) return 0;
    qsort(occ, (size_t)nocc, sizeof(ErrOcc), err_occ_cmp);
    for (Py_ssize_t i = 0; i < nocc; i++) {
        if (occ[i].e != sl->ids[i]) return 0;
        for (Py_ssize_t j = i + 1; j < nocc && occ[j].x <= occ[i].x + 1; j++)
            if (occ[j].x == occ[i].x + 1 && occ[j].e != occ[i].e) return 0;
    }
    return 1;
}

/* The slot whose lines may be taken whole that line [bol, eol) is a line of, or -1. (key, hash, same: how its text
 * is made, hashed and compared, err_run_512's own builds inlined there) */
typedef uint64_t (*ErrHashFn)(const unsigned char *, Py_ssize_t);
typedef int (*ErrSameFn)(const unsigned char *, const unsigned char *, Py_ssize_t);
typedef const unsigned char *(*ErrEolFn)(const unsigned char *, Py_ssize_t);
static ALWAYS_INLINE Py_ssize_t err_text_slot_body(Scan *st, Py_ssize_t bol, Py_ssize_t eol, ErrKeyFn key,
                                                   ErrHashFn hash, ErrSameFn same) {
    struct Errs *E = st->errs;
    Py_ssize_t tl = E->text_bol == bol ? E->text_len : err_line_text_body(E, st->b, bol, eol, 0, key);
    E->text_bol = bol;  /* (err_take completes it when the line is not one of a whole key) */
    E->text_len = tl;
    if (tl < 0) return -1;
    uint64_t h = hash(E->kbuf, tl);
    for (Py_ssize_t x = (Py_ssize_t)(h & (uint64_t)(E->ttcap - 1));; x = (x + 1) & (E->ttcap - 1)) {
        const ErrTT *t = &E->ttable[x];
        Py_ssize_t v = t->v;
        if (!v) return -1;
        if (t->h != h || t->tlen != tl || !same(t->key, E->kbuf, tl)) continue;
        ErrSlot *sl = &E->slots[v - 1];
        if (E->whole_m != st->m || !sl->whole) sl->whole = err_slot_whole(E, sl, st->m) ? 1 : 2;
        return sl->whole == 1 ? v - 1 : -1;
    }
}
static int err_same(const unsigned char *a, const unsigned char *b, Py_ssize_t n) { return same_bytes(a, b, n); }
static Py_ssize_t err_text_slot(Scan *st, Py_ssize_t bol, Py_ssize_t eol) {
    return err_text_slot_body(st, bol, eol, err_key, err_hash, err_same);
}

/* The first newline of the `room` bytes at s, or NULL */
static ALWAYS_INLINE const unsigned char *err_eol(const unsigned char *s, Py_ssize_t room) {
    return memchr(s, '\n', (size_t)room);
}

/* Lines taken whole from line start p on (nl newlines before it): see above. */
static ALWAYS_INLINE int err_run_body(Scan *st, Py_ssize_t p, Py_ssize_t nl, ErrKeyFn key, ErrHashFn hash,
                                      ErrSameFn same, ErrEolFn eolf) {
    struct Errs *E = st->errs;
    const unsigned char *b = st->b;
    Py_ssize_t n = st->n, p0 = p, w0 = st->em.w, nlw0 = st->em.nl_w;
    while (p < n && !E->c_stop) {
        Py_ssize_t room = n - p < ERR_LINE_MAX + 1 ? n - p : ERR_LINE_MAX + 1;
        const unsigned char *e = eolf(b + p, room);
        if (!e) break;  /* too long to have a key, or the buffer's last line */
        Py_ssize_t eol = e - b, slot = err_text_slot_body(st, p, eol, key, hash, same);
        if (slot < 0) break;
        E->pre_bol = p;
        E->pre_slot = slot;
        E->taken++;
        if (take_whole(st, p, eol, nl, E->slots[slot].ids, E->slots[slot].nids) < 0) return -1;
        p = eol + 1;
        nl++;
    }
    whole_end(st, p0, p, nl, w0, nlw0);
    return 0;
}

#if HAVE_BMI_KEY && HAVE_AVX512_PATH
/* err_run for a CPU whose keys err_key_512 makes (most of an error storm's work: each line's end found, its key
 * made, hashed and looked up, one after the other): those steps inlined into one loop, the end and the comparison
 * through 64-byte masks rather than calls of memchr and a loop of 8-byte words. Same slots, same lines. */
TARGET_FAST static ALWAYS_INLINE const unsigned char *err_eol512(const unsigned char *s, Py_ssize_t room) {
    const __m512i nlv = _mm512_set1_epi8('\n');
    for (Py_ssize_t i = 0; i < room && i < 256; i += 64) {  /* (a masked load reads no byte past room) */
        Py_ssize_t k = room - i;
        __mmask64 m = k >= 64 ? ~0ULL : (1ULL << k) - 1;
        uint64_t hit = _mm512_mask_cmpeq_epi8_mask(m, _mm512_maskz_loadu_epi8(m, s + i), nlv);
        if (hit) return s + i + err_ctz(hit);
    }
    return room > 256 ? memchr(s + 256, '\n', (size_t)(room - 256)) : NULL;
}
TARGET_FAST static ALWAYS_INLINE int err_same512(const unsigned char *a, const unsigned char *b, Py_ssize_t n) {
    if (n > 256) return same_bytes(a, b, n);  /* (a text is its header's key and the rest's: most are 100-160 bytes) */
    for (Py_ssize_t i = 0; i < n; i += 64) {
        Py_ssize_t k = n - i;
        __mmask64 m = k >= 64 ? ~0ULL : (1ULL << k) - 1;
        if (_mm512_mask_cmpneq_epi8_mask(m, _mm512_maskz_loadu_epi8(m, a + i), _mm512_maskz_loadu_epi8(m, b + i)))
            return 0;
    }
    return 1;
}
TARGET_FAST static int err_run_512(Scan *st, Py_ssize_t p, Py_ssize_t nl) {
    return err_run_body(st, p, nl, err_key_512, err_hash_body, err_same512, err_eol512);
}
#endif
static int err_run(Scan *st, Py_ssize_t p, Py_ssize_t nl) {
#if HAVE_BMI_KEY && HAVE_AVX512_PATH
    if (err_bmi == 1 && err_vbmi2 && path == P_AVX512) return err_run_512(st, p, nl);  /* (err_key's own test) */
#endif
    return err_run_body(st, p, nl, err_key, err_hash, err_same, err_eol);
}

/* A candidate line has just begun with its first needle (found), id: when it is a line of a key whose lines may be
 * taken whole, its needles are that key's, so it is finished now and the lines after it are taken whole (err_run). */
static int err_early(Scan *st, Py_ssize_t id) {
    struct Errs *E = st->errs;
    if (!E->ntext || E->c_stop || id >= E->ncls || (E->cls[id] != ERR_ALLOWED && E->cls[id] != ERR_RULED)) return 0;
    Py_ssize_t bol = st->c_bol, eol = st->c_eol;
    if (eol - bol > ERR_LINE_MAX) return 0;
    Py_ssize_t slot = err_text_slot(st, bol, eol);
    if (slot < 0) return 0;
    const ErrSlot *sl = &E->slots[slot];
    if (sl->ids[0] != id) return 0;  /* (never, by err_slot_whole) */
    st->nids = 0;
    for (Py_ssize_t k = 0; k < sl->nids; k++)
        if (append_id(st, sl->ids[k]) < 0) return -1;
    E->pre_bol = bol;
    E->pre_slot = slot;
    st->col_skip = eol;
    if (eol >= st->n) return 0;  /* the buffer's last line: the loop's end finishes it */
    if (finish_cand(st) < 0) return -1;  /* what the next visit would do first: nothing comes between */
    return err_run(st, eol + 1, em_line(&st->em, bol) + 1);
}

/* The pending candidate line: 1 when it is held back to be counted (a registered key, nothing near it). */
static int err_take(Scan *st) {
    struct Errs *E = st->errs;
    Py_ssize_t ln = em_line(&st->em, st->c_bol);
    long long no = E->base + ln + 1;
    int cls = st->nids ? ERR_ALLOWED : ERR_SPECIAL, ruled = 0;  /* no needle: a traceback's end (tb_flush) */
    for (Py_ssize_t k = 0; k < st->nids; k++) {
        Py_ssize_t id = st->ids[k];
        int c = id < E->ncls ? E->cls[id] : ERR_SPECIAL;
        if (c == ERR_RULED) ruled = 1;
        else if (c > cls) cls = c;
    }
    Py_ssize_t slot = -1;
    int keyed = 0;  /* the line has a key (of the plain kind, the one errfold_settle registers) */
    if (cls == ERR_ALLOWED && !E->c_stop && E->pre_bol == st->c_bol) {  /* keyed already (err_early, err_run) */
        slot = E->pre_slot;
        keyed = 1;
    } else if (cls == ERR_ALLOWED && !E->c_stop) {
        for (int gated = 0; gated < 2 && slot < 0; gated++) {  /* (a line of either kind has a key of the other) */
            Py_ssize_t klen = !gated && E->text_bol == st->c_bol && st->nids <= 256  /* its text made already */
                ? (E->text_len < 0 ? -1 : err_key_ids(E, E->text_len, st->ids, st->nids, 0))
                : err_line_key(E, st->b, st->c_bol, st->c_eol, st->ids, st->nids, gated);
            E->text_bol = -1;
            if (klen < 0) break;
            keyed |= !gated;
            if (!E->nslots) break;
            slot = err_find(E, klen, err_hash(E->kbuf, klen));
        }
    }
    int nofold = slot >= 0 && E->slots[slot].nofold;
    if (nofold) slot = -1;
    if (ruled && slot < 0 && !nofold && keyed && E->nslots < ERR_KEYS) {
        /* a key Python has not judged yet: the lines near it are taken as if it read nothing, and errfold_settle
         * says whether it does (its key then registered as one that reads around: the buffer is scanned again) */
        if (E->nopt == E->optcap || E->noptids + st->nids > E->optidscap) {
            Py_ssize_t cap = E->optcap ? 2 * E->optcap : 64, icap = 2 * (E->optidscap + st->nids) + 64;
            ErrOpt *o = PyMem_Realloc(E->opt, (size_t)cap * sizeof(ErrOpt));
            if (o) { E->opt = o; E->optcap = cap; }
            Py_ssize_t *ids = PyMem_Realloc(E->optids, (size_t)icap * sizeof(Py_ssize_t));
            if (ids) { E->optids = ids; E->optidscap = icap; }
            if (!o || !ids) { PyErr_NoMemory(); return -1; }
        }
        ErrOpt *o = &E->opt[E->nopt++];
        o->bol = st->c_bol;
        o->eol = st->c_eol;
        o->ids = E->noptids;
        o->nids = st->nids;
        memcpy(E->optids + E->noptids, st->ids, (size_t)st->nids * sizeof(Py_ssize_t));
        E->noptids += st->nids;
        return 0;
    }
    if (cls != ERR_ALLOWED || (ruled && slot < 0)) {  /* a line that may read its neighbours (a rule may claim it) */
        E->c_last_special = no;
        if (cls == ERR_STOP) E->c_stop = 1;
        for (Py_ssize_t i = E->nq - 1; i >= 0 && E->base + E->q[i].ln + 1 >= no - E->reach; i--) E->q[i].out = 1;
        return 0;
    }
    if (slot < 0 || no - E->c_last_special <= E->reach) return 0;
    if (E->nq == E->qcap) {
        Py_ssize_t cap = E->qcap ? 2 * E->qcap : 1024;
        ErrQ *q = PyMem_Realloc(E->q, (size_t)cap * sizeof(ErrQ));
        if (!q) { PyErr_NoMemory(); return -1; }
        E->q = q;
        E->qcap = cap;
    }
    ErrQ *it = &E->q[E->nq++];
    it->ln = ln;
    it->bol = st->c_bol;
    it->eol = st->c_eol;
    it->slot = slot;
    it->pos = PyList_GET_SIZE(st->em.out);
    it->out = 0;
    return 1;
}

/* The call's end (`lines` in its buffer): lines held back near its end or near another line go back into the
 * output in their places; the others are counted, their text copied (the buffer is not kept). */
static int err_end(Scan *st, Py_ssize_t lines) {
    struct Errs *E = st->errs;
    const unsigned char *b = st->b;
    Py_ssize_t shift = 0;
    for (Py_ssize_t i = 0; i < E->nq; i++) {
        ErrQ *it = &E->q[i];
        ErrSlot *sl = &E->slots[it->slot];
        if (it->out || it->ln >= lines + E->ahead - E->reach) {
            PyObject *tup = PyTuple_New(sl->nids);
            if (!tup) return -1;
            for (Py_ssize_t k = 0; k < sl->nids; k++) {
                PyObject *v = PyLong_FromSsize_t(sl->ids[k]);
                if (!v) { Py_DECREF(tup); return -1; }
                PyTuple_SET_ITEM(tup, k, v);
            }
            PyObject *t = Py_BuildValue("(innnN)", 0, it->ln, it->bol, it->eol, tup);
            if (!t) return -1;
            Py_ssize_t at = it->pos + shift, size = PyList_GET_SIZE(st->em.out);
            int r = PyList_Insert(st->em.out, at < size ? at : size, t);
            Py_DECREF(t);
            if (r < 0) return -1;
            shift++;
            continue;
        }
        if (!sl->touched) {
            sl->touched = 1;
            E->touched[E->ntouched++] = it->slot;
        }
        ErrAt at = {it->ln, it->bol, it->eol};
        if (sl->c_count == 0) sl->a_first = at;
        sl->a_prev = sl->a_last;
        sl->a_last = at;
        sl->c_count++;
    }
    E->nq = 0;
    for (Py_ssize_t i = 0; i < E->ntouched; i++) {  /* the texts, once a key */
        ErrSlot *sl = &E->slots[E->touched[i]];
        const ErrAt *f = &sl->a_first, *p = &sl->a_prev, *l = &sl->a_last;
        if (err_line_set(&sl->c_first, E->base + f->ln + 1, b + f->bol, f->eol - f->bol) < 0
            || (sl->c_count >= 2 && err_line_set(&sl->c_prev, E->base + p->ln + 1, b + p->bol, p->eol - p->bol) < 0)
            || err_line_set(&sl->c_last, E->base + l->ln + 1, b + l->bol, l->eol - l->bol) < 0) return -1;
    }
    return 0;
}

/* errfold_commit(state): the last call's counts are the file's (its buffer was not scanned again). */
static PyObject *errfold_commit(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *cap;
    if (!PyArg_ParseTuple(args, "O", &cap)) return NULL;
    struct Errs *E = errs_of(cap);
    if (!E) return NULL;
    for (Py_ssize_t i = 0; i < E->ntouched; i++) {
        ErrSlot *sl = &E->slots[E->touched[i]];
        sl->touched = 0;
        if (!sl->c_count) continue;
        /* (the lines change places: err_end writes each c_ line a call uses again, so no text is copied) */
        if (!sl->count) err_line_swap(&sl->first, &sl->c_first);
        if (sl->c_count >= 2) err_line_swap(&sl->prev, &sl->c_prev);
        else if (sl->count) err_line_swap(&sl->prev, &sl->last);  /* the last before: the one before the new last */
        err_line_swap(&sl->last, &sl->c_last);
        sl->count += sl->c_count;
        sl->c_count = 0;
    }
    E->ntouched = 0;
    if (E->c_last_special > E->last_special) E->last_special = E->c_last_special;
    E->stop = E->c_stop;
    Py_RETURN_NONE;
}

/* errfold_settle(state, buffer) -> how many ruled lines of keys unknown when the buffer was scanned (err_take) have
 * no key Python registered since (learn): their keys are registered as keys whose lines read around (their lines
 * are returned and may be claimed), and the buffer must be scanned again before its counts are committed. */
static PyObject *errfold_settle(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *cap;
    Py_buffer v;
    if (!PyArg_ParseTuple(args, "Oy*", &cap, &v)) return NULL;
    struct Errs *E = errs_of(cap);
    if (!E) { PyBuffer_Release(&v); return NULL; }
    Py_ssize_t unsure = 0;
    for (Py_ssize_t i = 0; i < E->nopt; i++) {
        const ErrOpt *o = &E->opt[i];
        const Py_ssize_t *ids = E->optids + o->ids;
        if (o->eol > v.len) { unsure++; continue; }  /* (not this call's buffer) */
        Py_ssize_t slot = -1;
        for (int gated = 0; gated < 2 && slot < 0; gated++) {  /* as err_take looks it up */
            Py_ssize_t klen = err_line_key(E, v.buf, o->bol, o->eol, ids, o->nids, gated);
            if (klen < 0) break;
            slot = err_find(E, klen, err_hash(E->kbuf, klen));
        }
        if (slot >= 0 && !E->slots[slot].nofold) continue;
        unsure++;
        if (slot >= 0 || E->nslots >= ERR_KEYS) continue;  /* (a full table: such lines read around, as before) */
        Py_ssize_t klen = err_line_key(E, v.buf, o->bol, o->eol, ids, o->nids, 0);
        if (klen >= 0 && err_new_slot(E, klen, err_hash(E->kbuf, klen), ids, o->nids, 1, 0) < 0) {
            PyBuffer_Release(&v);
            return NULL;
        }
    }
    E->nopt = E->noptids = 0;
    PyBuffer_Release(&v);
    return PyLong_FromSsize_t(unsure);
}

/* errfold_mark(state, line number): a line there may read its neighbours, and it may be an orderly shutdown (the end
 * of a chunk Python read line for line): nothing more is counted. */
static PyObject *errfold_mark(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *cap;
    long long no;
    if (!PyArg_ParseTuple(args, "OL", &cap, &no)) return NULL;
    struct Errs *E = errs_of(cap);
    if (!E) return NULL;
    if (no > E->last_special) E->last_special = no;
    E->stop = 1;  /* (it may hold a signal's needle) */
    Py_RETURN_NONE;
}

/* errfold_whole(state) -> how many lines scan() took whole so far, scans again included (see err_run) */
static PyObject *errfold_whole(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *cap;
    if (!PyArg_ParseTuple(args, "O", &cap)) return NULL;
    struct Errs *E = errs_of(cap);
    return E ? PyLong_FromLongLong(E->taken) : NULL;
}

/* errfold_take(state) -> [(slot, count, (first no, text), (prev no, text) or None, (last no, text)), ...] of the
 * keys that counted lines, in slot order; their counts start again from zero. */
static PyObject *errfold_take(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *cap;
    if (!PyArg_ParseTuple(args, "O", &cap)) return NULL;
    struct Errs *E = errs_of(cap);
    if (!E) return NULL;
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0; out && i < E->nslots; i++) {
        ErrSlot *sl = &E->slots[i];
        if (!sl->count) continue;
        PyObject *prev = sl->count >= 2 ? Py_BuildValue("(Ly#)", sl->prev.no, sl->prev.text, sl->prev.len)
                                        : (Py_INCREF(Py_None), Py_None);
        PyObject *t = prev ? Py_BuildValue("(nL(Ly#)N(Ly#))", i, sl->count, sl->first.no, sl->first.text,
                                           sl->first.len, prev, sl->last.no, sl->last.text, sl->last.len) : NULL;
        if (!t || PyList_Append(out, t) < 0) Py_CLEAR(out);
        Py_XDECREF(t);
        sl->count = 0;
    }
    return out;
}

/* ---- Columns: candidate lines of a numeric shape Python registered, handed over as columns ----
 *
 * Most lines of a long trainer log repeat a few shapes that differ only in their numbers (a metric dict per step,
 * Timer lines). A line's shape is its text with each number token masked; a number token is `-?D+(.D+)?([eE][-+]?D+)?`
 * (D an ASCII digit) that starts where the byte before is not a letter, digit, `_` or `.` (so `lr-pg_0` and `v1.2`
 * hold none, `2026-05-24` holds three); its class says whether it has a sign (1), a fraction (2), an exponent (4).
 * `nan` and `inf` are words, so a line holding them is of another shape. triage/scan/columns.py tokenizes the same
 * way (tests/test_columns.py compares the two).
 *
 * Python parses the first line of each shape as any other line and, when the line is pure data (a metric record or a
 * timer event: see columns.py), registers its shape for the next calls (shapes(...)): the literal text between the
 * tokens, the classes of token each slot accepts, the slots whose numbers it needs and in which output column, the
 * needle indices of the line. For each later candidate line with those needles whose text is the template with an
 * accepted number in each slot, this call appends a row to the shape's columns instead of returning the line: its
 * line index, bounds, ordinal among the call's metric records (shapes marked `record`), and the numbers of the
 * needed slots as doubles (exactly what Python's float() gives: Clinger's fast path, else PyOS_string_to_double).
 *
 * The rows are written out (kind 6) before any line this call returns, so Python applies them in line order with
 * the lines it parses: (6, line index of the first row, 0, 0, ((shape, rows, line indices, starts, ends, ordinals,
 * values), ...)), int64 and (column after column) float64 arrays in native order, as bytes.
 * Shapes marked `ctx` (Timer lines) are context lines in Python: `near` windows, the lines a traceback header reads.
 * Their rows in the 4 lines before a line this call returns are returned as lines instead (after the rows before
 * them), and a line the same as the line before it is returned (Python folds it into that one), so that what Python
 * keeps as context next to any line it parses is what it would keep if every line were returned. */
#define COL_IDS 128
#define COL_BACK 4  /* lines before a returned line whose context rows are returned too (signals.chains' header) */

typedef struct {
    unsigned char *lit;                 /* the literal text between the tokens, concatenated */
    Py_ssize_t nslot;                   /* number tokens; nslot + 1 literal segments */
    Py_ssize_t seg_off[COL_TOKENS + 1], seg_len[COL_TOKENS + 1];
    uint8_t allow[COL_TOKENS];          /* bit c: a token of class c is accepted in the slot */
    int16_t col[COL_TOKENS];            /* the output column of the slot's number, -1: not needed */
    Py_ssize_t nout;
    Py_ssize_t ids[COL_IDS], nids;
    int record, ctx;
    int stable;                         /* no needle can occur across a number of a line of it (columns.stable) */
    Py_ssize_t share_mean, share_max;   /* output columns of the mean and the longest response length (-1: none) */
    Py_ssize_t tally;                   /* output column whose distinct values are counted (col_tally; -1: none) */
} ColShape;

typedef struct {
    Py_ssize_t n, cap;
    int64_t *line, *bol, *eol, *ord;
    double *val;                        /* row after row: cap x nout */
    uint8_t *div;                       /* per value, k: val is still to be divided by 10^k (col_number; cols_flush) */
} ColRows;

typedef struct {
    Py_ssize_t n;
    ColShape sh[COL_SHAPES];
    Py_ssize_t back[1024], nback;        /* needles of lines a traceback chain may start at (see cols_before) */
    ColRows spare[COL_SHAPES];           /* each shape's arrays between two calls: the next call's rows go there, not
                                            into arrays grown again (and their pages faulted in again) each call */
} ColSet;

struct Cols {
    const ColSet *set;
    ColSet *owner;                      /* the same, to take its spare arrays and give them back (cols_new, cols_free) */
    ColRows rows[COL_SHAPES];
    Py_ssize_t nrec;                    /* metric-record rows since the last write-out */
    Py_ssize_t last;                    /* the shape matched last (tried first) */
    int any;                            /* rows since the last write-out */
    Py_ssize_t nl_pos, nl_cnt;          /* newlines before nl_pos: the rows' own line counter */
    uint8_t early[COL_SHAPES];          /* per shape, with this call's matcher: 0 not looked at, 1 cols_early may
                                           match its lines, 2 not (see cols_order) */
    Py_ssize_t pre_k, pre_bol;          /* the shape the candidate line at pre_bol matched in cols_early (-1: none) */
    Py_ssize_t pre_ts[COL_TOKENS], pre_te[COL_TOKENS];  /* and its tokens' bounds */
    Py_ssize_t pre_ti[COL_TOKENS];      /* and where each token's whole digits end (-1: it has an exponent) */
    uint8_t whole[COL_SHAPES];          /* per shape, with this call's matcher: 0 not looked at, 1 cols_run may take
                                           its lines whole, 2 not (see cols_whole) */
    Py_ssize_t next[COL_SHAPES];        /* per shape, that of the line cols_run took after one of it last (-1: none) */
    int nl_needle;                      /* 0 not looked at, 1 no needle of the matcher holds a newline, 2 one does */
};

/* Whether n bytes at a and b are equal (short segments: word compares, no call). */
static ALWAYS_INLINE int seg_eq(const unsigned char *a, const unsigned char *b, Py_ssize_t n) {
    uint64_t x, y;
    while (n >= 8) {
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        if (x != y) return 0;
        a += 8;
        b += 8;
        n -= 8;
    }
    while (n--) if (*a++ != *b++) return 0;
    return 1;
}

/* Whether the n bytes of literal text at lit (followed by 8 readable bytes: shapes() pads it) are at a, of which room
 * bytes are readable: one masked 8-byte compare for a short segment, else 8-byte compares and one that overlaps. */
static ALWAYS_INLINE int lit_at(const unsigned char *a, Py_ssize_t room, const unsigned char *lit, Py_ssize_t n) {
    uint64_t x, y;
    if (n < 8) {
        if (room < 8) return seg_eq(a, lit, n);
        memcpy(&x, a, 8);
        memcpy(&y, lit, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        uint64_t first = n ? ~UINT64_C(0) << (8 * (8 - n)) : 0;  /* the first n bytes in memory */
#else
        uint64_t first = (UINT64_C(1) << (8 * n)) - 1;
#endif
        return !((x ^ y) & first);
    }
    for (Py_ssize_t k = 0; k + 8 <= n; k += 8) {
        memcpy(&x, a + k, 8);
        memcpy(&y, lit + k, 8);
        if (x != y) return 0;
    }
    memcpy(&x, a + n - 8, 8);
    memcpy(&y, lit + n - 8, 8);
    return x == y;
}

static void colrows_free(ColRows *r) {
    PyMem_Free(r->line);
    PyMem_Free(r->bol);
    PyMem_Free(r->eol);
    PyMem_Free(r->ord);
    PyMem_Free(r->val);
    PyMem_Free(r->div);
    memset(r, 0, sizeof(ColRows));
}

static void colset_free(PyObject *cap) {
    ColSet *cs = (ColSet *)PyCapsule_GetPointer(cap, "triage.scan._linescan.Shapes");
    if (!cs) return;
    for (Py_ssize_t k = 0; k < cs->n; k++) PyMem_Free(cs->sh[k].lit);
    for (Py_ssize_t k = 0; k < COL_SHAPES; k++) colrows_free(&cs->spare[k]);
    PyMem_Free(cs);
}

/* shapes([(literal segments, allowed classes, output columns, needle indices, record, ctx[, stable[, mean, longest[,
 *          tally]]]), ...], back) -> shapes
 * literal segments: tuple of nslot + 1 bytes; allowed classes: bytes of nslot bitmasks; output columns: bytes of nslot
 * (255: the number is not needed, else its column, 0..nout-1, each once). At most COL_SHAPES shapes. back: the needle
 * indices of lines before which context rows are returned (see cols_before). stable: no needle of the matcher can
 * occur across a number token of a line of the shape (columns.stable checks it), so a line of it holds exactly the
 * needles of its literal text, the shape's: once its first needle is found and the line matches, the rest of the
 * line is not visited (cols_early). mean, longest: the output columns of a record's mean and longest response length
 * (-1: not both columns), whose share cols_flush works out (see col_share); tally: the output column of a context
 * shape whose distinct values it counts (a timer's seconds: see col_tally; -1: none). */
static PyObject *shapes(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *spec, *back;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &spec, &PyTuple_Type, &back)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(spec);
    if (n > COL_SHAPES || PyTuple_GET_SIZE(back) > 1024) { PyErr_SetString(PyExc_ValueError, "too many shapes"); return NULL; }
    ColSet *cs = PyMem_Calloc(1, sizeof(ColSet));
    if (!cs) return PyErr_NoMemory();
    PyObject *cap = PyCapsule_New(cs, "triage.scan._linescan.Shapes", colset_free);
    if (!cap) { PyMem_Free(cs); return NULL; }
    cs->nback = PyTuple_GET_SIZE(back);
    for (Py_ssize_t j = 0; j < cs->nback; j++) cs->back[j] = PyLong_AsSsize_t(PyTuple_GET_ITEM(back, j));
    if (PyErr_Occurred()) { Py_DECREF(cap); return NULL; }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *segs, *ids;
        Py_buffer allow, col;
        int record, ctx, stable = 0;
        Py_ssize_t share_mean = -1, share_max = -1, tally = -1;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(spec, k), "O!y*y*O!pp|pnnn", &PyTuple_Type, &segs, &allow, &col,
                              &PyTuple_Type, &ids, &record, &ctx, &stable, &share_mean, &share_max, &tally)) {
            Py_DECREF(cap);
            return NULL;
        }
        ColShape *sh = &cs->sh[k];
        Py_ssize_t nslot = PyTuple_GET_SIZE(segs) - 1, total = 0;
        int bad = nslot < 0 || nslot > COL_TOKENS || allow.len != nslot || col.len != nslot
                  || PyTuple_GET_SIZE(ids) > COL_IDS;
        for (Py_ssize_t j = 0; !bad && j <= nslot; j++) {
            PyObject *seg = PyTuple_GET_ITEM(segs, j);
            if (!PyBytes_Check(seg)) bad = 1;
            else total += PyBytes_GET_SIZE(seg);
        }
        if (!bad) sh->lit = PyMem_Calloc((size_t)total + 8, 1);  /* 8 bytes to spare: lit_at reads 8 at a time */
        if (!bad && !sh->lit) { PyBuffer_Release(&allow); PyBuffer_Release(&col); Py_DECREF(cap); return PyErr_NoMemory(); }
        Py_ssize_t at = 0;
        for (Py_ssize_t j = 0; !bad && j <= nslot; j++) {
            PyObject *seg = PyTuple_GET_ITEM(segs, j);
            sh->seg_off[j] = at;
            sh->seg_len[j] = PyBytes_GET_SIZE(seg);
            memcpy(sh->lit + at, PyBytes_AS_STRING(seg), (size_t)sh->seg_len[j]);
            at += sh->seg_len[j];
        }
        sh->nslot = nslot;
        sh->nout = 0;
        for (Py_ssize_t j = 0; !bad && j < nslot; j++) {
            sh->allow[j] = ((const uint8_t *)allow.buf)[j];
            uint8_t c = ((const uint8_t *)col.buf)[j];
            sh->col[j] = c == 255 ? -1 : c;
            if (c != 255 && c >= sh->nout) sh->nout = c + 1;
        }
        for (Py_ssize_t j = 0; !bad && j < nslot; j++)  /* every output column is filled */
            if (sh->col[j] >= 0 && sh->col[j] >= nslot) bad = 1;
        if (share_mean < 0 || share_max < 0) share_mean = share_max = -1;
        if (share_mean >= sh->nout || share_max >= sh->nout || (share_mean == share_max && share_mean >= 0)) bad = 1;
        if (tally >= sh->nout || (tally >= 0 && share_mean >= 0)) bad = 1;  /* one extra entry at most (cols_flush) */
        sh->share_mean = share_mean;
        sh->share_max = share_max;
        sh->tally = tally < 0 ? -1 : tally;
        sh->nids = PyTuple_GET_SIZE(ids);
        for (Py_ssize_t j = 0; !bad && j < sh->nids; j++) sh->ids[j] = PyLong_AsSsize_t(PyTuple_GET_ITEM(ids, j));
        sh->record = record;
        sh->ctx = ctx;
        sh->stable = stable && sh->nids > 0;
        PyBuffer_Release(&allow);
        PyBuffer_Release(&col);
        if (bad || PyErr_Occurred()) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "bad shape");
            Py_DECREF(cap);
            return NULL;
        }
        cs->n = k + 1;
    }
    return cap;
}

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* The number token [s, e) as a double, as Python's float() reads it; 0 when it is too long to copy, or a whole number
 * of more than 15 digits (a step parsed with int() must be exact). The value is *out / 10^*div: the one correctly
 * rounded division a fraction needs is left to the caller, which does a column's in one loop (cols_flush), where they
 * overlap instead of each waiting for the one before. */
static const double POW10[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14,
                                 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
static int col_number(const unsigned char *b, Py_ssize_t s, Py_ssize_t e, double *out, uint8_t *div) {
    Py_ssize_t t = s;
    *div = 0;
    int neg = b[t] == '-';
    if (neg) t++;
    uint64_t m = 0;
    int digits = 0, frac = 0;
    long ex = 0;
    for (; t < e && is_digit(b[t]); t++)
        if (m || b[t] != '0') { m = m * 10 + (uint64_t)(b[t] - '0'); if (++digits > 19) break; }
    if (digits > 19) {  /* count the rest: a long whole number is refused below, a long fraction read slowly */
        for (; t < e && is_digit(b[t]); t++) digits++;
        if (t == e) return 0;
        goto slow;
    }
    if (t < e && b[t] == '.')
        for (t++; t < e && is_digit(b[t]); t++) {
            frac++;
            if (m || b[t] != '0') { m = m * 10 + (uint64_t)(b[t] - '0'); if (++digits > 19) goto slow; }
        }
    if (t == e && !frac && digits > 15) return 0;  /* a whole number a double may not hold: Python reads it (int) */
    if (t < e) {  /* the exponent */
        t++;
        int eneg = b[t] == '-';
        if (b[t] == '-' || b[t] == '+') t++;
        for (; t < e; t++) { ex = ex * 10 + (b[t] - '0'); if (ex > 100000) goto slow; }
        if (eneg) ex = -ex;
    }
    ex -= frac;
    if (m == 0) { *out = neg ? -0.0 : 0.0; return 1; }
    if (m <= (UINT64_C(1) << 53) && ex >= -22 && ex <= 22) {  /* exact operands: one correctly rounded operation */
        double v = neg ? -(double)m : (double)m;  /* (-m) / d is -(m / d): rounding to nearest is symmetric */
        if (ex < 0) *div = (uint8_t)-ex;
        else v *= POW10[ex];
        *out = v;
        return 1;
    }
slow:;
    char buf[80];
    if (e - s >= (Py_ssize_t)sizeof(buf)) return 0;
    memcpy(buf, b + s, (size_t)(e - s));
    buf[e - s] = 0;
    double v = PyOS_string_to_double(buf, NULL, NULL);
    if (v == -1.0 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
    *out = v;
    return 1;
}

/* The end of the run of ASCII digits from b[t] on, before len: eight bytes a step where the line has them (a byte
 * is flagged when subtracting '0' borrows or adding 0x46 reaches 0x80, which no digit does, so the lowest flagged
 * byte is the first that is not a digit: the bytes before it neither borrow nor carry). */
static ALWAYS_INLINE Py_ssize_t digit_end(const unsigned char *b, Py_ssize_t t, Py_ssize_t len) {
    while (len - t >= 8) {
        uint64_t x;
        memcpy(&x, b + t, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        x = __builtin_bswap64(x);
#endif
        uint64_t odd = ((x - UINT64_C(0x3030303030303030)) | (x + UINT64_C(0x4646464646464646)))
                       & UINT64_C(0x8080808080808080);
        if (odd) return t + (__builtin_ctzll(odd) >> 3);
        t += 8;
    }
    while (t < len && is_digit(b[t])) t++;
    return t;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
static const uint64_t POW10_INT[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};

/* The n digits (1..8) at p as a number, 8 bytes readable at p: the digits moved to the top of a word (those before
 * them, zeros: leading zeros), then pairs, fours and eights of digits combined with three multiplications. */
static ALWAYS_INLINE uint64_t digits8(const unsigned char *p, Py_ssize_t n) {
    uint64_t x;
    memcpy(&x, p, 8);
    x = (x - UINT64_C(0x3030303030303030)) << (8 * (8 - n));  /* a byte past them may borrow: only from those above */
    x = x * 10 + (x >> 8);
    return ((x & UINT64_C(0x000000FF000000FF)) * UINT64_C(0x000F424000000064)
            + ((x >> 16) & UINT64_C(0x000000FF000000FF)) * UINT64_C(0x0000271000000001)) >> 32;
}
#endif

/* col_number of the token [s, e) of b (room bytes readable from b): a token of at most 8 whole and 8 fraction digits
 * and no exponent (nearly every value a trainer prints) is read 8 digits at a time, to the same *out and *div. ie:
 * where its whole digits end, as col_match found it (then the token is those digits, or those, a `.` and digits to its
 * end: col_match takes no exponent-less token otherwise), or -1 (the token has an exponent). */
static ALWAYS_INLINE int col_value(const unsigned char *b, Py_ssize_t s, Py_ssize_t e, Py_ssize_t ie, Py_ssize_t room,
                                   double *out, uint8_t *div) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (e + 8 <= room) {
        int neg = b[s] == '-';
        Py_ssize_t t = s + neg, fs, fe;
        if (ie >= 0) {  /* the digits found already: no byte read again */
            fs = fe = ie;
            if (ie < e) {
                fs = ie + 1;
                fe = e;
            }
        } else {
            ie = digit_end(b, t, e);
            fs = fe = ie;
            if (ie < e && b[ie] == '.') {
                fs = ie + 1;
                fe = digit_end(b, fs, e);
            }
        }
        Py_ssize_t ni = ie - t, nf = fe - fs;
        if (fe == e && ni >= 1 && ni <= 8 && nf <= 8) {
            uint64_t m = digits8(b + t, ni) * POW10_INT[nf] + (nf ? digits8(b + fs, nf) : 0);
            if (m <= (UINT64_C(1) << 53)) {  /* exact: the sign set as a bit (no guess at it), -0.0 for `-0` */
                double v = (double)m;
                uint64_t bits;
                memcpy(&bits, &v, 8);
                bits ^= (uint64_t)neg << 63;
                memcpy(out, &bits, 8);
                *div = (uint8_t)nf;  /* (a zero divided stays the zero of its sign) */
                return 1;
            }
        }
    }
#endif
    (void)room;
    return col_number(b, s, e, out, div);
}

/* Whether the line [0, len) of b is of shape sh; the tokens' bounds into ts/te, where each one's whole digits end into ti
 * (-1: it has an exponent; see col_value). room: bytes readable from b (>= len). */
static int col_match(const ColShape *sh, const unsigned char *b, Py_ssize_t len, Py_ssize_t room, Py_ssize_t *ts,
                     Py_ssize_t *te, Py_ssize_t *ti) {
    Py_ssize_t pos = 0;
    for (Py_ssize_t k = 0;; k++) {
        Py_ssize_t l = sh->seg_len[k];
        if (len - pos < l || !lit_at(b + pos, room - pos, sh->lit + sh->seg_off[k], l)) return 0;
        pos += l;
        if (k == sh->nslot) return pos == len;
        Py_ssize_t t = pos;
        int cls = 0;
        if (t < len && b[t] == '-') { cls = 1; t++; }
        if (t >= len || !is_digit(b[t])) return 0;
        t = digit_end(b, t + 1, len);
        Py_ssize_t ie = t;
        if (t + 1 < len && b[t] == '.' && is_digit(b[t + 1])) {
            cls |= 2;
            t = digit_end(b, t + 2, len);
        }
        if (t < len && (b[t] | 0x20) == 'e') {
            Py_ssize_t u = t + 1;
            if (u < len && (b[u] == '+' || b[u] == '-')) u++;
            if (u < len && is_digit(b[u])) {
                cls |= 4;
                for (t = u; t < len && is_digit(b[t]); t++) {}
            }
        }
        if (!((sh->allow[k] >> cls) & 1)) return 0;
        ts[k] = pos;
        te[k] = t;
        ti[k] = cls & 4 ? -1 : ie;
        pos = t;
    }
}

static int col_grow(ColRows *r, Py_ssize_t nout) {
    if (r->n < r->cap) return 0;
    Py_ssize_t cap = r->cap ? 2 * r->cap : 256;
    int64_t **cols[4] = {&r->line, &r->bol, &r->eol, &r->ord};
    for (int k = 0; k < 4; k++) {
        int64_t *a = PyMem_Realloc(*cols[k], (size_t)cap * sizeof(int64_t));
        if (!a) { PyErr_NoMemory(); return -1; }
        *cols[k] = a;
    }
    double *v = PyMem_Realloc(r->val, (size_t)(cap * (nout ? nout : 1)) * sizeof(double));
    if (!v) { PyErr_NoMemory(); return -1; }
    r->val = v;
    uint8_t *d = PyMem_Realloc(r->div, (size_t)(cap * (nout ? nout : 1)));
    if (!d) { PyErr_NoMemory(); return -1; }
    r->div = d;
    r->cap = cap;
    return 0;
}

/* Whether the pending candidate line is of shape sh (its needles aside); the tokens' bounds into ts/te. */
static ALWAYS_INLINE int col_line(const ColShape *sh, const unsigned char *b, Py_ssize_t n, Py_ssize_t bol,
                                  Py_ssize_t len, Py_ssize_t *ts, Py_ssize_t *te, Py_ssize_t *ti) {
    Py_ssize_t tail = sh->seg_len[sh->nslot];  /* the end of the line first: where shapes of a needle differ */
    Py_ssize_t at = bol + len - tail;
    if (len < tail || !lit_at(b + at, n - at, sh->lit + sh->seg_off[sh->nslot], tail)) return 0;
    return col_match(sh, b + bol, len, n - bol, ts, te, ti);
}

/* Whether the needles of a stable shape's lines are always found in one order (that of its ids) with matcher m. A
 * needle occurrence at s is found at the even one of its pair offsets s + off, s + off + 1; occurrences in two
 * segments are found in line order (a token of 1+ bytes between: their pairs are 3+ bytes apart), and so are two in
 * one segment whose pair offsets p, q (fixed within the segment) are equal (one visit, one chain order) or 2+ apart.
 * Offsets 1 apart are found in one visit or two, as the line's place in the buffer falls: then not. */
static int cols_order(const ColShape *sh, const Matcher *m) {
    Py_ssize_t seg[COL_IDS], at[COL_IDS], n = 0;
    for (Py_ssize_t j = 0; j < sh->nids; j++) {
        Py_ssize_t id = sh->ids[j];
        if (id < 0 || id >= m->n) return 0;
        const Needle *nd = &m->nd[id];
        if (nd->len <= 0) return 0;
        int dup = 0;  /* a needle named twice: its occurrences are listed once */
        for (Py_ssize_t q = 0; q < j && !dup; q++) dup = sh->ids[q] == id;
        if (dup) continue;
        for (Py_ssize_t g = 0; g <= sh->nslot; g++) {
            const unsigned char *t = sh->lit + sh->seg_off[g];
            for (Py_ssize_t k = 0; k + nd->len <= sh->seg_len[g]; k++) {
                if (memcmp(t + k, nd->s, (size_t)nd->len) != 0) continue;
                if (n == COL_IDS) return 0;
                seg[n] = g;
                at[n++] = k + nd->off;
            }
        }
    }
    for (Py_ssize_t a = 0; a < n; a++)
        for (Py_ssize_t b = a + 1; b < n; b++)
            if (seg[a] == seg[b] && (at[a] - at[b] == 1 || at[b] - at[a] == 1)) return 0;
    return 1;
}

/* Whether cols_run may take the lines of shape k whole with this call's matcher, not searching them for needles: the
 * shape is stable and its needles are always found in the order of its ids (cols_order), so the needle search finds
 * in a line of it the needles of its literal text; each of those is a candidate needle (K_CAND: not a stats marker
 * or usage value, whose handling reads the numbers after it) named in its ids, and they are all of its ids, so the
 * search would make the line a candidate at its first needle and note exactly the shape's ids, as cols_early does;
 * no needle holds a newline (one could start in the line before or end in the next); no byte of its text or of a
 * number token is a single-byte needle (a flag the search would raise). */
static int cols_whole(struct Cols *c, Py_ssize_t k, const Matcher *m) {
    const ColShape *sh = &c->set->sh[k];
    if (!sh->stable || !sh->nids || !cols_order(sh, m)) return 0;
    if (!c->nl_needle) {
        c->nl_needle = 1;
        for (Py_ssize_t e = 0; e < m->n; e++)
            if (m->nd[e].len > 0 && memchr(m->nd[e].s, '\n', (size_t)m->nd[e].len)) c->nl_needle = 2;
    }
    if (c->nl_needle != 1) return 0;
    static const char token_bytes[] = "0123456789.-+eE";
    for (const char *t = token_bytes; *t; t++)
        if (m->single[(unsigned char)*t]) return 0;
    Py_ssize_t found = 0;
    for (Py_ssize_t g = 0; g <= sh->nslot; g++) {
        const unsigned char *t = sh->lit + sh->seg_off[g];
        Py_ssize_t len = sh->seg_len[g];
        for (Py_ssize_t i = 0; i < len; i++)
            if (m->single[t[i]]) return 0;
        for (Py_ssize_t i = 0; i + 1 < len; i++) {  /* each occurrence once: at its first filing's pair, i = s + off */
            unsigned p = PAIR(t[i], t[i + 1]);
            unsigned h = slot_of(p);
            while (m->slot[h].pair && m->slot[h].pair != p + 1) h = (h + 1) & (HSLOTS - 1);
            for (int32_t e = m->slot[h].pair ? m->slot[h].head : -1; e >= 0; e = m->nd[e].next) {
                const Needle *nd = &m->nd[e];
                Py_ssize_t s = i - nd->off;
                if (e >= m->n || s < 0 || s + nd->len > len || memcmp(t + s, nd->s, (size_t)nd->len) != 0) continue;
                if (nd->kind != K_CAND) return 0;
                int named = 0;
                for (Py_ssize_t j = 0; j < sh->nids && !named; j++) named = sh->ids[j] == e;
                if (!named) return 0;
                found++;
            }
        }
    }
    return found == sh->nids;
}

/* Lines taken whole (see cols_whole), from line start p on (nl newlines before it; kp the shape of the line before,
 * or -1): while the next line is one of a shape whose lines may be taken whole, it becomes the pending candidate line
 * with that shape's needles, as the needle search would have made it, and is finished at once (a row of its shape's
 * columns, or a line returned, as finish_cand decides). The loop then goes on from the first line that is not (jump),
 * none of the bytes before it visited (col_skip). The shape that came after each shape is tried first. */
static int cols_run(Scan *st, Py_ssize_t p, Py_ssize_t nl, Py_ssize_t kp) {
    struct Cols *c = st->cols;
    const ColSet *cs = c->set;
    const unsigned char *b = st->b;
    Py_ssize_t n = st->n, p0 = p, w0 = st->em.w, nlw0 = st->em.nl_w;
    while (p < n) {
        Py_ssize_t room = n - p < COL_LINE_MAX + 1 ? n - p : COL_LINE_MAX + 1;
        const unsigned char *eol = memchr(b + p, '\n', (size_t)room);
        if (!eol) break;  /* too long to be a row, or the buffer's last line */
        Py_ssize_t len = eol - (b + p), k = -1;
        Py_ssize_t first = kp >= 0 ? c->next[kp] : -1;
        for (Py_ssize_t q = -2; q < cs->n && k < 0; q++) {
            Py_ssize_t t = q == -2 ? first : q == -1 ? kp : q;  /* the shape that came after kp last, kp, the others */
            if (t < 0 || (q >= 0 && (t == first || t == kp))) continue;
            if (!c->whole[t]) c->whole[t] = cols_whole(c, t, st->m) ? 1 : 2;
            if (c->whole[t] == 1 && col_line(&cs->sh[t], b, n, p, len, c->pre_ts, c->pre_te, c->pre_ti)) k = t;
        }
        if (k < 0) break;
        if (kp >= 0) c->next[kp] = k;
        const ColShape *sh = &cs->sh[k];
        c->pre_k = k;
        c->pre_bol = p;
        if (c->nl_pos <= p) {  /* the rows' line counter, here without counting */
            c->nl_pos = p;
            c->nl_cnt = nl;
        }
        if (take_whole(st, p, p + len, nl, sh->ids, sh->nids) < 0) return -1;
        kp = k;
        p += len + 1;
        nl++;
    }
    whole_end(st, p0, p, nl, w0, nlw0);
    return 0;
}

/* Where the loop goes on after lines taken whole (cols_run): the even offset at or just before the next line's start
 * (its pair holds the newline before it at most: no needle does), with the newlines before it into *nls. */
static ALWAYS_INLINE Py_ssize_t jumped(Scan *st, Py_ssize_t *nls) {
    Py_ssize_t at = st->jump & ~(Py_ssize_t)1;
    if (nls) *nls = st->jump_nl - (at < st->jump);  /* b[jump - 1] is that newline */
    st->jump = -1;
    return at;
}

/* A candidate line has just begun with its first needle (found): when that is the first needle of a stable shape
 * and the line is of that shape, its needles are that shape's (the shape's literal text holds them, and no needle
 * can occur across a number: see shapes()), so they are noted now and the rest of the line is not visited. When its
 * lines may be taken whole (cols_whole), the line is finished now and the lines after it are taken whole while they
 * are lines of such shapes (cols_run). */
static int cols_early(Scan *st) {
    struct Cols *c = st->cols;
    const ColSet *cs = c->set;
    Py_ssize_t bol = st->c_bol, len = st->c_eol - st->c_bol;
    if (st->nids != 1 || len > COL_LINE_MAX) return 0;
    for (Py_ssize_t q = 0; q < cs->n; q++) {
        Py_ssize_t k = q == 0 ? c->last : q <= c->last ? q - 1 : q;  /* the last one matched, then the others */
        const ColShape *sh = &cs->sh[k];
        if (!sh->stable || sh->ids[0] != st->ids[0]) continue;
        if (!c->early[k]) c->early[k] = cols_order(sh, st->m) ? 1 : 2;
        if (c->early[k] != 1) continue;
        if (!col_line(sh, st->b, st->n, bol, len, c->pre_ts, c->pre_te, c->pre_ti)) continue;
        for (Py_ssize_t j = 1; j < sh->nids; j++)
            if (append_id(st, sh->ids[j]) < 0) return -1;
        c->pre_k = k;
        c->pre_bol = bol;
        st->col_skip = st->c_eol;
        if (!c->whole[k]) c->whole[k] = cols_whole(c, k, st->m) ? 1 : 2;
        if (c->whole[k] != 1 || st->c_eol >= st->n) return 0;
        Py_ssize_t p = st->c_eol + 1;
        if (finish_cand(st) < 0) return -1;  /* what the next visit would do first: nothing comes between */
        Py_ssize_t nl = c->nl_cnt + st->em.count(st->b + c->nl_pos, st->b + p);
        return cols_run(st, p, nl, k);
    }
    return 0;
}

/* The pending candidate line: 1 when it became a row of its shape's columns, 0 when it is returned as a line. */
static int cols_take(Scan *st) {
    struct Cols *c = st->cols;
    const ColSet *cs = c->set;
    const unsigned char *b = st->b;
    Py_ssize_t bol = st->c_bol, len = st->c_eol - st->c_bol;
    if (len > COL_LINE_MAX || !cs->n) return 0;
    Py_ssize_t ts_own[COL_TOKENS], te_own[COL_TOKENS], ti_own[COL_TOKENS];
    Py_ssize_t *ts = ts_own, *te = te_own, *ti = ti_own;
    for (Py_ssize_t q = 0; q < cs->n; q++) {
        Py_ssize_t k = q == 0 ? c->last : q <= c->last ? q - 1 : q;  /* the last one matched, then the others */
        if (c->pre_bol == bol && c->pre_k >= 0) {  /* matched already, its needles those of the shape */
            k = c->pre_k;
            ts = c->pre_ts;
            te = c->pre_te;
            ti = c->pre_ti;
            q = cs->n;
        }
        const ColShape *sh = &cs->sh[k];
        if (q < cs->n) {
            if (sh->nids != st->nids) continue;
            Py_ssize_t j = 0;
            while (j < st->nids && sh->ids[j] == st->ids[j]) j++;
            if (j < st->nids) continue;
            if (!col_line(sh, b, st->n, bol, len, ts, te, ti)) continue;
        }
        if (sh->ctx && bol > 0) {  /* the same text as the line before: Python folds it into that one (Runs) */
            Py_ssize_t pb = line_start(b, bol - 1);
            if (bol - 1 - pb == len && memcmp(b + pb, b + bol, (size_t)len) == 0) return 0;
        }
        ColRows *r = &c->rows[k];
        if (col_grow(r, sh->nout) < 0) return -1;
        for (Py_ssize_t s = 0; s < sh->nslot; s++)
            if (sh->col[s] >= 0 && !col_value(b + bol, ts[s], te[s], ti[s], st->n - bol, &r->val[r->n * sh->nout + sh->col[s]],
                                              &r->div[r->n * sh->nout + sh->col[s]]))
                return 0;
        c->nl_cnt += st->em.count(b + c->nl_pos, b + bol);  /* the bytes since the last row only */
        c->nl_pos = bol;
        r->line[r->n] = c->nl_cnt;
        r->bol[r->n] = bol;
        r->eol[r->n] = st->c_eol;
        r->ord[r->n] = sh->record ? c->nrec++ : -1;
        r->n++;
        c->last = k;
        c->any = 1;
        return 1;
    }
    return 0;
}

typedef struct { int64_t line; Py_ssize_t bol, eol, shape; } ColBack;

/* out[i] = val[i * stride] / 10^div[i * stride] (col_number's values, a row's after another's): the divisions are
 * independent, so they overlap. */
static void col_divide(double *out, const double *val, const uint8_t *div, Py_ssize_t n, Py_ssize_t stride) {
    for (Py_ssize_t i = 0; i < n; i++) {
        uint8_t k = div[i * stride];
        out[i] = k ? val[i * stride] / POW10[k] : val[i * stride];
    }
}

static PyObject *col_bytes(const void *p, Py_ssize_t n) {
    return PyBytes_FromStringAndSize((const char *)p, n);
}

/* col_stats of a column whose values rise (whole numbers in [0, 2^53), each above the one before: a step column),
 * without its loops: every value is finite, only the first may be 0, the first is the lowest and the last the highest,
 * and the COL_TOP highest are the last COL_TOP (no two are equal), so the candidates for the top are those indices.
 * The general loop gives the same tuple, but a rising column moves its highest value and its heap at every row. */
static PyObject *col_stats_rising(const double *v, Py_ssize_t n) {
    Py_ssize_t from = n > COL_TOP ? n - COL_TOP : 0;
    PyObject *top = PyList_New(n - from);
    if (!top) return NULL;
    for (Py_ssize_t j = from; j < n; j++) {
        PyObject *k = PyLong_FromSsize_t(j);
        if (!k) { Py_DECREF(top); return NULL; }
        PyList_SET_ITEM(top, j - from, k);
    }
    Py_ssize_t nonzero = n - (v[0] == 0);
    return Py_BuildValue("(nnnnnnNN)", nonzero, (Py_ssize_t)0, (Py_ssize_t)-1, (Py_ssize_t)-1, (Py_ssize_t)0, n - 1,
                         top, PyBool_FromLong(1));
}

/* What the metric store needs of one column of n values (series_store.MetricStore.add_rows): (values != 0 (NaN
 * included), non-finite values, first and last non-finite index, first index of the lowest and of the highest finite
 * value (-1: none), the indices that may enter the COL_TOP highest (in order): those above the COL_TOP-th highest
 * finite value b, and the first COL_TOP equal to b; every finite one when there are at most COL_TOP). Whatever the
 * store held before, only these can end among its COL_TOP highest (a value at or below b has COL_TOP values of this
 * column at or above it, and of the values equal to b only the first COL_TOP can get in: once COL_TOP values are
 * kept, its lowest is at least b and a value must beat it to get in); last, whether the values are whole numbers in
 * [0, 2^53), each above the one before. */
static PyObject *col_stats(const double *v, Py_ssize_t n) {
    Py_ssize_t nonzero = 0, bad = 0, bad0 = -1, bad1 = -1, lo = -1, hi = -1, finite = 0;
    int inc = 1;  /* whole numbers in [0, 2^53), each above the one before (a step column: metrics.Records' spans) */
    for (Py_ssize_t i = 0; i < n && inc; i++)
        inc = v[i] >= 0 && v[i] < 9007199254740992.0 && v[i] == (double)(int64_t)v[i] && (i == 0 || v[i] > v[i - 1]);
    if (inc && n > 0) return col_stats_rising(v, n);
    double heap[COL_TOP] = {0};  /* the COL_TOP highest finite values so far, a min-heap */
    Py_ssize_t nh = 0;
    double lov = 0, hiv = 0;  /* v[lo], v[hi], kept here: reading v[lo] each step made every step wait for the last */
    Py_ssize_t i = 0;
    while (i < n) {
        /* four values at a time while they are finite and none of them moves lo, hi or the full heap: one test each */
        if (nh == COL_TOP) {
            double least = heap[0];  /* the full heap's lowest */
            for (; i + 4 <= n; i += 4) {
                double a = v[i], b = v[i + 1], c = v[i + 2], d = v[i + 3];
                if ((a - a) + (b - b) + (c - c) + (d - d) != 0) break;  /* a NaN or an infinity among them */
                double mn = a < b ? a : b, mn2 = c < d ? c : d, mx = a > b ? a : b, mx2 = c > d ? c : d;
                mn = mn < mn2 ? mn : mn2;
                mx = mx > mx2 ? mx : mx2;
                if (mn < lov || mx > hiv || mx > least) break;
                nonzero += (a != 0) + (b != 0) + (c != 0) + (d != 0);
                finite += 4;
            }
            if (i >= n) break;
        }
        Py_ssize_t stop = i + 4 < n ? i + 4 : n;  /* value by value up to the next group of four */
        for (; i < stop; i++) {
            double x = v[i];
            if (x != 0) nonzero++;
            if (x - x != 0) {  /* NaN or infinite */
                bad++;
                if (bad0 < 0) bad0 = i;
                bad1 = i;
                continue;
            }
            finite++;
            if (lo < 0 || x < lov) { lo = i; lov = x; }
            if (hi < 0 || x > hiv) { hi = i; hiv = x; }
            if (nh < COL_TOP) {  /* sift up */
                Py_ssize_t c = nh++;
                while (c > 0 && heap[(c - 1) / 2] > x) { heap[c] = heap[(c - 1) / 2]; c = (c - 1) / 2; }
                heap[c] = x;
            } else if (x > heap[0]) {  /* replace the lowest, sift down */
                Py_ssize_t c = 0;
                for (;;) {
                    Py_ssize_t l = 2 * c + 1, m = l;
                    if (l >= COL_TOP) break;
                    if (l + 1 < COL_TOP && heap[l + 1] < heap[l]) m = l + 1;
                    if (heap[m] >= x) break;
                    heap[c] = heap[m];
                    c = m;
                }
                heap[c] = x;
            }
        }
    }
    PyObject *top = PyList_New(0);
    if (!top) return NULL;
    double b = heap[0];
    Py_ssize_t ties = 0;
    for (Py_ssize_t j = 0; j < n; j++) {
        double x = v[j];
        if (finite > COL_TOP && !(x >= b)) continue;  /* below b, or NaN: out (the usual case, one test) */
        if (x - x != 0) continue;
        int take = finite <= COL_TOP || x > b || (x == b && ties++ < COL_TOP);
        if (!take) continue;
        PyObject *k = PyLong_FromSsize_t(j);
        if (!k || PyList_Append(top, k) < 0) { Py_XDECREF(k); Py_DECREF(top); return NULL; }
        Py_DECREF(k);
    }
    return Py_BuildValue("(nnnnnnNN)", nonzero, bad, bad0, bad1, lo, hi, top, PyBool_FromLong(inc));
}

/* The share of each row's longest response its mean response length is (series_store.MetricStore.add: mean / longest,
 * in the rows whose longest is > 0 and whose mean is finite): (the shares as float64 bytes, the indices of the rows
 * they are of as int64 bytes, None when every row has one, their col_stats). */
static PyObject *col_share(const double *mean, const double *longest, Py_ssize_t n) {
    PyObject *vals = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(double));
    if (!vals) return NULL;
    double *v = (double *)PyBytes_AS_STRING(vals);
    int64_t *rows = NULL;
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (longest[i] > 0 && mean[i] - mean[i] == 0) {
            if (rows) rows[m] = i;
            v[m++] = mean[i] / longest[i];
        } else if (!rows) {  /* a row without a share: from here on the rows are listed */
            rows = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(int64_t));
            if (!rows) { Py_DECREF(vals); PyErr_NoMemory(); return NULL; }
            for (Py_ssize_t r = 0; r < m; r++) rows[r] = r;
        }
    }
    PyObject *stats = col_stats(v, m);
    PyObject *at = rows ? col_bytes(rows, m * 8) : Py_NewRef(Py_None);
    PyMem_Free(rows);
    if (!stats || !at || _PyBytes_Resize(&vals, m * (Py_ssize_t)sizeof(double)) < 0) {
        Py_XDECREF(stats);
        Py_XDECREF(at);
        Py_XDECREF(vals);
        return NULL;
    }
    return Py_BuildValue("(NNN)", vals, at, stats);
}

/* The distinct values of a column of n values, in the order each first occurs, as Python's Counter counts them (0.0
 * and -0.0 are one value, the first one seen; a column holds no NaN: `nan` is a word, not a number token): (the values
 * as float64 bytes, how many rows hold each and the index of the first, as int64 bytes). */
static PyObject *col_tally(const double *v, Py_ssize_t n) {
    Py_ssize_t size = 16;
    while (size < 2 * n) size *= 2;
    int64_t *slot = PyMem_Malloc((size_t)size * sizeof(int64_t));  /* index of a distinct value, -1: empty */
    size_t room = (size_t)(n ? n : 1);
    int64_t *count = PyMem_Malloc(room * sizeof(int64_t)), *first = PyMem_Malloc(room * sizeof(int64_t));
    double *val = PyMem_Malloc(room * sizeof(double));
    if (!slot || !count || !first || !val) {
        PyMem_Free(slot); PyMem_Free(count); PyMem_Free(first); PyMem_Free(val);
        return PyErr_NoMemory();
    }
    memset(slot, 0xff, (size_t)size * sizeof(int64_t));
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        double x = v[i] == 0 ? 0.0 : v[i];
        uint64_t bits;
        memcpy(&bits, &x, 8);
        uint64_t h = (bits ^ (bits >> 29)) * UINT64_C(0x9E3779B97F4A7C15);
        Py_ssize_t at = (Py_ssize_t)(h >> 20) & (size - 1);
        for (;;) {
            int64_t d = slot[at];
            if (d < 0) {
                slot[at] = m;
                val[m] = v[i];
                count[m] = 1;
                first[m++] = i;
                break;
            }
            if (val[d] == v[i]) { count[d]++; break; }
            at = (at + 1) & (size - 1);
        }
    }
    PyObject *out = Py_BuildValue("(NNN)", col_bytes(val, m * 8), col_bytes(count, m * 8), col_bytes(first, m * 8));
    PyMem_Free(slot); PyMem_Free(count); PyMem_Free(first); PyMem_Free(val);
    return out;
}


/* col_join([vals, ...], nout, mean, longest) -> (vals, stats): the values of write-outs of one shape (each as cols_flush
 * gives them: nout columns one after another, float64 in native order) as one write-out's, column after column, with
 * each column's col_stats and, when mean and longest are output columns (else -1), the share col_share works out:
 * what cols_flush gives for their rows had they been written out at once (series_store.Joiner). */
static PyObject *col_join(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *list;
    Py_ssize_t nout, mean, longest;
    if (!PyArg_ParseTuple(args, "O!nnn", &PyList_Type, &list, &nout, &mean, &longest)) return NULL;
    Py_ssize_t k = PyList_GET_SIZE(list), n = 0;
    if (nout <= 0 || mean >= nout || longest >= nout || (mean >= 0) != (longest >= 0)) {
        PyErr_SetString(PyExc_ValueError, "bad columns");
        return NULL;
    }
    Py_buffer *bufs = PyMem_Calloc((size_t)(k ? k : 1), sizeof(Py_buffer));
    if (!bufs) return PyErr_NoMemory();
    Py_ssize_t got = 0;
    PyObject *vals = NULL, *stats = NULL;
    for (; got < k; got++) {
        if (PyObject_GetBuffer(PyList_GET_ITEM(list, got), &bufs[got], PyBUF_C_CONTIGUOUS) < 0) goto done;
        if (bufs[got].len % (nout * (Py_ssize_t)sizeof(double))) {
            PyErr_SetString(PyExc_ValueError, "not whole rows");
            got++;
            goto done;
        }
        n += bufs[got].len / (nout * (Py_ssize_t)sizeof(double));
    }
    vals = PyBytes_FromStringAndSize(NULL, n * nout * (Py_ssize_t)sizeof(double));
    if (!vals) goto done;
    double *out = (double *)PyBytes_AS_STRING(vals);
    Py_ssize_t at = 0;
    for (Py_ssize_t i = 0; i < k; i++) {
        Py_ssize_t m = bufs[i].len / (nout * (Py_ssize_t)sizeof(double));
        for (Py_ssize_t j = 0; j < nout; j++)
            memcpy(out + j * n + at, (const double *)bufs[i].buf + j * m, (size_t)m * sizeof(double));
        at += m;
    }
    stats = PyTuple_New(nout + (mean >= 0));
    for (Py_ssize_t j = 0; stats && j < nout; j++) {
        PyObject *one = col_stats(out + j * n, n);
        if (!one) Py_CLEAR(stats);
        else PyTuple_SET_ITEM(stats, j, one);
    }
    if (stats && mean >= 0) {
        PyObject *one = col_share(out + mean * n, out + longest * n, n);
        if (!one) Py_CLEAR(stats);
        else PyTuple_SET_ITEM(stats, nout, one);
    }
done:
    for (Py_ssize_t i = 0; i < got; i++) PyBuffer_Release(&bufs[i]);
    PyMem_Free(bufs);
    if (!stats) {
        Py_XDECREF(vals);
        return NULL;
    }
    return Py_BuildValue("(NN)", vals, stats);
}

/* Write out the rows so far (kind 6), if any. The stats tuple holds one entry per output column, then, for a shape
 * with a share (see shapes()), col_share's, or for one with a tally, col_tally's. */
static int cols_flush(Scan *st) {
    struct Cols *c = st->cols;
    if (!c || !c->any) return 0;
    const ColSet *cs = c->set;
    PyObject *parts = PyList_New(0);
    if (!parts) return -1;
    int64_t first = -1;
    for (Py_ssize_t k = 0; k < cs->n; k++) {
        ColRows *r = &c->rows[k];
        if (!r->n) continue;
        const ColShape *sh = &cs->sh[k];
        Py_ssize_t n = r->n, nout = sh->nout;
        if (first < 0 || r->line[0] < first) first = r->line[0];
        PyObject *vals = PyBytes_FromStringAndSize(NULL, n * nout * (Py_ssize_t)sizeof(double));
        if (!vals) { Py_DECREF(parts); return -1; }
        double *out = (double *)PyBytes_AS_STRING(vals);
        for (Py_ssize_t j = 0; j < nout; j++)  /* column after column, each value divided as col_number left it */
            col_divide(out + j * n, r->val + j, r->div + j, n, nout);
        PyObject *stats = PyTuple_New(nout + (sh->share_mean >= 0 || sh->tally >= 0));
        for (Py_ssize_t j = 0; stats && j < nout; j++) {
            PyObject *one = col_stats(out + j * n, n);
            if (!one) Py_CLEAR(stats);
            else PyTuple_SET_ITEM(stats, j, one);
        }
        if (stats && (sh->share_mean >= 0 || sh->tally >= 0)) {
            PyObject *one = sh->share_mean >= 0 ? col_share(out + sh->share_mean * n, out + sh->share_max * n, n)
                                                : col_tally(out + sh->tally * n, n);
            if (!one) Py_CLEAR(stats);
            else PyTuple_SET_ITEM(stats, nout, one);
        }
        if (!stats) { Py_DECREF(vals); Py_DECREF(parts); return -1; }
        PyObject *t = Py_BuildValue("(nnNNNNNN)", k, n, col_bytes(r->line, n * 8), col_bytes(r->bol, n * 8),
                                    col_bytes(r->eol, n * 8), col_bytes(r->ord, n * 8), vals, stats);
        if (!t || PyList_Append(parts, t) < 0) { Py_XDECREF(t); Py_DECREF(parts); return -1; }
        Py_DECREF(t);
        r->n = 0;
    }
    c->nrec = 0;
    c->any = 0;
    PyObject *payload = PyList_AsTuple(parts);
    Py_DECREF(parts);
    if (!payload) return -1;
    PyObject *hit = Py_BuildValue("(iLiiN)", 6, (long long)first, 0, 0, payload);
    if (!hit) return -1;
    int rc = PyList_Append(st->em.out, hit);
    Py_DECREF(hit);
    return rc;
}

/* A line whose line index is known (a context row handed back), as emit() writes a candidate line. */
static int emit_at(Scan *st, int64_t line, Py_ssize_t bol, Py_ssize_t eol, const ColShape *sh) {
    PyObject *ids = PyTuple_New(sh->nids);
    if (!ids) return -1;
    for (Py_ssize_t j = 0; j < sh->nids; j++) {
        PyObject *v = PyLong_FromSsize_t(sh->ids[j]);
        if (!v) { Py_DECREF(ids); return -1; }
        PyTuple_SET_ITEM(ids, j, v);
    }
    PyObject *t = Py_BuildValue("(iLnnN)", 0, (long long)line, bol, eol, ids);
    if (!t) return -1;
    int rc = PyList_Append(st->em.out, t);
    Py_DECREF(t);
    return rc;
}

/* Before the pending candidate line is returned: the rows so far are written out, but for the context rows Python
 * must see as lines next to it, which are returned as lines after them, in line order: those in the COL_BACK lines
 * before a line a traceback chain may start at (its needles hold one of `back`: signals.chains reads the context lines
 * just before it as its header), and the row just before a line of the same text (Python folds the two, Runs). */
static int cols_before(Scan *st) {
    struct Cols *c = st->cols;
    if (!c->any) return 0;
    const ColSet *cs = c->set;
    const unsigned char *b = st->b;
    Py_ssize_t from = st->c_eol + 1;  /* context rows from here on are returned as lines */
    int chain = 0;
    for (Py_ssize_t j = 0; j < st->nids && !chain; j++)
        for (Py_ssize_t k = 0; k < cs->nback; k++)
            if (st->ids[j] == cs->back[k]) { chain = 1; break; }
    if (chain) {
        from = st->c_bol;
        for (int k = 0; k < COL_BACK && from > 0; k++) from = line_start(b, from - 1);
    } else if (st->c_bol > 0) {
        Py_ssize_t pb = line_start(b, st->c_bol - 1), len = st->c_eol - st->c_bol;
        if (st->c_bol - 1 - pb == len && memcmp(b + pb, b + st->c_bol, (size_t)len) == 0) from = pb;
    }
    ColBack back[COL_BACK * 2];
    Py_ssize_t nback = 0;
    for (Py_ssize_t k = 0; k < cs->n; k++) {
        ColRows *r = &c->rows[k];
        if (!cs->sh[k].ctx) continue;
        while (r->n && r->bol[r->n - 1] >= from && nback < COL_BACK * 2) {
            r->n--;
            back[nback].line = r->line[r->n];
            back[nback].bol = r->bol[r->n];
            back[nback].eol = r->eol[r->n];
            back[nback].shape = k;
            nback++;
        }
    }
    if (nback) {
        int left = 0;
        for (Py_ssize_t k = 0; k < cs->n; k++) left |= c->rows[k].n > 0;
        c->any = left;
    }
    if (cols_flush(st) < 0) return -1;
    for (Py_ssize_t i = 1; i < nback; i++)  /* insertion sort by line: at most a few rows */
        for (Py_ssize_t j = i; j > 0 && back[j].line < back[j - 1].line; j--) {
            ColBack tmp = back[j];
            back[j] = back[j - 1];
            back[j - 1] = tmp;
        }
    for (Py_ssize_t i = 0; i < nback; i++)
        if (emit_at(st, back[i].line, back[i].bol, back[i].eol, &cs->sh[back[i].shape]) < 0) return -1;
    return 0;
}

static struct Cols *cols_new(PyObject *cap) {
    ColSet *cs = (ColSet *)PyCapsule_GetPointer(cap, "triage.scan._linescan.Shapes");
    if (!cs) return NULL;
    struct Cols *c = PyMem_Calloc(1, sizeof(struct Cols));
    if (!c) { PyErr_NoMemory(); return NULL; }
    c->set = c->owner = cs;
    c->pre_k = c->pre_bol = -1;
    for (Py_ssize_t k = 0; k < COL_SHAPES; k++) {
        c->next[k] = -1;
        c->rows[k] = cs->spare[k];  /* the arrays of the call before, empty */
        memset(&cs->spare[k], 0, sizeof(ColRows));
    }
    return c;
}

static void cols_free(struct Cols *c) {
    if (!c) return;
    for (Py_ssize_t k = 0; k < COL_SHAPES; k++) {
        c->rows[k].n = 0;
        colrows_free(&c->owner->spare[k]);  /* (none: this call took them) */
        c->owner->spare[k] = c->rows[k];
    }
    PyMem_Free(c);
}
