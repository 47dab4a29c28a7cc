import Foundation
import Linalg
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// Updates parameters from gradients.
public protocol Optimizer: Sendable {
    /// Applies one step to the parameters named in `gradients`.
    mutating func step(_ parameters: inout Parameters, gradients: [String: Matrix], compute: Compute)
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

