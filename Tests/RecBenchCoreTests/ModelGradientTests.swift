import Foundation
import Logging
import Testing
import RecBenchCore
import Linalg
import Autodiff

/// Each learned model's whole training loss, on a tiny problem, against central differences
/// of sampled entries of every parameter matrix.
@Suite(.serialized) struct ModelGradientTests {
    func check<M: LearnedModel>(_ type: M.Type, _ overrides: [String: ConfigValue],
                                fixture: () throws -> (SplitData, Dataset) = blockFixture) throws {
        let (split, d) = try fixture()
        let data = TrainingData(dataset: d, split: split)
        var model = try Fixtures.model(M.self, overrides)
        var initRng = SeededGenerator(seed: 3)
        var initial = model.prepare(data, context: FitContext(seed: 3, compute: Compute(threads: 1), logger: Logger(label: "test")), rng: &initRng)
        // Zero-initialised biases put a row whose ReLU input is all zero (after dropout) exactly
        // on the next layer's kink, where central differences give half the one-sided slope at
        // any step; biases of ±0.05 move every row off it, and the check stays as strict.
        for name in initial.names where name.hasSuffix("bias") {
            initial.update(name) { b in for i in b.values.indices { b.values[i] += 0.1 * initRng.nextUnitFloat() - 0.05 } }
        }
        // The first pass's loss on a few examples, with unit noise and late in training (KL
        // annealing at its cap), so every parameter's gradient is exercised.
        let batch = TrainingBatch(examples: Array(0..<min(8, model.exampleCount(data)))[...], pass: model.passes[0], step: 1 << 40, unitNoise: true)
        func loss(_ tape: Tape, _ leaves: [String: Variable]) -> Variable {
            var draws = SeededGenerator(seed: 1)
            return model.loss(batch, leaves, tape: tape, rng: &draws)
        }
        func loss(_ parameters: Parameters) -> Double {
            let tape = Tape(compute: .serial)
            return Double(loss(tape, tape.leaves(parameters) { _ in false }).value.values[0])
        }
        let tape = Tape(compute: .serial)
        let leaves = tape.leaves(initial)
        tape.backward(loss(tape, leaves))
        var rng = SeededGenerator(seed: 9)
        // 2e-3, not 1e-2: RecVAE's 5-unit layer norms after swish curve enough that a 1e-2 step
        // misses the first layer's gradient by ~25 % (it converges as the step shrinks).
        let eps: Float = 2e-3
        var checked = 0
        for name in initial.names {
            let value = initial[name]
            let analytic = leaves[name]!.grad ?? Matrix(rows: value.rows, columns: value.columns)
            for _ in 0..<min(6, value.values.count) {
                let i = rng.nextInt(below: value.values.count)
                var plus = initial, minus = initial
                plus.update(name) { $0.values[i] += eps }
                minus.update(name) { $0.values[i] -= eps }
                let numeric = (loss(plus) - loss(minus)) / Double(2 * eps)
                let a = Double(analytic.values[i])
                #expect(abs(a - numeric) <= 3e-3 + 5e-2 * abs(numeric), "\(M.name) \(name)[\(i)]: analytic \(a), numeric \(numeric)")
                checked += 1
            }
        }
        #expect(checked > 10)
    }

    @Test func bpr() throws { try check(BPR.self, ["embedding_size": .int(3)]) }

    @Test func multiDAE() throws { try check(MultiDAE.self, ["mlp_hidden_size": .list([.int(5)]), "latent_dimension": .int(3)]) }

    @Test func multiVAE() throws { try check(MultiVAE.self, ["mlp_hidden_size": .list([.int(5)]), "latent_dimension": .int(6)]) }

    @Test func recVAE() throws { try check(RecVAE.self, ["hidden_dimension": .int(5), "latent_dimension": .int(3)]) }

    @Test func macridVAE() throws {
        // Both the Gumbel assignment and the plain softmax one (nogb), and both penalties.
        // τ = 1 and no dropout keep every user's code away from the zero vector: where a row's
        // code is tiny (dropout leaving one item of a concept with a small weight), normalising
        // it curves so sharply that central differences at any usable step miss the slope.
        let sizes: [String: ConfigValue] = ["embedding_size": .int(3), "kfac": .int(2), "encoder_hidden_size": .list([.int(5)]),
                                            "tau": .double(1), "reg_weights": .list([.double(0.1), .double(0.2)]), "dropout_prob": .double(0)]
        try check(MacridVAE.self, sizes)
        try check(MacridVAE.self, sizes.merging(["nogb": .bool(true)]) { $1 })
    }

    @Test func fm() throws { try check(FM.self, ["embedding_size": .int(3)], fixture: { try featureFixture() }) }

    @Test func ffm() throws { try check(FFM.self, ["embedding_size": .int(3)], fixture: { try featureFixture() }) }

    @Test func lightGCN() throws { try check(LightGCN.self, ["embedding_size": .int(3), "reg_weight": .double(0.1)]) }

    @Test func neuMF() throws {
        try check(NeuMF.self, ["mf_embedding_size": .int(3), "mlp_embedding_size": .int(3), "mlp_hidden_size": .list([.int(5), .int(3)]), "dropout_prob": .double(0.2)])
    }

    @Test func deepFM() throws {
        try check(DeepFM.self, ["embedding_size": .int(3), "mlp_hidden_size": .list([.int(5), .int(3)]), "dropout_prob": .double(0.2)],
                  fixture: { try featureFixture() })
    }
}
