import Foundation
import Testing
import RecBenchCore
import Linalg

/// The negative sampler (RecBole 1.2's uniform sampler: items the user has not had in
/// train) and the membership tests it and evaluation ask.
struct SamplingTests {
    /// A 50 × 300 pattern with a few dozen items per user, one user with every item, one with none.
    func history() -> SparseMatrix {
        var rng = SeededGenerator(seed: 11)
        var rows: [Int32] = [], columns: [Int32] = []
        for u in 0..<50 {
            let count = u == 0 ? 300 : (u == 1 ? 0 : 5 + rng.nextInt(below: 60))
            var items = Set<Int32>()
            while items.count < count { items.insert(Int32(rng.nextInt(below: 300))) }
            for i in items { rows.append(Int32(u)); columns.append(i) }
        }
        return SparseMatrix(rows: 50, columns: 300, rowIndices: rows, columnIndices: columns)
    }

    @Test func bitmapAndSearchAgreeWithTheMatrixOnEveryCell() {
        let m = history()
        let bitmap = PatternSet(m), searched = PatternSet(m, bitmapLimit: 0)
        #expect(bitmap.isBitmap && !searched.isBitmap)
        for r in 0..<m.rows {
            for c in 0..<m.columns {
                let stored = m.columns(ofRow: r).contains(Int32(c))
                #expect(bitmap.contains(row: r, column: c) == stored)
                #expect(searched.contains(row: r, column: c) == stored)
                #expect(m.contains(row: r, column: c) == stored)   // rows of up to 32 compared whole, longer ones searched
            }
        }
    }

    @Test func negativesAreNeverTrainItemsAndAreUniformOverTheRest() {
        let m = history(), set = PatternSet(m)
        var rng = SeededGenerator(seed: 5)
        let user = 7, had = Set(m.columns(ofRow: user).map(Int.init))
        let draws = 60_000
        var counts = [Int](repeating: 0, count: m.columns)
        for _ in 0..<draws { counts[Int(Sampling.negative(for: user, history: set, rng: &rng))] += 1 }
        for item in had { #expect(counts[item] == 0, "item \(item) is in the user's train history") }
        // Each of the other items: expected draws / (n − |had|); allow 5 standard deviations.
        let others = m.columns - had.count
        let expected = Double(draws) / Double(others)
        let bound = 5 * (expected * (1 - 1 / Double(others))).squareRoot()
        for item in 0..<m.columns where !had.contains(item) {
            #expect(abs(Double(counts[item]) - expected) < bound, "item \(item): \(counts[item]) draws, expected ≈ \(expected)")
        }
    }

    @Test func aUserWithEveryItemGetsAUniformItemAndAUserWithNoneAnyItem() {
        let m = history(), set = PatternSet(m)
        var rng = SeededGenerator(seed: 9)
        var seen = Set<Int32>()
        for _ in 0..<5_000 { seen.insert(Sampling.negative(for: 0, history: set, rng: &rng)) }
        #expect(seen.count > 290)   // 5,000 draws over 300 items miss any one with p ≈ 6·10⁻⁸
        seen = []
        for _ in 0..<5_000 { seen.insert(Sampling.negative(for: 1, history: set, rng: &rng)) }
        #expect(seen.count > 290)
    }

    @Test func theBitmapDrawsTheSameNegativesAsTheSearch() {
        let m = history()
        let bitmap = PatternSet(m), searched = PatternSet(m, bitmapLimit: 0)
        var a = SeededGenerator(seed: 3), b = SeededGenerator(seed: 3)
        for k in 0..<2_000 {
            let user = k % m.rows
            #expect(Sampling.negative(for: user, history: bitmap, rng: &a) == Sampling.negative(for: user, history: searched, rng: &b))
        }
    }
}

/// RecBole 1.2.1's pairwise loader (`TrainDataLoader`): a batch of `train_batch_size` rows
/// holds batch size / `sample_num` train pairs, each once per drawn negative.
struct PairwiseBatchTests {
    /// Through `LearnedModel`, the witness the trainer calls.
    static func examplesPerBatch<M: LearnedModel>(_ model: M, _ training: TrainingSettings) -> Int { model.examplesPerBatch(training) }

    @Test func everyModelRecBoleTrainsOnPairwiseRowsFitsBatchSizeOverSampleNumPairs() throws {
        let three = TrainingSettings(batchSize: 100, negativesPerPositive: 3), one = TrainingSettings(batchSize: 100)
        var pairwise: Set<String> = []
        for type in ModelRegistry.models {
            guard let model = try ModelRegistry.model(named: type.name, hyperparameters: [:]) as? any PairwiseModel else { continue }
            #expect(Self.examplesPerBatch(model, three) == 33, "\(type.name)")
            #expect(Self.examplesPerBatch(model, one) == 100, "\(type.name)")
            pairwise.insert(type.name)
        }
        // RecBole's `InputType.PAIRWISE` general models whose loss reads the drawn negative item.
        #expect(pairwise == ["BPR", "LINE", "LightGCN", "NGCF", "SpectralCF", "DGCF", "GCMC"])
    }

    @Test func aGraphBatchHoldsEachPairOncePerNegativeAndDrawsOnlyUnseenItems() throws {
        let (split, d) = try blockFixture()
        let data = TrainingData(dataset: d, split: split)
        let training = GraphTraining(data)
        let batch = TrainingBatch(examples: [4, 0, 2][...], pass: .all, step: 1, negatives: 3)
        #expect(batch.pairwiseRows == [4, 0, 2, 4, 0, 2, 4, 0, 2])
        var rng = SeededGenerator(seed: 1)
        let t = training.triples(batch, rng: &rng)
        let once = training.triples(TrainingBatch(examples: [4, 0, 2][...], pass: .all, step: 1), rng: &rng)
        #expect(once.users.count == 3 && t.users.count == 9)
        #expect(t.users == once.users.flatMap { Array(repeating: $0, count: 3) })
        #expect(t.positives == once.positives.flatMap { Array(repeating: $0, count: 3) })
        for (u, j) in zip(t.users, t.negatives) {
            let item = Int(j) - training.graph.users
            #expect(item >= 0 && item < data.itemCount && !data.trainMatrix.contains(row: Int(u), column: item))
        }
    }
}

/// RecBole 1.2.1's popularity sampler (`train_neg_sample_args.distribution: popularity`):
/// item i with probability ∝ count(i)^alpha, never an item the user has had in train.
struct PopularityNegativeTests {
    /// One user who has had item 3, over six items.
    let history = PatternSet(SparseMatrix(rows: 1, columns: 6, rowIndices: [0], columnIndices: [3]))

    @Test(arguments: [1.0, 0.5])
    func drawsFollowCountsToTheAlphaAmongUnseenItems(alpha: Double) {
        let counts = [0, 1, 2, 4, 8, 16]
        let negatives = NegativeItems(counts: counts, alpha: alpha)
        var rng = SeededGenerator(seed: 4)
        let draws = 100_000
        var seen = [Int](repeating: 0, count: counts.count)
        for _ in 0..<draws { seen[Int(negatives.draw(for: 0, history: history, rng: &rng))] += 1 }
        #expect(seen[0] == 0, "an item never counted is never drawn")
        #expect(seen[3] == 0, "the user's own item is never drawn")
        let weights = counts.enumerated().map { $0.offset == 3 ? 0 : pow(Double($0.element), alpha) }
        let total = weights.reduce(0, +)
        for item in [1, 2, 4, 5] {
            let p = weights[item] / total, expected = Double(draws) * p
            let bound = 5 * (Double(draws) * p * (1 - p)).squareRoot()
            #expect(abs(Double(seen[item]) - expected) < bound, "item \(item): \(seen[item]) draws, expected ≈ \(expected)")
        }
    }

    /// Uniform negatives are `Sampling.negative`'s draws, stream for stream (so runs under the default are unchanged).
    @Test func uniformDrawsAreTheSamplersOwn() {
        let m = SamplingTests().history(), set = PatternSet(m)
        var a = SeededGenerator(seed: 12), b = SeededGenerator(seed: 12)
        for k in 0..<3_000 {
            #expect(NegativeItems.uniform.draw(for: k % m.rows, history: set, rng: &a) == Sampling.negative(for: k % m.rows, history: set, rng: &b))
        }
    }

    @Test func aUserWhoHasHadEveryCountedItemGetsAnUnseenOne() {
        let negatives = NegativeItems(counts: [0, 0, 5, 0, 0, 0], alpha: 1)
        let had = PatternSet(SparseMatrix(rows: 1, columns: 6, rowIndices: [0], columnIndices: [2]))
        var rng = SeededGenerator(seed: 6)
        var seen = Set<Int32>()
        for _ in 0..<2_000 { seen.insert(negatives.draw(for: 0, history: had, rng: &rng)) }
        #expect(seen == [0, 1, 3, 4, 5], "uniform over the items the user has not had: \(seen.sorted())")
    }

    @Test func nextItemDrawsFollowPopularityAndNeverTheTarget() {
        let negatives = NegativeItems(counts: [1, 0, 3], alpha: 1)
        var rng = SeededGenerator(seed: 8)
        let drawn = negatives.draw(otherThan: Array(repeating: 2, count: 4_000) + Array(repeating: 0, count: 100), items: 3, rng: &rng)
        #expect(drawn[..<4_000].allSatisfy { $0 == 0 } && drawn[4_000...].allSatisfy { $0 == 2 })
        let single = NegativeItems(counts: [0, 4, 0], alpha: 1)
        let others = single.draw(otherThan: Array(repeating: 1, count: 400) + [0], items: 3, rng: &rng)
        #expect(Set(others[..<400]) == [0, 2], "the only counted item is the target: uniform among the others")
        #expect(others[400] == 1)
    }

    /// Item `z` appears once, in one user's test row: RecBole's counts include it, train's do not.
    @Test func countsComeFromEverySplitOrFromTrain() throws {
        let dir = Fixtures.temporaryDirectory()
        var rows = blockRows()
        rows.append(("u0", "z", 1_000))
        Fixtures.writeInter(rows, in: dir)
        let cfg = try Fixtures.config(dataPath: dir, extra: ["eval_args": .map(["order": .string("TO"), "split": .map(["LS": .string("test_only")])])])
        let d = try DatasetLoader.load(DataSettings(cfg))
        let data = TrainingData(dataset: d, split: SplitData(dataset: d, parts: try Splitter.split(d.interactions, userCount: d.userCount,
                                                                                                    settings: SplitSettings(cfg))))
        let z = d.itemIDs["z"]!, u0 = Int(d.userIDs["u0"]!), u9 = Int(d.userIDs["u9"]!)
        #expect(data.split.testMatrix.contains(row: u0, column: Int(z)) && (0..<d.userCount).allSatisfy { !data.trainMatrix.contains(row: $0, column: Int(z)) })
        func drawsOfZ(_ counts: NegativeDistribution.Counts) -> Int {
            let negatives = NegativeItems(.popularity(alpha: 1, counts: counts), data: data)
            var rng = SeededGenerator(seed: 2)
            return (0..<20_000).filter { _ in negatives.draw(for: u9, history: PatternSet(data.trainMatrix), rng: &rng) == z }.count
        }
        #expect(drawsOfZ(.train) == 0)
        #expect(drawsOfZ(.recbole) > 50, "z is 1 of the 57 counted interactions u9 may draw")
    }

    @Test func theConfigNamesTheDistributionAlphaAndCounts() throws {
        func settings(_ yaml: String) throws -> TrainingSettings {
            try TrainingSettings(try Config(layers: [try ConfigLayer.yaml(yaml, source: "c.yml")], modelKeys: ModelRegistry.parameterNames))
        }
        #expect(try settings("epochs: 1\n").negativeDistribution == .uniform)
        #expect(try settings("train_neg_sample_args: {distribution: popularity, sample_num: 2, alpha: 0.5}\n").negativeDistribution
                == .popularity(alpha: 0.5, counts: .recbole))
        let train = try settings("train_neg_sample_args: {distribution: popularity}\nnegative_popularity: train\n")
        #expect(train.negativeDistribution == .popularity(alpha: 1, counts: .train) && train.negativesPerPositive == 1)
        for (yaml, words) in [("train_neg_sample_args: {distribution: pop}\n", "uniform, popularity or none, got 'pop'"),
                              ("train_neg_sample_args: {distribution: popularity, alpha: x}\n", "alpha must be a number"),
                              ("train_neg_sample_args: {distribution: popularity}\nnegative_popularity: test\n", "expected recbole or train")] {
            #expect { try settings(yaml) } throws: { "\($0)".contains(words) }
        }
    }
}
