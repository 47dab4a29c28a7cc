import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// GC-MC (van den Berg et al. 2017, "Graph Convolutional Matrix Completion"), as RecBole
/// 1.2.1 builds it for implicit feedback: one-hot node inputs (so the first layer is a
/// node table W), one normalised graph (no per-rating graphs), a bilinear decoder with basis
/// matrices, two classes (a positive, a sampled negative).
///
///     H = Â · drop_nodes(W)                     (Â = D^{−½} A D^{−½}; each node's row of W dropped with p `dropout_prob`)
///     z = dropout(ReLU(H)) · W_d                 (W_d: `gcn_output_dim` × `embedding_size`, no bias, shared by users and items)
///     s_b(u, i) = z_u Q_b z_iᵀ,  b < `num_basis_functions`
///     logits(u, i) = [s_0 … s_B] · C             (C: B × `class_num`)
///     loss = cross-entropy of (u, i) as class 1 and (u, j) as class 0, j a drawn negative (`sample_num` per pair; mean)
///     score(u, ·) = the class-1 logit = z_u (Σ_b C_b1 Q_b) Z_itemsᵀ
///
/// Init as RecBole's: W ~ U(±√(2/(nodes + gcn_output_dim))), W_d ~ U(±√(2/(embedding_size +
/// gcn_output_dim))), Q_b = 1.1 × a random orthogonal matrix, C ~ U(±√(2/(B + classes))).
public struct GCMC: PairwiseModel, ScoresWhenPrepared {
    public static let name = "GCMC"
    public static let summary = "Graph auto-encoder: one graph convolution over node identities, a bilinear decoder (van den Berg et al. 2017)"
    public static let kind = ModelKind.factorisation
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(64),
        ConfigKey("gcn_output_dim", "int", .int(500), "GCMC: width of the graph convolution's output."),
        SharedKeys.dropoutProb(0.3),
        ConfigKey("num_basis_functions", "int", .int(2), "GCMC: basis matrices of the bilinear decoder."),
        ConfigKey("class_num", "int", .int(2), "GCMC: classes of the decoder; implicit feedback has two (RecBole's meaning: sampled negative, positive)."),
        ConfigKey("accum", "stack or sum", .string("stack"),
                  "GCMC: how per-rating supports are joined (with the one graph of implicit feedback both are the same)."),
        ConfigKey("sparse_feature", "bool", .bool(true), "GCMC: one-hot node inputs as sparse features (RecBole's key; the same model either way)."),
    ]
    public static let testSettings: [[String: ConfigValue]] = [["embedding_size": .int(4), "gcn_output_dim": .int(6), "dropout_prob": .double(0)]]

    let width: Int, hidden: Int, dropout: Float, bases: Int
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    var training = GraphTraining()

    public init(parameters: ModelParameters) throws {
        width = try parameters.int("embedding_size", in: 1...4096)
        hidden = try parameters.int("gcn_output_dim", in: 1...65536)
        dropout = Float(try parameters.double("dropout_prob", in: 0...0.99))
        bases = try parameters.int("num_basis_functions", in: 1...64)
        guard try parameters.int("class_num", in: 1...100) == 2 else {
            throw parameters.invalid("class_num", "implicit feedback has two classes (a sampled negative and a positive), as RecBole trains GCMC on it; use 2")
        }
        _ = try parameters.choice("accum", of: ["stack", "sum"])
        _ = try parameters.bool("sparse_feature")
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        training = GraphTraining(data)
        context.pairwiseNegatives(model: Self.name)
        let nodes = training.graph.nodeCount
        var initial = Parameters()
        initial.add("node_weight", Initializer.uniform(rows: nodes, columns: hidden, bound: (2 / Float(nodes + hidden)).squareRoot(), rng: &rng))
        initial.add("dense", Initializer.uniform(rows: hidden, columns: width, bound: (2 / Float(width + hidden)).squareRoot(), rng: &rng))
        for b in 0..<bases { initial.add("basis.\(b)", GCMC.orthogonal(width, scale: 1.1, rng: &rng)) }
        initial.add("combine", Initializer.uniform(rows: bases, columns: 2, bound: (2 / Float(bases + 2)).squareRoot(), rng: &rng))
        return initial
    }

    /// `scale` × a random orthogonal n × n matrix (Gram–Schmidt on a Gaussian one, in Double).
    static func orthogonal(_ n: Int, scale: Float, rng: inout SeededGenerator) -> Matrix {
        let gaussian = Initializer.normal(rows: n, columns: n, std: 1, rng: &rng)
        var rows = (0..<n).map { r in (0..<n).map { Double(gaussian.values[r * n + $0]) } }
        for r in 0..<n {
            for q in 0..<r {
                let dot = zip(rows[r], rows[q]).reduce(0) { $0 + $1.0 * $1.1 }
                for c in 0..<n { rows[r][c] -= dot * rows[q][c] }
            }
            let norm = rows[r].reduce(0) { $0 + $1 * $1 }.squareRoot()
            for c in 0..<n { rows[r][c] /= max(norm, 1e-12) }
        }
        return Matrix(rows: n, columns: n, values: rows.flatMap { $0.map { Float($0) * scale } })
    }

    public func exampleCount(_ data: TrainingData) -> Int { training.exampleCount }

    /// z for every node (users first); `rng` (training) draws the node and hidden dropouts.
    func encoded(_ p: [String: Variable], tape: Tape, rng: inout SeededGenerator?) -> Variable {
        let graph = training.graph.symmetric
        var w = p["node_weight"]!
        if var draws = rng, dropout > 0 {
            // Node dropout on one-hot inputs: a node's whole row of W, survivors scaled by 1/(1 − p).
            let keep = (0..<w.value.rows).map { _ in draws.nextUnitFloat() < dropout ? Float(0) : 1 / (1 - dropout) }
            w = tape.scaleRows(w, by: keep)
            rng = draws
        }
        var h = tape.relu(tape.matmul(graph, w, transposed: graph))
        if var draws = rng, dropout > 0 {
            h = Dropout.apply(h, rate: dropout, tape: tape, rng: &draws)
            rng = draws
        }
        return tape.matmul(h, p["dense"]!)
    }

    /// The class-1 logit minus the class-0 logit for each listed (user, item node) pair.
    func margin(_ z: Variable, users: [Int32], items: [Int32], _ p: [String: Variable], tape: Tape) -> Variable {
        let s = tape.concatColumns((0..<bases).map { b in tape.rowDot(tape.matmul(z, p["basis.\(b)"]!), rows: users, z, rows: items) })
        let difference = tape.constant(Matrix(rows: 2, columns: 1, values: [-1, 1]))
        return tape.matmul(tape.matmul(s, p["combine"]!), difference)
    }

    /// Two-class cross-entropy = BCE of the logit margin: positives class 1, negatives class 0.
    public func loss(_ batch: TrainingBatch, _ p: [String: Variable], tape: Tape, rng: inout SeededGenerator) -> Variable {
        let t = training.triples(batch, rng: &rng)
        var draws: SeededGenerator? = rng
        let z = encoded(p, tape: tape, rng: &draws)
        rng = draws!
        let margins = margin(z, users: t.users + t.users, items: t.positives + t.negatives, p, tape: tape)
        return tape.binaryCrossEntropy(logits: margins, labels: [Float](repeating: 1, count: t.users.count) + [Float](repeating: 0, count: t.users.count))
    }

    /// Per batch: the convolution (2 nnz × hidden) and dense layer (nodes × hidden × d), forward
    /// and backward; validation: users × items × d.
    public func cost(_ s: WorkShape) -> ModelCost? {
        let nodes = Double(s.users + s.items)
        let perBatch = (2 * 2 * Double(s.trainPairs) * Double(hidden) + 2 * nodes * Double(hidden * width)) * 3
        let batches = s.pairwiseBatches
        let flops = batches * perBatch + 2 * Double(s.users) * Double(s.items) * Double(width)
        return ModelCost(nominal: flops, executed: flops, scoringInner: width)
    }

    /// z_u (Σ_b C_b1 Q_b) and z_items, once per evaluation pass: the class-1 logit as one GEMM.
    public func preparedForScoring(compute: Compute) -> any Scorer {
        let tape = Tape(compute: compute)
        let p = tape.leaves(parameters) { _ in false }
        var none: SeededGenerator? = nil
        let z = encoded(p, tape: tape, rng: &none).value
        var m = Matrix(rows: width, columns: width)
        for b in 0..<bases {
            let c = parameters["combine"].values[b * 2 + 1], q = parameters["basis.\(b)"]
            for k in m.values.indices { m.values[k] += c * q.values[k] }
        }
        let scores = training.graph.factorScores(z)
        return FactorScores(users: BLAS.gemm(scores.users, m, compute: compute), items: scores.items)
    }
}
