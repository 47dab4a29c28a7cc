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
///     loss = BCE(σ(z), label) over positives and uniform negatives   (Adam)
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

    let embeddingSize: Int, hidden: [Int], dropout: Float
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var inputs: ContextInputs?
    public var sampler: PointwiseSampler?
    let fm: FactorizationMachine

    public init(parameters: ModelParameters) throws {
        embeddingSize = try parameters.int("embedding_size", in: 1...1024)
        hidden = try parameters.intList("mlp_hidden_size", in: 1...65536)
        guard !hidden.isEmpty else { throw parameters.invalid("mlp_hidden_size", "needs at least one layer") }
        dropout = Float(try parameters.double("dropout_prob", in: 0...0.99))
        fm = FactorizationMachine(embeddingSize: embeddingSize)
    }

    /// The MLP: F·d inputs → hidden… → 1 (weights in × out, Xavier-normal, zero biases).
    var mlp: MLP { MLP([(inputs?.fieldCount ?? 0) * embeddingSize] + hidden + [1], prefix: "deep") }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        var initial = fm.initialParameters(prepareInputs(data, context: context), rng: &rng)
        mlp.initialize(&initial, rng: &rng)
        return initial
    }

    /// z(u, i) for each listed pair; dropout before each hidden layer while training.
    public func logits(users: [Int32], items: [Int32], _ p: [String: Variable], tape: Tape, dropout rng: inout SeededGenerator?) -> Variable {
        let embedded = fm.embedded(inputs!, users: users, items: items, p, tape: tape)
        var h = tape.concatColumns(embedded)
        for l in 0..<hidden.count {
            if var draws = rng, dropout > 0 {
                h = tape.mul(h, tape.constant(MLP.dropoutMask(rows: h.value.rows, columns: h.value.columns, rate: dropout, rng: &draws, compute: tape.compute)))
                rng = draws
            }
            h = tape.relu(tape.linear(h, p["deep.\(l).weight"]!, p["deep.\(l).bias"]!))
        }
        let deep = tape.linear(h, p["deep.\(hidden.count).weight"]!, p["deep.\(hidden.count).bias"]!)
        return tape.add(fm.logits(inputs!, embedded: embedded, users: users, items: items, p, tape: tape), deep)
    }

    /// The FM part's item tower and the items' half of the first deep layer, built once for
    /// a whole evaluation pass; each batch adds its users' halves.
    public func preparedForScoring(compute: Compute) -> any Scorer {
        let inputs = inputs!, fmScores = fm.preparedScores(inputs, parameters: parameters, compute: compute)
        let itemHalf = half(inputs.itemFields, entities: Array(0..<Int32(inputs.itemCount))[...], compute: compute)
        let layers = (1...hidden.count).map { (parameters["deep.\($0).weight"], parameters["deep.\($0).bias"]) }
        let mlp = SplitMLP(firstBias: parameters["deep.0.bias"], layers: layers)
        return PreparedScores { [self] users, block, compute in
            fmScores.scores(for: users, into: &block, compute: compute)
            mlp.addScores(userHalf: half(inputs.userFields, entities: users, compute: compute), itemHalf: itemHalf, into: &block, compute: compute)
        }
    }

    /// One side's part of the first layer: Σ over the side's fields of e_f · W₁[rows of f],
    /// ReLU'd only after the halves meet.
    func half(_ fields: [Int], entities: ArraySlice<Int32>, compute: Compute) -> Matrix {
        let inputs = inputs!, d = embeddingSize, w = parameters["deep.0.weight"], table = parameters["embedding"]
        var out = Matrix(rows: entities.count, columns: w.columns)
        for f in fields {
            let e = inputs.pooled(f, entities: entities, table: table, compute: compute)
            let rows = Matrix(rows: d, columns: w.columns, values: Array(w.values[f * d * w.columns..<(f + 1) * d * w.columns]))
            BLAS.gemm(e, rows, alpha: 1, beta: 1, into: &out, compute: compute)
        }
        return out
    }
}
