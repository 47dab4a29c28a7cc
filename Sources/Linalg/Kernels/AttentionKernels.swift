import CBLAS
import Foundation

/// Multi-head scaled dot-product self-attention over B sequences of T steps, as RecBole's
/// `MultiHeadAttention` computes it: per head, softmax(Q Kᵀ / √d_h + M) V, where M adds
/// −10 000 at masked keys (padding, and later steps when causal). Rows are batch-major
/// (row b·T + t); head h reads columns h·d_h ..< (h+1)·d_h. Sequences go to the workers;
/// each runs its small GEMMs with one OpenBLAS thread.
public enum AttentionKernels {
    /// The layout of one attention call.
    public struct Shape: Sendable {
        public let batch: Int, steps: Int, heads: Int, width: Int
        public var headWidth: Int { width / heads }
        /// Attention weights per call (B · heads · T · T).
        public var weightCount: Int { batch * heads * steps * steps }

        public init(batch: Int, steps: Int, heads: Int, width: Int) {
            precondition(heads > 0 && width % heads == 0, "attention: \(width) columns do not split into \(heads) heads")
            self.batch = batch; self.steps = steps; self.heads = heads; self.width = width
        }
    }

    /// RecBole's additive mask value.
    static let masked: Float = -10_000

    /// The output ((B·T) × D) and the attention weights before dropout (kept for the
    /// pullback). `keep` (one factor per weight: 0 or 1/(1 − p)) applies dropout to the weights.
    public static func forward(q: Matrix, k: Matrix, v: Matrix, shape s: Shape, lengths: [Int], causal: Bool, keep: Matrix?,
                               compute: Compute) -> (output: Matrix, weights: Matrix) {
        var outputs = [Matrix(uninitializedRows: s.batch * s.steps, columns: s.width), Matrix(uninitializedRows: s.weightCount, columns: 1)]
        let t = s.steps, dh = s.headWidth, d = s.width, scale = 1 / Float(dh).squareRoot()
        Matrix.withBuffers(reading: [q, k, v, keep ?? Matrix(rows: 1, columns: 1)], writing: &outputs) { buffers in
            OpenBLASThreads.shared.run(threads: 1) {
                compute.forEachChunk(count: s.batch, chunkSize: 1) { range in
                    let (q, k, v, drop, out, weights) = (buffers.read[0], buffers.read[1], buffers.read[2], buffers.read[3],
                                                         buffers.write[0], buffers.write[1])
                    let dropped = UnsafeMutablePointer<Float>.allocate(capacity: max(1, t * t))
                    defer { dropped.deallocate() }
                    for b in range {
                        for h in 0..<s.heads {
                            let offset = b * t * d + h * dh, p = weights + ((b * s.heads + h) * t * t)
                            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Int32(t), Int32(t), Int32(dh), scale,
                                        q + offset, Int32(d), k + offset, Int32(d), 0, p, Int32(t))
                            softmaxRows(p, steps: t, length: lengths[b], causal: causal)
                            var attention = UnsafePointer(p)
                            if keep != nil {
                                let factors = drop + ((b * s.heads + h) * t * t)
                                for i in 0..<(t * t) { dropped[i] = p[i] * factors[i] }
                                attention = UnsafePointer(dropped)
                            }
                            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Int32(t), Int32(dh), Int32(t), 1,
                                        attention, Int32(t), v + offset, Int32(d), 0, out + offset, Int32(d))
                        }
                    }
                }
            }
        }
        return (outputs[0], outputs[1])
    }

    /// Adds the mask to each row of a T × T block of scores and turns the rows into softmax weights.
    static func softmaxRows(_ p: UnsafeMutablePointer<Float>, steps t: Int, length: Int, causal: Bool) {
        for i in 0..<t {
            let row = p + i * t
            var top = -Float.infinity
            for j in 0..<t {
                if j >= length || (causal && j > i) { row[j] += masked }
                top = max(top, row[j])
            }
            var total: Float = 0
            for j in 0..<t { row[j] = Foundation.exp(row[j] - top); total += row[j] }
            let inverse = 1 / total
            for j in 0..<t { row[j] *= inverse }
        }
    }

    /// The gradients of q, k and v given the output's gradient `g`, the forward's weights
    /// and dropout factors.
    public static func backward(_ g: Matrix, q: Matrix, k: Matrix, v: Matrix, weights: Matrix, keep: Matrix?, shape s: Shape,
                                compute: Compute) -> (q: Matrix, k: Matrix, v: Matrix) {
        let rows = s.batch * s.steps
        var grads = [Matrix(uninitializedRows: rows, columns: s.width), Matrix(uninitializedRows: rows, columns: s.width),
                     Matrix(uninitializedRows: rows, columns: s.width)]
        let t = s.steps, dh = s.headWidth, d = s.width, scale = 1 / Float(dh).squareRoot()
        Matrix.withBuffers(reading: [g, q, k, v, weights, keep ?? Matrix(rows: 1, columns: 1)], writing: &grads) { buffers in
            OpenBLASThreads.shared.run(threads: 1) {
                compute.forEachChunk(count: s.batch, chunkSize: 1) { range in
                    let r = buffers.read, w = buffers.write
                    var attention = [Float](repeating: 0, count: t * t), dWeights = [Float](repeating: 0, count: t * t)
                    for b in range {
                        for h in 0..<s.heads {
                            let offset = b * t * d + h * dh, p = r[4] + ((b * s.heads + h) * t * t)
                            let factors: UnsafePointer<Float>? = keep == nil ? nil : r[5] + ((b * s.heads + h) * t * t)
                            for i in 0..<(t * t) { attention[i] = p[i] * (factors?[i] ?? 1) }
                            // dA = g Vᵀ, dV = Aᵀ g (A: the weights after dropout).
                            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Int32(t), Int32(t), Int32(dh), 1,
                                        r[0] + offset, Int32(d), r[3] + offset, Int32(d), 0, &dWeights, Int32(t))
                            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Int32(t), Int32(dh), Int32(t), 1,
                                        attention, Int32(t), r[0] + offset, Int32(d), 0, w[2] + offset, Int32(d))
                            // Through dropout and softmax: dS = P ⊙ (dP − Σ_j dP ⊙ P).
                            for i in 0..<t {
                                var dot: Float = 0
                                for j in 0..<t {
                                    let index = i * t + j
                                    dWeights[index] *= factors?[index] ?? 1
                                    dot += dWeights[index] * p[index]
                                }
                                for j in 0..<t { dWeights[i * t + j] = p[i * t + j] * (dWeights[i * t + j] - dot) }
                            }
                            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Int32(t), Int32(dh), Int32(t), scale,
                                        dWeights, Int32(t), r[2] + offset, Int32(d), 0, w[0] + offset, Int32(d))
                            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Int32(t), Int32(dh), Int32(t), scale,
                                        dWeights, Int32(t), r[1] + offset, Int32(d), 0, w[1] + offset, Int32(d))
                        }
                    }
                }
            }
        }
        return (grads[0], grads[1], grads[2])
    }
}
