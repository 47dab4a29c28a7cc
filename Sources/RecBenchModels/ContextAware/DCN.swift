import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// DCN (Wang et al. 2017, "Deep & Cross Network for Ad Click Predictions"), as RecBole 1.2.1's
/// `DCN` trains it: a cross network and a ReLU MLP with BN over the field embeddings, joined by
/// one linear layer.
///
///     x_0 = [e_1 | … | e_F],  x_{l+1} = x_0 (x_l · w_l) + b_l + x_l       (l < `cross_layer_num`)
///     z(u, i) = w_p · [x_L | MLP_ReLU,BN(dropout(x_0))] + b_p
///     loss = BCE(σ(z), label) + λ Σ_l ‖w_l‖                               (`reg_weight`, unsquared)
///
/// w_l ~ N(0, 1) and b_l = 0 (RecBole's `randn` and `zeros`, which its Xavier init leaves alone).
/// Full ranking: x_l = c_l x_0 + Σ_{k<l} b_k with scalars c_0 = 1, c_{l+1} = c_l (1 + x_0 · w_l) +
/// (Σ_{k<l} b_k) · w_l, and x_0 · w = (user part) + (item part); so the cross network is L
/// multiply-adds per pair over per-user and per-item scalars, and the MLP splits its first layer.
public struct DCN: ContextModel, ScoresWhenPrepared {
    public static let name = "DCN"
    public static let summary = "Deep & Cross Network: explicit feature crosses beside an MLP with batch norm (Wang et al. 2017)"
    public static let kind = ModelKind.factorisation
    public static let family = ModelFamily.contextAware
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(10),
        SharedKeys.mlpHiddenSize([256, 256, 256]),
        ConfigKey("cross_layer_num", "int", .int(6), "DCN: layers of the cross network (at least 1).")
            .searched(.choice([.int(2), .int(4), .int(6)])),
        SharedKeys.regWeight(2),
        SharedKeys.dropoutProb(0.2),
    ]
    public static let testSettings: [[String: ConfigValue]] = [
        ["embedding_size": .int(3), "mlp_hidden_size": .list([.int(4), .int(3)]), "cross_layer_num": .int(3), "dropout_prob": .double(0.2)],
    ]

    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var inputs: ContextInputs?
    public var sampler: PointwiseSampler?
    let deep: FieldMLP, crossLayers: Int, regWeight: Float

    public init(parameters: ModelParameters) throws {
        deep = try FieldMLP(parameters, activation: .relu, batchNorm: true)
        // RecBole 1.2.1 builds a DCN without cross layers and then fails in its loss (2 × None).
        crossLayers = try parameters.int("cross_layer_num", in: 1...64)
        regWeight = Float(try parameters.double("reg_weight", in: 0...1e6))
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        let inputs = prepareInputs(data, context: context), n = inputs.fieldCount * deep.embeddingSize
        var initial = Parameters()
        initial.add("embedding", inputs.table(width: deep.embeddingSize, columns: deep.embeddingSize, rng: &rng))
        for l in 0..<crossLayers {
            initial.add("cross.\(l).weight", Initializer.normal(rows: n, columns: 1, std: 1, rng: &rng))
            initial.add("cross.\(l).bias", Matrix(rows: 1, columns: n))
        }
        deep.initialize(&initial, fields: inputs.fieldCount, output: false, rng: &rng)
        let width = n + deep.hidden.last!
        initial.add("predict.weight", Initializer.xavierNormal(fanIn: width, fanOut: 1, rng: &rng))
        initial.add("predict.bias", Matrix(rows: 1, columns: 1))
        return initial
    }

    public func logits(users: [Int32], items: [Int32], _ p: [String: Variable], tape: Tape, dropout rng: inout SeededGenerator?) -> Variable {
        let e = inputs!.embedded(users: users, items: items, p, tape: tape)
        let x0 = tape.concatColumns(e), zeros = [Int32](repeating: 0, count: users.count)
        var x = x0
        for l in 0..<crossLayers {
            let s = tape.matmul(x, p["cross.\(l).weight"]!)
            x = tape.add(tape.add(tape.scaleRows(x0, by: s), tape.gather(p["cross.\(l).bias"]!, rows: zeros)), x)
        }
        let h = deep.hiddenOutput(e, p, tape: tape, dropout: &rng)
        return tape.linear(tape.concatColumns([x, h]), p["predict.weight"]!, p["predict.bias"]!)
    }

    /// λ Σ_l ‖w_l‖ over the cross weights.
    public func penalty(_ p: [String: Variable], tape: Tape) -> Variable? {
        normPenalty((0..<crossLayers).map { "cross.\($0).weight" }, weight: regWeight, p, tape: tape)
    }
}

extension DCN {
    /// Per training row the cross network's products (x_l · w_l) and the MLP, forward and two
    /// pullback products; validation: users × items × the MLP after its split first layer (the
    /// cross recurrence per pair is scalar work, not counted).
    public func cost(_ s: WorkShape) -> ModelCost? {
        let width = (inputs?.fieldCount ?? 2) * deep.embeddingSize
        return deep.cost(rows: s.pointwiseRows, pairs: Double(s.users) * Double(s.items), width: width, extraPerRow: Double(crossLayers * width))
    }

    /// Per side, x_0's part of each w_l and of the output's cross rows; then per user the
    /// cross recurrence over every item at once, and the MLP over item tiles.
    public func preparedForScoring(compute: Compute) -> any Scorer {
        let inputs = inputs!, n = inputs.fieldCount * deep.embeddingSize, predict = parameters["predict.weight"]
        let folded = deep.folded(parameters)
        let mlp = deep.splitMLP(folded: folded, output: (predict.rows(n..<predict.rows), parameters["predict.bias"]))
        let entities = Array(0..<Int32(inputs.itemCount))[...]
        let itemHalf = deep.half(inputs, inputs.itemFields, entities: entities, parameters: folded, compute: compute)
        let items = crossScalars(inputs.itemFields, entities: entities, compute: compute)
        let constants = crossConstants()
        return PreparedScores { [self] users, block, compute in
            for i in 0..<block.values.count { block.values[i] = 0 }
            precondition(block.columns == inputs.itemCount, "DCN: block has \(block.columns) columns for \(inputs.itemCount) items")
            let user = crossScalars(inputs.userFields, entities: users, compute: compute), itemCount = block.columns
            let userHalf = deep.half(inputs, inputs.userFields, entities: users, parameters: folded, compute: compute)
            mlp.addScores(userHalf: userHalf, itemHalf: itemHalf, into: &block, compute: compute)
            block.updateRows(compute: compute, chunkSize: 16) { row, out in
                var c = [Float](repeating: 1, count: itemCount)
                for l in 0..<crossLayers {
                    let a = user[row, l], k = constants[l]
                    for i in 0..<itemCount { c[i] = c[i] * (1 + a + items[i, l]) + k }
                }
                let a = user[row, crossLayers], k = constants[crossLayers]
                for i in 0..<itemCount { out[i] += c[i] * (a + items[i, crossLayers]) + k }
            }
        }
    }

    /// Per entity, its side's part of x_0 · w_l for each layer, and of x_0 · w_p's cross rows
    /// (entities × (L + 1)).
    func crossScalars(_ fields: [Int], entities: ArraySlice<Int32>, compute: Compute) -> Matrix {
        let d = deep.embeddingSize, predict = parameters["predict.weight"]
        var out = Matrix(rows: entities.count, columns: crossLayers + 1)
        for f in fields {
            let e = inputs!.pooled(f, entities: entities, table: parameters["embedding"], compute: compute)
            var weights = Matrix(rows: d, columns: crossLayers + 1)
            for l in 0...crossLayers {
                let w = l < crossLayers ? parameters["cross.\(l).weight"] : predict
                for k in 0..<d { weights[k, l] = w.values[f * d + k] }
            }
            BLAS.gemm(e, weights, alpha: 1, beta: 1, into: &out, compute: compute)
        }
        return out
    }

    /// (Σ_{k<l} b_k) · w_l for each layer l, then (Σ_k b_k) · w_p's cross rows: the
    /// pair-independent terms of the recurrence and of the output.
    func crossConstants() -> [Float] {
        let n = inputs!.fieldCount * deep.embeddingSize, predict = parameters["predict.weight"]
        var biases = [Float](repeating: 0, count: n), out: [Float] = []
        for l in 0...crossLayers {
            let w = l < crossLayers ? parameters["cross.\(l).weight"] : predict
            out.append((0..<n).reduce(Float(0)) { $0 + biases[$1] * w.values[$1] })
            if l < crossLayers { for j in 0..<n { biases[j] += parameters["cross.\(l).bias"].values[j] } }
        }
        return out
    }
}
