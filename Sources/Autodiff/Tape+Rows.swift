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

    /// Each row's outer product of a's row and b's, flattened: out[r, h · m + j] = a[r, h] · b[r, j]
    /// for m = b's columns (xDeepFM's CIN, channel h · m + j).
    public func rowOuter(_ a: Variable, _ b: Variable) -> Variable {
        let rows = a.value.rows, ha = a.value.columns, hb = b.value.columns
        precondition(b.value.rows == rows, "rowOuter: row counts differ")
        var value = Matrix(uninitializedRows: rows, columns: ha * hb)
        for r in 0..<rows {
            for h in 0..<ha {
                let x = a.value.values[r * ha + h]
                for j in 0..<hb { value.values[(r * ha + h) * hb + j] = x * b.value.values[r * hb + j] }
            }
        }
        let out = Variable(value, requiresGrad: a.requiresGrad || b.requiresGrad)
        return record(out) {
            let g = out.grad!
            var ga = Matrix(rows: a.requiresGrad ? rows : 0, columns: ha), gb = Matrix(rows: b.requiresGrad ? rows : 0, columns: hb)
            for r in 0..<rows {
                for h in 0..<ha {
                    let x = a.value.values[r * ha + h], base = (r * ha + h) * hb
                    var dot: Float = 0
                    for j in 0..<hb {
                        dot += g.values[base + j] * b.value.values[r * hb + j]
                        if b.requiresGrad { gb.values[r * hb + j] += g.values[base + j] * x }
                    }
                    if a.requiresGrad { ga.values[r * ha + h] = dot }
                }
            }
            if a.requiresGrad { a.accumulate(ga) }
            if b.requiresGrad { b.accumulate(gb) }
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
