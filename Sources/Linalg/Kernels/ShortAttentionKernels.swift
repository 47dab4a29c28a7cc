import CLanes

/// Attention over sequences of at most eight steps with 8-wide heads (AutoInt's seven fields and
/// two heads), a sequence a call to one C kernel that holds a row of scores in one register
/// (CLanes' attention.h): the general loops spent most of their time on partial rows and
/// per-product overhead at that size. The same weights layout as the general path, so either
/// pullback reads either forward's weights. AVX2 + FMA only; sums in another order than the
/// general path, so the two agree to rounding.
extension AttentionKernels {
    /// Sequences a worker takes at a time (a sequence is ~1 µs of work).
    static let shortChunk = 64

    /// Whether this call runs here: every head 8 wide, every sequence ≤ 8 steps, every row a
    /// query, no causal mask (the pullback reads only the weights, so it passes `causal: false`).
    static func shortHeads(_ s: Shape, causal: Bool, kernels: KernelSet) -> Bool {
        kernels == .avx2 && s.headWidth == 8 && s.queries == nil && !causal && (s.lengths.max() ?? 0) <= 8
    }

    static func shortForward(_ sources: [Matrix], columns: [Int], shape s: Shape, keep: Matrix?, into outputs: inout [Matrix], compute: Compute) {
        let ld = sources[0].columns, d = s.width, scale = 1 / Float(s.headWidth).squareRoot()
        Matrix.withBuffers(reading: sources + [keep ?? Matrix(rows: 1, columns: 1)], writing: &outputs) { p in
            let (out, weights) = (UnsafeShared(p.write[0]), UnsafeShared(p.write[1]))   // sequences write disjoint rows and weights
            compute.forEachChunk(count: s.lengths.count, chunkSize: shortChunk) { range in
                for b in range where s.lengths[b] > 0 {
                    let row = s.offsets[b] * ld, at = s.weightOffsets[b]
                    recbench_short_attention_avx2(s.lengths[b], s.heads, scale, p.read[0] + columns[0] + row, p.read[1] + columns[1] + row,
                                                  p.read[2] + columns[2] + row, ld, keep == nil ? nil : p.read[3] + at, weights.value + at,
                                                  out.value + s.offsets[b] * d, d)
                }
            }
        }
    }

    static func shortBackward(_ g: Matrix, _ sources: [Matrix], columns: [Int], weights: Matrix, keep: Matrix?, shape s: Shape,
                              into grads: inout [Matrix], compute: Compute) {
        let ld = sources[0].columns, d = s.width, scale = 1 / Float(s.headWidth).squareRoot(), fused = grads.count == 1
        Matrix.withBuffers(reading: [g] + sources + [weights, keep ?? Matrix(rows: 1, columns: 1)], writing: &grads) { p in
            let into = UnsafeShared((0..<3).map { fused ? p.write[0] + columns[$0] : p.write[$0] })   // sequences write disjoint rows
            compute.forEachChunk(count: s.lengths.count, chunkSize: shortChunk) { range in
                for b in range where s.lengths[b] > 0 {
                    let row = s.offsets[b] * ld, at = s.weightOffsets[b]
                    recbench_short_attention_backward_avx2(s.lengths[b], s.heads, scale, p.read[0] + s.offsets[b] * d, d, p.read[1] + columns[0] + row,
                                                           p.read[2] + columns[1] + row, p.read[3] + columns[2] + row, ld,
                                                           keep == nil ? nil : p.read[5] + at, p.read[4] + at, into.value[0] + row, into.value[1] + row,
                                                           into.value[2] + row, ld)
                }
            }
        }
    }
}
