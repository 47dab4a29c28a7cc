import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// NGCF (Wang et al. 2019, "Neural Graph Collaborative Filtering"), as RecBole 1.2.1
/// builds it.
///
///     Â = D^{−½} A D^{−½}                                     (the user-item graph; `node_dropout` drops its entries)
///     X = Â E_l
///     E_{l+1} = normalise_rows(dropout(LeakyReLU_0.2((E_l + X) W1_l + b1_l + (X ⊙ E_l) W2_l + b2_l)))
///                                                             (`hidden_size_list`; dropout `message_dropout`)
///     e = [E_0 | E_1 | … | E_L]
///     loss = −mean log σ(⟨e_u, e_i⟩ − ⟨e_u, e_j⟩) + λ (‖e[u]‖ + ‖e[i]‖ + ‖e[j]‖) / batch   (norms of the batch's rows)
///     score(u, ·) = e_u · e_itemsᵀ
///
/// Embeddings and weights Xavier-normal, biases 0 (RecBole's init).
public struct NGCF: PairwiseModel, ScoresWhenPrepared {
    public static let name = "NGCF"
    public static let summary = "Graph convolution with feature transforms and bi-interaction messages, layers concatenated (Wang et al. 2019)"
    public static let kind = ModelKind.factorisation
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(64),
        ConfigKey("hidden_size_list", "list of int", .list([.int(64), .int(64), .int(64)]), "NGCF: the widths of the propagation layers."),
        ConfigKey("node_dropout", "float", .double(0), "NGCF: probability of dropping each entry of the normalised graph, per batch while training."),
        ConfigKey("message_dropout", "float", .double(0.1), "NGCF: dropout on each layer's output before it is normalised, while training.")
            .searched(.uniform(low: 0, high: 0.5)),
        SharedKeys.regWeight(1e-5),
    ]
    public static let testSettings: [[String: ConfigValue]] = [
        ["embedding_size": .int(3), "hidden_size_list": .list([.int(4), .int(3)]), "message_dropout": .double(0), "reg_weight": .double(0.1)],
        ["embedding_size": .int(3), "hidden_size_list": .list([.int(3)]), "node_dropout": .double(0.2)],
    ]

    let widths: [Int], nodeDropout: Float, messageDropout: Float, regWeight: Float
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    var training = GraphTraining()

    public init(parameters: ModelParameters) throws {
        widths = [try parameters.int("embedding_size", in: 1...4096)] + (try parameters.intList("hidden_size_list", in: 1...4096))
        nodeDropout = Float(try parameters.double("node_dropout", in: 0...0.99))
        messageDropout = Float(try parameters.double("message_dropout", in: 0...0.99))
        regWeight = Float(try parameters.double("reg_weight", in: 0...1e6))
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        training = GraphTraining(data)
        context.pairwiseNegatives(model: Self.name)
        var initial = Parameters()
        for (name, rows) in [("user_embedding", data.userCount), ("item_embedding", data.itemCount)] {
            initial.add(name, Initializer.xavierNormal(fanIn: rows, fanOut: widths[0], rng: &rng))
        }
        for (l, (input, output)) in zip(widths, widths.dropFirst()).enumerated() {
            for w in ["w1", "w2"] {
                initial.add("layer.\(l).\(w)", Initializer.xavierNormal(fanIn: input, fanOut: output, rng: &rng))
                initial.add("layer.\(l).\(w).bias", Matrix(rows: 1, columns: output))
            }
        }
        return initial
    }

    public func exampleCount(_ data: TrainingData) -> Int { training.exampleCount }

    /// [E_0 | … | E_L] for every node; `rng` (training) draws the dropouts.
    func propagated(_ p: [String: Variable], tape: Tape, rng: inout SeededGenerator?) -> Variable {
        var a = (training.graph.symmetric, training.graph.symmetric)
        if var draws = rng, nodeDropout > 0 {
            a = droppedEntries(training.graph.symmetric, rate: nodeDropout, rng: &draws)
            rng = draws
        }
        var e = training.graph.nodes(p, tape: tape), all = [e]
        for l in 0..<(widths.count - 1) {
            let x = tape.matmul(a.0, e, transposed: a.1)
            let w = { (name: String) in (p["layer.\(l).\(name)"]!, p["layer.\(l).\(name).bias"]!) }
            let (w1, b1) = w("w1"), (w2, b2) = w("w2")
            var h = tape.leakyRelu(tape.add(tape.linear(tape.add(e, x), w1, b1), tape.linear(tape.mul(x, e), w2, b2)), slope: 0.2)
            if var draws = rng, messageDropout > 0 {
                h = Dropout.apply(h, rate: messageDropout, tape: tape, rng: &draws)
                rng = draws
            }
            e = tape.normalizeRows(h)
            all.append(e)
        }
        return all.count == 1 ? e : tape.concatColumns(all)
    }

    /// The graph with each stored entry dropped with probability `rate` and the rest scaled
    /// by 1/(1 − rate) (RecBole's `SparseDropout`), and its transpose.
    func droppedEntries(_ a: SparseMatrix, rate: Float, rng: inout SeededGenerator) -> (SparseMatrix, SparseMatrix) {
        var rows: [Int32] = [], columns: [Int32] = [], values: [Float] = []
        for r in 0..<a.rows {
            for e in a.entries(ofRow: r) where rng.nextUnitFloat() >= rate {
                rows.append(Int32(r)); columns.append(a.columnIndices[e]); values.append(a.values[e] / (1 - rate))
            }
        }
        let dropped = SparseMatrix(rows: a.rows, columns: a.columns, rowIndices: rows, columnIndices: columns, values: values)
        return (dropped, dropped.transposed())
    }

    public func loss(_ batch: TrainingBatch, _ p: [String: Variable], tape: Tape, rng: inout SeededGenerator) -> Variable {
        let t = training.triples(batch, rng: &rng)
        var draws: SeededGenerator? = rng
        let all = propagated(p, tape: tape, rng: &draws)
        rng = draws!
        return tape.add(training.bpr(all, t, tape: tape), training.penalty(all, t, weight: regWeight, tape: tape))
    }

    /// Per batch: each layer's propagation (nnz·d) and two transforms (nodes·d²), forward and
    /// backward; validation: users × items × the concatenated width.
    public func cost(_ s: WorkShape) -> ModelCost? {
        let nodes = Double(s.users + s.items)
        let perBatch = zip(widths, widths.dropFirst()).map { d, o in (2 * 2 * Double(s.trainPairs) * Double(d) + 2 * 2 * nodes * Double(d * o)) * 3 }
            .reduce(0, +)
        let batches = s.pairwiseBatches
        let total = widths.reduce(0, +)
        let flops = batches * perBatch + 2 * Double(s.users) * Double(s.items) * Double(total)
        return ModelCost(nominal: flops, executed: flops, scoringInner: total)
    }

    /// The propagated representations (no dropout), once per evaluation pass.
    public func preparedForScoring(compute: Compute) -> any Scorer {
        let tape = Tape(compute: compute)
        var none: SeededGenerator? = nil
        return training.graph.factorScores(propagated(tape.leaves(parameters) { _ in false }, tape: tape, rng: &none).value)
    }
}
