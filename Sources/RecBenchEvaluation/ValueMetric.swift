import Foundation

/// RecBole 1.2.1's value metrics (`eval_args.mode: labeled`): computed once over every labelled
/// row of a split, from the model's probability p = σ(z) and the row's label t, with no per-user
/// grouping and no cutoff, so each key is the lower-cased name (`auc`, `logloss`).
public enum ValueMetric: String, Sendable, CaseIterable {
    case auc = "AUC", logLoss = "LogLoss", mae = "MAE", rmse = "RMSE"

    /// The report key, as RecBole prints it.
    public var key: String { rawValue.lowercased() }

    /// Whether a larger value is better (RecBole's `smaller` flag: every one but AUC is a loss).
    public var biggerIsBetter: Bool { self == .auc }

    /// The metric of a config name or key, any case.
    public init?(named name: String) {
        guard let m = Self.allCases.first(where: { $0.key == name.lowercased() }) else { return nil }
        self = m
    }

    /// The value over `probabilities` and `labels` (equal lengths, at least one row); AUC is nil
    /// when the labels hold one class only (RecBole warns and gives NaN).
    public func value(probabilities p: [Double], labels t: [Float]) -> Double? {
        precondition(p.count == t.count && !p.isEmpty, "ValueMetric: \(p.count) scores for \(t.count) labels")
        switch self {
        case .auc: return Self.auc(scores: p, labels: t)
        case .logLoss:
            // RecBole clips p to [ε, 1 − ε] with ε = 1e-15 and takes the natural logarithm.
            let eps = 1e-15
            return zip(p, t).reduce(0.0) { sum, row in
                let q = min(max(row.0, eps), 1 - eps), y = Double(row.1)
                return sum - (y * Foundation.log(q) + (1 - y) * Foundation.log(1 - q))
            } / Double(p.count)
        case .mae: return zip(p, t).reduce(0.0) { $0 + abs($1.0 - Double($1.1)) } / Double(p.count)
        case .rmse: return (zip(p, t).reduce(0.0) { $0 + ($1.0 - Double($1.1)) * ($1.0 - Double($1.1)) } / Double(p.count)).squareRoot()
        }
    }

    /// The area under the ROC curve of the rows labelled 1 (RecBole's `trues == 1`) against the
    /// rest: the share of (positive, negative) pairs whose positive scores higher, a tie counting
    /// half — what RecBole's trapezoids over the distinct scores give.
    static func auc(scores: [Double], labels: [Float]) -> Double? {
        let order = scores.indices.sorted { scores[$0] < scores[$1] }
        var wins = 0.0, negativesBelow = 0.0, positives = 0.0
        var start = 0
        while start < order.count {
            var end = start, p = 0.0, n = 0.0
            while end < order.count && scores[order[end]] == scores[order[start]] {
                if labels[order[end]] == 1 { p += 1 } else { n += 1 }
                end += 1
            }
            wins += p * negativesBelow + 0.5 * p * n
            negativesBelow += n
            positives += p
            start = end
        }
        guard positives > 0, negativesBelow > 0 else { return nil }
        return wins / (positives * negativesBelow)
    }
}
