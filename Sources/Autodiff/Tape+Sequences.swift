import Foundation
import Linalg

extension Tape {
    /// Rows `indices` of `table` (an embedding lookup with a padding id): rows equal to
    /// `padding` are read as zeros, or with `readsPaddingRow` as the table's row `padding`
    /// (torch's `padding_idx`, which only blocks the gradient); either way they pass no
    /// gradient back.
    public func gather(_ table: Variable, rows indices: [Int32], padding: Int32, readsPaddingRow: Bool = false) -> Variable {
        let out = Variable(RowKernels.gather(table.value, rows: indices, zeroing: readsPaddingRow ? nil : padding), requiresGrad: table.requiresGrad)
        return record(out) {
            guard indices.contains(where: { $0 != padding }) else { return }
            table.accumulate { grad in RowKernels.addRows(out.grad!, at: indices, skipping: padding, into: &grad) }
        }
    }

    /// Mean cross-entropy of the softmax over every row of `table` (logits h · tableᵀ)
    /// against `targets` (one row index of `table` per row of `h`): RecBole's `loss_type: CE`.
    /// One batch × table block of logits is formed, turned into probabilities in place and
    /// kept for the pullback: (softmax − one-hot) / B, times the table for h and times h for
    /// the table, the one-hot part as row lookups (no second block).
    public func softmaxCrossEntropy(_ h: Variable, _ table: Variable, targets: [Int32]) -> Variable {
        let b = h.value.rows
        precondition(targets.count == b, "softmaxCrossEntropy: one target per row")
        var probabilities = BLAS.gemm(h.value, table.value, transposeB: true, compute: compute)
        let total = Self.softmaxRows(&probabilities, targets: targets, compute: compute).reduce(0.0) { $0 + Double($1) }
        let out = Variable(Matrix(rows: 1, columns: 1, values: [Float(total / Double(max(1, b)))]),
                           requiresGrad: h.requiresGrad || table.requiresGrad)
        return record(out) {
            // (P − one-hot) · scale without forming it: the products read P itself (α = scale)
            // and the one-hot part is a row lookup and a row scatter.
            let scale = out.grad!.values[0] / Float(max(1, b)), compute = self.compute
            if h.requiresGrad {
                h.accumulateProduct(probabilities, table.value, alpha: scale)
                h.accumulate(RowKernels.gather(table.value, rows: targets).map(compute) { $0 * -scale })
            }
            if table.requiresGrad {
                table.accumulateProduct(probabilities, transposeA: true, h.value, alpha: scale)
                table.accumulateRows(h.value.map(compute) { $0 * -scale }, at: targets)
            }
        }
    }

    /// Each row of `logits` turned into its softmax in place (eight lanes at a time, rows split
    /// over the workers); returns −log p[target] per row.
    static func softmaxRows(_ logits: inout Matrix, targets: [Int32], compute: Compute) -> [Float] {
        let n = logits.columns
        var outputs = [logits, Matrix(rows: targets.count, columns: 1)]
        logits = Matrix(rows: 0, columns: n)   // no copy on write
        Matrix.withBuffers(reading: [], writing: &outputs) { p in
            compute.forEachChunk(count: targets.count, chunkSize: max(1, 16_384 / max(1, n))) { range in
                for r in range {
                    let row = p.write[0] + r * n
                    SoftmaxKernels.softmax(row, count: n)
                    p.write[1][r] = -Foundation.log(max(row[Int(targets[r])], .leastNormalMagnitude))
                }
            }
        }
        logits = outputs[0]
        return outputs[1].values
    }

    /// The B rows of `a` repeated for each of `steps` time steps, time-major ((steps·B) × n);
    /// the pullback sums the steps' gradients.
    public func broadcastSteps(_ a: Variable, steps: Int) -> Variable {
        let block = a.value.values.count
        var value = Matrix(uninitializedRows: steps * a.value.rows, columns: a.value.columns)
        value.values.withUnsafeMutableBufferPointer { out in
            a.value.values.withUnsafeBufferPointer { x in
                for t in 0..<steps where block > 0 { (out.baseAddress! + t * block).update(from: x.baseAddress!, count: block) }
            }
        }
        let out = Variable(value, requiresGrad: a.requiresGrad)
        let compute = self.compute
        return record(out) { a.accumulate { grad in Self.addSteps(out.grad!, steps: steps, into: &grad, compute: compute) } }
    }

    /// Σ_t α_tb V_tb over `steps` time steps of time-major values V ((steps·B) × n) and
    /// weights α ((steps·B) × 1): B × n, without the scaled (steps·B) × n rows that
    /// `sumSteps(scaleRows(values, by: weights))` forms (the same sums, in the same order).
    public func weightedSumSteps(_ values: Variable, weights: Variable, steps: Int) -> Variable {
        let compute = self.compute
        let out = Variable(WeightedStepSumKernels.forward(values: values.value, weights: weights.value, steps: steps, compute: compute),
                           requiresGrad: values.requiresGrad || weights.requiresGrad)
        return record(out) {
            let grads = WeightedStepSumKernels.backward(out.grad!, values: values.value, weights: weights.value, steps: steps, compute: compute)
            if values.requiresGrad { values.accumulate(grads.values) }
            if weights.requiresGrad { weights.accumulate(grads.weights) }
        }
    }

    /// The sum over `steps` time steps of a time-major (steps·B) × n variable: B × n.
    public func sumSteps(_ a: Variable, steps: Int) -> Variable {
        let b = steps == 0 ? 0 : a.value.rows / steps, n = a.value.columns
        precondition(b * steps == a.value.rows, "sumSteps: \(a.value.rows) rows are not \(steps) steps")
        var value = Matrix(rows: b, columns: n)
        let compute = self.compute
        Self.addSteps(a.value, steps: steps, into: &value, compute: compute)
        let out = Variable(value, requiresGrad: a.requiresGrad)
        return record(out) {
            let block = b * n
            a.accumulate { grad in
                grad.values.withUnsafeMutableBufferPointer { g in
                    out.grad!.values.withUnsafeBufferPointer { y in
                        for t in 0..<steps where block > 0 {
                            LaneKernels.zipMap(y.baseAddress!, g.baseAddress! + t * block, into: g.baseAddress! + t * block, count: block,
                                               compute: compute) { $0 + $1 }
                        }
                    }
                }
            }
        }
    }

    /// sum[k] += Σ_t steps[t · block + k], block = sum's size.
    static func addSteps(_ steps: Matrix, steps count: Int, into sum: inout Matrix, compute: Compute) {
        let block = sum.values.count
        sum.values.withUnsafeMutableBufferPointer { s in
            steps.values.withUnsafeBufferPointer { x in
                for t in 0..<count where block > 0 {
                    LaneKernels.zipMap(x.baseAddress! + t * block, s.baseAddress!, into: s.baseAddress!, count: block, compute: compute) { $0 + $1 }
                }
            }
        }
    }
}

extension Tape {
    /// GELU, the exact (erf) form: x · Φ(x) = x · ½ (1 + erf(x / √2)).
    public func gelu(_ a: Variable) -> Variable {
        let compute = self.compute
        let out = Variable(ActivationKernels.gelu(a.value, compute: compute), requiresGrad: a.requiresGrad)
        return record(out) { a.accumulate(ActivationKernels.gelu(a.value, gradient: out.grad!, compute: compute)) }
    }

    /// Multi-head self-attention of packed sequences (RecBole's `MultiHeadAttention` before
    /// its output layer): sequence s is `lengths[s]` consecutive rows of the queries, keys and
    /// values; with `causal` a step sees only itself and earlier steps; `keep` (one factor per
    /// weight, Σ heads · length², or Σ heads · queries · length) drops attention weights. With
    /// `queries` (ascending rows), only those rows' outputs are computed, one output row each.
    public func selfAttention(_ q: Variable, _ k: Variable, _ v: Variable, heads: Int, lengths: [Int], causal: Bool, keep: Matrix?,
                              queries: [Int32]? = nil) -> Variable {
        let shape = AttentionKernels.Shape(lengths: lengths, heads: heads, width: q.value.columns, queries: queries)
        let (value, weights) = AttentionKernels.forward(q: q.value, k: k.value, v: v.value, shape: shape, causal: causal, keep: keep,
                                                        compute: compute)
        let out = Variable(value, requiresGrad: q.requiresGrad || k.requiresGrad || v.requiresGrad)
        return record(out) { [compute] in
            let grads = AttentionKernels.backward(out.grad!, q: q.value, k: k.value, v: v.value, weights: weights, keep: keep, shape: shape,
                                                  compute: compute)
            if q.requiresGrad { q.accumulate(grads.q) }
            if k.requiresGrad { k.accumulate(grads.k) }
            if v.requiresGrad { v.accumulate(grads.v) }
        }
    }

    /// `selfAttention` with Q, K and V side by side in one rows × 3D variable (the product of
    /// one input GEMM), its gradient written back side by side.
    public func selfAttention(qkv: Variable, heads: Int, lengths: [Int], causal: Bool, keep: Matrix?, queries: [Int32]? = nil) -> Variable {
        let shape = AttentionKernels.Shape(lengths: lengths, heads: heads, width: qkv.value.columns / 3, queries: queries)
        let (value, weights) = AttentionKernels.forward(qkv: qkv.value, shape: shape, causal: causal, keep: keep, compute: compute)
        let out = Variable(value, requiresGrad: qkv.requiresGrad)
        return record(out) { [compute] in
            qkv.accumulate(AttentionKernels.backward(out.grad!, qkv: qkv.value, weights: weights, keep: keep, shape: shape, compute: compute))
        }
    }
}

extension Tape {
    /// Rows `range` of `a`; the pullback adds into those rows.
    public func rows(_ a: Variable, _ range: Range<Int>) -> Variable {
        let out = Variable(a.value.rows(range), requiresGrad: a.requiresGrad)
        return record(out) {
            let g = out.grad!, n = a.value.columns
            a.accumulate { grad in
                for k in 0..<g.values.count { grad.values[range.lowerBound * n + k] += g.values[k] }
            }
        }
    }
}

extension Tape {
    /// Additive attention pooling (NARM's and STAMP's): out_b = Σ_t α_tb K_tb with
    /// α_tb = m_tb · vᵀ σ(P_tb + Q_b), keys K and projections P time-major over `steps`, one
    /// query row per sequence, an optional 0/1 mask per key row. No step-sized temporaries.
    public func attentionPool(keys: Variable, projected: Variable, query: Variable, v: Variable, mask: [Float]?, steps: Int) -> Variable {
        let value = AttentionPoolKernels.forward(keys: keys.value, projected: projected.value, query: query.value, v: v.value, mask: mask,
                                                 steps: steps, compute: compute)
        let inputs = [keys, projected, query, v]
        let out = Variable(value, requiresGrad: inputs.contains { $0.requiresGrad })
        return record(out) { [compute] in
            let g = AttentionPoolKernels.backward(out.grad!, keys: keys.value, projected: projected.value, query: query.value, v: v.value,
                                                  mask: mask, steps: steps, compute: compute)
            for (input, grad) in zip(inputs, [g.keys, g.projected, g.query, g.v]) where input.requiresGrad { input.accumulate(grad) }
        }
    }
}

extension Tape {
    /// Dot-product attention pooling with one query row per sequence (SHAN's):
    /// out_b = Σ_t α_tb K_tb with α_tb = softmax_t(S_tb · Q_b) over the unmasked steps, keys K
    /// and scored rows S time-major over `steps`, an optional 0/1 mask per step row (every step
    /// masked: the uniform distribution, as `softmaxSteps`). No step-sized temporaries.
    public func dotAttentionPool(keys: Variable, scored: Variable, query: Variable, mask: [Float]?, steps: Int) -> Variable {
        precondition(steps > 0 && keys.value.rows == steps * query.value.rows && scored.value.rows == keys.value.rows
                     && scored.value.columns == query.value.columns && mask.map { $0.count == keys.value.rows } ?? true,
                     "dotAttentionPool: shapes do not match")
        let (value, weights) = DotAttentionPoolKernels.forward(keys: keys.value, scored: scored.value, query: query.value, mask: mask,
                                                               steps: steps, compute: compute)
        let inputs = [keys, scored, query]
        let out = Variable(value, requiresGrad: inputs.contains { $0.requiresGrad })
        return record(out) { [compute] in
            let g = DotAttentionPoolKernels.backward(out.grad!, keys: keys.value, scored: scored.value, query: query.value, weights: weights,
                                                     mask: mask, steps: steps, compute: compute)
            for (input, grad) in zip(inputs, [g.keys, g.scored, g.query]) where input.requiresGrad { input.accumulate(grad) }
        }
    }
}

extension Tape {
    /// Additive attention weights (RepeatNet's): α_tb = softmax_t(m_tb · vᵀ tanh(K_tb + Q_b)) over the
    /// unmasked steps, keys K time-major over `steps`, one query row per sequence, v (H × 1); an
    /// optional 0/1 mask per step row (every step masked: the uniform distribution, as
    /// `softmaxSteps`). No step-sized temporaries: with `keysDropout`, the keys are dropped out as
    /// they are read (`dropout(keys)` without the dropped copy; the same bits).
    public func additiveAttention(keys: Variable, query: Variable, v: Variable, mask: [Float]?, steps: Int,
                                  keysDropout: DropoutMask? = nil) -> Variable {
        precondition(steps > 0 && keys.value.rows == steps * query.value.rows && keys.value.columns == query.value.columns
                     && v.value.rows == query.value.columns && v.value.columns == 1 && mask.map { $0.count == keys.value.rows } ?? true,
                     "additiveAttention: shapes do not match")
        let alpha = AdditiveAttentionKernels.forward(keys: keys.value, query: query.value, v: v.value, mask: mask, steps: steps,
                                                     keysDropout: keysDropout, compute: compute)
        let inputs = [keys, query, v]
        let out = Variable(alpha, requiresGrad: inputs.contains { $0.requiresGrad })
        return record(out) { [compute] in
            let g = AdditiveAttentionKernels.backward(out.grad!, alpha: alpha, keys: keys.value, query: query.value, v: v.value, mask: mask,
                                                      steps: steps, keysDropout: keysDropout, compute: compute)
            for (input, grad) in zip(inputs, [g.keys, g.query, g.v]) where input.requiresGrad { input.accumulate(grad) }
        }
    }
}
