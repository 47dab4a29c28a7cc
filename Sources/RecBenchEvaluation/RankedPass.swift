import Foundation

/// One evaluation pass scored and ranked but not yet summarised. A fit's validation keeps the
/// pass of its best epoch this way, and the run's valid result is that pass summarised instead
/// of a second pass over the same parameters; summarising every epoch's pass would cost a
/// millisecond-scale share of a fast model's validation.
public struct RankedPass: Sendable {
    let table: RankingTable
    let topItems: [Int32]
    /// Each row's P(repeat) from a repeat-aware model, when the settings read them.
    let repeatModes: [Float]?
    let target: EvaluationTarget
    let settings: EvaluationSettings
    /// Seconds spent scoring and ranking.
    let seconds: Double

    /// Rows whose scores held NaN or +∞ (a diverged model).
    public var nonFiniteRows: Int { table.nonFiniteRows }

    /// The value the summary reports for `key` ("ndcg@10", "giniindex@10"), computed alone; nil
    /// for a key the pass cannot give (an unknown metric, or a ranking metric not configured).
    public func value(of key: String) -> Double? {
        if key == GAUC.key && settings.computesGAUC {
            return Evaluator.gauc(table, settings: settings, target: target)
        }
        guard let parsed = MetricKey(parsing: key) else { return nil }
        if let column = Evaluator.rankingKeys(settings).firstIndex(of: parsed) { return table.mean(ofColumn: column) }
        return Evaluator.listValue(parsed.name, k: parsed.k, topItems: topItems, width: settings.cutoffs.max()!, target: target, settings: settings)
    }

    /// Every metric and analysis of the pass.
    public func summarized() -> EvaluationResult {
        Evaluator.summarize(table, topItems: topItems, target: target, settings: settings, repeatModes: repeatModes, seconds: seconds)
    }
}
