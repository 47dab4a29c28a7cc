import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// PNN (Qu et al. 2016, "Product-based Neural Networks for User Response Prediction"), as
/// RecBole 1.2.1's `PNN` trains it: an MLP over the field embeddings and their pairwise products.
///
///     x = [e_1 | … | e_F | ⟨e_f, e_g⟩_{f<g} | e_fᵀ K_fg e_g_{f<g}]     (`use_inner`, `use_outer`)
///     z(u, i) = w · MLP_ReLU(x) + b                                       (dropout before each layer)
///     loss = BCE(σ(z), label) + λ Σ_l ‖W_l‖                               (`reg_weight`, unsquared)
///
/// Every product is bilinear in two fields, so the first layer splits: the embeddings and the
/// pairs within one side go to that side's half; a pair across the sides adds, for user u and
/// item field g, E_g · Σ_f (M_fg e_f(u)) ⊗ W₁[pair] (one GEMM per item field and user), then
/// `SplitMLP` runs the rest over item tiles.
public struct PNN: ContextModel, ScoresWhenPrepared {
    public static let name = "PNN"
    public static let summary = "Product-based neural network: an MLP over the field embeddings and their inner (and outer) products (Qu et al. 2016)"
    public static let kind = ModelKind.factorisation
    public static let family = ModelFamily.contextAware
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(10),
        SharedKeys.mlpHiddenSize([128, 256, 128]),
        SharedKeys.dropoutProb(0),
        ConfigKey("use_inner", "bool", .bool(true), "PNN: feed each field pair's inner product to the MLP."),
        ConfigKey("use_outer", "bool", .bool(false), "PNN: feed each field pair's kernel product e_fᵀ K e_g to the MLP."),
        SharedKeys.regWeight(0),
    ]
    public static let testSettings: [[String: ConfigValue]] = [
        ["embedding_size": .int(3), "mlp_hidden_size": .list([.int(4), .int(3)]), "dropout_prob": .double(0.2), "reg_weight": .double(0.1)],
        ["embedding_size": .int(2), "mlp_hidden_size": .list([.int(3)]), "use_outer": .bool(true)],
    ]

    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var inputs: ContextInputs?
    public var sampler: PointwiseSampler?
    let deep: FieldMLP, inner: Bool, outer: Bool, regWeight: Float

    public init(parameters: ModelParameters) throws {
        deep = try FieldMLP(parameters, activation: .relu)
        inner = try parameters.bool("use_inner")
        outer = try parameters.bool("use_outer")
        regWeight = Float(try parameters.double("reg_weight", in: 0...1e6))
    }

    /// The field pairs f < g, in RecBole's order.
    var pairs: [(Int, Int)] {
        let f = inputs?.fieldCount ?? 0
        return (0..<f).flatMap { a in ((a + 1)..<f).map { (a, $0) } }
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        let inputs = prepareInputs(data, context: context), d = deep.embeddingSize, n = pairs.count
        var initial = Parameters()
        initial.add("embedding", inputs.table(width: d, columns: d, rng: &rng))
        deep.initialize(&initial, fields: inputs.fieldCount, width: inputs.fieldCount * d + (inner ? n : 0) + (outer ? n : 0), rng: &rng)
        if outer {
            // RecBole's kernel is d × pairs × d, Xavier-uniform over that shape; stored here as pairs × d rows of d (K_fg[m, k]).
            initial.add("outer.kernel", Initializer.uniform(rows: n * d, columns: d, bound: (6 / Float(n * d + d * d)).squareRoot(), rng: &rng))
        }
        return initial
    }

    public func logits(users: [Int32], items: [Int32], _ p: [String: Variable], tape: Tape, dropout rng: inout SeededGenerator?) -> Variable {
        let e = inputs!.embedded(users: users, items: items, p, tape: tape), d = deep.embeddingSize
        var x = e
        if inner {   // each pair's e_f ⊙ e_g side by side, then summed per d-wide block: rows × pairs
            let products = tape.sliceProducts(e, pairs.map { SlicePair($0.0, 0, $0.1, 0) }, width: d, summed: false)
            let rows = users.count, blocks = tape.reshaped(products, rows: rows * pairs.count, columns: d)
            x.append(tape.reshaped(tape.sumRows(blocks), rows: rows, columns: pairs.count))
        }
        if outer {
            let kernel = p["outer.kernel"]!
            x.append(tape.concatColumns(pairs.enumerated().map { k, pair in
                tape.rowDot(tape.matmul(e[pair.0], tape.rows(kernel, k * d..<(k + 1) * d)), e[pair.1])
            }))
        }
        return deep.logits(x, p, tape: tape, dropout: &rng)
    }

    /// λ Σ_l ‖W_l‖ over the MLP's hidden layers.
    public func penalty(_ p: [String: Variable], tape: Tape) -> Variable? {
        normPenalty((0..<deep.hidden.count).map { "deep.\($0).weight" }, weight: regWeight, p, tape: tape)
    }
}

extension PNN {
    /// Per training row the pair products and the MLP, forward and two pullback products;
    /// validation: users × items × (each user-item pair's product and its first-layer column,
    /// and the layers after the first).
    public func cost(_ s: WorkShape) -> ModelCost? {
        let d = deep.embeddingSize, f = inputs?.fieldCount ?? 2, n = pairs.count, h = deep.hidden[0]
        let product = (inner ? d : 0) + (outer ? d * d + d : 0), cross = (inputs?.userFields.count ?? 1) * (inputs?.itemFields.count ?? 1)
        let row = deep.multiplyAdds(width: f * d + (inner ? n : 0) + (outer ? n : 0)) + Double(n * product)
        let pair = deep.multiplyAdds(width: 0, split: true) + Double(cross * (product + ((inner ? 1 : 0) + (outer ? 1 : 0)) * h))
        let flops = 6 * s.pointwiseRows * row + 2 * Double(s.users) * Double(s.items) * pair
        return ModelCost(nominal: flops, executed: flops, validationPass: 2 * Double(s.users) * Double(s.items) * pair)
    }

    /// The items' half of the first layer and their field embeddings, once per evaluation
    /// pass; per user, the cross pairs' GEMMs, then the rest of the MLP over item tiles.
    public func preparedForScoring(compute: Compute) -> any Scorer {
        let inputs = inputs!, entities = Array(0..<Int32(inputs.itemCount))[...]
        let itemHalf = half(inputs.itemFields, entities: entities, compute: compute)
        let itemEmbeddings = embeddings(inputs.itemFields, entities: entities, compute: compute)
        let mlp = deep.splitMLP(folded: parameters)   // PNN has no BN
        return PreparedScores { [self] users, block, compute in
            for i in 0..<block.values.count { block.values[i] = 0 }
            let userHalf = half(inputs.userFields, entities: users, compute: compute)
            let userEmbeddings = embeddings(inputs.userFields, entities: users, compute: compute)
            mlp.addScores(userHalf: userHalf, itemHalf: itemHalf, into: &block, compute: compute) { row, items in
                for g in inputs.itemFields {
                    guard let weights = crossWeights(userEmbeddings, row: row, itemField: g) else { continue }
                    BLAS.gemm(itemEmbeddings[g]!, weights, alpha: 1, beta: 1, into: &items, compute: .serial)
                }
            }
        }
    }

    func embeddings(_ fields: [Int], entities: ArraySlice<Int32>, compute: Compute) -> [Int: Matrix] {
        Dictionary(uniqueKeysWithValues: fields.map { ($0, inputs!.pooled($0, entities: entities, table: parameters["embedding"], compute: compute)) })
    }

    /// The first-layer rows of pair k's products (inner, then outer).
    func productRows(_ k: Int) -> [(row: Int, outer: Bool)] {
        let base = inputs!.fieldCount * deep.embeddingSize, n = pairs.count
        return (inner ? [(base + k, false)] : []) + (outer ? [(base + (inner ? n : 0) + k, true)] : [])
    }

    /// e_aᵀ M e_b for pair k per entity row (M = I, or the pair's kernel).
    func product(_ k: Int, _ a: Matrix, _ b: Matrix, outer: Bool) -> [Float] {
        let d = deep.embeddingSize, left = outer ? BLAS.gemm(a, parameters["outer.kernel"].rows(k * d..<(k + 1) * d), compute: .serial) : a
        return (0..<a.rows).map { r in (0..<d).reduce(Float(0)) { $0 + left.values[r * d + $1] * b.values[r * d + $1] } }
    }

    /// One side's part of the first layer: its fields' embeddings and the products of its own pairs.
    func half(_ fields: [Int], entities: ArraySlice<Int32>, compute: Compute) -> Matrix {
        let d = deep.embeddingSize, w = parameters["deep.0.weight"], e = embeddings(fields, entities: entities, compute: compute)
        var out = Matrix(rows: entities.count, columns: w.columns)
        for f in fields { BLAS.gemm(e[f]!, w.rows(f * d..<(f + 1) * d), alpha: 1, beta: 1, into: &out, compute: compute) }
        for (k, (a, b)) in pairs.enumerated() where fields.contains(a) && fields.contains(b) {
            for (row, isOuter) in productRows(k) {
                let values = product(k, e[a]!, e[b]!, outer: isOuter)
                for r in 0..<entities.count { for c in 0..<w.columns { out.values[r * w.columns + c] += values[r] * w[row, c] } }
            }
        }
        return out
    }

    /// Σ over the cross pairs (f in the user's fields, g) of v_f ⊗ W₁[pair row]: d × width, so
    /// that E_g · it adds those pairs' first-layer terms for every item (nil: no such pair).
    func crossWeights(_ user: [Int: Matrix], row: Int, itemField g: Int) -> Matrix? {
        let d = deep.embeddingSize, w = parameters["deep.0.weight"]
        var out = Matrix(rows: d, columns: w.columns), any = false
        for (k, (a, b)) in pairs.enumerated() where a == g || b == g {
            let f = a == g ? b : a
            guard let e = user[f] else { continue }
            let eu = Array(e.row(row))
            for (wRow, isOuter) in productRows(k) {
                // inner: v = e_u; outer: e_aᵀ R e_b read from the user's side (a or b).
                var v = eu
                if isOuter {
                    let r = parameters["outer.kernel"].rows(k * d..<(k + 1) * d)
                    v = (0..<d).map { m in (0..<d).reduce(Float(0)) { f == a ? $0 + eu[$1] * r[$1, m] : $0 + r[m, $1] * eu[$1] } }
                }
                for m in 0..<d { for c in 0..<w.columns { out.values[m * w.columns + c] += v[m] * w[wRow, c] } }
                any = true
            }
        }
        return any ? out : nil
    }
}
