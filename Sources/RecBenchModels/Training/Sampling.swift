import Foundation
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
    /// `negatives` rows of (user, positive item, a `from` draw the user has not had in `history`).
    public static func triples(_ examples: ArraySlice<Int>, pairs: (users: [Int32], items: [Int32]), negatives: Int, from: NegativeItems,
                               history: PatternSet, rng: inout SeededGenerator) -> (users: [Int32], positives: [Int32], negatives: [Int32]) {
        var triples = (users: [Int32](), positives: [Int32](), negatives: [Int32]())
        let count = examples.count * negatives
        triples.users.reserveCapacity(count); triples.positives.reserveCapacity(count); triples.negatives.reserveCapacity(count)
        for k in examples {
            let (user, item) = (pairs.users[k], pairs.items[k])
            for _ in 0..<negatives {
                triples.users.append(user); triples.positives.append(item)
                triples.negatives.append(from.draw(for: Int(user), history: history, rng: &rng))
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

    /// Per target, one uniform draw among the first `items` items other than it (RecBole's
    /// repeatable sampler, which excludes only the example's own item).
    public static func uniformOthers(_ targets: [Int32], items: Int, rng: inout SeededGenerator) -> [Int32] {
        targets.map { i -> Int32 in
            guard items > 1 else { return i }
            let j = Int32.random(in: 0..<Int32(items - 1), using: &rng)
            return j >= i ? j + 1 : j
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

/// The distribution negatives are drawn from, built once per fit: uniform, or RecBole's
/// popularity sampler (`NegativeDistribution`). Every draw rejects the user's own train
/// items as RecBole's sampler does; the uniform draws are `Sampling.negative`'s exactly.
public struct NegativeItems: Sendable {
    /// Popularity draws: the table over `drawable` items and whether each item is one; nil: uniform.
    private let popularity: (table: AliasTable, drawable: [Int32], isDrawable: [Bool])?

    /// Uniform negatives.
    public static let uniform = NegativeItems(popularity: nil)

    private init(popularity: (table: AliasTable, drawable: [Int32], isDrawable: [Bool])?) { self.popularity = popularity }

    /// The fit's distribution over `data`'s items.
    public init(_ distribution: NegativeDistribution, data: TrainingData) {
        guard case .popularity(let alpha, let from) = distribution else { self = .uniform; return }
        var counts = [Int](repeating: 0, count: data.itemCount)
        let items = data.dataset.interactions.items
        switch from {
        case .recbole: for i in items { counts[Int(i)] += 1 }
        case .train: for r in data.split.trainRowsInTimeOrder() { counts[Int(items[r])] += 1 }
        }
        self.init(counts: counts, alpha: alpha)
    }

    /// Item i drawn with probability ∝ counts[i]^alpha (items counted 0 never; none counted: uniform).
    public init(counts: [Int], alpha: Double) {
        let drawable = counts.indices.filter { counts[$0] > 0 }
        guard !drawable.isEmpty else { self = .uniform; return }
        let weights = drawable.map { Foundation.pow(Double(counts[$0]), alpha) }
        var isDrawable = [Bool](repeating: false, count: counts.count)
        for i in drawable { isDrawable[i] = true }
        self.init(popularity: (AliasTable(weights: weights), drawable.map { Int32($0) }, isDrawable))
    }

    /// An item `user` has not had in `history` (users × items). A user who has had every item
    /// the popularity table can draw gets a uniform one instead (RecBole would loop for ever).
    @inline(__always)
    public func draw(for user: Int, history: PatternSet, rng: inout SeededGenerator) -> Int32 {
        guard let p = popularity, !covers(user, history, p.drawable.count, p.isDrawable) else {
            return Sampling.negative(for: user, history: history, rng: &rng)
        }
        while true {
            let item = p.drawable[Int(p.table.draw(&rng))]
            if !history.contains(row: user, column: Int(item)) { return item }
        }
    }

    /// Per target, an item other than it among the first `items` (RecBole's repeatable
    /// sampler, which excludes only the example's own item).
    public func draw(otherThan targets: [Int32], items: Int, rng: inout SeededGenerator) -> [Int32] {
        guard let p = popularity else { return Sampling.uniformOthers(targets, items: items, rng: &rng) }
        return targets.map { i in
            if p.drawable.count == 1, p.drawable[0] == i { return Sampling.uniformOthers([i], items: items, rng: &rng)[0] }
            while true {
                let j = p.drawable[Int(p.table.draw(&rng))]
                if j != i { return j }
            }
        }
    }

    private func covers(_ user: Int, _ history: PatternSet, _ drawableCount: Int, _ isDrawable: [Bool]) -> Bool {
        guard history.count(ofRow: user) >= drawableCount else { return false }
        return history.matrix.columns(ofRow: user).reduce(0) { $0 + (isDrawable[Int($1)] ? 1 : 0) } >= drawableCount
    }
}
