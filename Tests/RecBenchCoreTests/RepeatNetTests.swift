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
