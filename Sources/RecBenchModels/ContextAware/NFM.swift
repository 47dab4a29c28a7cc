import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// NFM (He & Chua 2017, "Neural Factorization Machines"), as RecBole 1.2.1's `NFM` trains it:
/// the bi-interaction pooling of the field embeddings, batch-normalised, through a sigmoid MLP
/// with BN, plus the first-order term.
///
///     bi = ½ ((Σ_f e_f)² − Σ_f e_f²)                               (per dimension)
///     z(u, i) = b + Σ_f w_f + wᵀ MLP_σ,BN(BN(bi))                   (w without bias)
///     loss = BCE(σ(z), label) over positives and drawn negatives (uniform by default)
///
/// Full ranking: bi = A_u + B_i + S_u ⊙ T_i (a side's own pairs, and the product of the sides'
/// sums), and every BN in evaluation is affine, so the first layer splits into a user half, an
/// item half and, per user, one GEMM T · diag(S_u) · W₁; `SplitMLP` runs the rest.
public struct NFM: ContextModel, ScoresWhenPrepared {
    public static let name = "NFM"
    public static let summary = "Neural factorization machine: bi-interaction pooling through a sigmoid MLP, plus the first-order term (He & Chua 2017)"
    public static let kind = ModelKind.factorisation
    public static let family = ModelFamily.contextAware
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(10),
        SharedKeys.mlpHiddenSize([64, 64, 64]),
        SharedKeys.dropoutProb(0),
    ]
    public static let testSettings: [[String: ConfigValue]] = [
        ["embedding_size": .int(3), "mlp_hidden_size": .list([.int(4), .int(3)]), "dropout_prob": .double(0.2)],
    ]

    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var inputs: ContextInputs?
    public var sampler: PointwiseSampler?
    let deep: FieldMLP
    let pooling = BatchNorm(prefix: "bi.bn")

    public init(parameters: ModelParameters) throws { deep = try FieldMLP(parameters, activation: .sigmoid, batchNorm: true) }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        let inputs = prepareInputs(data, context: context), d = deep.embeddingSize
        var initial = Parameters()
        initial.add("embedding", inputs.table(width: d, columns: d, rng: &rng))
        pooling.initialize(&initial, width: d)
        deep.initialize(&initial, fields: 1, width: d, outputBias: false, rng: &rng)
        FirstOrderTerm.initialize(&initial, inputs, rng: &rng)
        return initial
    }

    public func logits(users: [Int32], items: [Int32], _ p: [String: Variable], tape: Tape, dropout rng: inout SeededGenerator?) -> Variable {
        let pairs = tape.biInteraction(p["embedding"]!, inputs!.lookups(users: users, items: items, mean: true))
        let bi = pooling(pairs, p, tape: tape, training: rng != nil)
        return tape.add(FirstOrderTerm.logits(inputs!, users: users, items: items, p, tape: tape), deep.logits([bi], p, tape: tape, dropout: &rng))
    }

    /// Per training row the MLP over the pooled d-vector, forward and two pullback products
    /// (the bi-interaction is elementwise); validation: users × items × (the cross term's d
    /// products and its first-layer product, and the layers after the first).
    public func cost(_ s: WorkShape) -> ModelCost? {
        let d = deep.embeddingSize
        let pair = deep.multiplyAdds(width: d, split: true) + Double(d + d * deep.hidden[0])
        let flops = 6 * s.pointwiseRows * deep.multiplyAdds(width: d) + 2 * Double(s.users) * Double(s.items) * pair
        return ModelCost(nominal: flops, executed: flops, validationPass: 2 * Double(s.users) * Double(s.items) * pair)
    }

    /// The first-order towers and both halves of the first layer, once per evaluation pass; per
    /// user, the cross term's GEMM, then the rest of the MLP over item tiles.
    public func preparedForScoring(compute: Compute) -> any Scorer {
        let inputs = inputs!, d = deep.embeddingSize
        var p = deep.folded(parameters)
        // BN(bi) · W₁ + b₁ = bi · diag(s) W₁ + (t · W₁ + b₁): the pooling's BN folded into the first layer.
        let (s, t) = pooling.scaleAndShift(parameters)
        var firstBias = p["deep.0.bias"]
        BLAS.gemm(Matrix(rows: 1, columns: d, values: t), p["deep.0.weight"], alpha: 1, beta: 1, into: &firstBias, compute: .serial)
        p["deep.0.weight"] = p["deep.0.weight"].scalingRows(by: s)
        p["deep.0.bias"] = firstBias
        let first = p["deep.0.weight"], mlp = deep.splitMLP(folded: p)
        let wide = FirstOrderTerm.preparedScores(inputs, parameters: parameters, compute: compute)
        let items = sides(inputs.itemFields, entities: Array(0..<Int32(inputs.itemCount))[...], compute: compute)
        let itemHalf = BLAS.gemm(items.pairs, first, compute: compute)
        return PreparedScores { [self] users, block, compute in
            wide.scores(for: users, into: &block, compute: compute)
            let user = sides(inputs.userFields, entities: users, compute: compute)
            mlp.addScores(userHalf: BLAS.gemm(user.pairs, first, compute: compute), itemHalf: itemHalf, into: &block, compute: compute) { row, half in
                BLAS.gemm(items.sum, first.scalingRows(by: user.sum.row(row)), alpha: 1, beta: 1, into: &half, compute: .serial)   // T · diag(S_u) · W₁
            }
        }
    }

    /// One side's Σ_f e_f and its own pairs' bi-interaction ½ ((Σ e_f)² − Σ e_f²), per entity.
    func sides(_ fields: [Int], entities: ArraySlice<Int32>, compute: Compute) -> (sum: Matrix, pairs: Matrix) {
        let d = deep.embeddingSize, table = parameters["embedding"]
        var sum = Matrix(rows: entities.count, columns: d), squares = Matrix(rows: entities.count, columns: d)
        for f in fields {
            let e = inputs!.pooled(f, entities: entities, table: table, compute: compute)
            for i in 0..<e.values.count { sum.values[i] += e.values[i]; squares.values[i] += e.values[i] * e.values[i] }
        }
        var pairs = sum
        for i in 0..<pairs.values.count { pairs.values[i] = 0.5 * (sum.values[i] * sum.values[i] - squares.values[i]) }
        return (sum, pairs)
    }
}
