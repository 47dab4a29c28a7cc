import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// FM (Rendle 2010, "Factorization Machines"), as RecBole 1.2.1's `FM` trains it over the
/// user and item ids and every `.user` / `.item` feature field.
///
///     e_f = pooled embedding of field f (a token's row, a sequence's mean, a float × its row)
///     z(u, i) = b + Σ_f w_f + ½ (‖Σ_f e_f‖² − Σ_f ‖e_f‖²)        (w_f: first-order weights)
///     loss = BCE(σ(z), label) over positives and drawn negatives (uniform by default)   (Adam)
///
/// Full ranking splits z into a user part, an item part and ⟨S_u, S_i⟩ (S: a side's Σ e_f),
/// so every user × every item is one GEMM of width `embedding_size` + 2.
public struct FM: ContextModel, ScoresWhenPrepared {
    public static let name = "FM"
    public static let summary = "Factorization machine over user, item and side-feature fields, trained pointwise on sampled negatives"
    public static let kind = ModelKind.factorisation
    public static let family = ModelFamily.contextAware
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(10),
    ]
    public static let testSettings: [[String: ConfigValue]] = [["embedding_size": .int(3)]]

    let machine: FactorizationMachine
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var inputs: ContextInputs?
    public var sampler: PointwiseSampler?

    public init(parameters: ModelParameters) throws {
        machine = FactorizationMachine(embeddingSize: try parameters.int("embedding_size", in: 1...1024))
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        machine.initialParameters(prepareInputs(data, context: context), rng: &rng)
    }

    /// z(u, i) for each listed pair (training, and the reference the fast
    /// scorer is tested against).
    public func logits(users: [Int32], items: [Int32], _ p: [String: Variable], tape: Tape, dropout _: inout SeededGenerator?) -> Variable {
        machine.logits(inputs!, users: users, items: items, p, tape: tape)
    }

    /// The item tower, built once for a whole evaluation pass.
    public func preparedForScoring(compute: Compute) -> any Scorer {
        machine.preparedScores(inputs!, parameters: parameters, compute: compute)
    }
}
