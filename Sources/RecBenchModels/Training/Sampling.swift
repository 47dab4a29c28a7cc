import Linalg
import RecBenchSupport
import RecBenchData
import RecBenchContract

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

    /// A batch's BPR triples: for each example k (an index into `pairs`), in order,
    /// `negatives` rows of (user, positive item, a `negative(for:)` draw).
    public static func triples(_ examples: ArraySlice<Int>, pairs: (users: [Int32], items: [Int32]), negatives: Int,
                               history: PatternSet, rng: inout SeededGenerator) -> (users: [Int32], positives: [Int32], negatives: [Int32]) {
        var triples = (users: [Int32](), positives: [Int32](), negatives: [Int32]())
        let count = examples.count * negatives
        triples.users.reserveCapacity(count); triples.positives.reserveCapacity(count); triples.negatives.reserveCapacity(count)
        for k in examples {
            let (user, item) = (pairs.users[k], pairs.items[k])
            for _ in 0..<negatives {
                triples.users.append(user); triples.positives.append(item)
                triples.negatives.append(negative(for: Int(user), history: history, rng: &rng))
            }
        }
        return triples
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

    /// `count` distinct values below `bound`, uniformly (Python's `random.sample`: a partial
    /// Fisher-Yates shuffle; `count` is at most `bound`).
    public static func distinct(_ count: Int, below bound: Int, rng: inout SeededGenerator) -> [Int32] {
        precondition(count <= bound, "distinct: \(count) values below \(bound)")
        var pool = (0..<Int32(bound)).map { $0 }
        for k in 0..<count { pool.swapAt(k, k + rng.nextInt(below: bound - k)) }
        return Array(pool[0..<count])
    }
}
