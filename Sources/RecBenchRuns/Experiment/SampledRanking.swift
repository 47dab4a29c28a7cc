import Linalg
import RecBenchSupport
import RecBenchData
import RecBenchContract
import RecBenchEvaluation
import RecBenchModels

/// RecBole's sampled ranking (`eval_args.mode: uniN` or `popN`, its `NegSampleEvalDataLoader`):
/// each positive interaction of a row brings N draws, uniform or by popularity (`NegativeItems`), and the
/// row ranks its positives among those items alone. A user row draws among the items the user
/// has had in no split up to this one (RecBole's `Sampler` phases); a next-item row among items
/// other than its own (RecBole's repeatable sampler). Draws are made once per split from the
/// run's seed, so every validation ranks the same candidates (RecBole draws valid's anew each epoch).
package enum SampledRanking {
    /// `target` ranked as `mode` says (unchanged under full ranking).
    package static func ranked(_ target: EvaluationTarget, mode: RankingMode?, plan: ExperimentPlan, data: TrainingData) throws
        -> EvaluationTarget {
        guard case .sampled(let n, let byPopularity)? = mode else { return target }
        let items = byPopularity ? NegativeItems(plan.training.popularityDraws, data: data) : .uniform
        let rows = target.evaluationProtocol == .nextItem ? nil : interactionRows(of: target.part, in: data)
        return target.rankedAmong(try candidates(target, negatives: n, from: items, seed: plan.seed, rows: rows))
    }

    /// Per user and item, the part's interaction rows (a repeat purchase is two rows: RecBole draws for each).
    static func interactionRows(of part: SplitPart, in data: TrainingData) -> SparseMatrix {
        let inter = data.dataset.interactions
        let rows = data.split.parts.indices.filter { data.split.parts[$0] == part }
        return SparseMatrix(rows: data.userCount, columns: data.itemCount, rowIndices: rows.map { inter.users[$0] },
                            columnIndices: rows.map { inter.items[$0] })
    }

    /// Per row, its positives and `n` draws per interaction row of each (`rows`' counts; one each without).
    /// A user who has had every item leaves nothing to draw: refused, as RecBole refuses such data.
    package static func candidates(_ target: EvaluationTarget, negatives n: Int, from items: NegativeItems, seed: UInt64,
                                   rows counts: SparseMatrix? = nil) throws -> SparseMatrix {
        var rng = SeededGenerator(seed: seed, stream: 0x5A3D << 8 | UInt64(target.part.rawValue))
        let positives = target.positives
        let used = target.evaluationProtocol == .nextItem ? nil : PatternSet(target.history.union(positives))
        var rows: [Int32] = [], columns: [Int32] = []
        for r in target.users {
            if let used, used.count(ofRow: Int(r)) >= target.itemCount {
                throw RecBenchError.config("eval_args.mode", "a user has had every item before the \(target.part.name) split's draws: no negative "
                                           + "can be drawn (RecBole refuses such data too); filter with user_inter_num_interval")
            }
            for item in positives.columns(ofRow: Int(r)) {
                let draws = n * max(1, Int(counts?[Int(r), Int(item)] ?? 1))
                let drawn = used.map { used in (0..<draws).map { _ in items.draw(for: Int(r), history: used, rng: &rng) } }
                    ?? items.draw(otherThan: Array(repeating: item, count: draws), items: target.itemCount, rng: &rng)
                rows.append(contentsOf: Array(repeating: r, count: draws + 1))
                columns.append(item)
                columns.append(contentsOf: drawn)
            }
        }
        return SparseMatrix(rows: positives.rows, columns: target.itemCount, rowIndices: rows, columnIndices: columns).binarized()
    }

    /// A note when next-item rows are ranked by sampling and some user has several in the split: RecBole's
    /// loader then makes one row of the user's examples (their items all positives, each candidate scored with
    /// its own example's sequence); recbench ranks each example on its own. Under leave-one-out the two agree.
    package static func groupingNotice(_ target: EvaluationTarget, mode: RankingMode?) -> String? {
        guard case .sampled? = mode, target.evaluationProtocol == .nextItem, let users = target.queries?.users,
              Set(users).count < users.count else { return nil }
        return "eval_args.mode \(mode!) on next-item rows: users have several \(target.part.name) examples, which RecBole's sampled "
            + "evaluation merges into one row per user (each candidate scored with its example's sequence); recbench ranks each example "
            + "on its own, so figures differ from RecBole's unless each user has one example per split (split: {LS: valid_and_test})"
    }

    /// The note a sampled mode brings (nil under full ranking).
    package static func notice(_ modes: [SplitPart: RankingMode]) -> String? {
        guard modes.values.contains(where: { if case .sampled = $0 { true } else { false } }) else { return nil }
        return "eval_args.mode valid \(modes[.valid]!), test \(modes[.test]!): a sampled split ranks each row's positives among N drawn items per "
            + "positive, as RecBole's sampled evaluation does; history_mask does not apply there, and sampled metrics can order models "
            + "otherwise than full ranking (Krichene and Rendle, KDD 2020)"
    }
}
