import Linalg
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// Input rows for auto-encoder models (RecBole's `AutoEncoderMixin`): each user's train
/// items as a binary row; the encoder sees it L2-normalised with dropout (kept entries
/// scaled by 1/(1−p)), as a sparse matrix, so the first layer costs nnz × hidden.
public struct AutoEncoderInput: Sendable {
    /// users × items, 1 where the user has the item in train.
    public let ratings: SparseMatrix

    /// Binary rows from the train matrix (duplicates count once, as RecBole's history matrix).
    public init(trainMatrix: SparseMatrix) { ratings = trainMatrix.binarized() }

    /// The raw binary rows of `users` (the reconstruction target).
    public func target(_ users: [Int32]) -> SparseMatrix {
        rows(users) { _, _ in 1 }
    }

    /// The encoder input of `users`: normalised rows, entries dropped with probability
    /// `dropout` (using `rng`) and the rest scaled by 1/(1−dropout).
    public func encoderInput(_ users: [Int32], dropout: Float, rng: inout SeededGenerator) -> SparseMatrix {
        guard dropout > 0 else { return normalisedRows(users) }
        let scale = 1 / (1 - dropout)
        // One draw per train entry, users in order, entries in order.
        return rows(users) { r, _ in
            if dropout > 0 && rng.nextUnitFloat() < dropout { return 0 }
            let norm = Float(ratings.entries(ofRow: Int(users[r])).count).squareRoot()
            return scale / max(norm, 1e-12)
        }
    }

    /// The binary rows of `users` with entries dropped with probability `dropout` (using
    /// `rng`) and the rest scaled by 1/(1−dropout), not normalised (CDAE's corruption).
    public func corrupted(_ users: [Int32], dropout: Float, rng: inout SeededGenerator) -> SparseMatrix {
        guard dropout > 0 else { return target(users) }
        let scale = 1 / (1 - dropout)
        return rows(users) { _, _ in rng.nextUnitFloat() < dropout ? 0 : scale }
    }

    /// Without dropout (scoring): each row's columns copied whole and its values all
    /// 1/‖row‖, the same floats as the entry-by-entry path with scale 1.
    private func normalisedRows(_ users: [Int32]) -> SparseMatrix {
        var starts = [0], c = [Int32](), v = [Float]()
        let capacity = users.reduce(0) { $0 + ratings.entries(ofRow: Int($1)).count }
        starts.reserveCapacity(users.count + 1); c.reserveCapacity(capacity); v.reserveCapacity(capacity)
        for u in users {
            let entries = ratings.entries(ofRow: Int(u))
            c.append(contentsOf: ratings.columnIndices[entries])
            v.append(contentsOf: repeatElement(1 / max(Float(entries.count).squareRoot(), 1e-12), count: entries.count))
            starts.append(c.count)
        }
        return SparseMatrix(rows: users.count, columns: ratings.columns, rowStarts: starts, columnIndices: c, values: v)
    }

    private func rows(_ users: [Int32], value: (Int, Int) -> Float) -> SparseMatrix {
        // The train rows are sorted and duplicate-free, so the result's rows are too.
        var starts = [0], c = [Int32](), v = [Float]()
        let capacity = users.reduce(0) { $0 + ratings.entries(ofRow: Int($1)).count }
        starts.reserveCapacity(users.count + 1); c.reserveCapacity(capacity); v.reserveCapacity(capacity)
        for (row, u) in users.enumerated() {
            for (k, e) in ratings.entries(ofRow: Int(u)).enumerated() {
                let x = value(row, k)
                if x != 0 { c.append(ratings.columnIndices[e]); v.append(x) }
            }
            starts.append(c.count)
        }
        return SparseMatrix(rows: users.count, columns: ratings.columns, rowStarts: starts, columnIndices: c, values: v)
    }
}
