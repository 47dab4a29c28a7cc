import Foundation

/// The outcome of evaluating one split: averages, and per-user data for later analyses.
public struct EvaluationResult: Sendable {
    /// Which split was evaluated.
    public let part: SplitPart
    /// The mask mode that was applied.
    public let historyMask: HistoryMask
    /// Report keys in order ("recall@10", …).
    public let keys: [String]
    /// Mean over evaluated users (ranking metrics) or value over all lists (list metrics).
    public let values: [String: Double]
    /// Evaluated users: those with at least one positive in the split.
    public let users: [Int32]
    /// Per-user values of each ranking-metric key, aligned with `users`.
    public let perUser: [String: [Double]]
    /// Each evaluated user's ranked list, `users.count × width`, padded with -1.
    public let topItems: [Int32]
    /// Length of each ranked list slot (the largest cutoff).
    public let width: Int
    /// Distinct (user, item) positives in the split.
    public let positives: Int
    /// Positives the user already had in an earlier split (repeat consumption).
    public let repeatPositives: Int
    /// Repeat-vs-new analyses at every cutoff (see `Analyses`).
    public let analyses: [String: Double]
    /// Wall-clock seconds spent scoring, masking, ranking and averaging.
    public let seconds: Double

    /// The value of `key`, or nil when it was not computed.
    public subscript(key: String) -> Double? { values[key] }
}

/// What one split's evaluation ranks against: its positives, each user's earlier items, and
/// the users evaluated. Built once per split (training validates every epoch).
public struct EvaluationTarget: Sendable {
    public let part: SplitPart
    public let positives: SparseMatrix
    public let history: SparseMatrix
    public let users: [Int32]
    public let itemCount: Int
    /// Train interactions per item (for popularity metrics).
    public let trainCounts: [Float]

    /// The target of `part` in `split`.
    public init(_ part: SplitPart, in split: SplitData) {
        self.part = part
        positives = Evaluator.positives(of: part, in: split)
        history = Evaluator.history(before: part, in: split)
        users = (0..<split.userCount).filter { [positives] in !positives.entries(ofRow: $0).isEmpty }.map(Int32.init)
        itemCount = split.itemCount
        trainCounts = split.trainMatrix.columnSums()
    }
}

/// Full-ranking evaluation as DESIGN.md specifies, in one place: score every item for every
/// evaluated user, in batches of `batchSize` users; mask history by the configured mode;
/// take the top K; compute every metric at every cutoff.
public enum Evaluator {
    /// The items each user had before `part` (train for valid; train ∪ valid for test).
    public static func history(before part: SplitPart, in split: SplitData) -> SparseMatrix {
        switch part {
        case .train: return SparseMatrix(rows: split.userCount, columns: split.itemCount)
        case .valid: return split.trainMatrix.binarized()
        case .test: return split.trainMatrix.union(split.validMatrix).binarized()
        }
    }

    /// The positives of `part`.
    public static func positives(of part: SplitPart, in split: SplitData) -> SparseMatrix {
        switch part {
        case .train: return split.trainMatrix.binarized()
        case .valid: return split.validMatrix
        case .test: return split.testMatrix
        }
    }

    /// Evaluates `scorer` on `part` of `split`.
    public static func evaluate(
        _ scorer: any Scorer, split: SplitData, part: SplitPart, settings: EvaluationSettings, compute: Compute
    ) -> EvaluationResult {
        evaluate(scorer, target: EvaluationTarget(part, in: split), settings: settings, compute: compute)
    }

    /// Evaluates `scorer` against a prepared target (reuse it across epochs).
    public static func evaluate(_ scorer: any Scorer, target: EvaluationTarget, settings: EvaluationSettings, compute: Compute) -> EvaluationResult {
        let started = Date()
        let part = target.part, positives = target.positives, history = target.history, users = target.users
        let width = settings.cutoffs.max()!
        let itemCount = target.itemCount
        let rankingMetrics = settings.metrics.compactMap { name in MetricRegistry.ranking.first { $0.name == name } }
        let rankingKeys = rankingMetrics.flatMap { m in settings.cutoffs.map { "\(m.name.lowercased())@\($0)" } }
        let mask = settings.historyMask

        var topItems = [Int32](repeating: -1, count: users.count * width)
        var perUserFlat = [Double](repeating: 0, count: rankingKeys.count * users.count)
        var repeatCounts = [Int](repeating: 0, count: users.count)
        // Per user and cutoff: hits, and hits on items the user had before (repeat hits).
        let cutoffCount = settings.cutoffs.count
        var hitCounts = [Int32](repeating: 0, count: users.count * cutoffCount * 2)
        var block = Matrix(rows: 0, columns: itemCount)
        var start = 0
        while start < users.count {
            let end = min(users.count, start + settings.batchSize)
            let batch = users[start..<end]
            if block.rows != batch.count { block = Matrix(rows: batch.count, columns: itemCount) }
            scorer.scores(for: batch, into: &block, compute: compute)
            let batchStart = start
            block.values.withUnsafeMutableBufferPointer { scores in
                topItems.withUnsafeMutableBufferPointer { top in
                    perUserFlat.withUnsafeMutableBufferPointer { flat in
                        repeatCounts.withUnsafeMutableBufferPointer { repeats in
                          hitCounts.withUnsafeMutableBufferPointer { hitCountsBuffer in
                            // Each worker touches only its own rows / user slots.
                            let shared = UnsafeShared((scores.baseAddress!, top.baseAddress!, flat.baseAddress!, repeats.baseAddress!, hitCountsBuffer.baseAddress!))
                            compute.forEachChunk(count: batch.count, chunkSize: 32) { rows in
                                let (s, t, f, rp, hc) = shared.value
                                withUnsafeTemporaryAllocation(of: UInt8.self, capacity: width) { hits in
                                    for r in rows {
                                        let slot = batchStart + r
                                        let u = Int(users[slot])
                                        let row = s + r * itemCount
                                        // Mask earlier-split items as the mode says.
                                        // Both rows are sorted by item: walk them together.
                                        var repeatsHere = 0
                                        var cursor = positives.rowStarts[u]
                                        let cursorEnd = positives.rowStarts[u + 1]
                                        for e in history.entries(ofRow: u) {
                                            let item = history.columnIndices[e]
                                            while cursor < cursorEnd && positives.columnIndices[cursor] < item { cursor += 1 }
                                            let isPositive = cursor < cursorEnd && positives.columnIndices[cursor] == item
                                            if isPositive { repeatsHere += 1 }
                                            if mask == .seen || (mask == .recbole && !isPositive) { row[Int(item)] = -.infinity }
                                        }
                                        rp[slot] = repeatsHere
                                        let n = TopK.select(UnsafeBufferPointer(start: row, count: itemCount), k: width, into: t + slot * width)
                                        for rank in 0..<n {
                                            hits[rank] = positives.contains(row: u, column: Int(t[slot * width + rank])) ? 1 : 0
                                        }
                                        let hitView = UnsafeBufferPointer(start: hits.baseAddress!, count: n)
                                        let p = positives.entries(ofRow: u).count
                                        for (c, k) in settings.cutoffs.enumerated() {
                                            var all: Int32 = 0, repeated: Int32 = 0
                                            for rank in 0..<min(k, n) where hits[rank] != 0 {
                                                all += 1
                                                if history.contains(row: u, column: Int(t[slot * width + rank])) { repeated += 1 }
                                            }
                                            hc[(slot * cutoffCount + c) * 2] = all
                                            hc[(slot * cutoffCount + c) * 2 + 1] = repeated
                                        }
                                        var key = 0
                                        for metric in rankingMetrics {
                                            for k in settings.cutoffs {
                                                f[key * users.count + slot] = metric.value(hits: hitView, positives: p, k: k)
                                                key += 1
                                            }
                                        }
                                    }
                                }
                            }
                          }
                        }
                    }
                }
            }
            start = end
        }

        var values: [String: Double] = [:]
        var perUser: [String: [Double]] = [:]
        for (index, key) in rankingKeys.enumerated() {
            let column = Array(perUserFlat[(index * users.count)..<((index + 1) * users.count)])
            perUser[key] = column
            values[key] = users.isEmpty ? 0 : column.reduce(0, +) / Double(users.count)
        }
        let trainCounts = target.trainCounts
        for metric in MetricRegistry.lists where settings.metrics.contains(metric.name) {
            for k in settings.cutoffs {
                values["\(metric.name.lowercased())@\(k)"] = metric.value(lists: topItems, width: width, k: k, itemCount: itemCount, trainCounts: trainCounts)
            }
        }
        if settings.metrics.contains(TailPercentage.name) {
            let tail = TailPercentage.tailItems(trainCounts: trainCounts, ratio: settings.tailRatio)
            for k in settings.cutoffs {
                values["tailpercentage@\(k)"] = TailPercentage.value(lists: topItems, width: width, k: k, tail: tail)
            }
        }
        var analyses: [String: Double] = [:]
        for (c, k) in settings.cutoffs.enumerated() {
            let perUser = users.indices.map { slot in
                Analyses.UserHits(positives: positives.entries(ofRow: Int(users[slot])).count, repeatPositives: repeatCounts[slot],
                                  hits: Int(hitCounts[(slot * cutoffCount + c) * 2]), repeatHits: Int(hitCounts[(slot * cutoffCount + c) * 2 + 1]))
            }
            analyses.merge(Analyses.summarize(perUser, k: k)) { _, new in new }
            analyses["item_coverage@\(k)"] = ItemCoverage.value(lists: topItems, width: width, k: k, itemCount: itemCount, trainCounts: trainCounts)
        }
        return EvaluationResult(
            part: part, historyMask: mask, keys: settings.keys, values: values, users: users, perUser: perUser,
            topItems: topItems, width: width, positives: positives.nonzeroCount,
            repeatPositives: repeatCounts.reduce(0, +), analyses: analyses, seconds: Date().timeIntervalSince(started))
    }
}

extension SparseMatrix {
    /// Whether (row, column) is stored (binary search in the sorted row).
    @inlinable
    public func contains(row: Int, column: Int) -> Bool {
        var lo = rowStarts[row], hi = rowStarts[row + 1]
        let c = Int32(column)
        while lo < hi {
            let mid = (lo + hi) >> 1
            let v = columnIndices[mid]
            if v == c { return true }
            if v < c { lo = mid + 1 } else { hi = mid }
        }
        return false
    }

    /// Entry-wise sum with a matrix of the same shape.
    public func union(_ other: SparseMatrix) -> SparseMatrix {
        precondition(rows == other.rows && columns == other.columns, "union: shapes differ")
        var r = [Int32](), c = [Int32](), v = [Float]()
        for m in [self, other] {
            for row in 0..<m.rows {
                for e in m.entries(ofRow: row) { r.append(Int32(row)); c.append(m.columnIndices[e]); v.append(m.values[e]) }
            }
        }
        return SparseMatrix(rows: rows, columns: columns, rowIndices: r, columnIndices: c, values: v)
    }
}
