// The sparse × dense row kernel (a CSR row times a dense matrix, added into one output
// row) in two builds: AVX2 + FMA for CPUs that have them, chosen at run time, and the
// baseline x86-64 one is Swift's own loop (Linalg's SparseMatrix). Header-only: clang
// compiles these into the Swift module that calls them; the target attribute lets one
// function use AVX2 while the package stays built for baseline x86-64.
#ifndef RECBENCH_SPARSE_H
#define RECBENCH_SPARSE_H

#include <stdint.h>

/// Whether this CPU and OS run AVX2 and FMA (cpuid and the OS's saved register state).
static inline int recbench_cpu_has_avx2_fma(void) {
#if defined(__x86_64__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}

#if defined(__x86_64__)
typedef float recbench_f8u __attribute__((ext_vector_type(8), aligned(4)));

/// row[0..<width] += Σ_e values[e] · dense[columns[e]·stride + 0..<width] for e in
/// start..<end, four source rows per pass over the output row, each sum accumulated with
/// FMA; lanes past the last multiple of 8 one by one in the same order.
__attribute__((target("avx2,fma")))
static inline void recbench_sparse_columns_avx2(float *row, const float *dense, long stride, long width,
                                                const int32_t *columns, const float *values, long start, long end) {
    long e = start, full = width & ~7L;
    for (; e + 4 <= end; e += 4) {
        const float w0 = values[e], w1 = values[e + 1], w2 = values[e + 2], w3 = values[e + 3];
        const float *s0 = dense + (long)columns[e] * stride, *s1 = dense + (long)columns[e + 1] * stride;
        const float *s2 = dense + (long)columns[e + 2] * stride, *s3 = dense + (long)columns[e + 3] * stride;
        long j = 0;
        for (; j < full; j += 8) {
            recbench_f8u acc = *(const recbench_f8u *)(row + j);
            acc = __builtin_elementwise_fma((recbench_f8u)w0, *(const recbench_f8u *)(s0 + j), acc);
            acc = __builtin_elementwise_fma((recbench_f8u)w1, *(const recbench_f8u *)(s1 + j), acc);
            acc = __builtin_elementwise_fma((recbench_f8u)w2, *(const recbench_f8u *)(s2 + j), acc);
            acc = __builtin_elementwise_fma((recbench_f8u)w3, *(const recbench_f8u *)(s3 + j), acc);
            *(recbench_f8u *)(row + j) = acc;
        }
        for (; j < width; j++) {
            row[j] = __builtin_fmaf(w3, s3[j], __builtin_fmaf(w2, s2[j], __builtin_fmaf(w1, s1[j], __builtin_fmaf(w0, s0[j], row[j]))));
        }
    }
    for (; e < end; e++) {
        const float w = values[e];
        const float *s = dense + (long)columns[e] * stride;
        long j = 0;
        for (; j < full; j += 8) {
            *(recbench_f8u *)(row + j) = __builtin_elementwise_fma((recbench_f8u)w, *(const recbench_f8u *)(s + j), *(const recbench_f8u *)(row + j));
        }
        for (; j < width; j++) row[j] = __builtin_fmaf(w, s[j], row[j]);
    }
}

/// The block of columns j0..<j0+width of one output row: row[0..<width] += Σ_e values[e] ·
/// dense[columns[e]·stride + 0..<width] (row and dense already offset to the block). A full
/// block of 64 is summed in eight registers over every entry and stored once (the output
/// is not read and written back per entry); a narrower one goes through
/// `recbench_sparse_columns_avx2`.
__attribute__((target("avx2,fma")))
static inline void recbench_sparse_block_avx2(float *row, const float *dense, long stride, long width,
                                              const int32_t *columns, const float *values, long start, long end) {
    if (width != 64) {
        recbench_sparse_columns_avx2(row, dense, stride, width, columns, values, start, end);
        return;
    }
    recbench_f8u a[8];
    for (int k = 0; k < 8; k++) a[k] = *(const recbench_f8u *)(row + 8 * k);
    for (long e = start; e < end; e++) {
        const recbench_f8u w = (recbench_f8u)values[e];
        const float *s = dense + (long)columns[e] * stride;
#pragma clang loop unroll(full)
        for (int k = 0; k < 8; k++) a[k] = __builtin_elementwise_fma(w, *(const recbench_f8u *)(s + 8 * k), a[k]);
    }
    for (int k = 0; k < 8; k++) *(recbench_f8u *)(row + 8 * k) = a[k];
}
#endif

/// One field's pooled lookup over a batch: output row i's block at column `offset` is
/// Σ_e values[e] · dense[columns[e]] over the entries starts[b]..<starts[b + 1] of bag b = rows[i].
typedef struct {
    const int32_t *rows;
    const long *starts;
    const int32_t *columns;
    const float *values;
    long offset;
} recbench_pooled_field;

#if defined(__x86_64__)
#include <immintrin.h>

/// Lanes 0..<k all ones (k clamped to 0...8): the mask of a row's first or second eight floats.
__attribute__((target("avx2")))
static inline __m256i recbench_first_lanes(long k) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(k < 0 ? 0 : k > 8 ? 8 : k)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/// Stores the first k (0...8) lanes of v at p without a masked store (slow on AMD's cores):
/// whole pieces of 8, 4, 2 and 1 lanes.
__attribute__((target("avx2")))
static inline void recbench_store_first(float *p, __m256 v, long k) {
    if (k >= 8) { _mm256_storeu_ps(p, v); return; }
    __m128 part = _mm256_castps256_ps128(v);
    if (k & 4) { _mm_storeu_ps(p, part); part = _mm256_extractf128_ps(v, 1); p += 4; }
    if (k & 2) { _mm_storel_pi((__m64 *)p, part); part = _mm_movehl_ps(part, part); p += 2; }
    if (k & 1) _mm_store_ss(p, part);
}

/// Adds field l's pooled embedding for output row i into a0 and a1 (lanes ≥ width zero): each
/// entry with FMA in entry order, as every pooled lookup here adds them.
__attribute__((target("avx2,fma"), always_inline))
static inline void recbench_pooled_add_avx2(const recbench_pooled_field *l, long i, const float *dense, long width,
                                            __m256i m0, __m256i m1, __m256 *a0, __m256 *a1) {
    const long bag = l->rows[i];
    for (long e = l->starts[bag]; e < l->starts[bag + 1]; e++) {
        const __m256 w = _mm256_set1_ps(l->values[e]);
        const float *s = dense + (long)l->columns[e] * width;
        *a0 = _mm256_fmadd_ps(w, _mm256_maskload_ps(s, m0), *a0);
        if (width > 8) *a1 = _mm256_fmadd_ps(w, _mm256_maskload_ps(s + 8, m1), *a1);
    }
}

/// Output rows begin..<end of a batch's pooled lookups, for rows at most 16 floats wide: each
/// field's block written once from two registers (fields that share an offset, a summed
/// lookup's, accumulate into the same block in field order). Every entry is added with FMA in
/// entry order, the order `recbench_sparse_block_avx2` adds them into a zeroed row.
__attribute__((target("avx2,fma")))
static inline void recbench_pooled_rows_avx2(float *out, long stride, const float *dense, long width,
                                             const recbench_pooled_field *fields, long count, long begin, long end) {
    if (width == 1) {   // a first-order term: scalars, no vector loads
        for (long i = begin; i < end; i++) {
            float a = 0;
            for (long f = 0; f < count; f++) {
                const recbench_pooled_field *l = fields + f;
                const long bag = l->rows[i];
                for (long e = l->starts[bag]; e < l->starts[bag + 1]; e++) a = __builtin_fmaf(l->values[e], dense[l->columns[e]], a);
                if (f + 1 < count && fields[f + 1].offset == l->offset) continue;
                out[i * stride + l->offset] = a;
                a = 0;
            }
        }
        return;
    }
    const __m256i m0 = recbench_first_lanes(width), m1 = recbench_first_lanes(width - 8);
    for (long i = begin; i < end; i++) {
        __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
        for (long f = 0; f < count; f++) {
            const recbench_pooled_field *l = fields + f;
            recbench_pooled_add_avx2(l, i, dense, width, m0, m1, &a0, &a1);
            if (f + 1 < count && fields[f + 1].offset == l->offset) continue;
            float *row = out + i * stride + l->offset;
            recbench_store_first(row, a0, width);
            if (width > 8) recbench_store_first(row + 8, a1, width - 8);
            a0 = _mm256_setzero_ps(); a1 = _mm256_setzero_ps();
        }
    }
}

/// The scatter's inner step: table row columns[e] += values[e] · (g0 | g1) for entries e0..<e1, in
/// `padded` (the row copied in and listed on first touch); returns the new count of listed rows.
__attribute__((target("avx2,fma"), always_inline))
static inline long recbench_padded_add_avx2(const float *table, long width, float *padded, uint8_t *touched, int32_t *list, long listed,
                                            const int32_t *columns, const float *values, long e0, long e1, __m256 g0, __m256 g1) {
    const __m256i m0 = recbench_first_lanes(width), m1 = recbench_first_lanes(width - 8);
    const long pad = width > 8 ? 16 : 8;
    for (long e = e0; e < e1; e++) {
        const long t = columns[e];
        float *row = padded + t * pad;
        if (!touched[t]) {
            touched[t] = 1;
            list[listed++] = (int32_t)t;
            _mm256_storeu_ps(row, _mm256_maskload_ps(table + t * width, m0));
            if (width > 8) _mm256_storeu_ps(row + 8, _mm256_maskload_ps(table + t * width + 8, m1));
        }
        const __m256 w = _mm256_set1_ps(values[e]);
        _mm256_storeu_ps(row, _mm256_fmadd_ps(w, g0, _mm256_loadu_ps(row)));
        if (width > 8) _mm256_storeu_ps(row + 8, _mm256_fmadd_ps(w, g1, _mm256_loadu_ps(row + 8)));
    }
    return listed;
}

/// The scatter's last step: each listed row copied from `padded` back into the table.
__attribute__((target("avx2")))
static inline void recbench_padded_flush_avx2(float *table, long width, const float *padded, const int32_t *list, long listed) {
    const long pad = width > 8 ? 16 : 8;
    for (long k = 0; k < listed; k++) {
        const long t = list[k];
        recbench_store_first(table + t * width, _mm256_loadu_ps(padded + t * pad), width);
        if (width > 8) recbench_store_first(table + t * width + 8, _mm256_loadu_ps(padded + t * pad + 8), width - 8);
    }
}

/// The pullback of a lookup over rows at most 16 floats wide: table[columns[e]] += values[e] ·
/// g[i, offset..<offset + width] for every row i and entry e of each field, field by field in
/// the given order, rows in order, with FMA. Consecutive rows often add to the same table row
/// (a two-valued field does it every time), so each add waits for the last one's store: the
/// rows a batch touches are copied into `padded` (tableRows × 8 or × 16 floats, uninitialised;
/// `touched` tableRows bytes, zero; `list` room for tableRows indices) on first touch, where
/// whole-register stores forward to the next load (a partial store followed by a wider load
/// stalls until it retires), and those rows alone copied back; one float wide (a first-order
/// term), scalars go straight into the table.
__attribute__((target("avx2,fma")))
static inline void recbench_pooled_scatter_avx2(float *table, long width, const float *g, long stride,
                                                const recbench_pooled_field *fields, long count, long rows,
                                                float *padded, uint8_t *touched, int32_t *list) {
    const __m256i m0 = recbench_first_lanes(width), m1 = recbench_first_lanes(width - 8);
    long listed = 0;
    for (long f = 0; f < count; f++) {
        const int32_t *r = fields[f].rows, *columns = fields[f].columns;
        const long *starts = fields[f].starts;
        const float *values = fields[f].values, *from = g + fields[f].offset;
        for (long i = 0; i < rows; i++, from += stride) {
            const long bag = r[i], end = starts[bag + 1];
            if (starts[bag] == end) continue;
            if (width == 1) {   // a first-order term: scalars, straight into the table
                for (long e = starts[bag]; e < end; e++) table[columns[e]] = __builtin_fmaf(values[e], *from, table[columns[e]]);
                continue;
            }
            const __m256 g0 = _mm256_maskload_ps(from, m0), g1 = width > 8 ? _mm256_maskload_ps(from + 8, m1) : _mm256_setzero_ps();
            listed = recbench_padded_add_avx2(table, width, padded, touched, list, listed, columns, values, starts[bag], end, g0, g1);
        }
    }
    recbench_padded_flush_avx2(table, width, padded, list, listed);
}

/// FM's bi-interaction over rows begin..<end (width at most 16): value = ½ ((Σ_f e_f)² − Σ_f e_f²)
/// and sum = Σ_f e_f per row (rows × width each), the fields in order, Σ e_f² with FMA.
__attribute__((target("avx2,fma")))
static inline void recbench_bi_interaction_avx2(float *value, float *sum, const float *dense, long width,
                                                const recbench_pooled_field *fields, long count, long begin, long end) {
    const __m256i m0 = recbench_first_lanes(width), m1 = recbench_first_lanes(width - 8);
    const __m256 half = _mm256_set1_ps(0.5f);
    for (long i = begin; i < end; i++) {
        __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), q0 = _mm256_setzero_ps(), q1 = _mm256_setzero_ps();
        for (long f = 0; f < count; f++) {
            __m256 e0 = _mm256_setzero_ps(), e1 = _mm256_setzero_ps();
            recbench_pooled_add_avx2(fields + f, i, dense, width, m0, m1, &e0, &e1);
            s0 = _mm256_add_ps(s0, e0); q0 = _mm256_fmadd_ps(e0, e0, q0);
            s1 = _mm256_add_ps(s1, e1); q1 = _mm256_fmadd_ps(e1, e1, q1);
        }
        const __m256 v0 = _mm256_mul_ps(half, _mm256_fmsub_ps(s0, s0, q0)), v1 = _mm256_mul_ps(half, _mm256_fmsub_ps(s1, s1, q1));
        recbench_store_first(value + i * width, v0, width);
        recbench_store_first(sum + i * width, s0, width);
        if (width > 8) { recbench_store_first(value + i * width + 8, v1, width - 8); recbench_store_first(sum + i * width + 8, s1, width - 8); }
    }
}

/// The pullback of `recbench_bi_interaction_avx2`: table[columns[e]] += values[e] · g[i] ⊙ (sum[i] − e_f[i])
/// for every row i and entry e of each field, fields in order, rows in order, with FMA; e_f
/// recomputed from `dense` (the table's values). The touched rows go through `padded` as in
/// `recbench_pooled_scatter_avx2` (same scratch contract).
__attribute__((target("avx2,fma")))
static inline void recbench_bi_interaction_scatter_avx2(float *table, long width, const float *g, const float *sum, const float *dense,
                                                        const recbench_pooled_field *fields, long count, long rows,
                                                        float *padded, uint8_t *touched, int32_t *list) {
    const __m256i m0 = recbench_first_lanes(width), m1 = recbench_first_lanes(width - 8);
    long listed = 0;
    for (long f = 0; f < count; f++) {
        const recbench_pooled_field *l = fields + f;
        for (long i = 0; i < rows; i++) {
            const long bag = l->rows[i], end = l->starts[bag + 1];
            if (l->starts[bag] == end) continue;
            __m256 e0 = _mm256_setzero_ps(), e1 = _mm256_setzero_ps();
            recbench_pooled_add_avx2(l, i, dense, width, m0, m1, &e0, &e1);
            const float *gi = g + i * width, *si = sum + i * width;
            const __m256 d0 = _mm256_mul_ps(_mm256_maskload_ps(gi, m0), _mm256_sub_ps(_mm256_maskload_ps(si, m0), e0));
            const __m256 d1 = width > 8 ? _mm256_mul_ps(_mm256_maskload_ps(gi + 8, m1), _mm256_sub_ps(_mm256_maskload_ps(si + 8, m1), e1))
                                        : _mm256_setzero_ps();
            listed = recbench_padded_add_avx2(table, width, padded, touched, list, listed, l->columns, l->values, l->starts[bag], end, d0, d1);
        }
    }
    recbench_padded_flush_avx2(table, width, padded, list, listed);
}
#endif

#endif
