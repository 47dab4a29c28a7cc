import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// LR (logistic regression over the feature fields; Richardson et al. 2007), as RecBole 1.2.1's
/// `LR` trains it: FM's first-order term alone.
///
///     z(u, i) = b + Σ_f w_f                     (w_f: a field's first-order weight, pooled as FM's)
///     loss = BCE(σ(z), label) over positives and drawn negatives (uniform by default)
///
/// Full ranking: z is a user part plus an item part, so every user × every item is one GEMM
/// of two towers [a_u | 1] and [1 | c_i].
public struct LR: ContextModel, ScoresWhenPrepared {
    public static let name = "LR"
    public static let summary = "Logistic regression on the user, item and side-feature fields (a user's terms add a constant: one ranking for every user)"
    public static let kind = ModelKind.baseline
    public static let family = ModelFamily.contextAware
    public static let parameters: [ConfigKey] = []
    public static let testSettings: [[String: ConfigValue]] = [[:]]

    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var inputs: ContextInputs?
    public var sampler: PointwiseSampler?

    public init(parameters: ModelParameters) throws {}

    /// First-order weights as FM's (RecBole's initialisation), bias 0.
    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        var initial = Parameters()
        FirstOrderTerm.initialize(&initial, prepareInputs(data, context: context), rng: &rng)
        return initial
    }

    public func logits(users: [Int32], items: [Int32], _ p: [String: Variable], tape: Tape, dropout _: inout SeededGenerator?) -> Variable {
        FirstOrderTerm.logits(inputs!, users: users, items: items, p, tape: tape)
    }

    /// Per training row: one weight per field summed, and its gradient; validation: one user × item pass of width 2.
    public func cost(_ s: WorkShape) -> ModelCost? {
        let flops = 2 * s.pointwiseRows * Double(inputs?.fieldCount ?? 2) + 2 * Double(s.users) * Double(s.items) * 2
        return ModelCost(nominal: flops, executed: flops)
    }

    /// The item tower, built once per evaluation pass.
    public func preparedForScoring(compute: Compute) -> any Scorer {
        FirstOrderTerm.preparedScores(inputs!, parameters: parameters, compute: compute)
    }
}
