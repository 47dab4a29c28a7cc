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

#endif
