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
    public static func forward(keys: Matrix, projected: Matrix, query: Matrix, v: Matrix, mask: [Float]?, steps: Int, compute: Compute) -> Matrix {
        let b = query.rows, h = keys.columns, hp = query.columns
        var outputs = [Matrix(rows: b, columns: h)]
        Matrix.withBuffers(reading: [keys, projected, query, v], writing: &outputs) { p in
            compute.forEachChunk(count: b, chunkSize: chunk) { range in
                let (k, pr, q, w, out) = (p.read[0], p.read[1], p.read[2], p.read[3], p.write[0])
                for i in range {
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

    /// vᵀ σ(p + q) over `n` columns.
    @inline(__always) static func score(_ p: UnsafePointer<Float>, _ q: UnsafePointer<Float>, _ v: UnsafePointer<Float>, _ n: Int) -> Float {
        var total = Lanes()
        for j in stride(from: 0, to: n, by: 8) {
            total += Lanes.load(v, j, count: n) * Lanes.sigmoid(Lanes.load(p, j, count: n) + Lanes.load(q, j, count: n))
        }
        return total.total
    }

    /// The gradients of keys, projections, query and v given out's gradient `g`.
    public static func backward(_ g: Matrix, keys: Matrix, projected: Matrix, query: Matrix, v: Matrix, mask: [Float]?, steps: Int,
                                compute: Compute) -> (keys: Matrix, projected: Matrix, query: Matrix, v: Matrix) {
        let b = query.rows, h = keys.columns, hp = query.columns
        var grads = [Matrix(rows: keys.rows, columns: h), Matrix(rows: projected.rows, columns: hp), Matrix(rows: b, columns: hp)]
        let partial: [[Float]] = Matrix.withBuffers(reading: [g, keys, projected, query, v], writing: &grads) { p in
            compute.mapChunks(count: b, chunkSize: chunk) { range -> [Float] in
                let (gr, k, pr, q, w) = (p.read[0], p.read[1], p.read[2], p.read[3], p.read[4])
                let (dk, dp, dq) = (p.write[0], p.write[1], p.write[2])
                var dv = [Float](repeating: 0, count: hp)
                dv.withUnsafeMutableBufferPointer { sums in
                    let dvp = sums.baseAddress!
                    for i in range {
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
