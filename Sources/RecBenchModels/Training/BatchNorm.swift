import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// torch's `BatchNorm1d` with its defaults, as RecBole's `MLPLayers(bn=True)` puts it after a
/// linear layer: γ = 1, β = 0, ε = 1e-5; while training, each batch is normalised by its own
/// statistics and the running ones move by momentum 0.1 (running mean 0 and variance 1 at
/// first, the batch's unbiased variance averaged in); in evaluation the running ones apply.
/// The running statistics are parameters the optimizer never touches: the batch's forward pass
/// records their new values on the tape and the trainer writes them after the step, so the
/// best epoch's copy and checkpoints carry them.
public struct BatchNorm: Sendable {
    public static let eps: Float = 1e-5, momentum: Float = 0.1
    /// Parameter-name prefix (`<prefix>.weight`, `.bias`, `.running_mean`, `.running_var`).
    public let prefix: String

    public init(prefix: String) { self.prefix = prefix }

    /// Whether a parameter's name is a BN running statistic (a checkpoint stores names only).
    public static func isRunningStatistic(_ name: String) -> Bool { name.hasSuffix(".running_mean") || name.hasSuffix(".running_var") }

    /// γ = 1, β = 0, running mean 0, running variance 1 (torch's initial state).
    public func initialize(_ parameters: inout Parameters, width: Int) {
        parameters.add("\(prefix).weight", Matrix(rows: 1, columns: width, repeating: 1))
        parameters.add("\(prefix).bias", Matrix(rows: 1, columns: width))
        parameters.addStatistic("\(prefix).running_mean", Matrix(rows: 1, columns: width))
        parameters.addStatistic("\(prefix).running_var", Matrix(rows: 1, columns: width, repeating: 1))
    }

    /// The normalised batch, or f of it with an `activation` (one op, the same values): its own
    /// statistics while `training` (recording the running ones' new values on the tape), the
    /// running ones otherwise. A training batch has at least two rows (a positive brings its
    /// negatives); torch refuses one, whose variance is 0.
    public func callAsFunction(_ x: Variable, _ p: [String: Variable], tape: Tape, training: Bool,
                               activation: PointwiseActivation? = nil) -> Variable {
        let mean = p["\(prefix).running_mean"]!.value, variance = p["\(prefix).running_var"]!.value
        let (y, batchMean, batchVariance) = tape.batchNorm(x, scale: p["\(prefix).weight"]!, shift: p["\(prefix).bias"]!, eps: Self.eps,
                                                           activation: activation, statistics: training ? nil : (mean, variance))
        if training {
            // A layer run twice on one tape (two calls of `logits` in one loss) moves twice, as torch's would.
            let meanName = "\(prefix).running_mean", varianceName = "\(prefix).running_var"
            tape.setStatistic(meanName, Self.moved(tape.statistics[meanName] ?? mean, toward: batchMean))
            tape.setStatistic(varianceName, Self.moved(tape.statistics[varianceName] ?? variance, toward: batchVariance))
        }
        return y
    }

    /// (1 − momentum) · running + momentum · batch.
    static func moved(_ running: Matrix, toward batch: Matrix) -> Matrix {
        Matrix(rows: 1, columns: running.columns, values: zip(running.values, batch.values).map { (1 - momentum) * $0 + momentum * $1 })
    }

    /// Evaluation's normalisation as y = x ⊙ s + t: s = γ / √(σ² + ε), t = β − μ ⊙ s.
    public func scaleAndShift(_ parameters: Parameters) -> (scale: [Float], shift: [Float]) {
        let gamma = parameters["\(prefix).weight"].values, beta = parameters["\(prefix).bias"].values
        let mean = parameters["\(prefix).running_mean"].values, variance = parameters["\(prefix).running_var"].values
        let s = (0..<gamma.count).map { gamma[$0] / (variance[$0] + Self.eps).squareRoot() }
        return (s, (0..<gamma.count).map { beta[$0] - mean[$0] * s[$0] })
    }

    /// The linear layer x·W + b followed by this normalisation in evaluation, as one linear
    /// layer: W·diag(s) and b ⊙ s + t (scoring folds it away).
    public func folded(weight: Matrix, bias: Matrix, _ parameters: Parameters) -> (weight: Matrix, bias: Matrix) {
        let (s, t) = scaleAndShift(parameters), n = weight.columns
        return (weight.scalingColumns(by: s), Matrix(rows: 1, columns: n, values: (0..<n).map { bias.values[$0] * s[$0] + t[$0] }))
    }
}
