import RecBenchSupport
import RecBenchData
import RecBenchContract
/// Purchase sessions (baskets) from the train interactions, for session-based models.
///
/// A user's train interactions, in time order (stable on equal times), are cut into
/// maximal runs in which each interaction is at most `gap` seconds after the previous one
/// (`gap: 0` joins only equal timestamps: one basket per checkout). Items are de-duplicated
/// inside a session (first occurrence kept). Sessions with fewer than two distinct items
/// give no (item, context) pair and are dropped.
public enum Sessions {
    /// The sessions of every user, users in id order, each session in time order.
    /// - Parameters:
    ///   - rows: the train rows (indices into `users` / `items` / `timestamps`).
    ///   - timestamps: interaction times; nil when the data has none or they are no model
    ///     input: then each user's whole train history, in row order, is one session.
    ///   - gap: the largest gap inside a session, in seconds (nil: no cut).
    public static func build(users: [Int32], items: [Int32], timestamps: [Double]?, rows: [Int],
                             userCount: Int, gap: Double?) -> [[Int32]] {
        var byUser = [[Int]](repeating: [], count: userCount)
        for r in rows { byUser[Int(users[r])].append(r) }
        var sessions: [[Int32]] = []
        for var history in byUser where history.count >= 2 {
            if let times = timestamps {
                // Stable: equal times keep row order.
                history = history.enumerated().sorted { (times[$0.element], $0.offset) < (times[$1.element], $1.offset) }.map(\.element)
            }
            var current: [Int32] = [], seen = Set<Int32>()
            var previous = -Double.infinity
            for r in history {
                let t = timestamps?[r] ?? 0
                if let gap, let _ = timestamps, !current.isEmpty, t - previous > gap {
                    if current.count >= 2 { sessions.append(current) }
                    current.removeAll(keepingCapacity: true); seen.removeAll(keepingCapacity: true)
                }
                previous = t
                if seen.insert(items[r]).inserted { current.append(items[r]) }
            }
            if current.count >= 2 { sessions.append(current) }
        }
        return sessions
    }

    /// (centre, context) pairs one session gives per epoch: every ordered pair of distinct
    /// positions, or with `window` > 0 those at most `window` positions apart.
    public static func pairCount(sessionLength n: Int, window: Int) -> Int {
        guard window > 0 && window < n - 1 else { return n * (n - 1) }
        // Each unordered pair at distance δ ≤ window counts twice; there are n − δ of them.
        return 2 * (1...window).reduce(0) { $0 + (n - $1) }
    }
}
