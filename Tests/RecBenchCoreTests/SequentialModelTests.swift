import Foundation
import Logging
import Testing
import RecBenchCore
import Linalg

/// Each sequential model, through a whole run, learns what only the order tells: on a ring
/// of items walked from different starts, the next item follows from the last one.
struct SequentialModelTests {
    /// 24 users, each walking 10 steps around a ring of 8 items from their own start.
    static func ring(in dir: String) {
        var rows: [(String, String, Double)] = []
        for u in 0..<24 {
            for step in 0..<10 { rows.append(("u\(u)", "i\((u + step) % 8)", Double(step))) }
        }
        Fixtures.writeInter(rows, in: dir)
    }

    /// NPE reads the sequence as a bag (a sum of item vectors, scored against relu(items)), and
    /// SHAN's encoding is a convex combination of the sequence's own item vectors scored
    /// against the same table: the ring's next item, outside the window, is beyond both by
    /// design; `learnsWhatTheBagTells` checks them instead.
    static let orderFree: Set<String> = ["NPE", "SHAN"]
    /// TransRec moves from the last item by a translation: eight steps around a ring would
    /// have to add up to zero, so the ring is beyond its geometry; `walksALine` checks it.
    static let translations: Set<String> = ["TransRec"]
    /// Models that read `.item` (GRU4RecF) walk the ring with features in their own tests.
    static let sequential = ModelRegistry.models.filter {
        $0.family == .sequential && !$0.readsFeatures && !orderFree.contains($0.name) && !translations.contains($0.name)
    }.map { $0.name }
    /// HRM is a shallow factorisation (two max-pools): at 0.002 it is still learning at epoch 100.
    static let settings: [String: [String]] = ["HRM": ["learning_rate=0.01", "epochs=200", "stopping_step=200"]]

    @Test(arguments: sequential)
    func learnsTheRingsNextItem(model: String) throws {
        let dir = Fixtures.temporaryDirectory()
        Self.ring(in: dir)
        let plan = try Experiment.plan(RunRequest(model: model, assignments: [
            "dataset=tiny", "data_path=\(dir)", "load_col={inter: [user_id, item_id, timestamp]}",
            "eval_args={split: {RS: [0.8, 0.1, 0.1]}, order: TO}", "metrics=[MRR]", "topk=[1]", "valid_metric=MRR@1",
            // Windows of 5 fill up in train, so BERT4Rec has trained every position it reads;
            // at 0.01 its post-LN transformer does not settle.
            "MAX_ITEM_LIST_LENGTH=5", "epochs=100", "stopping_step=100", "learning_rate=0.002", "train_batch_size=64", "threads=1",
            "checkpoint_dir=null",
        ] + (Self.settings[model] ?? [])))
        let outcome = try Experiment.run(plan, logger: Logger(label: "test"))
        #expect(outcome.result.evaluationProtocol == .nextItem && outcome.result.historyMask == HistoryMask.none)
        #expect(outcome.result.split.test == 24)
        #expect(outcome.test.values["mrr@1"]! >= 0.95, "\(model): mrr@1 \(outcome.test.values["mrr@1"]!)")
    }

    /// Each user's items are the four of one cluster, bought over and over in a rotation of
    /// the user's own: the bag of a window says the cluster, so the next item is among its four.
    @Test(arguments: Array(orderFree))
    func learnsWhatTheBagTells(model: String) throws {
        let dir = Fixtures.temporaryDirectory()
        var rows: [(String, String, Double)] = []
        for u in 0..<32 {
            for step in 0..<12 { rows.append(("u\(u)", "i\((u % 4) * 4 + (step * (1 + u % 3) + u) % 4)", Double(step))) }
        }
        Fixtures.writeInter(rows, in: dir)
        let plan = try Experiment.plan(RunRequest(model: model, assignments: [
            "dataset=tiny", "data_path=\(dir)", "load_col={inter: [user_id, item_id, timestamp]}",
            "eval_args={split: {RS: [0.8, 0.1, 0.1]}, order: TO}", "metrics=[Hit]", "topk=[4]", "valid_metric=Hit@4",
            "MAX_ITEM_LIST_LENGTH=5", "epochs=100", "stopping_step=100", "learning_rate=0.01", "train_batch_size=64", "threads=1",
            "checkpoint_dir=null",
        ]))
        let outcome = try Experiment.run(plan, logger: Logger(label: "test"))
        #expect(outcome.test.values["hit@4"]! >= 0.9, "\(model): hit@4 \(outcome.test.values["hit@4"]!)")
    }

    /// Users walk ten steps up a line of items from six different starts; the next item is
    /// the one after the last. 300 epochs: the distances settle slowly on 24 users.
    @Test(arguments: Array(translations))
    func walksALine(model: String) throws {
        let dir = Fixtures.temporaryDirectory()
        var rows: [(String, String, Double)] = []
        for u in 0..<24 { for step in 0..<10 { rows.append(("u\(u)", "i\(u % 6 + step)", Double(step))) } }
        Fixtures.writeInter(rows, in: dir)
        let plan = try Experiment.plan(RunRequest(model: model, assignments: [
            "dataset=tiny", "data_path=\(dir)", "load_col={inter: [user_id, item_id, timestamp]}",
            "eval_args={split: {RS: [0.8, 0.1, 0.1]}, order: TO}", "metrics=[Hit]", "topk=[5]", "valid_metric=Hit@5",
            "MAX_ITEM_LIST_LENGTH=5", "epochs=300", "stopping_step=300", "learning_rate=0.01", "train_batch_size=64", "threads=1",
            "checkpoint_dir=null",
        ]))
        let outcome = try Experiment.run(plan, logger: Logger(label: "test"))
        #expect(outcome.test.values["hit@5"]! >= 0.75, "\(model): hit@5 \(outcome.test.values["hit@5"]!)")
    }
}

/// `loss_type: BPR` with `sample_num` N, as RecBole's pairwise loader: a batch holds
/// train_batch_size / N examples and the loss sees each N times, each with its own draw.
struct NextItemBPRTests {
    /// Through `LearnedModel`, the witness the trainer calls.
    static func examplesPerBatch<M: LearnedModel>(_ model: M, _ training: TrainingSettings) -> Int { model.examplesPerBatch(training) }

    func training(_ yaml: String) throws -> TrainingSettings {
        try TrainingSettings(Config(layers: [try ConfigLayer.yaml(yaml, source: "t.yml")], modelKeys: ModelRegistry.parameterNames))
    }

    @Test func aBPRBatchHoldsEachExampleOncePerNegative() throws {
        let three = try training("train_batch_size: 100\ntrain_neg_sample_args: {distribution: uniform, sample_num: 3}\n")
        let (split, d) = try blockFixture()
        let context = FitContext(seed: 1, compute: Compute(threads: 1), logger: Logger(label: "test"))
        for (loss, perBatch, copies) in [("BPR", 33, 3), ("CE", 100, 1)] {
            let settings: [String: ConfigValue] = ["embedding_size": .int(3), "hidden_size": .int(4), "loss_type": .string(loss)]
            var model = try #require(try ModelRegistry.model(named: "GRU4Rec", hyperparameters: settings) as? any NextItemLossModel)
            var rng = SeededGenerator(seed: 1)
            _ = model.prepare(TrainingData(dataset: d, split: split), context: context, rng: &rng)
            #expect(Self.examplesPerBatch(model, three) == perBatch, "\(loss)")
            let batch = TrainingBatch(examples: [4, 0, 2][...], pass: .all, step: 1, negatives: three.negativesPerPositive)
            let once = model.examples(of: batch)
            #expect(model.lossExamples(of: batch) == Array(Array(repeating: once, count: copies).joined()), "\(loss)")
        }
        #expect(try training("train_neg_sample_args: ~\n").negativesPerPositive == 0)
    }
}
