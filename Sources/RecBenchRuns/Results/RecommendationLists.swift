import Foundation
import RecBenchSupport
import RecBenchData
import RecBenchContract
import RecBenchEvaluation

/// What a run recommended: each evaluated row's ranked list (its top `width` items, the largest cutoff) in valid and
/// test, as RecBole's case study (`full_sort_topk`) gives it, with what a reader of a repeat-purchase log asks of each
/// item: had the user bought it before the split (or, under next-item evaluation, before the example), and is it one
/// of the row's answers. Built on request (`run --lists`) and written as `<record>.lists.csv`. Scores are not kept
/// (ranking keeps the order, not the values). Under sampled ranking a list holds only the row's candidates.
public struct RecommendationLists: Sendable {
    /// One ranked list.
    public struct List: Sendable, Equatable {
        public let split: String
        /// The row's name: the user's token, or under next-item evaluation "token#position" (as the per-user files).
        public let user: String
        public let items: [String]
        public let before: [Bool]
        public let hits: [Bool]
    }

    public let lists: [List]

    /// The lists of `evaluations`, each ranked against its target, with `dataset`'s tokens.
    public init(dataset: Dataset, evaluations: [(result: EvaluationResult, target: EvaluationTarget)]) {
        var lists: [List] = []
        for (e, target) in evaluations {
            let names = PerUserResults.rowNames(e, target: target, dataset: dataset)
            var earlier = PastItems(target)
            for slot in e.users.indices {
                let row = Int(e.users[slot])
                let ranked = e.topItems[slot * e.width ..< (slot + 1) * e.width].filter { $0 >= 0 }.map(Int.init)
                lists.append(List(split: e.part.name, user: names[slot], items: ranked.map { dataset.itemTokens[$0] },
                                  before: ranked.map { earlier.contains($0, before: row) },
                                  hits: ranked.map { target.positives.contains(row: row, column: $0) }))
            }
        }
        self.lists = lists
    }

    /// Whether an item came before a row of a target: for a user row, in the user's earlier splits (the history the
    /// mask reads); for a next-item example, in the user's log before the example's position (a next-item row's history
    /// is not its past: it holds at most the example's own target). Each item's first position in the current user's
    /// log is kept while that user's examples (consecutive rows) are read: a user costs their sequence once.
    struct PastItems {
        let target: EvaluationTarget
        var user = -1
        var first: [Int32: Int] = [:]

        init(_ target: EvaluationTarget) { self.target = target }

        mutating func contains(_ item: Int, before row: Int) -> Bool {
            guard target.evaluationProtocol == .nextItem, let queries = target.queries else { return target.history.contains(row: row, column: item) }
            let log = queries.sequences.log, u = Int(queries.users[row])
            if u != user {
                user = u
                first.removeAll(keepingCapacity: true)
                for p in (log.userStarts[u] ..< log.userStarts[u + 1]).reversed() { first[log.items[p]] = p }
            }
            return first[Int32(item)].map { $0 < Int(queries.ends[row]) } ?? false
        }
    }

    /// Rows `split,user,rank,item,before,hit` (ranks from 1; flags 0 or 1) with a header, valid before test.
    public func csv() -> String {
        var lines = ["split,user,rank,item,before,hit"]
        for split in PerUserResults.splitOrder {
            for list in lists where list.split == split {
                for (r, item) in list.items.enumerated() {
                    lines.append("\(split),\(CSVText.escape(list.user)),\(r + 1),\(CSVText.escape(item)),\(list.before[r] ? 1 : 0),\(list.hits[r] ? 1 : 0)")
                }
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
