import Linalg
import RecBenchSupport

/// How interactions are ordered before the per-user cut.
public enum SplitOrder: String, Sendable {
    /// By time, stable for equal timestamps (file order).
    case time = "TO"
    /// Shuffled with the run's seed.
    case random = "RO"
}

/// How each user's ordered interactions are cut into train / valid / test.
public enum SplitStrategy: Sendable, Equatable {
    /// RecBole's `RS`: by ratio per user, every part but the first rounded down, with small
    /// users topped up (`_calcu_split_ids`). Two ratios mean train / test.
    case ratio([Double])
    /// RecBole's `LS`: the last interaction(s) go to test (and valid).
    case leaveOneOut(validAndTest: Bool)
}

/// The split part of each interaction.
public enum SplitPart: UInt8, Sendable, CaseIterable, Codable {
    case train = 0, valid = 1, test = 2

    /// "train", "valid" or "test".
    public var name: String { ["train", "valid", "test"][Int(rawValue)] }
}

/// The protocol's split: `eval_args.order`, `eval_args.split`, grouped by user.
public struct SplitSettings: Sendable, Equatable {
    public var order: SplitOrder
    public var strategy: SplitStrategy
    public var seed: UInt64

    /// Whether the split asks for a valid part (three ratios, or leave-one-out for valid and test).
    public var hasValidPart: Bool {
        switch strategy {
        case .ratio(let ratios): return ratios.count == 3 && ratios[1] > 0
        case .leaveOneOut(let validAndTest): return validAndTest
        }
    }

    /// A split description.
    public init(order: SplitOrder, strategy: SplitStrategy, seed: UInt64) {
        self.order = order; self.strategy = strategy; self.seed = seed
    }

    /// Reads `eval_args` and `seed`.
    public init(_ config: Config) throws {
        let origin = config.origin(of: "eval_args")
        guard case .map(let args) = config["eval_args"] else { throw config.typeError("eval_args", "a map") }
        let known = ["split", "order", "group_by", "mode"]
        for key in args.keys where !known.contains(key) {
            throw RecBenchError.config("eval_args.\(key)", origin: origin, "unknown entry\(Suggestion.hint(for: key, in: known))")
        }
        if let group = args["group_by"], group.stringValue != "user" {
            throw RecBenchError.config("eval_args.group_by", origin: origin, group == .null
                ? "~ splits all interactions together, ungrouped, in RecBole; recbench splits each user's history: use group_by: user"
                : "only `user` is supported, got \(group)")
        }
        // `mode: full`, or RecBole 1.2's per-split form `{valid: full, test: full}`.
        let isFull: Bool
        switch args["mode"] {
        case nil: isFull = true
        case .string(let s)?: isFull = s == "full"
        case .map(let perSplit)?: isFull = perSplit.values.allSatisfy { $0.stringValue == "full" }
        default: isFull = false
        }
        guard isFull else {
            throw RecBenchError.config("eval_args.mode", origin: origin, "only `full` ranking is supported, got \(args["mode"]!)")
        }
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
        case "LS":
            switch value.stringValue {
            case "valid_and_test": strategy = .leaveOneOut(validAndTest: true)
            case "test_only": strategy = .leaveOneOut(validAndTest: false)
            default:
                throw RecBenchError.config("eval_args.split.LS", origin: origin, "expected valid_and_test or test_only, got \(value)")
            }
        default:
            throw RecBenchError.config("eval_args.split", origin: origin, "unknown split '\(kind)' (expected RS or LS)")
        }
        self.order = order
        self.seed = UInt64(bitPattern: Int64(try config.int("seed")))
    }
}

/// Splits interactions per user.
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
        // Group by user, keeping that order within each user (a counting sort).
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
        var parts = [SplitPart](repeating: .train, count: interactions.count)
        for u in 0..<userCount {
            let rows = grouped[starts[u]..<starts[u + 1]]
            let counts = partCounts(total: rows.count, strategy: settings.strategy)
            var position = rows.startIndex
            for (part, n) in zip([SplitPart.train, .valid, .test], counts) {
                for _ in 0..<n { parts[rows[position]] = part; position += 1 }
            }
        }
        return parts
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
