import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// LightGCN (He et al. 2020, "LightGCN: Simplifying and Powering Graph Convolution Network
/// for Recommendation"), as RecBole 1.2.1 trains it.
///
///     Â = D^{−½} A D^{−½},  A = [[0, R], [Rᵀ, 0]] over users ∪ items  (R: binary train pairs)
///     E_{k+1} = Â E_k,  E = (E_0 + … + E_K) / (K + 1)                (`n_layers` = K)
///     for each train (u, i) and one uniform negative j:
///         loss = −mean log σ(⟨e_u, e_i⟩ − ⟨e_u, e_j⟩)
///                + λ · (‖E_0[u]‖ + ‖E_0[i]‖ + ‖E_0[j]‖) / batch     (norms of the batch's rows)
///     score(u, ·) = e_u · E_itemsᵀ
///
/// Every batch propagates the whole graph (sparse × dense products, forward and backward,
/// Â being its own transpose), as RecBole does.
public struct LightGCN: LearnedModel {
    public static let name = "LightGCN"
    public static let summary = "Graph convolution without transforms: embeddings averaged over propagations on the normalised user-item graph, BPR loss"
    public static let kind = ModelKind.factorisation
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(64),
        SharedKeys.layerCount(2),
        SharedKeys.regWeight(1e-5),
    ]
    public static let testSettings: [[String: ConfigValue]] = [["embedding_size": .int(3), "reg_weight": .double(0.1)]]

    let embeddingSize: Int, layers: Int, regWeight: Float
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    var graph = SparseMatrix(rows: 0, columns: 0)
    var history = PatternSet(SparseMatrix(rows: 0, columns: 0))
    var pairs: (users: [Int32], items: [Int32]) = ([], [])
    var userCount = 0

    public init(parameters: ModelParameters) throws {
        embeddingSize = try parameters.int("embedding_size", in: 1...4096)
        layers = try parameters.int("n_layers", in: 0...16)
        regWeight = Float(try parameters.double("reg_weight", in: 0...1e6))
    }

    /// Xavier-uniform embeddings (RecBole's init); the normalised graph; the train pairs.
    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        userCount = data.userCount
        graph = Self.normalisedAdjacency(data.trainMatrix.binarized())
        history = PatternSet(data.trainMatrix)
        let inter = data.dataset.interactions
        let rows = data.split.trainRowsInTimeOrder()
        pairs = (rows.map { inter.users[$0] }, rows.map { inter.items[$0] })
        var initial = Parameters()
        for (name, rows) in [("user_embedding", data.userCount), ("item_embedding", data.itemCount)] {
            initial.add(name, Initializer.uniform(rows: rows, columns: embeddingSize, bound: (6 / Float(rows + embeddingSize)).squareRoot(), rng: &rng))
        }
        return initial
    }

    /// D^{−½} A D^{−½} for A = [[0, R], [Rᵀ, 0]] (degrees + 1e−7, as RecBole).
    static func normalisedAdjacency(_ r: SparseMatrix) -> SparseMatrix {
        let users = r.rows, n = r.rows + r.columns
        var rows: [Int32] = [], columns: [Int32] = []
        for u in 0..<users {
            for e in r.entries(ofRow: u) {
                let i = Int32(users) + r.columnIndices[e]
                rows += [Int32(u), i]; columns += [i, Int32(u)]
            }
        }
        var degree = [Float](repeating: 0, count: n)
        for row in rows { degree[Int(row)] += 1 }
        let scale = degree.map { 1 / ($0 + 1e-7).squareRoot() }
        let values = zip(rows, columns).map { scale[Int($0)] * scale[Int($1)] }
        return SparseMatrix(rows: n, columns: n, rowIndices: rows, columnIndices: columns, values: values)
    }

    public func exampleCount(_ data: TrainingData) -> Int { pairs.users.count }

    /// The layer-averaged embeddings of every user and item (users first).
    func propagated(_ p: [String: Variable], tape: Tape) -> Variable {
        tape.propagationMean(graph, tape.concatRows(p["user_embedding"]!, p["item_embedding"]!), layers: layers, transposed: graph)
    }

    public func loss(_ batch: TrainingBatch, _ p: [String: Variable], tape: Tape, rng: inout SeededGenerator) -> Variable {
        let (users, positives, negatives) = Sampling.triples(batch.examples, pairs: pairs, negatives: 1, history: history, rng: &rng)
        let all = propagated(p, tape: tape), offset = Int32(userCount)
        let difference = tape.sub(tape.rowDot(all, rows: users, all, rows: positives.map { $0 + offset }),
                                  tape.rowDot(all, rows: users, all, rows: negatives.map { $0 + offset }))
        let bpr = tape.affine(tape.mean(tape.logSigmoid(difference)), scale: -1)
        let norms = tape.add(tape.add(tape.norm(p["user_embedding"]!, rows: users), tape.norm(p["item_embedding"]!, rows: positives)),
                             tape.norm(p["item_embedding"]!, rows: negatives))
        return tape.add(bpr, tape.affine(norms, scale: regWeight / Float(users.count)))
    }

    public func scores(for users: ArraySlice<Int32>, into block: inout Matrix, compute: Compute) {
        preparedForScoring(compute: compute).scores(for: users, into: &block, compute: compute)
    }

    /// The propagated embeddings, computed once for a whole evaluation pass.
    public func preparedForScoring(compute: Compute) -> any Scorer {
        let tape = Tape(compute: compute)
        let all = propagated(tape.leaves(parameters) { _ in false }, tape: tape).value
        let d = embeddingSize
        return FactorScores(users: Matrix(rows: userCount, columns: d, values: Array(all.values[..<(userCount * d)])),
                            items: Matrix(rows: all.rows - userCount, columns: d, values: Array(all.values[(userCount * d)...])))
    }
}
