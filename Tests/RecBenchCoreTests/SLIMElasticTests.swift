import Foundation
import Logging
import Testing
import RecBenchCore
import Linalg

/// SLIMElastic's weights against the elastic net's optimality (KKT) conditions, in Double.
@Suite struct SLIMElasticTests {
    func fitted(_ overrides: [String: ConfigValue]) throws -> (SLIMElastic, SparseMatrix) {
        let (split, d) = try blockFixture()
        var model = try Fixtures.model(SLIMElastic.self, overrides)
        try model.fit(TrainingData(dataset: d, split: split), context: FitContext(seed: 2, compute: Compute(threads: 2), logger: Logger(label: "test")))
        return (model, split.trainMatrix)
    }

    /// The largest violation of the KKT conditions of every item's regression, with
    /// penalties λ₁ = U·α·ρ and λ₂ = U·α·(1 − ρ) (scikit-learn's scaling), w_jj = 0 when hidden:
    /// w_k > 0 ⇒ (Gw)_k − q_k + λ₁ + λ₂w_k = 0;  w_k = 0 ⇒ q_k − (Gw)_k ≤ λ₁ (non-negative weights).
    func violation(_ w: SparseMatrix, _ x: SparseMatrix, alpha: Double, rho: Double, hide: Bool) -> Double {
        let n = x.columns, users = Double(x.rows)
        let l1 = users * alpha * rho, l2 = users * alpha * (1 - rho)
        var g = [Double](repeating: 0, count: n * n)
        for u in 0..<x.rows {
            for a in x.entries(ofRow: u) { for b in x.entries(ofRow: u) {
                g[Int(x.columnIndices[a]) * n + Int(x.columnIndices[b])] += Double(x.values[a] * x.values[b])
            } }
        }
        var worst = 0.0
        for j in 0..<n {
            let column = (0..<n).map { Double(w[$0, j]) }
            for k in 0..<n where !(hide && k == j) && g[k * n + k] > 0 {
                let gw = (0..<n).reduce(0.0) { $0 + g[k * n + $1] * column[$1] }
                let q = g[k * n + j]
                let v = column[k] > 0 ? abs(gw - q + l1 + l2 * column[k]) : max(0, q - gw - l1)
                worst = max(worst, v / max(1, abs(q)))
            }
            if hide { #expect(column[j] == 0) }
            #expect(column.allSatisfy { $0 >= 0 })
        }
        return worst
    }

    @Test func weightsMeetTheOptimalityConditions() throws {
        // A small penalty, so that many weights are active; tol tight enough for 1e-3.
        let (model, x) = try fitted(["alpha": .double(0.05), "l1_ratio": .double(0.5), "tol": .double(1e-7), "max_iter": .int(10_000)])
        #expect(model.weights.nonzeroCount > 20)
        #expect(violation(model.weights, x, alpha: 0.05, rho: 0.5, hide: true) < 1e-3)
        // One sweep is not the optimum.
        let (early, _) = try fitted(["alpha": .double(0.05), "l1_ratio": .double(0.5), "max_iter": .int(1)])
        #expect(violation(early.weights, x, alpha: 0.05, rho: 0.5, hide: true) > 1e-3)
    }
}
