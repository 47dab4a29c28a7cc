import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// Wide & Deep (Cheng et al. 2016), as RecBole 1.2.1's `WideDeep` trains it: the first-order
/// (wide) term plus a ReLU MLP (deep) over the field embeddings.
///
///     z(u, i) = b + Σ_f w_f + w · h_L + b'      (h: `FieldMLP` with ReLU)
///     loss = BCE(σ(z), label) over positives and drawn negatives (uniform by default)
///
/// Full ranking: the wide part is one GEMM of a user and an item tower; the deep part's first
/// layer splits into a user half and an item half, the rest over item tiles.
public struct WideDeep: ContextModel, ScoresWhenPrepared {
    public static let name = "WideDeep"
    public static let summary = "Wide & Deep: the first-order term plus a ReLU MLP over the field embeddings (Cheng et al. 2016)"
    public static let kind = ModelKind.factorisation
    public static let family = ModelFamily.contextAware
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(10),
        SharedKeys.mlpHiddenSize([32, 16, 8]),
        SharedKeys.dropoutProb(0.1),
    ]
    public static let testSettings: [[String: ConfigValue]] = [
        ["embedding_size": .int(3), "mlp_hidden_size": .list([.int(4), .int(3)]), "dropout_prob": .double(0.2)],
    ]

    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var inputs: ContextInputs?
    public var sampler: PointwiseSampler?
    let deep: FieldMLP

    public init(parameters: ModelParameters) throws { deep = try FieldMLP(parameters, activation: .relu) }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        let inputs = prepareInputs(data, context: context)
        var initial = Parameters()
        deep.initialize(&initial, inputs, rng: &rng)
        FirstOrderTerm.initialize(&initial, inputs, rng: &rng)
        return initial
    }

    public func logits(users: [Int32], items: [Int32], _ p: [String: Variable], tape: Tape, dropout rng: inout SeededGenerator?) -> Variable {
        let embedded = inputs!.embeddedSideBySide(users: users, items: items, p, tape: tape)
        return tape.add(FirstOrderTerm.logits(inputs!, users: users, items: items, p, tape: tape), deep.logits([embedded], p, tape: tape, dropout: &rng))
    }

    /// Per training row the MLP forward and its two pullback products; validation: users × items
    /// × the layers after the split first one (the first-order term is a lookup).
    public func cost(_ s: WorkShape) -> ModelCost? {
        deep.cost(rows: s.pointwiseRows, pairs: Double(s.users) * Double(s.items), width: (inputs?.fieldCount ?? 2) * deep.embeddingSize)
    }

    /// The wide part's item tower and the deep part's item half, once per evaluation pass.
    public func preparedForScoring(compute: Compute) -> any Scorer {
        let wide = FirstOrderTerm.preparedScores(inputs!, parameters: parameters, compute: compute)
        let deepScores = deep.preparedScores(inputs!, parameters: parameters, compute: compute)
        return PreparedScores { users, block, compute in
            wide.scores(for: users, into: &block, compute: compute)
            deepScores(users, &block, compute)
        }
    }
}
