import Foundation
import RecBenchCore
import Linalg
import Autodiff

/// Plain, unfused ops that exist only as references for the fused ones the models use
/// (`multinomialLogLikelihood` = `sparseRowDot(logSoftmaxRows(a), x)`).
extension Tape {
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
