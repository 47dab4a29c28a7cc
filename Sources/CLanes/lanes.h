// Vector operations that Swift's SIMD types compute one lane at a time. Header-only: the
// functions are inlined into the Swift code that calls them.
#ifndef RECBENCH_LANES_H
#define RECBENCH_LANES_H

typedef float recbench_lanes8 __attribute__((ext_vector_type(8)));

/// The square root of each lane, as one vector instruction per register (SIMD8's
/// `squareRoot()` is eight scalar square roots).
static inline __attribute__((always_inline)) recbench_lanes8 recbench_sqrt8(recbench_lanes8 x) {
    return __builtin_elementwise_sqrt(x);
}

#endif
