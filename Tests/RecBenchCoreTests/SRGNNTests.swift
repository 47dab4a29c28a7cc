import Foundation
import Testing
import RecBenchCore
import Linalg

/// SR-GNN's session graph against RecBole's own example (srgnn.py's docstring): the session
/// 1, 2, 3, 2, 4 has edges 1→2, 2→3, 3→2, 2→4, so node 2's outgoing row is ½, ½ to 3 and 4
/// and its incoming row ½, ½ from 1 and 3.
struct SRGNNTests {
    @Test func sessionGraphMatchesRecBolesExample() {
        let graph = SessionGraph(SequenceBatch(rows: [[1, 2, 3, 2, 4], [7], []], padding: 9))
        #expect(graph.nodeItems == [1, 2, 3, 4, 7, 9])
        #expect(graph.positionNodes == [0, 1, 2, 1, 3, 4, 5])
        #expect(graph.lastNodes == [3, 4, 5] && graph.lengths == [5, 1, 1])
        let outgoing = graph.outgoing.a.dense(), incoming = graph.incoming.a.dense()
        let expectedOut: [[Float]] = [[0, 1, 0, 0], [0, 0, 0.5, 0.5], [0, 1, 0, 0], [0, 0, 0, 0]]
        let expectedIn: [[Float]] = [[0, 0, 0, 0], [0.5, 0, 0.5, 0], [0, 1, 0, 0], [0, 1, 0, 0]]
        for i in 0..<4 {
            for j in 0..<4 {
                #expect(outgoing[i, j] == expectedOut[i][j] && incoming[i, j] == expectedIn[i][j], "A[\(i), \(j)]")
            }
        }
        // The one-item and the empty row have no edges; the readout sums real positions only.
        #expect(outgoing.values.count == 36 && (4..<6).allSatisfy { r in (0..<6).allSatisfy { outgoing[r, $0] == 0 && incoming[r, $0] == 0 } })
        #expect(graph.readout.sum.dense().values == [1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0] + [Float](repeating: 0, count: 7))
    }

    /// A repeated edge counts once (RecBole sets, not adds): 1→2→1→2 gives node 1 one
    /// outgoing edge of weight 1.
    @Test func repeatedEdgesCountOnce() {
        let graph = SessionGraph(SequenceBatch(rows: [[1, 2, 1, 2]], padding: 5))
        let outgoing = graph.outgoing.a.dense()
        #expect(graph.nodeItems == [1, 2] && outgoing[0, 1] == 1 && outgoing[1, 0] == 1 && outgoing[0, 0] == 0)
    }
}
