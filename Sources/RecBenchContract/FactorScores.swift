import Linalg
import RecBenchSupport
import RecBenchData

/// Scores as dot products of user and item factor rows, `users · itemsᵀ`: how BPR and ALS
/// score, and what a model whose factors need work first (LightGCN's propagation) prepares
/// once per evaluation pass.
public struct FactorScores: Scorer {
    /// One row per user.
    public let users: Matrix
    /// One row per item, as wide as `users`.
    public let items: Matrix

    /// Scores from these factors.
    public init(users: Matrix, items: Matrix) {
        precondition(users.columns == items.columns, "FactorScores: user factors are \(users.columns) wide, item factors \(items.columns)")
        self.users = users; self.items = items
    }

    public func scores(for users: ArraySlice<Int32>, into block: inout Matrix, compute: Compute) {
        BLAS.gemm(RowKernels.gather(self.users, rows: Array(users)), items, transposeB: true, into: &block, compute: compute)
    }
}
