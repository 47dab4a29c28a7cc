import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// AutoInt (Song et al. 2019, "Automatic Feature Interaction Learning via Self-Attentive
/// Neural Networks"), as RecBole 1.2.1's `AutoInt` trains it: multi-head self-attention over
/// the fields, flattened into one logit, plus a ReLU MLP and the first-order term.
///
///     T_0 = [e_f W_a + b_a]_f (F × A),  T_{l+1} = MHA_l(T_l)     (torch's MultiheadAttention:
///     packed in-projection, softmax(Q Kᵀ/√(A/H)) V per head, dropout on its weights, out-projection)
///     z(u, i) = b + Σ_f w_f + w_t · vec(ReLU(T_L [+ e W_r + b_r])) + b_t + w · MLP_ReLU(dropout(X_0)) + b
///     loss = BCE(σ(z), label) over positives and drawn negatives (uniform by default)
///
/// `has_residual` is in no RecBole yaml: it reads None there, so it is off by default here too.
/// `dropout_probs`: [attention weights, MLP, unused (RecBole reads it, never applies it)].
/// Full ranking: the first-order term is a two-tower GEMM and the MLP splits its first layer;
/// attention mixes user and item fields, so it runs per user over tiles of items (each tile's
/// pairs as sequences of F fields through GEMMs).
public struct AutoInt: ContextModel, ScoresWhenPrepared {
    public static let name = "AutoInt"
    public static let summary = "Multi-head self-attention over the fields, plus an MLP and the first-order term (Song et al. 2019)"
    public static let kind = ModelKind.attention
    public static let family = ModelFamily.contextAware
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(10),
        SharedKeys.attentionSize(16),
        SharedKeys.layerCount(3),
        ConfigKey("num_heads", "int", .int(2), "AutoInt: attention heads per layer."),
        SharedKeys.dropoutProbs([0.2, 0.2, 0.2]),
        SharedKeys.mlpHiddenSize([128, 128]),
        ConfigKey("has_residual", "bool", .bool(false), "AutoInt: add a linear map of the field embeddings to the attention's output."),
    ]
    // Settings whose ReLU(T_L) sits off its kinks on the gradient check's fixture: with 2 layers of width 4 and
    // one head, a bias that shifts every row meets kinks at any step (checked: a tanh in its place agrees to 1e-4).
    public static let testSettings: [[String: ConfigValue]] = [
        ["embedding_size": .int(3), "attention_size": .int(4), "n_layers": .int(1), "mlp_hidden_size": .list([.int(3)])],
        ["embedding_size": .int(3), "attention_size": .int(2), "n_layers": .int(2), "num_heads": .int(1), "mlp_hidden_size": .list([.int(3)]),
         "has_residual": .bool(true)],
    ]
    /// Items per attention tile in full ranking.
    static let tileItems = 256

    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var inputs: ContextInputs?
    public var sampler: PointwiseSampler?
    let deep: FieldMLP, width: Int, layers: Int, heads: Int, attentionDropout: Float, residual: Bool

    public init(parameters: ModelParameters) throws {
        let dropouts = try parameters.doubleList("dropout_probs", in: 0...0.99)
        guard dropouts.count == 3 else {
            throw parameters.invalid("dropout_probs", "needs 3 probabilities (attention weights, MLP, and a third RecBole 1.2.1 never applies)")
        }
        let hidden = try parameters.intList("mlp_hidden_size", in: 1...65536)
        guard !hidden.isEmpty else { throw parameters.invalid("mlp_hidden_size", "needs at least one layer") }
        deep = FieldMLP(embeddingSize: try parameters.int("embedding_size", in: 1...1024), hidden: hidden, dropout: Float(dropouts[1]), activation: .relu)
        width = try parameters.int("attention_size", in: 1...4096)
        layers = try parameters.int("n_layers", in: 0...16)
        heads = try parameters.int("num_heads", in: 1...64)
        guard width % heads == 0 else {
            throw parameters.conflict("num_heads", "attention_size", "attention_size \(width) is not a multiple of num_heads \(heads)")
        }
        attentionDropout = Float(dropouts[0])
        residual = try parameters.bool("has_residual")
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        let inputs = prepareInputs(data, context: context), d = deep.embeddingSize, a = width
        var initial = Parameters()
        deep.initialize(&initial, inputs, rng: &rng)
        initial.add("att_embedding.weight", Initializer.xavierNormal(fanIn: d, fanOut: a, rng: &rng))
        initial.add("att_embedding.bias", Matrix(rows: 1, columns: a))
        for l in 0..<layers {
            // torch's packed in-projection: Xavier-uniform over the whole 3A × A matrix; the out-projection is a Linear (RecBole's Xavier-normal).
            for name in ["query", "key", "value"] {
                initial.add("attention.\(l).\(name).weight", Initializer.uniform(rows: a, columns: a, bound: (6 / Float(4 * a)).squareRoot(), rng: &rng))
                initial.add("attention.\(l).\(name).bias", Matrix(rows: 1, columns: a))
            }
            initial.add("attention.\(l).output.weight", Initializer.xavierNormal(fanIn: a, fanOut: a, rng: &rng))
            initial.add("attention.\(l).output.bias", Matrix(rows: 1, columns: a))
        }
        if residual {
            initial.add("residual.weight", Initializer.xavierNormal(fanIn: d, fanOut: a, rng: &rng))
            initial.add("residual.bias", Matrix(rows: 1, columns: a))
        }
        initial.add("attn_fc.weight", Initializer.xavierNormal(fanIn: inputs.fieldCount * a, fanOut: 1, rng: &rng))
        initial.add("attn_fc.bias", Matrix(rows: 1, columns: 1))
        FirstOrderTerm.initialize(&initial, inputs, rng: &rng)
        return initial
    }

    public func logits(users: [Int32], items: [Int32], _ p: [String: Variable], tape: Tape, dropout rng: inout SeededGenerator?) -> Variable {
        let e = inputs!.embedded(users: users, items: items, p, tape: tape)
        let wide = FirstOrderTerm.logits(inputs!, users: users, items: items, p, tape: tape)
        let attended = attention(e, p, tape: tape, dropout: &rng)
        return tape.add(tape.add(wide, attended), deep.logits(e, p, tape: tape, dropout: &rng))
    }

    /// w_t · vec(ReLU(T_L [+ residual])) + b_t for the rows' field embeddings (each B × d): each
    /// row's F fields are one sequence of the attention.
    func attention(_ e: [Variable], _ p: [String: Variable], tape: Tape, dropout rng: inout SeededGenerator?) -> Variable {
        let rows = e[0].value.rows, fields = e.count
        let x = tape.reshaped(tape.concatColumns(e), rows: rows * fields, columns: deep.embeddingSize)
        // Each map into a layer's in-projection (the field embedding's, each earlier layer's out-projection) feeds only
        // that projection, so it is folded into it: (x W + b) W' + b' = x (W W') + (b W' + b'), one product of the rows fewer.
        var t = x, pending = (weight: p["att_embedding.weight"]!, bias: p["att_embedding.bias"]!)
        let lengths = [Int](repeating: fields, count: rows)
        for l in 0..<layers {
            let names = ["query", "key", "value"].map { "attention.\(l).\($0)" }
            let packed = tape.concatColumns(names.map { p["\($0).weight"]! })   // Q, K and V from one 3A-wide product (torch's in-projection)
            let bias = tape.add(tape.matmul(pending.bias, packed), tape.concatColumns(names.map { p["\($0).bias"]! }))
            var keep: Matrix?
            if var draws = rng, attentionDropout > 0 {
                keep = MLP.dropoutMask(rows: rows * heads * fields * fields, columns: 1, rate: attentionDropout, rng: &draws, compute: tape.compute)
                rng = draws
            }
            t = tape.selfAttention(qkv: tape.linear(t, tape.matmul(pending.weight, packed), bias), heads: heads, lengths: lengths, causal: false,
                                   keep: keep)
            pending = (p["attention.\(l).output.weight"]!, p["attention.\(l).output.bias"]!)
        }
        t = tape.linear(t, pending.weight, pending.bias)
        if residual { t = tape.add(t, tape.linear(x, p["residual.weight"]!, p["residual.bias"]!)) }
        let flat = tape.reshaped(tape.relu(t), rows: rows, columns: fields * width)
        return tape.linear(flat, p["attn_fc.weight"]!, p["attn_fc.bias"]!)
    }
}

extension AutoInt {
    /// The first-order towers and the MLP's item half once per evaluation pass; per user, the
    /// attention over tiles of items.
    public func preparedForScoring(compute: Compute) -> any Scorer {
        let wide = FirstOrderTerm.preparedScores(inputs!, parameters: parameters, compute: compute)
        let deepScores = deep.preparedScores(inputs!, parameters: parameters, compute: compute)
        let pairs = PairTileScores(inputs!, table: parameters["embedding"], tileItems: Self.tileItems, compute: compute) { [self] e, tape in
            var none: SeededGenerator? = nil
            return attention(e, tape.leaves(parameters) { _ in false }, tape: tape, dropout: &none)
        }
        return PreparedScores { users, block, compute in
            wide.scores(for: users, into: &block, compute: compute)
            deepScores(users, &block, compute)
            pairs.addScores(for: users, into: &block, compute: compute)
        }
    }
}
