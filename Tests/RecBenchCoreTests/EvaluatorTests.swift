import Foundation
import Testing
import RecBenchCore
import Linalg

/// The three history-mask modes on a fixture with a repeat purchase, checked against
/// rankings worked out by hand.
struct EvaluatorTests {
    /// Pre-split fixture. Items a b c d. User u: train a b; test b c (b is a repeat).
    /// User v: train c; test a. User w: train only (not evaluated).
    func fixture() throws -> (SplitData, Dataset) {
        let dir = Fixtures.temporaryDirectory()
        let folder = "\(dir)/tiny"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let header = "user_id:token\titem_id:token\ttimestamp:float\n"
        try (header + "u\ta\t1\nu\tb\t2\nv\tc\t1\nw\td\t1\n").write(toFile: "\(folder)/tiny.train.inter", atomically: true, encoding: .utf8)
        try (header + "u\tb\t3\nu\tc\t4\nv\ta\t2\n").write(toFile: "\(folder)/tiny.test.inter", atomically: true, encoding: .utf8)
        let cfg = try Fixtures.config(dataPath: dir, extra: ["benchmark_filename": .list([.string("train"), .string("test")])])
        let dataset = try DatasetLoader.load(DataSettings(cfg))
        let parts = try Splitter.split(dataset.interactions, userCount: dataset.userCount, settings: SplitSettings(cfg))
        return (SplitData(dataset: dataset, parts: parts), dataset)
    }

    /// Every user scores a=4, b=3, c=2, d=1.
    func scorer(_ d: Dataset) -> FixedScorer {
        var m = Matrix(rows: d.userCount, columns: d.itemCount)
        for u in 0..<d.userCount { for (token, s) in [("a", 4), ("b", 3), ("c", 2), ("d", 1)] { m[u, Int(d.itemIDs[token]!)] = Float(s) } }
        return FixedScorer(table: m)
    }

    func evaluate(_ mask: HistoryMask) throws -> (EvaluationResult, Dataset) {
        let (split, d) = try fixture()
        let settings = EvaluationSettings(metrics: ["Recall", "MRR", "Precision"], cutoffs: [2], historyMask: mask)
        return (Evaluator.evaluate(scorer(d), split: split, part: .test, settings: settings, compute: Compute(threads: 2)), d)
    }

    func perUser(_ r: EvaluationResult, _ d: Dataset, _ user: String, _ key: String) -> Double {
        r.perUser[key]![r.users.firstIndex(of: d.userIDs[user]!)!]
    }

    @Test func recboleModeLeavesTheRepeatRankable() throws {
        // u: mask {a} (history {a,b} minus positives {b,c}) → ranking b c d → both hit.
        let (r, d) = try evaluate(.recbole)
        #expect(perUser(r, d, "u", "recall@2") == 1)
        #expect(perUser(r, d, "u", "mrr@2") == 1)
        // v: mask {c} → ranking a b d → a hits at rank 1.
        #expect(perUser(r, d, "v", "mrr@2") == 1)
        #expect(r.users.count == 2)   // w has no test positive
        #expect(close(r["recall@2"]!, 1))
    }

    /// GAUC reads the masked row. Scores a 4, b 3, d 2, c 1; u's positives b and c, v's a (weights 2 and 1); v's row
    /// is 1 under every mask (a beats b and d, and c unless masked). recbole: u ranks b c d, b beats d, c does not: ½,
    /// so (2 · ½ + 1) / 3. none: u's negatives a and d, b beats d: ¼, so (2 · ¼ + 1) / 3. seen: u's b is masked (no
    /// win) and c loses to d: 0, so ⅓. The value early stopping reads from a ranked pass is the summary's.
    @Test func gaucFollowsTheMask() throws {
        let (split, d) = try fixture()
        var table = Matrix(rows: d.userCount, columns: d.itemCount)
        for u in 0..<d.userCount { for (token, s) in [("a", 4), ("b", 3), ("c", 1), ("d", 2)] { table[u, Int(d.itemIDs[token]!)] = Float(s) } }
        for (mask, expected) in [(HistoryMask.recbole, 2.0 / 3), (.none, 0.5), (.seen, 1.0 / 3)] {
            let settings = EvaluationSettings(metrics: ["NDCG", "GAUC"], cutoffs: [2], historyMask: mask)
            #expect(settings.keys == ["ndcg@2", "gauc"])
            let pass = Evaluator.rank(FixedScorer(table: table), target: EvaluationTarget(.test, in: split), settings: settings,
                                      compute: Compute(threads: 1))
            #expect(close(pass.summarized()["gauc"]!, expected), "\(mask)")
            #expect(pass.value(of: "gauc") == pass.summarized()["gauc"])
        }
    }

    /// NaN scores are never ranked and +∞ ones tie at the top: either way the row's metrics mean
    /// nothing, and the result counts it so a run can refuse to store it.
    @Test func rowsWithNaNOrInfiniteScoresAreCounted() throws {
        let (split, d) = try fixture()
        let settings = EvaluationSettings(metrics: ["Recall"], cutoffs: [2], historyMask: .none)
        var table = scorer(d).table
        #expect(Evaluator.evaluate(FixedScorer(table: table), split: split, part: .test, settings: settings, compute: Compute(threads: 1))
            .nonFiniteRows == 0)
        for j in 0..<table.columns { table[Int(d.userIDs["u"]!), j] = .nan }   // u: nothing rankable
        table[Int(d.userIDs["v"]!), Int(d.itemIDs["d"]!)] = .infinity           // v: one overflowed score
        let r = Evaluator.evaluate(FixedScorer(table: table), split: split, part: .test, settings: settings, compute: Compute(threads: 1))
        #expect(r.nonFiniteRows == 2)
    }

    @Test func seenModeMasksEveryEarlierItem() throws {
        // u: mask {a, b} → ranking c d → one hit of two positives, at rank 1.
        let (r, d) = try evaluate(.seen)
        #expect(perUser(r, d, "u", "recall@2") == 0.5)
        #expect(perUser(r, d, "u", "mrr@2") == 1)
        #expect(perUser(r, d, "u", "precision@2") == 0.5)
        #expect(close(r["recall@2"]!, 0.75))
    }

    @Test func noneModeMasksNothing() throws {
        // u: ranking a b c d → top 2 = a, b → b hits at rank 2.
        let (r, d) = try evaluate(.none)
        #expect(perUser(r, d, "u", "recall@2") == 0.5)
        #expect(perUser(r, d, "u", "mrr@2") == 0.5)
        #expect(perUser(r, d, "v", "mrr@2") == 1)
        #expect(close(r["mrr@2"]!, 0.75))
    }

    /// Repeat-vs-new analyses at K = 2, worked out by hand from the rankings above.
    /// u's positives: b (repeat), c (new); v's: a (new).
    @Test(arguments: [
        // mask,  users_with_hit, repeat_hit_share, users_with_new_hit, repeat_recall, new_recall, history_share
        // (history_share: u had a b, v had c; each user's share of the top 2 they had, averaged)
        (HistoryMask.recbole, 2.0, 1.0 / 3, 2.0, 1.0, 1.0, 0.25),   // u: b c both hit (b seen); v: a b (neither)
        (HistoryMask.seen, 2.0, 0.0, 2.0, 0.0, 1.0, 0.0),           // u: c d → c; v: a b
        (HistoryMask.none, 2.0, 0.5, 1.0, 1.0, 0.5, 0.5),           // u: a b → b (repeat), both seen; v: a b
    ])
    func analysesMatchHandComputedValues(mask: HistoryMask, withHit: Double, repeatShare: Double, withNewHit: Double,
                                         repeatRecall: Double, newRecall: Double, historyShare: Double) throws {
        let (r, _) = try evaluate(mask)
        let a = r.analyses
        #expect(a["users_with_hit@2"] == withHit)
        #expect(a["users_with_hit_share@2"] == withHit / 2)
        #expect(close(a["repeat_hit_share@2"]!, repeatShare))
        #expect(a["users_with_new_hit@2"] == withNewHit)
        #expect(close(a["repeat_recall@2"]!, repeatRecall))
        #expect(close(a["new_recall@2"]!, newRecall))
        #expect(close(a["repeat_positive_share"]!, 1.0 / 3))
        #expect(close(try #require(a["history_share@2"]), historyShare))
    }

    @Test func tailPercentageCountsTheLeastPopularItems() {
        // Train counts: items 0..4 = 5, 1, 3, 0, 2. Ratio 0.5 of the 4 items present → the
        // 2 least popular: items 1 and 4. Ratio 2 → items with ≤ 2: items 1 and 4 as well.
        let counts: [Float] = [5, 1, 3, 0, 2]
        let tail = TailPercentage.tailItems(trainCounts: counts, ratio: 0.5)
        #expect(tail == [false, true, false, false, true])
        #expect(TailPercentage.tailItems(trainCounts: counts, ratio: 2) == tail)
        // Two users, K = 2: [1, 0] → 1/2 in tail; [4, 1] → 2/2.
        #expect(close(TailPercentage.value(lists: [1, 0, 4, 1], width: 2, k: 2, tail: tail), 0.75))
    }

    @Test func positivesAndRepeatsAreTheSameInEveryMode() throws {
        for mask in HistoryMask.allCases {
            let (r, _) = try evaluate(mask)
            #expect(r.positives == 3)
            #expect(r.repeatPositives == 1)
        }
    }

    @Test func cutoffBeyondTheCatalogueRanksWhatIsLeft() throws {
        let (split, d) = try fixture()
        let settings = EvaluationSettings(metrics: ["Recall", "Precision"], cutoffs: [10], historyMask: .seen)
        let r = Evaluator.evaluate(scorer(d), split: split, part: .test, settings: settings, compute: Compute(threads: 2))
        // u: only c and d are rankable → recall 1/2, precision 1/10.
        #expect(perUser(r, d, "u", "recall@10") == 0.5)
        #expect(perUser(r, d, "u", "precision@10") == 0.1)
        let slot = r.users.firstIndex(of: d.userIDs["u"]!)!
        #expect(Array(r.topItems[(slot * 10)..<(slot * 10 + 3)]) == [d.itemIDs["c"]!, d.itemIDs["d"]!, -1])
    }

    @Test func resultsDoNotDependOnTheBatchSize() throws {
        let (split, d) = try fixture()
        let one = Evaluator.evaluate(scorer(d), split: split, part: .test,
                                     settings: EvaluationSettings(metrics: ["NDCG"], cutoffs: [3], batchSize: 1), compute: Compute(threads: 2))
        let all = Evaluator.evaluate(scorer(d), split: split, part: .test,
                                     settings: EvaluationSettings(metrics: ["NDCG"], cutoffs: [3], batchSize: 100), compute: Compute(threads: 2))
        #expect(one.values == all.values)
        #expect(one.topItems == all.topItems)
    }

    /// The memory budget caps the users per block (never below one), and the blocks it
    /// makes give the same results.
    @Test func theMemoryBudgetBoundsTheBlockAndNotTheResults() throws {
        var settings = EvaluationSettings(metrics: ["NDCG", "Recall"], cutoffs: [2], batchSize: 4096)
        settings.blockMemory = 4 * 100 * 10   // ten rows of 100 items
        #expect(settings.usersPerBlock(items: 100) == 10)
        #expect(settings.usersPerBlock(items: 1_000_000) == 1)
        settings.blockMemory = 1 << 30
        #expect(settings.usersPerBlock(items: 100) == 4096)   // eval_batch_size still caps it

        let (split, d) = try blockFixture()
        var rng = SeededGenerator(seed: 7)
        var m = Matrix(rows: d.userCount, columns: d.itemCount)
        for i in 0..<m.values.count { m.values[i] = Float(rng.nextInt(below: 7)) }
        let small = Recording(FixedScorer(table: m)), large = Recording(FixedScorer(table: m))
        settings.blockMemory = 4 * d.itemCount * 3   // three users per block
        let a = Evaluator.evaluate(small, split: split, part: .test, settings: settings, compute: Compute(threads: 2))
        settings.blockMemory = 1 << 30
        let b = Evaluator.evaluate(large, split: split, part: .test, settings: settings, compute: Compute(threads: 2))
        #expect(small.blocks.allSatisfy { $0 <= 3 } && small.blocks.count > 1 && large.blocks.count == 1)
        #expect(a.values == b.values && a.topItems == b.topItems)
    }

    @Test(arguments: ["mrr@1", "ndcg@3", "recall@2", "hit@3", "itemcoverage@1", "gauc"])
    func validationOnlyGivesTheValidMetricOfTheFullEvaluation(valid: String) throws {
        let (split, d) = try blockFixture()
        var rng = SeededGenerator(seed: 4)
        var m = Matrix(rows: d.userCount, columns: d.itemCount)
        for i in 0..<m.values.count { m.values[i] = Float(rng.nextInt(below: 5)) }   // ties included
        let full = EvaluationSettings(metrics: ["Recall", "MRR", "NDCG", "Hit", "ItemCoverage", "GAUC"], cutoffs: [2, 1, 3], validMetric: valid)
        let only = full.validationOnly
        #expect(only.metrics.count == 1 && only.cutoffs == [valid == "gauc" ? 1 : Int(valid.split(separator: "@")[1])!])
        let a = Evaluator.evaluate(FixedScorer(table: m), split: split, part: .test, settings: full, compute: Compute(threads: 2))
        let b = Evaluator.evaluate(FixedScorer(table: m), split: split, part: .test, settings: only, compute: Compute(threads: 2))
        #expect(a.values[valid] != nil && a.values[valid] == b.values[valid])
    }

    /// With products split over the workers, each worker scores and ranks its own share of
    /// a batch: every user is scored once, by a call with one thread, and the results equal
    /// the one-block path's (OpenBLAS threads) and the serial one's, whole batches or blocks
    /// of five users (shares of three and two, then a last block of one).
    @Test func workerSharesGiveTheResultsOfOneBlock() throws {
        let (split, d) = try blockFixture()
        var rng = SeededGenerator(seed: 9)
        var m = Matrix(rows: d.userCount, columns: d.itemCount)
        for i in 0..<m.values.count { m.values[i] = Float(rng.nextInt(below: 6)) }   // ties included
        var settings = EvaluationSettings(metrics: ["NDCG", "Recall", "MRR", "Hit", "ItemCoverage"], cutoffs: [1, 3])
        let serial = Evaluator.evaluate(FixedScorer(table: m), split: split, part: .test, settings: settings, compute: .serial)
        let oneBlock = Evaluator.evaluate(FixedScorer(table: m), split: split, part: .test, settings: settings, compute: Compute(threads: 2))
        let whole = Recording(FixedScorer(table: m)), small = Recording(FixedScorer(table: m))
        let workers = Compute(workers: 2, blasThreads: 1)
        let shares = Evaluator.evaluate(whole, split: split, part: .test, settings: settings, compute: workers)
        settings.blockMemory = 4 * d.itemCount * 5
        let smallShares = Evaluator.evaluate(small, split: split, part: .test, settings: settings, compute: workers)
        for result in [oneBlock, shares, smallShares] {
            #expect(result.values == serial.values && result.perUser == serial.perUser && result.topItems == serial.topItems)
        }
        for recording in [whole, small] {
            #expect(recording.users.sorted() == serial.users.sorted())   // each evaluated user scored once
            #expect(recording.computes.allSatisfy { $0 == .serial })
        }
        if Compute.coreCount > 1 {   // one core runs no split: a single share
            #expect(whole.blocks.count == 2 && small.blocks.allSatisfy { $0 <= 3 } && small.blocks.count == 7)
        }
    }
}

/// A scorer that records its calls (from several workers at once, hence the lock).
final class Recording: Scorer, @unchecked Sendable {   // state guarded by `lock`
    let inner: FixedScorer
    private let lock = NSLock()
    private var calls: [(users: [Int32], compute: Compute)] = []
    init(_ inner: FixedScorer) { self.inner = inner }

    var blocks: [Int] { lock.withLock { calls.map(\.users.count) } }
    var users: [Int32] { lock.withLock { calls.flatMap(\.users) } }
    var computes: [Compute] { lock.withLock { calls.map(\.compute) } }

    func scores(for users: ArraySlice<Int32>, into block: inout Matrix, compute: Compute) {
        lock.withLock { calls.append((Array(users), compute)) }
        inner.scores(for: users, into: &block, compute: compute)
    }
}
