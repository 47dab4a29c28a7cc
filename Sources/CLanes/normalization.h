// Batch normalisation's passes over a rows × n matrix, as `BatchNormKernels` computes them in
// Swift (the same operations in the same order per column, so the same bits), in AVX2: Swift's
// SIMD types compile for baseline x86-64 here (two SSE registers per eight lanes, no FMA).
#ifndef RECBENCH_NORMALIZATION_H
#define RECBENCH_NORMALIZATION_H

#include "sparse.h"

#if defined(__x86_64__)
#include <immintrin.h>

/// The activation whose pullback g ⊙ f′ a pass takes from f's output y (`PointwiseActivation`).
enum { RECBENCH_ACT_NONE = 0, RECBENCH_ACT_RELU = 1, RECBENCH_ACT_TANH = 2, RECBENCH_ACT_SIGMOID = 3 };

/// g ⊙ f′ from the output y, as `PointwiseActivation.pullback`: ReLU g where y > 0, tanh
/// g (1 − y²), σ (g y)(1 − y); products and differences rounded one at a time.
__attribute__((target("avx2,fma"), always_inline))
static inline __m256 recbench_pullback8_avx2(int kind, __m256 g, __m256 y) {
    const __m256 one = _mm256_set1_ps(1.0f);
    switch (kind) {
    case RECBENCH_ACT_RELU: return _mm256_and_ps(g, _mm256_cmp_ps(y, _mm256_setzero_ps(), _CMP_GT_OQ));
    case RECBENCH_ACT_TANH: return _mm256_mul_ps(g, _mm256_sub_ps(one, _mm256_mul_ps(y, y)));
    case RECBENCH_ACT_SIGMOID: return _mm256_mul_ps(_mm256_mul_ps(g, y), _mm256_sub_ps(one, y));
    default: return g;
    }
}

/// Eight lanes at p, the first `k` of them (zeros past) when k < 8: whole loads where they can be,
/// since a masked load costs several plain ones on AMD's cores.
__attribute__((target("avx2,fma"), always_inline))
static inline __m256 recbench_load_first(const float *p, long k, __m256i mask) {
    return k >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, mask);
}

/// Columns are walked in spans of up to this many eight-lane groups (512 columns), each span row
/// by row, the sums in L1: a span reads whole rows in order, which the prefetchers stream; spans of
/// 64 columns, or a half row per worker, read each row in strided pieces at a third of the speed.
#define RECBENCH_BN_SPAN 64

/// Columns c0..<c1 (c0 a multiple of 8) of x: each column's mean and biased variance, summed in
/// double down the rows in order, the variance from the deviations from the double mean.
__attribute__((target("avx2,fma")))
static inline void recbench_bn_statistics_avx2(const float *x, long rows, long n, long c0, long c1, float *mean, float *variance) {
    const __m256d count = _mm256_set1_pd((double)rows);
    for (long j0 = c0; j0 < c1; j0 += 8 * RECBENCH_BN_SPAN) {
        const long groups = (c1 - j0 + 7) / 8 < RECBENCH_BN_SPAN ? (c1 - j0 + 7) / 8 : RECBENCH_BN_SPAN;
        __m256d m[2 * RECBENCH_BN_SPAN], q[2 * RECBENCH_BN_SPAN];
        for (long k = 0; k < 2 * groups; k++) { m[k] = _mm256_setzero_pd(); q[k] = _mm256_setzero_pd(); }
        const long last = c1 - j0 - 8 * (groups - 1);   // lanes of the span's last group
        const __m256i tail = recbench_first_lanes(last);
        for (long r = 0; r < rows; r++) {
            for (long k = 0; k < groups; k++) {
                const __m256 v = recbench_load_first(x + r * n + j0 + 8 * k, k + 1 < groups ? 8 : last, tail);
                m[2 * k] = _mm256_add_pd(m[2 * k], _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
                m[2 * k + 1] = _mm256_add_pd(m[2 * k + 1], _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
            }
        }
        for (long k = 0; k < 2 * groups; k++) m[k] = _mm256_div_pd(m[k], count);
        for (long r = 0; r < rows; r++) {
            for (long k = 0; k < groups; k++) {
                const __m256 v = recbench_load_first(x + r * n + j0 + 8 * k, k + 1 < groups ? 8 : last, tail);
                const __m256d d0 = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)), m[2 * k]);
                const __m256d d1 = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)), m[2 * k + 1]);
                q[2 * k] = _mm256_add_pd(q[2 * k], _mm256_mul_pd(d0, d0));
                q[2 * k + 1] = _mm256_add_pd(q[2 * k + 1], _mm256_mul_pd(d1, d1));
            }
        }
        for (long k = 0; k < groups; k++) {
            const long j = j0 + 8 * k;
            const __m256 mu = _mm256_set_m128(_mm256_cvtpd_ps(m[2 * k + 1]), _mm256_cvtpd_ps(m[2 * k]));
            const __m256 var = _mm256_set_m128(_mm256_cvtpd_ps(_mm256_div_pd(q[2 * k + 1], count)), _mm256_cvtpd_ps(_mm256_div_pd(q[2 * k], count)));
            recbench_store_first(mean + j, mu, c1 - j);
            recbench_store_first(variance + j, var, c1 - j);
        }
    }
}

/// Columns c0..<c1 (c0 a multiple of 8): Σ g′ into sums[j] and Σ g′ · x̂ into sums[n + j], rows in
/// order, with g′ = g ⊙ f′ from y (`kind`) and x̂ = (x − μ) · inv, or x itself when mu is null.
__attribute__((target("avx2,fma")))
static inline void recbench_bn_gradient_sums_avx2(const float *g, const float *y, int kind, const float *x, const float *mu, const float *inv,
                                                  long rows, long n, long c0, long c1, float *sums) {
    for (long j0 = c0; j0 < c1; j0 += 8 * RECBENCH_BN_SPAN) {
        const long groups = (c1 - j0 + 7) / 8 < RECBENCH_BN_SPAN ? (c1 - j0 + 7) / 8 : RECBENCH_BN_SPAN;
        const long last = c1 - j0 - 8 * (groups - 1);
        const __m256i tail = recbench_first_lanes(last);
        __m256 s[RECBENCH_BN_SPAN], d[RECBENCH_BN_SPAN], mk[RECBENCH_BN_SPAN], ik[RECBENCH_BN_SPAN];
        for (long k = 0; k < groups; k++) {
            s[k] = _mm256_setzero_ps(); d[k] = _mm256_setzero_ps();
            mk[k] = mu ? recbench_load_first(mu + j0 + 8 * k, k + 1 < groups ? 8 : last, tail) : _mm256_setzero_ps();
            ik[k] = mu ? recbench_load_first(inv + j0 + 8 * k, k + 1 < groups ? 8 : last, tail) : _mm256_setzero_ps();
        }
        for (long r = 0; r < rows; r++) {
            for (long k = 0; k < groups; k++) {
                const long j = j0 + 8 * k, lanes = k + 1 < groups ? 8 : last;
                __m256 gr = recbench_load_first(g + r * n + j, lanes, tail);
                if (kind != RECBENCH_ACT_NONE) gr = recbench_pullback8_avx2(kind, gr, recbench_load_first(y + r * n + j, lanes, tail));
                __m256 xn = recbench_load_first(x + r * n + j, lanes, tail);
                if (mu) xn = _mm256_mul_ps(_mm256_sub_ps(xn, mk[k]), ik[k]);
                s[k] = _mm256_add_ps(s[k], gr);
                d[k] = _mm256_add_ps(d[k], _mm256_mul_ps(gr, xn));
            }
        }
        for (long k = 0; k < groups; k++) {
            recbench_store_first(sums + j0 + 8 * k, s[k], c1 - j0 - 8 * k);
            recbench_store_first(sums + n + j0 + 8 * k, d[k], c1 - j0 - 8 * k);
        }
    }
}

/// Rows r0..<r1 of d/dx under the batch's own statistics: (γ · inv / N) ⊙ (N g′ − Σ g′ − x̂ ⊙ Σ g′x̂),
/// g′ and x̂ as in `recbench_bn_gradient_sums_avx2` (x̂ always recomputed from x).
__attribute__((target("avx2,fma")))
static inline void recbench_bn_input_gradient_avx2(const float *g, const float *y, int kind, const float *x, const float *mu, const float *inv,
                                                   const float *gamma, const float *sums, long n, float count, long r0, long r1, float *out) {
    const __m256 c = _mm256_set1_ps(count);
    for (long r = r0; r < r1; r++) {
        for (long j = 0; j < n; j += 8) {
            const long k8 = n - j;
            const __m256i m = recbench_first_lanes(k8);
            const __m256 ij = recbench_load_first(inv + j, k8, m);
            const __m256 k = _mm256_div_ps(_mm256_mul_ps(recbench_load_first(gamma + j, k8, m), ij), c);
            __m256 gr = recbench_load_first(g + r * n + j, k8, m);
            if (kind != RECBENCH_ACT_NONE) gr = recbench_pullback8_avx2(kind, gr, recbench_load_first(y + r * n + j, k8, m));
            const __m256 xn = _mm256_mul_ps(_mm256_sub_ps(recbench_load_first(x + r * n + j, k8, m), recbench_load_first(mu + j, k8, m)), ij);
            const __m256 d = _mm256_sub_ps(_mm256_sub_ps(_mm256_mul_ps(c, gr), recbench_load_first(sums + j, k8, m)),
                                           _mm256_mul_ps(xn, recbench_load_first(sums + n + j, k8, m)));
            recbench_store_first(out + r * n + j, _mm256_mul_ps(k, d), n - j);
        }
    }
}

/// Rows r0..<r1 of γ ⊙ (x − μ) ⊙ inv + β (a product, then a sum: no FMA, as the Swift pass).
__attribute__((target("avx2,fma")))
static inline void recbench_bn_forward_avx2(const float *x, const float *mu, const float *inv, const float *gamma, const float *beta,
                                            long n, long r0, long r1, float *out) {
    for (long r = r0; r < r1; r++) {
        for (long j = 0; j < n; j += 8) {
            const long k8 = n - j;
            const __m256i m = recbench_first_lanes(k8);
            const __m256 h = _mm256_mul_ps(_mm256_sub_ps(recbench_load_first(x + r * n + j, k8, m), recbench_load_first(mu + j, k8, m)),
                                           recbench_load_first(inv + j, k8, m));
            const __m256 v = _mm256_add_ps(_mm256_mul_ps(recbench_load_first(gamma + j, k8, m), h), recbench_load_first(beta + j, k8, m));
            recbench_store_first(out + r * n + j, v, n - j);
        }
    }
}
#endif

#endif
