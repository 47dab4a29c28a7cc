import RecBenchSupport
/// The interaction log, one entry per loaded row, with dense user and item ids.
public struct Interactions: Sendable, Equatable {
    /// Dense user id of each row.
    public var users: [Int32]
    /// Dense item id of each row.
    public var items: [Int32]
    /// Time of each row, when `TIME_FIELD` is loaded.
    public var timestamps: [Double]?
    /// Rating of each row, when `RATING_FIELD` is loaded.
    public var ratings: [Double]?
    /// For pre-split datasets: which file (0 train, 1 valid, 2 test) each row came from.
    public var parts: [UInt8]?
    /// Each row's label, when the data is labelled (`threshold`, or a `LABEL_FIELD` column): what
    /// labelled evaluation and a pointwise model trained without drawn negatives read.
    public var labels: [Float]?

    /// Number of rows.
    public var count: Int { users.count }

    /// An interaction log from its columns (all of equal length).
    public init(users: [Int32], items: [Int32], timestamps: [Double]?, ratings: [Double]?, parts: [UInt8]?, labels: [Float]? = nil) {
        precondition(users.count == items.count && labels.map { $0.count == users.count } != false, "Interactions: columns differ in length")
        self.users = users; self.items = items; self.timestamps = timestamps; self.ratings = ratings; self.parts = parts; self.labels = labels
    }

    /// Keeps the rows at `indices`, in that order.
    func selecting(_ indices: [Int]) -> Interactions {
        Interactions(
            users: indices.map { users[$0] }, items: indices.map { items[$0] },
            timestamps: timestamps.map { t in indices.map { t[$0] } },
            ratings: ratings.map { r in indices.map { r[$0] } },
            parts: parts.map { p in indices.map { p[$0] } }, labels: labels.map { l in indices.map { l[$0] } })
    }
}

/// A loaded and filtered dataset: dense ids (kept both ways), interactions, side files.
public struct Dataset: Sendable {
    /// The config's `dataset` name.
    public let name: String
    /// Original token of each dense user id.
    public let userTokens: [String]
    /// Original token of each dense item id.
    public let itemTokens: [String]
    /// Dense id of each user token.
    public let userIDs: [String: Int32]
    /// Dense id of each item token.
    public let itemIDs: [String: Int32]
    /// The interactions after filtering.
    public let interactions: Interactions
    /// The `.user` file, when loaded, and the dense user id of each of its rows (-1: dropped).
    public let userFeatures: (table: AtomicTable, ids: [Int32])?
    /// The `.item` file, when loaded, and the dense item id of each of its rows (-1: dropped).
    public let itemFeatures: (table: AtomicTable, ids: [Int32])?
    /// The files read, in order, with their SHA-256.
    public let files: [(path: String, sha256: String)]
    /// Whether the split came with the data (`benchmark_filename`).
    public var isPreSplit: Bool { interactions.parts != nil }
    /// Human-readable notes on what filtering did.
    public let filterLog: [String]
    /// What loading did that every run should say (interactions an incomplete side file dropped).
    public internal(set) var notices: [String] = []
    /// `unused_col`: columns per file suffix that were loaded (and may drive the split) but
    /// are no model input, as in RecBole.
    public internal(set) var unusedColumns: [String: [String]] = [:]
    /// The `.inter` column the timestamps came from (TIME_FIELD), when loaded.
    public internal(set) var timeField: String?
    /// The user id column (USER_ID_FIELD).
    public internal(set) var userField = "user_id"
    /// The item id column (ITEM_ID_FIELD).
    public internal(set) var itemField = "item_id"
    /// `numerical_features`: the float columns that are model inputs.
    public internal(set) var numericalFeatures: [String] = []

    /// Whether a model may read `column` of the `suffix` file (`inter`, `user`, `item`).
    public func isModelInput(_ column: String, of suffix: String) -> Bool {
        !(unusedColumns[suffix]?.contains(column) ?? false)
    }

    /// A dataset built in memory (generated data, converters); `files` records no file.
    public init(name: String, userTokens: [String], itemTokens: [String], interactions: Interactions) {
        self.init(name: name, userTokens: userTokens, itemTokens: itemTokens,
                  userIDs: Dictionary(uniqueKeysWithValues: userTokens.enumerated().map { ($1, Int32($0)) }),
                  itemIDs: Dictionary(uniqueKeysWithValues: itemTokens.enumerated().map { ($1, Int32($0)) }),
                  interactions: interactions, userFeatures: nil, itemFeatures: nil, files: [], filterLog: [])
    }

    init(name: String, userTokens: [String], itemTokens: [String], userIDs: [String: Int32], itemIDs: [String: Int32],
         interactions: Interactions, userFeatures: (table: AtomicTable, ids: [Int32])?, itemFeatures: (table: AtomicTable, ids: [Int32])?,
         files: [(path: String, sha256: String)], filterLog: [String]) {
        self.name = name; self.userTokens = userTokens; self.itemTokens = itemTokens
        self.userIDs = userIDs; self.itemIDs = itemIDs; self.interactions = interactions
        self.userFeatures = userFeatures; self.itemFeatures = itemFeatures; self.files = files; self.filterLog = filterLog
    }

    /// Number of users (dense ids are `0..<userCount`).
    public var userCount: Int { userTokens.count }
    /// Number of items (dense ids are `0..<itemCount`).
    public var itemCount: Int { itemTokens.count }

    /// SHA-256 over the loaded files' names and digests: same files, same fingerprint.
    public var fingerprint: String { Dataset.fingerprint(of: files) }

    /// The fingerprint of files with these digests (file names, not folders, count).
    public static func fingerprint(of files: [(path: String, sha256: String)]) -> String {
        var h = SHA256()
        for f in files {
            h.update(f.path.split(separator: "/").last.map(String.init) ?? f.path)
            h.update(":" + f.sha256 + "\n")
        }
        return h.hexDigest()
    }

    /// Users, items, interactions and sparsity, as reported before a run.
    public var statistics: DatasetStatistics {
        DatasetStatistics(users: userCount, items: itemCount, interactions: interactions.count)
    }
}

/// Size and density of a dataset.
public struct DatasetStatistics: Sendable, Codable, Equatable {
    public let users: Int
    public let items: Int
    public let interactions: Int
    /// 1 − interactions / (users × items), as RecBole reports it; never below 0 (repeat
    /// purchases can make interactions outnumber the cells).
    public var sparsity: Double {
        users * items == 0 ? 1 : max(0, 1 - Double(interactions) / (Double(users) * Double(items)))
    }

    enum CodingKeys: String, CodingKey { case users, items, interactions, sparsity }

    public init(users: Int, items: Int, interactions: Int) {
        self.users = users; self.items = items; self.interactions = interactions
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        users = try c.decode(Int.self, forKey: .users)
        items = try c.decode(Int.self, forKey: .items)
        interactions = try c.decode(Int.self, forKey: .interactions)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(users, forKey: .users)
        try c.encode(items, forKey: .items)
        try c.encode(interactions, forKey: .interactions)
        try c.encode(sparsity, forKey: .sparsity)
    }
}
