import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// xDeepFM (Lian et al. 2018, "Combining Explicit and Implicit Feature Interactions"), as
/// RecBole 1.2.1's `xDeepFM` trains it: the first-order term, a compressed interaction network
/// (CIN) and a ReLU MLP whose one-unit output is ReLU'd too, summed.
///
///     X_0 = [e_1; …; e_F] (F × d),  Z_{l+1}[s, k] = ReLU(b_s + Σ_{h,m} W_l[s, h·F + m] X_l[h, k] X_0[m, k])
///     X_{l+1} = first half of Z_{l+1}; its second half (all of it for the last layer, or
///     every layer with `direct`) is pooled: p = Σ_k [halves …]
///     z(u, i) = b + Σ_f w_f + w_c · p + b_c + ReLU(MLP_ReLU(dropout(X_0)))
///     loss = BCE(σ(z), label) + λ (Σ ‖MLP W‖ + Σ ‖first-order tables‖ + Σ ‖W_l‖)   (unsquared)
///
/// Full ranking: the first-order term is a two-tower GEMM and the MLP splits its first layer;
/// the CIN's every layer mixes user and item fields per embedding dimension, so it runs per
/// user over tiles of items as GEMMs (rows = dimension × item, outer products as columns).
public struct xDeepFM: ContextModel, ScoresWhenPrepared {
    public static let name = "xDeepFM"
    public static let summary = "The first-order term, a compressed interaction network and an MLP, summed (Lian et al. 2018)"
    public static let kind = ModelKind.factorisation
    public static let family = ModelFamily.contextAware
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(10),
        SharedKeys.mlpHiddenSize([128, 128, 128]),
        SharedKeys.regWeight(5e-4),
        SharedKeys.dropoutProb(0.2),
        ConfigKey("direct", "bool", .bool(false), "xDeepFM: every CIN layer's whole output goes to the output (false: half feeds the next layer)."),
        ConfigKey("cin_layer_size", "int list", .list([.int(100), .int(100), .int(100)]),
                  "xDeepFM: feature maps per CIN layer (even sizes unless `direct`)."),
    ]
    public static let testSettings: [[String: ConfigValue]] = [
        ["embedding_size": .int(3), "mlp_hidden_size": .list([.int(4)]), "cin_layer_size": .list([.int(4), .int(2)]), "reg_weight": .double(0.01)],
        ["embedding_size": .int(2), "mlp_hidden_size": .list([.int(3)]), "cin_layer_size": .list([.int(3), .int(2)]), "direct": .bool(true)],
    ]
    /// Items per CIN tile: d × 256 rows of outer products (250 columns at the defaults) stay
    /// a few MB.
    static let tileItems = 256

    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var inputs: ContextInputs?
    public var sampler: PointwiseSampler?
    let deep: FieldMLP, sizes: [Int], direct: Bool, regWeight: Float

    public init(parameters: ModelParameters) throws {
        let hidden = try parameters.intList("mlp_hidden_size", in: 1...65536)
        // RecBole 1.2.1 accepts an empty list (one linear layer, ReLU'd); recbench's split scorer needs a hidden layer.
        guard !hidden.isEmpty else { throw parameters.invalid("mlp_hidden_size", "needs at least one layer") }
        deep = FieldMLP(embeddingSize: try parameters.int("embedding_size", in: 1...1024), hidden: hidden + [1],
                        dropout: Float(try parameters.double("dropout_prob", in: 0...0.99)), activation: .relu, scoresFromLastHidden: true)
        direct = try parameters.bool("direct")
        sizes = try parameters.intList("cin_layer_size", in: 1...4096)
        guard !sizes.isEmpty else { throw parameters.invalid("cin_layer_size", "needs at least one layer") }
        if !direct, let odd = sizes.first(where: { $0 % 2 == 1 }) {
            // RecBole 1.2.1 rounds every size down to even (with a warning only for the non-last ones).
            throw parameters.invalid("cin_layer_size", "\(odd) is odd: with direct false each layer's output is split in half, so sizes must be even")
        }
        regWeight = Float(try parameters.double("reg_weight", in: 0...1e6))
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        let inputs = prepareInputs(data, context: context), f = inputs.fieldCount
        var initial = Parameters()
        initial.add("embedding", inputs.table(width: deep.embeddingSize, columns: deep.embeddingSize, rng: &rng))
        // No output layer: the one-unit last hidden layer, ReLU'd, is the deep part's score.
        deep.initialize(&initial, fields: f, output: false, rng: &rng)
        var channels = f
        for (l, size) in sizes.enumerated() {
            initial.add("cin.\(l).weight", Initializer.xavierNormal(fanIn: channels * f, fanOut: size, rng: &rng))
            // torch's Conv1d bias (RecBole's init leaves it): U(±1/√fan-in).
            initial.add("cin.\(l).bias", Initializer.torchLinear(fanIn: channels * f, rows: 1, columns: size, rng: &rng))
            channels = direct ? size : size / 2
        }
        let pooled = direct ? sizes.reduce(0, +) : sizes.dropLast().reduce(0, +) / 2 + sizes.last!
        initial.add("cin_linear.weight", Initializer.xavierNormal(fanIn: pooled, fanOut: 1, rng: &rng))
        initial.add("cin_linear.bias", Matrix(rows: 1, columns: 1))
        FirstOrderTerm.initialize(&initial, inputs, rng: &rng)
        return initial
    }

    public func logits(users: [Int32], items: [Int32], _ p: [String: Variable], tape: Tape, dropout rng: inout SeededGenerator?) -> Variable {
        let e = inputs!.embedded(users: users, items: items, p, tape: tape)
        let wide = FirstOrderTerm.logits(inputs!, users: users, items: items, p, tape: tape)
        return tape.add(tape.add(wide, cin(e, p, tape: tape)), deep.hiddenOutput(e, p, tape: tape, dropout: &rng))
    }

    /// w_c · p + b_c for the rows' field embeddings (each B × d). Rows of X_l are (dimension k,
    /// row b), k-major, so a layer is one op (row-wise outer products times W, built in cache),
    /// and p is the sum over the d blocks of rows.
    func cin(_ e: [Variable], _ p: [String: Variable], tape: Tape) -> Variable {
        let rows = e[0].value.rows, d = deep.embeddingSize
        let x0 = tape.concatColumns(e.map { tape.reshaped(tape.transpose($0), rows: d * rows, columns: 1) })
        var x = x0, pooled: [Variable] = []
        for (l, size) in sizes.enumerated() {
            let z = tape.compressedInteraction(x, x0, weight: p["cin.\(l).weight"]!, bias: p["cin.\(l).bias"]!)
            if direct || l == sizes.count - 1 {
                x = z
                pooled.append(z)
            } else {
                x = tape.columns(z, 0..<size / 2)
                pooled.append(tape.columns(z, size / 2..<size))
            }
        }
        let sums = tape.sumSteps(pooled.count == 1 ? pooled[0] : tape.concatColumns(pooled), steps: d)
        return tape.linear(sums, p["cin_linear.weight"]!, p["cin_linear.bias"]!)
    }

    /// λ Σ ‖W‖ over the MLP's weights, each of RecBole's first-order tables and the CIN's weights.
    public func penalty(_ p: [String: Variable], tape: Tape) -> Variable? {
        let weights = ((0..<deep.hidden.count).map { "deep.\($0).weight" } + sizes.indices.map { "cin.\($0).weight" }).map { p[$0]! }
        let tables = inputs!.tableRows.map { tape.gather(p["first_order"]!, rows: $0) }
        return normPenalty(weights + tables, weight: regWeight, tape: tape)
    }
}

extension xDeepFM {
    /// The first-order towers and the MLP's item half once per evaluation pass; per user, the
    /// CIN over tiles of items.
    public func preparedForScoring(compute: Compute) -> any Scorer {
        let wide = FirstOrderTerm.preparedScores(inputs!, parameters: parameters, compute: compute)
        let deepScores = deep.preparedScores(inputs!, parameters: parameters, compute: compute)
        let pairs = PairTileScores(inputs!, table: parameters["embedding"], tileItems: Self.tileItems, compute: compute) { [self] e, tape in
            cin(e, tape.leaves(parameters) { _ in false }, tape: tape)
        }
        return PreparedScores { users, block, compute in
            wide.scores(for: users, into: &block, compute: compute)
            deepScores(users, &block, compute)
            pairs.addScores(for: users, into: &block, compute: compute)
        }
    }
}
