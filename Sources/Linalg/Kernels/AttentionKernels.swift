import CBLAS
import Foundation

/// Multi-head scaled dot-product self-attention over packed sequences, as RecBole's
/// `MultiHeadAttention` computes it on their real positions: per head,
/// softmax(Q Kᵀ / √d_h + M) V, where M adds −10 000 at later steps when causal. Sequence s
/// holds rows `offsets[s] ..< offsets[s] + lengths[s]` (no padding rows: RecBole masks its
/// padded keys, so its outputs at real positions are these); head h reads columns
/// h·d_h ..< (h+1)·d_h. Sequences go to the workers; each runs its small GEMMs with one
/// OpenBLAS thread.
public enum AttentionKernels {
    /// The layout of one attention call.
    public struct Shape: Sendable {
        public let heads: Int, width: Int
        public let lengths: [Int]
        /// First row of each sequence, and first attention weight of each (heads · length² each).
        public let offsets: [Int], weightOffsets: [Int]
        public var headWidth: Int { width / heads }
        /// Rows in all (Σ lengths).
        public var rows: Int { offsets.last! }
        /// Attention weights per call (Σ heads · length²).
        public var weightCount: Int { weightOffsets.last! }

        public init(lengths: [Int], heads: Int, width: Int) {
            precondition(heads > 0 && width % heads == 0, "attention: \(width) columns do not split into \(heads) heads")
            self.heads = heads; self.width = width; self.lengths = lengths
            var rows = [0], weights = [0]
            for n in lengths { rows.append(rows.last! + n); weights.append(weights.last! + heads * n * n) }
            offsets = rows; weightOffsets = weights
        }
    }

    /// RecBole's additive mask value.
    static let masked: Float = -10_000

    /// The output (rows × D) and the attention weights before dropout (kept for the
    /// pullback). `keep` (one factor per weight: 0 or 1/(1 − p)) applies dropout to the weights.
    public static func forward(q: Matrix, k: Matrix, v: Matrix, shape s: Shape, causal: Bool, keep: Matrix?,
                               compute: Compute) -> (output: Matrix, weights: Matrix) {
        precondition(q.rows == s.rows, "attention: \(q.rows) rows for sequences of \(s.rows)")
        var outputs = [Matrix(uninitializedRows: s.rows, columns: s.width), Matrix(uninitializedRows: max(1, s.weightCount), columns: 1)]
        let dh = s.headWidth, d = s.width, scale = 1 / Float(dh).squareRoot()
        let longest = s.lengths.max() ?? 0
        Matrix.withBuffers(reading: [q, k, v, keep ?? Matrix(rows: 1, columns: 1)], writing: &outputs) { buffers in
            OpenBLASThreads.shared.run(threads: 1) {
                compute.forEachChunk(count: s.lengths.count, chunkSize: 4) { range in
                    let (q, k, v, drop, out, weights) = (buffers.read[0], buffers.read[1], buffers.read[2], buffers.read[3],
                                                         buffers.write[0], buffers.write[1])
                    let dropped = UnsafeMutablePointer<Float>.allocate(capacity: max(1, longest * longest))
                    defer { dropped.deallocate() }
                    for b in range where s.lengths[b] > 0 {
                        let t = s.lengths[b]
                        for h in 0..<s.heads {
                            let offset = s.offsets[b] * d + h * dh, at = s.weightOffsets[b] + h * t * t, p = weights + at
                            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Int32(t), Int32(t), Int32(dh), scale,
                                        q + offset, Int32(d), k + offset, Int32(d), 0, p, Int32(t))
                            softmaxRows(p, steps: t, causal: causal)
                            var attention = UnsafePointer(p)
                            if keep != nil {
                                for i in 0..<(t * t) { dropped[i] = p[i] * drop[at + i] }
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

    /// Adds the causal mask to each row of a T × T block of scores and turns the rows into
    /// softmax weights.
    static func softmaxRows(_ p: UnsafeMutablePointer<Float>, steps t: Int, causal: Bool) {
        for i in 0..<t {
            let row = p + i * t
            var top = -Float.infinity
            for j in 0..<t {
                if causal && j > i { row[j] += masked }
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
        var grads = [Matrix(uninitializedRows: s.rows, columns: s.width), Matrix(uninitializedRows: s.rows, columns: s.width),
                     Matrix(uninitializedRows: s.rows, columns: s.width)]
        let dh = s.headWidth, d = s.width, scale = 1 / Float(dh).squareRoot()
        let longest = s.lengths.max() ?? 0
        Matrix.withBuffers(reading: [g, q, k, v, weights, keep ?? Matrix(rows: 1, columns: 1)], writing: &grads) { buffers in
            OpenBLASThreads.shared.run(threads: 1) {
                compute.forEachChunk(count: s.lengths.count, chunkSize: 4) { range in
                    let r = buffers.read, w = buffers.write
                    let scratch = UnsafeMutablePointer<Float>.allocate(capacity: max(1, 2 * longest * longest))
                    defer { scratch.deallocate() }
                    for b in range where s.lengths[b] > 0 {
                        let t = s.lengths[b]
                        for h in 0..<s.heads {
                            let offset = s.offsets[b] * d + h * dh, at = s.weightOffsets[b] + h * t * t
                            backwardHead(t: t, dh: dh, d: d, scale: scale, g: r[0] + offset, q: r[1] + offset, k: r[2] + offset,
                                         v: r[3] + offset, p: r[4] + at, factors: keep == nil ? nil : r[5] + at,
                                         dq: w[0] + offset, dk: w[1] + offset, dv: w[2] + offset, scratch: scratch)
                        }
                    }
                }
            }
        }
        return (grads[0], grads[1], grads[2])
    }

    /// One head of one sequence: dA = g Vᵀ and dV = Aᵀ g (A: the weights after dropout);
    /// through dropout and softmax dS = P ⊙ (dP − Σ_j dP ⊙ P); dQ = dS K / √d_h, dK = dSᵀ Q / √d_h.
    static func backwardHead(t: Int, dh: Int, d: Int, scale: Float, g: UnsafePointer<Float>, q: UnsafePointer<Float>,
                             k: UnsafePointer<Float>, v: UnsafePointer<Float>, p: UnsafePointer<Float>, factors: UnsafePointer<Float>?,
                             dq: UnsafeMutablePointer<Float>, dk: UnsafeMutablePointer<Float>, dv: UnsafeMutablePointer<Float>,
                             scratch: UnsafeMutablePointer<Float>) {
        let attention = scratch, dWeights = scratch + t * t
        for i in 0..<(t * t) { attention[i] = p[i] * (factors?[i] ?? 1) }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Int32(t), Int32(t), Int32(dh), 1, g, Int32(d), v, Int32(d), 0, dWeights, Int32(t))
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Int32(t), Int32(dh), Int32(t), 1, attention, Int32(t), g, Int32(d), 0, dv, Int32(d))
        for i in 0..<t {
            var dot: Float = 0
            for j in 0..<t {
                let index = i * t + j
                dWeights[index] *= factors?[index] ?? 1
                dot += dWeights[index] * p[index]
            }
            for j in 0..<t { dWeights[i * t + j] = p[i * t + j] * (dWeights[i * t + j] - dot) }
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Int32(t), Int32(dh), Int32(t), scale, dWeights, Int32(t), k, Int32(d), 0, dq, Int32(d))
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Int32(t), Int32(dh), Int32(t), scale, dWeights, Int32(t), q, Int32(d), 0, dk, Int32(d))
    }
}
