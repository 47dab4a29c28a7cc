import Linalg

/// Anything that fills a users × items score block (every model is one). Evaluation may
/// call it from several workers at once, each for its own users and block.
public protocol Scorer: Sendable {
    /// Writes the score of every item for each listed user into the matching row of `block`
    /// (`block` is `users.count × itemCount`; its previous contents are unspecified), using
    /// at most the threads `compute` allows.
    func scores(for users: ArraySlice<Int32>, into block: inout Matrix, compute: Compute)

    /// A scorer with the work every user's scores share already done (propagated
    /// embeddings, unit-length tables, item towers), with `compute`'s threads. An evaluation
    /// pass asks for it once and then scores its batches, on several workers at once, with
    /// it; it must give the same scores as this scorer. The default shares nothing.
    func preparedForScoring(compute: Compute) -> any Scorer
}

extension Scorer {
    /// Nothing is shared between users' scores: the scorer itself.
    public func preparedForScoring(compute: Compute) -> any Scorer { self }
}

/// A scorer made of a closure over work already done: what a model's
/// `preparedForScoring` returns when its shared part is not plain factors (Item2vec's unit
/// vectors, a context-aware model's item towers).
public struct PreparedScores: Scorer {
    let score: @Sendable (ArraySlice<Int32>, inout Matrix, Compute) -> Void

    /// Scores by `score(users, block, compute)`, which must write every entry of the block.
    public init(_ score: @escaping @Sendable (ArraySlice<Int32>, inout Matrix, Compute) -> Void) { self.score = score }

    public func scores(for users: ArraySlice<Int32>, into block: inout Matrix, compute: Compute) {
        score(users, &block, compute)
    }
}

/// Scores as dot products of user and item factor rows, `users · itemsᵀ`: the scoring of
/// every factorisation model, and what a model whose factors need work first (LightGCN's
/// propagation) prepares once per evaluation pass.
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
