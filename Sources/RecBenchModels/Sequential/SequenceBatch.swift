import Linalg
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// A batch of input sequences in RecBole's layout: each row left-aligned (its first item at
/// position 0) and padded on the right with `padding` (the item count: one past the last
/// item id). The batch is as wide as its longest sequence: every model here reads a
/// position only from the positions before it or from unpadded ones, so the padding RecBole
/// carries up to `MAX_ITEM_LIST_LENGTH` changes no output.
public struct SequenceBatch: Sendable {
    /// `count × width` item ids, row-major.
    public let items: [Int32]
    /// The number of real items in each row (0: an empty sequence).
    public let lengths: [Int]
    /// The user of each row.
    public let users: [Int32]
    /// The item each row is to predict (training examples; nil for queries).
    public let targets: [Int32]?
    /// Positions per row.
    public let width: Int
    /// The padding id (the catalogue's size).
    public let padding: Int32

    /// Number of rows.
    public var count: Int { lengths.count }

    /// The last real item of each row (the padding id for an empty row).
    public var lastItems: [Int32] {
        (0..<count).map { r in lengths[r] > 0 ? items[r * width + lengths[r] - 1] : padding }
    }

    /// The item ids step by step: position 0 of every row, then position 1, … (the time-major
    /// layout recurrent layers read).
    public var timeMajorItems: [Int32] {
        var out = [Int32](repeating: padding, count: items.count)
        for r in 0..<count { for t in 0..<width { out[t * count + r] = items[r * width + t] } }
        return out
    }

    /// The packed layout transformers read: each row's real items one after another (an
    /// empty row keeps one padding position), their positions from 0, and each row's length
    /// in it.
    public var packed: (items: [Int32], positions: [Int32], lengths: [Int]) {
        var items: [Int32] = [], positions: [Int32] = []
        items.reserveCapacity(lengths.reduce(0, +))
        for r in 0..<count {
            let n = max(1, lengths[r])
            for t in 0..<n { items.append(t < lengths[r] ? self.items[r * width + t] : padding); positions.append(Int32(t)) }
        }
        return (items, positions, lengths.map { max(1, $0) })
    }

    /// The last row of each sequence of a packed layout with these lengths.
    public static func lastRows(_ lengths: [Int]) -> [Int32] {
        var end = 0
        return lengths.map { end += $0; return Int32(end - 1) }
    }

    /// The packed time-major layout a recurrent layer reads without computing padding
    /// (torch's `PackedSequence`): the rows ordered longest first (stably), step t holding
    /// position t of the `stepCounts[t]` rows that reach it; an empty row keeps one padding
    /// position. `lastRows[r]` is row r's last position in it, `timeMajorRows[t·count + r]`
    /// row r's position t (−1 past its end), both in the batch's own row order.
    public var stepPacking: (items: [Int32], stepCounts: [Int], lastRows: [Int32], timeMajorRows: [Int32]) {
        let lengths = self.lengths.map { max(1, $0) }
        let order = (0..<count).sorted { lengths[$0] != lengths[$1] ? lengths[$0] > lengths[$1] : $0 < $1 }
        let stepCounts = (0..<(lengths.max() ?? 0)).map { t in lengths.count { $0 > t } }
        var items: [Int32] = [], timeMajorRows = [Int32](repeating: -1, count: count * width), lastRows = [Int32](repeating: 0, count: count)
        items.reserveCapacity(stepCounts.reduce(0, +))
        for (t, n) in stepCounts.enumerated() {
            for r in order.prefix(n) {
                if t < width { timeMajorRows[t * count + r] = Int32(items.count) }
                if t == lengths[r] - 1 { lastRows[r] = Int32(items.count) }
                items.append(t < self.lengths[r] ? self.items[r * width + t] : padding)
            }
        }
        return (items, stepCounts, lastRows, timeMajorRows)
    }

    /// 1 at real positions and 0 at padding, time-major.
    public var timeMajorMask: [Float] {
        var out = [Float](repeating: 0, count: items.count)
        for r in 0..<count { for t in 0..<lengths[r] { out[t * count + r] = 1 } }
        return out
    }

    /// Each row's last real position in the time-major layout (position 0 for an empty row).
    public var lastTimeMajorRows: [Int32] { (0..<count).map { Int32(max(0, lengths[$0] - 1) * count + $0) } }

    /// Rows from (user, input window, target) triples.
    init(log: SequenceLog, users: [Int32], windows: [Range<Int>], targets: [Int32]?) {
        let width = max(1, windows.map(\.count).max() ?? 1)
        let padding = Int32(log.itemCount)
        var items = [Int32](repeating: padding, count: windows.count * width)
        for (r, window) in windows.enumerated() {
            for (t, p) in window.enumerated() { items[r * width + t] = log.items[p] }
        }
        self.items = items
        self.lengths = windows.map(\.count)
        self.users = users
        self.targets = targets
        self.width = width
        self.padding = padding
    }

    /// The training examples at log positions `examples`: each one's input is the user's
    /// latest `maxLength` items before it, its target its own item.
    public init(examples: some Collection<Int32>, of sequences: SequenceData) {
        let log = sequences.log
        let users = examples.map { log.users[Int($0)] }
        let windows = zip(examples, users).map { p, u in log.window(of: Int(u), endingAt: Int(p), maxLength: sequences.maxLength) }
        self.init(log: log, users: users, windows: windows, targets: examples.map { log.items[Int($0)] })
    }

    /// The same rows padded to `width` positions (at least the batch's own width): a model
    /// that reads padding (STAMP's mean over RecBole's `MAX_ITEM_LIST_LENGTH` positions).
    public func padded(to width: Int) -> SequenceBatch {
        guard width > self.width else { return self }
        var items = [Int32](repeating: padding, count: count * width)
        for r in 0..<count { for t in 0..<lengths[r] { items[r * width + t] = self.items[r * self.width + t] } }
        return SequenceBatch(items: items, lengths: lengths, users: users, targets: targets, width: width, padding: padding)
    }

    private init(items: [Int32], lengths: [Int], users: [Int32], targets: [Int32]?, width: Int, padding: Int32) {
        self.items = items; self.lengths = lengths; self.users = users; self.targets = targets; self.width = width; self.padding = padding
    }

    /// Rows given item by item (a hand-made batch), with no users or targets.
    public init(rows: [[Int32]], padding: Int32) {
        let width = max(1, rows.map(\.count).max() ?? 1)
        self.init(items: rows.flatMap { $0 + [Int32](repeating: padding, count: width - $0.count) }, lengths: rows.map(\.count),
                  users: [Int32](repeating: 0, count: rows.count), targets: nil, width: width, padding: padding)
    }

    /// The rows `rows` of `queries`.
    public init(rows: ArraySlice<Int32>, of queries: SequenceQueries) {
        self.init(log: queries.sequences.log, users: rows.map { queries.users[Int($0)] },
                  windows: rows.map { queries.window(Int($0)) }, targets: nil)
    }
}
