/// Every evaluated user's outcome in flat buffers that the ranking workers fill at disjoint
/// rows: the top-K list, the per-user metric values (one column per key), and per cutoff the
/// hits and the hits on earlier items. About 200 bytes per user and no allocation per user,
/// so evaluation memory is one block of scores plus this, whatever the user count; the
/// result's arrays are taken out one at a time, each buffer freed as soon as it is copied.
final class RankingTable: @unchecked Sendable {
    let users: Int, width: Int, cutoffs: Int
    /// Row u: user u's ranked items, padded with -1.
    private var top: UnsafeMutableBufferPointer<Int32>
    /// One column per ranking-metric key, each `users` long.
    private var metricColumns: [UnsafeMutableBufferPointer<Double>]
    /// Row u, cutoff c: (all hits, repeat hits) at [2 · (u · cutoffs + c)].
    private let hitCounts: UnsafeMutableBufferPointer<Int32>
    /// Positives of user u that were in their history.
    private let repeatCounts: UnsafeMutableBufferPointer<Int32>

    /// A table for `users` users, lists of `width`, `keys` metric columns, `cutoffs` cutoffs.
    init(users: Int, width: Int, keys: Int, cutoffs: Int) {
        self.users = users; self.width = width; self.cutoffs = cutoffs
        top = .allocate(capacity: users * width)
        top.initialize(repeating: -1)
        metricColumns = (0..<keys).map { _ in
            let column = UnsafeMutableBufferPointer<Double>.allocate(capacity: users)
            column.initialize(repeating: 0)
            return column
        }
        hitCounts = .allocate(capacity: users * cutoffs * 2)
        hitCounts.initialize(repeating: 0)
        repeatCounts = .allocate(capacity: users)
        repeatCounts.initialize(repeating: 0)
    }

    deinit {
        // Taken buffers are empty (nil base), for which deallocate does nothing.
        top.deallocate(); hitCounts.deallocate(); repeatCounts.deallocate()
        metricColumns.forEach { $0.deallocate() }
    }

    /// Row u of the top-K lists, for the worker that ranks user u.
    func topRow(_ u: Int) -> UnsafeMutableBufferPointer<Int32> {
        UnsafeMutableBufferPointer(rebasing: top[u * width ..< (u + 1) * width])
    }

    /// Records user u's metric values (in key order), hit counts per cutoff and repeats.
    func record(_ u: Int, metrics: [Double], hits: [(all: Int, repeated: Int)], repeats: Int) {
        for (key, value) in metrics.enumerated() { metricColumns[key][u] = value }
        for (c, h) in hits.enumerated() {
            hitCounts[2 * (u * cutoffs + c)] = Int32(h.all)
            hitCounts[2 * (u * cutoffs + c) + 1] = Int32(h.repeated)
        }
        repeatCounts[u] = Int32(repeats)
    }

    /// User u's (all hits, repeat hits) at cutoff index c.
    func hits(_ u: Int, cutoff c: Int) -> (all: Int, repeated: Int) {
        (Int(hitCounts[2 * (u * cutoffs + c)]), Int(hitCounts[2 * (u * cutoffs + c) + 1]))
    }

    /// Positives of user u that were in their history.
    func repeats(_ u: Int) -> Int { Int(repeatCounts[u]) }

    /// The top-K lists as one array, `users × width`; call once, after ranking.
    func takeTopItems() -> [Int32] {
        defer { top.deallocate(); top = UnsafeMutableBufferPointer(start: nil, count: 0) }
        return Array(top)
    }

    /// Metric column `key` as an array; call once per key, after ranking.
    func takeMetricColumn(_ key: Int) -> [Double] {
        defer { metricColumns[key].deallocate(); metricColumns[key] = UnsafeMutableBufferPointer(start: nil, count: 0) }
        return Array(metricColumns[key])
    }
}
