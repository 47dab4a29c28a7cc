import Foundation
import Logging
import Testing
import RecBenchCore
import Linalg
import Autodiff

/// RepeatNet's full-ranking scores are the probabilities its loss reads: for each train
/// example, −log(score of the next item + 1e-8) averaged is the loss (dropout off).
struct RepeatNetScoresTests {
    @Test func scoresAreTheProbabilitiesTheLossReads() throws {
        let (split, d) = try blockFixture()
        let data = TrainingData(dataset: d, split: split)
        var model = try Fixtures.model(RepeatNet.self, ["embedding_size": .int(4), "hidden_size": .int(5), "dropout_prob": .double(0)])
        var rng = SeededGenerator(seed: 4)
        let context = FitContext(seed: 4, compute: Compute(threads: 1), logger: Logger(label: "test"))
        var parameters = model.prepare(data, context: context, rng: &rng)
        for name in parameters.names {   // large random values, so the repeat and explore parts both matter
            parameters.update(name) { m in for i in m.values.indices { m.values[i] = Float(rng.nextUnitFloat() * 2 - 1) } }
        }
        model.parameters = parameters
        let sequences = try #require(model.sequences)
        let count = min(12, sequences.trainExamples.count)
        let batch = TrainingBatch(examples: Array(0..<count)[...], pass: model.passes[0], step: 1, unitNoise: false)
        let tape = Tape(compute: .serial)
        var draws = SeededGenerator(seed: 1)
        let loss = model.loss(batch, tape.leaves(parameters) { _ in false }, tape: tape, rng: &draws).value.values[0]
        let positions = Array(sequences.trainExamples.prefix(count))
        let log = sequences.log
        let queries = SequenceQueries(sequences: sequences, users: positions.map { log.users[Int($0)] }, ends: positions)
        var block = Matrix(rows: count, columns: d.itemCount)
        model.scores(for: Array(0..<Int32(count))[...], of: queries, into: &block, compute: Compute(threads: 1))
        let expected = positions.enumerated().map { r, p in -Foundation.log(Double(block[r, Int(log.items[Int(p)])]) + 1e-8) }.reduce(0, +)
        #expect(abs(Double(loss) - expected / Double(count)) < 1e-4, "loss \(loss), from the scores \(expected / Double(count))")
        // Each row is a distribution over the items and the padding class: at most 1.
        for r in 0..<count { #expect((0..<d.itemCount).reduce(Float(0)) { $0 + block[r, $1] } <= 1 + 1e-5) }
    }
}

/// The repeat-mode analysis: RepeatNet's switch against what each row's target was.
struct RepeatModeTests {
    @Test func aucCountsPairsWithTiesAsHalf() {
        // Repeat rows 0.9, 0.5; new rows 0.5, 0.1: pairs 1 + 1 + ½ + 1 of 4.
        let a = Analyses.repeatMode([0.9, 0.5, 0.5, 0.1], isRepeat: [true, true, false, false])
        #expect(abs(a["repeat_mode_auc"]! - 0.875) < 1e-12)
        #expect(abs(a["repeat_mode_mean_repeat_targets"]! - 0.7) < 1e-6 && abs(a["repeat_mode_mean_new_targets"]! - 0.3) < 1e-6)
        #expect(abs(a["repeat_mode_mean"]! - 0.5) < 1e-6)
        // Reversed: the repeat rows lowest.
        #expect(abs(Analyses.repeatMode([0.1, 0.2, 0.8], isRepeat: [true, true, false])["repeat_mode_auc"]! - 0) < 1e-12)
        // One group empty: no AUC.
        #expect(Analyses.repeatMode([0.3, 0.4], isRepeat: [false, false])["repeat_mode_auc"] == nil)
    }

    /// Every user alternates a shared staple item with a new one from a ring: after the
    /// staple comes something new, after a new item the staple again. Users of odd index
    /// have one more item, so the held-out targets are half repeats, half new.
    static func staples(in dir: String) {
        var rows: [(String, String, Double)] = []
        for u in 0..<40 {
            for p in 0..<(12 + u % 2) { rows.append(("u\(u)", p % 2 == 0 ? "staple" : "n\((u + p / 2) % 16)", Double(p))) }
        }
        Fixtures.writeInter(rows, in: dir)
    }

    @Test func repeatNetsSwitchSeparatesRepeatTargetsFromNewOnes() throws {
        let dir = Fixtures.temporaryDirectory()
        Self.staples(in: dir)
        let plan = try Experiment.plan(RunRequest(model: "RepeatNet", assignments: [
            "dataset=tiny", "data_path=\(dir)", "load_col={inter: [user_id, item_id, timestamp]}",
            "eval_args={split: {LS: valid_and_test}, order: TO}", "metrics=[MRR]", "topk=[1]", "valid_metric=MRR@1",
            "MAX_ITEM_LIST_LENGTH=6", "epochs=40", "stopping_step=40", "learning_rate=0.005", "train_batch_size=64", "threads=1",
            "embedding_size=16", "hidden_size=16", "dropout_prob=0.1", "checkpoint_dir=null",
        ]))
        let outcome = try Experiment.run(plan, logger: Logger(label: "test"))
        let test = try #require(outcome.result.analyses["test"])
        let auc = try #require(test["repeat_mode_auc"], "no repeat-mode AUC in \(test.keys.sorted())")
        #expect(auc > 0.9, "AUC \(auc); repeat rows \(test["repeat_mode_mean_repeat_targets"]!), new \(test["repeat_mode_mean_new_targets"]!)")
        #expect(test["repeat_mode_mean_repeat_targets"]! > test["repeat_mode_mean_new_targets"]! + 0.3)
    }
}
