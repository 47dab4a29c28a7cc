import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// The user-item graph the graph models propagate over (LightGCN, NGCF, SpectralCF): nodes
/// are the users, then the items; A = [[0, R], [Rᵀ, 0]] for the binary train matrix R, no
/// self-loops (RecBole's builders). Built once per fit; each model takes the operator it
/// multiplies by.
public struct UserItemGraph: Sendable {
    public let users: Int, items: Int
    /// Both directions of every train pair: edge e runs from `heads[e]` to `tails[e]`.
    public let heads: [Int32], tails: [Int32]
    /// Edges per node.
    public let degrees: [Float]
    /// D^{−½} A D^{−½}, degrees + 1e−7 (RecBole's): symmetric, so its own transpose.
    public let symmetric: SparseMatrix

    /// The graph of `trainMatrix` (repeated pairs count once).
    public init(trainMatrix: SparseMatrix) {
        let r = trainMatrix.binarized()
        users = r.rows; items = r.columns
        var heads: [Int32] = [], tails: [Int32] = []
        heads.reserveCapacity(2 * r.nonzeroCount); tails.reserveCapacity(2 * r.nonzeroCount)
        for u in 0..<users {
            for e in r.entries(ofRow: u) {
                let i = Int32(users) + r.columnIndices[e]
                heads += [Int32(u), i]; tails += [i, Int32(u)]
            }
        }
        var degrees = [Float](repeating: 0, count: users + items)
        for h in heads { degrees[Int(h)] += 1 }
        let scale = degrees.map { 1 / ($0 + 1e-7).squareRoot() }
        symmetric = SparseMatrix(rows: users + items, columns: users + items, rowIndices: heads, columnIndices: tails,
                                 values: zip(heads, tails).map { scale[Int($0)] * scale[Int($1)] })
        self.heads = heads; self.tails = tails; self.degrees = degrees
    }

    /// Users plus items.
    public var nodeCount: Int { users + items }

    /// I + L = 2I − D^{−1}A (the random-walk Laplacian plus I, degrees + 1e−7: SpectralCF's
    /// operator, RecBole's stand-in for the spectral filter), and its transpose.
    public func spectral() -> (operator: SparseMatrix, transposed: SparseMatrix) {
        let n = Int32(nodeCount)
        let rows = heads + Array(0..<n), columns = tails + Array(0..<n)
        let values = heads.map { -1 / (degrees[Int($0)] + 1e-7) } + [Float](repeating: 2, count: nodeCount)
        let a = SparseMatrix(rows: nodeCount, columns: nodeCount, rowIndices: rows, columnIndices: columns, values: values)
        return (a, a.transposed())
    }

    /// E_0 = [users; items]: the two embedding tables stacked in node order.
    public func nodes(_ p: [String: Variable], tape: Tape, users u: String = "user_embedding", items i: String = "item_embedding") -> Variable {
        tape.concatRows(p[u]!, p[i]!)
    }

    /// Item rows' node indices.
    public func itemNodes(_ items: [Int32]) -> [Int32] { items.map { $0 + Int32(users) } }

    /// Scores by the dot products of node representations (users first, then items).
    public func factorScores(_ all: Matrix) -> FactorScores {
        let d = all.columns
        return FactorScores(users: Matrix(rows: users, columns: d, values: Array(all.values[..<(users * d)])),
                            items: Matrix(rows: items, columns: d, values: Array(all.values[(users * d)...])))
    }
}

/// What the graph models' training shares (RecBole's pairwise loader and BPR on propagated
/// node representations): the graph, every train pair with drawn negatives the user has
/// not had, and the loss over a propagated node table.
public struct GraphTraining: Sendable {
    public let graph: UserItemGraph
    let history: PatternSet
    let pairs: (users: [Int32], items: [Int32])

    /// One batch's users and their positive and negative items, the items as node indices.
    public struct Triples: Sendable {
        public let users: [Int32], positives: [Int32], negatives: [Int32]

        public init(users: [Int32], positives: [Int32], negatives: [Int32]) {
            self.users = users; self.positives = positives; self.negatives = negatives
        }
    }

    /// The graph and the train pairs of `data`.
    public init(_ data: TrainingData) {
        graph = UserItemGraph(trainMatrix: data.trainMatrix)
        history = PatternSet(data.trainMatrix)
        let inter = data.dataset.interactions
        let rows = data.split.trainRowsInTimeOrder()
        pairs = (rows.map { inter.users[$0] }, rows.map { inter.items[$0] })
    }

    /// A placeholder before `prepare`.
    public init() {
        graph = UserItemGraph(trainMatrix: SparseMatrix(rows: 0, columns: 0))
        history = PatternSet(SparseMatrix(rows: 0, columns: 0))
        pairs = ([], [])
    }

    /// Train pairs: the examples a pass shuffles.
    public var exampleCount: Int { pairs.users.count }

    /// The batch's triples, each pair once per negative (`batch.negatives` draws from `rng`; a pair's
    /// rows side by side, where RecBole tiles the batch: the mean loss is the same).
    public func triples(_ batch: TrainingBatch, rng: inout SeededGenerator) -> Triples {
        let (users, positives, negatives) = Sampling.triples(batch.examples, pairs: pairs, negatives: batch.negatives, from: batch.negativeItems,
                                                                 history: history, rng: &rng)
        return Triples(users: users, positives: graph.itemNodes(positives), negatives: graph.itemNodes(negatives))
    }

    /// −mean log σ(⟨e_u, e_i⟩ − ⟨e_u, e_j⟩) over the triples, for the node table `all`.
    public func bpr(_ all: Variable, _ t: Triples, tape: Tape) -> Variable {
        let difference = tape.sub(tape.rowDot(all, rows: t.users, all, rows: t.positives), tape.rowDot(all, rows: t.users, all, rows: t.negatives))
        return tape.affine(tape.mean(tape.logSigmoid(difference)), scale: -1)
    }

    /// λ (‖e[u]‖ + ‖e[i]‖ + ‖e[j]‖) / batch: RecBole's `EmbLoss`, unsquared norms of the batch's
    /// rows of the node table `all` (the propagated one, or E_0 = [users; items] for the ego rows);
    /// `squared` (its `require_pow`): λ (‖e[u]‖² + ‖e[i]‖² + ‖e[j]‖²) / (2 · batch).
    public func penalty(_ all: Variable, _ t: Triples, weight: Float, squared: Bool = false, tape: Tape) -> Variable {
        let norms = [t.users, t.positives, t.negatives].map { rows in
            let norm = tape.norm(all, rows: rows)
            return squared ? tape.square(norm) : norm
        }
        return tape.affine(tape.add(tape.add(norms[0], norms[1]), norms[2]), scale: weight / Float(t.users.count) / (squared ? 2 : 1))
    }
}
