import Linalg
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// RepeatPop: each user's own most frequent train items first (ties: the more recently
/// bought first), then the globally most popular items. The repeat-purchase baseline that
/// next-basket studies find hard to beat on grocery data; it only makes sense where earlier
/// items may be recommended (`history_mask: none`).
///
///     score(u, i) = 2 + count(u, i) + recency(u, i)     if u bought i in train
///                 = pop(i) / (max pop + 1)              otherwise
///
/// with recency(u, i) ∈ [0, 1) the position of u's last purchase of i among u's train rows
/// in time order, divided by u's row count.
public struct RepeatPop: Recommender {
    public static let name = "RepeatPop"
    public static let readsSeed = false   // no draw: the same fit at every seed
    public static let summary = "Each user's own most frequent items (ties: most recent), then global popularity"
    public static let kind = ModelKind.baseline
    public static let parameters: [ConfigKey] = []
    public static let role = ModelRole.repeatBaseline

    private var trainMatrix = SparseMatrix(rows: 0, columns: 0)
    /// Recency of each stored (user, item) entry of `trainMatrix`, in [0, 1).
    private var recency: [Float] = []
    /// Global popularity scaled into [0, 1).
    private var popularity: [Float] = []

    public init(parameters: ModelParameters) throws {}

    public mutating func fit(_ data: TrainingData, context: FitContext) throws {
        let x = data.trainMatrix
        let interactions = data.dataset.interactions
        var order = [Float](repeating: 0, count: x.nonzeroCount)
        var seen = [Int](repeating: 0, count: x.rows)
        for r in data.split.trainRowsInTimeOrder() {   // time order
            let u = Int(interactions.users[r])
            let e = x.position(row: u, column: Int(interactions.items[r]))!
            order[e] = Float(seen[u])
            seen[u] += 1
        }
        for u in 0..<x.rows where seen[u] > 0 {
            for e in x.entries(ofRow: u) { order[e] /= Float(seen[u]) }
        }
        let counts = x.columnSums()
        let top = (counts.max() ?? 0) + 1
        popularity = counts.map { $0 / top }
        recency = order
        trainMatrix = x
    }

    public func scores(for users: ArraySlice<Int32>, into block: inout Matrix, compute: Compute) {
        let n = popularity.count
        block.values.withUnsafeMutableBufferPointer { out in
            for (r, user) in users.enumerated() {
                let row = UnsafeMutableBufferPointer(rebasing: out[(r * n)..<((r + 1) * n)])
                _ = row.update(fromContentsOf: popularity)
                for e in trainMatrix.entries(ofRow: Int(user)) {
                    row[Int(trainMatrix.columnIndices[e])] = 2 + trainMatrix.values[e] + recency[e]
                }
            }
        }
    }
}
