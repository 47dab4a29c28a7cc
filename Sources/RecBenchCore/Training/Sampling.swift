import Linalg

/// Shuffled mini-batches and negative sampling, seeded per (seed, epoch) so results never
/// depend on threads or timing.
public enum Sampling {
    /// `0..<count` shuffled with the stream for (seed, epoch, purpose), cut into batches.
    public static func shuffledBatches(count: Int, batchSize: Int, seed: UInt64, epoch: Int, purpose: UInt64) -> [ArraySlice<Int>] {
        var order = Array(0..<count)
        var rng = SeededGenerator(seed: seed, stream: UInt64(epoch) << 8 | purpose)
        order.shuffle(using: &rng)
        return stride(from: 0, to: count, by: batchSize).map { order[$0..<min(count, $0 + batchSize)] }
    }

    /// An item the user has not interacted with in train, uniformly (RecBole 1.2's uniform
    /// sampler). Rejection sampling; a user who has every item gets a uniform item.
    @inline(__always)
    public static func negative(for user: Int, history: PatternSet, rng: inout SeededGenerator) -> Int32 {
        let n = history.matrix.columns
        if history.count(ofRow: user) >= n { return Int32(rng.nextInt(below: n)) }
        while true {
            let item = rng.nextInt(below: n)
            if !history.contains(row: user, column: item) { return Int32(item) }
        }
    }
}
