import Linalg
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// ItemKNN (Aiolli 2013, as RecBole 1.2.1 implements it).
///
///     sim(i, j) = (xᵢ · xⱼ) / (‖xᵢ‖ ‖xⱼ‖ + shrink + 1e-6),   sim(j, j) = 0
///     W[:, j]   = sim(·, j) kept on the k largest entries of column j
///     score(u)  = x_u · W
///
/// where xᵢ is item i's column of the train matrix (counts). `knn_method: user` (RecBole's
/// UserKNN) runs the same on users' rows and keeps each user's k nearest users instead:
///
///     W[u, :]   = sim(u, ·) kept on its k largest entries,   score(u) = W[u, :] · X
public struct ItemKNN: Recommender {
    public static let name = "ItemKNN"
    public static let readsSeed = false   // no draw: the same fit at every seed
    public static let summary = "Item-based nearest neighbours with cosine similarity (k neighbours per item, shrinkage)"
    public static let kind = ModelKind.neighbourhood
    public static let parameters: [ConfigKey] = [
        ConfigKey("k", "int", .int(100), "ItemKNN: neighbours kept per item.").searched(.choice([10, 20, 50, 100, 200, 400].map(ConfigValue.int))),
        ConfigKey("shrink", "float", .double(0.0), "ItemKNN: added to the cosine denominator; damps similarities built on few users.")
            .searched(.choice([0.0, 1.0, 10.0, 100.0].map(ConfigValue.double))),
        ConfigKey("knn_method", "item or user", .string("item"), "ItemKNN: similarities between items, or between users (RecBole's UserKNN)."),
    ]
    public static let testSettings: [[String: ConfigValue]] = [[:], ["knn_method": .string("user")]]

    let k: Int
    let shrink: Float
    let byUser: Bool
    /// Train matrix (users × items) and the sparse similarity W (items × items).
    private var trainMatrix = SparseMatrix(rows: 0, columns: 0)
    private var similarity = SparseMatrix(rows: 0, columns: 0)

    public init(parameters: ModelParameters) throws {
        k = try parameters.int("k", in: 1...Int(Int32.max))
        shrink = Float(try parameters.double("shrink", in: 0...Double.greatestFiniteMagnitude))
        byUser = try parameters.choice("knn_method", of: ["item", "user"]) == "user"
    }

    public func memory(_ shape: WorkShape) -> MemoryEstimate? {
        // The neighbour lists (id + weight) and W built from them (row, column, value).
        let (n, what) = byUser ? (shape.users, "users") : (shape.items, "items")
        return MemoryEstimate(bytes: 20 * Double(n) * Double(min(k, n)), what: "the \(n) \(what)' \(min(k, n)) neighbour lists")
    }

    public mutating func fit(_ data: TrainingData, context: FitContext) throws {
        trainMatrix = data.trainMatrix
        // Users' similarities are items' on the transpose; W is then laid out the other way round.
        let x = byUser ? trainMatrix.transposed() : trainMatrix
        let n = x.columns
        let norms = x.columnSquaredNorms().map { $0.squareRoot() }
        let keep = min(k, n)
        // Column j of W: its top-k similarities. The Gram matrix is symmetric, so column j is
        // row j, which is built, scaled and cut to its top k by one worker and then dropped:
        // the dense n × n similarity never exists.
        var neighbours = [Int32](repeating: -1, count: n * keep)
        var weights = [Float](repeating: 0, count: n * keep)
        let shrink = self.shrink
        neighbours.withUnsafeMutableBufferPointer { nb in
            weights.withUnsafeMutableBufferPointer { wt in
                // Workers write disjoint slices [j*keep, (j+1)*keep).
                let shared = UnsafeShared((nb.baseAddress!, wt.baseAddress!))
                x.forEachGramRow(compute: context.compute) { j, column in
                    let (np, wp) = shared.value
                    for i in 0..<n { column[i] /= norms[j] * norms[i] + shrink + 1e-6 }
                    column[j] = 0
                    let count = TopK.select(UnsafeBufferPointer(column), k: keep, into: np + j * keep)
                    for r in 0..<count { wp[j * keep + r] = column[Int(np[j * keep + r])] }
                }
            }
        }
        // Items: W[i, j] = sim(i, j) for i among j's neighbours; users: W[u, v] for v among u's.
        // Zeros are not stored (as RecBole).
        var rows = [Int32](), cols = [Int32](), vals = [Float]()
        for j in 0..<n {
            for r in 0..<keep where neighbours[j * keep + r] >= 0 && weights[j * keep + r] != 0 {
                rows.append(neighbours[j * keep + r]); cols.append(Int32(j)); vals.append(weights[j * keep + r])
            }
        }
        if byUser { swap(&rows, &cols) }
        similarity = SparseMatrix(rows: n, columns: n, rowIndices: rows, columnIndices: cols, values: vals)
    }

    public func scores(for users: ArraySlice<Int32>, into block: inout Matrix, compute: Compute) {
        if byUser {
            similarity.multiply(rows: users, bySparse: trainMatrix, into: &block, compute: compute)
        } else {
            trainMatrix.multiply(rows: users, bySparse: similarity, into: &block, compute: compute)
        }
    }
}
