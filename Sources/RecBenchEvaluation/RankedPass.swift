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

    /// The mean of a ranking metric's key ("ndcg@10"), the value the summary reports; nil for
    /// a key the pass has no column of (a list metric, or one not configured).
    public func mean(of key: String) -> Double? {
        let keys = Evaluator.rankingMetrics(settings).flatMap { m in settings.cutoffs.map { MetricKey(m.name, k: $0).description } }
        return keys.firstIndex(of: key).map { table.mean(ofColumn: $0) }
    }

    /// Every metric and analysis of the pass.
    public func summarized() -> EvaluationResult {
        Evaluator.summarize(table, topItems: topItems, target: target, settings: settings, repeatModes: repeatModes, seconds: seconds)
    }
}
