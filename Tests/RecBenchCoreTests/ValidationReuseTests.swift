import Foundation
import Logging
import Testing
import RecBenchCore

/// A run's valid result is its fit's best validation pass, not a second evaluation. Checked
/// against a run that cannot reuse one: the same model trained for exactly the best epoch's
/// count with no validation during the fit (`eval_step` past the last epoch), so its valid
/// result is a fresh evaluation of the same parameters.
struct ValidationReuseTests {
    static func run(_ model: String, _ assignments: [String]) throws -> RunResult {
        let plan = try Experiment.plan(RunRequest(model: model, assignments: assignments))
        return try Experiment.run(plan, logger: Logger(label: "test")).result
    }

    @discardableResult
    static func agree(_ model: String, data: [String], epochs: Int) throws -> RunResult {
        let reused = try run(model, data + ["epochs=\(epochs)", "stopping_step=\(epochs)"])
        let best = try #require(reused.training?.bestEpoch)
        try #require(best < epochs, "\(model): the best epoch is the last (\(best)); the reuse of an earlier one is not exercised")
        let fresh = try run(model, data.filter { !$0.hasPrefix("eval_step=") } + ["epochs=\(best)", "eval_step=\(best + 1)"])
        #expect(reused.validFromEpoch == best, "\(model): the valid result is not the kept pass (from \(String(describing: reused.validFromEpoch)))")
        #expect(fresh.training?.bestValid == nil && fresh.validFromEpoch == nil, "the fresh run validated during its fit")
        #expect(!reused.valid.isEmpty && reused.valid == fresh.valid, "\(model): \(reused.valid) against \(fresh.valid)")
        // The score early stopping kept is the summary's value of the validation metric.
        let metric = try Experiment.plan(RunRequest(model: model, assignments: data)).evaluation.validMetric
        #expect(reused.training?.bestValid == reused.valid[metric], "\(metric): \(String(describing: reused.training?.bestValid))")
        #expect(reused.analyses["valid"] == fresh.analyses["valid"])
        #expect(reused.test == fresh.test)
        return reused
    }

    /// A log where some items follow others by user-dependent strides: enough signal that BPR
    /// and RepeatNet overfit it at these learning rates (their best epochs are 22 and 15 of 30).
    static func strides(in dir: String) {
        var rows: [(String, String, Double)] = []
        for u in 0..<60 { for p in 0..<14 { rows.append(("u\(u)", "i\((u * 7 + p * (1 + u % 5)) % 45)", Double(p))) } }
        Fixtures.writeInter(rows, in: dir)
    }

    /// Validation every epoch, every second epoch, and on a list metric (smaller is better).
    @Test(arguments: [[String](), ["eval_step=2"],
                      ["metrics=[Recall, MRR, NDCG, AveragePopularity]", "valid_metric=AveragePopularity@10", "valid_metric_bigger=false"]])
    func bprsValidIsTheBestEpochsPassAsAFreshEvaluationGivesIt(settings: [String]) throws {
        let dir = Fixtures.temporaryDirectory()
        Self.strides(in: dir)
        try Self.agree("BPR", data: ["dataset=tiny", "data_path=\(dir)", "load_col={inter: [user_id, item_id, timestamp]}",
                                     "learning_rate=0.5", "embedding_size=8", "checkpoint_dir=null", "threads=2"] + settings, epochs: 30)
    }

    /// RecVAE validates from the posterior it caches with its old encoder. With the best epoch
    /// not the last, the reusing run's test evaluation runs the encoder batch by batch, the
    /// fresh run's reads the cache: the comparison covers both paths.
    @Test func recVAEsKeptPassEqualsItsBatchByBatchEvaluation() throws {
        let dir = Fixtures.temporaryDirectory()
        Self.strides(in: dir)
        try Self.agree("RecVAE", data: ["dataset=tiny", "data_path=\(dir)", "learning_rate=0.01", "checkpoint_dir=null", "threads=2"], epochs: 20)
    }

    /// RepeatNet's valid result adds its repeat-mode analyses to the kept pass.
    @Test func repeatNetsValidKeepsItsRepeatModeAnalyses() throws {
        let dir = Fixtures.temporaryDirectory()
        Self.strides(in: dir)
        let reused = try Self.agree("RepeatNet", data: [
            "dataset=tiny", "data_path=\(dir)", "load_col={inter: [user_id, item_id, timestamp]}",
            "eval_args={split: {LS: valid_and_test}, order: TO}", "MAX_ITEM_LIST_LENGTH=6", "learning_rate=0.05", "train_batch_size=64",
            "threads=2", "embedding_size=8", "hidden_size=8", "dropout_prob=0.1", "checkpoint_dir=null",
        ], epochs: 30)
        #expect(reused.analyses["valid"]?["repeat_mode_auc"] != nil, "no repeat-mode analyses in the kept pass's result")
    }
}
