import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// DGCF (Wang et al. 2020, "Disentangled Graph Collaborative Filtering"), as RecBole 1.2.1
/// builds it: each embedding split into K intent factors, each factor propagated over its own
/// weighting of the user-item graph, the weights refined by routing.
///
///     every forward: A = 1 (edges × K), both directions of every train pair
///     per layer, T iterations, from the layer's input E (factor k: columns of E_k):
///       S = softmax_k(A);  d_k(n) = Σ_{e from n} S_ek;  w_ek = S_ek / √(d_k(head) d_k(tail))
///       F_k(h) = Σ_{e: h → t} w_ek E_k(t)
///       A += ⟨normalise(F_k(head)), tanh(normalise(E_k(tail)))⟩     (not after the last layer's last iteration: unused)
///     layer output [F_1 | … | F_K];  e = mean of E_0 and the layer outputs
///     loss = BPR(e) + λ (‖E_0[u]‖ + ‖E_0[i]‖ + ‖E_0[j]‖) / batch
///            + γ Σ_{k<K} dCor(e_k, e_{k+1}) / ((K+1)K/2)       over C sampled users and C sampled items
///     score(u, ·) = e_u · e_itemsᵀ
///
/// C = ⌊max(users, items) / (train rows ÷ batch + 1)⌋ (RecBole's, without its padding ids), at most
/// min(users, items) (RecBole raises there). A pair repeated in train is one edge (RecBole: parallel edges).
/// Embeddings Xavier-normal; gradients flow through the routing, as in RecBole.
public struct DGCF: PairwiseModel, ScoresWhenPrepared {
    public static let name = "DGCF"
    public static let summary = "Disentangled graph CF: intent factors each propagated over a routed weighting of the user-item graph (Wang et al. 2020)"
    public static let kind = ModelKind.graph
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(64),
        ConfigKey("n_factors", "int", .int(4), "DGCF: intent factors K (embedding_size must be a multiple)."),
        ConfigKey("n_iterations", "int", .int(2), "DGCF: routing iterations per layer."),
        SharedKeys.layerCount(1),
        SharedKeys.regWeight(1e-3),
        ConfigKey("cor_weight", "float", .double(0.01), "DGCF: weight γ of the distance-correlation term between adjacent factors.")
            .searched(.loguniform(low: -9.210340371976184, high: -2.302585092994046)),   // 1e-4 … 0.1
    ]
    public static let testSettings: [[String: ConfigValue]] = [
        ["embedding_size": .int(4), "n_factors": .int(2), "reg_weight": .double(0.1), "cor_weight": .double(0.5)],
        ["embedding_size": .int(6), "n_factors": .int(3), "n_iterations": .int(1), "n_layers": .int(2), "cor_weight": .double(0)],
    ]

    let width: Int, factors: Int, iterations: Int, layers: Int, regWeight: Float, corWeight: Float
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    var training = GraphTraining()
    var routing = IntentRouting()
    /// Users and items drawn per batch for the correlation term.
    var correlationSample = 0

    public init(parameters: ModelParameters) throws {
        width = try parameters.int("embedding_size", in: 1...4096)
        factors = try parameters.int("n_factors", in: 1...4096)
        guard width % factors == 0 else {
            throw parameters.invalid("n_factors", "is \(factors), which does not divide embedding_size \(width): "
                + "each factor takes embedding_size / n_factors columns")
        }
        iterations = try parameters.int("n_iterations", in: 1...100)
        layers = try parameters.int("n_layers", in: 1...16)
        regWeight = Float(try parameters.double("reg_weight", in: 0...1e6))
        corWeight = Float(try parameters.double("cor_weight", in: 0...1e6))
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        training = GraphTraining(data)
        context.pairwiseNegatives(model: Self.name)
        routing = IntentRouting(training.graph, factors: factors, width: width)
        let batches = training.exampleCount / context.training.batchSize + 1
        correlationSample = min(data.userCount, data.itemCount, max(data.userCount, data.itemCount) / batches)
        var initial = Parameters()
        for (name, rows) in [("user_embedding", data.userCount), ("item_embedding", data.itemCount)] {
            initial.add(name, Initializer.xavierNormal(fanIn: rows, fanOut: width, rng: &rng))
        }
        return initial
    }

    public func exampleCount(_ data: TrainingData) -> Int { training.exampleCount }

    /// The mean of E_0 (every node's embedding) and every layer's routed propagation.
    func propagated(_ e0: Variable, tape: Tape) -> Variable {
        var e = e0, sum = e0
        var a = tape.constant(Matrix(rows: routing.edgeCount, columns: factors, repeating: 1))
        for l in 0..<layers {
            // The last layer's last agreement would feed no later weighting: not computed.
            let routed = l < layers - 1 ? iterations : iterations - 1
            let tails = routed > 0 ? routing.normalisedTails(e, tape: tape) : nil
            var out = e
            for t in 0..<iterations {
                out = routing.propagate(e, weights: routing.weights(a, tape: tape), tape: tape)
                if t < routed { a = tape.add(a, routing.agreement(out, tails!, tape: tape)) }
            }
            e = out
            sum = tape.add(sum, e)
        }
        return tape.affine(sum, scale: 1 / Float(layers + 1))
    }

    public func loss(_ batch: TrainingBatch, _ p: [String: Variable], tape: Tape, rng: inout SeededGenerator) -> Variable {
        let t = training.triples(batch, rng: &rng)
        let e0 = training.graph.nodes(p, tape: tape), all = propagated(e0, tape: tape)
        var loss = tape.add(training.bpr(all, t, tape: tape), training.penalty(e0, t, weight: regWeight, tape: tape))
        if factors > 1 && corWeight > 1e-9 && correlationSample > 1 {
            let users = Sampling.distinct(correlationSample, below: training.graph.users, rng: &rng)
            let items = training.graph.itemNodes(Sampling.distinct(correlationSample, below: training.graph.items, rng: &rng))
            let sample = tape.gather(all, rows: users + items), k = width / factors
            let parts = (0..<factors).map { tape.columns(sample, $0 * k..<($0 + 1) * k) }
            let total = (1..<(factors - 1)).reduce(tape.distanceCorrelation(parts[0], parts[1])) { sum, j in
                tape.add(sum, tape.distanceCorrelation(parts[j], parts[j + 1]))
            }
            loss = tape.add(loss, tape.affine(total, scale: corWeight / Float((factors + 1) * factors / 2)))
        }
        return loss
    }

    /// Per batch: T·L routed propagations over the 2R edges (the propagation and the agreement's
    /// edge dots, each ~2 multiply-adds per edge and column), forward and backward;
    /// validation: users × items × width.
    public func cost(_ s: WorkShape) -> ModelCost? {
        let perBatch = Double(iterations * layers) * 2 * Double(s.trainPairs) * Double(width) * 4 * 2 * 3
        let batches = s.pairwiseBatches
        let flops = batches * perBatch + 2 * Double(s.users) * Double(s.items) * Double(width)
        return ModelCost(nominal: flops, executed: flops, scoringInner: width)
    }

    /// The propagated table (routing from A = 1, as each RecBole forward), once per evaluation pass.
    public func preparedForScoring(compute: Compute) -> any Scorer {
        let tape = Tape(compute: compute)
        return training.graph.factorScores(propagated(training.graph.nodes(tape.leaves(parameters) { _ in false }, tape: tape), tape: tape).value)
    }
}

/// DGCF's per-factor graph weighting over the directed edges of a `UserItemGraph`.
struct IntentRouting: Sendable {
    let edges: EdgeIndex, factors: Int, width: Int
    /// nodes × edges, 1 where the edge leaves the node (sums over a node's edges), and its transpose.
    let outgoing: SparseMatrix, outgoingT: SparseMatrix

    init() {
        edges = EdgeIndex(nodes: 0, heads: [], tails: []); factors = 1; width = 1
        outgoing = SparseMatrix(rows: 0, columns: 0); outgoingT = outgoing
    }

    init(_ graph: UserItemGraph, factors: Int, width: Int) {
        edges = EdgeIndex(nodes: graph.nodeCount, heads: graph.heads, tails: graph.tails); self.factors = factors; self.width = width
        outgoing = SparseMatrix(rows: graph.nodeCount, columns: edges.count, rowIndices: graph.heads,
                                columnIndices: (0..<Int32(edges.count)).map { $0 })
        outgoingT = outgoing.transposed()
    }

    var edgeCount: Int { edges.count }

    /// w_ek = S_ek / √(d_k(head) d_k(tail)), S = softmax over the factors of A, d_k(n) = Σ_{e from n} S_ek (clamped at 1e−8).
    func weights(_ a: Variable, tape: Tape) -> Variable {
        let s = tape.exp(tape.logSoftmaxRows(a))
        let inverse = tape.reciprocalSqrt(tape.matmul(outgoing, s, transposed: outgoingT), floor: 1e-8)
        return tape.mul(tape.mul(s, tape.gather(inverse, rows: edges.heads)), tape.gather(inverse, rows: edges.tails))
    }

    /// F(h)_k = Σ_{e: h → t} w_ek E_k(t), each factor over its own weights.
    func propagate(_ e: Variable, weights w: Variable, tape: Tape) -> Variable {
        tape.factorPropagation(e, weights: w, over: edges)
    }

    /// tanh(normalise(E_k)) per factor, for the tails of the routing's agreement.
    func normalisedTails(_ e: Variable, tape: Tape) -> Variable {
        tape.tanh(factorNormalised(e, tape: tape))
    }

    /// ⟨normalise(F_k(head)), tanh(normalise(E_k(tail)))⟩ per edge and factor.
    func agreement(_ f: Variable, _ tails: Variable, tape: Tape) -> Variable {
        tape.edgeFactorDots(factorNormalised(f, tape: tape), tails, over: edges, factors: factors)
    }

    /// Each factor's columns of each row scaled to unit length.
    func factorNormalised(_ x: Variable, tape: Tape) -> Variable {
        let rows = x.value.rows
        return tape.reshaped(tape.normalizeRows(tape.reshaped(x, rows: rows * factors, columns: width / factors)), rows: rows, columns: width)
    }
}
