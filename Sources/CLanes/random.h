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

/// Chunks first..<first+chunks (1...4; the last may be short of `count`), one generator per
/// lane; lanes past `chunks` run but store nothing, so two or three chunks (a 4,096 × 16 layer's
/// mask is two) still share the registers instead of running one by one. Four steps give each
/// lane eight entries: a 4 × 4 transpose of the steps' pairs turns them into one whole register
/// per chunk (lane by lane scalar stores, 128 KiB apart, stalled on 4 KiB aliasing); a lane's
/// last partial group of eight is handled entry by entry. Where the eight go: with `x` null, the
/// factors to `base` (chunk `first`'s first entry); otherwise y = x ⊙ factors as they are drawn
/// (no mask written and read back) and, with `kept` non-null, one byte per eight entries, bit j
/// set where entry j is kept. x, y and kept point at chunk `first`'s first entry (its byte).
__attribute__((target("avx2")))
static inline void recbench_mask_lanes_avx2(uint32_t *base, const float *x, float *y, uint8_t *kept, long count, uint64_t seed, long first,
                                            long chunks, uint64_t threshold, uint32_t keep) {
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
            const long at = lane * RECBENCH_MASK_CHUNK + i, n = length[lane] - i;
            if (n >= 8 && !x) {
                _mm256_storeu_si256((__m256i *)(base + at), lanes[lane]);
            } else if (n >= 8) {
                _mm256_storeu_ps(y + at, _mm256_mul_ps(_mm256_loadu_ps(x + at), _mm256_castsi256_ps(lanes[lane])));
                if (kept) kept[at >> 3] = (uint8_t)~_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(lanes[lane], _mm256_setzero_si256())));
            } else if (n > 0) {
                uint32_t entries[8];
                uint8_t bits = 0;
                _mm256_storeu_si256((__m256i *)entries, lanes[lane]);
                for (long j = 0; j < n; j++) {
                    if (!x) { base[at + j] = entries[j]; continue; }
                    float factor;
                    __builtin_memcpy(&factor, &entries[j], 4);
                    y[at + j] = x[at + j] * factor;
                    bits |= (uint8_t)((entries[j] != 0) << j);
                }
                if (x && kept) kept[at >> 3] = bits;
            }
        }
    }
}

/// The whole groups of eight of recbench_dropout_from_bits; returns where it stopped.
__attribute__((target("avx2")))
static inline long recbench_dropout_from_bits_avx2(const float *g, float *y, const uint8_t *kept, long lo, long hi, uint32_t keep) {
    const __m256i select = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128), factor = _mm256_set1_epi32((int)keep);
    long i = lo;
    for (; i + 8 <= hi; i += 8) {
        const __m256i bits = _mm256_and_si256(_mm256_set1_epi32(kept[i / 8]), select);
        const __m256 f = _mm256_castsi256_ps(_mm256_and_si256(_mm256_cmpeq_epi32(bits, select), factor));
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(g + i), f));
    }
    return i;
}
#endif

/// Chunks first..<first+chunks of a `count`-entry mask (the last chunk may be short), as
/// float bits: 0 or `keep`.
static inline void recbench_dropout_mask(uint32_t *out, long count, uint64_t seed, long first, long chunks, uint64_t threshold,
                                         uint32_t keep, int avx2) {
    long c = first;
    const long end = first + chunks;
#if defined(__x86_64__)
    for (; avx2 && c < end; c += 4) recbench_mask_lanes_avx2(out + c * RECBENCH_MASK_CHUNK, 0, 0, 0, count, seed, c, end - c < 4 ? end - c : 4, threshold, keep);
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
    if (avx2) { recbench_mask_lanes_avx2(to, 0, 0, 0, count, seed, first, group, threshold, keep); return; }
#endif
    for (long k = 0; k < group; k++) {
        const long start = (first + k) * RECBENCH_MASK_CHUNK;
        if (start < count)
            recbench_mask_chunk(to + k * RECBENCH_MASK_CHUNK, count - start < RECBENCH_MASK_CHUNK ? count - start : RECBENCH_MASK_CHUNK, seed,
                                first + k, threshold, keep);
    }
}

/// y = x ⊙ the mask's chunks first..<first+chunks, never stored: a pullback either draws it
/// again from the same seed or reads `kept` (non-null: bit j of byte e/8 set where entry e, with
/// e % 8 = j, is kept; chunks are whole bytes, so workers write disjoint bytes). The AVX2 build
/// multiplies as it draws; the baseline draws four chunks at a time into `scratch` (4 ·
/// RECBENCH_MASK_CHUNK entries). Each product is one IEEE multiplication, so both builds give the
/// same bits.
static inline void recbench_dropout_apply(const float *x, float *y, uint8_t *kept, uint32_t *scratch, long count, uint64_t seed, long first,
                                          long chunks, uint64_t threshold, uint32_t keep, int avx2) {
    for (long c = first; c < first + chunks; c += 4) {
        const long group = first + chunks - c < 4 ? first + chunks - c : 4, lo = c * RECBENCH_MASK_CHUNK;
        const long hi = lo + group * RECBENCH_MASK_CHUNK < count ? lo + group * RECBENCH_MASK_CHUNK : count;
#if defined(__x86_64__)
        if (avx2) {
            recbench_mask_lanes_avx2(0, x + lo, y + lo, kept ? kept + lo / 8 : 0, count, seed, c, group, threshold, keep);
            continue;
        }
#endif
        recbench_dropout_chunks(scratch, count, seed, c, group, threshold, keep, 0);
        const float *mask = (const float *)scratch;
        for (long i = lo; i < hi; i++) y[i] = x[i] * mask[i - lo];
        if (!kept) continue;
        for (long i = lo; i < hi; i++) {
            if (i % 8 == 0) kept[i / 8] = 0;
            kept[i / 8] |= (uint8_t)((mask[i - lo] != 0) << (i % 8));
        }
    }
}

/// y[lo..<hi] = g ⊙ the factors `kept` holds (0 where a bit is clear, else `keep`'s float): the
/// products `recbench_dropout_apply` forms with the mask it drew. lo is a multiple of 8.
static inline void recbench_dropout_from_bits(const float *g, float *y, const uint8_t *kept, long lo, long hi, uint32_t keep, int avx2) {
    long i = lo;
#if defined(__x86_64__)
    if (avx2) i = recbench_dropout_from_bits_avx2(g, y, kept, lo, hi, keep);
#endif
    for (; i < hi; i++) {
        const uint32_t bits = (kept[i / 8] >> (i % 8)) & 1 ? keep : 0;
        float factor;
        __builtin_memcpy(&factor, &bits, 4);
        y[i] = g[i] * factor;
    }
}

#endif
