// Elementwise maths in an AVX2 + FMA build, for CPUs that have them (Linalg's KernelSet
// picks it at run time; the baseline is Swift's `Lanes`). The same algorithms as `Lanes`:
// Cephes' expf polynomial, tanh as 1 − 2/(e^{2x} + 1); FMA rounds once where the baseline
// rounds twice, so results agree to a few ulp, not bit for bit.
#ifndef RECBENCH_ACTIVATIONS_H
#define RECBENCH_ACTIVATIONS_H

#if defined(__x86_64__)
typedef float recbench_v8 __attribute__((ext_vector_type(8)));
typedef float recbench_v8u __attribute__((ext_vector_type(8), aligned(4)));
typedef int recbench_i8 __attribute__((ext_vector_type(8)));

/// eˣ for lanes within −87.3…88.7 (`Lanes.expInRange`).
__attribute__((target("avx2,fma")))
static inline recbench_v8 recbench_exp_in_range_avx2(recbench_v8 x) {
    const recbench_v8 magic = 12582912.0f;
    const recbench_v8 shifted = __builtin_elementwise_fma(x, (recbench_v8)1.44269504f, magic);
    const recbench_v8 n = shifted - magic;
    const recbench_v8 r = __builtin_elementwise_fma(n, (recbench_v8)2.1219444e-4f, __builtin_elementwise_fma(n, (recbench_v8)-0.693359375f, x));
    recbench_v8 p = 1.98756915e-4f;
    p = __builtin_elementwise_fma(p, r, (recbench_v8)1.39819995e-3f);
    p = __builtin_elementwise_fma(p, r, (recbench_v8)8.3334519e-3f);
    p = __builtin_elementwise_fma(p, r, (recbench_v8)4.16657959e-2f);
    p = __builtin_elementwise_fma(p, r, (recbench_v8)1.66666655e-1f);
    p = __builtin_elementwise_fma(p, r, (recbench_v8)5.00000012e-1f);
    p = __builtin_elementwise_fma(p, r * r, r) + 1.0f;
    const recbench_i8 whole = (recbench_i8)shifted - (recbench_i8)magic;
    const recbench_i8 half = whole >> 1;
    return p * (recbench_v8)((half + 127) << 23) * (recbench_v8)((whole - half + 127) << 23);
}

/// tanh per lane (`Lanes.tanh`'s formula, saturating beyond |x| = 15).
__attribute__((target("avx2,fma")))
static inline recbench_v8 recbench_tanh8_avx2(recbench_v8 x) {
    const recbench_v8 c = __builtin_elementwise_min(__builtin_elementwise_max(x, (recbench_v8)-15.0f), (recbench_v8)15.0f);
    return 1.0f - 2.0f / (recbench_exp_in_range_avx2(2.0f * c) + 1.0f);
}

/// The sum of the eight lanes, in lane order.
__attribute__((target("avx2,fma")))
static inline float recbench_sum8(recbench_v8 v) {
    // Constant lanes: a loop's variable index went through a stack copy and eight dependent loads.
    return ((((((((0.0f + v[0]) + v[1]) + v[2]) + v[3]) + v[4]) + v[5]) + v[6]) + v[7]);
}

/// The sum of the eight lanes by halves (lanes 0–3 + 4–7, then 0–1 + 2–3, then 0 + 1): three
/// adds deep where `recbench_sum8`'s lane order is eight; for sums nothing must match bit for bit.
__attribute__((target("avx2,fma")))
static inline float recbench_tree_sum8(recbench_v8 v) {
    typedef float v4 __attribute__((ext_vector_type(4)));
    const v4 q = v.lo + v.hi;
    const v4 h = q + q.zwxy;
    return h.x + h.y;
}

/// Lanes 0..<lanes set (lanes ≤ 8): the mask of a row's last, partial block of eight.
__attribute__((target("avx2,fma")))
static inline recbench_i8 recbench_lanes_below(long lanes) {
    const recbench_i8 index = {0, 1, 2, 3, 4, 5, 6, 7};
    return index < (recbench_i8)(int)lanes;
}

/// p[0..<8] where `mask` is set, 0 elsewhere (nothing past the set lanes is read).
__attribute__((target("avx2,fma")))
static inline recbench_v8 recbench_load_masked(const float *p, recbench_i8 mask) {
    return (recbench_v8)__builtin_ia32_maskloadps256((const __attribute__((vector_size(32))) float *)p, (__attribute__((vector_size(32))) int)mask);
}

/// Stores v's first k lanes (all eight if k ≥ 8) at p in pieces of 4, 2 and 1: a masked store is
/// microcoded and slow on AMD's cores.
__attribute__((target("avx2,fma")))
static inline void recbench_store_first8(float *p, long k, recbench_v8 v) {
    typedef float v4u __attribute__((ext_vector_type(4), aligned(4)));
    typedef float v2u __attribute__((ext_vector_type(2), aligned(4)));
    if (k >= 8) { *(recbench_v8u *)p = v; return; }
    v4u part = v.lo;
    if (k & 4) { *(v4u *)p = part; part = v.hi; p += 4; }
    if (k & 2) { *(v2u *)p = part.lo; part.lo = part.hi; p += 2; }
    if (k & 1) *p = part.x;
}

/// f per lane, NaN lanes keeping x.
__attribute__((target("avx2,fma"), always_inline))
static inline recbench_v8 recbench_keeping_nan8(recbench_v8 v, recbench_v8 (*f)(recbench_v8)) {
    const recbench_i8 number = v == v;   // all ones except in NaN lanes, which keep x
    return (recbench_v8)(((recbench_i8)f(v) & number) | ((recbench_i8)v & ~number));
}

/// out[i] = f(x[i]) for i in 0..<count, NaN lanes keeping x; the last count mod 8 lanes through
/// a padded vector. Not recursive and always inlined, so a constant f is inlined into the loop
/// instead of called through a pointer every eight lanes.
__attribute__((target("avx2,fma"), always_inline))
static inline void recbench_map_keeping_nan_avx2(const float *x, float *out, long count, recbench_v8 (*f)(recbench_v8)) {
    long i = 0;
    for (; i + 8 <= count; i += 8) *(recbench_v8u *)(out + i) = recbench_keeping_nan8(*(const recbench_v8u *)(x + i), f);
    if (i < count) {
        float in[8] = {0}, res[8];
        for (long k = 0; k < count - i; k++) in[k] = x[i + k];
        *(recbench_v8u *)res = recbench_keeping_nan8(*(const recbench_v8u *)in, f);
        for (long k = 0; k < count - i; k++) out[i + k] = res[k];
    }
}

/// out[i] = tanh(x[i]) for i in 0..<count (`Lanes.tanh`: saturating beyond |x| = 15, NaN kept).
__attribute__((target("avx2,fma")))
static inline void recbench_tanh_avx2(const float *x, float *out, long count) { recbench_map_keeping_nan_avx2(x, out, count, recbench_tanh8_avx2); }

/// log x for x ≥ the smallest normal float (`Lanes.log`: Cephes' logf; +∞ and NaN kept).
__attribute__((target("avx2,fma")))
static inline recbench_v8 recbench_log_avx2(recbench_v8 x) {
    const recbench_i8 bits = (recbench_i8)x;
    recbench_v8 e = __builtin_convertvector((bits >> 23) - 126, recbench_v8);
    recbench_v8 m = (recbench_v8)((bits & 0x007FFFFF) | 0x3F000000);
    const recbench_i8 small = m < 0.70710677f;
    e = (recbench_v8)(((recbench_i8)(e - 1.0f) & small) | ((recbench_i8)e & ~small));
    m = (recbench_v8)(((recbench_i8)(m + m) & small) | ((recbench_i8)m & ~small)) - 1.0f;
    const recbench_v8 z = m * m;
    recbench_v8 p = 7.0376836e-2f;
    p = __builtin_elementwise_fma(p, m, (recbench_v8)-1.1514610e-1f);
    p = __builtin_elementwise_fma(p, m, (recbench_v8)1.1676999e-1f);
    p = __builtin_elementwise_fma(p, m, (recbench_v8)-1.2420141e-1f);
    p = __builtin_elementwise_fma(p, m, (recbench_v8)1.4249323e-1f);
    p = __builtin_elementwise_fma(p, m, (recbench_v8)-1.6668058e-1f);
    p = __builtin_elementwise_fma(p, m, (recbench_v8)2.0000715e-1f);
    p = __builtin_elementwise_fma(p, m, (recbench_v8)-2.4999994e-1f);
    p = __builtin_elementwise_fma(p, m, (recbench_v8)3.3333331e-1f);
    recbench_v8 y = __builtin_elementwise_fma(e, (recbench_v8)-2.1219444e-4f, p * m * z);
    y = __builtin_elementwise_fma((recbench_v8)-0.5f, z, y);
    y = __builtin_elementwise_fma(e, (recbench_v8)0.693359375f, m + y);
    const recbench_i8 keep = (x != x) | (x == __builtin_inff());
    return (recbench_v8)(((recbench_i8)x & keep) | ((recbench_i8)y & ~keep));
}

/// Lanes i..<i+8 of p, or the `lanes` left at a buffer's end with zeros after them.
__attribute__((target("avx2,fma")))
static inline recbench_v8 recbench_load_lanes(const float *p, long i, long lanes) {
    if (lanes == 8) return *(const recbench_v8u *)(p + i);
    recbench_v8 v = 0.0f;
    for (long l = 0; l < lanes; l++) v[l] = p[i + l];
    return v;
}

/// Stores the first `lanes` of v to p[i...].
__attribute__((target("avx2,fma")))
static inline void recbench_store_lanes(float *p, long i, long lanes, recbench_v8 v) {
    if (lanes == 8) { *(recbench_v8u *)(p + i) = v; return; }
    for (long l = 0; l < lanes; l++) p[i + l] = v[l];
}

/// e^{x_j − max x} for the `count` values at `row` into `out` (which may be `row`), as
/// `SoftmaxKernels.exponentials`: an entry more than 87.3 below the maximum (−∞ included)
/// gives 0, NaN stays NaN. Stores the maximum in *peak and returns the sum.
__attribute__((target("avx2,fma")))
static inline float recbench_exponentials_avx2(const float *row, float *out, long count, float *peak) {
    recbench_v8 top = -__builtin_inff();
    for (long i = 0; i < count; i += 8) {
        const long lanes = count - i < 8 ? count - i : 8;
        recbench_v8 v = recbench_load_lanes(row, i, lanes);
        for (long l = lanes; l < 8; l++) v[l] = -__builtin_inff();
        top = __builtin_elementwise_max(top, v);
    }
    float m = top[0];
    for (int l = 1; l < 8; l++) m = m > top[l] ? m : top[l];
    const float low = -87.336544f;
    recbench_v8 total = 0.0f;
    for (long i = 0; i < count; i += 8) {
        const long lanes = count - i < 8 ? count - i : 8;
        const recbench_v8 x = recbench_load_lanes(row, i, lanes) - m;
        const recbench_i8 under = x < low;
        recbench_v8 e = recbench_exp_in_range_avx2((recbench_v8)(((recbench_i8)x & ~under) | ((recbench_i8)(recbench_v8)low & under)));
        e = (recbench_v8)((recbench_i8)e & ~under);
        for (long l = lanes; l < 8; l++) e[l] = 0.0f;
        total += e;
        recbench_store_lanes(out, i, lanes, e);
    }
    *peak = m;
    return recbench_sum8(total);
}

/// vᵀ f(k + q) over n columns: one row's additive-attention score (`AttentionPoolKernels.score`);
/// always inlined, so a constant f is too.
__attribute__((target("avx2,fma"), always_inline))
static inline float recbench_score_avx2(const float *k, const float *q, const float *v, long n, recbench_v8 (*f)(recbench_v8)) {
    recbench_v8 total = 0.0f;
    for (long j = 0; j < n; j += 8) {
        const long lanes = n - j < 8 ? n - j : 8;
        const recbench_v8 u = f(recbench_load_lanes(k, j, lanes) + recbench_load_lanes(q, j, lanes));
        total = __builtin_elementwise_fma(recbench_load_lanes(v, j, lanes), u, total);   // padding lanes: v is 0 there
    }
    return recbench_sum8(total);
}

/// vᵀ tanh(k + q) over n columns (RepeatNet's attention score).
__attribute__((target("avx2,fma")))
static inline float recbench_tanh_score_avx2(const float *k, const float *q, const float *v, long n) {
    return recbench_score_avx2(k, q, v, n, recbench_tanh8_avx2);
}

/// One row of that score's pullback with ds = dL/dscore: dk = ds·v·(1 − u²) for u = tanh(k + q),
/// and dv_total += ds·u.
__attribute__((target("avx2,fma")))
static inline void recbench_tanh_score_backward_avx2(const float *k, const float *q, const float *v, long n, float ds, float *dk,
                                                      float *dv_total) {
    for (long j = 0; j < n; j += 8) {
        const long lanes = n - j < 8 ? n - j : 8;
        const recbench_v8 u = recbench_tanh8_avx2(recbench_load_lanes(k, j, lanes) + recbench_load_lanes(q, j, lanes));
        recbench_store_lanes(dk, j, lanes, ds * recbench_load_lanes(v, j, lanes) * (1.0f - u * u));
        recbench_store_lanes(dv_total, j, lanes, __builtin_elementwise_fma((recbench_v8)ds, u, recbench_load_lanes(dv_total, j, lanes)));
    }
}

/// σ per lane (`Lanes.sigmoid`: 1 / (1 + e^{−x}), the exponent clamped to exp's range).
__attribute__((target("avx2,fma")))
static inline recbench_v8 recbench_sigmoid8_avx2(recbench_v8 x) {
    const recbench_v8 e = __builtin_elementwise_min(__builtin_elementwise_max(-x, (recbench_v8)-87.336544f), (recbench_v8)88.72284f);
    return 1.0f / (1.0f + recbench_exp_in_range_avx2(e));
}

/// out[i] = σ(x[i]) for i in 0..<count (`Lanes.sigmoid`; NaN kept).
__attribute__((target("avx2,fma")))
static inline void recbench_sigmoid_avx2(const float *x, float *out, long count) {
    recbench_map_keeping_nan_avx2(x, out, count, recbench_sigmoid8_avx2);
}

/// σ per lane with NaN lanes kept (as `Lanes.sigmoid`, whose clamp keeps NaN; the min/max clamp
/// of `recbench_sigmoid8_avx2` would turn a NaN into σ = 1 and hide a diverged projection).
__attribute__((target("avx2,fma"), always_inline))
static inline recbench_v8 recbench_sigmoid8_keeping_nan_avx2(recbench_v8 x) { return recbench_keeping_nan8(x, recbench_sigmoid8_avx2); }

/// One sequence of NARM's and STAMP's attention pooling (`AttentionPoolKernels`): out (h floats)
/// += Σ_t m_t (vᵀ σ(p_t + q)) k_t over `steps` time-major rows, the sequence's row t lying
/// t · stride rows in (k rows h wide, p rows hp wide; mask null: every m_t = 1).
__attribute__((target("avx2,fma")))
static inline void recbench_attention_pool_avx2(const float *k, long h, const float *p, const float *q, const float *v, long hp,
                                                const float *mask, long steps, long stride, float *out) {
    for (long t = 0; t < steps; t++) {
        const float m = mask ? mask[t * stride] : 1.0f;
        if (m == 0.0f) continue;
        const float *kr = k + t * stride * h;
        const recbench_v8 alpha = m * recbench_score_avx2(p + t * stride * hp, q, v, hp, recbench_sigmoid8_keeping_nan_avx2);
        for (long j = 0; j < h; j += 8) {
            const long lanes = h - j < 8 ? h - j : 8;
            recbench_store_lanes(out, j, lanes, __builtin_elementwise_fma(alpha, recbench_load_lanes(kr, j, lanes), recbench_load_lanes(out, j, lanes)));
        }
    }
}

/// That sequence's pullback given g = dL/dout: per kept step, dk_t = α_t g, dp_t = s · v ⊙ σ'
/// with s = m_t (g · k_t), dq += dp_t and dv += s σ (σ evaluated once per step); rows of dk and
/// dp of masked steps are left as they are.
__attribute__((target("avx2,fma")))
static inline void recbench_attention_pool_backward_avx2(const float *g, const float *k, long h, const float *p, const float *q, const float *v,
                                                         long hp, const float *mask, long steps, long stride, float *dk, float *dp, float *dq,
                                                         float *dv) {
    for (long t = 0; t < steps; t++) {
        const float m = mask ? mask[t * stride] : 1.0f;
        if (m == 0.0f) continue;
        const float *pr = p + t * stride * hp, *kr = k + t * stride * h;
        recbench_v8 dot = 0.0f;
        for (long j = 0; j < h; j += 8) {
            const long lanes = h - j < 8 ? h - j : 8;
            dot = __builtin_elementwise_fma(recbench_load_lanes(g, j, lanes), recbench_load_lanes(kr, j, lanes), dot);
        }
        const recbench_v8 scale = m * recbench_sum8(dot);
        recbench_v8 total = 0.0f;
        float *dpr = dp + t * stride * hp;
        for (long j = 0; j < hp; j += 8) {
            const long lanes = hp - j < 8 ? hp - j : 8;
            const recbench_v8 w = recbench_load_lanes(v, j, lanes);
            const recbench_v8 u = recbench_sigmoid8_keeping_nan_avx2(recbench_load_lanes(pr, j, lanes) + recbench_load_lanes(q, j, lanes));
            total = __builtin_elementwise_fma(w, u, total);
            const recbench_v8 ds = scale * w * u * (1.0f - u);
            recbench_store_lanes(dpr, j, lanes, ds);
            recbench_store_lanes(dq, j, lanes, recbench_load_lanes(dq, j, lanes) + ds);
            recbench_store_lanes(dv, j, lanes, __builtin_elementwise_fma(scale, u, recbench_load_lanes(dv, j, lanes)));
        }
        const recbench_v8 alpha = m * recbench_sum8(total);
        float *dkr = dk + t * stride * h;
        for (long j = 0; j < h; j += 8) {
            const long lanes = h - j < 8 ? h - j : 8;
            recbench_store_lanes(dkr, j, lanes, alpha * recbench_load_lanes(g, j, lanes));
        }
    }
}

/// One row of layer norm's pullback (`LayerNormKernels.backward`), n columns: g' = g, or g where
/// the output `out` > 0 after a relu (out null: none); dbeta += g', dgamma += g' ⊙ x̂ (the
/// caller's partial column sums); with dx non-null, dx = k (n·dx̂ − Σ dx̂ − x̂ Σ dx̂ ⊙ x̂) for
/// dx̂ = g' ⊙ γ and k = inv / n, and dy = dx ⊙ keep when dy is non-null (the residual's dropout).
__attribute__((target("avx2,fma")))
static inline void recbench_layer_norm_backward_row_avx2(const float *g, const float *out, const float *xn, const float *gamma, float inv, long n,
                                                         float *dbeta, float *dgamma, float *dx, const float *keep, float *dy) {
    recbench_v8 sums = 0.0f, dots = 0.0f;
    for (long j = 0; j < n; j += 8) {
        const long lanes = n - j < 8 ? n - j : 8;
        recbench_v8 gr = recbench_load_lanes(g, j, lanes);
        if (out) gr = (recbench_v8)((recbench_i8)gr & (recbench_load_lanes(out, j, lanes) > 0.0f));
        const recbench_v8 x = recbench_load_lanes(xn, j, lanes), d = gr * recbench_load_lanes(gamma, j, lanes);
        recbench_store_lanes(dbeta, j, lanes, recbench_load_lanes(dbeta, j, lanes) + gr);
        recbench_store_lanes(dgamma, j, lanes, __builtin_elementwise_fma(gr, x, recbench_load_lanes(dgamma, j, lanes)));
        sums += d;
        dots = __builtin_elementwise_fma(d, x, dots);
    }
    if (!dx) return;
    const float sum = recbench_sum8(sums), dot = recbench_sum8(dots), k = inv / (float)n;
    for (long j = 0; j < n; j += 8) {
        const long lanes = n - j < 8 ? n - j : 8;
        recbench_v8 gr = recbench_load_lanes(g, j, lanes);
        if (out) gr = (recbench_v8)((recbench_i8)gr & (recbench_load_lanes(out, j, lanes) > 0.0f));
        const recbench_v8 d = gr * recbench_load_lanes(gamma, j, lanes);
        const recbench_v8 v = k * ((float)n * d - sum - recbench_load_lanes(xn, j, lanes) * dot);
        recbench_store_lanes(dx, j, lanes, v);
        if (dy) recbench_store_lanes(dy, j, lanes, v * recbench_load_lanes(keep, j, lanes));
    }
}

/// out[i] = g[i] · y[i] · (1 − y[i]): σ's pullback given its output y.
__attribute__((target("avx2,fma")))
static inline void recbench_sigmoid_gradient_avx2(const float *g, const float *y, float *out, long count) {
    long i = 0;
    for (; i + 8 <= count; i += 8) {
        const recbench_v8 v = *(const recbench_v8u *)(y + i);
        *(recbench_v8u *)(out + i) = *(const recbench_v8u *)(g + i) * v * (1.0f - v);
    }
    for (; i < count; i++) out[i] = g[i] * y[i] * (1.0f - y[i]);
}

/// dx_r = W dz_r for one row (`recbench_score_mlp_backward_avx2`): Σ_c dz_c Wᵀ[c, :] over the a4
/// entries read, Wᵀ ap × dp (dp = d rounded up to 8, zero-padded), four chains over c.
__attribute__((target("avx2,fma")))
static inline void recbench_score_mlp_dx_row_avx2(const float *dzr, const float *wt, long d, long a4, float *dxr) {
    const long dp = (d + 7) / 8 * 8;
    for (long k0 = 0; k0 < dp; k0 += 8) {
        recbench_v8 a0 = 0, a1 = 0, a2 = 0, a3 = 0;
        for (long c = 0; c < a4; c += 4) {
            a0 += dzr[c] * *(const recbench_v8u *)(wt + c * dp + k0);
            a1 += dzr[c + 1] * *(const recbench_v8u *)(wt + (c + 1) * dp + k0);
            a2 += dzr[c + 2] * *(const recbench_v8u *)(wt + (c + 2) * dp + k0);
            a3 += dzr[c + 3] * *(const recbench_v8u *)(wt + (c + 3) * dp + k0);
        }
        recbench_store_first8(dxr + k0, d - k0, (a0 + a1) + (a2 + a3));
    }
}

/// dW += xᵀ dz over n rows (x n × d, dz n × ap, dW d × ap) with the sums in registers: a
/// row-by-row update of dW would store d · ap floats per row.
__attribute__((target("avx2,fma")))
static inline void recbench_outer_accumulate_avx2(const float *x, long d, const float *dz, long ap, long n, float *dw) {
    for (long k = 0; k < d; k++) {
        long c = 0;
        for (; c + 32 <= ap; c += 32) {   // four blocks × two rows: eight independent chains
            recbench_v8 a0 = 0, a1 = 0, a2 = 0, a3 = 0, b0 = 0, b1 = 0, b2 = 0, b3 = 0;
            long r = 0;
            for (; r + 2 <= n; r += 2) {
                const recbench_v8 x0 = x[r * d + k], x1 = x[(r + 1) * d + k];
                const float *z0 = dz + r * ap + c, *z1 = z0 + ap;
                a0 += x0 * *(const recbench_v8u *)z0; a1 += x0 * *(const recbench_v8u *)(z0 + 8);
                a2 += x0 * *(const recbench_v8u *)(z0 + 16); a3 += x0 * *(const recbench_v8u *)(z0 + 24);
                b0 += x1 * *(const recbench_v8u *)z1; b1 += x1 * *(const recbench_v8u *)(z1 + 8);
                b2 += x1 * *(const recbench_v8u *)(z1 + 16); b3 += x1 * *(const recbench_v8u *)(z1 + 24);
            }
            if (r < n) {
                const recbench_v8 x0 = x[r * d + k];
                const float *z0 = dz + r * ap + c;
                a0 += x0 * *(const recbench_v8u *)z0; a1 += x0 * *(const recbench_v8u *)(z0 + 8);
                a2 += x0 * *(const recbench_v8u *)(z0 + 16); a3 += x0 * *(const recbench_v8u *)(z0 + 24);
            }
            float *o = dw + k * ap + c;
            *(recbench_v8u *)o += a0 + b0; *(recbench_v8u *)(o + 8) += a1 + b1;
            *(recbench_v8u *)(o + 16) += a2 + b2; *(recbench_v8u *)(o + 24) += a3 + b3;
        }
        for (; c < ap; c += 8) {
            recbench_v8 a0 = 0, a1 = 0;   // two chains over the rows
            long r = 0;
            for (; r + 2 <= n; r += 2) {
                a0 += x[r * d + k] * *(const recbench_v8u *)(dz + r * ap + c);
                a1 += x[(r + 1) * d + k] * *(const recbench_v8u *)(dz + (r + 1) * ap + c);
            }
            if (r < n) a0 += x[r * d + k] * *(const recbench_v8u *)(dz + r * ap + c);
            *(recbench_v8u *)(dw + k * ap + c) += a0 + a1;
        }
    }
}

/// An attention network's scores, one per row (AFM's hᵀ ReLU(x W); a bias b allowed):
/// s[r] = h · relu(b + x_r W) for r in 0..<n, x rows of d floats, W d × ap row-major with ap a
/// multiple of 8 (zero-padded columns, as b and h are), so no lane is masked.
/// z's blocks of eight go four at a time, so four independent FMA chains hide the latency.
__attribute__((target("avx2,fma")))
static inline void recbench_score_mlp_hidden_avx2(const float *xr, long d, const float *w, const float *b, long ap, long c,
                                                  recbench_v8 *z) {
    const long blocks = (ap - c) / 8 < 4 ? (ap - c) / 8 : 4;
    if (blocks == 4) {
        recbench_v8 z0 = *(const recbench_v8u *)(b + c), z1 = *(const recbench_v8u *)(b + c + 8);
        recbench_v8 z2 = *(const recbench_v8u *)(b + c + 16), z3 = *(const recbench_v8u *)(b + c + 24);
        for (long k = 0; k < d; k++) {
            const recbench_v8 xk = xr[k];
            const float *wk = w + k * ap + c;
            z0 += xk * *(const recbench_v8u *)wk;
            z1 += xk * *(const recbench_v8u *)(wk + 8);
            z2 += xk * *(const recbench_v8u *)(wk + 16);
            z3 += xk * *(const recbench_v8u *)(wk + 24);
        }
        z[0] = z0; z[1] = z1; z[2] = z2; z[3] = z3;
        return;
    }
    for (long j = 0; j < blocks; j++) {
        recbench_v8 zj = *(const recbench_v8u *)(b + c + 8 * j);
        for (long k = 0; k < d; k++) zj += xr[k] * *(const recbench_v8u *)(w + k * ap + c + 8 * j);
        z[j] = zj;
    }
}

__attribute__((target("avx2,fma")))
static inline void recbench_score_mlp_forward_avx2(const float *x, long d, const float *w, const float *b, const float *h, long ap,
                                                   long n, float *s) {
    for (long r = 0; r < n; r++) {
        recbench_v8 total = 0, z[4];
        for (long c = 0; c < ap; c += 32) {
            recbench_score_mlp_hidden_avx2(x + r * d, d, w, b, ap, c, z);
            for (long j = 0; j < 4 && c + 8 * j < ap; j++) total += *(const recbench_v8u *)(h + c + 8 * j) * __builtin_elementwise_max(z[j], (recbench_v8)0.0f);
        }
        s[r] = recbench_sum8(total);
    }
}

/// The pullback of `recbench_score_mlp_forward_avx2` given gs (n): recomputes z = b + x_r W, then
/// dz_r = gs[r] · h ⊙ [z > 0] (into row r of `dz`, n × ap), dx_r = W dz_r (written; from wt, Wᵀ as
/// ap × dp with dp = d rounded up to 8, zero-padded), db += dz_r and dh += gs[r] · relu(z) (added,
/// ap wide); then dW += xᵀ dz over the n rows with the sums in registers (a row-by-row update
/// of dW would store d · ap floats per row). `a4` is a rounded up to 4 (≤ ap): the dz entries read.
__attribute__((target("avx2,fma")))
static inline void recbench_score_mlp_backward_avx2(const float *x, long d, const float *w, const float *wt, const float *b,
                                                    const float *h, long ap, long a4, long n, const float *gs, float *dx,
                                                    float *dw, float *db, float *dh, float *dz) {
    for (long r = 0; r < n; r++) {
        const recbench_v8 g = gs[r];
        float *dzr = dz + r * ap;
        recbench_v8 z[4];
        for (long c = 0; c < ap; c += 32) {
            recbench_score_mlp_hidden_avx2(x + r * d, d, w, b, ap, c, z);
            for (long j = 0; j < 4 && c + 8 * j < ap; j++) {
                const long o = c + 8 * j;
                const recbench_i8 on = z[j] > 0.0f;
                const recbench_v8 dzj = (recbench_v8)((recbench_i8)(g * *(const recbench_v8u *)(h + o)) & on);
                *(recbench_v8u *)(dh + o) += g * __builtin_elementwise_max(z[j], (recbench_v8)0.0f);
                *(recbench_v8u *)(db + o) += dzj;
                *(recbench_v8u *)(dzr + o) = dzj;
            }
        }
        recbench_score_mlp_dx_row_avx2(dzr, wt, d, a4, dx + r * d);
    }
    recbench_outer_accumulate_avx2(x, d, dz, ap, n, dw);
}

/// x_k = e_f ⊙ e_g for each of a row's P field pairs (f_k, g_k), e the row's F · d side-by-side
/// field embeddings: AFM's pair rows, rebuilt per chunk rather than kept (one product each).
__attribute__((target("avx2,fma")))
static inline void recbench_pair_products_avx2(const float *e, long d, const int *pf, const int *pg, long pairs, float *x) {
    for (long k = 0; k < pairs; k++) {
        const float *a = e + pf[k] * d, *b = e + pg[k] * d;
        for (long j = 0; j < d; j += 8) {
            const recbench_i8 m = recbench_lanes_below(d - j);
            recbench_store_first8(x + k * d + j, d - j, recbench_load_masked(a + j, m) * recbench_load_masked(b + j, m));
        }
    }
}

/// AFM's attentional pooling over field pairs for n rows (row stride fd = F · d in e, d in q):
/// x_k = e_f ⊙ e_g, z_k = x_k W (+ b), l_k = h · relu(z_k), v_k = q · x_k, out = Σ_k w_k v_k with
/// w = softmax(l). For the pullback, per pair row: w_k, c_k = w_k (v_k − out) (∂out/∂l_k) and
/// z_k's signs (ap / 8 bytes), and per row H = Σ_k c_k relu(z_k) (ap floats), so the pullback
/// never recomputes z. x (P × d) and relu (P × ap) are one row's scratch.
__attribute__((target("avx2,fma")))
static inline void recbench_pair_attention_forward_avx2(const float *e, long fd, long d, const int *pf, const int *pg, long pairs,
                                                        const float *q, const float *w, const float *b, const float *h, long ap, long n,
                                                        float *x, float *relu, float *weights, float *coef, unsigned char *signs,
                                                        float *hsum, float *out) {
    const long blocks = ap / 8;
    for (long r = 0; r < n; r++) {
        float *wr = weights + r * pairs, *cr = coef + r * pairs, peak;
        recbench_pair_products_avx2(e + r * fd, d, pf, pg, pairs, x);
        for (long k = 0; k < pairs; k++) {
            recbench_v8 total = 0.0f, dot = 0.0f, z[4];
            for (long c = 0; c < ap; c += 32) {
                recbench_score_mlp_hidden_avx2(x + k * d, d, w, b, ap, c, z);
                for (long j = 0; j < 4 && c + 8 * j < ap; j++) {
                    const recbench_v8 positive = __builtin_elementwise_max(z[j], (recbench_v8)0.0f);
                    *(recbench_v8u *)(relu + k * ap + c + 8 * j) = positive;
                    total += *(const recbench_v8u *)(h + c + 8 * j) * positive;
                    signs[(r * pairs + k) * blocks + c / 8 + j] = (unsigned char)__builtin_ia32_movmskps256(
                        (__attribute__((vector_size(32))) float)(z[j] > 0.0f));
                }
            }
            for (long j = 0; j < d; j += 8) {
                const recbench_i8 m = recbench_lanes_below(d - j);
                dot += recbench_load_masked(q + r * d + j, m) * recbench_load_masked(x + k * d + j, m);
            }
            wr[k] = recbench_tree_sum8(total);   // the logit, until the softmax below
            cr[k] = recbench_tree_sum8(dot);     // the value, until c_k replaces it
        }
        const float sum = recbench_exponentials_avx2(wr, wr, pairs, &peak);
        float weighted = 0.0f;
        for (long k = 0; k < pairs; k++) { wr[k] /= sum; weighted += wr[k] * cr[k]; }
        out[r] = weighted;
        for (long k = 0; k < pairs; k++) cr[k] = wr[k] * (cr[k] - weighted);
        for (long o = 0; o < ap; o += 32) {   // H's blocks four at a time in registers: independent chains over the pairs
            const long blocks4 = (ap - o) / 8 < 4 ? (ap - o) / 8 : 4;
            recbench_v8 acc[4] = {0, 0, 0, 0};
            for (long k = 0; k < pairs; k++) {
#pragma clang loop unroll(full)
                for (long j = 0; j < 4; j++) if (j < blocks4) acc[j] += cr[k] * *(const recbench_v8u *)(relu + k * ap + o + 8 * j);
            }
            for (long j = 0; j < blocks4; j++) *(recbench_v8u *)(hsum + r * ap + o + 8 * j) = acc[j];
        }
    }
}

/// The pullback of `recbench_pair_attention_forward_avx2` given g (n), from what it kept: dz_k =
/// g c_k · h ⊙ [z_k > 0], dx_k = W dz_k (from Wᵀ, ap × dp: `recbench_score_mlp_dx_row_avx2`), dW += Σ x_k ⊗ dz_k, dh += g H (db is Σ dz, not made: the
/// pooling has no bias); then dx_k += g w_k q; dq (written, n × d) = Σ_k g w_k x_k; de (written,
/// n × fd) = Σ over pairs of dx_k ⊙ e_g into e_f's slot and dx_k ⊙ e_f into e_g's.
/// x, dx (n · P × d) and dz (n · P × ap) are scratch.
__attribute__((target("avx2,fma")))
static inline void recbench_pair_attention_backward_avx2(const float *g, const float *e, long fd, long d, const int *pf, const int *pg,
                                                         long pairs, const float *q, const float *wt, const float *h, long ap, long a4,
                                                         long n, const float *weights, const float *coef, const unsigned char *signs,
                                                         const float *hsum, float *x, float *dx, float *dz, float *de, float *dq,
                                                         float *dw, float *dh) {
    const long blocks = ap / 8;
    const recbench_i8 bit = {1, 2, 4, 8, 16, 32, 64, 128};
    for (long r = 0; r < n; r++) {
        recbench_pair_products_avx2(e + r * fd, d, pf, pg, pairs, x + r * pairs * d);
        for (long k = 0; k < pairs; k++) {
            const long row = r * pairs + k;
            const recbench_v8 s = g[r] * coef[row];
            for (long j = 0; j < blocks; j++) {
                const recbench_i8 on = ((recbench_i8)(int)signs[row * blocks + j] & bit) != 0;
                *(recbench_v8u *)(dz + row * ap + 8 * j) = (recbench_v8)((recbench_i8)(s * *(const recbench_v8u *)(h + 8 * j)) & on);
            }
            recbench_score_mlp_dx_row_avx2(dz + row * ap, wt, d, a4, dx + row * d);
        }
        for (long o = 0; o < ap; o += 8) *(recbench_v8u *)(dh + o) += g[r] * *(const recbench_v8u *)(hsum + r * ap + o);
    }
    recbench_outer_accumulate_avx2(x, d, dz, ap, n * pairs, dw);
    for (long r = 0; r < n; r++) {
        const float *er = e + r * fd, *qr = q + r * d;
        float *der = de + r * fd, *dqr = dq + r * d;
        for (long j = 0; j < fd; j++) der[j] = 0.0f;
        for (long j = 0; j < d; j++) dqr[j] = 0.0f;
        for (long k = 0; k < pairs; k++) {
            const float dv = g[r] * weights[r * pairs + k];
            const float *xk = x + (r * pairs + k) * d, *a = er + pf[k] * d, *bb = er + pg[k] * d;
            float *dxk = dx + (r * pairs + k) * d, *da = der + pf[k] * d, *dbb = der + pg[k] * d;
            for (long j = 0; j < d; j += 8) {   // da before dbb: a pair f = g gets both terms
                const recbench_i8 m = recbench_lanes_below(d - j);
                const recbench_v8 t = recbench_load_masked(dxk + j, m) + dv * recbench_load_masked(qr + j, m);
                recbench_store_first8(dqr + j, d - j, recbench_load_masked(dqr + j, m) + dv * recbench_load_masked(xk + j, m));
                recbench_store_first8(da + j, d - j, recbench_load_masked(da + j, m) + t * recbench_load_masked(bb + j, m));
                recbench_store_first8(dbb + j, d - j, recbench_load_masked(dbb + j, m) + t * recbench_load_masked(a + j, m));
            }
        }
    }
}

/// One row of a GRU step (`GRUKernels.forward`): gates (x W_i: r, z, n blocks of h each) and
/// products (h W_h) give r = σ, z = σ, n = tanh(x W_in + r ⊙ h W_hn), written over the gates;
/// h W_hn into kept, h' = (1 − z) ⊙ n + z ⊙ before (0 without it) into out.
__attribute__((target("avx2,fma")))
static inline void recbench_gru_forward_avx2(float *gates, const float *products, const float *before, float *kept, float *out, long h) {
    for (long j = 0; j < h; j += 8) {
        const long lanes = h - j < 8 ? h - j : 8;
        const recbench_v8 r = recbench_sigmoid8_avx2(recbench_load_lanes(gates, j, lanes) + recbench_load_lanes(products, j, lanes));
        const recbench_v8 z = recbench_sigmoid8_avx2(recbench_load_lanes(gates + h, j, lanes) + recbench_load_lanes(products + h, j, lanes));
        const recbench_v8 hn = recbench_load_lanes(products + 2 * h, j, lanes);
        const recbench_v8 n = recbench_tanh8_avx2(__builtin_elementwise_fma(r, hn, recbench_load_lanes(gates + 2 * h, j, lanes)));
        const recbench_v8 previous = before ? recbench_load_lanes(before, j, lanes) : (recbench_v8)0.0f;
        recbench_store_lanes(gates, j, lanes, r);
        recbench_store_lanes(gates + h, j, lanes, z);
        recbench_store_lanes(gates + 2 * h, j, lanes, n);
        recbench_store_lanes(kept, j, lanes, hn);
        recbench_store_lanes(out, j, lanes, __builtin_elementwise_fma(z, previous - n, n));   // (1 − z) n + z h
    }
}

/// One row of a GRU step's pullback (`GRUKernels.backward`): with dh = g + carry and the
/// forward's r, z, n (in gates) and h W_hn (hn), writes dr, dz, dn over the gates, dr, dz,
/// dn ⊙ r into dHidden, and dh ⊙ z into carry.
__attribute__((target("avx2,fma")))
static inline void recbench_gru_backward_avx2(const float *g, const float *hn, const float *before, float *gates, float *dHidden,
                                              float *carry, long h) {
    for (long j = 0; j < h; j += 8) {
        const long lanes = h - j < 8 ? h - j : 8;
        const recbench_v8 previous = before ? recbench_load_lanes(before, j, lanes) : (recbench_v8)0.0f;
        const recbench_v8 dh = recbench_load_lanes(g, j, lanes) + recbench_load_lanes(carry, j, lanes);
        const recbench_v8 r = recbench_load_lanes(gates, j, lanes), z = recbench_load_lanes(gates + h, j, lanes);
        const recbench_v8 n = recbench_load_lanes(gates + 2 * h, j, lanes);
        const recbench_v8 dn = dh * (1.0f - z) * (1.0f - n * n);
        const recbench_v8 dz = dh * (previous - n) * z * (1.0f - z);
        const recbench_v8 dr = dn * recbench_load_lanes(hn, j, lanes) * r * (1.0f - r);
        recbench_store_lanes(gates, j, lanes, dr); recbench_store_lanes(dHidden, j, lanes, dr);
        recbench_store_lanes(gates + h, j, lanes, dz); recbench_store_lanes(dHidden + h, j, lanes, dz);
        recbench_store_lanes(gates + 2 * h, j, lanes, dn); recbench_store_lanes(dHidden + 2 * h, j, lanes, dn * r);
        recbench_store_lanes(carry, j, lanes, dh * z);
    }
}

/// Φ(x) = ½(1 + erf(x/√2)) and the Gaussian e^{−x²/2} its erf used (`Lanes.erf`, Abramowitz &
/// Stegun 7.1.26), so GELU's slope Φ + x·φ needs one exponential, not two.
__attribute__((target("avx2,fma")))
static inline recbench_v8 recbench_normal_cdf_avx2(recbench_v8 x, recbench_v8 *gaussian) {
    const recbench_v8 a = __builtin_elementwise_abs(x * 0.70710678118654752f);
    const recbench_v8 t = 1.0f / __builtin_elementwise_fma(a, (recbench_v8)0.3275911f, (recbench_v8)1.0f);
    recbench_v8 poly = 1.061405429f;
    poly = __builtin_elementwise_fma(poly, t, (recbench_v8)-1.453152027f);
    poly = __builtin_elementwise_fma(poly, t, (recbench_v8)1.421413741f);
    poly = __builtin_elementwise_fma(poly, t, (recbench_v8)-0.284496736f);
    poly = __builtin_elementwise_fma(poly, t, (recbench_v8)0.254829592f);
    poly = poly * t;
    // e^{−a²} underflows to 0 below −87.3, as `Lanes.expNonPositive`.
    const recbench_v8 power = -(a * a);
    const recbench_i8 under = power < -87.336544f;
    const recbench_v8 e = (recbench_v8)((recbench_i8)recbench_exp_in_range_avx2(__builtin_elementwise_max(power, (recbench_v8)-87.336544f)) & ~under);
    *gaussian = e;
    const recbench_v8 erfAbs = __builtin_elementwise_fma(-poly, e, (recbench_v8)1.0f);
    const recbench_i8 negative = x < 0.0f;
    const recbench_v8 erf = (recbench_v8)(((recbench_i8)(-erfAbs) & negative) | ((recbench_i8)erfAbs & ~negative));
    return 0.5f * (1.0f + erf);
}

/// out[i] = GELU(x[i]) = x·Φ(x) (`Lanes.gelu`), or with `g`, out[i] = g[i]·(Φ(x) + x·φ(x))
/// (`Lanes.geluSlope`: the pullback); the last count mod 8 lanes through a padded vector.
__attribute__((target("avx2,fma")))
static inline void recbench_gelu_avx2(const float *x, const float *g, float *out, long count) {
    for (long i = 0; i < count; i += 8) {
        const long lanes = count - i < 8 ? count - i : 8;
        const recbench_v8 v = recbench_load_lanes(x, i, lanes);
        recbench_v8 gaussian;
        const recbench_v8 cdf = recbench_normal_cdf_avx2(v, &gaussian);
        const recbench_v8 y = g ? recbench_load_lanes(g, i, lanes) * __builtin_elementwise_fma(v * 0.3989422804014327f, gaussian, cdf) : v * cdf;
        recbench_store_lanes(out, i, lanes, y);
    }
}

/// out[i] = log Σ_j exp(terms[j][i]) for i in begin..<end (`GaussianKernels.logSumExp`):
/// the maximum subtracted first, so every exponential is at most 1 and the sum at least 1;
/// with `shares`, also shares[j][i] = exp(terms[j][i] − out[i]). NaN in a term gives NaN.
__attribute__((target("avx2,fma")))
static inline void recbench_logsumexp_avx2(const float *const *terms, long k, long begin, long end, long count,
                                           float *out, float *const *shares) {
    for (long i = begin; i < end; i += 8) {
        const long lanes = count - i < 8 ? count - i : 8;
        recbench_v8 top = -__builtin_inff();
        for (long j = 0; j < k; j++) {
            const recbench_v8 v = recbench_load_lanes(terms[j], i, lanes);
            top = (recbench_v8)(((recbench_i8)v & (v > top)) | ((recbench_i8)top & ~(v > top)));   // NaN never wins
        }
        recbench_v8 sum = 0.0f;
        for (long j = 0; j < k; j++) {
            recbench_v8 d = recbench_load_lanes(terms[j], i, lanes) - top;
            const recbench_i8 under = d < -87.336544f;
            d = (recbench_v8)(((recbench_i8)(recbench_v8)-87.336544f & under) | ((recbench_i8)d & ~under));
            const recbench_v8 x = (recbench_v8)((recbench_i8)recbench_exp_in_range_avx2(d) & ~under);
            if (shares) recbench_store_lanes(shares[j], i, lanes, x);
            sum += x;
        }
        if (shares) {
            const recbench_v8 inverse = 1.0f / sum;
            for (long j = 0; j < k; j++) recbench_store_lanes(shares[j], i, lanes, recbench_load_lanes(shares[j], i, lanes) * inverse);
        }
        recbench_store_lanes(out, i, lanes, top + recbench_log_avx2(sum));
    }
}
#endif

#endif
