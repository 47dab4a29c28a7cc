import Foundation
import Logging
import Testing
import RecBenchCore
import Linalg
import Autodiff

/// The block fixture's interactions with side files: `.user` (a token, a float that is not
/// numerical) missing users u12…u15, and `.item` (a token sequence, empty for i3; a
/// numerical float).
func featureFixture(numerical: [String] = ["price"], noPrice: Set<Int> = [], noRow: Set<Int> = [], sizes: Bool = false,
                    missing: String? = nil) throws -> (SplitData, Dataset) {
    let dir = Fixtures.temporaryDirectory()
    let folder = Fixtures.writeInter(blockRows(), in: dir)
    var users = "user_id:token\tage:token\theight:float\n"
    for u in 0..<12 { users += "u\(u)\t\(u == 0 ? missing ?? "young" : ["young", "old", "mid"][u % 3])\t\(150 + u)\n" }
    var items = "item_id:token\tgenre:token_seq\tprice:float" + (sizes ? "\tsizes:float_seq\n" : "\n")
    for i in 0..<12 where !noRow.contains(i) {
        let genre = i == 3 ? "" : i == 4 ? missing ?? "comedy drama" : (i < 6 ? "comedy drama" : "horror")
        items += "i\(i)\t\(genre)\t\(noPrice.contains(i) ? "" : "\(Double(i) / 4)")"
            + (sizes ? "\t1 \(i + 2)\n" : "\n")
    }
    try users.write(toFile: "\(folder)/tiny.user", atomically: true, encoding: .utf8)
    try items.write(toFile: "\(folder)/tiny.item", atomically: true, encoding: .utf8)
    let cfg = try Fixtures.config(dataPath: dir, extra: [
        "load_col": .map(["inter": .list([.string("user_id"), .string("item_id"), .string("timestamp")]),
                          "user": .list([.string("user_id"), .string("age"), .string("height")]),
                          "item": .list([.string("item_id"), .string("genre"), .string("price")] + (sizes ? [.string("sizes")] : []))]),
        "numerical_features": .list(numerical.map { .string($0) }),
        "filter_inter_by_user_or_item": .bool(false),   // keep u12…u15 (RecBole drops them by default)
        "eval_args": .map(["order": .string("TO"), "split": .map(["LS": .string("test_only")])]),
    ])
    let d = try DatasetLoader.load(DataSettings(cfg))
    let parts = try Splitter.split(d.interactions, userCount: d.userCount, settings: SplitSettings(cfg))
    return (SplitData(dataset: d, parts: parts), d)
}

@Suite struct FeatureFieldTests {
    @Test func fieldsFollowRecBolesRules() throws {
        let (_, d) = try featureFixture()
        let features = FeatureFields(d)
        let described = features.fields.map { "\($0.side.rawValue) \($0.name) \($0.type.rawValue) \($0.cardinality)" }
        // ids: 16 users + padding, 12 items + padding; age: 3 values + padding; genre: 3 words
        // + padding; price: one row; height (float, not numerical) is no field.
        #expect(described == ["user user_id token 17", "user age token 4", "item item_id token 13",
                              "item genre token_seq 4", "item price float 1"])
        #expect(features.notes.contains { $0.contains("4 of 16 users have no row in tiny.user") })
        #expect(features.notes.contains { $0.contains("height") && $0.contains("numerical_features") })
        #expect(!features.notes.contains { $0.contains(".inter column") })
        // An .inter float listed as numerical is accepted by the loader but is no field: said once.
        let (_, withTime) = try featureFixture(numerical: ["price", "timestamp"])
        let timed = FeatureFields(withTime)
        #expect(timed.fields.count == features.fields.count)
        #expect(timed.notes.filter { $0.contains(".inter column timestamp") }.count == 1)
    }

    /// pandas reads `NA`, `null`, `None`, … as missing, and RecBole fills a missing token with its
    /// padding id and a missing token sequence with an empty one.
    @Test func aTextPandasReadsAsMissingIsAMissingFeature() throws {
        for text in ["NA", "null", "None", "nan"] {
            let (_, d) = try featureFixture(missing: text)
            let features = FeatureFields(d)
            let age = features.fields.firstIndex { $0.name == "age" }!, genre = features.fields.firstIndex { $0.name == "genre" }!
            #expect(features.fields[age].cardinality == 4 && features.fields[genre].cardinality == 4, "\(text)")   // no new value
            #expect(Array(features.sums[age].columns(ofRow: Int(d.userIDs["u0"]!))) == [0], "\(text)")   // the padding row
            #expect(features.sums[genre].entries(ofRow: Int(d.itemIDs["i4"]!)).isEmpty, "\(text)")
        }
    }

    /// A side-file row whose id pandas reads as missing is refused, as in the interaction file.
    @Test func aSideFileIDThatPandasReadsAsMissingIsRefused() throws {
        let dir = Fixtures.temporaryDirectory()
        let folder = Fixtures.writeInter(blockRows(), in: dir)
        try "item_id:token\tprice:float\ni0\t1\nnull\t2\n".write(toFile: "\(folder)/tiny.item", atomically: true, encoding: .utf8)
        let cfg = try Fixtures.config(dataPath: dir, extra: ["load_col": .map(["inter": .list([.string("user_id"), .string("item_id")]),
                                                                               "item": .list([.string("item_id"), .string("price")])])])
        let e = #expect(throws: RecBenchError.self) { try DatasetLoader.load(DataSettings(cfg)) }
        #expect(e?.location == "\(folder)/tiny.item:3" && e?.message.contains("'null' is a missing value") == true, "\(String(describing: e))")
    }

    @Test func bagsPoolAsRecBoleDoes() throws {
        let (_, d) = try featureFixture()
        let features = FeatureFields(d)
        let genre = features.fields.firstIndex { $0.name == "genre" }!, price = features.fields.firstIndex { $0.name == "price" }!
        let age = features.fields.firstIndex { $0.name == "age" }!
        let i0 = Int(d.itemIDs["i0"]!), i3 = Int(d.itemIDs["i3"]!), i8 = Int(d.itemIDs["i8"]!)
        // "comedy drama": two rows, mean weights ½, sum weights 1.
        #expect(features.means[genre].columns(ofRow: i0).count == 2)
        #expect(features.means[genre].values[features.means[genre].entries(ofRow: i0)].allSatisfy { $0 == 0.5 })
        #expect(features.sums[genre].values[features.sums[genre].entries(ofRow: i0)].allSatisfy { $0 == 1 })
        // An empty sequence pools to zero.
        #expect(features.means[genre].entries(ofRow: i3).isEmpty)
        // A numerical float is its value on the field's one row.
        #expect(features.sums[price][i8, 0] == 2)
        // A user without a .user row gets the padding row 0 for nothing: no entries (zero vector)
        // in a token field would differ from RecBole, whose missing token is the padding id.
        let u13 = Int(d.userIDs["u13"]!), u1 = Int(d.userIDs["u1"]!)
        #expect(features.sums[age].columns(ofRow: u13).elementsEqual([0]))
        #expect(features.sums[age].columns(ofRow: u1).count == 1 && features.sums[age].columns(ofRow: u1).first! > 0)
    }

    /// A float column's missing values (an empty field, an item without a row) are the column's
    /// mean over the items that have one, as RecBole's `_fill_nan` fills them (they were NaN and 0).
    @Test func missingFloatsAreTheColumnsMean() throws {
        let (_, d) = try featureFixture(noPrice: [5], noRow: [9])
        let features = FeatureFields(d), price = features.fields.firstIndex { $0.name == "price" }!
        let given = (0..<12).filter { $0 != 5 && $0 != 9 }.map { Double($0) / 4 }
        let mean = Float(given.reduce(0, +) / Double(given.count))
        for i in [5, 9] { #expect(features.sums[price][Int(d.itemIDs["i\(i)"]!), 0] == mean, "i\(i)") }
        #expect(features.sums[price][Int(d.itemIDs["i8"]!), 0] == 2)
        #expect(features.sums[price].values.allSatisfy { $0.isFinite })
        // RecBole's table for a float field has two rows (its bucket count), which set the init's std.
        #expect(features.fields[price].declaredRows == 2 && features.fields[price].cardinality == 1)
    }

    /// A float_seq field: GRU4RecF's sum pooling reads Σ v (`sums`), the second-order embedding
    /// and RecBole's first-order term (`FMFirstOrderLinear`, mode mean) the mean of the values.
    @Test func aFloatSequenceIsAveragedInTheFirstOrderTerm() throws {
        let (_, d) = try featureFixture(numerical: ["price", "sizes"], sizes: true)
        let features = FeatureFields(d), inputs = ContextInputs(features)
        let f = try #require(features.fields.firstIndex { $0.name == "sizes" }), i4 = Int(d.itemIDs["i4"]!)
        #expect(features.fields[f].floatSequence && features.fields[f].type == .float)
        #expect(features.sums[f][i4, 0] == 7 && features.means[f][i4, 0] == 3.5)   // values 1 and 6
        #expect(inputs.sums[f].values[inputs.sums[f].entries(ofRow: i4)] == [3.5])
        let price = features.fields.firstIndex { $0.name == "price" }!
        #expect(inputs.sums[price].values[inputs.sums[price].entries(ofRow: i4)] == [1] && !features.fields[price].floatSequence)
    }

    @Test func numericalFeaturesMustBeFloatColumns() throws {
        #expect { _ = try featureFixture(numerical: ["age"]) } throws: { error in
            "\(error)".contains("tiny.user") && "\(error)".contains("age") && "\(error)".contains("token")
        }
        #expect { _ = try featureFixture(numerical: ["prise"]) } throws: { error in
            "\(error)".contains("numerical_features") && "\(error)".contains("price")
        }
    }
}

/// Each context-aware model's fast full-ranking scorer against its per-pair logits.
@Suite(.serialized) struct ContextScorerTests {
    func check<M: PointwiseModel>(_ type: M.Type, _ overrides: [String: ConfigValue]) throws {
        let (split, d) = try featureFixture()
        let data = TrainingData(dataset: d, split: split)
        var model = try Fixtures.model(M.self, overrides)
        var rng = SeededGenerator(seed: 5)
        var parameters = model.prepare(data, context: FitContext(seed: 5, compute: Compute(threads: 1), logger: Logger(label: "test")), rng: &rng)
        // Random values everywhere (the bias starts at 0), large enough that every term matters;
        // running statistics (BN's) positive, as a variance must be.
        for name in parameters.names {
            let positive = parameters.statistics.contains(name)
            parameters.update(name) { m in
                for i in m.values.indices { m.values[i] = Float(positive ? rng.nextUnitFloat() + 0.5 : rng.nextUnitFloat() * 2 - 1) }
            }
        }
        model.parameters = parameters
        var block = Matrix(rows: d.userCount, columns: d.itemCount)
        model.scores(for: Array(0..<Int32(d.userCount))[...], into: &block, compute: Compute(threads: 2))
        let users = (0..<Int32(d.userCount)).flatMap { u in [Int32](repeating: u, count: d.itemCount) }
        let items = (0..<Int32(d.userCount)).flatMap { _ in Array(0..<Int32(d.itemCount)) }
        let tape = Tape(compute: .serial)
        let naive = model.logits(users: users, items: items, tape.leaves(model.parameters) { _ in false }, tape: tape).value
        var worst: Float = 0
        for k in 0..<users.count { worst = max(worst, abs(naive.values[k] - block.values[k]) / max(1, abs(naive.values[k]))) }
        #expect(worst <= 1e-5, "\(M.name): fast scores differ from per-pair logits by \(worst)")
        // Labelled evaluation's pair scores, over a shuffled list of pairs: the same logits.
        let order = users.indices.shuffled(using: &rng)
        let pairs = model.pairScores(users: order.map { users[$0] }, items: order.map { items[$0] }, compute: Compute(threads: 2))
        let pairWorst = zip(order, pairs).map { abs(block.values[$0] - $1) / max(1, abs(block.values[$0])) }.max() ?? 0
        #expect(pairWorst <= 1e-5, "\(M.name): pair scores differ from the fast scores by \(pairWorst)")
        #expect(Set(block.values).count > d.itemCount)   // not a constant or per-item-only score
    }

    /// Every registered pointwise model (the context-aware ones and NeuMF, whose split-MLP
    /// scorer is the same kind), in each of its declared test settings.
    static let checked: [String] = ModelRegistry.models.filter { $0 is any PointwiseModel.Type }.map { $0.name }

    @Test(arguments: checked)
    func fastScoresAreThePerPairLogits(model name: String) throws {
        let model = try #require(try ModelRegistry.model(named: name) as? any PointwiseModel.Type)
        for settings in model.testSettings { try check(model, settings) }
    }

    @Test func everyPointwiseModelIsChecked() {
        #expect(Self.checked.count >= 4, "checked: \(Self.checked)")
    }
}

/// BatchNorm's running statistics are model state the trainer moves after each batch (they
/// are never trained, and evaluation reads them).
@Suite struct BatchNormTrainingTests {
    @Test func runningStatisticsMoveWithTrainingAndStayStatistics() throws {
        let (split, d) = try featureFixture()
        let model = try #require(try fitted(try ModelRegistry.model(named: "NFM"), on: split, dataset: d,
                                            ["embedding_size": .int(3), "mlp_hidden_size": .list([.int(4)])], epochs: 3) as? any LearnedModel)
        let p = model.parameters
        #expect(p.statistics == ["bi.bn.running_mean", "bi.bn.running_var", "deep.0.bn.running_mean", "deep.0.bn.running_var"])
        for name in p.statistics {
            let values = p[name].values, initial: Float = name.hasSuffix("var") ? 1 : 0
            #expect(values.allSatisfy(\.isFinite) && values.contains { abs($0 - initial) > 1e-4 }, "\(name): \(values)")
            if name.hasSuffix("var") { #expect(values.allSatisfy { $0 > 0 }, "\(name)") }
        }
        // γ is trained (it moved from 1); the running mean is not a gradient step's result.
        #expect(p["deep.0.bn.weight"].values.contains { abs($0 - 1) > 1e-4 })
    }
}
