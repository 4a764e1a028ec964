/*
 * scrapy_fresh._speedups: optional C version of the "fast" hash mode of
 * scrapy_fresh.fingerprint.
 *
 * Everything here computes exactly what the NumPy code of fingerprint.py computes;
 * that code stays the reference and the fallback when this module is not built, and
 * tests/test_speedups.py checks that both give the same answers.
 *
 * The fast hash of a string of code points c_0 .. c_{L-1} is
 *
 *     mix(sum_j c_j * P**j + (L + 1) * Q)   modulo 2**64
 *
 * with mix the SplitMix64 finaliser. Bit i of a simhash is set iff the features whose
 * hash has bit i set weigh more than half of all features.
 *
 * Nothing here releases the GIL: the functions read list, tuple and dict items through
 * borrowed references and run no Python code while they do.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

/* The constants of fingerprint.py: _P, pow(_P, -1, 2**64), _Q, _MIX1, _MIX2. */
#define P_MUL 0x9E3779B97F4A7C15ULL
#define P_INV 0xF1DE83E19937733DULL
#define Q_LEN 0xD6E8FEB86659FD93ULL
#define MIX1 0xBF58476D1CE4E5B9ULL
#define MIX2 0x94D049BB133111EBULL

/* fingerprint.py's _CHUNK: features per batch. Float weights are summed per batch, so
   inputs with float weights and more features than this are left to Python. */
#define CHUNK (1 << 14)
/* Integer weights are summed in int64 while the sum of their absolute values is at
   most this (so that 2 * sum cannot overflow); larger ones are left to Python. */
#define INT_LIMIT ((int64_t)1 << 61)

#define SPACE 32
#define ZERO 48
#define WORD 1
#define DIGIT 2

#define BLOCK 64
static uint64_t POW[BLOCK + 1];     /* P**j for j <= BLOCK */
static uint64_t POW_INV[BLOCK + 1]; /* P**-j for j <= BLOCK */
/* SPREAD[b]: byte j is bit j of b; adding SPREAD values counts 8 bits in parallel. */
static uint64_t SPREAD[256];
/* For ASCII code points: the lower-case character, "0" for digits when normalising
   digits, SPACE for characters that are not word characters (fingerprint._ascii_map). */
static unsigned char ASCII_MAP[2][128];
/* str.lower, called unbound so that str subclasses cannot change it. */
static PyObject *str_lower = NULL;

/* Character classes of non-ASCII code points (WORD | DIGIT), 256 at a time, filled in
   when first needed (under the GIL). */
#define N_BLOCKS (0x110000 >> 8)
static unsigned char *class_blocks[N_BLOCKS];

static unsigned char
compute_class(Py_UCS4 ch)
{
    /* fingerprint._char_class: str.isalnum() or "_", and str.isdecimal(). */
    int is_word = Py_UNICODE_ISALNUM(ch) || ch == '_';
    int is_digit = Py_UNICODE_ISDECIMAL(ch) ? 1 : 0;
    return (unsigned char)(is_word | (is_digit << 1));
}

static unsigned char
char_class(Py_UCS4 ch)
{
    unsigned char *block = class_blocks[ch >> 8];
    if (block == NULL) {
        block = PyMem_RawMalloc(256);
        if (block == NULL) {
            return compute_class(ch); /* no memory for the cache: classify directly */
        }
        Py_UCS4 base = ch & ~(Py_UCS4)0xFF;
        for (int i = 0; i < 256; i++) {
            block[i] = compute_class(base + (Py_UCS4)i);
        }
        class_blocks[ch >> 8] = block;
    }
    return block[ch & 0xFF];
}

static inline uint64_t
mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= MIX1;
    x ^= x >> 27;
    x *= MIX2;
    return x ^ (x >> 31);
}

static inline uint64_t
finish(uint64_t poly, uint64_t length)
{
    return mix64(poly + (length + 1) * Q_LEN);
}

/* GCC's vectoriser turns the products below into slow emulated 64-bit vector
   multiplications (x86-64 has none before AVX-512): keep them scalar. */
#if defined(__GNUC__) && !defined(__clang__)
#define SCALAR_LOOPS __attribute__((optimize("no-tree-vectorize")))
#else
#define SCALAR_LOOPS
#endif

/* sum_j c[j] * P**j modulo 2**64, BLOCK code points at a time: within a block the
   products are independent (four running sums), instead of one long chain. */
#define DEFINE_POLY(NAME, TYPE)                                                         \
    SCALAR_LOOPS static uint64_t NAME(const TYPE *c, Py_ssize_t n)                      \
    {                                                                                   \
        uint64_t poly = 0, base = 1;                                                    \
        while (n > 0) {                                                                 \
            Py_ssize_t m = n < BLOCK ? n : BLOCK, j = 0;                                \
            uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;                                    \
            for (; j + 4 <= m; j += 4) {                                                \
                s0 += (uint64_t)c[j] * POW[j];                                          \
                s1 += (uint64_t)c[j + 1] * POW[j + 1];                                  \
                s2 += (uint64_t)c[j + 2] * POW[j + 2];                                  \
                s3 += (uint64_t)c[j + 3] * POW[j + 3];                                  \
            }                                                                           \
            for (; j < m; j++) {                                                        \
                s0 += (uint64_t)c[j] * POW[j];                                          \
            }                                                                           \
            poly += base * (s0 + s1 + s2 + s3);                                         \
            base *= POW[BLOCK];                                                         \
            c += m;                                                                     \
            n -= m;                                                                     \
        }                                                                               \
        return poly;                                                                    \
    }

DEFINE_POLY(poly_ucs1, Py_UCS1)
DEFINE_POLY(poly_ucs2, Py_UCS2)
DEFINE_POLY(poly_ucs4, Py_UCS4)

static inline int
ensure_ready(PyObject *s)
{
#if PY_VERSION_HEX < 0x030C0000
    return PyUnicode_READY(s);
#else
    (void)s;
    return 0;
#endif
}

/* The fast hash of a str (any str, lone surrogates included). -1 on error. */
static int
str_hash(PyObject *s, uint64_t *out)
{
    if (ensure_ready(s) < 0) {
        return -1;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    const void *data = PyUnicode_DATA(s);
    uint64_t poly;
    switch (PyUnicode_KIND(s)) {
    case PyUnicode_1BYTE_KIND:
        poly = poly_ucs1((const Py_UCS1 *)data, n);
        break;
    case PyUnicode_2BYTE_KIND:
        poly = poly_ucs2((const Py_UCS2 *)data, n);
        break;
    default:
        poly = poly_ucs4((const Py_UCS4 *)data, n);
        break;
    }
    *out = finish(poly, (uint64_t)n);
    return 0;
}

/* ------------------------------------------------------------------------------------ */
/* The vote with unit weights                                                           */
/* ------------------------------------------------------------------------------------ */

typedef struct {
    uint64_t lanes[8];  /* 8 byte-wide counters each, for bits 8p .. 8p + 7 */
    uint64_t counts[64];
    uint64_t n;
    unsigned pending;   /* additions since the lanes were flushed (at most 255) */
} UnitVote;

static void
unit_flush(UnitVote *v)
{
    for (int p = 0; p < 8; p++) {
        uint64_t lane = v->lanes[p];
        for (int j = 0; j < 8; j++) {
            v->counts[8 * p + j] += (lane >> (8 * j)) & 0xFF;
        }
        v->lanes[p] = 0;
    }
    v->pending = 0;
}

static inline void
unit_add(UnitVote *v, uint64_t h)
{
    for (int p = 0; p < 8; p++) {
        v->lanes[p] += SPREAD[(h >> (8 * p)) & 0xFF];
    }
    v->n++;
    if (++v->pending == 255) {
        unit_flush(v);
    }
}

static uint64_t
unit_value(UnitVote *v)
{
    unit_flush(v);
    uint64_t value = 0;
    for (int b = 0; b < 64; b++) {
        if (2 * v->counts[b] > v->n) {
            value |= (uint64_t)1 << b;
        }
    }
    return value;
}

/* ------------------------------------------------------------------------------------ */
/* fast_hash, fast_hashes                                                               */
/* ------------------------------------------------------------------------------------ */

PyDoc_STRVAR(fast_hash_doc,
"fast_hash($module, feature, /)\n--\n\n"
"The fast hash of one str, as an unsigned 64-bit int.");

static PyObject *
speedups_fast_hash(PyObject *Py_UNUSED(module), PyObject *feature)
{
    if (!PyUnicode_Check(feature)) {
        PyErr_Format(PyExc_TypeError, "feature (%.200s) must be a str.",
                     Py_TYPE(feature)->tp_name);
        return NULL;
    }
    uint64_t h;
    if (str_hash(feature, &h) < 0) {
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(h);
}

PyDoc_STRVAR(fast_hashes_doc,
"fast_hashes($module, features, /)\n--\n\n"
"The fast hashes of a list or tuple of str: 8 bytes each, big-endian.");

static PyObject *
speedups_fast_hashes(PyObject *Py_UNUSED(module), PyObject *features)
{
    if (!PyList_Check(features) && !PyTuple_Check(features)) {
        PyErr_Format(PyExc_TypeError, "features (%.200s) must be a list or tuple of str.",
                     Py_TYPE(features)->tp_name);
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(features);
    if (n > PY_SSIZE_T_MAX / 8) {
        return PyErr_NoMemory();
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, 8 * n);
    if (out == NULL) {
        return NULL;
    }
    unsigned char *dest = (unsigned char *)PyBytes_AS_STRING(out);
    PyObject **items = PySequence_Fast_ITEMS(features);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = items[i];
        uint64_t h;
        if (!PyUnicode_Check(item)) {
            PyErr_Format(PyExc_TypeError, "features[%zd] (%.200s) must be a str.", i,
                         Py_TYPE(item)->tp_name);
            Py_DECREF(out);
            return NULL;
        }
        if (str_hash(item, &h) < 0) {
            Py_DECREF(out);
            return NULL;
        }
        for (int j = 0; j < 8; j++) {
            dest[8 * i + j] = (unsigned char)(h >> (56 - 8 * j));
        }
    }
    return out;
}

/* ------------------------------------------------------------------------------------ */
/* simhash                                                                              */
/* ------------------------------------------------------------------------------------ */

PyDoc_STRVAR(simhash_doc,
"simhash($module, features, /)\n--\n\n"
"The fast-hash simhash of a list or tuple of str or (str, weight) pairs, or of a\n"
"dict of str to weight, or None when Python must compute it: other item types,\n"
"weights other than int, bool and finite float, int weights too large for int64\n"
"sums, float weights among more than 16384 features.");

static PyObject *
speedups_simhash(PyObject *Py_UNUSED(module), PyObject *features)
{
    int is_dict = 0;
    Py_ssize_t n;
    PyObject **items = NULL;
    if (PyList_CheckExact(features) || PyTuple_CheckExact(features)) {
        n = PySequence_Fast_GET_SIZE(features);
        items = PySequence_Fast_ITEMS(features);
    }
    else if (PyDict_CheckExact(features)) {
        n = PyDict_GET_SIZE(features);
        is_dict = 1;
    }
    else {
        PyErr_Format(PyExc_TypeError, "features (%.200s) must be a list, tuple or dict.",
                     Py_TYPE(features)->tp_name);
        return NULL;
    }
    if (n == 0) {
        return PyLong_FromLong(0);
    }
    if ((size_t)n > (size_t)PY_SSIZE_T_MAX / (2 * sizeof(uint64_t))) {
        return PyErr_NoMemory();
    }
    uint64_t *hashes = PyMem_Malloc((size_t)n * sizeof(uint64_t));
    int64_t *int_weights = NULL;   /* allocated at the first weighted item */
    double *float_weights = NULL;
    if (hashes == NULL) {
        return PyErr_NoMemory();
    }
    PyObject *result = NULL;
    int weighted = 0, any_float = 0;
    uint64_t abs_total = 0; /* sum of |int weight|, capped just above INT_LIMIT */
    Py_ssize_t dict_pos = 0;

    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name, *weight = NULL;
        if (is_dict) {
            if (!PyDict_Next(features, &dict_pos, &name, &weight)) {
                goto python; /* cannot happen: no Python code runs meanwhile */
            }
        }
        else {
            PyObject *item = items[i];
            if (PyUnicode_Check(item)) {
                name = item;
            }
            else if ((PyTuple_CheckExact(item) || PyList_CheckExact(item))
                     && PySequence_Fast_GET_SIZE(item) == 2) {
                name = PySequence_Fast_GET_ITEM(item, 0);
                weight = PySequence_Fast_GET_ITEM(item, 1);
            }
            else {
                goto python;
            }
        }
        if (!PyUnicode_Check(name)) {
            goto python;
        }
        if (weight != NULL && int_weights == NULL) {
            weighted = 1;
            int_weights = PyMem_Malloc((size_t)n * sizeof(int64_t));
            float_weights = PyMem_Malloc((size_t)n * sizeof(double));
            if (int_weights == NULL || float_weights == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            for (Py_ssize_t j = 0; j < i; j++) {
                int_weights[j] = 1;
                float_weights[j] = 1.0;
            }
        }
        if (int_weights != NULL) {
            int64_t w = 1;
            if (weight == NULL) {
                w = 1; /* a bare str among pairs weighs 1 */
            }
            else if (PyBool_Check(weight)) {
                w = weight == Py_True;
            }
            else if (PyLong_CheckExact(weight)) {
                int overflow;
                long long value = PyLong_AsLongLongAndOverflow(weight, &overflow);
                if (overflow || (value == -1 && PyErr_Occurred())) {
                    PyErr_Clear();
                    goto python;
                }
                if (value > INT_LIMIT || value < -INT_LIMIT) {
                    goto python;
                }
                w = (int64_t)value;
            }
            else if (PyFloat_CheckExact(weight)) {
                double value = PyFloat_AS_DOUBLE(weight);
                if (!isfinite(value)) {
                    goto python; /* Python raises the error */
                }
                any_float = 1;
                int_weights[i] = 0;
                float_weights[i] = value;
                goto hash;
            }
            else {
                goto python;
            }
            int_weights[i] = w;
            float_weights[i] = (double)w; /* exact: |w| <= 2**61 rounds like float(w) */
            abs_total += (uint64_t)(w < 0 ? -w : w);
            if (abs_total > (uint64_t)INT_LIMIT) {
                abs_total = (uint64_t)INT_LIMIT + 1; /* stays capped: no wrap-around */
            }
        }
    hash:
        if (str_hash(name, &hashes[i]) < 0) {
            goto done;
        }
    }

    uint64_t value = 0;
    if (!weighted) {
        UnitVote vote;
        memset(&vote, 0, sizeof(vote));
        for (Py_ssize_t i = 0; i < n; i++) {
            unit_add(&vote, hashes[i]);
        }
        value = unit_value(&vote);
    }
    else if (!any_float) {
        /* Exact integer sums: |every partial sum| <= abs_total <= 2**61. */
        if (abs_total > (uint64_t)INT_LIMIT) {
            goto python;
        }
        int64_t sums[64] = {0};
        int64_t total = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t w = int_weights[i];
            uint64_t h = hashes[i];
            total += w;
            for (int b = 0; b < 64; b++) {
                sums[b] += w & -(int64_t)((h >> b) & 1);
            }
        }
        for (int b = 0; b < 64; b++) {
            if (2 * sums[b] > total) {
                value |= (uint64_t)1 << b;
            }
        }
    }
    else {
        /* float64 sums feature after feature, like fingerprint._Tally (one batch). */
        if (n > CHUNK) {
            goto python;
        }
        double sums[64] = {0.0};
        double total = 0.0;
        for (Py_ssize_t i = 0; i < n; i++) {
            double w = float_weights[i];
            uint64_t h = hashes[i];
            total += w;
            for (int b = 0; b < 64; b++) {
                if ((h >> b) & 1) {
                    sums[b] += w;
                }
            }
        }
        double half = total / 2.0;
        for (int b = 0; b < 64; b++) {
            if (sums[b] > half) {
                value |= (uint64_t)1 << b;
            }
        }
    }
    result = PyLong_FromUnsignedLongLong(value);
    goto done;

python:
    result = Py_NewRef(Py_None);
done:
    PyMem_Free(hashes);
    PyMem_Free(int_weights);
    PyMem_Free(float_weights);
    return result;
}

/* ------------------------------------------------------------------------------------ */
/* fingerprint_text                                                                     */
/* ------------------------------------------------------------------------------------ */

/* The normalised text is " ".join(words(text)): words w_0, w_1, ... at positions
   S_0 = 0, S_{t+1} = S_t + len_t + 1, one space between them. With W_t the polynomial
   of word t on its own (sum_i c_i P**i) and G_t the polynomial of all the text before
   it (sum_{j < S_t} c_j P**j),

       E_t     = G_t + P**S_t * W_t                 (the text up to the end of word t)
       G_{t+1} = E_t + P**S_t * SPACE * P**len_t

   and the shingle of words a .. b has the polynomial (E_b - G_a) * P**-S_a and the
   length S_b + len_b - S_a. Each character costs one product with a small table of
   powers; the powers of P and of P**-1 at the word starts are updated once per word. */

typedef struct {
    uint64_t before;  /* G_a */
    uint64_t pinv;    /* P**-S_a */
    uint64_t start;   /* S_a */
} WordStart;

typedef struct {
    uint64_t before, power, pinv, start; /* G_t, P**S_t, P**-S_t, S_t of the next word */
    uint64_t end_text, end;              /* E_t and S_t + len_t of the last word */
    uint64_t words;
    Py_ssize_t k;
    WordStart *ring; /* starts of the last k words (fewer while it grows) */
    Py_ssize_t cap, slot;
    WordStart small[64];
    UnitVote vote;
} TextState;

static inline void
add_span(TextState *t, const WordStart *first)
{
    uint64_t poly = (t->end_text - first->before) * first->pinv;
    unit_add(&t->vote, finish(poly, t->end - first->start));
}

/* A word starts: record where, growing the ring while there are fewer than k words. */
static int
begin_word(TextState *t)
{
    if (t->slot == t->cap) {
        if (t->cap < t->k) { /* not yet k words: grow (no word was overwritten) */
            Py_ssize_t cap = t->cap > t->k / 2 ? t->k : 2 * t->cap;
            WordStart *ring;
            if (t->ring == t->small) {
                ring = PyMem_Malloc((size_t)cap * sizeof(WordStart));
                if (ring != NULL) {
                    memcpy(ring, t->small, sizeof(t->small));
                }
            }
            else {
                ring = PyMem_Realloc(t->ring, (size_t)cap * sizeof(WordStart));
            }
            if (ring == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            t->ring = ring;
            t->cap = cap;
        }
        else {
            t->slot = 0;
        }
    }
    WordStart *s = &t->ring[t->slot];
    s->before = t->before;
    s->pinv = t->pinv;
    s->start = t->start;
    return 0;
}

/* A word ends: word_poly = W_t, length = 64 * q + r, base = P**(64 q), base_inv its
   inverse. Hash the shingle of the last k words, then step past the word and a space. */
static inline void
end_word(TextState *t, uint64_t word_poly, uint64_t length, uint64_t base,
         uint64_t base_inv, int r)
{
    t->end_text = t->before + t->power * word_poly;
    t->end = t->start + length;
    t->words++;
    if (t->words >= (uint64_t)t->k) { /* then cap == k: the oldest follows the newest */
        Py_ssize_t oldest = t->slot + 1 == t->cap ? 0 : t->slot + 1;
        add_span(t, &t->ring[oldest]);
    }
    t->slot++;
    uint64_t p_len = base * POW[r];          /* P**len */
    t->before = t->end_text + t->power * (SPACE * p_len);
    t->power *= p_len * P_MUL;                   /* P**(S + len + 1) */
    t->pinv *= base_inv * POW_INV[r] * P_INV;
    t->start = t->end + 1;
}

/* The words: runs of word characters, lower-cased, each run of decimal digits made
   "0" when normalising digits (fingerprint._normal_codes). Classes and mapping of a
   code point: */
#define MAP_CHAR(ch, mapped)                                                            \
    if ((ch) < 128) {                                                                   \
        mapped = ascii[ch];                                                             \
    }                                                                                   \
    else {                                                                              \
        unsigned char cls_ = char_class(ch);                                            \
        mapped = !(cls_ & WORD) ? SPACE : (normalize && (cls_ & DIGIT)) ? ZERO : (ch);  \
    }

#define DEFINE_SCAN(NAME, TYPE)                                                         \
    SCALAR_LOOPS static int NAME(TextState *t, const TYPE *data, Py_ssize_t n,          \
                                 int normalize)                                         \
    {                                                                                   \
        const unsigned char *ascii = ASCII_MAP[normalize];                              \
        /* Runs of this collapse into one: "0" when normalising digits, else none. */   \
        const Py_UCS4 run = normalize ? ZERO : 0x110000;                                \
        Py_ssize_t i = 0;                                                               \
        while (i < n) {                                                                 \
            Py_UCS4 ch = data[i], mapped;                                               \
            MAP_CHAR(ch, mapped)                                                        \
            if (mapped == SPACE) {                                                      \
                i++;                                                                    \
                continue;                                                               \
            }                                                                           \
            if (begin_word(t) < 0) {                                                    \
                return -1;                                                              \
            }                                                                           \
            /* The word: its first character is mapped already. */                      \
            uint64_t word_poly = 0, sum = 0, base = 1, base_inv = 1, blocks = 0;        \
            Py_UCS4 previous = SPACE;                                                   \
            int r = 0;                                                                  \
            for (;;) {                                                                  \
                if (mapped != previous || mapped != run) {                              \
                    sum += (uint64_t)mapped * POW[r];                                   \
                    if (++r == BLOCK) {                                                 \
                        word_poly += base * sum;                                        \
                        base *= POW[BLOCK];                                             \
                        base_inv *= POW_INV[BLOCK];                                     \
                        blocks++;                                                       \
                        sum = 0;                                                        \
                        r = 0;                                                          \
                    }                                                                   \
                }                                                                       \
                previous = mapped;                                                      \
                if (++i == n) {                                                         \
                    break;                                                              \
                }                                                                       \
                ch = data[i];                                                           \
                MAP_CHAR(ch, mapped)                                                    \
                if (mapped == SPACE) {                                                  \
                    i++;                                                                \
                    break;                                                              \
                }                                                                       \
            }                                                                           \
            word_poly += base * sum;                                                    \
            end_word(t, word_poly, BLOCK * blocks + (uint64_t)r, base, base_inv, r);    \
        }                                                                               \
        return 0;                                                                       \
    }

DEFINE_SCAN(scan_ucs1, Py_UCS1)
DEFINE_SCAN(scan_ucs2, Py_UCS2)
DEFINE_SCAN(scan_ucs4, Py_UCS4)

PyDoc_STRVAR(fingerprint_text_doc,
"fingerprint_text($module, text, k, normalize_digits, /)\n--\n\n"
"The fast-hash simhash of the word k-shingles of a str (its lower-cased words,\n"
"digit runs made \"0\" if normalize_digits is true): fingerprint_text(text, k=k,\n"
"mode=\"fast\", normalize_digits=normalize_digits) for a plain str.");

static PyObject *
speedups_fingerprint_text(PyObject *Py_UNUSED(module), PyObject *const *args,
                          Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError,
                     "fingerprint_text() takes 3 arguments (text, k, normalize_digits), "
                     "%zd given.", nargs);
        return NULL;
    }
    PyObject *text = args[0], *k_arg = args[1];
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "text (%.200s) must be a str.", Py_TYPE(text)->tp_name);
        return NULL;
    }
    if (!PyLong_Check(k_arg) || PyBool_Check(k_arg)) {
        PyErr_Format(PyExc_TypeError, "k (%.200s) must be an int, the number of words per "
                     "shingle.", Py_TYPE(k_arg)->tp_name);
        return NULL;
    }
    int overflow;
    long long k = PyLong_AsLongLongAndOverflow(k_arg, &overflow);
    if (k == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (overflow > 0 || k > PY_SSIZE_T_MAX) {
        k = PY_SSIZE_T_MAX; /* more than any text has words: the same fingerprint */
    }
    if (overflow < 0 || k < 1) {
        PyErr_Format(PyExc_ValueError, "k (%S) must be at least 1 (words per shingle).",
                     k_arg);
        return NULL;
    }
    int normalize = PyObject_IsTrue(args[2]);
    if (normalize < 0) {
        return NULL;
    }
    if (ensure_ready(text) < 0) {
        return NULL;
    }
    PyObject *lowered;
    if (PyUnicode_IS_ASCII(text)) {
        lowered = Py_NewRef(text); /* ASCII_MAP lower-cases */
    }
    else {
        lowered = PyObject_CallOneArg(str_lower, text);
        if (lowered == NULL) {
            return NULL;
        }
        if (!PyUnicode_Check(lowered) || ensure_ready(lowered) < 0) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_SystemError, "str.lower() returned a non-str");
            }
            Py_DECREF(lowered);
            return NULL;
        }
    }

    TextState t;
    memset(&t, 0, sizeof(t));
    t.power = 1; /* P**0 */
    t.pinv = 1;
    t.k = (Py_ssize_t)k;
    t.ring = t.small;
    t.cap = t.k < 64 ? t.k : 64;

    Py_ssize_t n = PyUnicode_GET_LENGTH(lowered);
    const void *data = PyUnicode_DATA(lowered);
    int status;
    switch (PyUnicode_KIND(lowered)) {
    case PyUnicode_1BYTE_KIND:
        status = scan_ucs1(&t, (const Py_UCS1 *)data, n, normalize);
        break;
    case PyUnicode_2BYTE_KIND:
        status = scan_ucs2(&t, (const Py_UCS2 *)data, n, normalize);
        break;
    default:
        status = scan_ucs4(&t, (const Py_UCS4 *)data, n, normalize);
        break;
    }
    PyObject *result = NULL;
    if (status == 0) {
        if (t.words > 0 && t.words < (uint64_t)t.k) {
            add_span(&t, &t.ring[0]); /* fewer than k words: one shingle of them all */
        }
        result = PyLong_FromUnsignedLongLong(unit_value(&t.vote));
    }
    if (t.ring != t.small) {
        PyMem_Free(t.ring);
    }
    Py_DECREF(lowered);
    return result;
}

/* ------------------------------------------------------------------------------------ */
/* Module                                                                               */
/* ------------------------------------------------------------------------------------ */

static PyMethodDef speedups_methods[] = {
    {"fast_hash", speedups_fast_hash, METH_O, fast_hash_doc},
    {"fast_hashes", speedups_fast_hashes, METH_O, fast_hashes_doc},
    {"simhash", speedups_simhash, METH_O, simhash_doc},
    {"fingerprint_text", (PyCFunction)(void (*)(void))speedups_fingerprint_text,
     METH_FASTCALL, fingerprint_text_doc},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(module_doc,
"C version of the \"fast\" hash mode of scrapy_fresh.fingerprint (optional; the\n"
"NumPy code there is the reference and gives the same answers).");

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT,
    "scrapy_fresh._speedups",
    module_doc,
    -1,
    speedups_methods,
    NULL,
    NULL,
    NULL,
    NULL, /* the tables and the class cache live as long as the process */
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    if ((uint64_t)(P_MUL * P_INV) != 1) {
        PyErr_SetString(PyExc_ImportError, "scrapy_fresh._speedups: bad P_INV");
        return NULL;
    }
    uint64_t power = 1, inverse = 1;
    for (int j = 0; j <= BLOCK; j++) {
        POW[j] = power;
        POW_INV[j] = inverse;
        power *= P_MUL;
        inverse *= P_INV;
    }
    for (int b = 0; b < 256; b++) {
        uint64_t spread = 0;
        for (int j = 0; j < 8; j++) {
            spread |= (uint64_t)((b >> j) & 1) << (8 * j);
        }
        SPREAD[b] = spread;
    }
    for (int normalize = 0; normalize < 2; normalize++) {
        for (int c = 0; c < 128; c++) {
            int lower = (c >= 'A' && c <= 'Z') ? c + 32 : c;
            unsigned char cls = compute_class((Py_UCS4)lower);
            ASCII_MAP[normalize][c] = (unsigned char)(
                !(cls & WORD) ? SPACE : (normalize && (cls & DIGIT)) ? ZERO : lower);
        }
    }
    if (str_lower == NULL) {
        str_lower = PyObject_GetAttrString((PyObject *)&PyUnicode_Type, "lower");
        if (str_lower == NULL) {
            return NULL;
        }
    }
    return PyModule_Create(&speedups_module);
}
