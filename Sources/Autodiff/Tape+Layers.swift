import Linalg

/// Products, dense layers, normalisation and embeddings.
extension Tape {
    /// a · b (BLAS sgemm).
    public func matmul(_ a: Variable, _ b: Variable) -> Variable {
        let out = Variable(BLAS.gemm(a.value, b.value, compute: compute), requiresGrad: a.requiresGrad || b.requiresGrad)
        return record(out) {
            let g = out.grad!
            if a.requiresGrad { a.accumulateProduct(g, b.value, transposeB: true) }
            if b.requiresGrad { b.accumulateProduct(a.value, transposeA: true, g) }
        }
    }

    /// x · w + b with the 1 × n b added to every row (a dense layer), by `BLAS.linear`: the
    /// bias never costs a copy of the product and a pass over it.
    public func linear(_ x: Variable, _ w: Variable, _ b: Variable) -> Variable {
        let compute = self.compute
        var value = Matrix(uninitializedRows: x.value.rows, columns: w.value.columns)
        BLAS.linear(x.value, w.value, bias: b.value, into: &value, compute: compute)
        let out = Variable(value, requiresGrad: x.requiresGrad || w.requiresGrad || b.requiresGrad)
        return record(out) {
            let g = out.grad!
            if x.requiresGrad { x.accumulateProduct(g, w.value, transposeB: true) }
            if w.requiresGrad { w.accumulateProduct(x.value, transposeA: true, g) }
            if b.requiresGrad { b.accumulate(g.columnSums(compute)) }
        }
    }

    /// a · x for a constant sparse a whose transpose is given (a itself when symmetric, as a
    /// graph's normalised adjacency): the pullback is aᵀ · g, with no transpose built per call.
    public func matmul(_ a: SparseMatrix, _ x: Variable, transposed aT: SparseMatrix) -> Variable {
        precondition(aT.rows == a.columns && aT.columns == a.rows, "matmul: the transpose has the wrong shape")
        var value = Matrix(uninitializedRows: a.rows, columns: x.value.columns)   // the product writes every row
        a.multiply(rows: Array(0..<Int32(a.rows))[...], by: x.value, into: &value, compute: compute)
        let out = Variable(value, requiresGrad: x.requiresGrad)
        return record(out) { if x.requiresGrad { x.accumulateProduct(aT, out.grad!) } }
    }

    /// (x + A·x + … + Aᴷ·x) / (K + 1) for a constant sparse square A (LightGCN's mean over
    /// propagation layers) as one op: forward, K sparse products, each layer added into the
    /// sum as it is made; backward, the same polynomial in Aᵀ applied to the gradient by
    /// Horner's rule (t ← g/(K+1) + Aᵀ·t, K times), so no layer is kept for the pullback.
    public func propagationMean(_ a: SparseMatrix, _ x: Variable, layers: Int, transposed aT: SparseMatrix) -> Variable {
        precondition(a.rows == a.columns && a.columns == x.value.rows, "propagationMean: \(a.rows)×\(a.columns) graph, \(x.value.rows) rows")
        precondition(aT.rows == a.columns && aT.columns == a.rows, "propagationMean: the transpose has the wrong shape")
        let compute = self.compute, scale = 1 / Float(layers + 1), all = Array(0..<Int32(a.rows))[...]
        var sum = x.value, power = x.value
        for layer in stride(from: 1, through: layers, by: 1) {
            var next = Matrix(uninitializedRows: a.rows, columns: x.value.columns)
            a.multiply(rows: all, by: power, into: &next, compute: compute)
            sum = layer == layers ? sum.zipMap(next, compute) { ($0 + $1) * scale } : sum.zipMap(next, compute) { $0 + $1 }
            power = next
        }
        let out = Variable(sum, requiresGrad: x.requiresGrad)
        return record(out) {
            guard x.requiresGrad else { return }
            let g = out.grad!.map(compute) { $0 * scale }
            var t = g
            for _ in 0..<layers {
                var next = g
                aT.multiply(rows: all, by: t, into: &next, adding: true, compute: compute)
                t = next
            }
            x.accumulate(t)
        }
    }

    /// x · w + b for a constant sparse x (an input layer): the product costs nnz(x)·columns
    /// and so does the weight gradient xᵀ·g, which touches only the rows of w that x uses.
    public func linear(_ x: SparseMatrix, _ w: Variable, _ b: Variable) -> Variable {
        let compute = self.compute
        var value = Matrix(repeatingRow: b.value, count: x.rows, compute: compute)
        x.multiply(rows: Array(0..<Int32(x.rows))[...], by: w.value, into: &value, adding: true, compute: compute)
        let out = Variable(value, requiresGrad: w.requiresGrad || b.requiresGrad)
        return record(out) {
            let g = out.grad!
            if w.requiresGrad { w.accumulateProduct(x.transposed(), g) }   // xᵀ's row c lists the batch rows that have item c
            if b.requiresGrad { b.accumulate(g.columnSums(compute)) }
        }
    }

    /// Row-wise layer normalisation with a learned 1 × n scale and shift (biased variance,
    /// `eps` added to it, as torch's LayerNorm) of a, or of a + keep ⊙ y with `plus` y (a post-LN
    /// transformer's residual step, `keep` its dropout factors), then with `relu` max(0, ·) — one
    /// pass over the rows where the separate ops made three and stored each result.
    public func layerNorm(_ a: Variable, plus y: Variable? = nil, keep: Matrix? = nil, scale gamma: Variable, shift beta: Variable, eps: Float,
                          relu: Bool = false) -> Variable {
        precondition(keep == nil || y != nil, "layerNorm: dropout factors without a residual")
        let compute = self.compute, inputs = [a, gamma, beta] + (y.map { [$0] } ?? [])
        let (value, normalized, inverseStd) = LayerNormKernels.forward(a.value, residual: y.map { ($0.value, keep) }, scale: gamma.value,
                                                                       shift: beta.value, eps: eps, relu: relu, compute: compute)
        let out = Variable(value, requiresGrad: inputs.contains { $0.requiresGrad })
        return record(out) {
            let inputs = a.requiresGrad || y?.requiresGrad == true
            let d = LayerNormKernels.backward(out.grad!, output: relu ? out.value : nil, normalized: normalized, inverseStd: inverseStd,
                                              scale: gamma.value, keep: y?.requiresGrad == true ? keep : nil, inputs: inputs, compute: compute)
            Self.accumulateAffine(d.sums, scale: gamma, shift: beta)
            if a.requiresGrad, let dx = d.dx { a.accumulate(dx) }
            if let y, y.requiresGrad, let dx = d.dx { y.accumulate(d.dy ?? dx) }
        }
    }

    /// A normalisation's scale and shift gradients from its pullback's column sums: Σ g (row 0)
    /// to the shift, Σ g · x̂ (row 1) to the scale.
    static func accumulateAffine(_ sums: Matrix, scale gamma: Variable, shift beta: Variable) {
        if gamma.requiresGrad { gamma.accumulate(sums.rows(1..<2)) }
        if beta.requiresGrad { beta.accumulate(sums.rows(0..<1)) }
    }

    /// Column-wise batch normalisation with a learned 1 × n scale and shift (torch's BatchNorm1d,
    /// `eps` added to the variance). `statistics` nil: the batch's own mean and biased variance,
    /// with gradients through them (training); returned with the unbiased variance, which the
    /// running statistics average. Given: those fixed statistics (evaluation). With `activation`,
    /// f(BN(a)) as one op, the same values as the two: the normalised batch is activated while in
    /// cache and never stored, and the pullback takes f′ from the output inside its own passes.
    public func batchNorm(_ a: Variable, scale gamma: Variable, shift beta: Variable, eps: Float, activation f: PointwiseActivation? = nil,
                          statistics: (mean: Matrix, variance: Matrix)? = nil) -> (output: Variable, mean: Matrix, variance: Matrix) {
        let compute = self.compute, fixed = statistics != nil
        let batch = statistics ?? BatchNormKernels.statistics(a.value, compute: compute)
        let (value, inverseStd) = BatchNormKernels.forward(a.value, mean: batch.mean, variance: batch.variance, scale: gamma.value,
                                                          shift: beta.value, eps: eps, activation: f, compute: compute)
        let normalized = BatchNormKernels.Centered(input: a.value, mean: batch.mean, inverseStd: inverseStd)   // x̂ recomputed, not kept
        let out = Variable(value, requiresGrad: a.requiresGrad || gamma.requiresGrad || beta.requiresGrad)
        let output = record(out) {
            let g = out.grad!, activated = f.map { ($0, out.value) }
            let sums = gamma.requiresGrad || beta.requiresGrad || !fixed   // Σ g; Σ g·x̂
                ? BatchNormKernels.gradientSums(g, normalized: normalized, activation: activated, compute: compute) : Matrix(rows: 2, columns: g.columns)
            Self.accumulateAffine(sums, scale: gamma, shift: beta)
            guard a.requiresGrad else { return }
            if fixed {
                let g = f.map { f in g.zipMap(out.value, compute) { f.pullback($0, output: $1) } } ?? g
                a.accumulate(BatchNormKernels.scaledColumns(g, gamma.value, inverseStd, compute: compute))
            } else {
                a.accumulate(BatchNormKernels.inputGradient(g, input: a.value, mean: batch.mean, inverseStd: inverseStd, scale: gamma.value,
                                                            sums: sums, activation: activated, compute: compute))
            }
        }
        let n = Float(a.value.rows)
        let unbiased = fixed || n < 2
            ? batch.variance : Matrix(rows: 1, columns: batch.variance.columns, values: batch.variance.values.map { $0 * n / (n - 1) })
        return (output, batch.mean, unbiased)
    }

    // Embedding-sized work (a batch of 64-wide rows) runs on the calling thread: waking a
    // worker costs more than the rows do.

    /// Rows `indices` of `table` (an embedding lookup); the gradient scatter-adds back.
    public func gather(_ table: Variable, rows indices: [Int32]) -> Variable {
        let out = Variable(RowKernels.gather(table.value, rows: indices), requiresGrad: table.requiresGrad)
        return record(out) { table.accumulateRows(out.grad!, at: indices) }
    }

    /// Pooled embedding lookups summed over several fields: output row r is
    /// Σ_f bags_f[rows_f[r], :] · table (each bags row holds the table rows an entity pools, with
    /// their weights). No per-batch matrix is built; the gradient scatter-adds back.
    public func pooledLookup(_ table: Variable, _ lookups: [PooledLookup]) -> Variable {
        let out = Variable(PoolingKernels.pooled(lookups, by: table.value, sideBySide: false, compute: compute), requiresGrad: table.requiresGrad)
        return record(out) { table.accumulate { grad in PoolingKernels.addPooledGradient(out.grad!, lookups, sideBySide: false, into: &grad) } }
    }

    /// FM's bi-interaction of the pooled field embeddings, ½ ((Σ_f e_f)² − Σ_f e_f²), rows × d
    /// (e_f as `pooledLookup` of field f alone gives it): one op where per-field lookups, squares
    /// and sums took four per field; the pullback scatter-adds g ⊙ (Σ e − e_f) to each bag's rows.
    public func biInteraction(_ table: Variable, _ lookups: [(bags: SparseMatrix, rows: [Int32])]) -> Variable {
        let (value, sum) = PoolingKernels.biInteraction(table.value, lookups, compute: compute)
        let out = Variable(value, requiresGrad: table.requiresGrad)
        return record(out) {
            table.accumulate { grad in PoolingKernels.addBiInteractionGradient(out.grad!, sum: sum, table: table.value, lookups, into: &grad) }
        }
    }

    /// Pooled embedding lookups side by side: output row r is [bags_1[rows_1[r], :] · table | … |
    /// bags_F[rows_F[r], :] · table], rows × F·d, each field's lookup what `pooledLookup` of
    /// that field alone gives, without a concatenation; the pullback scatter-adds each block
    /// back, the last field first (the order separate lookups' pullbacks run in).
    public func pooledLookups(_ table: Variable, sideBySide lookups: [PooledLookup]) -> Variable {
        let out = Variable(PoolingKernels.pooled(lookups, by: table.value, sideBySide: true, compute: compute), requiresGrad: table.requiresGrad)
        return record(out) {
            table.accumulate { grad in PoolingKernels.addPooledGradient(out.grad!, lookups, sideBySide: true, reversed: true, into: &grad) }
        }
    }

    /// Σ over `pairs` of row-wise dots of `width`-wide column slices of `parts`: rows × 1
    /// (field-aware interactions without one slice op per pair).
    public func sliceDots(_ parts: [Variable], _ pairs: [SlicePair], width: Int) -> Variable {
        let values = parts.map(\.value)
        let out = Variable(RowKernels.sliceDots(values, pairs, width: width), requiresGrad: parts.contains { $0.requiresGrad })
        return record(out) {
            let grads = RowKernels.sliceDotGradients(out.grad!, values, pairs, width: width)
            for (part, grad) in zip(parts, grads) where part.requiresGrad { part.accumulate(grad) }
        }
    }

    /// weight · (slice a ⊙ slice b) for each of `pairs`, each slice `width` columns: summed (rows ×
    /// width: FwFM's weighted field pairs) or side by side (`summed` false: rows × pairs·width, AFM's).
    public func sliceProducts(_ parts: [Variable], _ pairs: [SlicePair], width: Int, summed: Bool = true) -> Variable {
        let values = parts.map(\.value), compute = self.compute
        let out = Variable(RowKernels.sliceProducts(values, pairs, width: width, summed: summed, compute: compute),
                           requiresGrad: parts.contains { $0.requiresGrad })
        return record(out) {
            let grads = RowKernels.sliceProductGradients(out.grad!, values, pairs, width: width, summed: summed, compute: compute)
            for (part, grad) in zip(parts, grads) where part.requiresGrad { part.accumulate(grad) }
        }
    }

    /// Σ_j a[ra[r], j] · b[rb[r], j]: the row dots of listed rows of two tables (or one), rows
    /// × 1, without gathering the rows; the pullback scatter-adds g[r] times the other side's
    /// row into each side's gradient (BPR's and LightGCN's scores of a batch).
    public func rowDot(_ a: Variable, rows ra: [Int32], _ b: Variable, rows rb: [Int32]) -> Variable {
        let out = Variable(RowKernels.rowDot(a.value, rows: ra, b.value, rows: rb), requiresGrad: a.requiresGrad || b.requiresGrad)
        return record(out) {
            let g = out.grad!
            if a.requiresGrad { a.accumulate { grad in RowKernels.addScaledRows(of: b.value, rows: rb, by: g, at: ra, into: &grad) } }
            if b.requiresGrad { b.accumulate { grad in RowKernels.addScaledRows(of: a.value, rows: ra, by: g, at: rb, into: &grad) } }
        }
    }

    /// Σ_j a[r, j] · b[r, j]: rows × 1.
    public func rowDot(_ a: Variable, _ b: Variable) -> Variable {
        let out = Variable(RowKernels.rowDot(a.value, b.value), requiresGrad: a.requiresGrad || b.requiresGrad)
        return record(out) {
            if a.requiresGrad { a.accumulate(RowKernels.scaleRows(b.value, by: out.grad!)) }
            if b.requiresGrad { b.accumulate(RowKernels.scaleRows(a.value, by: out.grad!)) }
        }
    }
}
