import CLanes

/// A GRU step with its recurrent product and its gates in one pass over the step's rows (the
/// AVX2 build): per chunk of rows, h_{t−1} W_h (+ b_h) is made by the dense layers' register
/// kernel into a scratch block the gates then read while it is in L2, where the product
/// went to memory for a whole step and came back (3H floats a row each way) and took a second
/// parallel region. The pullback likewise adds each chunk's d(h W_h) W_hᵀ to the carried
/// gradient right after the chunk's gates wrote it. Each row's sums are the kernel's, in the
/// same order for any chunking or worker count.
extension GRUKernels {
    /// Whether the fused steps run: the AVX2 build and a 3H the register kernel takes as its
    /// output width (forward) and inner dimension (pullback).
    public static func fuses(hidden: Int, kernels: KernelSet = .current) -> Bool {
        kernels == .avx2 && hidden > 0 && 3 * hidden <= SmallProducts.maxColumns && 3 * hidden <= SmallProducts.maxInner
    }

    /// W_h (H × 3H) packed for the forward's products, and Wᵀ_h for the pullback's.
    public static func packedHidden(_ wHidden: Matrix) -> (forward: Matrix, backward: Matrix) {
        let h = wHidden.rows, h3 = wHidden.columns
        return (SmallProducts.pack(wHidden, transposed: false, k: h, n: h3), SmallProducts.pack(wHidden, transposed: true, k: h3, n: h))
    }

    /// `forward(_:product:state:compute:)` with the step's product made here from W_h packed
    /// (`packedHidden(_:).forward`) and h_{t−1} (state[2]'s previous step rows; zero at step 0),
    /// plus `hiddenBias` (1 × 3H) when given.
    public static func fusedForward(_ step: Step, packed: Matrix, hiddenBias: Matrix?, state: inout [Matrix], compute: Compute) {
        let hidden = step.hidden, h3 = 3 * hidden
        precondition(hiddenBias.map { $0.rows == 1 && $0.columns == h3 } ?? true, "gru: b_h is not 1 × \(h3)")
        Matrix.withBuffers(reading: [packed, hiddenBias ?? packed], writing: &state) { p in
            compute.forEachChunk(count: step.count, chunkSize: max(1, 8192 / hidden)) { range in
                withUnsafeTemporaryAllocation(of: Float.self, capacity: range.count * h3) { scratch in
                    let products = scratch.baseAddress!, bias = hiddenBias == nil ? nil : p.read[1]
                    if let previous = step.previous {
                        recbench_gemm_rows_avx2(range.count, h3, hidden, p.write[2] + (previous + range.lowerBound) * hidden, hidden, p.read[0],
                                                products, h3, 0, bias)
                    } else {
                        for r in 0..<range.count { for j in 0..<h3 { products[r * h3 + j] = bias?[j] ?? 0 } }
                    }
                    for i in range {
                        let row = step.first + i, before = step.previous.map { p.write[2] + ($0 + i) * hidden }
                        recbench_gru_forward_avx2(p.write[0] + row * h3, products + (i - range.lowerBound) * h3, before,
                                                  p.write[1] + row * hidden, p.write[2] + row * hidden, hidden)
                    }
                }
            }
        }
    }

    /// `backward(_:reads:buffers:compute:)` followed, chunk by chunk, by the carried gradient's
    /// d(h W_h) · Wᵀ_h (`packedHidden(_:).backward`), which the caller added as a whole step; not
    /// at step 0, whose carry (dL/dh₀, h₀ = 0 a constant) nothing reads.
    public static func fusedBackward(_ step: Step, packedTransposed: Matrix, reads: [Matrix], buffers: inout [Matrix], compute: Compute) {
        let hidden = step.hidden, h3 = 3 * hidden
        Matrix.withBuffers(reading: reads + [packedTransposed], writing: &buffers) { p in
            compute.forEachChunk(count: step.count, chunkSize: max(1, 8192 / hidden)) { range in
                for i in range {
                    let row = step.first + i, before = step.previous.map { p.read[2] + ($0 + i) * hidden }
                    recbench_gru_backward_avx2(p.read[0] + row * hidden, p.read[1] + row * hidden, before, p.write[0] + row * h3,
                                               p.write[1] + row * h3, p.write[2] + i * hidden, hidden)
                }
                guard step.previous != nil else { return }
                recbench_gemm_rows_avx2(range.count, hidden, h3, p.write[1] + (step.first + range.lowerBound) * h3, h3, p.read[3],
                                        p.write[2] + range.lowerBound * hidden, hidden, 1, nil)
            }
        }
    }
}
