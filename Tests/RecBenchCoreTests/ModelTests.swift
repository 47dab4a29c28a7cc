import Foundation
import Logging
import Testing
import RecBenchCore
import Linalg
import Autodiff

/// Builds a model with its defaults plus overrides, fitted on `split`.
func fitted(_ type: any Recommender.Type, on split: SplitData, dataset: Dataset, _ overrides: [String: ConfigValue] = [:],
            epochs: Int = 60) throws -> any Recommender {
    var values = overrides
    for p in type.parameters where values[p.name] == nil { values[p.name] = p.defaultValue }
    let config = try Config(layers: [ConfigLayer(source: "test", values: values)], modelKeys: ModelRegistry.parameterNames)
    var model = try type.init(parameters: ModelParameters(config: config, declared: type.parameters))
    // Learned models: 60 epochs at lr 0.01 suffice on the tiny fixtures (and keep debug tests fast).
    try model.fit(TrainingData(dataset: dataset, split: split),
                  context: FitContext(seed: 1, compute: Compute(threads: 1), logger: Logger(label: "test"),
                                      training: TrainingSettings(epochs: epochs, learningRate: 0.01)))
    return model
}

func allScores(_ model: any Recommender, users: Int, items: Int) -> Matrix {
    var m = Matrix(rows: users, columns: items)
    model.scores(for: Array(0..<Int32(users))[...], into: &m, compute: Compute(threads: 2))
    return m
}

/// Two taste groups: users 0..<8 like items 0..<6, users 8..<16 like items 6..<12; every
/// user lacks exactly one item of their group from train — it is their test item.
func blockFixture() throws -> (SplitData, Dataset) {
    let dir = Fixtures.temporaryDirectory()
    Fixtures.writeInter(blockRows(), in: dir)
    let cfg = try Fixtures.config(dataPath: dir, extra: ["eval_args": .map(["order": .string("TO"), "split": .map(["LS": .string("test_only")])])])
    let d = try DatasetLoader.load(DataSettings(cfg))
    let parts = try Splitter.split(d.interactions, userCount: d.userCount, settings: SplitSettings(cfg))
    return (SplitData(dataset: d, parts: parts), d)
}

/// The block fixture's rows: users u0…u7 use items i0…i5, u8…u15 use i6…i11; each user's
/// withheld item comes last in time (it goes to test under a leave-one-out split).
func blockRows() -> [(String, String, Double)] {
    var rows: [(String, String, Double)] = []
    for u in 0..<16 {
        let base = u < 8 ? 0 : 6
        let withheld = base + u % 6
        for i in base..<(base + 6) where i != withheld { rows.append(("u\(u)", "i\(i)", Double(i))) }
        rows.append(("u\(u)", "i\(withheld)", 100))
    }
    return rows
}

/// One suite run for every registered model.
@Suite(.serialized) struct ModelConformanceTests {
    /// The block fixture, with side files (and the model's first test settings, which name
    /// their columns) for a model that reads features.
    static func fixture(_ type: any Recommender.Type) throws -> (SplitData, Dataset, [String: ConfigValue]) {
        let (split, d) = type.readsFeatures ? try featureFixture() : try blockFixture()
        return (split, d, type.readsFeatures ? type.testSettings.first ?? [:] : [:])
    }

    @Test(arguments: ModelRegistry.models.map { $0.name })
    func scoresAreFiniteAndRepeatable(model name: String) throws {
        let type = try ModelRegistry.model(named: name)
        let (split, d, settings) = try Self.fixture(type)
        // Same threads for both fits and their scoring (every call states its own, so other
        // suites running concurrently cannot change them): the results must be bit-identical.
        let a = allScores(try fitted(type, on: split, dataset: d, settings), users: d.userCount, items: d.itemCount)
        let b = allScores(try fitted(type, on: split, dataset: d, settings), users: d.userCount, items: d.itemCount)
        #expect(a.isFinite)
        #expect(a == b)
    }

    /// The scorer a model prepares for an evaluation pass (its shared work done once, on two
    /// threads) scores any share of the users as the model scores them all: each share's
    /// rows to rounding (OpenBLAS sums a row in another order when it sits elsewhere in a
    /// tile, so a GEMM's rows depend on their batch in the last bits). And evaluation ranks
    /// the same lists with the same metrics serially, on OpenBLAS's threads, and with each
    /// worker scoring its own share (which cuts the rows a split GEMM cuts).
    @Test(arguments: ModelRegistry.models.map { $0.name })
    func preparedScoresAndEveryThreadSplitAgree(model name: String) throws {
        let type = try ModelRegistry.model(named: name)
        let (split, d, settings) = try Self.fixture(type)
        let model = try fitted(type, on: split, dataset: d, settings)
        var all = Matrix(rows: d.userCount, columns: d.itemCount)
        model.scores(for: Array(0..<Int32(d.userCount))[...], into: &all, compute: .serial)
        let prepared = model.preparedForScoring(compute: Compute(threads: 2))
        for share in [Array(stride(from: Int32(1), to: Int32(d.userCount), by: 2)), [Int32(d.userCount - 1), 0]] {
            var rows = Matrix(rows: share.count, columns: d.itemCount)
            prepared.scores(for: share[...], into: &rows, compute: .serial)
            let expected = RowKernels.gather(all, rows: share)
            let worst = zip(rows.values, expected.values).map { abs($0 - $1) / max(1, abs($1)) }.max()!
            #expect(worst <= 1e-5, "\(name): users \(share) differ by \(worst)")
        }
        let evaluation = EvaluationSettings(metrics: ["NDCG", "Recall", "ItemCoverage"], cutoffs: [1, 3], historyMask: .seen)
        let results = [Compute.serial, Compute(threads: 2), Compute(workers: 2, blasThreads: 1)].map {
            Evaluator.evaluate(model, split: split, part: .test, settings: evaluation, compute: $0)
        }
        for r in results.dropFirst() { #expect(r.topItems == results[0].topItems && r.values == results[0].values) }
    }

    /// (Sequential models read the order, which this fixture does not have: they learn a
    /// ring instead, SequentialModelTests.)
    /// Settings for a model whose defaults memorise this fixture's 80 pairs: PNN's 128-256-128
    /// MLP without dropout learns that each user's withheld item (a frequent sampled negative)
    /// is negative, and ranks it first for 12 users in 16 at any epoch count. NFM's defaults
    /// (no dropout) do the same through e_u ⊙ e_i, even with a 16-unit MLP: dropout stops it.
    static let toySettings: [String: [String: ConfigValue]] = [
        "PNN": ["mlp_hidden_size": .list([.int(16)])],
        "NFM": ["mlp_hidden_size": .list([.int(16)]), "dropout_prob": .double(0.3)],
    ]

    @Test(arguments: ModelRegistry.models.filter { $0.kind != .baseline && $0.family != .sequential }.map { $0.name })
    func personalisedModelsRankTheWithheldItemFirst(model name: String) throws {
        let (split, d) = try blockFixture()
        func mrr(epochs: Int) throws -> Double? {
            let model = try fitted(ModelRegistry.model(named: name), on: split, dataset: d, ["k": .int(5)].merging(Self.toySettings[name] ?? [:]) { $1 },
                                   epochs: epochs)
            return Evaluator.evaluate(model, split: split, part: .test, settings: EvaluationSettings(metrics: ["MRR"], cutoffs: [1], historyMask: .seen),
                                      compute: Compute(threads: 2))["mrr@1"]
        }
        // 60 epochs suffice for most; a slow starter (SpectralCF's sigmoid filters begin near
        // a constant) gets four times as many.
        let r = try mrr(epochs: 60) == 1 ? 1 : mrr(epochs: 240)
        #expect(r == 1, "\(name) missed some withheld items")
    }

    @Test func registryFindsModelsCaseInsensitivelyAndSuggests() throws {
        #expect(try ModelRegistry.model(named: "ease").name == "EASE")
        let e = #expect(throws: RecBenchError.self) { try ModelRegistry.model(named: "ItemKN") }
        #expect(e?.message.contains("did you mean 'ItemKNN'") == true)
    }

    @Test func hyperparametersAreRangeChecked() throws {
        let (split, d) = try blockFixture()
        for (model, settings) in [("EASE", ["reg_weight": ConfigValue.double(-1)]), ("ItemKNN", ["k": .int(0)]),
                                  ("ItemKNN", ["k": .string("many")]), ("MultiVAE", ["latent_dimension": .int(7)])] {
            #expect(throws: RecBenchError.self) { try fitted(ModelRegistry.model(named: model), on: split, dataset: d, settings) }
        }
    }
}

/// EASE and ItemKNN against independent Double implementations of the formulas.
/// Every key of RecBole 1.2.1's `properties/model/<M>.yaml` for a registered model, at its
/// RecBole default, is one the model declares (a config pasted from RecBole's file runs);
/// the ones only their default runs for are refused otherwise, with the key named.
@Suite struct RecBoleModelYAMLTests {
    static let yamlOnlyDefaults: [(model: String, key: String, value: ConfigValue)] = [
        ("NeuMF", "mf_train", .bool(true)), ("NeuMF", "mlp_train", .bool(true)), ("NeuMF", "use_pretrain", .bool(false)),
        ("NeuMF", "mf_pretrain_path", .null), ("NeuMF", "mlp_pretrain_path", .null), ("NAIS", "pretrain_path", .null),
        ("NNCF", "resolution", .int(1)), ("DSSM", "double_tower", .bool(true)), ("ItemKNN", "knn_method", .string("item")),
        ("FPMC", "loss_type", .string("BPR")),
    ]

    func build(_ model: String, _ key: String, _ value: ConfigValue) throws {
        let type = try ModelRegistry.model(named: model)
        let config = try Config(layers: [ConfigLayer(source: "t.yml", values: [key: value])], modelKeys: ModelRegistry.parameterNames)
        _ = try type.init(parameters: ModelParameters(config: config, declared: type.parameters))
    }

    @Test func recBolesModelDefaultsAreAccepted() throws {
        for (model, key, value) in Self.yamlOnlyDefaults { try build(model, key, value) }
    }

    @Test(arguments: [("NeuMF", "mf_train", ConfigValue.bool(false)), ("NeuMF", "mlp_train", .bool(false)), ("NeuMF", "use_pretrain", .bool(true)),
                      ("NAIS", "pretrain_path", .string("fism.pth")), ("DSSM", "double_tower", .bool(false)), ("FPMC", "loss_type", .string("CE")),
                      ("ItemKNN", "knn_method", .string("users"))])
    func whatOnlyRecBoleRunsIsRefused(model: String, key: String, value: ConfigValue) {
        let e = #expect(throws: RecBenchError.self) { try build(model, key, value) }
        #expect(e?.field == key, "\(model) \(key): \(String(describing: e))")
    }
}

@Suite(.serialized) struct ModelFormulaTests {

    /// RecBole's EmbLoss over a batch's rows, by hand: Frobenius norms of the user, positive and
    /// negative rows, summed, over the batch; with `require_pow` squared and halved as well.
    @Test func embLossPenaltyIsRecBolesWithAndWithoutRequirePow() {
        let table = Variable(Matrix(rows: 4, columns: 2, values: [3, 4, 1, 0, 0, 2, 6, 8]))
        let t = GraphTraining.Triples(users: [0, 3], positives: [1, 1], negatives: [2, 0])
        let tape = Tape(compute: .serial)
        // users: rows 0 and 3 → √(9+16+36+64) = √125; positives: 1, 1 → √2; negatives: 2, 0 → √(4+25) = √29.
        let plain = GraphTraining().penalty(table, t, weight: 0.5, tape: tape).value.values[0]
        #expect(abs(plain - 0.5 * (Float(125).squareRoot() + Float(2).squareRoot() + Float(29).squareRoot()) / 2) < 1e-5)
        let squared = GraphTraining().penalty(table, t, weight: 0.5, squared: true, tape: tape).value.values[0]
        #expect(abs(squared - 0.5 * (125 + 2 + 29) / (2 * 2)) < 1e-4)
    }

    /// A random train split over `users × items` with count values (some duplicates).
    func randomSplit(users: Int, items: Int, seed: UInt64) throws -> (SplitData, Dataset) {
        let dir = Fixtures.temporaryDirectory()
        var rng = SeededGenerator(seed: seed)
        var rows: [(String, String, Double)] = []
        for u in 0..<users { for i in 0..<items where rng.nextUnitFloat() < 0.35 {
            rows.append(("u\(u)", "i\(i)", 1))
            if rng.nextUnitFloat() < 0.2 { rows.append(("u\(u)", "i\(i)", 2)) }
        } }
        for i in 0..<items { rows.append(("u0", "i\(i)", 0)) }   // every item occurs
        Fixtures.writeInter(rows, in: dir)
        let cfg = try Fixtures.config(dataPath: dir, extra: ["eval_args": .map(["order": .string("TO"), "split": .map(["RS": .list([.int(1), .int(0)])])])])
        let d = try DatasetLoader.load(DataSettings(cfg))
        let parts = [SplitPart](repeating: .train, count: d.interactions.count)
        return (SplitData(dataset: d, parts: parts), d)
    }

    func dense(_ m: SparseMatrix) -> [[Double]] {
        (0..<m.rows).map { r in (0..<m.columns).map { Double(m[r, $0]) } }
    }

    /// Gauss–Jordan inverse in Double.
    func inverse(_ a: [[Double]]) -> [[Double]] {
        let n = a.count
        var m = a.map { $0 + [Double](repeating: 0, count: n) }
        for i in 0..<n { m[i][n + i] = 1 }
        for c in 0..<n {
            let p = (c..<n).max { abs(m[$0][c]) < abs(m[$1][c]) }!
            m.swapAt(c, p)
            let pivot = m[c][c]
            for j in 0..<(2 * n) { m[c][j] /= pivot }
            for r in 0..<n where r != c {
                let f = m[r][c]
                for j in 0..<(2 * n) { m[r][j] -= f * m[c][j] }
            }
        }
        return m.map { Array($0[n...]) }
    }

    @Test func easeMatchesTheClosedFormInDouble() throws {
        let (split, d) = try randomSplit(users: 40, items: 9, seed: 11)
        let lambda = 3.0
        let x = dense(split.trainMatrix)
        let n = d.itemCount
        var g = [[Double]](repeating: [Double](repeating: 0, count: n), count: n)
        for row in x { for i in 0..<n { for j in 0..<n { g[i][j] += row[i] * row[j] } } }
        for i in 0..<n { g[i][i] += lambda }
        let p = inverse(g)
        var b = p
        for i in 0..<n { for j in 0..<n { b[i][j] = i == j ? 0 : -p[i][j] / p[j][j] } }
        let got = allScores(try fitted(ModelRegistry.model(named: "EASE"), on: split, dataset: d, ["reg_weight": .double(lambda)]),
                            users: d.userCount, items: n)
        for u in 0..<d.userCount { for j in 0..<n {
            let expected = (0..<n).reduce(0.0) { $0 + x[u][$1] * b[$1][j] }
            #expect(abs(Double(got[u, j]) - expected) < 1e-4 * max(1, abs(expected)), "u\(u) j\(j)")
        } }
    }

    @Test func itemKNNMatchesCosineTopKInDouble() throws {
        let (split, d) = try randomSplit(users: 50, items: 10, seed: 12)
        let k = 3, shrink = 2.0
        let x = dense(split.trainMatrix)
        let n = d.itemCount
        let norm = (0..<n).map { i in x.reduce(0.0) { $0 + $1[i] * $1[i] }.squareRoot() }
        var w = [[Double]](repeating: [Double](repeating: 0, count: n), count: n)
        for j in 0..<n {
            var sims = (0..<n).map { i -> Double in
                i == j ? 0 : x.reduce(0.0) { $0 + $1[i] * $1[j] } / (norm[i] * norm[j] + shrink + 1e-6)
            }
            let keep = (0..<n).sorted { sims[$0] != sims[$1] ? sims[$0] > sims[$1] : $0 < $1 }.prefix(k)
            for i in 0..<n where !keep.contains(i) { sims[i] = 0 }
            for i in 0..<n { w[i][j] = sims[i] }
        }
        let got = allScores(try fitted(ModelRegistry.model(named: "ItemKNN"), on: split, dataset: d, ["k": .int(k), "shrink": .double(shrink)]),
                            users: d.userCount, items: n)
        for u in 0..<d.userCount { for j in 0..<n {
            let expected = (0..<n).reduce(0.0) { $0 + x[u][$1] * w[$1][j] }
            #expect(abs(Double(got[u, j]) - expected) < 1e-4 * max(1, abs(expected)), "u\(u) j\(j)")
        } }
    }

    /// RecBole's `knn_method: user`: cosine between users' rows, each user's k nearest kept
    /// (row-wise), score(u, i) = Σ_v W[u, v] x[v, i].
    @Test func userKNNMatchesCosineTopKInDouble() throws {
        let (split, d) = try randomSplit(users: 30, items: 12, seed: 13)
        let k = 4, shrink = 1.0
        let x = dense(split.trainMatrix)
        let m = d.userCount, n = d.itemCount
        let norm = (0..<m).map { u in x[u].reduce(0.0) { $0 + $1 * $1 }.squareRoot() }
        var w = [[Double]](repeating: [Double](repeating: 0, count: m), count: m)
        for u in 0..<m {
            var sims = (0..<m).map { v -> Double in
                v == u ? 0 : (0..<n).reduce(0.0) { $0 + x[u][$1] * x[v][$1] } / (norm[u] * norm[v] + shrink + 1e-6)
            }
            let keep = (0..<m).sorted { sims[$0] != sims[$1] ? sims[$0] > sims[$1] : $0 < $1 }.prefix(k)
            for v in 0..<m where !keep.contains(v) { sims[v] = 0 }
            w[u] = sims
        }
        let got = allScores(try fitted(ModelRegistry.model(named: "ItemKNN"), on: split, dataset: d,
                                       ["k": .int(k), "shrink": .double(shrink), "knn_method": .string("user")]), users: m, items: n)
        for u in 0..<m { for i in 0..<n {
            let expected = (0..<m).reduce(0.0) { $0 + w[u][$1] * x[$1][i] }
            #expect(abs(Double(got[u, i]) - expected) < 1e-4 * max(1, abs(expected)), "u\(u) i\(i)")
        } }
    }

    @Test func repeatPopRanksOwnItemsByCountThenRecencyThenPopularity() throws {
        // User a: x twice, y once (t=1), z once (t=3, more recent than y). User b: w three times.
        let dir = Fixtures.temporaryDirectory()
        Fixtures.writeInter([("a", "x", 0), ("a", "y", 1), ("a", "x", 2), ("a", "z", 3), ("b", "w", 4), ("b", "w", 5), ("b", "w", 6), ("b", "v", 7)], in: dir)
        let d = try DatasetLoader.load(DataSettings(Fixtures.config(dataPath: dir)))
        let split = SplitData(dataset: d, parts: [SplitPart](repeating: .train, count: d.interactions.count))
        let model = try fitted(ModelRegistry.model(named: "RepeatPop"), on: split, dataset: d)
        var block = Matrix(rows: 1, columns: d.itemCount)
        model.scores(for: [d.userIDs["a"]!], into: &block, compute: .serial)
        let ranked = block.values.withUnsafeBufferPointer { TopK.select($0, k: d.itemCount) }.map { d.itemTokens[Int($0)] }
        // Own items: x (2), z (1, recent), y (1, older); then the rest by popularity: w (3), v (1).
        #expect(ranked == ["x", "z", "y", "w", "v"])
    }

    @Test func popScoresAreTrainCounts() throws {
        let (split, d) = try randomSplit(users: 20, items: 6, seed: 13)
        let got = allScores(try fitted(ModelRegistry.model(named: "Pop"), on: split, dataset: d), users: 2, items: d.itemCount)
        let x = dense(split.trainMatrix)
        for j in 0..<d.itemCount { #expect(Double(got[1, j]) == x.reduce(0) { $0 + $1[j] }) }
    }
}
