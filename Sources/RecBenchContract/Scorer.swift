import Linalg
import RecBenchSupport
import RecBenchData

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

/// A model whose scores all come from its prepared scorer (propagated tables, item towers):
/// scoring without an evaluation pass prepares first. A conforming model must implement
/// `preparedForScoring`, or the two defaults would call each other.
public protocol ScoresWhenPrepared: Scorer {}

extension ScoresWhenPrepared {
    public func scores(for users: ArraySlice<Int32>, into block: inout Matrix, compute: Compute) {
        preparedForScoring(compute: compute).scores(for: users, into: &block, compute: compute)
    }
}

/// A model that scores listed (user, item) pairs directly: labelled evaluation scores a split's rows
/// with it instead of filling every user's row of items to read a few.
public protocol PairScorer: Scorer {
    /// The score of each pair (`users[k]`, `items[k]`), equal to what `scores(for:into:compute:)` gives it.
    func pairScores(users: [Int32], items: [Int32], compute: Compute) -> [Float]
}
