import Linalg
import RecBenchSupport

/// How interactions are ordered before the cut.
public enum SplitOrder: String, Sendable {
    /// By time, stable for equal timestamps (file order).
    case time = "TO"
    /// Shuffled with the run's seed.
    case random = "RO"
}

/// How the ordered interactions are cut into train / valid / test (each user's, or the whole log's).
public enum SplitStrategy: Sendable, Equatable {
    /// RecBole's `RS`: by ratio per user, every part but the first rounded down, with small
    /// users topped up (`_calcu_split_ids`). Two ratios mean train / test. With `group_by:
    /// none`, the same cut over the whole log at once.
    case ratio([Double])
    /// RecBole's `LS`: the last interaction(s) go to test (and valid).
    case leaveOneOut(validAndTest: Bool)
    /// RecBole 1.2.1's `TS` (three ratios): test is every interaction after one time for all
    /// users, the percentile 1 − test ratio of all timestamps; each user's earlier
    /// interactions are cut into train and valid as train : valid.
    case timeBoundary([Double])
}

/// Whether a ratio split cuts each user's history or the whole log (`eval_args.group_by`).
public enum SplitGrouping: String, Sendable {
    case user
    /// RecBole's `group_by: none` (or `~`): the log in one order, cut once, so test holds the
    /// latest interactions of the whole log (under TO), whoever made them.
    case none
}

/// The split part of each interaction.
public enum SplitPart: UInt8, Sendable, CaseIterable, Codable {
    case train = 0, valid = 1, test = 2

    /// "train", "valid" or "test".
    public var name: String { ["train", "valid", "test"][Int(rawValue)] }
}

/// The protocol's split: `eval_args.order`, `eval_args.split`, `eval_args.group_by`.
public struct SplitSettings: Sendable, Equatable {
    public var order: SplitOrder
    public var strategy: SplitStrategy
    public var seed: UInt64
    /// Read by `RS` only: RecBole's `LS` and `TS` always group by user.
    public var grouping = SplitGrouping.user

    /// Whether the split asks for a valid part (three ratios, or leave-one-out for valid and test).
    public var hasValidPart: Bool {
        switch strategy {
        case .ratio(let ratios), .timeBoundary(let ratios): return ratios.count == 3 && ratios[1] > 0
        case .leaveOneOut(let validAndTest): return validAndTest
        }
    }

    /// Whether each user's history is cut on its own by counts (RS grouped by user, or LS): what the
    /// next-item protocol's per-user example split needs.
    public var cutsEachUser: Bool {
        switch strategy {
        case .ratio: return grouping == .user
        case .leaveOneOut: return true
        case .timeBoundary: return false
        }
    }

    /// A split description.
    public init(order: SplitOrder, strategy: SplitStrategy, seed: UInt64, grouping: SplitGrouping = .user) {
        self.order = order; self.strategy = strategy; self.seed = seed; self.grouping = grouping
    }

    /// `eval_args.group_by`: absent or `user`, or RecBole's ungrouped `~` / `none`.
    static func grouping(_ value: ConfigValue?, origin: String) throws -> SplitGrouping {
        switch value {
        case nil, .string("user")?: return .user
        case .null?: return .none
        case .string(let name)? where name.lowercased() == "none": return .none   // RecBole lower-cases it
        case let group?: throw RecBenchError.config("eval_args.group_by", origin: origin, "expected user or none, got \(group)")
        }
    }

    /// Reads `eval_args` and `seed`.
    public init(_ config: Config) throws {
        let origin = config.origin(of: "eval_args")
        guard case .map(let args) = config["eval_args"] else { throw config.typeError("eval_args", "a map") }
        let known = ["split", "order", "group_by", "mode"]
        for key in args.keys where !known.contains(key) {
            throw RecBenchError.config("eval_args.\(key)", origin: origin, "unknown entry\(Suggestion.hint(for: key, in: known))")
        }
        grouping = try Self.grouping(args["group_by"], origin: origin)
        // `mode` is the evaluation's (`EvaluationSettings.rankingModes`, read and checked there, before the split).
        guard let order = SplitOrder(rawValue: args["order"].map { $0.stringValue ?? "\($0)" } ?? "RO") else {
            throw RecBenchError.config("eval_args.order", origin: origin, "expected TO or RO, got \(args["order"]!)")
        }
        guard case .map(let split)? = args["split"], split.count == 1, let (kind, value) = split.first else {
            throw RecBenchError.config("eval_args.split", origin: origin, "expected {RS: [0.8, 0.1, 0.1]} or {LS: valid_and_test}")
        }
        switch kind {
        case "RS":
            guard case .list(let items) = value, let ratios = Optional(items.compactMap(\.doubleValue)),
                  ratios.count == items.count, ratios.count == 2 || ratios.count == 3,
                  ratios.allSatisfy({ $0 >= 0 }), ratios.reduce(0, +) > 0 else {
                throw RecBenchError.config("eval_args.split.RS", origin: origin, "expected 2 or 3 non-negative ratios, got \(value)")
            }
            strategy = .ratio(ratios)
        case "TS":
            // RecBole reads a third ratio (the test share) and divides by 1 − it: three ratios, test below the whole.
            guard case .list(let items) = value, let ratios = Optional(items.compactMap(\.doubleValue)), ratios.count == items.count,
                  ratios.count == 3, ratios.allSatisfy({ $0 >= 0 }), ratios[0] > 0, ratios[2] < ratios.reduce(0, +) else {
                throw RecBenchError.config("eval_args.split.TS", origin: origin,
                                           "expected 3 non-negative ratios (train, valid, test; train above 0), got \(value)")
            }
            guard args["order"]?.stringValue == "TO" else {
                throw RecBenchError.config("eval_args.order", origin: origin, "TS cuts by time: set order: TO")
            }
            strategy = .timeBoundary(ratios)
        case "LS":
            switch value.stringValue {
            case "valid_and_test": strategy = .leaveOneOut(validAndTest: true)
            case "test_only": strategy = .leaveOneOut(validAndTest: false)
            default:
                throw RecBenchError.config("eval_args.split.LS", origin: origin, "expected valid_and_test or test_only, got \(value)")
            }
        default:
            throw RecBenchError.config("eval_args.split", origin: origin, "unknown split '\(kind)' (expected RS, LS or TS)")
        }
        self.order = order
        self.seed = UInt64(bitPattern: Int64(try config.int("seed")))
    }
}

/// Splits interactions: per user, over the whole log (`group_by: none`), or at a time (`TS`).
public enum Splitter {
    /// The part of each interaction. Pre-split datasets keep their files' parts.
    public static func split(_ interactions: Interactions, userCount: Int, settings: SplitSettings) throws -> [SplitPart] {
        if let parts = interactions.parts { return parts.map { SplitPart(rawValue: $0)! } }
        // Rows in the order the split walks them: file order (TO, sorted per user below) or
        // one seeded shuffle of every row (RO).
        var order = Array(0..<interactions.count)
        var times: [Double] = []
        switch settings.order {
        case .time:
            guard let t = interactions.timestamps else {
                throw RecBenchError.config("eval_args.order", "is TO but no time column is loaded: add TIME_FIELD to load_col.inter, or use order: RO")
            }
            times = t
        case .random:
            var rng = SeededGenerator(seed: settings.seed, stream: 0x5B17)
            order.shuffle(using: &rng)
        }
        let (grouped, starts): (rows: [Int], starts: [Int])
        if case .ratio = settings.strategy, settings.grouping == .none {
            // The whole log as one group, by (time, row) under TO: numpy's stable sort of the file's rows.
            if !times.isEmpty { order.sort { (times[$0], $0) < (times[$1], $1) } }
            (grouped, starts) = (order, [0, order.count])
        } else {
            (grouped, starts) = byUser(order, interactions: interactions, userCount: userCount, times: times)
        }
        if case .timeBoundary(let ratios) = settings.strategy {
            guard !times.isEmpty || interactions.count == 0 else {   // SplitSettings(config) refuses TS under RO already
                throw RecBenchError.config("eval_args.order", "TS cuts by time: set order: TO")
            }
            return atTimeBoundary(grouped, starts: starts, times: times, ratios: ratios)
        }
        var parts = [SplitPart](repeating: .train, count: interactions.count)
        for g in 0..<(starts.count - 1) {   // each user's rows, or the whole log's
            let rows = grouped[starts[g]..<starts[g + 1]]
            let counts = partCounts(total: rows.count, strategy: settings.strategy)
            var position = rows.startIndex
            for (part, n) in zip([SplitPart.train, .valid, .test], counts) {
                for _ in 0..<n { parts[rows[position]] = part; position += 1 }
            }
        }
        return parts
    }

    /// `order`'s rows grouped by user (a counting sort that keeps `order` within each user), each
    /// user's rows by (time, row) when there are times; and where each user's rows start.
    static func byUser(_ order: [Int], interactions: Interactions, userCount: Int, times: [Double]) -> (rows: [Int], starts: [Int]) {
        var starts = [Int](repeating: 0, count: userCount + 1)
        for u in interactions.users { starts[Int(u) + 1] += 1 }
        for u in 0..<userCount { starts[u + 1] += starts[u] }
        var next = starts
        var grouped = [Int](repeating: 0, count: order.count)
        for r in order {
            let u = Int(interactions.users[r])
            grouped[next[u]] = r
            next[u] += 1
        }
        // TO: each user's rows by time, ties in file order (the index is part of the key) —
        // the order a global sort by (time, row) gives, at the cost of many small sorts.
        if !times.isEmpty {
            for u in 0..<userCount { grouped[starts[u]..<starts[u + 1]].sort { (times[$0], $0) < (times[$1], $1) } }
        }
        return (grouped, starts)
    }

    /// RecBole 1.2.1's `TS`: test is every row after the boundary (numpy's linear percentile
    /// 100 · (1 − test share) of all timestamps); of each user's rows up to it, in time order,
    /// the first ⌊n · train / (train + valid)⌋ are train and the rest valid.
    /// RecBole compares its float32 times with the boundary in float32; recbench's times are exact and compared as doubles.
    static func atTimeBoundary(_ grouped: [Int], starts: [Int], times: [Double], ratios raw: [Double]) -> [SplitPart] {
        guard !times.isEmpty else { return [] }
        let total = raw.reduce(0, +)
        let ratios = raw.map { $0 / total }
        let boundary = percentile(times, 100 * (1 - ratios[2]))
        var parts = [SplitPart](repeating: .test, count: times.count)
        for u in 0..<(starts.count - 1) {
            let rows = grouped[starts[u]..<starts[u + 1]]
            let before = rows.prefix { times[$0] <= boundary }
            let cut = Int((Double(before.count) * (ratios[0] / (1 - ratios[2]))).rounded(.towardZero))
            for (k, row) in before.enumerated() { parts[row] = k < cut ? .train : .valid }
        }
        return parts
    }

    /// numpy's `percentile(values, q)` with its default linear method, bit for bit: the sorted
    /// values at (n − 1) · q / 100, interpolated as its `_lerp` does (from the upper end past halfway).
    /// NaN for no values.
    public static func percentile(_ values: [Double], _ q: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        let index = Double(sorted.count - 1) * (q / 100)
        let lower = Int(index.rounded(.down)), upper = min(lower + 1, sorted.count - 1)
        let gamma = index - Double(lower), a = sorted[lower], b = sorted[upper], difference = b - a
        return gamma >= 0.5 ? b - difference * (1 - gamma) : a + difference * gamma
    }

    /// How many of a user's `total` rows go to train, valid and test.
    public static func partCounts(total: Int, strategy: SplitStrategy) -> [Int] {
        switch strategy {
        case .ratio(let raw):
            // RecBole normalises ratios, floors every part but the first, then moves one row
            // from train to each later part whose share is in (0, 1), while train keeps > 1.
            let sum = raw.reduce(0, +)
            let ratios = raw.map { $0 / sum }
            var cnt = ratios.map { Int(($0 * Double(total)).rounded(.towardZero)) }
            cnt[0] = total - cnt.dropFirst().reduce(0, +)
            for i in 1..<ratios.count {
                if cnt[0] <= 1 { break }
                let share = ratios[ratios.count - i] * Double(total)
                if share > 0 && share < 1 {
                    cnt[ratios.count - i] += 1
                    cnt[0] -= 1
                }
            }
            return ratios.count == 3 ? cnt : [cnt[0], 0, cnt[1]]
        case .leaveOneOut(let validAndTest):
            let leave = min(validAndTest ? 2 : 1, max(0, total - 1))
            if !validAndTest { return [total - leave, 0, leave] }
            // With two or more rows to leave, valid then test get one each; with one, test.
            return leave == 2 ? [total - 2, 1, 1] : [total - leave, 0, leave]
        case .timeBoundary(let ratios):
            // TS cuts at a time, not by counts (`atTimeBoundary`); as counts it is its ratios' RS cut.
            return partCounts(total: total, strategy: .ratio(ratios))
        }
    }
}

/// The split as matrices: what models train on and what each evaluation needs.
public struct SplitData: Sendable {
    /// Number of users and items (the whole catalogue is ranked).
    public let userCount: Int, itemCount: Int
    /// users × items, the count of train rows per pair (duplicates summed, as RecBole does).
    public let trainMatrix: SparseMatrix
    /// users × items, 1 where the pair occurs in valid.
    public let validMatrix: SparseMatrix
    /// users × items, 1 where the pair occurs in test.
    public let testMatrix: SparseMatrix
    /// Rows per part: train, valid, test.
    public let sizes: [SplitPart: Int]
    /// SHA-256 over each row's part and (user, item) tokens: the same split, the same value.
    public let fingerprint: String
    /// The part of each interaction (kept to list train rows on demand).
    public let parts: [SplitPart]
    /// The timestamps, when loaded (the order of `trainRowsInTimeOrder`).
    let timestamps: [Double]?

    /// Builds the matrices of `parts` over `dataset`.
    public init(dataset: Dataset, parts: [SplitPart]) {
        let inter = dataset.interactions
        let userCount = dataset.userCount, itemCount = dataset.itemCount
        // The fingerprint hashes every row (seconds on 20M rows): on a second thread while
        // the matrices are built.
        let hashing = Background { SplitData.fingerprint(dataset: dataset, parts: parts) }
        self.userCount = userCount
        self.itemCount = itemCount
        func matrix(_ part: SplitPart, binary: Bool) -> SparseMatrix {
            var rows = [Int32](), cols = [Int32]()
            for r in 0..<inter.count where parts[r] == part { rows.append(inter.users[r]); cols.append(inter.items[r]) }
            let m = SparseMatrix(rows: userCount, columns: itemCount, rowIndices: rows, columnIndices: cols)
            return binary ? m.binarized() : m
        }
        trainMatrix = matrix(.train, binary: false)
        validMatrix = matrix(.valid, binary: true)
        testMatrix = matrix(.test, binary: true)
        var sizes: [SplitPart: Int] = [.train: 0, .valid: 0, .test: 0]
        for p in parts { sizes[p, default: 0] += 1 }
        self.sizes = sizes
        fingerprint = hashing.value()
        self.parts = parts
        timestamps = inter.timestamps
    }

    /// SHA-256 of "part<TAB>user<TAB>item<LF>" per row, fed as bytes without building a
    /// string per row.
    static func fingerprint(dataset: Dataset, parts: [SplitPart]) -> String {
        let inter = dataset.interactions
        var h = SHA256()
        var line: [UInt8] = []
        for r in 0..<inter.count {
            line.removeAll(keepingCapacity: true)
            line.append(48 + parts[r].rawValue); line.append(9)   // the part as a decimal digit
            line.append(contentsOf: dataset.userTokens[Int(inter.users[r])].utf8); line.append(9)
            line.append(contentsOf: dataset.itemTokens[Int(inter.items[r])].utf8); line.append(10)
            h.update(line)
        }
        return h.hexDigest()
    }

    /// Train rows (indices into the dataset's interactions), in time order when known (ties
    /// in file order). Sorted on each call: only the models that walk rows in order ask.
    public func trainRowsInTimeOrder() -> [Int] {
        var train = parts.indices.filter { parts[$0] == .train }
        if let t = timestamps { train.sort { (t[$0], $0) < (t[$1], $1) } }
        return train
    }
}
