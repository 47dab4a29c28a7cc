import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// DeepFM (Guo et al. 2017, "DeepFM: A Factorization-Machine based Neural Network for CTR
/// Prediction"), as RecBole 1.2.1's `DeepFM` trains it: FM and an MLP over the same field
/// embeddings, summed before the sigmoid.
///
///     x = [e_1 | … | e_F]                                   (the field embeddings side by side)
///     h_l = ReLU(W_l · dropout(h_{l−1}) + b_l),  h_0 = x      (`mlp_hidden_size` layers)
///     z(u, i) = FM(u, i) + w · h_L + b                        (FM: first order + pairwise)
///     loss = BCE(σ(z), label) over positives and drawn negatives (uniform by default)   (Adam)
///
/// Full ranking: the FM part is FM's one GEMM; the first MLP layer splits into a user half
/// and an item half (each computed once), so a user × every item costs one broadcast add,
/// then the remaining layers as GEMMs over the items.
public struct DeepFM: ContextModel, ScoresWhenPrepared {
    public static let name = "DeepFM"
    public static let summary = "FM plus an MLP over the field embeddings, trained pointwise on sampled negatives"
    public static let kind = ModelKind.factorisation
    public static let family = ModelFamily.contextAware
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(10),
        SharedKeys.mlpHiddenSize([128, 128, 128]),
        SharedKeys.dropoutProb(0.2),
    ]
    public static let testSettings: [[String: ConfigValue]] = [
        ["embedding_size": .int(3), "mlp_hidden_size": .list([.int(5), .int(3)]), "dropout_prob": .double(0.2)],
    ]

    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var inputs: ContextInputs?
    public var sampler: PointwiseSampler?
    let fm: FactorizationMachine, deep: FieldMLP

    public init(parameters: ModelParameters) throws {
        deep = try FieldMLP(parameters, activation: .relu)
        fm = FactorizationMachine(embeddingSize: deep.embeddingSize)
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        let inputs = prepareInputs(data, context: context)
        var initial = fm.initialParameters(inputs, rng: &rng)
        deep.initialize(&initial, fields: inputs.fieldCount, rng: &rng)
        return initial
    }

    /// z(u, i) for each listed pair; dropout before each hidden layer while training.
    public func logits(users: [Int32], items: [Int32], _ p: [String: Variable], tape: Tape, dropout rng: inout SeededGenerator?) -> Variable {
        let embedded = inputs!.embeddedSideBySide(users: users, items: items, p, tape: tape)
        return tape.add(fm.logits(inputs!, users: users, items: items, p, tape: tape), deep.logits([embedded], p, tape: tape, dropout: &rng))
    }

    /// The FM part's item tower and the items' half of the first deep layer, built once for
    /// a whole evaluation pass; each batch adds its users' halves.
    public func preparedForScoring(compute: Compute) -> any Scorer {
        let fmScores = fm.preparedScores(inputs!, parameters: parameters, compute: compute)
        let deepScores = deep.preparedScores(inputs!, parameters: parameters, compute: compute)
        return PreparedScores { users, block, compute in
            fmScores.scores(for: users, into: &block, compute: compute)
            deepScores(users, &block, compute)
        }
    }
}
