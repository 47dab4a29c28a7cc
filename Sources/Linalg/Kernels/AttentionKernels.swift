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
        /// First row of each sequence, and first attention weight of each (heads · queries · length each).
        public let offsets: [Int], weightOffsets: [Int]
        /// The rows whose outputs are computed (ascending packed rows), nil for every row; and each
        /// sequence's first output row (its queries are outputs queryOffsets[b] ..< queryOffsets[b + 1]).
        public let queries: [Int32]?, queryOffsets: [Int]
        public var headWidth: Int { width / heads }
        /// Rows in all (Σ lengths).
        public var rows: Int { offsets.last! }
        /// Output rows (the queries).
        public var outputRows: Int { queryOffsets.last! }
        /// Attention weights per call (Σ heads · queries · length).
        public var weightCount: Int { weightOffsets.last! }

        public init(lengths: [Int], heads: Int, width: Int, queries: [Int32]? = nil) {
            precondition(heads > 0 && width % heads == 0, "attention: \(width) columns do not split into \(heads) heads")
            self.heads = heads; self.width = width; self.lengths = lengths; self.queries = queries
            var rows = [0], weights = [0], firstQuery = [0], next = 0
            for n in lengths {
                rows.append(rows.last! + n)
                if let queries {
                    while next < queries.count && Int(queries[next]) < rows.last! { next += 1 }
                    firstQuery.append(next)
                } else { firstQuery.append(rows.last!) }
                weights.append(weights.last! + heads * (firstQuery.last! - firstQuery[firstQuery.count - 2]) * n)
            }
            precondition(queries.map { q in zip(q, q.dropFirst()).allSatisfy { $0 < $1 } && next == q.count && (q.first ?? 0) >= 0 } ?? true,
                         "attention: query rows must be ascending rows of the sequences")
            offsets = rows; weightOffsets = weights; queryOffsets = firstQuery
        }

        /// Sequence b's query count, and the position of its k-th query within the sequence.
        func queryCount(_ b: Int) -> Int { queryOffsets[b + 1] - queryOffsets[b] }
        func position(_ b: Int, _ k: Int) -> Int { queries.map { Int($0[queryOffsets[b] + k]) - offsets[b] } ?? k }
    }

    /// RecBole's additive mask value.
    static let masked: Float = -10_000

    /// The output (a row per query, every row without `queries`, × D) and the attention weights
    /// before dropout (kept for the pullback). `keep` (one factor per weight: 0 or 1/(1 − p), the
    /// shape's `weightCount` of them) applies dropout to the weights.
    public static func forward(q: Matrix, k: Matrix, v: Matrix, shape s: Shape, causal: Bool, keep: Matrix?,
                               compute: Compute, kernels: KernelSet = .current) -> (output: Matrix, weights: Matrix) {
        precondition(q.rows == s.rows, "attention: \(q.rows) rows for sequences of \(s.rows)")
        return forward([q, k, v], columns: [0, 0, 0], shape: s, causal: causal, keep: keep, compute: compute, kernels: kernels)
    }

    /// As above with Q, K and V side by side in one rows × 3D matrix (one input GEMM for all three).
    public static func forward(qkv: Matrix, shape s: Shape, causal: Bool, keep: Matrix?, compute: Compute,
                               kernels: KernelSet = .current) -> (output: Matrix, weights: Matrix) {
        precondition(qkv.rows == s.rows && qkv.columns == 3 * s.width, "attention: a \(qkv.rows) × \(qkv.columns) QKV for \(s.rows) × 3·\(s.width)")
        return forward([qkv, qkv, qkv], columns: [0, s.width, 2 * s.width], shape: s, causal: causal, keep: keep, compute: compute, kernels: kernels)
    }

    /// Q, K and V at column offsets `columns` of `sources` (each of one row stride). With the
    /// shape's `queries`, a sequence's query rows are gathered first (all heads' columns) and
    /// only they are scored and written.
    static func forward(_ sources: [Matrix], columns: [Int], shape s: Shape, causal: Bool, keep: Matrix?,
                        compute: Compute, kernels: KernelSet) -> (output: Matrix, weights: Matrix) {
        precondition(keep.map { $0.values.count == s.weightCount } ?? true,
                     "attention: \(keep?.values.count ?? 0) dropout factors for \(s.weightCount) weights")
        var outputs = [Matrix(uninitializedRows: s.outputRows, columns: s.width), Matrix(uninitializedRows: max(1, s.weightCount), columns: 1)]
        if shortHeads(s, causal: causal, kernels: kernels) {
            shortForward(sources, columns: columns, shape: s, keep: keep, into: &outputs, compute: compute)
            return (outputs[0], outputs[1])
        }
        let dh = s.headWidth, d = s.width, ld = sources[0].columns, scale = 1 / Float(dh).squareRoot()
        let longest = s.lengths.max() ?? 0
        Matrix.withBuffers(reading: sources + [keep ?? Matrix(rows: 1, columns: 1)], writing: &outputs) { buffers in
            OpenBLASThreads.shared.run(threads: 1) {
                compute.forEachChunk(count: s.lengths.count, chunkSize: 4) { range in
                    let (q, k, v) = (buffers.read[0] + columns[0], buffers.read[1] + columns[1], buffers.read[2] + columns[2])
                    let (drop, out, weights) = (buffers.read[3], buffers.write[0], buffers.write[1])
                    let dropped = UnsafeMutablePointer<Float>.allocate(capacity: max(1, longest * longest + longest * d))
                    defer { dropped.deallocate() }
                    let gathered = dropped + longest * longest
                    for b in range where s.queryCount(b) > 0 {
                        let (t, m) = (s.lengths[b], s.queryCount(b))
                        let (queries, lq) = gatherQueries(s, b, q, ld, into: gathered)
                        for h in 0..<s.heads {
                            let input = s.offsets[b] * ld + h * dh, at = s.weightOffsets[b] + h * m * t, p = weights + at
                            product(false, true, m: m, n: t, k: dh, alpha: scale, a: (queries + h * dh, lq), b: (k + input, ld), c: (p, t))
                            softmaxRows(p, rows: m, steps: t, causal: causal) { s.position(b, $0) }
                            var attention = UnsafePointer(p)
                            if keep != nil {
                                for i in 0..<(m * t) { dropped[i] = p[i] * drop[at + i] }
                                attention = UnsafePointer(dropped)
                            }
                            product(false, false, m: m, n: dh, k: t, alpha: 1, a: (attention, t), b: (v + input, ld),
                                    c: (out + s.queryOffsets[b] * d + h * dh, d))
                        }
                    }
                }
            }
        }
        return (outputs[0], outputs[1])
    }

    /// Sequence b's query rows of q (every head's columns) and their row stride: the rows where
    /// they lie when every row is a query, else copied side by side into `scratch` (queries × D).
    static func gatherQueries(_ s: Shape, _ b: Int, _ q: UnsafePointer<Float>, _ ld: Int,
                              into scratch: UnsafeMutablePointer<Float>) -> (UnsafePointer<Float>, Int) {
        guard let queries = s.queries else { return (q + s.offsets[b] * ld, ld) }
        for k in 0..<s.queryCount(b) { (scratch + k * s.width).update(from: q + Int(queries[s.queryOffsets[b] + k]) * ld, count: s.width) }
        return (UnsafePointer(scratch), s.width)
    }

    /// Adds the causal mask to each row of a rows × T block of scores (row i a query at step
    /// `position(i)`) and turns the rows into
    /// softmax weights, eight lanes at a time (the exponentials of x − max ≤ 0 by
    /// `Lanes.expNonPositive`; a masked score, 10 000 below, comes out 0 as in float exp).
    static func softmaxRows(_ p: UnsafeMutablePointer<Float>, rows: Int, steps t: Int, causal: Bool, position: (Int) -> Int) {
        for i in 0..<rows {
            let row = p + i * t, at = position(i)
            if causal { for j in (at + 1)..<max(at + 1, t) { row[j] += masked } }
            var top = Lanes(repeating: -.infinity)
            for j in stride(from: 0, to: t, by: 8) { top = Lanes.maximum(top, Lanes.load(row, j, count: t, padding: -.infinity)) }
            let shift = Lanes(repeating: top.max())   // SIMD.max(): the largest lane
            var total = Lanes()
            for j in stride(from: 0, to: t, by: 8) {
                var e = Lanes.expNonPositive(Lanes.load(row, j, count: t) - shift)
                if j + 8 > t { for l in (t - j)..<8 { e[l] = 0 } }   // padding lanes add nothing
                total += e
                e.store(row, j, count: t)
            }
            let inverse = Lanes(repeating: 1 / total.total)
            for j in stride(from: 0, to: t, by: 8) { (Lanes.load(row, j, count: t) * inverse).store(row, j, count: t) }
        }
    }

    /// The gradients of q, k and v given the output's gradient `g`, the forward's weights
    /// and dropout factors.
    public static func backward(_ g: Matrix, q: Matrix, k: Matrix, v: Matrix, weights: Matrix, keep: Matrix?, shape s: Shape,
                                compute: Compute, kernels: KernelSet = .current) -> (q: Matrix, k: Matrix, v: Matrix) {
        var grads = (0..<3).map { _ in Matrix(uninitializedRows: s.rows, columns: s.width) }
        backward(g, [q, k, v], columns: [0, 0, 0], weights: weights, keep: keep, shape: s, into: &grads, compute: compute, kernels: kernels)
        return (grads[0], grads[1], grads[2])
    }

    /// The gradient of a side-by-side QKV (rows × 3D, as `forward(qkv:…)` read it).
    public static func backward(_ g: Matrix, qkv: Matrix, weights: Matrix, keep: Matrix?, shape s: Shape, compute: Compute,
                                kernels: KernelSet = .current) -> Matrix {
        var grads = [Matrix(uninitializedRows: s.rows, columns: 3 * s.width)]
        let columns = [0, s.width, 2 * s.width]
        backward(g, [qkv, qkv, qkv], columns: columns, weights: weights, keep: keep, shape: s, into: &grads, compute: compute, kernels: kernels)
        return grads[0]
    }

    /// Writes dQ, dK and dV at column offsets `columns` of `grads` (three matrices, or one
    /// holding all three side by side, as the sources are laid out). With the shape's `queries`,
    /// `g` has a row per query, and rows that are no query get dQ = 0.
    static func backward(_ g: Matrix, _ sources: [Matrix], columns: [Int], weights: Matrix, keep: Matrix?, shape s: Shape,
                         into grads: inout [Matrix], compute: Compute, kernels: KernelSet) {
        precondition(g.rows == s.outputRows && g.columns == s.width && (keep.map { $0.values.count == s.weightCount } ?? true),
                     "attention: the gradient or the dropout factors do not match the shape")
        if shortHeads(s, causal: false, kernels: kernels) {
            return shortBackward(g, sources, columns: columns, weights: weights, keep: keep, shape: s, into: &grads, compute: compute)
        }
        let dh = s.headWidth, d = s.width, ld = sources[0].columns, scale = 1 / Float(dh).squareRoot()
        let longest = s.lengths.max() ?? 0, fused = grads.count == 1
        Matrix.withBuffers(reading: [g] + sources + [weights, keep ?? Matrix(rows: 1, columns: 1)], writing: &grads) { buffers in
            OpenBLASThreads.shared.run(threads: 1) {
                compute.forEachChunk(count: s.lengths.count, chunkSize: 4) { range in
                    let r = buffers.read, w = buffers.write
                    let into = (0..<3).map { fused ? w[0] + columns[$0] : w[$0] }
                    let scratch = UnsafeMutablePointer<Float>.allocate(capacity: max(1, 2 * longest * longest + longest * (d + dh)))
                    defer { scratch.deallocate() }
                    let (gathered, dQueries) = (scratch + 2 * longest * longest, scratch + 2 * longest * longest + longest * d)
                    for b in range where s.lengths[b] > 0 {
                        let (t, m) = (s.lengths[b], s.queryCount(b))
                        let (queries, lq) = gatherQueries(s, b, r[1] + columns[0], ld, into: gathered)
                        for h in 0..<s.heads {
                            let input = s.offsets[b] * ld + h * dh, at = s.weightOffsets[b] + h * m * t
                            let (dq, dk, dv) = (into[0] + input, into[1] + input, into[2] + input)
                            if s.queries != nil { for row in 0..<t { (dq + row * ld).update(repeating: 0, count: dh) } }
                            guard m > 0 else {
                                for row in 0..<t { (dk + row * ld).update(repeating: 0, count: dh); (dv + row * ld).update(repeating: 0, count: dh) }
                                continue
                            }
                            backwardHead(rows: m, steps: t, dh: dh, scale: scale, g: (r[0] + s.queryOffsets[b] * d + h * dh, d), q: (queries + h * dh, lq),
                                         k: r[2] + columns[1] + input, v: r[3] + columns[2] + input, ld: ld, p: r[4] + at,
                                         factors: keep == nil ? nil : r[5] + at, dq: s.queries == nil ? (dq, ld) : (dQueries, dh), dk: dk, dv: dv,
                                         scratch: scratch)
                            guard let rows = s.queries else { continue }
                            for k in 0..<m { (into[0] + Int(rows[s.queryOffsets[b] + k]) * ld + h * dh).update(from: dQueries + k * dh, count: dh) }
                        }
                    }
                }
            }
        }
    }

    /// One head of one sequence, m query rows over t steps: dA = g Vᵀ and dV = Aᵀ g (A: the
    /// weights after dropout); through dropout and softmax dS = P ⊙ (dP − Σ_j dP ⊙ P);
    /// dQ = dS K / √d_h, dK = dSᵀ Q / √d_h. g, q and dq come with their row strides; k, v, dk
    /// and dv share `ld` (D, or 3D side by side).
    static func backwardHead(rows m: Int, steps t: Int, dh: Int, scale: Float, g: (UnsafePointer<Float>, Int), q: (UnsafePointer<Float>, Int),
                             k: UnsafePointer<Float>, v: UnsafePointer<Float>, ld: Int, p: UnsafePointer<Float>, factors: UnsafePointer<Float>?,
                             dq: (UnsafeMutablePointer<Float>, Int), dk: UnsafeMutablePointer<Float>, dv: UnsafeMutablePointer<Float>,
                             scratch: UnsafeMutablePointer<Float>) {
        let attention = scratch, dWeights = scratch + m * t
        for i in 0..<(m * t) { attention[i] = p[i] * (factors?[i] ?? 1) }
        product(false, true, m: m, n: t, k: dh, alpha: 1, a: g, b: (v, ld), c: (dWeights, t))
        product(true, false, m: t, n: dh, k: m, alpha: 1, a: (UnsafePointer(attention), t), b: g, c: (dv, ld))
        for i in 0..<m {
            var dot: Float = 0
            for j in 0..<t {
                let index = i * t + j
                dWeights[index] *= factors?[index] ?? 1
                dot += dWeights[index] * p[index]
            }
            for j in 0..<t { dWeights[i * t + j] = p[i * t + j] * (dWeights[i * t + j] - dot) }
        }
        product(false, false, m: m, n: dh, k: t, alpha: scale, a: (UnsafePointer(dWeights), t), b: (k, ld), c: dq)
        product(true, false, m: t, n: dh, k: m, alpha: scale, a: (UnsafePointer(dWeights), t), b: q, c: (dk, ld))
    }

    /// c = α · op(a) · op(b) (m × n, inner k; op transposes when asked; c's old values unread) for
    /// one head of one sequence: OpenBLAS, but plain loops summing in inner order for products as
    /// small as a context model's fields (AutoInt: 7 × 7 × 8), where a call's overhead was most of
    /// its time (≈ 2 million calls an epoch).
    static func product(_ transposeA: Bool, _ transposeB: Bool, m: Int, n: Int, k: Int, alpha: Float, a: (UnsafePointer<Float>, Int),
                        b: (UnsafePointer<Float>, Int), c: (UnsafeMutablePointer<Float>, Int)) {
        guard max(m, n, k) <= smallProduct else {
            return cblas_sgemm(CblasRowMajor, transposeA ? CblasTrans : CblasNoTrans, transposeB ? CblasTrans : CblasNoTrans, Int32(m), Int32(n),
                               Int32(k), alpha, a.0, Int32(a.1), b.0, Int32(b.1), 0, c.0, Int32(c.1))
        }
        let (ap, lda, bp, ldb) = (a.0, a.1, b.0, b.1)
        if transposeB {   // c_ij = α · a_i · b_j, both rows k wide (a is never transposed with b here)
            precondition(!transposeA, "attention: a product with both factors transposed")
            for i in 0..<m {
                for j in 0..<n { c.0[i * c.1 + j] = alpha * Lanes.dot(ap + i * lda, bp + j * ldb, count: k) }
            }
            return
        }
        for i in 0..<m {   // row i of c = α · Σ_p a_ip · (row p of b), eight columns at a time
            for j in stride(from: 0, to: n, by: 8) {
                var sum = Lanes()
                for p in 0..<k { sum += (transposeA ? ap[p * lda + i] : ap[i * lda + p]) * Lanes.load(bp + p * ldb, j, count: n) }
                (alpha * sum).store(c.0 + i * c.1, j, count: n)
            }
        }
    }

    /// The largest m, n and k of a head's product that `product` runs in its loops (the sequential
    /// transformers' heads, 32 wide, stay with OpenBLAS).
    static let smallProduct = 16
}
