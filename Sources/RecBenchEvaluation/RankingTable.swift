import RecBenchSupport
import RecBenchData
import RecBenchContract
/// Every evaluated user's outcome in flat buffers that the ranking workers fill at disjoint
/// rows: the per-user metric values (one column per key), and per cutoff the hits and the
/// hits on earlier items (the top-K lists go straight into the result's array). About 120
/// bytes per user and no allocation per user, so evaluation memory is one block of scores
/// plus this and the lists, whatever the user count.
final class RankingTable: @unchecked Sendable {
    let cutoffs: Int
    /// One column per ranking-metric key, each `users` long.
    private let metricColumns: [UnsafeMutableBufferPointer<Double>]
    /// Row u, cutoff c: (all hits, repeat hits) at [2 · (u · cutoffs + c)].
    private let hitCounts: UnsafeMutableBufferPointer<Int32>
    /// Positives of user u that were in their history.
    private let repeatCounts: UnsafeMutableBufferPointer<Int32>
    /// 1 where user u's scores held NaN or +∞ (a diverged model), which ranking cannot order.
    private let nonFinite: UnsafeMutableBufferPointer<UInt8>

    /// A table for `users` users, `keys` metric columns, `cutoffs` cutoffs.
    init(users: Int, keys: Int, cutoffs: Int) {
        self.cutoffs = cutoffs
        metricColumns = (0..<keys).map { _ in
            let column = UnsafeMutableBufferPointer<Double>.allocate(capacity: users)
            column.initialize(repeating: 0)
            return column
        }
        hitCounts = .allocate(capacity: users * cutoffs * 2)
        hitCounts.initialize(repeating: 0)
        repeatCounts = .allocate(capacity: users)
        repeatCounts.initialize(repeating: 0)
        nonFinite = .allocate(capacity: users)
        nonFinite.initialize(repeating: 0)
    }

    deinit {
        hitCounts.deallocate(); repeatCounts.deallocate(); nonFinite.deallocate()
        metricColumns.forEach { $0.deallocate() }
    }

    /// Records user u's value of metric column `key`.
    @inline(__always) func setMetric(_ u: Int, key: Int, _ value: Double) { metricColumns[key][u] = value }

    /// Records user u's hits and repeat hits at cutoff index c.
    @inline(__always) func setHits(_ u: Int, cutoff c: Int, all: Int, repeated: Int) {
        hitCounts[2 * (u * cutoffs + c)] = Int32(all)
        hitCounts[2 * (u * cutoffs + c) + 1] = Int32(repeated)
    }

    /// Records how many of user u's positives were in their history.
    @inline(__always) func setRepeats(_ u: Int, _ count: Int) { repeatCounts[u] = Int32(count) }

    /// Records that user u's scores held NaN or +∞.
    @inline(__always) func markNonFinite(_ u: Int) { nonFinite[u] = 1 }

    /// Rows whose scores held NaN or +∞, after ranking.
    var nonFiniteRows: Int { nonFinite.reduce(0) { $0 + Int($1) } }

    /// User u's (all hits, repeat hits) at cutoff index c.
    func hits(_ u: Int, cutoff c: Int) -> (all: Int, repeated: Int) {
        (Int(hitCounts[2 * (u * cutoffs + c)]), Int(hitCounts[2 * (u * cutoffs + c) + 1]))
    }

    /// Positives of user u that were in their history.
    func repeats(_ u: Int) -> Int { Int(repeatCounts[u]) }

    /// Metric column `key` as an array, after ranking.
    func metricColumn(_ key: Int) -> [Double] { Array(metricColumns[key]) }

    /// The mean of metric column `key` over its users (0 without users), after ranking.
    func mean(ofColumn key: Int) -> Double {
        metricColumns[key].isEmpty ? 0 : metricColumns[key].reduce(0, +) / Double(metricColumns[key].count)
    }
}
