import Foundation
import Logging
import Testing
import RecBenchCore

/// Each learned model's whole training loss, on a tiny problem, against central differences
/// of sampled entries of every parameter matrix.
@Suite(.serialized) struct ModelGradientTests {
    func check<M: LearnedModel>(_ type: M.Type, _ overrides: [String: ConfigValue]) throws {
        let (split, d) = try blockFixture()
        let data = TrainingData(dataset: d, split: split)
        var values = overrides
        for p in M.parameters where values[p.name] == nil { values[p.name] = p.defaultValue }
        let config = try Config(layers: [ConfigLayer(source: "test", values: values)], modelKeys: ModelRegistry.parameterDefaults)
        var model = try M(parameters: ModelParameters(config: config, declared: M.parameters))
        model.prepare(data, context: FitContext(seed: 3, threads: 1, logger: Logger(label: "test")))

        func loss(_ parameters: Parameters) -> Double {
            var probe = model
            probe.parameters = parameters
            let tape = Tape()
            return Double(probe.gradientCheckLoss(data, tape: tape, leaves: tape.leaves(parameters) { _ in false }).value.values[0])
        }
        let tape = Tape()
        let leaves = tape.leaves(model.parameters)
        tape.backward(model.gradientCheckLoss(data, tape: tape, leaves: leaves))
        var rng = SeededGenerator(seed: 9)
        // 2e-3, not 1e-2: RecVAE's 5-unit layer norms after swish curve enough that a 1e-2 step
        // misses the first layer's gradient by ~25 % (it converges as the step shrinks).
        let eps: Float = 2e-3
        var checked = 0
        for name in model.parameters.names {
            let value = model.parameters[name]
            let analytic = leaves[name]!.grad ?? Matrix(rows: value.rows, columns: value.columns)
            for _ in 0..<min(6, value.values.count) {
                let i = rng.nextInt(below: value.values.count)
                var plus = model.parameters, minus = model.parameters
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
}
