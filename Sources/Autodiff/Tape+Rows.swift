import Foundation
import Linalg

/// Row-wise operations on short rows (embeddings, per-item category logits): each row
/// normalised, soft-maxed or scaled on its own.
extension Tape {
    /// Each row divided by its L2 norm, or by `eps` when the norm is smaller (torch's
    /// `F.normalize(dim=1)`). The pullback of a row with norm ρ > eps is (g − y·(y·g)) / ρ.
    public func normalizeRows(_ a: Variable, eps: Float = 1e-12) -> Variable {
        let norms = RowKernels.rowDot(a.value, a.value).values.map { $0.squareRoot() }
        let inverse = Matrix(rows: norms.count, columns: 1, values: norms.map { 1 / max($0, eps) })
        let out = Variable(RowKernels.scaleRows(a.value, by: inverse), requiresGrad: a.requiresGrad)
        return record(out) {
            let g = out.grad!
            // Rows clamped at eps are a plain scaling: their projection term is dropped.
            var along = RowKernels.rowDot(out.value, g)
            for r in 0..<norms.count where norms[r] <= eps { along.values[r] = 0 }
            let projected = g.zipMap(RowKernels.scaleRows(out.value, by: along), self.compute) { $0 - $1 }
            a.accumulate(RowKernels.scaleRows(projected, by: inverse))
        }
    }

    /// log softmax of each row: a[r, j] − log Σ_k exp(a[r, k]). The pullback is
    /// g − softmax · Σ_k g[r, k].
    public func logSoftmaxRows(_ a: Variable) -> Variable {
        let rows = a.value.rows, n = a.value.columns
        var value = a.value
        for r in 0..<rows {
            let row = a.value.values[r * n..<(r + 1) * n]
            let top = row.max() ?? 0
            let total = row.reduce(Float(0)) { $0 + Foundation.exp($1 - top) }
            let shift = top + Foundation.log(total)
            for j in 0..<n { value.values[r * n + j] -= shift }
        }
        let out = Variable(value, requiresGrad: a.requiresGrad)
        return record(out) {
            let g = out.grad!
            var d = g
            for r in 0..<rows {
                let total = g.values[r * n..<(r + 1) * n].reduce(0, +)
                for j in 0..<n { d.values[r * n + j] -= Foundation.exp(out.value.values[r * n + j]) * total }
            }
            a.accumulate(d)
        }
    }

    /// Row r of a times w[r] for a rows × 1 variable w (a learned weight per row).
    public func scaleRows(_ a: Variable, by w: Variable) -> Variable {
        precondition(w.value.values.count == a.value.rows, "scaleRows: one weight per row")
        let out = Variable(RowKernels.scaleRows(a.value, by: w.value), requiresGrad: a.requiresGrad || w.requiresGrad)
        return record(out) {
            let g = out.grad!
            if a.requiresGrad { a.accumulate(RowKernels.scaleRows(g, by: w.value)) }
            if w.requiresGrad { w.accumulate(RowKernels.rowDot(g, a.value)) }
        }
    }

    /// xDeepFM's CIN layer, relu((x ⊗ x₀) · W + b) with row r of x ⊗ x₀ the outer product of x's
    /// row and x₀'s (column h · F + m = x[r, h] · x₀[r, m]), as one op: the outer products are
    /// built in cache a block of rows at a time and never stored (`CINKernels`).
    public func compressedInteraction(_ x: Variable, _ x0: Variable, weight w: Variable, bias b: Variable) -> Variable {
        let compute = self.compute
        let value = CINKernels.forward(x.value, x0.value, weight: w.value, bias: b.value, compute: compute)
        let out = Variable(value, requiresGrad: [x, x0, w, b].contains { $0.requiresGrad })
        return record(out) {
            let d = CINKernels.backward(out.grad!, output: out.value, x.value, x0.value, weight: w.value, inputs: (x.requiresGrad, x0.requiresGrad),
                                        weight: w.requiresGrad, bias: b.requiresGrad, compute: compute)
            if let dx = d.x { x.accumulate(dx) }
            if let dx0 = d.x0 { x0.accumulate(dx0) }
            if w.requiresGrad { w.accumulate(d.weight!) }
            if b.requiresGrad { b.accumulate(d.bias!) }
        }
    }

    /// aᵀ.
    public func transpose(_ a: Variable) -> Variable {
        let out = Variable(a.value.transposed(), requiresGrad: a.requiresGrad)
        return record(out) { a.accumulate(out.grad!.transposed()) }
    }
}

extension Tape {
    /// The same values read as a rows × columns matrix (row-major order kept): k consecutive
    /// rows of width c become one row of width k·c, or the reverse.
    public func reshaped(_ a: Variable, rows: Int, columns: Int) -> Variable {
        precondition(rows * columns == a.value.values.count, "reshaped: \(a.value.rows)×\(a.value.columns) has no \(rows)×\(columns) view")
        let out = Variable(Matrix(rows: rows, columns: columns, values: a.value.values), requiresGrad: a.requiresGrad)
        return record(out) { a.accumulate(Matrix(rows: a.value.rows, columns: a.value.columns, values: out.grad!.values)) }
    }
}
