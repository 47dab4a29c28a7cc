// The candidate scan of top-K selection (Linalg's TopK): find the entries of a score row
// above a floor. Most of a row is below it, so the scan is a compare per eight scores and
// a lane bitmask; SSE's and AVX's movemask give that bitmask in one instruction, where
// Swift's SIMD8 builds it lane by lane. Header-only, like sparse.h: the baseline build uses
// SSE (part of x86-64), the AVX2 one is chosen at run time by the caller.
#ifndef RECBENCH_TOPK_H
#define RECBENCH_TOPK_H

#include <stdint.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

/// Appends (row[j], j) to scores/items at `count` for each j from *position on with
/// row[j] > floor (NaN and −∞ never pass a finite or −∞ floor), in column order, until the
/// buffers hold `capacity`. Returns the new count; *position is then the next column to
/// examine (n when the row is done).
static inline long recbench_topk_scan(const float *row, long *position, long n, float floor,
                                      float *scores, int32_t *items, long count, long capacity) {
    long j = *position;
#if defined(__x86_64__)
    const __m128 f = _mm_set1_ps(floor);
    for (; j + 8 <= n; j += 8) {
        unsigned bits = (unsigned)_mm_movemask_ps(_mm_cmpgt_ps(_mm_loadu_ps(row + j), f))
                      | (unsigned)_mm_movemask_ps(_mm_cmpgt_ps(_mm_loadu_ps(row + j + 4), f)) << 4;
        while (bits) {
            long l = __builtin_ctz(bits);
            bits &= bits - 1;
            scores[count] = row[j + l]; items[count] = (int32_t)(j + l);
            if (++count == capacity) { *position = j + l + 1; return count; }
        }
    }
#endif
    for (; j < n; j++) {
        if (row[j] > floor) {
            scores[count] = row[j]; items[count] = (int32_t)j;
            if (++count == capacity) { *position = j + 1; return count; }
        }
    }
    *position = n;
    return count;
}

#if defined(__x86_64__)
/// `recbench_topk_scan` with one 8-lane AVX compare per eight scores.
__attribute__((target("avx2")))
static inline long recbench_topk_scan_avx2(const float *row, long *position, long n, float floor,
                                           float *scores, int32_t *items, long count, long capacity) {
    long j = *position;
    const __m256 f = _mm256_set1_ps(floor);
    for (; j + 8 <= n; j += 8) {
        unsigned bits = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(row + j), f, _CMP_GT_OQ));
        while (bits) {
            long l = __builtin_ctz(bits);
            bits &= bits - 1;
            scores[count] = row[j + l]; items[count] = (int32_t)(j + l);
            if (++count == capacity) { *position = j + l + 1; return count; }
        }
    }
    for (; j < n; j++) {
        if (row[j] > floor) {
            scores[count] = row[j]; items[count] = (int32_t)j;
            if (++count == capacity) { *position = j + 1; return count; }
        }
    }
    *position = n;
    return count;
}
#endif

/// The lane-wise maxima of `blocks` interleaved sets of the row's n/8 eight-score vectors
/// (vector v goes to set v mod blocks), eight per set, to `out` (8 × blocks floats). Sets
/// spread over the whole row keep a floor from them high where good scores cluster in one
/// region of the columns (popular items numbered first). NaN never wins a comparison.
static inline void recbench_block_maxima(const float *row, long n, long blocks, float *out) {
    const long vectors = n / 8;
    for (long b = 0; b < blocks; b++) {   // one set at a time, its maximum in registers
#if defined(__x86_64__)
        __m128 lo = _mm_set1_ps(-__builtin_inff()), hi = lo;
        for (long v = b; v < vectors; v += blocks) {
            lo = _mm_max_ps(_mm_loadu_ps(row + 8 * v), lo);   // maxps returns its second operand on NaN
            hi = _mm_max_ps(_mm_loadu_ps(row + 8 * v + 4), hi);
        }
        _mm_storeu_ps(out + 8 * b, lo); _mm_storeu_ps(out + 8 * b + 4, hi);
#else
        for (long l = 0; l < 8; l++) {
            float m = -__builtin_inff();
            for (long v = b; v < vectors; v += blocks) if (row[8 * v + l] > m) m = row[8 * v + l];
            out[8 * b + l] = m;
        }
#endif
    }
}

#if defined(__x86_64__)
/// `recbench_block_maxima` with one 8-lane AVX maximum per eight scores.
__attribute__((target("avx2")))
static inline void recbench_block_maxima_avx2(const float *row, long n, long blocks, float *out) {
    const long vectors = n / 8;
    for (long b = 0; b < blocks; b++) {   // one set at a time, its maximum in a register
        __m256 m = _mm256_set1_ps(-__builtin_inff());
        for (long v = b; v < vectors; v += blocks) m = _mm256_max_ps(_mm256_loadu_ps(row + 8 * v), m);
        _mm256_storeu_ps(out + 8 * b, m);
    }
}
#endif

/// The k-th largest of v[0..<m] (m a multiple of 8, 1 ≤ k ≤ m, no NaN): the smallest value
/// that fewer than k others exceed, by counting, without a data-dependent branch (m is a few
/// dozen block maxima, whose order a sort would mispredict on nearly every comparison). Each
/// value is compared with four others at once and the true lanes (−1) subtracted from a
/// count, so the m² compares cost m²/4 instructions and stay in 32-bit lanes.
static inline float recbench_kth_largest(const float *v, long m, long k) {
    float result = __builtin_inff();
    for (long i = 0; i < m; i++) {
        long above = 0;
#if defined(__x86_64__)
        const __m128 x = _mm_set1_ps(v[i]);
        __m128i count = _mm_setzero_si128();
        for (long j = 0; j < m; j += 4) count = _mm_sub_epi32(count, _mm_castps_si128(_mm_cmpgt_ps(_mm_loadu_ps(v + j), x)));
        count = _mm_add_epi32(count, _mm_shuffle_epi32(count, 0x4e));
        count = _mm_add_epi32(count, _mm_shuffle_epi32(count, 0xb1));
        above = _mm_cvtsi128_si32(count);
#else
        for (long j = 0; j < m; j++) above += v[j] > v[i];
#endif
        const float candidate = above < k ? v[i] : __builtin_inff();
        result = candidate < result ? candidate : result;
    }
    return result;
}

#if defined(__x86_64__)
/// `recbench_kth_largest` with eight compares per instruction and a popcount of their mask.
__attribute__((target("avx2,popcnt")))
static inline float recbench_kth_largest_avx2(const float *v, long m, long k) {
    float result = __builtin_inff();
    for (long i = 0; i < m; i++) {
        const __m256 x = _mm256_set1_ps(v[i]);
        int above = 0;
        for (long j = 0; j < m; j += 8) above += __builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(v + j), x, _CMP_GT_OQ)));
        const float candidate = above < k ? v[i] : __builtin_inff();
        result = candidate < result ? candidate : result;
    }
    return result;
}
#endif

#endif
