import Foundation
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// Paired tests across users between two models' per-user values of one metric.
public enum Significance {
    /// A paired test's outcome.
    public struct Outcome: Sendable, Codable, Equatable {
        /// The test statistic (t, or Wilcoxon's W = min(W+, W−)).
        public let statistic: Double
        /// Two-sided p-value (before any multiple-testing correction).
        public let p: Double
        /// Effect size: Cohen's d_z = mean(d)/sd(d) for t; r = z/√n for Wilcoxon (signed by
        /// the direction of the difference).
        public let effect: Double
        /// Mean of a − b.
        public let meanDifference: Double
        /// Pairs used (Wilcoxon drops zero differences).
        public let n: Int
    }

    /// Paired two-sided Student t-test on a − b.
    public static func pairedTTest(_ a: [Double], _ b: [Double]) -> Outcome {
        precondition(a.count == b.count, "pairedTTest: unequal lengths")
        let d = zip(a, b).map { $0 - $1 }
        let n = Double(d.count)
        guard d.count >= 2 else { return Outcome(statistic: 0, p: 1, effect: 0, meanDifference: d.first ?? 0, n: d.count) }
        let mean = d.reduce(0, +) / n
        let variance = d.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / (n - 1)
        let sd = variance.squareRoot()
        guard sd > 0 else {
            return Outcome(statistic: mean == 0 ? 0 : .infinity, p: mean == 0 ? 1 : 0, effect: 0, meanDifference: mean, n: d.count)
        }
        let t = mean / (sd / n.squareRoot())
        let df = n - 1
        let p = regularizedIncompleteBeta(x: df / (df + t * t), a: df / 2, b: 0.5)
        return Outcome(statistic: t, p: min(1, p), effect: mean / sd, meanDifference: mean, n: d.count)
    }

    /// Wilcoxon signed-rank test on a − b: zero differences dropped, average ranks for ties,
    /// normal approximation with the tie-corrected variance and no continuity correction
    /// (SciPy's `method='approx', correction=False, zero_method='wilcox'`).
    public static func wilcoxon(_ a: [Double], _ b: [Double]) -> Outcome {
        precondition(a.count == b.count, "wilcoxon: unequal lengths")
        let all = zip(a, b).map { $0 - $1 }
        let d = all.filter { $0 != 0 }
        let meanDifference = all.isEmpty ? 0 : all.reduce(0, +) / Double(all.count)
        guard !d.isEmpty else { return Outcome(statistic: 0, p: 1, effect: 0, meanDifference: meanDifference, n: 0) }
        let order = d.indices.sorted { abs(d[$0]) < abs(d[$1]) }
        var ranks = [Double](repeating: 0, count: d.count)
        var tieTerm = 0.0
        var i = 0
        while i < order.count {
            var j = i
            while j + 1 < order.count && abs(d[order[j + 1]]) == abs(d[order[i]]) { j += 1 }
            let rank = Double(i + j + 2) / 2
            for k in i...j { ranks[order[k]] = rank }
            let t = Double(j - i + 1)
            tieTerm += t * t * t - t
            i = j + 1
        }
        let plus = d.indices.filter { d[$0] > 0 }.reduce(0.0) { $0 + ranks[$1] }
        let n = Double(d.count)
        let total = n * (n + 1) / 2
        let mean = n * (n + 1) / 4
        let variance = n * (n + 1) * (2 * n + 1) / 24 - tieTerm / 48
        let z = variance > 0 ? (plus - mean) / variance.squareRoot() : 0
        let p = erfc(abs(z) / 2.0.squareRoot())
        return Outcome(statistic: min(plus, total - plus), p: min(1, p), effect: z / n.squareRoot(), meanDifference: meanDifference, n: d.count)
    }

    /// Multiple-testing corrections.
    public enum Correction: String, Sendable, CaseIterable, Codable {
        case holm, bonferroni, none
    }

    /// Adjusted p-values, in the input order.
    public static func adjust(_ p: [Double], by correction: Correction) -> [Double] {
        let m = Double(p.count)
        switch correction {
        case .none: return p
        case .bonferroni: return p.map { min(1, $0 * m) }
        case .holm:
            var adjusted = [Double](repeating: 0, count: p.count)
            var running = 0.0
            for (rank, index) in p.indices.sorted(by: { p[$0] < p[$1] }).enumerated() {
                running = max(running, min(1, (m - Double(rank)) * p[index]))
                adjusted[index] = running
            }
            return adjusted
        }
    }

    /// I_x(a, b), by the continued fraction (modified Lentz), using the symmetry relation
    /// where it converges faster.
    static func regularizedIncompleteBeta(x: Double, a: Double, b: Double) -> Double {
        if x <= 0 { return 0 }
        if x >= 1 { return 1 }
        let logGammas: Double = lgamma(a + b) - lgamma(a) - lgamma(b)
        let logPowers: Double = a * log(x) + b * log(1 - x)
        let front = exp(logGammas + logPowers)
        if x > (a + 1) / (a + b + 2) { return 1 - regularizedIncompleteBeta(x: 1 - x, a: b, b: a) }
        let tiny = 1e-300
        var c = 1.0, d = 1 - (a + b) * x / (a + 1)
        if abs(d) < tiny { d = tiny }
        d = 1 / d
        var f = d
        for m in 1...300 {
            let m = Double(m)
            let evenDenominator: Double = (a + 2 * m - 1) * (a + 2 * m)
            let even: Double = m * (b - m) * x / evenDenominator
            d = 1 + even * d; if abs(d) < tiny { d = tiny }
            c = 1 + even / c; if abs(c) < tiny { c = tiny }
            d = 1 / d; f *= d * c
            let oddDenominator: Double = (a + 2 * m) * (a + 2 * m + 1)
            let odd: Double = -(a + m) * (a + b + m) * x / oddDenominator
            d = 1 + odd * d; if abs(d) < tiny { d = tiny }
            c = 1 + odd / c; if abs(c) < tiny { c = tiny }
            d = 1 / d
            let delta = d * c
            f *= delta
            if abs(delta - 1) < 1e-15 { break }
        }
        return front * f / a
    }
}
