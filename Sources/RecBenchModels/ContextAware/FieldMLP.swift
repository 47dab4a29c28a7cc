import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// The deep part the context-aware models share (DeepFM, WideDeep, FNN): RecBole's
/// `MLPLayers` over the field embeddings side by side, then one linear output.
///
///     h_0 = [e_1 | … | e_F],  h_l = act(W_l · dropout(h_{l−1}) + b_l),  deep = w · h_L + b
///
/// Weights Xavier-normal, biases 0 (RecBole's init). Full ranking splits the first layer into
/// a user half and an item half (each a sum over its side's fields of e_f · W₁[rows of f],
/// computed once), then `SplitMLP` runs the rest over tiles of items.
public struct FieldMLP: Sendable {
    public let embeddingSize: Int, hidden: [Int], dropout: Float, activation: HiddenActivation
    /// Parameter-name prefix.
    public let prefix = "deep"

    public init(embeddingSize: Int, hidden: [Int], dropout: Float, activation: HiddenActivation) {
        self.embeddingSize = embeddingSize; self.hidden = hidden; self.dropout = dropout; self.activation = activation
    }

    /// From the model's `embedding_size`, `mlp_hidden_size` (at least one layer) and `dropout_prob`.
    public init(_ parameters: ModelParameters, activation: HiddenActivation) throws {
        let hidden = try parameters.intList("mlp_hidden_size", in: 1...65536)
        guard !hidden.isEmpty else { throw parameters.invalid("mlp_hidden_size", "needs at least one layer") }
        self.init(embeddingSize: try parameters.int("embedding_size", in: 1...1024), hidden: hidden,
                  dropout: Float(try parameters.double("dropout_prob", in: 0...0.99)), activation: activation)
    }

    /// The field embeddings table ("embedding", RecBole's initialisation) and the layers.
    public func initialize(_ parameters: inout Parameters, _ inputs: ContextInputs, rng: inout SeededGenerator) {
        parameters.add("embedding", inputs.table(width: embeddingSize, columns: embeddingSize, rng: &rng))
        initialize(&parameters, fields: inputs.fieldCount, rng: &rng)
    }

    /// The layers' initial weights for `fields` fields (or an input `width` of its own: PNN's products).
    public func initialize(_ parameters: inout Parameters, fields: Int, width: Int? = nil, rng: inout SeededGenerator) {
        MLP([width ?? fields * embeddingSize] + hidden + [1], prefix: prefix).initialize(&parameters, rng: &rng)
    }

    /// deep(u, i) from the pairs' field embeddings; dropout before each hidden layer while training.
    public func logits(_ embedded: [Variable], _ p: [String: Variable], tape: Tape, dropout rng: inout SeededGenerator?) -> Variable {
        var h = embedded.count == 1 ? embedded[0] : tape.concatColumns(embedded)
        for l in 0..<hidden.count {
            if var draws = rng, dropout > 0 {
                h = tape.mul(h, tape.constant(MLP.dropoutMask(rows: h.value.rows, columns: h.value.columns, rate: dropout, rng: &draws, compute: tape.compute)))
                rng = draws
            }
            h = activation(tape.linear(h, p["\(prefix).\(l).weight"]!, p["\(prefix).\(l).bias"]!), tape: tape)
        }
        return tape.linear(h, p["\(prefix).\(hidden.count).weight"]!, p["\(prefix).\(hidden.count).bias"]!)
    }

    /// The items' half of the first layer, built once per evaluation pass; the returned
    /// closure adds each batch's deep scores to the block.
    public func preparedScores(_ inputs: ContextInputs, parameters: Parameters, compute: Compute)
        -> @Sendable (ArraySlice<Int32>, inout Matrix, Compute) -> Void {
        let itemHalf = half(inputs, inputs.itemFields, entities: Array(0..<Int32(inputs.itemCount))[...], parameters: parameters, compute: compute)
        let layers = (1...hidden.count).map { (parameters["\(prefix).\($0).weight"], parameters["\(prefix).\($0).bias"]) }
        let mlp = SplitMLP(firstBias: parameters["\(prefix).0.bias"], layers: layers, activation: activation)
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
