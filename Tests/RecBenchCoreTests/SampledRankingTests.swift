import Foundation
import Logging
import Testing
import RecBenchCore
import Linalg

/// RecBole's sampled ranking (`eval_args.mode: uniN / popN`): a row ranks its positives among
/// its candidates alone.
struct SampledRankingTests {
    /// EvaluatorTests' fixture: items a b c d, scores a 4 b 3 c 2 d 1; u: train a b, test b c; v: train c, test a.
    let evaluator = EvaluatorTests()

    /// By hand. Every item, no mask: u ranks a b c d (top 2 holds b: recall ½, MRR ½). Among u's candidates {b, c, d}:
    /// b c (recall 1, MRR 1), whatever the mask (`seen` would hide b in a full ranking). v among {a, d}: a first.
    @Test func aRowRanksItsCandidatesAloneWhateverTheMask() throws {
        let (split, d) = try evaluator.fixture()
        let id = { (token: String) in d.itemIDs[token]! }
        let (u, v) = (d.userIDs["u"]!, d.userIDs["v"]!)
        let candidates = SparseMatrix(rows: d.userCount, columns: d.itemCount, rowIndices: [u, u, u, v, v],
                                      columnIndices: [id("b"), id("c"), id("d"), id("a"), id("d")])
        for (mask, sampled, expected) in [(HistoryMask.none, false, 0.5), (.none, true, 1.0), (.seen, true, 1.0), (.recbole, true, 1.0)] {
            let settings = EvaluationSettings(metrics: ["Recall", "MRR"], cutoffs: [2], historyMask: mask)
            let plain = EvaluationTarget(.test, in: split)
            let r = Evaluator.evaluate(evaluator.scorer(d), target: sampled ? plain.rankedAmong(candidates) : plain, settings: settings,
                                       compute: Compute(threads: 1))
            #expect(evaluator.perUser(r, d, "u", "recall@2") == expected && evaluator.perUser(r, d, "u", "mrr@2") == expected, "\(mask) \(sampled)")
            #expect(evaluator.perUser(r, d, "v", "mrr@2") == 1)
        }
    }

    /// User rows draw among items the user had in no split up to the evaluated one; each positive brings n draws.
    @Test(arguments: [false, true])
    func userRowsDrawItemsTheUserHasNotHad(byPopularity: Bool) throws {
        let (split, d) = try blockFixture()
        let target = EvaluationTarget(.test, in: split)
        let items = byPopularity ? NegativeItems(.popularity(alpha: 1, counts: .recbole), data: TrainingData(dataset: d, split: split)) : .uniform
        let c = try SampledRanking.candidates(target, negatives: 3, from: items, seed: 7)
        for u in target.users.map(Int.init) {
            let positives = Set(target.positives.columns(ofRow: u)), had = Set(target.history.columns(ofRow: u))
            let row = Set(c.columns(ofRow: u))
            #expect(positives.isSubset(of: row))
            #expect(row.subtracting(positives).isDisjoint(with: had.union(positives)))
            #expect(row.count > positives.count && row.count <= positives.count * 4)
        }
        #expect(try SampledRanking.candidates(target, negatives: 3, from: items, seed: 7).columnIndices == c.columnIndices)
        #expect(try SampledRanking.candidates(target, negatives: 3, from: items, seed: 8).columnIndices != c.columnIndices)
    }

    /// A positive bought twice in the split is two interaction rows, each with its n draws (RecBole draws per row):
    /// with one draw each, a single positive row can hold at most one negative unless its count says two.
    @Test func aRepeatedPositiveDrawsOncePerInteraction() throws {
        let (split, d) = try blockFixture()
        let target = EvaluationTarget(.test, in: split)
        let u = Int(target.users[0]), item = target.positives.columns(ofRow: u).first!
        let twice = SparseMatrix(rows: d.userCount, columns: d.itemCount, rowIndices: [Int32(u), Int32(u)], columnIndices: [item, item])
        let widths = try (0..<40).map { seed in
            (try SampledRanking.candidates(target, negatives: 1, from: .uniform, seed: UInt64(seed)).columns(ofRow: u).count,
             try SampledRanking.candidates(target, negatives: 1, from: .uniform, seed: UInt64(seed), rows: twice).columns(ofRow: u).count)
        }
        #expect(widths.allSatisfy { $0.0 == 2 } && widths.contains { $0.1 == 3 })
    }

    /// Next-item rows under sampled ranking: RecBole merges a user's examples into one row, recbench ranks each; a note says
    /// so when some user has several examples in a split (a ratio split), none under leave-one-out, where the two agree.
    @Test func severalExamplesOfAUserBringTheGroupingNote() throws {
        let dir = Fixtures.temporaryDirectory()
        Fixtures.writeInter(blockRows(), in: dir)
        func notes(_ split: String) throws -> [String] {
            let plan = try Experiment.plan(RunRequest(model: "FPMC", assignments: [
                "dataset=tiny", "data_path=\(dir)", "eval_args={order: TO, split: \(split), mode: uni5}", "topk=[1]", "valid_metric=MRR@1",
                "load_col={inter: [user_id, item_id, timestamp]}"]))
            return try Experiment.load(plan, logger: Logger(label: "test")).notices.filter { $0.contains("merges into one row per user") }
        }
        #expect(try notes("{RS: [0.4, 0.2, 0.4]}").count == 1)   // test: two examples a user; valid: one
        #expect(try notes("{LS: valid_and_test}").isEmpty)
    }

    /// Nothing to draw for a user who has had every item: refused, as RecBole refuses such data.
    @Test func aUserWithEveryItemIsRefused() throws {
        let dir = Fixtures.temporaryDirectory()
        let rows = ["a", "b", "c"].enumerated().flatMap { k, i in [("u", i, Double(k)), ("v", i, Double(k))] } + [("v", "a", 9.0)]
        Fixtures.writeInter(rows, in: dir)
        let plan = try Experiment.plan(RunRequest(model: "Pop", assignments: [
            "dataset=tiny", "data_path=\(dir)", "eval_args={order: TO, split: {LS: test_only}, mode: uni5}", "topk=[1]", "valid_metric=MRR@1",
            "load_col={inter: [user_id, item_id, timestamp]}"]))
        let e = #expect(throws: RecBenchError.self) { _ = try Experiment.load(plan, logger: Logger(label: "test")) }
        #expect(e?.field == "eval_args.mode" && e?.message.contains("has had every item") == true)
    }

    /// Next-item rows exclude their own item only (RecBole's repeatable sampler): items the user had before come up.
    @Test func nextItemRowsExcludeOnlyTheirOwnItem() throws {
        let (split, d) = try blockFixture()
        let sequences = TrainingData(dataset: d, split: split).sequenceData
        let target = EvaluationTarget.nextItem(.test, sequences: sequences, trainCounts: split.trainMatrix.columnSums(), maskSeen: false)
        let c = try SampledRanking.candidates(target, negatives: 20, from: .uniform, seed: 1)
        var earlier = 0
        for r in target.users.map(Int.init) {
            let own = target.positives.columns(ofRow: r).first!, user = Int(target.queries!.users[r])
            #expect(c.columns(ofRow: r).contains(own))
            earlier += c.columns(ofRow: r).filter { $0 != own && split.trainMatrix.contains(row: user, column: Int($0)) }.count
        }
        #expect(earlier > 0)
    }

    /// The draws read the seed, so a model that draws nothing on a time-ordered split keeps the seed in its key under sampled ranking.
    @Test func sampledRankingMakesTheSeedPartOfTheRun() throws {
        let dir = Fixtures.temporaryDirectory()
        Fixtures.writeInter(blockRows(), in: dir)
        func key(_ mode: String, _ seed: Int) throws -> String {
            let plan = try Experiment.plan(RunRequest(model: "EASE", assignments: [
                "dataset=tiny", "data_path=\(dir)", "eval_args={order: TO, split: {LS: valid_and_test}, mode: \(mode)}", "seed=\(seed)"]))
            return Experiment.runKey(plan: plan, datasetFingerprint: "f")
        }
        #expect(try key("full", 1) == key("full", 2))
        #expect(try key("uni5", 1) != key("uni5", 2))
        // Popularity candidates read alpha and negative_popularity, though EASE draws no negatives.
        func popKey(_ extra: String) throws -> String {
            let plan = try Experiment.plan(RunRequest(model: "EASE", assignments: [
                "dataset=tiny", "data_path=\(dir)", "eval_args={order: TO, split: {LS: valid_and_test}, mode: pop5}", extra]))
            return Experiment.runKey(plan: plan, datasetFingerprint: "f")
        }
        #expect(try popKey("negative_popularity=recbole") != popKey("negative_popularity=train"))
        #expect(try popKey("train_neg_sample_args={distribution: uniform, alpha: 0.5}") != popKey("train_neg_sample_args={distribution: uniform}"))
    }

    @Test func modesAreReadAsRecBoleSpellsThem() throws {
        #expect(RankingMode(parsing: "uni100") == .sampled(negatives: 100, byPopularity: false))
        #expect(RankingMode(parsing: "pop5") == .sampled(negatives: 5, byPopularity: true))
        #expect(RankingMode(parsing: "full") == .full)
        for bad in ["uni0", "uni", "pop-3", "Full"] { #expect(RankingMode(parsing: bad) == nil, "\(bad)") }
        let both = try RankingMode.modes(.map(["valid": .string("full"), "test": .string("uni50")]), origin: "c.yml")
        #expect(both == [.valid: .full, .test: .sampled(negatives: 50, byPopularity: false)])
        // RecBole's rule: a split left out takes the other's mode; none given, both full.
        #expect(try RankingMode.modes(.map(["test": .string("pop7")]), origin: "c.yml")
                == [.valid: .sampled(negatives: 7, byPopularity: true), .test: .sampled(negatives: 7, byPopularity: true)])
        #expect(try RankingMode.modes(.map([:]), origin: "c.yml") == [.valid: .full, .test: .full])
        #expect(try RankingMode.modes(.string("labeled"), origin: "c.yml") == [.valid: .labeled, .test: .labeled])
        for (value, words) in [(ConfigValue.map(["valid": .string("labeled"), "test": .string("full")]), "one split only"),
                               (.string("uni0"), "would rank the positives alone"),
                               (.string("unl100"), "expected full, labeled, uniN or popN"), (.map(["train": .string("full")]), "unknown entry")] {
            #expect { try RankingMode.modes(value, origin: "c.yml") } throws: { "\($0)".contains(words) }
        }
    }
}
