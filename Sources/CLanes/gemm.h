// Products with a short inner dimension and a narrow output (a dense layer of a transformer,
// a recurrent cell or a context model's MLP: k ≤ 512, n ≤ 512, many rows), where OpenBLAS
// spends much of its time packing the tall left factor and scaling the output for a product
// of only k steps. Here the right factor alone is packed, once per product, into panels of 16
// columns; each 6 × 16 block of the output sums its k products in 12 registers, reading the
// left factor's rows in place. Every output entry is the same sum in the same order however
// the rows are shared among workers.
#ifndef RECBENCH_GEMM_H
#define RECBENCH_GEMM_H

#include <stdint.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#define RECBENCH_GEMM_PANEL 16L

/// Copies op(b) (k × n: b itself, row-major with `ldb`, or bᵀ when `transposed`) into
/// ⌈n / 16⌉ panels of k × 16 floats each, the columns past n zero. Each source row is read
/// contiguously (a copy per panel row, or a column of the panel per row of b).
static inline void recbench_gemm_pack(const float *b, long ldb, int transposed, long k, long n, float *panels) {
    for (long q = 0; q * RECBENCH_GEMM_PANEL < n; q++) {
        float *panel = panels + q * k * RECBENCH_GEMM_PANEL;
        const long first = q * RECBENCH_GEMM_PANEL, width = n - first < RECBENCH_GEMM_PANEL ? n - first : RECBENCH_GEMM_PANEL;
        if (!transposed) {
            for (long p = 0; p < k; p++) {
                const float *source = b + p * ldb + first;
                float *row = panel + p * RECBENCH_GEMM_PANEL;
                for (long j = 0; j < width; j++) row[j] = source[j];
                for (long j = width; j < RECBENCH_GEMM_PANEL; j++) row[j] = 0.0f;
            }
            continue;
        }
        for (long j = 0; j < RECBENCH_GEMM_PANEL; j++) {
            const float *source = b + (first + j) * ldb;
            if (j < width) {
                for (long p = 0; p < k; p++) panel[p * RECBENCH_GEMM_PANEL + j] = source[p];
            } else {
                for (long p = 0; p < k; p++) panel[p * RECBENCH_GEMM_PANEL + j] = 0.0f;
            }
        }
    }
}

#if defined(__x86_64__)
/// One block of ROWS (≤ 6) rows × `width` (≤ 16) columns: c = a · panel, plus c when `accumulate`,
/// plus the block's columns of `bias` (a row) unless it is null.
#define RECBENCH_GEMM_BLOCK(ROWS)                                                                                                  \
__attribute__((target("avx2,fma"), always_inline))                                                                                \
static inline void recbench_gemm_block##ROWS(long k, const float *a, long lda, const float *panel, float *c, long ldc, long width, \
                                             int accumulate, const float *bias) {                                                 \
    __m256 left[ROWS], right[ROWS];                                                                                               \
    _Pragma("clang loop unroll(full)")                                                                                            \
    for (int r = 0; r < ROWS; r++) { left[r] = _mm256_setzero_ps(); right[r] = _mm256_setzero_ps(); }                             \
    for (long p = 0; p < k; p++) {                                                                                                \
        const __m256 b0 = _mm256_loadu_ps(panel + p * RECBENCH_GEMM_PANEL), b1 = _mm256_loadu_ps(panel + p * RECBENCH_GEMM_PANEL + 8); \
        _Pragma("clang loop unroll(full)")                                                                                        \
        for (int r = 0; r < ROWS; r++) {                                                                                          \
            const __m256 x = _mm256_broadcast_ss(a + r * lda + p);                                                                \
            left[r] = _mm256_fmadd_ps(x, b0, left[r]);                                                                            \
            right[r] = _mm256_fmadd_ps(x, b1, right[r]);                                                                          \
        }                                                                                                                         \
    }                                                                                                                             \
    _Pragma("clang loop unroll(full)")                                                                                            \
    for (int r = 0; r < ROWS; r++) {                                                                                              \
        float *row = c + r * ldc;                                                                                                 \
        if (width == RECBENCH_GEMM_PANEL) {                                                                                       \
            if (accumulate) { left[r] = _mm256_add_ps(left[r], _mm256_loadu_ps(row)); right[r] = _mm256_add_ps(right[r], _mm256_loadu_ps(row + 8)); } \
            if (bias) { left[r] = _mm256_add_ps(left[r], _mm256_loadu_ps(bias)); right[r] = _mm256_add_ps(right[r], _mm256_loadu_ps(bias + 8)); }   \
            _mm256_storeu_ps(row, left[r]);                                                                                       \
            _mm256_storeu_ps(row + 8, right[r]);                                                                                  \
        } else {                                                                                                                  \
            float sums[RECBENCH_GEMM_PANEL];                                                                                      \
            _mm256_storeu_ps(sums, left[r]);                                                                                      \
            _mm256_storeu_ps(sums + 8, right[r]);                                                                                 \
            for (long j = 0; j < width; j++) { const float v = accumulate ? row[j] + sums[j] : sums[j]; row[j] = bias ? v + bias[j] : v; }               \
        }                                                                                                                         \
    }                                                                                                                             \
}
RECBENCH_GEMM_BLOCK(1)
RECBENCH_GEMM_BLOCK(2)
RECBENCH_GEMM_BLOCK(3)
RECBENCH_GEMM_BLOCK(4)
RECBENCH_GEMM_BLOCK(5)
RECBENCH_GEMM_BLOCK(6)

/// Rows 0..<rows of c (n columns, `ldc`) = a (rows × k, `lda`) · the packed factor, plus c when
/// `accumulate`, plus the row `bias` (n floats) unless it is null: a dense layer's output written
/// once, where filling c with the bias first and adding the product read and wrote it twice more.
/// Rows go in groups small enough that a group of a stays in the first-level cache while each
/// 16-column panel is swept over it.
__attribute__((target("avx2,fma")))
static inline void recbench_gemm_rows_avx2(long rows, long n, long k, const float *a, long lda, const float *panels, float *c, long ldc,
                                           int accumulate, const float *bias) {
    const long group = k <= 64 ? 96 : k <= 128 ? 48 : 6;   // k > 128: six rows of a stay in L1, the panels stream from L2
    for (long first = 0; first < rows; first += group) {
        const long last = first + group < rows ? first + group : rows;
        for (long q = 0; q * RECBENCH_GEMM_PANEL < n; q++) {
            const float *panel = panels + q * k * RECBENCH_GEMM_PANEL;
            const long column = q * RECBENCH_GEMM_PANEL, width = n - column < RECBENCH_GEMM_PANEL ? n - column : RECBENCH_GEMM_PANEL;
            const float *b = bias ? bias + column : 0;
            long i = first;
            for (; i + 6 <= last; i += 6) recbench_gemm_block6(k, a + i * lda, lda, panel, c + i * ldc + column, ldc, width, accumulate, b);
            const float *x = a + i * lda;
            float *out = c + i * ldc + column;
            switch (last - i) {
            case 1: recbench_gemm_block1(k, x, lda, panel, out, ldc, width, accumulate, b); break;
            case 2: recbench_gemm_block2(k, x, lda, panel, out, ldc, width, accumulate, b); break;
            case 3: recbench_gemm_block3(k, x, lda, panel, out, ldc, width, accumulate, b); break;
            case 4: recbench_gemm_block4(k, x, lda, panel, out, ldc, width, accumulate, b); break;
            case 5: recbench_gemm_block5(k, x, lda, panel, out, ldc, width, accumulate, b); break;
            default: break;
            }
        }
    }
}

/// NAIS's attention logit and similarity for ROWS (≤ 6) history rows x_r = t ⊙ p_r (built in `x`,
/// `d` wide): a_r = Σ_c w_c · relu((x_r W)_c + b_c) over W's packed panels (d × 16 each, `width`
/// of them) with b and w padded to whole panels with zeros, so padded columns add relu(0) · 0.
/// Each panel's 16 outputs stay in registers: no logit matrix is written.
#define RECBENCH_NAIS_BLOCK(ROWS)                                                                                                  \
__attribute__((target("avx2,fma"), always_inline))                                                                                \
static inline void recbench_nais_block##ROWS(long d, const float *x, const float *panels, long width, const float *bias, const float *w, \
                                             float *a) {                                                                          \
    __m256 total[ROWS];                                                                                                           \
    _Pragma("clang loop unroll(full)")                                                                                            \
    for (int r = 0; r < ROWS; r++) total[r] = _mm256_setzero_ps();                                                                \
    for (long q = 0; q < width; q++) {                                                                                            \
        const float *panel = panels + q * d * RECBENCH_GEMM_PANEL;                                                                \
        __m256 left[ROWS], right[ROWS];                                                                                           \
        _Pragma("clang loop unroll(full)")                                                                                        \
        for (int r = 0; r < ROWS; r++) { left[r] = _mm256_loadu_ps(bias + q * 16); right[r] = _mm256_loadu_ps(bias + q * 16 + 8); } \
        for (long k = 0; k < d; k++) {                                                                                            \
            const __m256 b0 = _mm256_loadu_ps(panel + k * RECBENCH_GEMM_PANEL), b1 = _mm256_loadu_ps(panel + k * RECBENCH_GEMM_PANEL + 8); \
            _Pragma("clang loop unroll(full)")                                                                                    \
            for (int r = 0; r < ROWS; r++) {                                                                                      \
                const __m256 v = _mm256_broadcast_ss(x + r * d + k);                                                              \
                left[r] = _mm256_fmadd_ps(v, b0, left[r]);                                                                        \
                right[r] = _mm256_fmadd_ps(v, b1, right[r]);                                                                      \
            }                                                                                                                     \
        }                                                                                                                         \
        const __m256 zero = _mm256_setzero_ps(), w0 = _mm256_loadu_ps(w + q * 16), w1 = _mm256_loadu_ps(w + q * 16 + 8);          \
        _Pragma("clang loop unroll(full)")                                                                                        \
        for (int r = 0; r < ROWS; r++) {                                                                                          \
            total[r] = _mm256_fmadd_ps(_mm256_max_ps(left[r], zero), w0, total[r]);                                               \
            total[r] = _mm256_fmadd_ps(_mm256_max_ps(right[r], zero), w1, total[r]);                                              \
        }                                                                                                                         \
    }                                                                                                                             \
    _Pragma("clang loop unroll(full)")                                                                                            \
    for (int r = 0; r < ROWS; r++) {                                                                                              \
        float lanes[8];                                                                                                           \
        _mm256_storeu_ps(lanes, total[r]);                                                                                        \
        a[r] = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));                 \
    }                                                                                                                             \
}
RECBENCH_NAIS_BLOCK(1)
RECBENCH_NAIS_BLOCK(2)
RECBENCH_NAIS_BLOCK(3)
RECBENCH_NAIS_BLOCK(4)
RECBENCH_NAIS_BLOCK(5)
RECBENCH_NAIS_BLOCK(6)

/// For one target row t (d ≤ 512 wide) and n history rows p (row stride `ldp`): NAIS's attention
/// logits a_j = w · relu((t ⊙ p_j) W + b) (`algorithm: prod`) and similarities s_j = t · p_j (the
/// sum of t ⊙ p_j in order), six history rows at a time with their products in the first-level cache.
__attribute__((target("avx2,fma")))
static inline void recbench_nais_logits_avx2(long n, long d, const float *t, const float *p, long ldp, const float *panels, long width,
                                             const float *bias, const float *w, float *a, float *s) {
    float x[6 * 512];
    if (d > 512) return;   // ProductAttention admits d ≤ SmallProducts.maxInner (512), the rows this holds
    for (long first = 0; first < n; first += 6) {
        const long rows = n - first < 6 ? n - first : 6;
        for (long r = 0; r < rows; r++) {
            const float *row = p + (first + r) * ldp;
            float sum = 0.0f;
            for (long k = 0; k < d; k++) { x[r * d + k] = t[k] * row[k]; sum += x[r * d + k]; }
            s[first + r] = sum;
        }
        switch (rows) {
        case 1: recbench_nais_block1(d, x, panels, width, bias, w, a + first); break;
        case 2: recbench_nais_block2(d, x, panels, width, bias, w, a + first); break;
        case 3: recbench_nais_block3(d, x, panels, width, bias, w, a + first); break;
        case 4: recbench_nais_block4(d, x, panels, width, bias, w, a + first); break;
        case 5: recbench_nais_block5(d, x, panels, width, bias, w, a + first); break;
        default: recbench_nais_block6(d, x, panels, width, bias, w, a + first); break;
        }
    }
}
#endif

#endif
