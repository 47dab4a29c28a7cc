import Foundation
import Logging
import Testing
import RecBenchCore
import Linalg
import Autodiff

/// A learned model whose one parameter counts the epochs trained (by a custom pass), so a
/// scripted validation sequence can be replayed and the restored epoch read back.
struct ScriptedModel: LearnedModel {
    static let name = "Scripted"
    static let summary = "test double"
    static let kind = ModelKind.baseline
    static let parameters: [ConfigKey] = []
    static let randomStreams = RandomStreams(initialization: 1, batches: 1)
    var parameters = Parameters()
    var trainingSummary: TrainingSummary?

    init(parameters: ModelParameters) throws {}
    init() {}

    mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        var initial = Parameters()
        initial.add("epochs", Matrix(rows: 1, columns: 1))
        return initial
    }

    var passes: [TrainingPass] { [TrainingPass("count", method: .custom)] }

    mutating func customPass(_ pass: TrainingPass, index: Int, parameters: inout Parameters, context: FitContext) -> Double {
        parameters.update("epochs") { $0.values[0] += 1 }
        return 1
    }

    func exampleCount(_ data: TrainingData) -> Int { 0 }
    func loss(_ batch: TrainingBatch, _ p: [String: Variable], tape: Tape, rng: inout SeededGenerator) -> Variable { p["epochs"]! }
    func scores(for users: ArraySlice<Int32>, into block: inout Matrix, compute: Compute) {}
}

struct TrainerTests {
    func train(_ scores: [Double], stoppingStep: Int, bigger: Bool = true, decimals: Int? = nil,
               checkpoints: String? = nil, resume: TrainingResume? = nil, prune: (@Sendable (Int, Double) -> Bool)? = nil) throws
        -> (TrainingSummary, Float) {
        let (split, d) = try blockFixture()
        var model = ScriptedModel()
        var context = FitContext(
            seed: 1, compute: .serial, logger: Logger(label: "test"),
            training: TrainingSettings(epochs: scores.count, stoppingStep: stoppingStep, checkpointDirectory: checkpoints),
            validate: { scorer, _ in scores[Int((scorer as! ScriptedModel).parameters["epochs"].values[0]) - 1] },
            validMetricBigger: bigger, checkpointName: "scripted")
        context.validDecimals = decimals
        context.resume = resume
        context.prune = prune
        try model.fit(TrainingData(dataset: d, split: split), context: context)
        return (model.trainingSummary!, model.parameters["epochs"].values[0])
    }

    @Test func stopsAfterStoppingStepPlusOneValidationsWithoutImprovement() throws {
        // Best at epoch 3; epochs 4, 5, 6 bring nothing: with stopping_step 2, the third stale
        // validation (epoch 6) stops training, and epoch 3's parameters are restored.
        let (summary, restored) = try train([0.1, 0.2, 0.5, 0.4, 0.3, 0.45, 0.9, 0.9], stoppingStep: 2)
        #expect(summary.epochsRun == 6)
        #expect(summary.stoppedEarly)
        #expect(summary.bestEpoch == 3 && summary.bestValid == 0.5)
        #expect(restored == 3)
    }

    @Test func anEqualScoreCountsAsAnImprovement() throws {
        // RecBole's rule: value >= best updates the best (and resets the patience).
        let (summary, restored) = try train([0.3, 0.3, 0.3, 0.3], stoppingStep: 0)
        #expect(summary.epochsRun == 4 && !summary.stoppedEarly)
        #expect(summary.bestEpoch == 4 && restored == 4)
    }

    @Test func valuesAreComparedAtTheMetricsDecimalPlaces() throws {
        // RecBole rounds each metric to metric_decimal_place before comparing: 0.17876 and
        // 0.17884 are both 0.1788, a tie, so the later epoch is kept and the patience restarts;
        // 0.17849 is 0.1785, worse. Compared exactly, epoch 2 is already worse than epoch 1.
        let scores = [0.17884, 0.17876, 0.17849, 0.17849, 0.1, 0.1]
        let (rounded, restored) = try train(scores, stoppingStep: 1, decimals: 4)
        #expect(rounded.bestEpoch == 2 && restored == 2 && rounded.epochsRun == 4 && rounded.stoppedEarly)
        #expect(rounded.bestValid == 0.17876)
        let (exact, _) = try train(scores, stoppingStep: 1)
        #expect(exact.bestEpoch == 1 && exact.epochsRun == 3)
        // Python's round(0.00015, 4) is 0.0001: the double is just below the half, though 0.00015 · 10⁴ rounds to 1.5 (a
        // naive rounding of the product gives 0.0002 and keeps epoch 1); round(0.00025, 4) is 0.0003 (just above).
        #expect(try train([0.00015, 0.0001], stoppingStep: 5, decimals: 4).0.bestEpoch == 2)
        #expect(try train([0.00025, 0.0003], stoppingStep: 5, decimals: 4).0.bestEpoch == 2)
        #expect(try train([0.00025, 0.0002], stoppingStep: 5, decimals: 4).0.bestEpoch == 1)
    }

    @Test func smallerIsBetterWhenAsked() throws {
        let (summary, _) = try train([0.5, 0.2, 0.3, 0.4, 0.6], stoppingStep: 1, bigger: false)
        #expect(summary.bestEpoch == 2 && summary.epochsRun == 4)
    }

    /// A search's pruner replays a saved state's validations: a state past the epoch it prunes at is
    /// not taken up (the fit prunes where it would have); one it prunes at the last saved epoch ends
    /// there; a plain fit continues a trial's pruned state.
    @Test func aSavedStateMeetsThePrunerAsItsEpochsWould() throws {
        let scores = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]
        let dir = Fixtures.temporaryDirectory()
        let resume = TrainingResume(path: dir + "/s.training", interval: 1e-9, identity: "k")
        let pruneAt: (Int) -> @Sendable (Int, Double) -> Bool = { at in { epoch, _ in epoch >= at } }
        let (four, _) = try train(Array(scores.prefix(4)), stoppingStep: 10, resume: resume)
        #expect(four.epochsRun == 4)
        let (early, _) = try train(scores, stoppingStep: 10, resume: resume, prune: pruneAt(3))
        #expect(early.resumedAfter == nil && early.prunedAt == 3 && early.epochsRun == 3)
        try? FileManager.default.removeItem(atPath: dir + "/s.training")
        let (trial, _) = try train(scores, stoppingStep: 10, resume: resume, prune: pruneAt(4))
        #expect(trial.prunedAt == 4 && trial.epochsRun == 4)
        let (again, _) = try train(scores, stoppingStep: 10, resume: resume, prune: pruneAt(4))
        #expect(again.resumedAfter == 4 && again.prunedAt == 4 && again.epochsRun == 4)
        let (plain, restored) = try train(scores, stoppingStep: 10, resume: resume)
        #expect(plain.resumedAfter == 4 && plain.prunedAt == nil && plain.epochsRun == 8 && restored == 8)
    }

    @Test func theBestParametersAreCheckpointedAndReadBack() throws {
        let dir = Fixtures.temporaryDirectory()
        let (summary, _) = try train([0.1, 0.7, 0.2], stoppingStep: 5, checkpoints: dir)
        #expect(summary.checkpoint == dir + "/scripted.params")
        let saved = try Checkpoint.read(dir + "/scripted.params")
        #expect(saved["epochs"].values == [2])
        #expect(throws: RecBenchError.self) { try Checkpoint.read(dir + "/missing.params") }
    }
}
