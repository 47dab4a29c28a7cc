import Linalg
import RecBenchSupport
import RecBenchData

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
