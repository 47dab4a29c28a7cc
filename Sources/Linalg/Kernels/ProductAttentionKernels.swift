import CLanes

/// NAIS's attention network (`algorithm: prod`) for every target against one user's history, in
/// the AVX2 build: a_j = w · relu((t ⊙ p_j) W + b) and s_j = t · p_j, W packed once per pass and
/// each target's n × hidden logits made and reduced in registers. Formed as a GEMM they were
/// written and read back, n × hidden floats per target (50 × 64 for an ml-100k user: the
/// scoring pass's memory traffic, not its FLOPs, set its time).
public struct ProductAttention: Sendable {
    let panels: Matrix, bias: [Float], output: [Float], width: Int
    public let inner: Int

    /// W (d × hidden), b and w (hidden each); nil outside the AVX2 build or past d = 512.
    public init?(weight: Matrix, bias: [Float], output: [Float], kernels: KernelSet = .current) {
        let hidden = weight.columns, padded = (hidden + 15) / 16 * 16
        guard kernels == .avx2, weight.rows > 0, weight.rows <= SmallProducts.maxInner, hidden > 0,
              bias.count == hidden, output.count == hidden else { return nil }
        panels = SmallProducts.pack(weight, transposed: false, k: weight.rows, n: hidden)
        // Padded columns: relu(0 + 0) · 0 adds nothing.
        self.bias = bias + [Float](repeating: 0, count: padded - hidden)
        self.output = output + [Float](repeating: 0, count: padded - hidden)
        inner = weight.rows; width = padded / 16
    }

    /// For each row r of `targets` in `rows` (d wide) against the n rows of `history` (n × d):
    /// `body(r, a, s)` with a_j and s_j, j < n (valid during the call only).
    public func forEachTarget(_ rows: Range<Int>, of targets: Matrix, history: Matrix,
                              _ body: (Int, UnsafePointer<Float>, UnsafePointer<Float>) -> Void) {
        precondition(targets.columns == inner && history.columns == inner, "ProductAttention: rows are not \(inner) wide")
        let n = history.rows
        withUnsafeTemporaryAllocation(of: Float.self, capacity: max(1, 2 * n)) { scratch in
            let (a, s) = (scratch.baseAddress!, scratch.baseAddress! + n)
            Matrix.withBuffers(reading: [targets, history, panels]) { m in
                bias.withUnsafeBufferPointer { b in
                    output.withUnsafeBufferPointer { w in
                        for r in rows {
                            recbench_nais_logits_avx2(n, inner, m.read[0] + r * inner, m.read[1], inner, m.read[2], width, b.baseAddress!, w.baseAddress!, a, s)
                            body(r, a, s)
                        }
                    }
                }
            }
        }
    }
}
