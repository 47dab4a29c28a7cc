import RecBenchSupport
import RecBenchData
import RecBenchContract

/// Which ranked items a row had before: for a user row, the items of the user's earlier splits (the history the mask
/// reads); for a next-item example, the items earlier in the user's log than the example (its history is not its past:
/// it holds at most the example's own target). What `history_share@K` counts and the lists' `before` column says.
public enum PastItems {
    /// flags[slot · width + r]: whether item `topItems[slot · width + r]` came before row `target.users[slot]` (false
    /// for padding). A next-item target's rows come grouped by user (log order), so each user's log is read once.
    public static func flags(topItems: [Int32], width: Int, target: EvaluationTarget) -> [Bool] {
        var flags = [Bool](repeating: false, count: topItems.count)
        guard target.evaluationProtocol == .nextItem, let queries = target.queries else {
            for slot in target.users.indices {
                let row = Int(target.users[slot])
                for r in 0..<width where topItems[slot * width + r] >= 0 {
                    flags[slot * width + r] = target.history.contains(row: row, column: Int(topItems[slot * width + r]))
                }
            }
            return flags
        }
        let log = queries.sequences.log
        var user = -1, first: [Int32: Int] = [:]   // the current user's first position of each item
        for slot in target.users.indices {
            let row = Int(target.users[slot]), u = Int(queries.users[row]), end = Int(queries.ends[row])
            if u != user {
                user = u
                first.removeAll(keepingCapacity: true)
                for p in (log.userStarts[u] ..< log.userStarts[u + 1]).reversed() { first[log.items[p]] = p }
            }
            for r in 0..<width where topItems[slot * width + r] >= 0 {
                flags[slot * width + r] = first[topItems[slot * width + r]].map { $0 < end } ?? false
            }
        }
        return flags
    }
}
