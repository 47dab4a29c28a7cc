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
                                fixture: () throws -> (SplitData, Dataset)) throws {
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
                func numeric(_ step: Float) -> Double {
                    var plus = initial, minus = initial
                    plus.update(name) { $0.values[i] += step }
                    minus.update(name) { $0.values[i] -= step }
                    return (loss(plus) - loss(minus)) / Double(2 * step)
                }
                let a = Double(analytic.values[i])
                func agrees(_ n: Double) -> Bool { abs(a - n) <= 3e-3 + 5e-2 * abs(n) }
                // A step across a kink (max pooling's winner changing, a ReLU's input near 0) differs
                // by chance; a step a fifth as long, or a twenty-fifth, must then agree, as strictly
                // (PNN's outer-product fixture has a unit 1e-4 from its kink: 0.0592 at eps / 5,
                // 0.0484 at eps / 50 against the analytic 0.0486).
                var n = numeric(eps)
                if !agrees(n) { n = numeric(eps / 5) }
                if !agrees(n) { n = numeric(eps / 25) }
                #expect(agrees(n), "\(M.name) \(overrides) \(name)[\(i)]: analytic \(a), numeric \(n)")
                checked += 1
            }
        }
        #expect(checked > 5)   // LR has one weight per field value and a bias: 7 entries on the fixture
    }

    /// Every registered model with a gradient pass, in each of its declared test settings;
    /// context-aware models on the fixture with side files.
    static let checked: [String] = ModelRegistry.models.compactMap { model in
        guard let learned = model as? any LearnedModel.Type, learned.hasGradientPass else { return nil }
        return model.name
    }

    @Test(arguments: checked)
    func lossMatchesCentralDifferences(model name: String) throws {
        let model = try #require(try ModelRegistry.model(named: name) as? any LearnedModel.Type)
        let features = model.readsFeatures
        func fixture() throws -> (SplitData, Dataset) { features ? try featureFixture() : try blockFixture() }
        for settings in model.testSettings { try check(model, settings, fixture: fixture) }
    }

    @Test func everyModelWithALossIsChecked() {
        #expect(Self.checked.count >= 10, "gradient-checked: \(Self.checked)")
    }
}

extension LearnedModel {
    /// Whether the model's default passes include a gradient pass (a model with only custom
    /// passes, like Item2vec's SGD, has no loss to check).
    static var hasGradientPass: Bool {
        guard let model = try? ModelRegistry.model(named: name, hyperparameters: [:]) as? Self else { return false }
        return model.passes.contains { $0.method == .gradient }
    }
}
