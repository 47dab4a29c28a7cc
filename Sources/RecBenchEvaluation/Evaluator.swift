import Foundation
import Linalg
import RecBenchSupport
import RecBenchData
import RecBenchContract

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
    /// Rows whose scores held NaN or +∞ (a diverged model): their lists and metrics mean nothing.
    public var nonFiniteRows = 0
    /// Under labelled evaluation, the split's labelled rows (the value metrics' count; `users` is empty).
    public var labelledRows = 0

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
    /// Per user (all users, not only evaluated ones): positives also in their history.
    public let repeatCounts: [Int32]
    /// What a row is: a user, or a next-item example.
    public internal(set) var evaluationProtocol = EvaluationProtocol.user
    /// The rows' input sequences, for sequential models (nil: rows are users, scored as such).
    public internal(set) var queries: SequenceQueries?
    /// Per row, the only items it is ranked among under sampled ranking (`eval_args.mode` uniN or
    /// popN): its positives and their drawn negatives; nil: every item, masked by `history_mask`.
    public internal(set) var candidates: SparseMatrix?

    /// This target with each row ranked among its `candidates` alone (rows as `positives`', each
    /// holding the row's positives).
    public func rankedAmong(_ candidates: SparseMatrix) -> EvaluationTarget {
        var target = self
        target.candidates = candidates
        return target
    }

    /// The target of `part` in `split`.
    public init(_ part: SplitPart, in split: SplitData) {
        self.part = part
        positives = Evaluator.positives(of: part, in: split)
        history = Evaluator.history(before: part, in: split)
        users = (0..<split.userCount).filter { [positives] in !positives.entries(ofRow: $0).isEmpty }.map(Int32.init)
        itemCount = split.itemCount
        trainCounts = split.trainMatrix.columnSums()
        repeatCounts = EvaluationTarget.repeats(positives, history)
    }

    /// This user-protocol target with each user's sequence before the part as the input of
    /// sequential models.
    public func withSequences(_ sequences: SequenceData) -> EvaluationTarget {
        var target = self
        let log = sequences.log
        target.queries = SequenceQueries(sequences: sequences, users: (0..<Int32(log.userCount)).map { $0 },
                                         ends: (0..<log.userCount).map { Int32(log.end(of: $0, before: part)) })
        return target
    }

    /// Positives, over all users, that the user had in an earlier split (repeat consumption).
    public var repeatPositives: Int { repeatCounts.reduce(0) { $0 + Int($1) } }

    /// The same target for its first `count` users only (a benchmark's smaller population).
    public func prefix(_ count: Int) -> EvaluationTarget {
        var target = EvaluationTarget(part: part, positives: positives, history: history, users: Array(users.prefix(count)),
                                      itemCount: itemCount, trainCounts: trainCounts, repeatCounts: repeatCounts)
        target.evaluationProtocol = evaluationProtocol
        target.queries = queries
        target.candidates = candidates
        return target
    }

    init(part: SplitPart, positives: SparseMatrix, history: SparseMatrix, users: [Int32], itemCount: Int, trainCounts: [Float],
                 repeatCounts: [Int32]) {
        self.part = part; self.positives = positives; self.history = history
        self.users = users; self.itemCount = itemCount; self.trainCounts = trainCounts; self.repeatCounts = repeatCounts
    }

    /// Per row, the entries of `positives` that `history` has too (both rows sorted: one walk).
    static func repeats(_ positives: SparseMatrix, _ history: SparseMatrix) -> [Int32] {
        (0..<positives.rows).map { u in
            var count: Int32 = 0, cursor = history.rowStarts[u]
            let end = history.rowStarts[u + 1]
            for item in positives.columns(ofRow: u) {
                while cursor < end && history.columnIndices[cursor] < item { cursor += 1 }
                if cursor < end && history.columnIndices[cursor] == item { count += 1 }
            }
            return count
        }
    }
}

/// Full-ranking evaluation as DESIGN.md specifies, in one place: score every item for every
/// evaluated user, in blocks of `usersPerBlock` users; mask history by the configured mode;
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

    /// Evaluates `scorer` against a prepared target (reuse it across epochs): scores users in
    /// batches, ranks each user (`rank`), then averages and summarises (`summarize`). With a
    /// profile, scoring and ranking are charged to "<phase>: scores" and "<phase>: rank".
    public static func evaluate(_ scorer: any Scorer, target: EvaluationTarget, settings: EvaluationSettings, compute: Compute,
                                profile: OpProfile? = nil, phase: String = "evaluation") -> EvaluationResult {
        rank(scorer, target: target, settings: settings, compute: compute, profile: profile, phase: phase).summarized()
    }

    /// Scores and ranks every row of `target` as `evaluate` does, without summarising: what a
    /// fit's validation keeps of its best epoch (`RankedPass`).
    public static func rank(_ scorer: any Scorer, target: EvaluationTarget, settings: EvaluationSettings, compute: Compute,
                            profile: OpProfile? = nil, phase: String = "evaluation") -> RankedPass {
        let started = ContinuousClock.now
        let users = target.users, width = settings.cutoffs.max()!
        let metrics = rankingMetrics(settings)
        // Shared work once per pass, not per batch or worker; rows that are queries read them.
        let scorer = (target.queries?.scorer(for: scorer) ?? scorer).preparedForScoring(compute: compute)
        profile?.charge("\(phase): scores", forward: (ContinuousClock.now - started).seconds, calls: 0)
        let table = RankingTable(users: users.count, keys: gaucColumn(settings) + (settings.computesGAUC ? 1 : 0), cutoffs: settings.cutoffs.count)
        // The ranked lists are written where the result keeps them: no copy at the end.
        var topItems = [Int32](repeating: -1, count: users.count * width)
        // A repeat-aware model's P(repeat) per row, written by the scoring pass itself.
        let readsModes = settings.readsRepeatModes && (scorer as? any RepeatModeReporting)?.reportsRepeatModes == true
        var modes = [Float](repeating: 0, count: readsModes ? users.count : 0)
        topItems.withUnsafeMutableBufferPointer { top in modes.withUnsafeMutableBufferPointer { modeSlots in
            let ranking = Ranking(target: target, settings: settings, metrics: metrics, table: table,
                                  lists: UnsafeShared(top.baseAddress!), width: width,   // each worker writes only its users' lists
                                  modes: readsModes ? modeSlots.baseAddress.map { UnsafeShared($0) } : nil, gaucColumn: gaucColumn(settings))
            var start = 0
            let blockUsers = settings.usersPerBlock(items: target.itemCount)
            let perWorker = compute.splitsProducts ? WorkerBlocks(workers: compute.activeWorkers) : nil
            var block = Matrix(rows: 0, columns: target.itemCount)
            while start < users.count {
                let batch = users[start..<min(users.count, start + blockUsers)]
                let times: (scores: Double, rank: Double)
                if let perWorker {
                    times = perWorker.scoreAndRank(scorer, batch: batch, offset: start, ranking: ranking)
                } else {
                    times = scoreThenRank(scorer, batch: batch, offset: start, into: &block, ranking: ranking, compute: compute)
                }
                start += batch.count
                profile?.charge("\(phase): scores", forward: times.scores)
                profile?.charge("\(phase): rank", forward: times.rank)
            }
        } }   // the blocks of scores are freed here, before the result's arrays are built
        return RankedPass(table: table, topItems: topItems, repeatModes: readsModes ? modes : nil, target: target, settings: settings,
                          seconds: (ContinuousClock.now - started).seconds)
    }

    /// Scores a batch into one block with every thread `compute` has (OpenBLAS's own, when
    /// it has them), then ranks its rows in parallel chunks. Returns the seconds of each.
    static func scoreThenRank(_ scorer: any Scorer, batch: ArraySlice<Int32>, offset: Int, into block: inout Matrix,
                              ranking: Ranking, compute: Compute) -> (scores: Double, rank: Double) {
        let itemCount = ranking.target.itemCount
        if block.rows != batch.count {
            block = Matrix(rows: 0, columns: 0)   // the last, shorter batch: never two blocks at once
            block = Matrix(uninitializedRows: batch.count, columns: itemCount)   // scorers write every entry
        }
        let scored = ContinuousClock.now
        ranking.score(scorer, rows: batch, firstSlot: offset, into: &block, compute: compute)
        let ranked = ContinuousClock.now
        block.values.withUnsafeMutableBufferPointer { scores in
            let rows = UnsafeShared(scores.baseAddress!)   // each worker masks only its own rows
            compute.forEachChunk(count: batch.count, chunkSize: 32) { range in
                for r in range {
                    ranking.rank(UnsafeMutableBufferPointer(start: rows.value + r * itemCount, count: itemCount),
                                 user: Int(batch[batch.startIndex + r]), slot: offset + r)
                }
            }
        }
        return ((ranked - scored).seconds, (ContinuousClock.now - ranked).seconds)
    }

    /// The per-user metrics' keys, one per metric and cutoff: the order of the ranking table's columns.
    static func rankingKeys(_ settings: EvaluationSettings) -> [MetricKey] {
        rankingMetrics(settings).flatMap { m in settings.cutoffs.map { MetricKey(m.name, k: $0) } }
    }

    /// The configured metrics that are computed per user, in report order.
    static func rankingMetrics(_ settings: EvaluationSettings) -> [any RankingMetric.Type] {
        settings.metrics.compactMap { name in MetricRegistry.ranking.first { $0.name == name } }
    }

    /// Means of the per-user metrics, the list metrics over every top-K list, and the
    /// repeat-vs-new analyses.
    /// (`seconds`: those spent before, scoring and ranking.)
    static func summarize(_ table: RankingTable, topItems: [Int32], target: EvaluationTarget, settings: EvaluationSettings,
                          repeatModes: [Float]?, seconds: Double) -> EvaluationResult {
        let started = ContinuousClock.now
        let users = target.users, width = settings.cutoffs.max()!, itemCount = target.itemCount
        let rankingKeys = rankingKeys(settings).map(\.description)
        var values: [String: Double] = [:]
        var perUser: [String: [Double]] = [:]
        for (index, key) in rankingKeys.enumerated() {
            perUser[key] = table.metricColumn(index)
            values[key] = table.mean(ofColumn: index)
        }
        // GAUC's mean is weighted by each row's positives, and a row without negatives has no AUC: no per-user
        // column for the paired tests, which compare plain per-user means.
        if settings.computesGAUC { values[GAUC.key] = gauc(table, settings: settings, target: target) }
        let trainCounts = target.trainCounts
        for name in MetricRegistry.lists.map({ $0.name }) + [TailPercentage.name] where settings.metrics.contains(name) {
            for k in settings.cutoffs {
                values[MetricKey(name, k: k).description] = listValue(name, k: k, topItems: topItems, width: width, target: target, settings: settings)
            }
        }
        var analyses: [String: Double] = [:]
        let past = PastItems.flags(topItems: topItems, width: width, target: target)
        for (c, k) in settings.cutoffs.enumerated() {
            let perUser = users.indices.map { slot in
                let hits = table.hits(slot, cutoff: c)
                return Analyses.UserHits(positives: target.positives.entries(ofRow: Int(users[slot])).count, repeatPositives: table.repeats(slot),
                                         hits: hits.all, repeatHits: hits.repeated,
                                         fromHistory: past[slot * width ..< slot * width + min(k, width)].reduce(0) { $0 + ($1 ? 1 : 0) })
            }
            analyses.merge(Analyses.summarize(perUser, k: k)) { _, new in new }
            analyses[MetricKey("item_coverage", k: k).description] =
                ItemCoverage.value(lists: topItems, width: width, k: k, itemCount: itemCount, trainCounts: trainCounts)
        }
        if let repeatModes { analyses.merge(Analyses.repeatMode(repeatModes, isRepeat: users.indices.map { table.repeats($0) > 0 })) { _, new in new } }
        var result = EvaluationResult(
            part: target.part, historyMask: settings.historyMask, keys: settings.keys, values: values, users: users, perUser: perUser,
            topItems: topItems, width: width, positives: target.positives.nonzeroCount,
            repeatPositives: users.indices.reduce(0) { $0 + table.repeats($1) }, analyses: analyses,
            seconds: seconds + (ContinuousClock.now - started).seconds)
        result.nonFiniteRows = table.nonFiniteRows
        return result
    }
}

extension Evaluator {
    /// The ranking table's GAUC column: the one after the per-cutoff metrics' columns.
    static func gaucColumn(_ settings: EvaluationSettings) -> Int { rankingMetrics(settings).count * settings.cutoffs.count }

    /// GAUC over the table's column of per-row AUCs (NaN where a row has none), weighted by each row's positives.
    static func gauc(_ table: RankingTable, settings: EvaluationSettings, target: EvaluationTarget) -> Double {
        GAUC.weightedMean(table.metricColumn(gaucColumn(settings)), positives: target.users.map { target.positives.entries(ofRow: Int($0)).count })
    }

    /// List metric `name` (a registry name, any case) at `k` over every ranked list; nil when
    /// `name` is not a list metric.
    static func listValue(_ name: String, k: Int, topItems: [Int32], width: Int, target: EvaluationTarget, settings: EvaluationSettings) -> Double? {
        let trainCounts = target.trainCounts
        if name.lowercased() == TailPercentage.name.lowercased() {
            let tail = TailPercentage.tailItems(trainCounts: trainCounts, ratio: settings.tailRatio)
            return TailPercentage.value(lists: topItems, width: width, k: k, tail: tail)
        }
        let metric = MetricRegistry.lists.first { $0.name.lowercased() == name.lowercased() }
        return metric?.value(lists: topItems, width: width, k: k, itemCount: target.itemCount, trainCounts: trainCounts)
    }
}

/// What ranking one user's row of scores needs, shared by the workers that rank: the target,
/// the settings, and where each user's outcome goes (its row of the table, its slot of the
/// ranked lists).
struct Ranking: Sendable {
    let target: EvaluationTarget
    let settings: EvaluationSettings
    let metrics: [any RankingMetric.Type]
    let table: RankingTable
    let lists: UnsafeShared<UnsafeMutablePointer<Int32>>
    let width: Int
    /// Where a repeat-aware model's rows' P(repeat) go, slot by slot (nil: not read).
    let modes: UnsafeShared<UnsafeMutablePointer<Float>>?
    /// The table's GAUC column (`Evaluator.gaucColumn`), worked out once per pass, not per row.
    let gaucColumn: Int

    /// Scores `rows` (slots `firstSlot…`) into `block`, with their repeat modes when the pass reads them.
    func score(_ scorer: any Scorer, rows: ArraySlice<Int32>, firstSlot: Int, into block: inout Matrix, compute: Compute) {
        if let modes, let reporting = scorer as? any RepeatModeReporting {
            reporting.scores(for: rows, into: &block, repeatModes: UnsafeMutableBufferPointer(start: modes.value + firstSlot, count: rows.count),
                             compute: compute)
        } else {
            scorer.scores(for: rows, into: &block, compute: compute)
        }
    }

    /// Sets the user's masked items to −∞: every history item (`seen`), or those that are
    /// not positives of the split (`recbole`: the positives' scores are kept aside, the whole
    /// history written, the positives' scores written back). Without a comparison per
    /// history item, where walking history beside the positives mispredicted a branch on
    /// most of them.
    func applyMask(_ row: UnsafeMutableBufferPointer<Float>, user u: Int) {
        let mode = settings.historyMask
        guard mode != .none else { return }
        let positives = target.positives.entries(ofRow: u), history = target.history.entries(ofRow: u)
        target.positives.columnIndices.withUnsafeBufferPointer { kept in
            target.history.columnIndices.withUnsafeBufferPointer { seen in
                withUnsafeTemporaryAllocation(of: Float.self, capacity: max(1, positives.count)) { saved in
                    if mode == .recbole { for (i, e) in positives.enumerated() { saved[i] = row[Int(kept[e])] } }
                    for e in history { row[Int(seen[e])] = -.infinity }
                    if mode == .recbole { for (i, e) in positives.enumerated() { row[Int(kept[e])] = saved[i] } }
                }
            }
        }
    }

    /// Sets every item but the row's candidates to −∞ (sampled ranking: RecBole scores the drawn
    /// items and the positives alone, every other item −∞).
    func keepCandidates(_ row: UnsafeMutableBufferPointer<Float>, of candidates: SparseMatrix, user u: Int) {
        let entries = candidates.entries(ofRow: u)
        candidates.columnIndices.withUnsafeBufferPointer { kept in
            withUnsafeTemporaryAllocation(of: Float.self, capacity: max(1, entries.count)) { saved in
                for (i, e) in entries.enumerated() { saved[i] = row[Int(kept[e])] }
                row.update(repeating: -.infinity)
                for (i, e) in entries.enumerated() { row[Int(kept[e])] = saved[i] }
            }
        }
    }

    /// The row's AUC (NaN when it has no negative) in the table's GAUC column, after masking.
    func recordAUC(_ row: UnsafeBufferPointer<Float>, user u: Int, slot: Int) {
        let positives = target.positives
        let auc = positives.columnIndices.withUnsafeBufferPointer { columns in
            GAUC.rowAUC(row, positives: UnsafeBufferPointer(rebasing: columns[positives.entries(ofRow: u)]))
        }
        table.setMetric(slot, key: gaucColumn, auc ?? .nan)
    }

    /// Masks `row` (the user's scores) by the history mode (or keeps its candidates alone), takes the top K into the
    /// user's slot of the ranked lists, and records the user's metrics and hits in the
    /// table's row `slot`.
    func rank(_ row: UnsafeMutableBufferPointer<Float>, user u: Int, slot: Int) {
        let top = UnsafeMutableBufferPointer(start: lists.value + slot * width, count: width)
        let positives = target.positives, history = target.history
        if let candidates = target.candidates { keepCandidates(row, of: candidates, user: u) } else { applyMask(row, user: u) }
        table.setRepeats(slot, Int(target.repeatCounts[u]))
        if settings.computesGAUC { recordAUC(UnsafeBufferPointer(row), user: u, slot: slot) }
        let n = TopK.select(UnsafeBufferPointer(row), k: top.count, into: top.baseAddress!)
        // TopK passes NaN over: a short list is where to look for it (a full one of finite scores is a ranking still).
        if (n > 0 && row[Int(top[0])] == .infinity) || (n < top.count && row.contains(where: \.isNaN)) { table.markNonFinite(slot) }
        let p = positives.entries(ofRow: u).count
        // No allocation per user: the hit flags live on the stack, the results go straight
        // into the table.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(1, n)) { hits in
            for rank in 0..<n { hits[rank] = positives.contains(row: u, column: Int(top[rank])) ? 1 : 0 }
            for (c, k) in settings.cutoffs.enumerated() {
                var all = 0, repeated = 0
                for rank in 0..<min(k, n) where hits[rank] != 0 {
                    all += 1
                    if history.contains(row: u, column: Int(top[rank])) { repeated += 1 }
                }
                table.setHits(slot, cutoff: c, all: all, repeated: repeated)
            }
            let hitView = UnsafeBufferPointer(rebasing: hits[0..<n])
            var key = 0
            for metric in metrics {
                for k in settings.cutoffs {
                    table.setMetric(slot, key: key, metric.value(hits: hitView, positives: p, k: k))
                    key += 1
                }
            }
        }
    }
}
