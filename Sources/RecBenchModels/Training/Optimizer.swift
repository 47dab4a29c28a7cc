import Foundation
import Linalg
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// Updates parameters from gradients.
public protocol Optimizer: Sendable {
    /// Applies one step to the parameters named in `gradients`.
    mutating func step(_ parameters: inout Parameters, gradients: [String: Matrix], compute: Compute)
    /// What the optimizer carries from step to step (a saved training state holds it).
    var saved: OptimizerState { get }
    /// Takes up `state`, as `saved` gave it, for `parameters`; throws when it is another optimizer's
    /// or does not fit them.
    mutating func restore(_ state: OptimizerState, parameters: Parameters) throws
}

/// An optimizer's state between steps: its kind, per-parameter step counts and tensors.
public struct OptimizerState: Sendable {
    public var kind: String
    public var counts: [String: Int] = [:]
    public var tensors: [(String, Matrix)] = []

    /// A state of `kind`.
    public init(kind: String, counts: [String: Int] = [:], tensors: [(String, Matrix)] = []) {
        self.kind = kind; self.counts = counts; self.tensors = tensors
    }
}

/// Adam (Kingma & Ba), as torch.optim.Adam computes it: L2 weight decay added to the
/// gradient, bias-corrected moments, eps added after the square root.
public struct Adam: Optimizer {
    public let learningRate: Float
    public let beta1: Float, beta2: Float, eps: Float, weightDecay: Float
    private var firstMoment: [String: Matrix] = [:]
    private var secondMoment: [String: Matrix] = [:]
    private var steps: [String: Int] = [:]

    /// torch's defaults: betas (0.9, 0.999), eps 1e-8.
    public init(learningRate: Float, weightDecay: Float = 0, beta1: Float = 0.9, beta2: Float = 0.999, eps: Float = 1e-8) {
        self.learningRate = learningRate; self.weightDecay = weightDecay
        self.beta1 = beta1; self.beta2 = beta2; self.eps = eps
    }

    /// The moments as tensors `m:<name>` and `v:<name>`, the step counts by parameter name.
    public var saved: OptimizerState {
        let names = firstMoment.keys.sorted()
        return OptimizerState(kind: "adam", counts: steps,
                              tensors: names.map { ("m:\($0)", firstMoment[$0]!) } + names.map { ("v:\($0)", secondMoment[$0]!) })
    }

    public mutating func restore(_ state: OptimizerState, parameters: Parameters) throws {
        guard state.kind == "adam" else { throw RecBenchError(field: "learner", "the saved state is \(state.kind)'s, not adam's") }
        let known = Set(parameters.names)
        for (key, value) in state.tensors {
            let name = String(key.dropFirst(2))
            // `step` walks a moment with its parameter's length: a moment of another shape is refused here.
            guard known.contains(name), (value.rows, value.columns) == (parameters[name].rows, parameters[name].columns) else {
                throw RecBenchError(field: key, "the saved adam moment fits no parameter of this model")
            }
            if key.hasPrefix("m:") { firstMoment[name] = value } else if key.hasPrefix("v:") { secondMoment[name] = value }
        }
        guard Set(firstMoment.keys) == Set(secondMoment.keys), Set(firstMoment.keys) == Set(state.counts.keys) else {
            throw RecBenchError(field: "learner", "the saved adam state's moments and step counts name different parameters")
        }
        steps = state.counts
    }

    public mutating func step(_ parameters: inout Parameters, gradients: [String: Matrix], compute: Compute) {
        for name in parameters.names {
            guard let g = gradients[name] else { continue }
            if firstMoment[name] == nil {
                let shape = parameters[name]
                firstMoment[name] = Matrix(rows: shape.rows, columns: shape.columns)
                secondMoment[name] = Matrix(rows: shape.rows, columns: shape.columns)
            }
            let t = (steps[name] ?? 0) + 1
            steps[name] = t
            let correction1 = 1 - Float(pow(Double(beta1), Double(t)))
            let correction2 = (1 - Float(pow(Double(beta2), Double(t)))).squareRoot()
            let stepSize = learningRate / correction1
            let (b1, b2, e, wd) = (beta1, beta2, eps, weightDecay)
            // In place: the moments and the parameter are mutated without copies.
            parameters.update(name) { p in
                p.values.withUnsafeMutableBufferPointer { pp in
                    firstMoment[name]!.values.withUnsafeMutableBufferPointer { mp in
                        secondMoment[name]!.values.withUnsafeMutableBufferPointer { vp in
                            g.values.withUnsafeBufferPointer { gp in
                                // Elementwise, so chunks are independent (and deterministic).
                                let shared = UnsafeShared((pp.baseAddress!, mp.baseAddress!, vp.baseAddress!, gp.baseAddress!))
                                let count = pp.count
                                compute.forEachChunk(count: count, chunkSize: 1 << 16) { range in
                                    let (p, m, v, g) = shared.value
                                    for i in stride(from: range.lowerBound, to: range.upperBound, by: 8) {
                                        let param = Lanes.load(p, i, count: count)
                                        let grad = Lanes.load(g, i, count: count) + wd * param
                                        let first = b1 * Lanes.load(m, i, count: count) + (1 - b1) * grad
                                        let second = b2 * Lanes.load(v, i, count: count) + (1 - b2) * grad * grad
                                        first.store(m, i, count: count)
                                        second.store(v, i, count: count)
                                        (param - stepSize * first / (Lanes.squareRoot(second) / correction2 + e)).store(p, i, count: count)
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Plain stochastic gradient descent with optional L2 weight decay.
public struct SGD: Optimizer {
    public let learningRate: Float, weightDecay: Float

    public init(learningRate: Float, weightDecay: Float = 0) {
        self.learningRate = learningRate; self.weightDecay = weightDecay
    }

    /// Nothing: each step reads only the gradient.
    public var saved: OptimizerState { OptimizerState(kind: "sgd") }

    public mutating func restore(_ state: OptimizerState, parameters: Parameters) throws {
        guard state.kind == "sgd" else { throw RecBenchError(field: "learner", "the saved state is \(state.kind)'s, not sgd's") }
    }

    public mutating func step(_ parameters: inout Parameters, gradients: [String: Matrix], compute: Compute) {
        for name in parameters.names {
            guard let g = gradients[name] else { continue }
            let (lr, wd) = (learningRate, weightDecay)
            parameters.update(name) { p in
                for i in 0..<p.values.count { p.values[i] -= lr * (g.values[i] + wd * p.values[i]) }
            }
        }
    }
}

extension TrainingSettings {
    /// The configured optimiser.
    public func makeOptimizer() -> any Optimizer {
        learner == "sgd" ? SGD(learningRate: learningRate, weightDecay: weightDecay)
            : Adam(learningRate: learningRate, weightDecay: weightDecay)
    }
}

extension GradientClipping {
    /// `gradients` scaled by min(1, maxNorm / (norm + 1e-6)), the norm over all of them together
    /// summed in name order (a dictionary's order changes between processes).
    public func clipped(_ gradients: [String: Matrix]) -> [String: Matrix] {
        let names = gradients.keys.sorted()
        var norm = 0.0
        for name in names {
            for g in gradients[name]!.values {
                norm = normType.isInfinite ? max(norm, Double(abs(g))) : norm + pow(Double(abs(g)), Double(normType))
            }
        }
        if !normType.isInfinite { norm = pow(norm, 1 / Double(normType)) }
        let scale = Float(Double(maxNorm) / (norm + 1e-6))
        guard scale < 1 else { return gradients }
        return gradients.mapValues { g in g.map(.serial) { $0 * scale } }
    }
}

