import Linalg

/// Likelihoods and densities the models' losses are built from.
extension Tape {
    /// Σ_j x[r, j] · log softmax(a)[r, j] for a constant sparse x: rows × 1 (the multinomial
    /// log-likelihood of a user's items), without the rows × n log-softmax matrix. The
    /// forward keeps e^{a − max_r}, which the pullback scales into the gradient in place, so
    /// each element's exponential is computed once.
    public func multinomialLogLikelihood(_ a: Variable, _ x: SparseMatrix) -> Variable {
        precondition(x.rows == a.value.rows && x.columns == a.value.columns, "multinomialLogLikelihood: shapes differ")
        let compute = self.compute
        var (value, exponentials, rowSums) = MultinomialKernels.forward(a.value, x, compute: compute)
        let out = Variable(value, requiresGrad: a.requiresGrad)
        return record(out) {
            MultinomialKernels.gradient(out.grad!, x, exponentials: &exponentials, rowSums: rowSums, compute: compute)
            a.accumulate(exponentials)
            exponentials = Matrix(rows: 0, columns: 0)   // the gradient now owns the buffer
        }
    }

    /// The Gaussian log-density log N(x; μ, exp(logvar)), elementwise.
    public func logNormalDensity(_ x: Variable, mean mu: Variable, logVariance lv: Variable) -> Variable {
        let n = x.value.values.count
        precondition(mu.value.values.count == n && lv.value.values.count == n, "logNormalDensity: shapes differ")
        let compute = self.compute
        let (value, scaled) = GaussianKernels.logDensity(x.value, mean: mu.value, logVariance: lv.value, compute: compute)
        let out = Variable(value, requiresGrad: x.requiresGrad || mu.requiresGrad || lv.requiresGrad)
        return record(out) {
            let (dx, dl) = GaussianKernels.gradients(out.grad!, scaled: scaled, x: x.value, mean: mu.value, compute: compute)
            if x.requiresGrad { x.accumulate(dx) }
            if mu.requiresGrad { mu.accumulate(dx.map(compute) { -$0 }) }
            if lv.requiresGrad { lv.accumulate(dl) }
        }
    }

    /// log Σ_i exp(terms[i]), elementwise over same-shaped terms. The forward keeps each
    /// term's share exp(t_i − lse), so the pullback is one product per element, no exp.
    public func logSumExp(_ terms: [Variable]) -> Variable {
        let compute = self.compute, needsGrad = terms.contains { $0.requiresGrad }
        let (value, weights) = GaussianKernels.logSumExp(terms.map(\.value), weights: needsGrad, compute: compute)
        let out = Variable(value, requiresGrad: needsGrad)
        return record(out) {
            let g = out.grad!
            for (t, w) in zip(terms, weights) where t.requiresGrad { t.accumulate(g.zipMap(w, compute) { $0 * $1 }) }
        }
    }

    /// ‖table[rows]‖, the norm of the listed rows (repeats counted) without gathering them
    /// (LightGCN's penalty on a batch's embeddings): 1 × 1; the pullback adds row / ‖·‖ to
    /// each listed row of the table's gradient, once per listing.
    public func norm(_ table: Variable, rows indices: [Int32]) -> Variable {
        let n = RowKernels.sumOfSquares(rows: indices, of: table.value).squareRoot()
        let out = Variable(Matrix(rows: 1, columns: 1, values: [n]), requiresGrad: table.requiresGrad)
        return record(out) {
            let scale = n > 0 ? out.grad!.values[0] / n : 0
            table.accumulate { grad in RowKernels.addScaledRows(of: table.value, at: indices, scale: scale, into: &grad) }
        }
    }

    /// ‖a‖ (Frobenius): 1 × 1; the gradient is a / ‖a‖ (0 at a = 0).
    public func norm(_ a: Variable) -> Variable {
        let n = a.value.sumOfSquares.squareRoot()
        let out = Variable(Matrix(rows: 1, columns: 1, values: [n]), requiresGrad: a.requiresGrad)
        return record(out) {
            let scale = n > 0 ? out.grad!.values[0] / n : 0
            a.accumulate(a.value.map(self.compute) { $0 * scale })
        }
    }
}

extension Tape {
    /// Binary cross-entropy of logits against 0/1 labels, averaged (torch's BCE on σ(z)).
    public func binaryCrossEntropy(logits z: Variable, labels: [Float]) -> Variable {
        affine(mean(logSigmoid(scaleRows(z, by: labels.map { $0 > 0.5 ? 1 : -1 }))), scale: -1)
    }
}

extension Tape {
    /// Σ over every entry of BCE-with-logits(z, x) for a constant sparse 0/1 target x (absent
    /// entries are 0): Σ softplus(z) − Σ_{x = 1} z, 1 × 1, without a dense target. The
    /// gradient is σ(z) − x (CDAE's summed reconstruction loss).
    public func binaryCrossEntropySum(logits z: Variable, targets x: SparseMatrix) -> Variable {
        precondition(x.rows == z.value.rows && x.columns == z.value.columns, "binaryCrossEntropySum: shapes differ")
        let compute = self.compute
        // softplus(z) = max(z, 0) + log(1 + e^{−|z|}); e^{−|z|} ≤ 1, so the log's argument stays in [1, 2].
        let softplus = z.value.map(compute) { v in Lanes.relu(v) + Lanes.log(1 + Lanes.exp(Lanes.maximum(v, -v) * -1)) }
        var total = softplus.values.reduce(0.0) { $0 + Double($1) }
        let columns = z.value.columns
        for r in 0..<x.rows { for e in x.entries(ofRow: r) { total -= Double(z.value.values[r * columns + Int(x.columnIndices[e])]) } }
        let out = Variable(Matrix(rows: 1, columns: 1, values: [Float(total)]), requiresGrad: z.requiresGrad)
        return record(out) {
            let g = out.grad!.values[0]
            var grad = z.value.map(compute) { Lanes.sigmoid($0) * g }
            for r in 0..<x.rows { for e in x.entries(ofRow: r) { grad.values[r * columns + Int(x.columnIndices[e])] -= g } }
            z.accumulate(grad)
        }
    }
}

extension Tape {
    /// Σ |a| (entry-wise L1): 1 × 1; the gradient is sign(a) (0 at 0).
    public func absoluteSum(_ a: Variable) -> Variable {
        let total = a.value.values.reduce(0.0) { $0 + Double(abs($1)) }
        let out = Variable(Matrix(rows: 1, columns: 1, values: [Float(total)]), requiresGrad: a.requiresGrad)
        return record(out) {
            let g = out.grad!.values[0]
            a.accumulate(a.value.map(self.compute) { v in Lanes(repeating: 0).replacing(with: g, where: v .> 0).replacing(with: -g, where: v .< 0) })
        }
    }

    /// Σ over every entry of (y − x)² for a constant sparse x (absent entries are 0): 1 × 1,
    /// gradient 2(y − x) (CDAE's MSE reconstruction loss).
    public func squaredErrorSum(_ y: Variable, targets x: SparseMatrix) -> Variable {
        precondition(x.rows == y.value.rows && x.columns == y.value.columns, "squaredErrorSum: shapes differ")
        let columns = y.value.columns
        var residual = y.value
        for r in 0..<x.rows { for e in x.entries(ofRow: r) { residual.values[r * columns + Int(x.columnIndices[e])] -= x.values[e] } }
        let total = residual.values.reduce(0.0) { $0 + Double($1) * Double($1) }
        let out = Variable(Matrix(rows: 1, columns: 1, values: [Float(total)]), requiresGrad: y.requiresGrad)
        return record(out) {
            let g = 2 * out.grad!.values[0]
            y.accumulate(residual.map(self.compute) { $0 * g })
        }
    }
}
