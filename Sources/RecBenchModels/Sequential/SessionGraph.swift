import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// The session graphs of a batch (SR-GNN's, RecBole's `_get_slice`): one node per distinct
/// item of a row, an edge u → v (counted once) for each consecutive pair of the row's items,
/// and two normalised adjacencies: `incoming[i, j] = [j → i] / indeg(i)`,
/// `outgoing[i, j] = [i → j] / outdeg(i)` (a node without such edges gets a zero row).
/// Every row's nodes are stacked into one block-diagonal graph, so a batch's propagation is
/// one sparse product; RecBole's padding node has no edges and is masked out of the readout,
/// so it is left out.
public struct SessionGraph: Sendable {
    /// The item of each node, row after row (an empty row keeps one padding node).
    public let nodeItems: [Int32]
    /// The node of each packed position (each row's real items one after another, an empty
    /// row one position): `SequenceBatch.packed`'s layout.
    public let positionNodes: [Int32]
    /// Positions per row in that layout (at least 1).
    public let lengths: [Int]
    /// The node of each row's last item.
    public let lastNodes: [Int32]
    /// The row of each packed position.
    public var positionRows: [Int32] { lengths.enumerated().flatMap { r, n in [Int32](repeating: Int32(r), count: n) } }
    /// Row r's sum over its real positions (rows × positions; an empty row sums nothing), and its transpose.
    public let readout: (sum: SparseMatrix, transposed: SparseMatrix)
    /// `incoming[i, j] = [j → i] / indeg(i)` over all nodes, and its transpose.
    public let incoming: (a: SparseMatrix, transposed: SparseMatrix)
    /// `outgoing[i, j] = [i → j] / outdeg(i)` over all nodes, and its transpose.
    public let outgoing: (a: SparseMatrix, transposed: SparseMatrix)

    public init(_ batch: SequenceBatch) {
        var nodeItems: [Int32] = [], positionNodes: [Int32] = [], lastNodes: [Int32] = []
        var edges: [(Int32, Int32)] = [], sumRows: [Int32] = [], sumColumns: [Int32] = []
        for r in 0..<batch.count {
            let row = Array(batch.items[(r * batch.width)..<(r * batch.width + batch.lengths[r])])
            var nodeOf: [Int32: Int32] = [:], seen = Set<Int64>()
            for (t, item) in (row.isEmpty ? [batch.padding] : row).enumerated() {
                let node = nodeOf[item] ?? Int32(nodeItems.count)
                if nodeOf[item] == nil { nodeOf[item] = node; nodeItems.append(item) }
                if t > 0, let previous = positionNodes.last, seen.insert(Int64(previous) << 32 | Int64(node)).inserted { edges.append((previous, node)) }
                if !row.isEmpty { sumRows.append(Int32(r)); sumColumns.append(Int32(positionNodes.count)) }
                positionNodes.append(node)
            }
            lastNodes.append(positionNodes.last!)
        }
        self.nodeItems = nodeItems
        self.positionNodes = positionNodes
        self.lengths = batch.lengths.map { max(1, $0) }
        self.lastNodes = lastNodes
        let sum = SparseMatrix(rows: batch.count, columns: positionNodes.count, rowIndices: sumRows, columnIndices: sumColumns)
        readout = (sum, sum.transposed())
        (incoming, outgoing) = Self.adjacencies(edges, nodes: nodeItems.count)
    }

    /// The in- and out-normalised adjacencies of the edge list, each with its transpose.
    private static func adjacencies(_ edges: [(Int32, Int32)], nodes: Int)
        -> (incoming: (SparseMatrix, SparseMatrix), outgoing: (SparseMatrix, SparseMatrix)) {
        var indegree = [Float](repeating: 0, count: nodes), outdegree = indegree
        for (u, v) in edges { outdegree[Int(u)] += 1; indegree[Int(v)] += 1 }
        let incoming = SparseMatrix(rows: nodes, columns: nodes, rowIndices: edges.map(\.1), columnIndices: edges.map(\.0),
                                    values: edges.map { 1 / indegree[Int($0.1)] })
        let outgoing = SparseMatrix(rows: nodes, columns: nodes, rowIndices: edges.map(\.0), columnIndices: edges.map(\.1),
                                    values: edges.map { 1 / outdegree[Int($0.0)] })
        return ((incoming, incoming.transposed()), (outgoing, outgoing.transposed()))
    }
}

/// SR-GNN's gated graph layer (RecBole's `GNN`), `step` times over a batch's session graphs:
///
///     a = [A_in (H W_in + b_in) + b_iah,  A_out (H W_out + b_out) + b_ioh]     (b_iah, b_ioh: SRGNN only)
///     r = σ(a W_ir + b_ir + H W_hr + b_hr),  z = σ(a W_iz + b_iz + H W_hz + b_hz)
///     n = tanh(a W_in' + b_in' + r ⊙ (H W_hn + b_hn))
///     H ← (1 − z) ⊙ H + z ⊙ n                       (z weighs the new state: the reverse of torch's GRU)
///
/// Parameters `gnn.*`, laid out input × output (the gates' columns r, z, n).
struct GatedGraphLayer: Sendable {
    /// The key both graph models read.
    static let stepKey = ConfigKey("step", "int", .int(1), "Propagation steps of the gated graph layer over each session graph (SRGNN, GCSAN).")

    let width: Int, steps: Int, nodeBiases: Bool

    init(_ parameters: ModelParameters, width: Int, nodeBiases: Bool) throws {
        self.width = width
        steps = try parameters.int("step", in: 1...64)
        self.nodeBiases = nodeBiases
    }

    /// Adds the layer's parameters: the gates' U(±1/√d) (`GNN`'s own reset), the edge maps'
    /// weights and biases from `edge`.
    func initialize(_ p: inout Parameters, edge: (_ rows: Int, _ columns: Int, inout SeededGenerator) -> Matrix, rng: inout SeededGenerator) {
        let d = width, bound = 1 / Float(d).squareRoot()
        for (name, rows, columns) in [("w_ih", 2 * d, 3 * d), ("w_hh", d, 3 * d), ("b_ih", 1, 3 * d), ("b_hh", 1, 3 * d)]
            + (nodeBiases ? [("b_iah", 1, d), ("b_ioh", 1, d)] : []) {
            p.add("gnn.\(name)", Initializer.uniform(rows: rows, columns: columns, bound: bound, rng: &rng))
        }
        for side in ["in", "out"] {
            p.add("gnn.edge_\(side).weight", edge(d, d, &rng))
            p.add("gnn.edge_\(side).bias", edge(1, d, &rng))
        }
    }

    func callAsFunction(_ h: Variable, graph: SessionGraph, _ p: [String: Variable], tape: Tape) -> Variable {
        let everyNode = [Int32](repeating: 0, count: h.value.rows)
        var h = h
        for _ in 0..<steps {
            var inflow = tape.matmul(graph.incoming.a, tape.linear(h, p["gnn.edge_in.weight"]!, p["gnn.edge_in.bias"]!),
                                     transposed: graph.incoming.transposed)
            var outflow = tape.matmul(graph.outgoing.a, tape.linear(h, p["gnn.edge_out.weight"]!, p["gnn.edge_out.bias"]!),
                                      transposed: graph.outgoing.transposed)
            if nodeBiases {
                inflow = tape.add(inflow, tape.gather(p["gnn.b_iah"]!, rows: everyNode))
                outflow = tape.add(outflow, tape.gather(p["gnn.b_ioh"]!, rows: everyNode))
            }
            let gi = tape.linear(tape.concatColumns([inflow, outflow]), p["gnn.w_ih"]!, p["gnn.b_ih"]!)
            h = tape.gatedUpdate(inputs: gi, hidden: tape.linear(h, p["gnn.w_hh"]!, p["gnn.b_hh"]!), state: h)
        }
        return h
    }

    /// Multiply-adds per node and step: the two edge maps, the gates' input and hidden products.
    var multiplyAdds: Double { Double(steps) * Double(width * width) * (2 + 6 + 3) }
}
