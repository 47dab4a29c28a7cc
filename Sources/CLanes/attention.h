// Multi-head self-attention with heads eight wide over at most eight steps (AutoInt's fields:
// 7 steps, two 8-wide heads), one sequence a call, a row of scores in one register: the
// general loops (`AttentionKernels.forward`) spend most of their time on the partial rows and
// per-product overhead of such tiny heads. AVX2 + FMA only.
#ifndef RECBENCH_ATTENTION_H
#define RECBENCH_ATTENTION_H

#include "activations.h"

#if defined(__x86_64__)
/// Dropout factors of 1: without dropout every row reads its factors here (stride 0), so the
/// loops below need no branch on it.
static const float recbench_no_dropout8[8] = {1, 1, 1, 1, 1, 1, 1, 1};

/// rows[0..<8] (8 × 8) transposed: out[c] lane j = rows[j] lane c.
__attribute__((target("avx2,fma"), always_inline))
static inline void recbench_transpose8x8(const recbench_v8 *r, recbench_v8 *out) {
    recbench_v8 t[8], u[8];
    for (int p = 0; p < 4; p++) {
        t[2 * p] = __builtin_shufflevector(r[2 * p], r[2 * p + 1], 0, 8, 1, 9, 4, 12, 5, 13);
        t[2 * p + 1] = __builtin_shufflevector(r[2 * p], r[2 * p + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    }
    for (int p = 0; p < 2; p++) {   // rows 4p … 4p + 3 of each column, by 128-bit halves
        u[4 * p] = __builtin_shufflevector(t[4 * p], t[4 * p + 2], 0, 1, 8, 9, 4, 5, 12, 13);
        u[4 * p + 1] = __builtin_shufflevector(t[4 * p], t[4 * p + 2], 2, 3, 10, 11, 6, 7, 14, 15);
        u[4 * p + 2] = __builtin_shufflevector(t[4 * p + 1], t[4 * p + 3], 0, 1, 8, 9, 4, 5, 12, 13);
        u[4 * p + 3] = __builtin_shufflevector(t[4 * p + 1], t[4 * p + 3], 2, 3, 10, 11, 6, 7, 14, 15);
    }
    for (int c = 0; c < 4; c++) {
        out[c] = __builtin_shufflevector(u[c], u[4 + c], 0, 1, 2, 3, 8, 9, 10, 11);
        out[c + 4] = __builtin_shufflevector(u[c], u[4 + c], 4, 5, 6, 7, 12, 13, 14, 15);
    }
}

/// Rows 0..<t of an 8-wide head (row stride ld) in registers, zeros past t.
__attribute__((target("avx2,fma"), always_inline))
static inline void recbench_head_rows8(const float *x, long ld, long t, recbench_v8 *rows) {
    for (long j = 0; j < 8; j++) rows[j] = j < t ? *(const recbench_v8u *)(x + j * ld) : (recbench_v8)0.0f;
}

/// Σ_c a[c] · cols[c]: a row times an 8 × 8 matrix held as its columns' lanes (or rows'), a[c]
/// broadcast from memory.
__attribute__((target("avx2,fma"), always_inline))
static inline recbench_v8 recbench_row_times8(const float *a, const recbench_v8 *m, long count) {
    recbench_v8 s = 0.0f;
    for (long c = 0; c < count; c++) s = __builtin_elementwise_fma((recbench_v8)a[c], m[c], s);
    return s;
}

/// One sequence of t ≤ 8 rows, `heads` heads of 8 columns: per head P = softmax(Q Kᵀ · scale) row
/// by row (written to weights, t × t a head), out = (P ⊙ keep) V. q, k and v have row stride ld,
/// out ldo; keep (t × t a head, or null) the dropout factors.
__attribute__((target("avx2,fma")))
static inline void recbench_short_attention_avx2(long t, long heads, float scale, const float *q, const float *k, const float *v, long ld,
                                                 const float *keep, float *weights, float *out, long ldo) {
    const recbench_i8 valid = recbench_lanes_below(t);
    const recbench_v8 low = -87.336544f, none = -__builtin_inff();
    const float *factors = keep ? keep : recbench_no_dropout8;
    const long step = keep ? 1 : 0;
    for (long h = 0; h < heads; h++) {
        recbench_v8 rows[8], kt[8], vr[8];
        recbench_head_rows8(k + h * 8, ld, t, rows);
        recbench_transpose8x8(rows, kt);   // kt[c] lane j = K[j, c]
        recbench_head_rows8(v + h * 8, ld, t, vr);
        for (long i = 0; i < t; i++) {
            recbench_v8 s = scale * recbench_row_times8(q + i * ld + h * 8, kt, 8);
            s = (recbench_v8)(((recbench_i8)s & valid) | ((recbench_i8)none & ~valid));
            const float top = __builtin_reduce_max(s);
            const recbench_v8 x = s - top;   // ≤ 0; −∞ past t
            const recbench_v8 e = (recbench_v8)((recbench_i8)recbench_exp_in_range_avx2(__builtin_elementwise_max(x, low)) & ~(x < low));
            const recbench_v8 p = e * (1.0f / recbench_tree_sum8(e));
            float *row = weights + (h * t + i) * t;
            recbench_store_first8(row, t, p);
            float a[8];
            *(recbench_v8u *)a = p * recbench_load_masked(factors + step * (h * t + i) * t, valid);
            *(recbench_v8u *)(out + i * ldo + h * 8) = recbench_row_times8(a, vr, t);
        }
    }
}

/// That sequence's pullback given g = dL/dout (row stride ldg) and the forward's weights P:
/// dA = g Vᵀ, dV = Aᵀ g with A = P ⊙ keep, dS = P ⊙ (dP − Σ_j P dP) with dP = dA ⊙ keep,
/// dQ = dS K · scale, dK = dSᵀ Q · scale, written (not added) to dq, dk and dv (row stride ldd).
__attribute__((target("avx2,fma")))
static inline void recbench_short_attention_backward_avx2(long t, long heads, float scale, const float *g, long ldg, const float *q, const float *k,
                                                          const float *v, long ld, const float *keep, const float *weights, float *dq, float *dk,
                                                          float *dv, long ldd) {
    const recbench_i8 valid = recbench_lanes_below(t);
    const float *factors = keep ? keep : recbench_no_dropout8;
    const long step = keep ? 1 : 0;
    for (long h = 0; h < heads; h++) {
        recbench_v8 rows[8], vt[8], kr[8], dks[8], dvs[8];
        recbench_head_rows8(v + h * 8, ld, t, rows);
        recbench_transpose8x8(rows, vt);   // vt[c] lane j = V[j, c]
        recbench_head_rows8(k + h * 8, ld, t, kr);
        for (long j = 0; j < 8; j++) dks[j] = dvs[j] = 0.0f;
        for (long i = 0; i < t; i++) {
            const float *gi = g + i * ldg + h * 8;
            const recbench_v8 grow = *(const recbench_v8u *)gi, qi = *(const recbench_v8u *)(q + i * ld + h * 8);
            const recbench_v8 p = recbench_load_masked(weights + (h * t + i) * t, valid);
            const recbench_v8 factor = recbench_load_masked(factors + step * (h * t + i) * t, valid);
            const recbench_v8 dp = recbench_row_times8(gi, vt, 8) * factor;
            float a[8], ds[8];
            *(recbench_v8u *)a = p * factor;
            for (long j = 0; j < t; j++) dvs[j] = __builtin_elementwise_fma((recbench_v8)a[j], grow, dvs[j]);
            *(recbench_v8u *)ds = scale * p * (dp - recbench_tree_sum8(p * dp));
            *(recbench_v8u *)(dq + i * ldd + h * 8) = recbench_row_times8(ds, kr, t);
            for (long j = 0; j < t; j++) dks[j] = __builtin_elementwise_fma((recbench_v8)ds[j], qi, dks[j]);
        }
        for (long j = 0; j < t; j++) {
            *(recbench_v8u *)(dk + j * ldd + h * 8) = dks[j];
            *(recbench_v8u *)(dv + j * ldd + h * 8) = dvs[j];
        }
    }
}
#endif
#endif
