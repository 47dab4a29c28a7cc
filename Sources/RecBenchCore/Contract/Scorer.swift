import Linalg

/// Anything that fills a users × items score block (every model is one). Evaluation may
/// call it from several workers at once, each for its own users and block.
public protocol Scorer: Sendable {
    /// Writes the score of every item for each listed user into the matching row of `block`
    /// (`block` is `users.count × itemCount`; its previous contents are unspecified), using
    /// at most the threads `compute` allows.
    func scores(for users: ArraySlice<Int32>, into block: inout Matrix, compute: Compute)
}
