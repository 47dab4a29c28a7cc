import RecBenchSupport

/// Every user's interactions in time order (equal times in file order), with the split part
/// of each position: what sequential models read. An example or a query is a position in
/// this log, never a copied prefix: the input of the example at position `p` is the
/// user's items before `p` (at most `MAX_ITEM_LIST_LENGTH` of them, the latest), its
/// target the item at `p`. So an example costs one 32-bit position beside the log's
/// 9 bytes per interaction (item, user, part).
public struct SequenceLog: Sendable {
    /// The item at each position, users one after another.
    public let items: [Int32]
    /// The user of each position.
    public let users: [Int32]
    /// User `u`'s positions are `userStarts[u] ..< userStarts[u + 1]`.
    public let userStarts: [Int]
    /// The split part of each position.
    public let parts: [SplitPart]
    /// The interaction row (index into the dataset's interactions) at each position.
    public let rows: [Int32]
    /// Number of items in the catalogue (ids `0 ..< itemCount`).
    public let itemCount: Int

    /// Number of users.
    public var userCount: Int { userStarts.count - 1 }

    /// The log of `interactions`, with the part of each interaction row from `parts`
    /// (indexed by row). Without timestamps (a pre-split log) the file order is the time order.
    public init(_ interactions: Interactions, userCount: Int, itemCount: Int, parts: [SplitPart]) {
        let order = SequenceLog.timeOrder(interactions, userCount: userCount)
        self.init(interactions, order: order, userCount: userCount, itemCount: itemCount) { parts[$0] }
    }

    /// The log with the positions' parts given by `part(row)`.
    init(_ interactions: Interactions, order: (rows: [Int32], starts: [Int]), userCount: Int, itemCount: Int,
         part: (Int) -> SplitPart) {
        rows = order.rows
        userStarts = order.starts
        items = order.rows.map { interactions.items[Int($0)] }
        users = order.rows.map { interactions.users[Int($0)] }
        parts = order.rows.map { part(Int($0)) }
        self.itemCount = itemCount
    }

    /// The interaction rows grouped by user (a counting sort), each user's rows by time with
    /// ties in file order: RecBole's stable sort by (user, time).
    static func timeOrder(_ interactions: Interactions, userCount: Int) -> (rows: [Int32], starts: [Int]) {
        var starts = [Int](repeating: 0, count: userCount + 1)
        for u in interactions.users { starts[Int(u) + 1] += 1 }
        for u in 0..<userCount { starts[u + 1] += starts[u] }
        var next = starts
        var rows = [Int32](repeating: 0, count: interactions.count)
        for r in 0..<interactions.count {
            let u = Int(interactions.users[r])
            rows[next[u]] = Int32(r)
            next[u] += 1
        }
        if let times = interactions.timestamps {
            for u in 0..<userCount where starts[u + 1] - starts[u] > 1 {
                rows[starts[u]..<starts[u + 1]].sort { (times[Int($0)], $0) < (times[Int($1)], $1) }
            }
        }
        return (rows, starts)
    }

    /// Whether position `p` is an example: every position but a user's first.
    public func isExample(_ p: Int) -> Bool { p != userStarts[Int(users[p])] }

    /// The positions that are examples of `part`, in log order.
    public func examples(of part: SplitPart) -> [Int32] {
        var found: [Int32] = []
        for p in 0..<items.count where parts[p] == part && isExample(p) { found.append(Int32(p)) }
        return found
    }

    /// The first position of `part` or a later part of user `u` (the end of the user's
    /// sequence before that part).
    public func end(of u: Int, before part: SplitPart) -> Int {
        var p = userStarts[u]
        while p < userStarts[u + 1] && parts[p].rawValue < part.rawValue { p += 1 }
        return p
    }

    /// User `u`'s input window ending (exclusively) at position `end`: the user's latest
    /// `maxLength` positions before it.
    public func window(of u: Int, endingAt end: Int, maxLength: Int) -> Range<Int> {
        max(userStarts[u], end - maxLength)..<end
    }
}

/// RecBole's next-item split: per user, the examples (every interaction after the first)
/// are cut by `eval_args` like a general model's interactions; the first interaction is
/// input only (train). A pre-split dataset keeps each example's file.
public enum SequenceSplitter {
    /// Why a split across users (`group_by: none`, `TS`) is refused here.
    public static let cutsEachUserOnly = "group_by: none and TS cut the log at one time or position for all users, and recbench's "
        + "next-item split cuts each user's examples: use RS or LS with group_by: user (or eval_protocol: user)"

    /// The part of each interaction row.
    public static func split(_ interactions: Interactions, userCount: Int, settings: SplitSettings) throws -> [SplitPart] {
        guard settings.order == .time else {
            throw RecBenchError.config("eval_args.order",
                                       "is RO, but sequential evaluation needs the interactions in time order: use order: TO (RecBole refuses RO too)")
        }
        if let parts = interactions.parts { return parts.map { SplitPart(rawValue: $0)! } }
        guard settings.cutsEachUser else { throw RecBenchError.config("eval_args", cutsEachUserOnly) }
        guard interactions.timestamps != nil else {   // file order would stand in for time without a word
            throw RecBenchError.config("eval_args.order", "is TO but no time column is loaded: add TIME_FIELD to load_col.inter "
                                       + "(RecBole's sequential dataset sorts each user's items by it)")
        }
        let (rows, starts) = SequenceLog.timeOrder(interactions, userCount: userCount)
        var parts = [SplitPart](repeating: .train, count: interactions.count)
        for u in 0..<userCount where starts[u + 1] - starts[u] > 1 {
            let counts = Splitter.partCounts(total: starts[u + 1] - starts[u] - 1, strategy: settings.strategy)
            var p = starts[u] + 1
            for (part, n) in zip([SplitPart.train, .valid, .test], counts) {
                for _ in 0..<n { parts[Int(rows[p])] = part; p += 1 }
            }
        }
        return parts
    }
}
