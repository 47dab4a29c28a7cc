import Foundation
import Linalg
import RecBenchCore

/// A seeded synthetic interaction log of any size, shaped like a real one, written as an
/// atomic `.inter` file while it is generated: memory grows with users and items, never
/// with interactions, so a 20-million-row log needs tens of megabytes.
///
/// - per-user activity is log-normal (σ `activitySpread`), scaled so the rows total exactly
///   `interactions` and every user has at least one;
/// - item popularity is a power law, p(rank r) ∝ (r + 1)^−`popularityExponent`, the ranks
///   shuffled over item ids;
/// - each user's timestamps increase from a start spread over `spanSeconds`, with
///   exponential gaps;
/// - a share `repeatShare` of a user's rows re-draws one of that user's earlier items
///   (repeat consumption), the rest draw from the popularity law.
public struct ScaleSample: Sendable {
    /// Sizes and shape parameters.
    public struct Shape: Sendable, Equatable {
        public var users: Int
        public var items: Int
        public var interactions: Int
        public var activitySpread = 1.0
        public var popularityExponent = 1.0
        public var repeatShare = 0.05
        public var spanSeconds = 3.0 * 365 * 86_400
        public var seed: UInt64 = 2024

        /// A shape of these sizes with the default parameters.
        public init(users: Int, items: Int, interactions: Int) {
            self.users = users; self.items = items; self.interactions = interactions
        }

        /// MovieLens-20M's sizes: 138,493 users × 26,744 items × 20,000,263 rows.
        public static let ml20m = Shape(users: 138_493, items: 26_744, interactions: 20_000_263)
        /// MovieLens-1M's sizes.
        public static let ml1m = Shape(users: 6_040, items: 3_706, interactions: 1_000_209)
        /// MovieLens-100K's sizes.
        public static let ml100k = Shape(users: 943, items: 1_682, interactions: 100_000)
        /// The named shapes `recbench sample --shape` accepts.
        public static let named: [String: Shape] = ["ml-20m": ml20m, "ml-1m": ml1m, "ml-100k": ml100k]
    }

    public let shape: Shape

    /// A generator for `shape`; throws when the sizes cannot hold it.
    public init(shape: Shape) throws {
        guard shape.users >= 1, shape.items >= 1, shape.interactions >= shape.users else {
            throw RecBenchError(field: "--interactions", "need users ≥ 1, items ≥ 1 and at least one interaction per user "
                                                         + "(\(shape.users) users, \(shape.items) items, \(shape.interactions) interactions)")
        }
        guard (0...1).contains(shape.repeatShare), shape.activitySpread >= 0, shape.popularityExponent >= 0 else {
            throw RecBenchError(field: "--shape", "repeat share must lie in 0…1 and the spreads be non-negative")
        }
        self.shape = shape
    }

    /// Rows per user: log-normal weights scaled to sum exactly to `interactions`, each ≥ 1.
    func rowsPerUser(_ rng: inout SeededGenerator) -> [Int] {
        let weights = (0..<shape.users).map { _ in Foundation.exp(shape.activitySpread * ScaleSample.standardNormal(&rng)) }
        let spare = Double(shape.interactions - shape.users), total = weights.reduce(0, +)
        var counts = weights.map { 1 + Int(spare * $0 / total) }
        // Rounding down leaves fewer than `users` rows over: one more each to the first users.
        var left = shape.interactions - counts.reduce(0, +)
        var u = 0
        while left > 0 { counts[u % shape.users] += 1; left -= 1; u += 1 }
        return counts
    }

    /// The cumulative popularity of each rank, and the item id of each rank (a seeded shuffle).
    func popularity(_ rng: inout SeededGenerator) -> (cumulative: [Double], itemOfRank: [Int32]) {
        var cumulative = [Double](repeating: 0, count: shape.items), total = 0.0
        for r in 0..<shape.items {
            total += Foundation.pow(Double(r + 1), -shape.popularityExponent)
            cumulative[r] = total
        }
        var itemOfRank = (0..<Int32(shape.items)).map { $0 }
        for i in stride(from: shape.items - 1, to: 0, by: -1) { itemOfRank.swapAt(i, rng.nextInt(below: i + 1)) }
        return (cumulative.map { $0 / total }, itemOfRank)
    }

    /// Streams the log to `path` (atomically: a reader sees no file or the whole file).
    /// Returns the rows written.
    @discardableResult
    public func write(to path: String) throws -> Int {
        var rng = SeededGenerator(seed: shape.seed, stream: 0x5CA1E)
        let counts = rowsPerUser(&rng)
        let (cumulative, itemOfRank) = popularity(&rng)
        var rows = 0
        try AtomicWrite.stream(to: path) { out in
            var line = LineBuffer()
            line.append("user_id:token\titem_id:token\ttimestamp:float\n")
            var history: [Int32] = []
            for (user, count) in counts.enumerated() {
                history.removeAll(keepingCapacity: true)
                var time = (Double(rng.nextUnitFloat()) * 0.9 * shape.spanSeconds).rounded()
                let meanGap = 0.1 * shape.spanSeconds / Double(count)
                for _ in 0..<count {
                    let item: Int32
                    if !history.isEmpty && Double(rng.nextUnitFloat()) < shape.repeatShare {
                        item = history[rng.nextInt(below: history.count)]
                    } else {
                        item = itemOfRank[ScaleSample.rank(of: Double(rng.nextUnitFloat()), in: cumulative)]
                    }
                    history.append(item)
                    time += (-meanGap * Foundation.log(1 - Double(rng.nextUnitFloat()))).rounded() + 1
                    line.appendRow(user: user, item: Int(item), time: Int(time))
                    rows += 1
                }
                if line.bytes.count > 1 << 20 { try out(line.bytes); line.bytes.removeAll(keepingCapacity: true) }
            }
            try out(line.bytes)
        }
        return rows
    }

    /// The first rank whose cumulative share reaches `u` (binary search).
    static func rank(of u: Double, in cumulative: [Double]) -> Int {
        var low = 0, high = cumulative.count - 1
        while low < high {
            let mid = (low + high) / 2
            if cumulative[mid] < u { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// A standard normal draw (Box–Muller, one of the pair).
    static func standardNormal(_ rng: inout SeededGenerator) -> Double {
        let u1 = max(Double.leastNormalMagnitude, 1 - Double(rng.nextUnitFloat())), u2 = Double(rng.nextUnitFloat())
        return (-2 * Foundation.log(u1)).squareRoot() * Foundation.cos(2 * .pi * u2)
    }
}

/// Rows formatted straight into bytes: `u<user>\ti<item>\t<time>\n` (no String per row).
struct LineBuffer {
    var bytes: [UInt8] = []

    mutating func append(_ text: String) { bytes.append(contentsOf: text.utf8) }

    mutating func appendRow(user: Int, item: Int, time: Int) {
        bytes.append(0x75)   // u
        appendDecimal(user)
        bytes.append(0x09); bytes.append(0x69)   // \t i
        appendDecimal(item)
        bytes.append(0x09)
        appendDecimal(time)
        bytes.append(0x0A)
    }

    /// The decimal digits of a non-negative `value`: written least significant first, then
    /// turned around in place.
    mutating func appendDecimal(_ value: Int) {
        let start = bytes.count
        var v = value
        repeat { bytes.append(UInt8(0x30 + v % 10)); v /= 10 } while v > 0
        bytes[start...].reverse()
    }
}
