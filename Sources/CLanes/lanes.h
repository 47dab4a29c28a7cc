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

/// max(x, 0) per lane, as one vector instruction (Swift's generic `pointwiseMax` compares
/// lane by lane).
static inline __attribute__((always_inline)) recbench_lanes8 recbench_relu8(recbench_lanes8 x) {
    return __builtin_elementwise_max(x, (recbench_lanes8)0.0f);
}

typedef int recbench_mask8 __attribute__((ext_vector_type(8)));

/// g where y > 0, else 0 (ReLU's pullback given its output y): a compare and a bitwise and.
static inline __attribute__((always_inline)) recbench_lanes8 recbench_relu_gradient8(recbench_lanes8 g, recbench_lanes8 y) {
    recbench_mask8 keep = y > 0.0f;   // all ones or all zeros per lane
    return (recbench_lanes8)((recbench_mask8)g & keep);
}

/// A spin-wait hint (x86's `pause`: the core lets its sibling run and saves power while polling).
static inline __attribute__((always_inline)) void recbench_spin_pause(void) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

#endif
