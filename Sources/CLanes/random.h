// Dropout masks from xoshiro256** streams (Linalg's SeededGenerator), bit for bit: each
// chunk of 32,768 entries has its own stream, seeded by splitmix64 from (seed, chunk). The
// AVX2 build runs four chunks' generators side by side, one per 64-bit lane, where a single
// generator's dependency chain would leave the core idle; the baseline runs them one by one.
#ifndef RECBENCH_RANDOM_H
#define RECBENCH_RANDOM_H

#include <stdint.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#define RECBENCH_MASK_CHUNK 32768L

static inline uint64_t recbench_splitmix64(uint64_t *x) {
    *x += 0x9E3779B97F4A7C15ULL;
    uint64_t z = *x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/// SeededGenerator(seed:stream:)'s state.
static inline void recbench_xoshiro_seed(uint64_t seed, uint64_t stream, uint64_t s[4]) {
    uint64_t x = seed + 0x9E3779B97F4A7C15ULL * (stream + 1);
    for (int k = 0; k < 4; k++) s[k] = recbench_splitmix64(&x);
}

/// SeededGenerator.next().
static inline uint64_t recbench_xoshiro_next(uint64_t s[4]) {
    const uint64_t a = s[1] * 5, result = ((a << 7) | (a >> 57)) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t;
    s[3] = (s[3] << 45) | (s[3] >> 19);
    return result;
}

/// `keep` (its bits) where u ≥ threshold, else 0.0, without a branch: a third of the draws
/// fall below, at random, and a branch would mispredict on them.
static inline uint32_t recbench_mask_bits(uint64_t u, uint64_t threshold, uint32_t keep) {
    return keep & (0u - (uint32_t)(u >= threshold));
}

/// The first n entries of chunk `chunk` into to[0..<n]: two 24-bit uniforms per draw, 0 below
/// `threshold`, else `keep` (`to` and `keep` as float bits).
static inline void recbench_mask_chunk(uint32_t *to, long n, uint64_t seed, long chunk, uint64_t threshold, uint32_t keep) {
    uint64_t s[4];
    recbench_xoshiro_seed(seed, (uint64_t)chunk, s);
    for (long i = 0; i < n; i += 2) {
        const uint64_t bits = recbench_xoshiro_next(s);
        to[i] = recbench_mask_bits(bits >> 40, threshold, keep);
        if (i + 1 < n) to[i + 1] = recbench_mask_bits((bits >> 16) & 0xFFFFFF, threshold, keep);
    }
}

#if defined(__x86_64__)
typedef uint64_t recbench_u4 __attribute__((ext_vector_type(4)));

/// One step of four xoshiro256** generators (×5 and ×9 as shifts and adds: the same values
/// modulo 2⁶⁴), each lane's two entries as one 64-bit pair: the first (bits 40…63) in the
/// low half, the second (bits 16…39) in the high half, 0 or `keep`'s bits each.
__attribute__((target("avx2")))
static inline recbench_u4 recbench_mask_step_avx2(recbench_u4 *s, uint64_t threshold, uint32_t keep) {
    const recbench_u4 a = s[1] + (s[1] << 2), rotated = (a << 7) | (a >> 57), bits = rotated + (rotated << 3), t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t;
    s[3] = (s[3] << 45) | (s[3] >> 19);
    // Comparisons give all-ones lanes where kept: masked with keep's bits, no branch.
    const recbench_u4 high = (recbench_u4)((bits >> 40) >= threshold) & keep, low = (recbench_u4)(((bits >> 16) & 0xFFFFFF) >= threshold) & keep;
    return high | (low << 32);
}

/// Chunks first..<first+chunks (1...4; the last may be short of `count`) from `base` (chunk
/// `first`'s first entry), one generator per lane; lanes past `chunks` run but store nothing,
/// so two or three chunks (a 4,096 × 16 layer's mask is two) still share the registers
/// instead of running one by one. Four steps give each lane eight entries: a 4 × 4 transpose
/// of the steps' pairs turns them into one whole-register store per chunk (lane by lane scalar stores, 128 KiB apart, stalled on
/// 4 KiB aliasing); a lane's last partial group of eight is stored entry by entry.
__attribute__((target("avx2")))
static inline void recbench_mask_lanes_avx2(uint32_t *base, long count, uint64_t seed, long first, long chunks, uint64_t threshold, uint32_t keep) {
    recbench_u4 s[4];
    long length[4];
    for (int lane = 0; lane < 4; lane++) {
        uint64_t state[4];
        recbench_xoshiro_seed(seed, (uint64_t)(first + lane), state);
        for (int k = 0; k < 4; k++) s[k][lane] = state[k];
        const long left = lane < chunks ? count - (first + lane) * RECBENCH_MASK_CHUNK : 0;
        length[lane] = left < 0 ? 0 : left > RECBENCH_MASK_CHUNK ? RECBENCH_MASK_CHUNK : left;
    }
    for (long i = 0; i < length[0]; i += 8) {
        const __m256i p0 = (__m256i)recbench_mask_step_avx2(s, threshold, keep), p1 = (__m256i)recbench_mask_step_avx2(s, threshold, keep);
        const __m256i p2 = (__m256i)recbench_mask_step_avx2(s, threshold, keep), p3 = (__m256i)recbench_mask_step_avx2(s, threshold, keep);
        const __m256i t0 = _mm256_unpacklo_epi64(p0, p1), t1 = _mm256_unpackhi_epi64(p0, p1);
        const __m256i t2 = _mm256_unpacklo_epi64(p2, p3), t3 = _mm256_unpackhi_epi64(p2, p3);
        __m256i lanes[4] = {_mm256_permute2x128_si256(t0, t2, 0x20), _mm256_permute2x128_si256(t1, t3, 0x20),
                            _mm256_permute2x128_si256(t0, t2, 0x31), _mm256_permute2x128_si256(t1, t3, 0x31)};
        for (int lane = 0; lane < 4; lane++) {
            uint32_t *to = base + lane * RECBENCH_MASK_CHUNK + i;
            if (i + 8 <= length[lane]) {
                _mm256_storeu_si256((__m256i *)to, lanes[lane]);
            } else if (i < length[lane]) {
                uint32_t entries[8];
                _mm256_storeu_si256((__m256i *)entries, lanes[lane]);
                for (long j = 0; j < length[lane] - i; j++) to[j] = entries[j];
            }
        }
    }
}
#endif

/// Chunks first..<first+chunks of a `count`-entry mask (the last chunk may be short), as
/// float bits: 0 or `keep`.
static inline void recbench_dropout_mask(uint32_t *out, long count, uint64_t seed, long first, long chunks, uint64_t threshold,
                                         uint32_t keep, int avx2) {
    long c = first;
    const long end = first + chunks;
#if defined(__x86_64__)
    for (; avx2 && c < end; c += 4) recbench_mask_lanes_avx2(out + c * RECBENCH_MASK_CHUNK, count, seed, c, end - c < 4 ? end - c : 4, threshold, keep);
#endif
    for (; c < end; c++) {
        const long lo = c * RECBENCH_MASK_CHUNK, hi = lo + RECBENCH_MASK_CHUNK < count ? lo + RECBENCH_MASK_CHUNK : count;
        recbench_mask_chunk(out + lo, hi - lo, seed, c, threshold, keep);
    }
}

/// Chunks first..<first+group (group ≤ 4) of a `count`-entry mask into to[0...]: chunk `first`'s
/// first entry at to[0], whatever chunk it is (recbench_dropout_mask writes at the mask's own offsets).
static inline void recbench_dropout_chunks(uint32_t *to, long count, uint64_t seed, long first, long group, uint64_t threshold, uint32_t keep,
                                           int avx2) {
#if defined(__x86_64__)
    if (avx2) { recbench_mask_lanes_avx2(to, count, seed, first, group, threshold, keep); return; }
#endif
    for (long k = 0; k < group; k++) {
        const long start = (first + k) * RECBENCH_MASK_CHUNK;
        if (start < count)
            recbench_mask_chunk(to + k * RECBENCH_MASK_CHUNK, count - start < RECBENCH_MASK_CHUNK ? count - start : RECBENCH_MASK_CHUNK, seed,
                                first + k, threshold, keep);
    }
}

/// y = x ⊙ the mask's chunks first..<first+chunks, the mask drawn four chunks at a time into
/// `scratch` (4 · RECBENCH_MASK_CHUNK entries) and never stored: a pullback draws it again
/// from the same seed instead of reading a stored copy. Each product is one IEEE
/// multiplication, so both builds give the same bits.
static inline void recbench_dropout_apply(const float *x, float *y, uint32_t *scratch, long count, uint64_t seed, long first, long chunks,
                                          uint64_t threshold, uint32_t keep, int avx2) {
    for (long c = first; c < first + chunks; c += 4) {
        const long group = first + chunks - c < 4 ? first + chunks - c : 4, lo = c * RECBENCH_MASK_CHUNK;
        const long hi = lo + group * RECBENCH_MASK_CHUNK < count ? lo + group * RECBENCH_MASK_CHUNK : count;
        recbench_dropout_chunks(scratch, count, seed, c, group, threshold, keep, avx2);
        const float *mask = (const float *)scratch;
        for (long i = lo; i < hi; i++) y[i] = x[i] * mask[i - lo];
    }
}

#endif
