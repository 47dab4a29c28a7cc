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

#endif
