import CLanes

/// An attention network's scores in one pass per row: s_r = hᵀ ReLU(x_r W + b), x rows × d,
/// W d × a, b 1 × a (or none), h a × 1 (AFM's attention over field pairs). The hidden layer
/// (rows × a) is never stored: a GEMM of inner width d ≈ 10 is bound by writing and re-reading
/// it, while here each row's a values live in registers. The pullback recomputes them. AVX2 +
/// FMA only (`isAvailable`); rows go to the workers in fixed chunks whose parameter gradients
/// are added in chunk order, so results do not depend on the worker count.
public enum ScoreMLPKernels {
    static let chunk = 256   // rows: a chunk's dz (chunk × a floats, 32 KB for AFM) stays near the core for dW's pass

    /// Whether this CPU runs the kernels (callers compose the layers otherwise).
    public static func isAvailable(_ kernels: KernelSet = .current) -> Bool { kernels == .avx2 }

    /// W, Wᵀ, b and h with a padded to a multiple of 8 (and d, in Wᵀ) by zeros, in one buffer.
    struct Padded {
        let d: Int, a: Int, ap: Int, dp: Int, values: [Float]

        init(weight: Matrix, bias: Matrix?, output: Matrix) {
            d = weight.rows
            a = weight.columns
            ap = (a + 7) / 8 * 8
            dp = (d + 7) / 8 * 8
            precondition(d > 0 && a > 0 && output.values.count == a && (bias?.values.count ?? a) == a, "scoreMLP: W is d × a, b 1 × a, h a × 1")
            var v = [Float](repeating: 0, count: d * ap + ap * dp + 2 * ap)
            for k in 0..<d {
                for c in 0..<a { v[k * ap + c] = weight.values[k * a + c]; v[d * ap + c * dp + k] = weight.values[k * a + c] }
            }
            for c in 0..<a { v[d * ap + ap * dp + c] = bias?.values[c] ?? 0; v[d * ap + ap * dp + ap + c] = output.values[c] }
            values = v
        }

        /// Offsets of W, Wᵀ, b and h in `values`.
        var offsets: (w: Int, wt: Int, b: Int, h: Int) { (0, d * ap, d * ap + ap * dp, d * ap + ap * dp + ap) }

        var matrix: Matrix { Matrix(rows: 1, columns: values.count, values: values) }
    }

    /// s (rows × 1).
    public static func forward(_ x: Matrix, weight: Matrix, bias: Matrix?, output: Matrix, compute: Compute) -> Matrix {
        precondition(isAvailable(), "ScoreMLPKernels: needs AVX2 + FMA")
        precondition(weight.rows == x.columns, "scoreMLP: x is rows × d, W d × a")
        let p = Padded(weight: weight, bias: bias, output: output), d = x.columns
        var outputs = [Matrix(uninitializedRows: x.rows, columns: 1)]
        guard x.rows > 0 else { return outputs[0] }
        let o = p.offsets
        Matrix.withBuffers(reading: [x, p.matrix], writing: &outputs) { buffers in
            compute.forEachChunk(count: x.rows, chunkSize: chunk) { range in   // disjoint output rows
                let q = buffers.read[1]
                recbench_score_mlp_forward_avx2(buffers.read[0] + range.lowerBound * d, d, q + o.w, q + o.b, q + o.h, p.ap, range.count,
                                                buffers.write[0] + range.lowerBound)
            }
        }
        return outputs[0]
    }

    /// The gradients of x, W, b and h given the scores' gradient `g` (rows × 1).
    public static func backward(_ g: Matrix, _ x: Matrix, weight: Matrix, bias: Matrix?, output: Matrix,
                                compute: Compute) -> (x: Matrix, weight: Matrix, bias: Matrix, output: Matrix) {
        let p = Padded(weight: weight, bias: bias, output: output), d = x.columns, ap = p.ap
        precondition(g.values.count == x.rows, "scoreMLP: one gradient per row")
        var outputs = [Matrix(uninitializedRows: x.rows, columns: d)]
        guard x.rows > 0 else {
            return (outputs[0], Matrix(rows: d, columns: p.a), Matrix(rows: 1, columns: p.a), Matrix(rows: p.a, columns: 1))
        }
        let o = p.offsets, dwCount = d * ap
        let sums: [[Float]] = Matrix.withBuffers(reading: [x, p.matrix, g], writing: &outputs) { buffers in
            compute.mapChunks(count: x.rows, chunkSize: chunk) { range -> [Float] in
                var partial = [Float](repeating: 0, count: dwCount + 2 * ap)   // dW | db | dh
                var dz = [Float](repeating: 0, count: range.count * ap)
                partial.withUnsafeMutableBufferPointer { s in
                    dz.withUnsafeMutableBufferPointer { dzp in
                        let q = buffers.read[1], dw = s.baseAddress!, db = dw + dwCount
                        recbench_score_mlp_backward_avx2(buffers.read[0] + range.lowerBound * d, d, q + o.w, q + o.wt, q + o.b, q + o.h, ap,
                                                         (p.a + 3) / 4 * 4, range.count, buffers.read[2] + range.lowerBound,
                                                         buffers.write[0] + range.lowerBound * d, dw, db, db + ap, dzp.baseAddress!)
                    }
                }
                return partial
            }
        }
        var total = [Float](repeating: 0, count: dwCount + 2 * ap)
        for s in sums { for j in total.indices { total[j] += s[j] } }   // chunk order: independent of the worker count
        let a = p.a
        let dw = Matrix(rows: d, columns: a, values: (0..<d).flatMap { k in total[(k * ap)..<(k * ap + a)] })
        let db = Matrix(rows: 1, columns: a, values: Array(total[dwCount..<(dwCount + a)]))
        let dh = Matrix(rows: a, columns: 1, values: Array(total[(dwCount + ap)..<(dwCount + ap + a)]))
        return (outputs[0], dw, db, dh)
    }
}
