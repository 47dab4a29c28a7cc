import Foundation
import Linalg

extension Tape {
    /// Max pooling of embedding bags: row r is, per column, the largest weighted row of
    /// `table` among the entries of `bags` row `rows[r]` (an empty bag gives `empty`, as
    /// RecBole's −1e9 fill does); the gradient goes to the winning rows only.
    public func pooledMax(_ table: Variable, bags: SparseMatrix, rows: [Int32], empty: Float) -> Variable {
        let (value, winners) = PoolingKernels.max(table.value, bags: bags, rows: rows, empty: empty)
        let out = Variable(value, requiresGrad: table.requiresGrad)
        return record(out) { table.accumulate { grad in PoolingKernels.addMaxGradient(out.grad!, bags: bags, winners: winners, into: &grad) } }
    }
}

extension Tape {
    /// NAIS's smoothed attention over variable-length segments: for the rows of segment s
    /// (`offsets[s]..<offsets[s+1]`), out[s] = Σ_j exp(l_j) v_j / (Σ_j exp(l_j))^β, with
    /// logits `l` and values `v` rows × 1. β = 1 is a softmax-weighted mean; NAIS's β < 1
    /// lets longer histories weigh more. Shifting by the segment's largest logit m keeps
    /// exp finite without changing the value: out = e^{(1−β)m} Σ E'v / (Σ E')^β, E' = e^{l−m}.
    /// The pullback: ∂out/∂v_j = c E'_j and ∂out/∂l_j = c E'_j (v_j − β N'/S'), c = e^{(1−β)m} S'^{−β}.
    public func smoothedAttention(logits l: Variable, values v: Variable, offsets: [Int], beta: Float) -> Variable {
        let segments = offsets.count - 1
        precondition(l.value.values.count == offsets.last! && v.value.values.count == offsets.last!, "smoothedAttention: one logit and value per row")
        var weights = [Float](repeating: 0, count: offsets.last!), scale = [Float](repeating: 0, count: segments)
        var ratio = [Float](repeating: 0, count: segments), out = Matrix(rows: segments, columns: 1)
        for s in 0..<segments where offsets[s] < offsets[s + 1] {
            let range = offsets[s]..<offsets[s + 1]
            let top = l.value.values[range].max()!
            var total: Float = 0, weighted: Float = 0
            for j in range {
                weights[j] = Foundation.exp(l.value.values[j] - top)
                total += weights[j]; weighted += weights[j] * v.value.values[j]
            }
            scale[s] = Foundation.exp((1 - beta) * top - beta * Foundation.log(total))   // one exp: no ∞ / ∞ for β > 1
            ratio[s] = weighted / total
            out.values[s] = scale[s] * weighted
        }
        let result = Variable(out, requiresGrad: l.requiresGrad || v.requiresGrad)
        return record(result) {
            let g = result.grad!
            var gl = Matrix(rows: l.value.rows, columns: 1), gv = Matrix(rows: v.value.rows, columns: 1)
            for s in 0..<segments {
                for j in offsets[s]..<offsets[s + 1] {
                    let c = g.values[s] * scale[s] * weights[j]
                    gv.values[j] = c
                    gl.values[j] = c * (v.value.values[j] - beta * ratio[s])
                }
            }
            if l.requiresGrad { l.accumulate(gl) }
            if v.requiresGrad { v.accumulate(gv) }
        }
    }
}
