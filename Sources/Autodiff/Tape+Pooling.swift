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
        let segments = offsets.count - 1, logits = l.value.values, values = v.value.values
        precondition(logits.count == offsets.last! && values.count == offsets.last!, "smoothedAttention: one logit and value per row")
        var weights = [Float](repeating: 0, count: offsets.last!), scale = [Float](repeating: 0, count: segments)
        var ratio = [Float](repeating: 0, count: segments), out = Matrix(rows: segments, columns: 1)
        for s in 0..<segments where offsets[s] < offsets[s + 1] {
            let range = offsets[s]..<offsets[s + 1]
            let top = logits[range].max()!
            var total: Float = 0, weighted: Float = 0
            for j in range {
                weights[j] = Foundation.exp(logits[j] - top)
                total += weights[j]; weighted += weights[j] * values[j]
            }
            scale[s] = Foundation.exp((1 - beta) * top - beta * Foundation.log(total))   // one exp: no ∞ / ∞ for β > 1
            ratio[s] = weighted / total
            out.values[s] = scale[s] * weighted
        }
        let result = Variable(out, requiresGrad: l.requiresGrad || v.requiresGrad)
        return record(result) {
            let g = result.grad!.values
            var gl = Matrix(rows: logits.count, columns: 1), gv = Matrix(rows: values.count, columns: 1)
            for s in 0..<segments {
                for j in offsets[s]..<offsets[s + 1] {
                    let c = g[s] * scale[s] * weights[j]
                    gv.values[j] = c
                    gl.values[j] = c * (values[j] - beta * ratio[s])
                }
            }
            if l.requiresGrad { l.accumulate(gl) }
            if v.requiresGrad { v.accumulate(gv) }
        }
    }
}

extension Tape {
    /// An attention network's score per row, hᵀ ReLU(x W + b) (rows × 1; no b: AFM's), as one op
    /// where the CPU runs `ScoreMLPKernels` (the rows × a hidden layer is never stored), and as
    /// matmul, ReLU, matmul elsewhere.
    public func scoreMLP(_ x: Variable, weight: Variable, bias: Variable? = nil, output h: Variable) -> Variable {
        guard ScoreMLPKernels.isAvailable() else {
            return matmul(relu(bias.map { linear(x, weight, $0) } ?? matmul(x, weight)), h)
        }
        let compute = self.compute
        let out = Variable(ScoreMLPKernels.forward(x.value, weight: weight.value, bias: bias?.value, output: h.value, compute: compute),
                           requiresGrad: x.requiresGrad || weight.requiresGrad || h.requiresGrad || bias?.requiresGrad == true)
        return record(out) {
            let g = ScoreMLPKernels.backward(out.grad!, x.value, weight: weight.value, bias: bias?.value, output: h.value, compute: compute)
            if x.requiresGrad { x.accumulate(g.x) }
            if weight.requiresGrad { weight.accumulate(g.weight) }
            if let bias, bias.requiresGrad { bias.accumulate(g.bias) }
            if h.requiresGrad { h.accumulate(g.output) }
        }
    }
}

extension Tape {
    /// AFM's attentional pooling over field pairs, rows × 1: per row of e (the F fields' d-wide
    /// embeddings side by side) and pair (f, g), x = e_f ⊙ e_g, l = hᵀ ReLU(x W), v = q_r · x, and
    /// out_r = Σ_pairs softmax(l) v. One op where the CPU runs `PairAttentionKernels` (no
    /// rows · pairs block is stored); elsewhere the ops it replaces, composed.
    public func pairAttention(_ e: Variable, width d: Int, pairs: [(Int, Int)], weight: Variable, output h: Variable, values q: Variable) -> Variable {
        guard PairAttentionKernels.isAvailable() else { return composedPairAttention(e, width: d, pairs: pairs, weight: weight, output: h, values: q) }
        let compute = self.compute
        let saved = PairAttentionKernels.forward(e.value, width: d, pairs: pairs, weight: weight.value, output: h.value, values: q.value, compute: compute)
        let out = Variable(saved.out, requiresGrad: e.requiresGrad || weight.requiresGrad || h.requiresGrad || q.requiresGrad)
        return record(out) {
            let g = PairAttentionKernels.backward(out.grad!, e.value, width: d, pairs: pairs, weight: weight.value, output: h.value,
                                                  values: q.value, saved: saved, compute: compute)
            if e.requiresGrad { e.accumulate(g.e) }
            if q.requiresGrad { q.accumulate(g.q) }
            if weight.requiresGrad { weight.accumulate(g.weight) }
            if h.requiresGrad { h.accumulate(g.output) }
        }
    }

    /// `pairAttention` composed of the ops it replaces: the pair rows (rows · pairs × d) as a
    /// block, their scores, values and the softmax over each row's pairs (outside the AVX2 build,
    /// and the reference the fused op is tested against).
    public func composedPairAttention(_ e: Variable, width d: Int, pairs: [(Int, Int)], weight: Variable, output h: Variable,
                                      values q: Variable) -> Variable {
        let n = e.value.rows, count = pairs.count
        let x = reshaped(sliceProducts([e], pairs.map { SlicePair(0, $0.0 * d, 0, $0.1 * d) }, width: d, summed: false), rows: n * count, columns: d)
        let values = rowDot(x, rows: Array(0..<Int32(n * count)), q, rows: (0..<Int32(n)).flatMap { [Int32](repeating: $0, count: count) })
        return smoothedAttention(logits: scoreMLP(x, weight: weight, output: h), values: values, offsets: (0...n).map { $0 * count }, beta: 1)
    }
}
