import CLanes
import Foundation

/// Additive (Bahdanau) attention pooling over time-major steps, the form NARM's and STAMP's
/// attention take: for sequence b,
///
///     α_tb = m_tb · vᵀ σ(P_tb + Q_b),   out_b = Σ_t α_tb K_tb
///
/// with keys K and their projections P time-major ((T·B) × H and × H'), one query row Q_b
/// (B × H'), weights v (H' × 1) and an optional 0/1 mask m. One pass over the steps per
/// sequence, no (T·B)-sized temporaries: the pullback recomputes σ. Sequences go to the
/// workers in fixed chunks, so results do not depend on the worker count.
public enum AttentionPoolKernels {
    static let chunk = 64

    /// out (B × H).
    public static func forward(keys: Matrix, projected: Matrix, query: Matrix, v: Matrix, mask: [Float]?, steps: Int, compute: Compute,
                               kernels: KernelSet = .current) -> Matrix {
        let b = query.rows, h = keys.columns, hp = query.columns, avx2 = kernels == .avx2
        precondition(mask.map { $0.count == steps * b } ?? true, "attentionPool: one mask entry per step and sequence")
        var outputs = [Matrix(rows: b, columns: h)]
        Matrix.withBuffers(reading: [keys, projected, query, v], writing: &outputs) { p in
            compute.forEachChunk(count: b, chunkSize: chunk) { range in
                let (k, pr, q, w, out) = (p.read[0], p.read[1], p.read[2], p.read[3], p.write[0])
                for i in range where avx2 {
                    mask.withPointer(offset: i) { m in
                        recbench_attention_pool_avx2(k + i * h, h, pr + i * hp, q + i * hp, w, hp, m, steps, b, out + i * h)
                    }
                }
                for i in range where !avx2 {
                    for t in 0..<steps {
                        let row = t * b + i, m = mask?[row] ?? 1
                        guard m != 0 else { continue }
                        let alpha = m * score(pr + row * hp, q + i * hp, w, hp)
                        for j in 0..<h { out[i * h + j] += alpha * k[row * h + j] }
                    }
                }
            }
        }
        return outputs[0]
    }

    /// vᵀ f(p + q) over `n` columns (f: σ here, tanh in `AdditiveAttentionKernels`).
    @inline(__always) static func score(_ p: UnsafePointer<Float>, _ q: UnsafePointer<Float>, _ v: UnsafePointer<Float>, _ n: Int,
                                        _ f: (Lanes) -> Lanes = Lanes.sigmoid) -> Float {
        var total = Lanes()
        for j in stride(from: 0, to: n, by: 8) { total += Lanes.load(v, j, count: n) * f(Lanes.load(p, j, count: n) + Lanes.load(q, j, count: n)) }
        return total.total
    }

    /// The gradients of keys, projections, query and v given out's gradient `g`.
    public static func backward(_ g: Matrix, keys: Matrix, projected: Matrix, query: Matrix, v: Matrix, mask: [Float]?, steps: Int,
                                compute: Compute, kernels: KernelSet = .current) -> (keys: Matrix, projected: Matrix, query: Matrix, v: Matrix) {
        let b = query.rows, h = keys.columns, hp = query.columns, avx2 = kernels == .avx2
        precondition(mask.map { $0.count == steps * b } ?? true, "attentionPool: one mask entry per step and sequence")
        var grads = [Matrix(rows: keys.rows, columns: h), Matrix(rows: projected.rows, columns: hp), Matrix(rows: b, columns: hp)]
        let partial: [[Float]] = Matrix.withBuffers(reading: [g, keys, projected, query, v], writing: &grads) { p in
            compute.mapChunks(count: b, chunkSize: chunk) { range -> [Float] in
                let (gr, k, pr, q, w) = (p.read[0], p.read[1], p.read[2], p.read[3], p.read[4])
                let (dk, dp, dq) = (p.write[0], p.write[1], p.write[2])
                var dv = [Float](repeating: 0, count: hp)
                dv.withUnsafeMutableBufferPointer { sums in
                    let dvp = sums.baseAddress!
                    for i in range where avx2 {
                        mask.withPointer(offset: i) { m in
                            recbench_attention_pool_backward_avx2(gr + i * h, k + i * h, h, pr + i * hp, q + i * hp, w, hp, m, steps, b,
                                                                  dk + i * h, dp + i * hp, dq + i * hp, dvp)
                        }
                    }
                    for i in range where !avx2 {
                        for t in 0..<steps {
                            let row = t * b + i, m = mask?[row] ?? 1
                            guard m != 0 else { continue }
                            var dAlpha: Float = 0
                            for j in 0..<h { dAlpha += gr[i * h + j] * k[row * h + j] }
                            let alpha = m * score(pr + row * hp, q + i * hp, w, hp)
                            for j in 0..<h { dk[row * h + j] += alpha * gr[i * h + j] }
                            let scale = dAlpha * m
                            for j in stride(from: 0, to: hp, by: 8) {
                                let sig = Lanes.sigmoid(Lanes.load(pr + row * hp, j, count: hp) + Lanes.load(q + i * hp, j, count: hp))
                                let ds = scale * Lanes.load(w, j, count: hp) * sig * (1 - sig)
                                ds.store(dp + row * hp, j, count: hp)
                                (Lanes.load(dq + i * hp, j, count: hp) + ds).store(dq + i * hp, j, count: hp)
                                (Lanes.load(dvp, j, count: hp) + scale * sig).store(dvp, j, count: hp)
                            }
                        }
                    }
                }
                return dv
            }
        }
        var dv = Matrix(rows: hp, columns: 1)
        for chunkSums in partial { for j in 0..<hp { dv.values[j] += chunkSums[j] } }
        return (grads[0], grads[1], grads[2], dv)
    }
}

/// Dot-product attention pooling with one query row per sequence, the form SHAN's two
/// attentions take: for sequence b,
///
///     α_tb = softmax_t(H_tb · Q_b, masked),   out_b = Σ_t α_tb K_tb
///
/// keys K (T·B × C) and scored rows H (T·B × D) time-major, queries Q (B × D), an optional
/// 0/1 mask (a masked step gets weight 0; a sequence with every step masked gets the uniform
/// distribution and passes no gradient to its scores, as torch's `masked_fill(-1e9)` gives).
/// Replaces a broadcast, a row dot, a step softmax, a row scaling and a step sum, each a
/// (T·B)-sized temporary. Sequences go to the workers in fixed chunks.
public enum DotAttentionPoolKernels {
    static let chunk = 64

    /// out (B × C) and the weights α (T·B × 1), which the pullback reads.
    public static func forward(keys: Matrix, scored: Matrix, query: Matrix, mask: [Float]?, steps: Int,
                               compute: Compute) -> (out: Matrix, weights: Matrix) {
        let b = query.rows, c = keys.columns, d = query.columns
        var outputs = [Matrix(rows: b, columns: c), Matrix(rows: keys.rows, columns: 1)]
        Matrix.withBuffers(reading: [keys, scored, query], writing: &outputs) { p in
            compute.forEachChunk(count: b, chunkSize: chunk) { range in
                let (k, h, q, out, alpha) = (p.read[0], p.read[1], p.read[2], p.write[0], p.write[1])
                for i in range {
                    var top = -Float.infinity, kept = 0
                    for t in 0..<steps where mask?[t * b + i] ?? 1 != 0 {
                        let s = Lanes.dot(h + (t * b + i) * d, q + i * d, count: d)
                        alpha[t * b + i] = s; top = max(top, s); kept += 1
                    }
                    var total: Float = 0
                    for t in 0..<steps {
                        let row = t * b + i
                        if kept == 0 { alpha[row] = 1 / Float(steps) } else if mask?[row] ?? 1 != 0 {
                            alpha[row] = Foundation.exp(alpha[row] - top); total += alpha[row]
                        }
                    }
                    for t in 0..<steps where kept > 0 { alpha[t * b + i] /= total }
                    for t in 0..<steps where alpha[t * b + i] != 0 {
                        let row = t * b + i, a = Lanes(repeating: alpha[row])
                        for j in stride(from: 0, to: c, by: 8) {
                            (Lanes.load(out + i * c, j, count: c) + a * Lanes.load(k + row * c, j, count: c)).store(out + i * c, j, count: c)
                        }
                    }
                }
            }
        }
        return (outputs[0], outputs[1])
    }

    /// The gradients of keys, scored rows and queries given out's gradient `g`.
    public static func backward(_ g: Matrix, keys: Matrix, scored: Matrix, query: Matrix, weights: Matrix, mask: [Float]?, steps: Int,
                                compute: Compute) -> (keys: Matrix, scored: Matrix, query: Matrix) {
        let b = query.rows, c = keys.columns, d = query.columns
        // Every row of the first two is written below (zeros where a step passes no gradient): no zero-fill first.
        var grads = [Matrix(uninitializedRows: keys.rows, columns: c), Matrix(uninitializedRows: scored.rows, columns: d), Matrix(rows: b, columns: d)]
        Matrix.withBuffers(reading: [g, keys, scored, query, weights], writing: &grads) { p in
            compute.forEachChunk(count: b, chunkSize: chunk) { range in
                let (gr, k, h, q, alpha) = (p.read[0], p.read[1], p.read[2], p.read[3], p.read[4])
                let (dk, dh, dq) = (p.write[0], p.write[1], p.write[2])
                var dAlpha = [Float](repeating: 0, count: steps)
                for i in range {
                    let gi = gr + i * c
                    var weighted: Float = 0, anyKept = false
                    for t in 0..<steps {
                        let row = t * b + i, a = Lanes(repeating: alpha[row])
                        for j in stride(from: 0, to: c, by: 8) { (a * Lanes.load(gi, j, count: c)).store(dk + row * c, j, count: c) }
                        dAlpha[t] = Lanes.dot(gi, k + row * c, count: c)
                        weighted += alpha[row] * dAlpha[t]
                        anyKept = anyKept || mask?[row] ?? 1 != 0
                    }
                    for t in 0..<steps {
                        let row = t * b + i, ds = Lanes(repeating: alpha[row] * (dAlpha[t] - weighted))
                        // A masked step, or a uniform distribution over masked steps (constant): no gradient.
                        guard anyKept && mask?[row] ?? 1 != 0 else { (dh + row * d).update(repeating: 0, count: d); continue }
                        for j in stride(from: 0, to: d, by: 8) {
                            (ds * Lanes.load(q + i * d, j, count: d)).store(dh + row * d, j, count: d)
                            (Lanes.load(dq + i * d, j, count: d) + ds * Lanes.load(h + row * d, j, count: d)).store(dq + i * d, j, count: d)
                        }
                    }
                }
            }
        }
        return (grads[0], grads[1], grads[2])
    }
}

/// Additive attention weights over time-major steps, the form RepeatNet's three attentions
/// take: for sequence b,
///
///     α_tb = softmax_t(m_tb · vᵀ tanh(P_tb + Q_b))
///
/// keys P (T·B × H), one query row Q_b (B × H), v (H × 1), an optional 0/1 mask (a masked step
/// gets weight 0; every step masked gives the uniform distribution and no gradient, as
/// `masked_fill(-1e9)` does). The rows are walked in memory order (the scores, then each
/// sequence's softmax over its T steps), with no (T·B) × H temporary but the keys' gradient:
/// the pullback recomputes the tanh. Row chunks are fixed, so results do not depend on the
/// worker count.
public enum AdditiveAttentionKernels {
    static let rowChunk = 1024, sequenceChunk = 256

    /// Rows of h entries that make four chunks of a dropout mask, the most its AVX2 generator draws
    /// at once (fewer leave lanes idle). Blocks of rows this size draw nothing twice when h divides
    /// 4 · 32,768 and they start on a chunk; otherwise a block draws one chunk more than it reads.
    static func maskGroupRows(_ h: Int) -> Int { max(1, 4 * Int(RECBENCH_MASK_CHUNK) / max(1, h)) }

    /// Steps per backward task: with a block of sequences, the unit of work a worker takes.
    static let stepGroup = 10

    /// Calls `body` with each row of `range` of the keys `k` (h columns, `count` rows in all) and
    /// that row's dropout factors: the row itself without `dropout`, else its product with the
    /// factors in a row buffer (the same IEEE products `droppedOut` forms).
    static func forEachKeyRow(_ range: Range<Int>, keys k: UnsafePointer<Float>, h: Int, count: Int, dropout: DropoutMask?, kernels: KernelSet,
                              _ body: (_ row: Int, _ key: UnsafePointer<Float>, _ factors: UnsafePointer<Float>?) -> Void) {
        guard let dropout else { for row in range { body(row, k + row * h, nil) }; return }
        dropout.withFactors(entries: range.lowerBound * h ..< range.upperBound * h, count: count * h, kernels: kernels) { factors in
            withUnsafeTemporaryAllocation(of: Float.self, capacity: max(1, h)) { buffer in
                for row in range {
                    let f = factors + (row - range.lowerBound) * h, key = k + row * h
                    for j in 0..<h { buffer[j] = key[j] * f[j] }
                    body(row, UnsafePointer(buffer.baseAddress!), f)
                }
            }
        }
    }

    /// α (T·B × 1), the keys dropped out by `keysDropout` when given.
    public static func forward(keys: Matrix, query: Matrix, v: Matrix, mask: [Float]?, steps: Int, keysDropout: DropoutMask? = nil,
                               compute: Compute, kernels: KernelSet = .current) -> Matrix {
        let b = query.rows, h = query.columns, avx2 = kernels == .avx2
        var outputs = [Matrix(uninitializedRows: keys.rows, columns: 1)]
        Matrix.withBuffers(reading: [keys, query, v], writing: &outputs) { p in
            compute.forEachChunk(count: keys.rows, chunkSize: keysDropout == nil ? rowChunk : maskGroupRows(h)) { range in
                let (q, w, alpha) = (p.read[1], p.read[2], p.write[0])
                forEachKeyRow(range, keys: p.read[0], h: h, count: keys.rows, dropout: keysDropout, kernels: kernels) { row, key, _ in
                    guard mask?[row] ?? 1 != 0 else { alpha[row] = -.infinity; return }
                    alpha[row] = avx2 ? recbench_tanh_score_avx2(key, q + (row % b) * h, w, h)
                        : AttentionPoolKernels.score(key, q + (row % b) * h, w, h, Lanes.tanh)
                }
            }
            compute.forEachChunk(count: b, chunkSize: sequenceChunk) { range in
                let alpha = p.write[0]
                for i in range {
                    let top = (0..<steps).reduce(-Float.infinity) { max($0, alpha[$1 * b + i]) }
                    guard top > -.infinity else {   // every step masked
                        for t in 0..<steps { alpha[t * b + i] = 1 / Float(steps) }
                        continue
                    }
                    var total: Float = 0
                    for t in 0..<steps {
                        let e = alpha[t * b + i] == -.infinity ? 0 : Foundation.exp(alpha[t * b + i] - top)
                        alpha[t * b + i] = e; total += e
                    }
                    for t in 0..<steps { alpha[t * b + i] /= total }
                }
            }
        }
        return outputs[0]
    }

    /// The gradients of keys (before their dropout, when `keysDropout` is given), query and v
    /// given α's gradient `g` and α itself.
    public static func backward(_ g: Matrix, alpha: Matrix, keys: Matrix, query: Matrix, v: Matrix, mask: [Float]?, steps: Int,
                                keysDropout: DropoutMask? = nil, compute: Compute,
                                kernels: KernelSet = .current) -> (keys: Matrix, query: Matrix, v: Matrix) {
        let b = query.rows, h = query.columns, avx2 = kernels == .avx2
        // Per sequence: Σ_t α g, and whether any step is kept (else the distribution is constant).
        var weighted = [Float](repeating: 0, count: b), kept = [Bool](repeating: false, count: b)
        for t in 0..<steps {
            for i in 0..<b {
                weighted[i] += alpha.values[t * b + i] * g.values[t * b + i]; kept[i] = kept[i] || mask?[t * b + i] ?? 1 != 0
            }
        }
        // Tasks of (a fixed block of sequences, a group of `stepGroup` steps), the block's rows of a step
        // contiguous, four mask chunks' worth: a task owns its block's rows of its group's partial
        // dQ_b = Σ_t dP_tb (summed before the keys' dropout), and the groups' partials are added in order.
        let sequences = maskGroupRows(h), blocks = (b + sequences - 1) / sequences, groups = (steps + stepGroup - 1) / stepGroup
        var grads = [Matrix(uninitializedRows: keys.rows, columns: h), Matrix(rows: groups * b, columns: h)]
        let (sums, anyKept) = (weighted, kept)
        let partial: [[Float]] = Matrix.withBuffers(reading: [g, alpha, keys, query, v], writing: &grads) { p in
            compute.mapChunks(count: blocks * groups, chunkSize: 1) { task -> [Float] in
                let (block, group) = (task.lowerBound % blocks, task.lowerBound / blocks)
                let first = block * sequences, last = min(b, first + sequences), dq = p.write[1] + group * b * h
                let (ga, a, k, q, w, dk) = (p.read[0], p.read[1], p.read[2], p.read[3], p.read[4], p.write[0])
                var dv = [Float](repeating: 0, count: h)
                dv.withUnsafeMutableBufferPointer { total in
                    for t in (group * stepGroup)..<min(steps, (group + 1) * stepGroup) {
                        forEachKeyRow((t * b + first)..<(t * b + last), keys: k, h: h, count: keys.rows, dropout: keysDropout,
                                      kernels: kernels) { row, key, factors in
                            let i = row - t * b, out = dk + row * h
                            guard anyKept[i] && mask?[row] ?? 1 != 0 else { out.update(repeating: 0, count: h); return }
                            keyGradient(key, query: q + i * h, v: w, h: h, ds: a[row] * (ga[row] - sums[i]), into: out, dv: total.baseAddress!,
                                        avx2: avx2)
                            for j in 0..<h { dq[i * h + j] += out[j] }
                            if let factors { for j in 0..<h { out[j] *= factors[j] } }   // through the dropout: the products its pullback forms
                        }
                    }
                }
                return dv
            }
        }
        var dq = Matrix(rows: b, columns: h)
        for group in 0..<groups where b * h > 0 { dq.values.withUnsafeMutableBufferPointer { d in grads[1].values.withUnsafeBufferPointer { s in
            LaneKernels.zipMap(d.baseAddress!, s.baseAddress! + group * b * h, into: d.baseAddress!, count: b * h, compute: compute) { $0 + $1 }
        } } }
        var dv = Matrix(rows: h, columns: 1)
        for chunkSums in partial { for j in 0..<h { dv.values[j] += chunkSums[j] } }
        return (grads[0], dq, dv)
    }

    /// One step row's key gradient dP = ds · v ⊙ (1 − u²), u = tanh(P + Q), into `out`, and ds · u added to dv.
    @inline(__always)
    static func keyGradient(_ key: UnsafePointer<Float>, query q: UnsafePointer<Float>, v w: UnsafePointer<Float>, h: Int, ds: Float,
                            into out: UnsafeMutablePointer<Float>, dv total: UnsafeMutablePointer<Float>, avx2: Bool) {
        if avx2 { return recbench_tanh_score_backward_avx2(key, q, w, h, ds, out, total) }
        let scale = Lanes(repeating: ds)
        for j in stride(from: 0, to: h, by: 8) {
            let u = Lanes.tanh(Lanes.load(key, j, count: h) + Lanes.load(q, j, count: h))
            (scale * Lanes.load(w, j, count: h) * (1 - u * u)).store(out, j, count: h)
            (Lanes.load(total, j, count: h) + scale * u).store(total, j, count: h)
        }
    }
}

/// A weighted sum over time-major steps, an attention's readout once its weights are known
/// (RepeatNet's contexts): out_b = Σ_t α_tb V_tb for values V ((T·B) × C) and weights α
/// ((T·B) × 1). No (T·B) × C temporary in the forward; sequences go to the workers in fixed
/// chunks, each chunk walked step by step (its rows of a step are contiguous).
public enum WeightedStepSumKernels {
    static let chunk = 64

    /// out (B × C).
    public static func forward(values: Matrix, weights: Matrix, steps: Int, compute: Compute) -> Matrix {
        let b = steps == 0 ? 0 : values.rows / steps, c = values.columns
        precondition(b * steps == values.rows && weights.values.count == values.rows, "weightedSumSteps: shapes")
        var outputs = [Matrix(rows: b, columns: c)]
        guard b > 0, c > 0 else { return outputs[0] }
        Matrix.withBuffers(reading: [values, weights], writing: &outputs) { p in
            compute.forEachChunk(count: b, chunkSize: chunk) { range in
                let (v, alpha, out) = (p.read[0], p.read[1], p.write[0])
                // Step by step over the chunk's sequences: each step's rows are one contiguous run of the
                // time-major values, and every output still sums its steps in order.
                for t in 0..<steps {
                    for i in range where alpha[t * b + i] != 0 {
                        let row = t * b + i, a = Lanes(repeating: alpha[row])
                        for j in stride(from: 0, to: c, by: 8) {
                            (Lanes.load(out + i * c, j, count: c) + a * Lanes.load(v + row * c, j, count: c)).store(out + i * c, j, count: c)
                        }
                    }
                }
            }
        }
        return outputs[0]
    }

    /// The gradients of the values (α_tb g_b) and of the weights (V_tb · g_b) given out's gradient g.
    public static func backward(_ g: Matrix, values: Matrix, weights: Matrix, steps: Int, compute: Compute) -> (values: Matrix, weights: Matrix) {
        let b = g.rows, c = values.columns
        var grads = [Matrix(uninitializedRows: values.rows, columns: c), Matrix(uninitializedRows: values.rows, columns: 1)]
        guard b > 0, c > 0 else { return (Matrix(rows: values.rows, columns: c), Matrix(rows: values.rows, columns: 1)) }
        Matrix.withBuffers(reading: [g, values, weights], writing: &grads) { p in
            compute.forEachChunk(count: b, chunkSize: chunk) { range in
                let (gr, v, alpha, dv, dAlpha) = (p.read[0], p.read[1], p.read[2], p.write[0], p.write[1])
                for t in 0..<steps {
                    for i in range {
                        let row = t * b + i, a = Lanes(repeating: alpha[row])
                        for j in stride(from: 0, to: c, by: 8) { (a * Lanes.load(gr + i * c, j, count: c)).store(dv + row * c, j, count: c) }
                        dAlpha[row] = Lanes.dot(gr + i * c, v + row * c, count: c)
                    }
                }
            }
        }
        return (grads[0], grads[1])
    }
}

extension Optional where Wrapped == [Float] {
    /// The mask's element pointer at `offset` (null without a mask) for a C kernel.
    func withPointer(offset: Int, _ body: (UnsafePointer<Float>?) -> Void) {
        guard let mask = self else { return body(nil) }
        mask.withUnsafeBufferPointer { body($0.baseAddress! + offset) }
    }
}
