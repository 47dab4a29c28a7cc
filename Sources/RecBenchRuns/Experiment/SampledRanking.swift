import Linalg
import RecBenchSupport
import RecBenchData
import RecBenchContract
import RecBenchEvaluation
import RecBenchModels

/// RecBole's sampled ranking (`eval_args.mode: uniN` or `popN`, its `NegSampleEvalDataLoader`):
/// each positive of a row brings N draws, uniform or by popularity (`NegativeItems`), and the
/// row ranks its positives among those items alone. A user row draws among the items the user
/// has had in no split up to this one (RecBole's `Sampler` phases); a next-item row among items
/// other than its own (RecBole's repeatable sampler). Draws are made once per split from the
/// run's seed, so every validation ranks the same candidates (RecBole draws valid's anew each epoch).
package enum SampledRanking {
    /// `target` ranked as `mode` says (unchanged under full ranking).
    package static func ranked(_ target: EvaluationTarget, mode: RankingMode?, plan: ExperimentPlan, data: TrainingData) -> EvaluationTarget {
        guard case .sampled(let n, let byPopularity)? = mode else { return target }
        let items = byPopularity ? NegativeItems(plan.training.popularityDraws, data: data) : .uniform
        return target.rankedAmong(candidates(target, negatives: n, from: items, seed: plan.seed))
    }

    /// Per row, its positives and each positive's `n` draws.
    package static func candidates(_ target: EvaluationTarget, negatives n: Int, from items: NegativeItems, seed: UInt64) -> SparseMatrix {
        var rng = SeededGenerator(seed: seed, stream: 0x5A3D << 8 | UInt64(target.part.rawValue))
        let positives = target.positives
        let used = target.evaluationProtocol == .nextItem ? nil : PatternSet(target.history.union(positives))
        var rows: [Int32] = [], columns: [Int32] = []
        for r in target.users {
            for item in positives.columns(ofRow: Int(r)) {
                let drawn = used.map { used in (0..<n).map { _ in items.draw(for: Int(r), history: used, rng: &rng) } }
                    ?? items.draw(otherThan: Array(repeating: item, count: n), items: target.itemCount, rng: &rng)
                rows.append(contentsOf: Array(repeating: r, count: n + 1))
                columns.append(item)
                columns.append(contentsOf: drawn)
            }
        }
        return SparseMatrix(rows: positives.rows, columns: target.itemCount, rowIndices: rows, columnIndices: columns).binarized()
    }

    /// The note a sampled mode brings (nil under full ranking).
    package static func notice(_ modes: [SplitPart: RankingMode]) -> String? {
        guard modes.values.contains(where: { $0 != .full }) else { return nil }
        return "eval_args.mode valid \(modes[.valid]!), test \(modes[.test]!): a sampled split ranks each row's positives among N drawn items per "
            + "positive, as RecBole's sampled evaluation does; history_mask does not apply there, and sampled metrics can order models "
            + "otherwise than full ranking (Krichene and Rendle, KDD 2020)"
    }
}
