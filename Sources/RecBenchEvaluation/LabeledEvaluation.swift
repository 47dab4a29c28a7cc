import Foundation
import Linalg
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// A split's labelled rows, as RecBole's labelled evaluation reads them: every (user, item) row of the
/// split with its label, nothing grouped or ranked.
public struct LabeledTarget: Sendable {
    public let part: SplitPart
    public let users: [Int32], items: [Int32], labels: [Float]
    /// The catalogue the rows' items index (a scorer fills this many columns).
    public let itemCount: Int

    /// The rows of `part` in `split` (which must be labelled data).
    public init(_ part: SplitPart, in split: SplitData, dataset: Dataset) {
        let inter = dataset.interactions, labels = inter.labels!
        let rows = split.parts.indices.filter { split.parts[$0] == part }
        self.init(part: part, users: rows.map { inter.users[$0] }, items: rows.map { inter.items[$0] }, labels: rows.map { labels[$0] },
                  itemCount: split.itemCount)
    }

    /// Rows given as columns of equal length.
    public init(part: SplitPart, users: [Int32], items: [Int32], labels: [Float], itemCount: Int) {
        precondition(users.count == items.count && items.count == labels.count, "LabeledTarget: columns differ in length")
        precondition(items.allSatisfy { $0 >= 0 && Int($0) < itemCount }, "LabeledTarget: an item outside the catalogue")
        self.part = part; self.users = users; self.items = items; self.labels = labels; self.itemCount = itemCount
    }

    /// Rows labelled 1 (RecBole's AUC positives) and the rest.
    public var classCounts: (positive: Int, other: Int) {
        let p = labels.reduce(0) { $0 + ($1 == 1 ? 1 : 0) }
        return (p, labels.count - p)
    }
}

/// RecBole's labelled evaluation: each row's probability σ(z(u, i)) against its label, the value
/// metrics over all rows at once. Scores come from the model's pair scorer when it has one, else from
/// its full-ranking scorer (exact per-pair logits for the context-aware models), a block of users at a time.
public enum LabeledEvaluation {
    /// The value of each of `metrics` on `target` (an AUC without both classes counts as 0, with the
    /// split named in the caller's check); rows whose logit is not finite are counted, not scored.
    public static func evaluate(_ scorer: any Scorer, target: LabeledTarget, metrics: [ValueMetric], settings: EvaluationSettings,
                                compute: Compute) -> EvaluationResult {
        let started = ContinuousClock.now
        let p = probabilities(scorer, target: target, blockUsers: settings.usersPerBlock(items: target.itemCount), compute: compute)
        let finite = p.indices.filter { p[$0].isFinite }
        let (scores, labels) = (finite.map { p[$0] }, finite.map { target.labels[$0] })
        var values: [String: Double] = [:]
        for m in metrics { values[m.key] = scores.isEmpty ? 0 : m.value(probabilities: scores, labels: labels) ?? 0 }
        var result = EvaluationResult(part: target.part, historyMask: settings.historyMask, keys: metrics.map(\.key), values: values, users: [],
                                      perUser: [:], topItems: [], width: 0, positives: target.classCounts.positive, repeatPositives: 0,
                                      analyses: [:], seconds: (ContinuousClock.now - started).seconds)
        result.nonFiniteRows = p.count - finite.count
        result.labelledRows = p.count
        return result
    }

    /// σ(z) of each row, in row order: the scorer fills a users × items block for up to `blockUsers`
    /// distinct users at a time, and each row reads its item's column.
    static func probabilities(_ scorer: any Scorer, target: LabeledTarget, blockUsers: Int, compute: Compute) -> [Double] {
        func sigmoid(_ z: Float) -> Double { z.isFinite ? 1 / (1 + Foundation.exp(-Double(z))) : .nan }
        if let pairs = scorer as? any PairScorer { return pairs.pairScores(users: target.users, items: target.items, compute: compute).map(sigmoid) }
        let prepared = scorer.preparedForScoring(compute: compute)
        var rowsOfUser: [Int32: [Int]] = [:]
        for (r, u) in target.users.enumerated() { rowsOfUser[u, default: []].append(r) }
        let users = rowsOfUser.keys.sorted()
        var p = [Double](repeating: .nan, count: target.users.count)
        var start = 0
        while start < users.count {
            let batch = users[start..<min(users.count, start + blockUsers)]
            var block = Matrix(uninitializedRows: batch.count, columns: target.itemCount)
            prepared.scores(for: batch, into: &block, compute: compute)
            for (b, u) in batch.enumerated() {
                for r in rowsOfUser[u]! { p[r] = sigmoid(block[b, Int(target.items[r])]) }
            }
            start += blockUsers
        }
        return p
    }
}
