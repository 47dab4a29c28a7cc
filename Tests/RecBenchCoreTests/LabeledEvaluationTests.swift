import Testing
import Foundation
import Logging
import RecBenchCore

/// RecBole's labelled evaluation (`eval_args.mode: labeled`): the value metrics, the labels a
/// threshold makes, the settings that go with them, and a run that must learn from the labels.
@Suite struct ValueMetricTests {
    @Test func aucCountsPairsAndHalvesTies() throws {
        // Positives 0.35 and 0.8 against negatives 0.1 and 0.4: three of four pairs won.
        #expect(ValueMetric.auc.value(probabilities: [0.1, 0.4, 0.35, 0.8], labels: [0, 0, 1, 1]) == 0.75)
        // A positive tied with a negative counts half: pairs (0.5 vs 0.5) ½, (0.5 vs 0.2) 1, (0.9 vs both) 2 → 3.5 / 4.
        #expect(ValueMetric.auc.value(probabilities: [0.5, 0.5, 0.2, 0.9], labels: [1, 0, 0, 1]) == 0.875)
        // Only label 1 is a positive (RecBole's `trues == 1`): 0.5 is a negative here.
        #expect(ValueMetric.auc.value(probabilities: [0.9, 0.8, 0.1], labels: [0.5, 1, 0]) == 0.5)
        #expect(ValueMetric.auc.value(probabilities: [0.2, 0.7], labels: [1, 1]) == nil)
    }

    @Test func lossesAreMeansOverRows() throws {
        let p = [0.8, 0.4], t: [Float] = [1, 0]
        let logLoss = try #require(ValueMetric.logLoss.value(probabilities: p, labels: t))
        #expect(abs(logLoss - -(log(0.8) + log(0.6)) / 2) < 1e-12)
        // p = 0 for a positive is clipped to 1e-15, as RecBole clips: a finite loss.
        #expect(abs(try #require(ValueMetric.logLoss.value(probabilities: [0], labels: [1])) - -log(1e-15)) < 1e-9)
        #expect(abs(try #require(ValueMetric.mae.value(probabilities: p, labels: t)) - 0.3) < 1e-12)
        let rmse = try #require(ValueMetric.rmse.value(probabilities: p, labels: t)), expected: Double = (0.02 + 0.08).squareRoot()
        #expect(abs(rmse - expected) < 1e-12)
        #expect(ValueMetric.auc.biggerIsBetter && !ValueMetric.logLoss.biggerIsBetter)
    }
}

/// A scorer without pair scores: z(u, i) = u + i / 10.
struct RowOnlyScorer: Scorer {
    func scores(for users: ArraySlice<Int32>, into block: inout Matrix, compute: Compute) {
        for (b, u) in users.enumerated() { for i in 0..<block.columns { block[b, i] = Float(u) + Float(i) / 10 } }
    }
}

@Suite struct LabeledEvaluationPassTests {
    /// A scorer with no pair scores fills its users' rows a block at a time (one user each here, users out of order
    /// and repeated): every row must read its own item's column.
    @Test func rowsReadTheirOwnScoresThroughBlocks() throws {
        let target = LabeledTarget(part: .test, users: [2, 0, 1, 0], items: [1, 3, 0, 2], labels: [1, 0, 1, 0], itemCount: 4)
        let settings = EvaluationSettings(metrics: ["Recall"], cutoffs: [1], batchSize: 1)
        let result = LabeledEvaluation.evaluate(RowOnlyScorer(), target: target, metrics: [.auc, .logLoss], settings: settings, compute: .serial)
        let p = [2.1, 0.3, 1.0, 0.2].map { 1 / (1 + exp(-$0)) }
        #expect(result.values["auc"] == 1 && result.labelledRows == 4 && result.nonFiniteRows == 0)
        #expect(abs(result.values["logloss"]! - ValueMetric.logLoss.value(probabilities: p, labels: target.labels)!) < 1e-6)
    }
}

@Suite struct LabeledDataTests {
    /// `tiny` with a rating column: user u rates item i 5 when their tastes match (u, i both even or
    /// both odd), else 1; rows `missing` have no rating.
    /// With `labelColumn`, a `label:float` column too (1 where the rating is 5, else 0.25).
    static func ratedFixture(users: Int = 40, items: Int = 30, missing: Set<Int> = [], labelColumn: Bool = false) -> String {
        let dir = Fixtures.temporaryDirectory()
        var text = "user_id:token\titem_id:token\trating:float\ttimestamp:float" + (labelColumn ? "\tlabel:float\n" : "\n"), row = 0
        for u in 0..<users {
            for i in 0..<items where (u * 7 + i * 3) % 5 != 0 && (u < 3 || i < 25) {   // users 0-2 have more rows than the rest
                let match = u % 2 == i % 2
                text += "u\(u)\ti\(i)\t\(missing.contains(row) ? "" : (match ? "5" : "1"))\t\(row)" + (labelColumn ? "\t\(match ? 1 : 0.25)\n" : "\n")
                row += 1
            }
        }
        try! FileManager.default.createDirectory(atPath: "\(dir)/tiny", withIntermediateDirectories: true)
        try! text.write(toFile: "\(dir)/tiny/tiny.inter", atomically: true, encoding: .utf8)
        return dir
    }

    static func settings(_ dir: String, _ extra: [String: ConfigValue]) throws -> DataSettings {
        try DataSettings(Fixtures.config(dataPath: dir, extra: [
            "RATING_FIELD": .string("rating"),
            "load_col": .map(["inter": .list([.string("user_id"), .string("item_id"), .string("rating"), .string("timestamp")])]),
        ].merging(extra) { _, new in new }))
    }

    @Test func aThresholdLabelsRowsAtOrAboveIt() throws {
        let dir = Self.ratedFixture()
        let d = try DatasetLoader.load(Self.settings(dir, ["threshold": .map(["rating": .int(5)])]))
        let labels = try #require(d.interactions.labels), ratings = try #require(d.interactions.ratings)
        #expect(zip(labels, ratings).allSatisfy { $0 == ($1 >= 5 ? 1 : 0) })
        #expect(Set(labels) == [0, 1])
        // Without a threshold and without a label column, the data is unlabelled.
        #expect(try DatasetLoader.load(Self.settings(dir, [:])).interactions.labels == nil)
        // Labels follow their rows through filtering: only users 0-2 have more than 20 rows (24), and each kept row's label is its
        // (user, item) parity rule, as written.
        let kept = try DatasetLoader.load(Self.settings(dir, ["threshold": .map(["rating": .int(5)]),
                                                              "user_inter_num_interval": .string("[22,inf)")]))
        let inter = kept.interactions, keptLabels = try #require(inter.labels)
        #expect(Set(inter.users.map { kept.userTokens[Int($0)] }) == ["u0", "u1", "u2"])
        let parity = { (token: String) in Int(token.dropFirst())! % 2 }
        #expect((0..<inter.count).allSatisfy { r in
            keptLabels[r] == (parity(kept.userTokens[Int(inter.users[r])]) == parity(kept.itemTokens[Int(inter.items[r])]) ? 1 : 0)
        })
    }

    /// A `LABEL_FIELD` column is read as it is when `load_col` names it (and binarised by a threshold on it); a stray
    /// one that nothing asks for is left alone, so an unlabelled run stays what it was.
    @Test func aLabelColumnIsReadOnlyWhenAskedFor() throws {
        let dir = Self.ratedFixture(labelColumn: true)
        let columns: [String: ConfigValue] = ["load_col": .map(["inter": .list(["user_id", "item_id", "label", "timestamp"].map { .string($0) })])]
        let asIs = try #require(try DatasetLoader.load(Self.settings(dir, columns)).interactions.labels)
        #expect(Set(asIs) == [1, 0.25])
        let binary = try #require(try DatasetLoader.load(Self.settings(dir, columns.merging(["threshold": .map(["label": .double(0.5)])]) { _, b in b }))
            .interactions.labels)
        #expect(zip(asIs, binary).allSatisfy { $1 == ($0 >= 0.5 ? 1 : 0) })
        #expect(try DatasetLoader.load(Self.settings(dir, ["load_col": .null])).interactions.labels == nil)
    }

    @Test func badThresholdsAreRefusedWithTheirKey() throws {
        let dir = Self.ratedFixture(missing: [3])
        func message(_ extra: [String: ConfigValue]) -> String {
            do { _ = try DatasetLoader.load(Self.settings(dir, extra)); return "" } catch { return "\(error)" }
        }
        #expect(message(["threshold": .map(["rating": .int(4), "timestamp": .int(1)])]).contains("exactly one column"))
        #expect(message(["threshold": .map(["timestamp": .int(4)])]).contains("neither RATING_FIELD"))
        #expect(message(["threshold": .map(["rating": .string("high")])]).contains("a number"))
        let missing = message(["threshold": .map(["rating": .int(4)])])
        #expect(missing.contains("tiny.inter:5:") && missing.contains("rating"), "\(missing)")
        let unloaded = message(["threshold": .map(["rating": .int(4)]),
                                "load_col": .map(["inter": .list([.string("user_id"), .string("item_id")])])])
        #expect(unloaded.contains("load_col leaves out"), "\(unloaded)")
    }

    @Test func labelledTrainingUsesEachRowsOwnLabel() throws {
        let dir = Self.ratedFixture()
        let cfg = try Fixtures.config(dataPath: dir, extra: [
            "RATING_FIELD": .string("rating"), "threshold": .map(["rating": .int(4)]),
            "load_col": .map(["inter": .list([.string("user_id"), .string("item_id"), .string("rating"), .string("timestamp")])]),
        ])
        let d = try DatasetLoader.load(DataSettings(cfg))
        let split = SplitData(dataset: d, parts: try Splitter.split(d.interactions, userCount: d.userCount, settings: SplitSettings(cfg)))
        let data = TrainingData(dataset: d, split: split)
        let sampler = PointwiseSampler(data, negatives: 0, labelled: true)
        var rng = SeededGenerator(seed: 1)
        let batch = sampler.batch(Array(0..<sampler.count)[...], rng: &rng)
        #expect(batch.users.count == split.sizes[.train])   // no drawn rows
        let inter = d.interactions, labels = try #require(inter.labels)
        var labelOf: [String: Float] = [:]
        for r in 0..<inter.count { labelOf["\(inter.users[r]) \(inter.items[r])"] = labels[r] }
        let matching = (0..<batch.users.count).filter { k in labelOf["\(batch.users[k]) \(batch.items[k])"] == batch.labels[k] }
        #expect(matching.count == batch.users.count)
        #expect(Set(batch.labels) == [0, 1])
    }
}

@Suite struct LabeledRunTests {
    static func assignments(_ dir: String, _ extra: [String] = []) -> [String] {
        ["dataset=tiny", "data_path=\(dir)", "RATING_FIELD=rating", "threshold={rating: 4}",
         "load_col={inter: [user_id, item_id, rating, timestamp]}", "eval_args={split: {RS: [0.8, 0.1, 0.1]}, order: RO, group_by: ~, mode: labeled}",
         "epochs=60", "stopping_step=60", "learning_rate=0.02", "train_batch_size=256", "threads=1",
         "checkpoint_dir=null", "embedding_size=4"] + extra
    }

    /// Whether a rating matches is an interaction of user and item: FM trained on the labels ranks the
    /// matching rows first (AUC near 1); trained on drawn negatives instead (every row then a positive,
    /// as RecBole overwrites the labels), it learns what was rated, which says nothing about the label.
    @Test func fmLearnsTheLabelsAndOnlyFromThem() throws {
        let dir = LabeledDataTests.ratedFixture()
        let plan = try Experiment.plan(RunRequest(model: "FM", assignments: Self.assignments(dir)))
        // RecBole's context-aware quick start for what no file sets: AUC and LogLoss, selecting on AUC, no drawn negatives.
        #expect(plan.evaluation.keys == ["auc", "logloss"] && plan.evaluation.validMetric == "auc")
        #expect(plan.training.negativesPerPositive == 0 && plan.config.origin(of: "train_neg_sample_args").contains("context-aware.yaml"))
        let outcome = try Experiment.run(plan, logger: Logger(label: "test"))
        #expect(outcome.test.values["auc"]! > 0.95, "labelled: auc \(outcome.test.values["auc"]!)")
        #expect(outcome.test.labelledRows == outcome.result.split.test && outcome.result.metricKeys == ["auc", "logloss"])
        let drawn = try Experiment.plan(RunRequest(model: "FM", assignments: Self.assignments(dir, [
            "train_neg_sample_args={distribution: uniform, sample_num: 1}"])))
        let unlabelled = try Experiment.run(drawn, logger: Logger(label: "test"))
        #expect(unlabelled.test.values["auc"]! < 0.75, "negatives drawn: auc \(unlabelled.test.values["auc"]!)")
        #expect(drawn.recBoleNotes.contains { $0.contains("every train row trains as a positive") })

        // The report keeps labelled runs in a table of their own: value metrics as columns, sorted by AUC, the least LogLoss in bold.
        let folder = Fixtures.temporaryDirectory(), store = ResultStore(root: folder)
        _ = try store.save(outcome.result)
        _ = try store.save(unlabelled.result)
        let report = try Report.load(directory: folder)
        let g = try #require(report.groups.first)
        #expect(report.groups.count == 1 && g.isLabeled && report.columns(g) == ["auc", "logloss"])
        #expect(g.entries.map { $0.result.runKey } == [outcome.result.runKey, unlabelled.result.runKey])
        let markdown = report.markdown()
        #expect(markdown.contains("labelled rows (eval_args.mode: labeled)") && !markdown.contains("recall@10"))
        let best = min(outcome.test.values["logloss"]!, unlabelled.test.values["logloss"]!)
        #expect(markdown.contains("**\(String(format: "%.4f", best))**"))
        // Sorted by a loss, the least comes first.
        let byLoss = try Report.load(directory: folder, sortKey: "logloss").groups[0].entries.map { $0.result.test["logloss"]! }
        #expect(byLoss == byLoss.sorted() && byLoss.count == 2)
    }

    /// RecBole's FM under its own context-aware protocol on the shipped ml-100k (`Configs/ml-100k-labeled.yml`): its three
    /// seeds' mean test AUC and LogLoss (docs/recbole-general/labeled/, each seed on its own torch-shuffled split) against
    /// recbench's seed 2020 on recbench's split, within 0.01.
    @Test func fmIsInRecBolesBandUnderItsContextProtocol() throws {
        var auc = 0.0, logLoss = 0.0
        for seed in 2020...2022 {
            let path = Fixtures.repoRoot + "/docs/recbole-general/labeled/FM-labeled-seed\(seed).json"
            let json = try JSONSerialization.jsonObject(with: try Data(contentsOf: URL(fileURLWithPath: path))) as! [String: Any]
            let test = json["test_result"] as! [String: Double]
            auc += test["auc"]! / 3
            logLoss += test["logloss"]! / 3
        }
        let configs = ["ml-100k.yml", "ml-100k-labeled.yml"].map { Fixtures.repoRoot + "/Configs/" + $0 }
        let plan = try Experiment.plan(RunRequest(model: "FM", configFiles: configs, assignments: ["seed=2020", "checkpoint_dir=null"]))
        let outcome = try Experiment.run(plan, logger: Logger(label: "test"))
        #expect(outcome.test.values["auc"]! >= auc - 0.01, "recbench \(outcome.test.values["auc"]!), RecBole \(auc)")
        #expect(outcome.test.values["logloss"]! <= logLoss + 0.01, "recbench \(outcome.test.values["logloss"]!), RecBole \(logLoss)")
        #expect(outcome.result.split.test == 10_000)   // RecBole's floor(0.1 · 100,000) rows
    }

    /// A sweep of every model under labelled evaluation runs the context-aware ones (the others score no probability) and
    /// adds no repeat baseline.
    @Test func aLabelledSweepKeepsTheContextAwareModels() throws {
        let configs = ["ml-100k.yml", "ml-100k-labeled.yml"].map { Fixtures.repoRoot + "/Configs/" + $0 }
        let plan = try SweepPlanner.plan(models: [], configFiles: configs, assignments: ["results_dir=\(Fixtures.temporaryDirectory())"])
        let contextAware: [String] = ModelRegistry.models.filter { $0.family == .contextAware }.map { $0.name }
        let planned: [String] = plan.runs.map { $0.model }
        #expect(planned == contextAware && contextAware.count >= 14)
        #expect(plan.notices.contains { $0.contains("labeled") })
    }

    @Test func settingsThatCannotBeLabelledAreRefused() throws {
        let dir = LabeledDataTests.ratedFixture()
        func message(_ model: String, _ extra: [String]) -> String {
            do {
                let plan = try Experiment.plan(RunRequest(model: model, assignments: Self.assignments(dir, extra)))
                _ = try Experiment.load(plan, logger: Logger(label: "test"))
                return ""
            } catch { return "\(error)" }
        }
        #expect(message("BPR", []).contains("context-aware"))
        #expect(message("FM", ["metrics=[AUC, Recall]"]).contains("ranks items"))
        #expect(message("FM", ["eval_args={split: {RS: [0.8, 0.1, 0.1]}, order: RO, group_by: ~, mode: full}", "metrics=[AUC]"])
            .contains("needs eval_args.mode: labeled"))
        #expect(message("FM", ["eval_args={split: {RS: [0.8, 0.1, 0.1]}, order: RO, mode: {valid: labeled, test: full}}"]).contains("one split only"))
        #expect(message("FM", ["threshold=~"]).contains("labeled needs labelled rows"))
        #expect(message("FM", ["threshold={rating: 9}"]).contains("AUC needs both classes"))
        let losses = try Experiment.plan(RunRequest(model: "FM", assignments: Self.assignments(dir, ["metrics=[LogLoss, AUC]", "valid_metric=logloss"])))
        #expect(!losses.evaluation.validMetricBigger)   // a loss: smaller is better, as RecBole sets it
    }
}
