import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// The deep part the context-aware models share (DeepFM, WideDeep, FNN, NFM, DCN, DSSM, xDeepFM,
/// AutoInt): RecBole's `MLPLayers` over the field embeddings side by side, then one linear output
/// (DCN's is the model's own, DSSM's towers have none, xDeepFM's last hidden layer is one unit).
///
///     h_0 = [e_1 | … | e_F],  h_l = act(BN(W_l · dropout(h_{l−1}) + b_l)),  deep = w · h_L + b
///
/// BN only with `batchNorm` (RecBole's `bn=True`: DCN, NFM, DSSM). Weights Xavier-normal,
/// biases 0 (RecBole's init). Full ranking splits the first layer into a user half and an
/// item half (each a sum over its side's fields of e_f · W₁[rows of f], computed once), then
/// `SplitMLP` runs the rest over tiles of items, each BN folded into its linear layer.
public struct FieldMLP: Sendable {
    public let embeddingSize: Int, hidden: [Int], dropout: Float, activation: HiddenActivation, batchNorm: Bool
    /// Parameter-name prefix.
    public let prefix: String
    /// The score is the last hidden layer's single activated unit, with no output layer (xDeepFM's: RecBole's
    /// `MLPLayers` ending in one unit); otherwise an output layer follows, the MLP's own or the model's.
    public let scoresFromLastHidden: Bool

    public init(embeddingSize: Int, hidden: [Int], dropout: Float, activation: HiddenActivation, batchNorm: Bool = false, prefix: String = "deep",
                scoresFromLastHidden: Bool = false) {
        precondition(!scoresFromLastHidden || (hidden.count > 1 && hidden.last == 1),
                     "FieldMLP: a score from the last hidden layer needs it one unit wide, after another")
        self.embeddingSize = embeddingSize; self.hidden = hidden; self.dropout = dropout; self.activation = activation
        self.batchNorm = batchNorm; self.prefix = prefix; self.scoresFromLastHidden = scoresFromLastHidden
    }

    /// From the model's `embedding_size`, `mlp_hidden_size` (at least one layer) and `dropout_prob`.
    public init(_ parameters: ModelParameters, activation: HiddenActivation, batchNorm: Bool = false, prefix: String = "deep") throws {
        let hidden = try parameters.intList("mlp_hidden_size", in: 1...65536)
        guard !hidden.isEmpty else { throw parameters.invalid("mlp_hidden_size", "needs at least one layer") }
        self.init(embeddingSize: try parameters.int("embedding_size", in: 1...1024), hidden: hidden,
                  dropout: Float(try parameters.double("dropout_prob", in: 0...0.99)), activation: activation, batchNorm: batchNorm, prefix: prefix)
    }

    /// The field embeddings table ("embedding", RecBole's initialisation) and the layers.
    public func initialize(_ parameters: inout Parameters, _ inputs: ContextInputs, rng: inout SeededGenerator) {
        parameters.add("embedding", inputs.table(width: embeddingSize, columns: embeddingSize, rng: &rng))
        initialize(&parameters, fields: inputs.fieldCount, rng: &rng)
    }

    /// The layers' initial weights for `fields` fields (or an input `width` of its own: PNN's
    /// products); `output` false leaves the output layer to the model (DCN's), `outputBias`
    /// false gives it none (NFM's).
    public func initialize(_ parameters: inout Parameters, fields: Int, width: Int? = nil, output: Bool = true, outputBias: Bool = true,
                           rng: inout SeededGenerator) {
        let sizes = [width ?? fields * embeddingSize] + hidden
        for l in 0..<hidden.count {
            parameters.add("\(prefix).\(l).weight", Initializer.xavierNormal(fanIn: sizes[l], fanOut: sizes[l + 1], rng: &rng))
            parameters.add("\(prefix).\(l).bias", Matrix(rows: 1, columns: sizes[l + 1]))
            if batchNorm { norm(l).initialize(&parameters, width: sizes[l + 1]) }
        }
        guard output else { return }
        parameters.add("\(prefix).\(hidden.count).weight", Initializer.xavierNormal(fanIn: hidden.last!, fanOut: 1, rng: &rng))
        if outputBias { parameters.add("\(prefix).\(hidden.count).bias", Matrix(rows: 1, columns: 1)) }
    }

    /// Multiply-adds of the hidden layers and the output unit for one row whose input is `width`
    /// wide; `split`: without the first layer, which full ranking computes once per user and
    /// per item (`cost`: batch norms, activations and dropout are elementwise, not counted).
    public func multiplyAdds(width: Int, split: Bool = false) -> Double {
        let sizes = [width] + hidden + (scoresFromLastHidden ? [] : [1])
        return zip(sizes, sizes.dropFirst()).dropFirst(split ? 1 : 0).map { Double($0 * $1) }.reduce(0, +)
    }

    /// The cost of a model whose products are this MLP over `width` inputs (plus `extraPerRow`
    /// multiply-adds a training row): `rows` training rows forward and both pullback products,
    /// and `pairs` scored pairs after the split first layer (one validation pass).
    public func cost(rows: Double, pairs: Double, width: Int, extraPerRow: Double = 0) -> ModelCost {
        let pass = 2 * pairs * multiplyAdds(width: width, split: true)
        let flops = 6 * rows * (multiplyAdds(width: width) + extraPerRow) + pass
        return ModelCost(nominal: flops, executed: flops, validationPass: pass)
    }

    /// Layer l's batch normalisation.
    func norm(_ l: Int) -> BatchNorm { BatchNorm(prefix: "\(prefix).\(l).bn") }

    /// deep(u, i) from the pairs' field embeddings; dropout before each hidden layer (and BN
    /// on the batch's statistics) while training.
    public func logits(_ embedded: [Variable], _ p: [String: Variable], tape: Tape, dropout rng: inout SeededGenerator?) -> Variable {
        let h = hiddenOutput(embedded, p, tape: tape, dropout: &rng), w = p["\(prefix).\(hidden.count).weight"]!
        guard let b = p["\(prefix).\(hidden.count).bias"] else { return tape.matmul(h, w) }
        return tape.linear(h, w, b)
    }

    /// h_L, the last hidden layer's output.
    public func hiddenOutput(_ embedded: [Variable], _ p: [String: Variable], tape: Tape, dropout rng: inout SeededGenerator?) -> Variable {
        var h = embedded.count == 1 ? embedded[0] : tape.concatColumns(embedded)
        let training = rng != nil
        for l in 0..<hidden.count {
            h = tape.linear(Dropout.apply(h, rate: dropout, tape: tape, rng: &rng), p["\(prefix).\(l).weight"]!, p["\(prefix).\(l).bias"]!)
            h = batchNorm ? norm(l)(h, p, tape: tape, training: training, activation: activation) : activation(h, tape: tape)
        }
        return h
    }

    /// The parameters with each hidden layer's BN folded into its linear layer (evaluation).
    public func folded(_ parameters: Parameters) -> Parameters {
        guard batchNorm else { return parameters }
        var out = parameters
        for l in 0..<hidden.count {
            let (w, b) = norm(l).folded(weight: parameters["\(prefix).\(l).weight"], bias: parameters["\(prefix).\(l).bias"], parameters)
            out["\(prefix).\(l).weight"] = w
            out["\(prefix).\(l).bias"] = b
        }
        return out
    }

    /// The layers after the first as `SplitMLP` takes them, from `folded` parameters (`output`
    /// nil: this MLP's own output layer, a missing bias as 0, or with `scoresFromLastHidden`
    /// its last hidden unit, activated).
    public func splitMLP(folded p: Parameters, output: (weight: Matrix, bias: Matrix)? = nil) -> SplitMLP {
        let last = hidden.count
        if scoresFromLastHidden {
            precondition(output == nil, "FieldMLP: an output layer given to an MLP that scores from its last hidden unit")
            return SplitMLP(firstBias: p["\(prefix).0.bias"], layers: (1..<last).map { (p["\(prefix).\($0).weight"], p["\(prefix).\($0).bias"]) },
                            activation: activation, activatesScore: true)
        }
        let bias = p.names.contains("\(prefix).\(last).bias") ? p["\(prefix).\(last).bias"] : Matrix(rows: 1, columns: 1)
        let out = output ?? (p["\(prefix).\(last).weight"], bias)
        let layers = (1..<last).map { (p["\(prefix).\($0).weight"], p["\(prefix).\($0).bias"]) } + [out]
        return SplitMLP(firstBias: p["\(prefix).0.bias"], layers: layers, activation: activation)
    }

    /// The items' half of the first layer, built once per evaluation pass; the returned
    /// closure adds each batch's deep scores to the block.
    public func preparedScores(_ inputs: ContextInputs, parameters: Parameters, compute: Compute)
        -> @Sendable (ArraySlice<Int32>, inout Matrix, Compute) -> Void {
        let parameters = folded(parameters), mlp = splitMLP(folded: parameters)
        let itemHalf = half(inputs, inputs.itemFields, entities: Array(0..<Int32(inputs.itemCount))[...], parameters: parameters, compute: compute)
        return { [self] users, block, compute in
            mlp.addScores(userHalf: half(inputs, inputs.userFields, entities: users, parameters: parameters, compute: compute), itemHalf: itemHalf,
                          into: &block, compute: compute)
        }
    }

    /// One side's part of the first layer: Σ over the side's fields of e_f · W₁[rows of f],
    /// activated only after the halves meet.
    func half(_ inputs: ContextInputs, _ fields: [Int], entities: ArraySlice<Int32>, parameters: Parameters, compute: Compute) -> Matrix {
        let d = embeddingSize, w = parameters["\(prefix).0.weight"], table = parameters["embedding"]
        var out = Matrix(rows: entities.count, columns: w.columns)
        for f in fields {
            let e = inputs.pooled(f, entities: entities, table: table, compute: compute)
            let rows = Matrix(rows: d, columns: w.columns, values: Array(w.values[f * d * w.columns..<(f + 1) * d * w.columns]))
            BLAS.gemm(e, rows, alpha: 1, beta: 1, into: &out, compute: compute)
        }
        return out
    }
}

/// FM's first-order term b + Σ_f w_f on its own (LR, WideDeep's wide part): a user part plus
/// an item part, so full ranking is one GEMM of towers [a_u | 1] and [1 | c_i + b].
public enum FirstOrderTerm {
    /// The first-order weights (RecBole's initialisation) and the bias, 0.
    public static func initialize(_ parameters: inout Parameters, _ inputs: ContextInputs, rng: inout SeededGenerator) {
        parameters.add("first_order", inputs.table(width: 1, columns: 1, rng: &rng))
        parameters.add("bias", Matrix(rows: 1, columns: 1))
    }

    /// b + Σ_f w_f for each listed pair.
    public static func logits(_ inputs: ContextInputs, users: [Int32], items: [Int32], _ p: [String: Variable], tape: Tape) -> Variable {
        let firstOrder = tape.pooledLookup(p["first_order"]!, inputs.lookups(users: users, items: items, mean: false))
        return tape.add(firstOrder, tape.gather(p["bias"]!, rows: [Int32](repeating: 0, count: users.count)))
    }

    /// The item tower, built once per evaluation pass; each batch's users' tower and one GEMM.
    public static func preparedScores(_ inputs: ContextInputs, parameters: Parameters, compute: Compute) -> PreparedScores {
        let weights = parameters["first_order"], bias = parameters["bias"].values[0]
        let side = { @Sendable (fields: [Int], entities: ArraySlice<Int32>, compute: Compute) -> [Float] in
            inputs.pooled(fields, entities: entities, table: weights, mean: false, compute: compute).values
        }
        let itemScalars = side(inputs.itemFields, Array(0..<Int32(inputs.itemCount))[...], compute).map { $0 + bias }
        let items = TwoTowerScores.tower(cross: Matrix(rows: inputs.itemCount, columns: 0), scalar: itemScalars, scalarFirst: false)
        return PreparedScores { users, block, compute in
            let tower = TwoTowerScores.tower(cross: Matrix(rows: users.count, columns: 0), scalar: side(inputs.userFields, users, compute), scalarFirst: true)
            TwoTowerScores.score(users: tower, items: items, into: &block, compute: compute)
        }
    }
}
