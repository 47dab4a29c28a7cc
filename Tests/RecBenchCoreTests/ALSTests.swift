import Foundation
import Logging
import Testing
import RecBenchCore
import Linalg

/// ALS's solves against the normal equations they solve, computed here in Double.
@Suite struct ALSTests {
    func fitted(_ overrides: [String: ConfigValue]) throws -> (ALS, TrainingData) {
        let (split, d) = try blockFixture()
        let data = TrainingData(dataset: d, split: split)
        var model = try Fixtures.model(ALS.self, overrides)
        try model.fit(data, context: FitContext(seed: 4, compute: Compute(threads: 2), logger: Logger(label: "test")))
        return (model, data)
    }

    /// The largest relative residual of (XᵀC_iX + λI) y_i = XᵀC_i p_i over items: the last
    /// half-step solved for the item factors against the final user factors.
    func itemResidual(_ model: ALS, _ data: TrainingData, alpha: Double, lambda: Double) -> Double {
        let x = model.userFactors, y = model.itemFactors, f = x.columns
        let byItem = data.trainMatrix.transposed()
        var worst = 0.0
        for i in 0..<y.rows {
            var a = [Double](repeating: 0, count: f * f), b = [Double](repeating: 0, count: f)
            for u in 0..<x.rows {
                let c = 1 + alpha * Double(byItem[i, u])
                let observed = byItem[i, u] > 0
                for r in 0..<f {
                    let xr = Double(x[u, r])
                    if observed { b[r] += c * xr }
                    for s in 0..<f { a[r * f + s] += c * xr * Double(x[u, s]) }
                }
            }
            for r in 0..<f { a[r * f + r] += lambda }
            for r in 0..<f {
                let ay = (0..<f).reduce(0.0) { $0 + a[r * f + $1] * Double(y[i, $1]) }
                worst = max(worst, abs(ay - b[r]) / max(1, abs(b[r])))
            }
        }
        return worst
    }

    /// ml-100k's 2,625 rows: the exact solve at 4,096 factors (≈ 900 TFLOP over 15 iterations) is
    /// announced; at the default 64 factors, or by conjugate gradient, it is not.
    @Test func anHoursLongExactSolveIsAnnounced() throws {
        let big = try Fixtures.model(ALS.self, ["factors": .int(4096), "use_cg": .bool(false)])
        #expect(big.exactSolveNotice(rows: 2625)?.contains("TFLOP over 15 iterations") == true)
        #expect(try Fixtures.model(ALS.self, ["use_cg": .bool(false)]).exactSolveNotice(rows: 2625) == nil)
        #expect(try Fixtures.model(ALS.self, ["factors": .int(4096)]).exactSolveNotice(rows: 2625) == nil)
    }

    @Test func theExactSolveSatisfiesTheNormalEquations() throws {
        let (model, data) = try fitted(["factors": .int(5), "use_cg": .bool(false), "iterations": .int(3), "alpha": .double(2), "regularization": .double(0.1)])
        #expect(itemResidual(model, data, alpha: 2, lambda: 0.1) < 1e-3)
    }

    @Test func conjugateGradientConvergesToTheExactSolve() throws {
        // CG on an f × f system is exact after f steps (in exact arithmetic); 3 steps are not.
        let converged = try fitted(["factors": .int(5), "cg_steps": .int(5), "iterations": .int(3), "alpha": .double(2), "regularization": .double(0.1)])
        #expect(itemResidual(converged.0, converged.1, alpha: 2, lambda: 0.1) < 1e-3)
        let short = try fitted(["factors": .int(5), "cg_steps": .int(1), "iterations": .int(3), "alpha": .double(2), "regularization": .double(0.1)])
        #expect(itemResidual(short.0, short.1, alpha: 2, lambda: 0.1) > 1e-3)
    }
}
