// Multi-head self-attention with heads eight wide over at most eight steps (AutoInt's fields:
// 7 steps, two 8-wide heads), one sequence a call, a row of scores in one register: the
// general loops (`AttentionKernels.forward`) spend most of their time on the partial rows and
// per-product overhead of such tiny heads. AVX2 + FMA only.
#ifndef RECBENCH_ATTENTION_H
#define RECBENCH_ATTENTION_H

#include "activations.h"

#if defined(__x86_64__)
/// Dropout factors of 1, read for a row without dropout.
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

/// One head's operands: `transposed`'s rows 0..<t as their columns' lanes (cols[c] lane j = x[j, c])
/// and `plain`'s rows as they are, both 8 columns, row stride ld.
__attribute__((target("avx2,fma"), always_inline))
static inline void recbench_head_operands8(const float *transposed, const float *plain, long ld, long t, recbench_v8 *cols, recbench_v8 *rows) {
    recbench_v8 r[8];
    recbench_head_rows8(transposed, ld, t, r);
    recbench_transpose8x8(r, cols);
    recbench_head_rows8(plain, ld, t, rows);
}

/// Row i of head h's dropout factors (t × t a head), or ones without dropout.
static inline const float *recbench_dropout_row8(const float *keep, long h, long t, long i) {
    return keep ? keep + (h * t + i) * t : recbench_no_dropout8;
}

/// Σ_c a[c] · m[c]: a row times an 8 × 8 matrix held as its columns' lanes (or rows'), a[c]
/// broadcast from memory.
__attribute__((target("avx2,fma"), always_inline))
static inline recbench_v8 recbench_row_times8(const float *a, const recbench_v8 *m) {
    recbench_v8 s = 0.0f;
    for (long c = 0; c < 8; c++) s = __builtin_elementwise_fma((recbench_v8)a[c], m[c], s);
    return s;
}

/// Lane c of v in every lane (a register permute: reading the lane back from a stack copy
/// stalls on store forwarding).
#define RECBENCH_LANE8(v, c) __builtin_shufflevector(v, v, c, c, c, c, c, c, c, c)

/// Σ_c a[c] · m[c] with a in a register (lanes past a row's steps are 0, as are m's rows there).
__attribute__((target("avx2,fma"), always_inline))
static inline recbench_v8 recbench_lanes_times8(recbench_v8 a, const recbench_v8 *m) {
    recbench_v8 s = RECBENCH_LANE8(a, 0) * m[0];
    s = __builtin_elementwise_fma(RECBENCH_LANE8(a, 1), m[1], s);
    s = __builtin_elementwise_fma(RECBENCH_LANE8(a, 2), m[2], s);
    s = __builtin_elementwise_fma(RECBENCH_LANE8(a, 3), m[3], s);
    s = __builtin_elementwise_fma(RECBENCH_LANE8(a, 4), m[4], s);
    s = __builtin_elementwise_fma(RECBENCH_LANE8(a, 5), m[5], s);
    s = __builtin_elementwise_fma(RECBENCH_LANE8(a, 6), m[6], s);
    return __builtin_elementwise_fma(RECBENCH_LANE8(a, 7), m[7], s);
}

/// acc[j] += a[j] · x for the eight j (a rank-one update, a in a register).
__attribute__((target("avx2,fma"), always_inline))
static inline void recbench_outer_add8(recbench_v8 a, recbench_v8 x, recbench_v8 *acc) {
    acc[0] = __builtin_elementwise_fma(RECBENCH_LANE8(a, 0), x, acc[0]);
    acc[1] = __builtin_elementwise_fma(RECBENCH_LANE8(a, 1), x, acc[1]);
    acc[2] = __builtin_elementwise_fma(RECBENCH_LANE8(a, 2), x, acc[2]);
    acc[3] = __builtin_elementwise_fma(RECBENCH_LANE8(a, 3), x, acc[3]);
    acc[4] = __builtin_elementwise_fma(RECBENCH_LANE8(a, 4), x, acc[4]);
    acc[5] = __builtin_elementwise_fma(RECBENCH_LANE8(a, 5), x, acc[5]);
    acc[6] = __builtin_elementwise_fma(RECBENCH_LANE8(a, 6), x, acc[6]);
    acc[7] = __builtin_elementwise_fma(RECBENCH_LANE8(a, 7), x, acc[7]);
}

/// One sequence of t ≤ 8 rows, `heads` heads of 8 columns: per head P = softmax(Q Kᵀ · scale) row
/// by row (written to weights, t × t a head), out = (P ⊙ keep) V. q, k and v have row stride ld,
/// out ldo; keep (t × t a head, or null) the dropout factors. The softmax runs on the scores
/// transposed (a lane per row), so every row's max, exponentials and sum are vertical and
/// independent: row by row, each row was one long chain of dependent horizontal steps.
__attribute__((target("avx2,fma")))
static inline void recbench_short_attention_avx2(long t, long heads, float scale, const float *q, const float *k, const float *v, long ld,
                                                 const float *keep, float *weights, float *out, long ldo) {
    const recbench_i8 valid = recbench_lanes_below(t);
    const recbench_v8 low = -87.336544f;
    for (long h = 0; h < heads; h++) {
        recbench_v8 rows[8], kt[8], vr[8], st[8], p[8];
        recbench_head_operands8(k + h * 8, v + h * 8, ld, t, kt, vr);   // kt[c] lane j = K[j, c]
        for (long i = 0; i < 8; i++) rows[i] = i < t ? scale * recbench_row_times8(q + i * ld + h * 8, kt) : (recbench_v8)0.0f;
        recbench_transpose8x8(rows, st);   // st[j] lane i = S[i, j]
        recbench_v8 top = st[0], total = 0.0f;
        for (long j = 1; j < t; j++) top = __builtin_elementwise_max(top, st[j]);
        for (long j = 0; j < 8; j++) {
            const recbench_v8 x = st[j] - top;   // ≤ 0 for j < t; padding columns (j ≥ t) are zeroed below, whatever their exp
            const recbench_v8 e = (recbench_v8)((recbench_i8)recbench_exp_in_range_avx2(__builtin_elementwise_max(x, low)) & ~(x < low));
            st[j] = j < t ? e : (recbench_v8)0.0f;
            total += st[j];
        }
        const recbench_v8 inverse = 1.0f / total;
        for (long j = 0; j < 8; j++) st[j] *= inverse;
        recbench_transpose8x8(st, p);   // p[i] lane j = P[i, j]
        for (long i = 0; i < t; i++) {
            recbench_store_first8(weights + (h * t + i) * t, t, p[i]);
            const recbench_v8 a = p[i] * recbench_load_masked(recbench_dropout_row8(keep, h, t, i), valid);
            *(recbench_v8u *)(out + i * ldo + h * 8) = recbench_lanes_times8(a, vr);
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
    for (long h = 0; h < heads; h++) {
        recbench_v8 vt[8], kr[8], dks[8], dvs[8];
        recbench_head_operands8(v + h * 8, k + h * 8, ld, t, vt, kr);   // vt[c] lane j = V[j, c]
        for (long j = 0; j < 8; j++) dks[j] = dvs[j] = 0.0f;
        for (long i = 0; i < t; i++) {
            const float *gi = g + i * ldg + h * 8;
            const recbench_v8 grow = *(const recbench_v8u *)gi, qi = *(const recbench_v8u *)(q + i * ld + h * 8);
            const recbench_v8 p = recbench_load_masked(weights + (h * t + i) * t, valid);
            const recbench_v8 factor = recbench_load_masked(recbench_dropout_row8(keep, h, t, i), valid);
            const recbench_v8 dp = recbench_row_times8(gi, vt) * factor;
            recbench_outer_add8(p * factor, grow, dvs);
            const recbench_v8 ds = scale * p * (dp - recbench_tree_sum8(p * dp));
            *(recbench_v8u *)(dq + i * ldd + h * 8) = recbench_lanes_times8(ds, kr);
            recbench_outer_add8(ds, qi, dks);
        }
        for (long j = 0; j < t; j++) {
            *(recbench_v8u *)(dk + j * ldd + h * 8) = dks[j];
            *(recbench_v8u *)(dv + j * ldd + h * 8) = dvs[j];
        }
    }
}
#endif
#endif
