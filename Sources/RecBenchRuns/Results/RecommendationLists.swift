import Foundation
import RecBenchSupport
import RecBenchData
import RecBenchContract
import RecBenchEvaluation

/// What a run recommended: each evaluated row's ranked list (its top `width` items, the largest cutoff) in valid and
/// test, as RecBole's case study (`full_sort_topk`) gives it, with what a reader of a repeat-purchase log asks of each
/// item: had the user bought it before the split (or, under next-item evaluation, before the example), and is it one
/// of the row's answers. Built on request (`run --save-lists`) and written as `<record>.lists.csv`. Scores are not kept
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
            let past = PastItems.flags(topItems: e.topItems, width: e.width, target: target)
            for slot in e.users.indices {
                let row = Int(e.users[slot]), slots = (slot * e.width ..< (slot + 1) * e.width).filter { e.topItems[$0] >= 0 }
                let ranked = slots.map { Int(e.topItems[$0]) }
                lists.append(List(split: e.part.name, user: names[slot], items: ranked.map { dataset.itemTokens[$0] },
                                  before: slots.map { past[$0] },
                                  hits: ranked.map { target.positives.contains(row: row, column: $0) }))
            }
        }
        self.lists = lists
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
