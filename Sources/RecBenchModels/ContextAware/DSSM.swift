import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// DSSM (Huang et al. 2013, "Learning Deep Structured Semantic Models for Web Search"), as
/// RecBole 1.2.1's `DSSM` trains it: a user tower over the user's fields and an item tower over
/// the item's, each a tanh MLP with BN (after its last layer too), scored by their cosine.
///
///     u = MLP_tanh,BN(dropout([e_f]_{f ∈ user})),  v = MLP_tanh,BN(dropout([e_f]_{f ∈ item}))
///     z(u, i) = cos(u, v)                          (‖·‖ clamped at 1e-8, as torch's)
///     loss = BCE(σ(z), label) over positives and drawn negatives (uniform by default)
///
/// The cosine is the logit, so a prediction stays within σ(±1), as in RecBole. Full ranking is
/// a true two-tower GEMM of the unit-length towers (each computed once per entity).
public struct DSSM: ContextModel, ScoresWhenPrepared {
    public static let name = "DSSM"
    public static let summary = "Two towers, a tanh MLP with batch norm over the user's fields and one over the item's, scored by cosine (Huang et al. 2013)"
    public static let kind = ModelKind.factorisation
    public static let family = ModelFamily.contextAware
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(10),
        SharedKeys.mlpHiddenSize([256, 256, 256]),
        SharedKeys.dropoutProb(0.3),
        ConfigKey("double_tower", "bool", .bool(true),
                  "DSSM: user fields and item fields in separate towers (RecBole's DSSM.yaml; false stops RecBole, refused)."),
    ]
    public static let testSettings: [[String: ConfigValue]] = [
        ["embedding_size": .int(3), "mlp_hidden_size": .list([.int(4), .int(3)]), "dropout_prob": .double(0.2)],
    ]
    static let eps: Float = 1e-8

    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var inputs: ContextInputs?
    public var sampler: PointwiseSampler?
    let userTower: FieldMLP, itemTower: FieldMLP

    public init(parameters: ModelParameters) throws {
        userTower = try FieldMLP(parameters, activation: .tanh, batchNorm: true, prefix: "user_tower")
        itemTower = try FieldMLP(parameters, activation: .tanh, batchNorm: true, prefix: "item_tower")
        guard try parameters.bool("double_tower") else {   // RecBole 1.2.1 stops the same way
            throw parameters.invalid("double_tower", "DSSM is two towers: RecBole stops with \"set 'double tower' as True\"; set double_tower: true")
        }
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        let inputs = prepareInputs(data, context: context), d = userTower.embeddingSize
        var initial = Parameters()
        initial.add("embedding", inputs.table(width: d, columns: d, rng: &rng))
        userTower.initialize(&initial, fields: inputs.userFields.count, output: false, rng: &rng)
        itemTower.initialize(&initial, fields: inputs.itemFields.count, output: false, rng: &rng)
        return initial
    }

    public func logits(users: [Int32], items: [Int32], _ p: [String: Variable], tape: Tape, dropout rng: inout SeededGenerator?) -> Variable {
        let u = userTower.hiddenOutput([inputs!.embeddedSideBySide(inputs!.userFields, users: users, items: items, p, tape: tape)], p, tape: tape,
                                       dropout: &rng)
        let v = itemTower.hiddenOutput([inputs!.embeddedSideBySide(inputs!.itemFields, users: users, items: items, p, tape: tape)], p, tape: tape,
                                       dropout: &rng)
        return tape.rowDot(tape.normalizeRows(u, eps: Self.eps), tape.normalizeRows(v, eps: Self.eps))
    }

    /// Per training row both towers, forward and two pullback products; validation: each user's
    /// and each item's tower once and users × items cosine dots.
    public func cost(_ s: WorkShape) -> ModelCost? {
        let d = userTower.embeddingSize, userWidth = (inputs?.userFields.count ?? 1) * d, itemWidth = (inputs?.itemFields.count ?? 1) * d
        let row = userTower.multiplyAdds(width: userWidth) + itemTower.multiplyAdds(width: itemWidth)
        let pass = Double(s.users) * userTower.multiplyAdds(width: userWidth) + Double(s.items) * itemTower.multiplyAdds(width: itemWidth)
            + Double(s.users) * Double(s.items) * Double(userTower.hidden.last!)
        let flops = 6 * s.pointwiseRows * row + 2 * pass
        return ModelCost(nominal: flops, executed: flops, validationPass: 2 * pass)
    }

    /// The item tower once per evaluation pass; each batch's user tower and one GEMM.
    public func preparedForScoring(compute: Compute) -> any Scorer {
        let items = tower(itemTower, inputs!.itemFields, entities: Array(0..<Int32(inputs!.itemCount))[...], compute: compute)
        return PreparedScores { [self] users, block, compute in
            BLAS.gemm(tower(userTower, inputs!.userFields, entities: users, compute: compute), items, transposeB: true, into: &block, compute: compute)
        }
    }

    /// One side's unit-length tower outputs (evaluation: BN on its running statistics).
    func tower(_ mlp: FieldMLP, _ fields: [Int], entities: ArraySlice<Int32>, compute: Compute) -> Matrix {
        let tape = Tape(compute: compute), table = parameters["embedding"]
        let e = fields.map { tape.constant(inputs!.pooled($0, entities: entities, table: table, compute: compute)) }
        var none: SeededGenerator? = nil
        return tape.normalizeRows(mlp.hiddenOutput(e, tape.leaves(parameters) { _ in false }, tape: tape, dropout: &none), eps: Self.eps).value
    }
}
