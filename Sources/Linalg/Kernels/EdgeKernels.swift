/// A directed edge list over `nodes` nodes, its edges grouped by head and by tail (each group
/// in edge order), for products over a graph whose edges carry one weight per column group:
/// DGCF's intents, where every factor k of an embedding (its `width / factors` columns) is
/// propagated over its own weighting of the same edges. The propagations read the node rows
/// in place, so no edges × width block of gathered rows or messages is ever built.
public struct EdgeIndex: Sendable {
    public let nodes: Int
    public let heads: [Int32], tails: [Int32]
    let byHead: Groups, byTail: Groups

    /// Edge e runs from `heads[e]` to `tails[e]`, both below `nodes`.
    public init(nodes: Int, heads: [Int32], tails: [Int32]) {
        precondition(heads.count == tails.count && (heads + tails).allSatisfy { $0 >= 0 && Int($0) < nodes },
                     "EdgeIndex: heads and tails differ in count, or an end is outside the nodes")
        self.nodes = nodes; self.heads = heads; self.tails = tails
        byHead = Groups(keys: heads, nodes: nodes); byTail = Groups(keys: tails, nodes: nodes)
    }

    public var count: Int { heads.count }

    /// The edges of each node, by one end: node n's are `order[starts[n] ..< starts[n + 1]]`, in edge order.
    struct Groups: Sendable {
        let starts: [Int], order: [Int32]

        init(keys: [Int32], nodes: Int) {   // a counting sort: stable
            var starts = [Int](repeating: 0, count: nodes + 1)
            for k in keys { starts[Int(k) + 1] += 1 }
            for n in 0..<nodes { starts[n + 1] += starts[n] }
            var next = starts, order = [Int32](repeating: 0, count: keys.count)
            for (e, k) in keys.enumerated() { order[next[Int(k)]] = Int32(e); next[Int(k)] += 1 }
            self.starts = starts; self.order = order
        }
    }

    /// Which end a propagation's output rows belong to: `.heads` sums at each head over the
    /// rows of its edges' tails; `.tails` the reverse (the first's pullback).
    public enum End: Sendable { case heads, tails }
}

public enum EdgeKernels {
    /// out(n)_k = Σ_e w_ek · x(m)_k over the edges e of node n at `end` (m the edge's other end),
    /// each group of edges in edge order; factor k is columns k·c ..< (k + 1)·c of x, c = width / K
    /// for K = w's columns. Nodes with no edge get zeros.
    public static func propagate(_ x: Matrix, weights w: Matrix, over edges: EdgeIndex, to end: EdgeIndex.End, compute: Compute) -> Matrix {
        let width = x.columns, factors = w.columns, c = factors == 0 ? 0 : width / factors
        precondition(x.rows == edges.nodes && w.rows == edges.count && factors > 0 && c * factors == width,
                     "propagate: \(x.rows)×\(width) rows over \(edges.nodes) nodes, \(w.rows)×\(factors) weights for \(edges.count) edges")
        var outputs = [Matrix(rows: edges.nodes, columns: width)]
        guard edges.count > 0 && width > 0 else { return outputs[0] }
        let groups = end == .heads ? edges.byHead : edges.byTail, others = end == .heads ? edges.tails : edges.heads
        Matrix.withBuffers(reading: [x, w], writing: &outputs) { b in
            let p = UnsafeShared((b.read[0], b.read[1], b.write[0]))   // each worker writes its own nodes' rows
            compute.forEachChunk(count: edges.nodes, chunkSize: 128) { range in
                let (xp, wp, out) = p.value
                for n in range {
                    let row = out + n * width
                    for i in groups.starts[n]..<groups.starts[n + 1] {
                        let e = Int(groups.order[i]), source = xp + Int(others[e]) * width
                        for k in 0..<factors {
                            let weight = wp[e * factors + k], from = source + k * c, to = row + k * c
                            for j in stride(from: 0, to: c, by: 8) {
                                (Lanes.load(to, j, count: c) + weight * Lanes.load(from, j, count: c)).store(to, j, count: c)
                            }
                        }
                    }
                }
            }
        }
        return outputs[0]
    }

    /// d_ek = ⟨x(head e)_k, y(tail e)_k⟩ for each edge and each of `factors` column groups (edges × factors).
    public static func edgeDots(_ x: Matrix, _ y: Matrix, over edges: EdgeIndex, factors: Int, compute: Compute) -> Matrix {
        let width = x.columns, c = factors == 0 ? 0 : width / factors
        precondition(x.rows == edges.nodes && y.rows == edges.nodes && y.columns == width && factors > 0 && c * factors == width,
                     "edgeDots: \(x.rows)×\(width) and \(y.rows)×\(y.columns) rows over \(edges.nodes) nodes in \(factors) groups")
        var outputs = [Matrix(rows: edges.count, columns: factors)]
        guard edges.count > 0 && width > 0 else { return outputs[0] }
        Matrix.withBuffers(reading: [x, y], writing: &outputs) { b in
            let p = UnsafeShared((b.read[0], b.read[1], b.write[0]))   // each worker writes its own edges' rows
            compute.forEachChunk(count: edges.count, chunkSize: 4096) { range in
                let (xp, yp, out) = p.value
                for e in range {
                    let head = xp + Int(edges.heads[e]) * width, tail = yp + Int(edges.tails[e]) * width
                    for k in 0..<factors { out[e * factors + k] = Lanes.dot(head + k * c, tail + k * c, count: c) }
                }
            }
        }
        return outputs[0]
    }
}
