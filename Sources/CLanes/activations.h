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

/// out[i] = tanh(x[i]) for i in 0..<count (`Lanes.tanh`: saturating beyond |x| = 15, NaN
/// kept); the last count mod 8 lanes through a padded vector.
__attribute__((target("avx2,fma")))
static inline void recbench_tanh_avx2(const float *x, float *out, long count) {
    long i = 0;
    for (; i + 8 <= count; i += 8) {
        const recbench_v8 v = *(const recbench_v8u *)(x + i);
        const recbench_v8 c = __builtin_elementwise_min(__builtin_elementwise_max(v, (recbench_v8)-15.0f), (recbench_v8)15.0f);
        const recbench_v8 t = 1.0f - 2.0f / (recbench_exp_in_range_avx2(2.0f * c) + 1.0f);
        const recbench_i8 number = v == v;   // all ones except in NaN lanes, which keep x
        *(recbench_v8u *)(out + i) = (recbench_v8)(((recbench_i8)t & number) | ((recbench_i8)v & ~number));
    }
    if (i < count) {
        float in[8] = {0}, res[8];
        for (long k = 0; k < count - i; k++) in[k] = x[i + k];
        recbench_tanh_avx2(in, res, 8);
        for (long k = 0; k < count - i; k++) out[i + k] = res[k];
    }
}
#endif

#endif
