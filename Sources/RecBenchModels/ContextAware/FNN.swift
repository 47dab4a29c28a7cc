import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// FNN (Zhang et al. 2016, "Deep Learning over Multi-field Categorical Data"), as RecBole 1.2.1's
/// `FNN` trains it: an MLP with tanh over the field embeddings, without FM pre-training (RecBole
/// initialises the embeddings Xavier-normal) and without a first-order term.
///
///     h_0 = [e_1 | … | e_F],  h_l = tanh(W_l · dropout(h_{l−1}) + b_l),  z(u, i) = w · h_L + b
///     loss = BCE(σ(z), label) over positives and drawn negatives (uniform by default)
///
/// Full ranking: the first layer split into a user half and an item half, the rest over item
/// tiles (`FieldMLP`).
public struct FNN: ContextModel, ScoresWhenPrepared {
    public static let name = "FNN"
    public static let summary = "An MLP with tanh over the user, item and side-feature embeddings (Zhang et al. 2016)"
    public static let kind = ModelKind.factorisation
    public static let family = ModelFamily.contextAware
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(10),
        SharedKeys.mlpHiddenSize([256, 256, 256]),
        SharedKeys.dropoutProb(0.2),
    ]
    public static let testSettings: [[String: ConfigValue]] = [
        ["embedding_size": .int(3), "mlp_hidden_size": .list([.int(5), .int(3)]), "dropout_prob": .double(0.2)],
    ]

    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var inputs: ContextInputs?
    public var sampler: PointwiseSampler?
    let deep: FieldMLP

    public init(parameters: ModelParameters) throws { deep = try FieldMLP(parameters, activation: .tanh) }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        let inputs = prepareInputs(data, context: context)
        var initial = Parameters()
        deep.initialize(&initial, inputs, rng: &rng)
        return initial
    }

    public func logits(users: [Int32], items: [Int32], _ p: [String: Variable], tape: Tape, dropout rng: inout SeededGenerator?) -> Variable {
        deep.logits([inputs!.embeddedSideBySide(users: users, items: items, p, tape: tape)], p, tape: tape, dropout: &rng)
    }

    /// Per training row the MLP forward and its two pullback products; validation: users × items
    /// × the layers after the split first one.
    public func cost(_ s: WorkShape) -> ModelCost? {
        deep.cost(rows: s.pointwiseRows, pairs: Double(s.users) * Double(s.items), width: (inputs?.fieldCount ?? 2) * deep.embeddingSize)
    }

    /// The items' half of the first layer, once per evaluation pass.
    public func preparedForScoring(compute: Compute) -> any Scorer {
        let deepScores = deep.preparedScores(inputs!, parameters: parameters, compute: compute)
        return PreparedScores { users, block, compute in
            for i in 0..<block.values.count { block.values[i] = 0 }
            deepScores(users, &block, compute)
        }
    }
}
