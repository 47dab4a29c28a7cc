import Foundation
import RecBenchCore
import Linalg
import Autodiff

/// Plain, unfused ops that exist only as references for the fused ones the models use
/// (`multinomialLogLikelihood` = `sparseRowDot(logSoftmax(a), x)`).
extension Tape {
    /// Row-wise log-softmax, in Double.
    func logSoftmax(_ a: Variable) -> Variable {
        let rows = a.value.rows, n = a.value.columns
        var value = a.value
        for r in 0..<rows {
            var top = -Float.infinity
            for j in 0..<n { top = max(top, value.values[r * n + j]) }
            var s = 0.0
            for j in 0..<n { s += Foundation.exp(Double(value.values[r * n + j] - top)) }
            let lse = top + Float(Foundation.log(s))
            for j in 0..<n { value.values[r * n + j] -= lse }
        }
        let out = Variable(value, requiresGrad: a.requiresGrad)
        return record(out) {
            let g = out.grad!
            var d = g
            for r in 0..<rows {
                var s = 0.0
                for j in 0..<n { s += Double(g.values[r * n + j]) }
                for j in 0..<n { d.values[r * n + j] -= Float(s) * Foundation.exp(out.value.values[r * n + j]) }
            }
            a.accumulate(d)
        }
    }

    /// Σ_j a[r, j] · x[r, j] for a constant sparse x: rows × 1.
    func sparseRowDot(_ a: Variable, _ x: SparseMatrix) -> Variable {
        let n = a.value.columns
        var value = Matrix(rows: x.rows, columns: 1)
        for r in 0..<x.rows {
            var s = 0.0
            for e in x.entries(ofRow: r) { s += Double(a.value.values[r * n + Int(x.columnIndices[e])] * x.values[e]) }
            value.values[r] = Float(s)
        }
        let out = Variable(value, requiresGrad: a.requiresGrad)
        return record(out) {
            let g = out.grad!
            a.accumulate { grad in
                for r in 0..<x.rows { for e in x.entries(ofRow: r) { grad.values[r * n + Int(x.columnIndices[e])] += g.values[r] * x.values[e] } }
            }
        }
    }
}
