import RecBenchSupport
/// Everything that decides which rows are loaded and kept.
public struct DataSettings: Sendable, Hashable {
    /// How duplicate (user, item) rows are treated.
    public enum DuplicatePolicy: String, Sendable { case first, last }

    public var dataset: String
    public var dataPath: String
    /// The folder of the config file that set a relative `data_path`: where the data is
    /// looked for when the working folder does not have it (nil: set elsewhere, or absolute).
    public var configFolder: String?
    public var benchmarkFilenames: [String]?
    public var fieldSeparator: String
    public var sequenceSeparator: String
    public var userField: String
    public var itemField: String
    /// `LIST_SUFFIX`: `{itemField}{listSuffix}` names RecBole's pre-expanded example column.
    public var listSuffix: String
    public var ratingField: String?
    public var timeField: String?
    /// `LABEL_FIELD`: the column a labelled `.inter` file holds its labels in.
    public var labelField: String
    /// `threshold`: labels from a column, 1 where it is ≥ the value (nil: the label column as it is, if loaded).
    public var threshold: Threshold?
    /// Whether the rows' labels are read: `threshold` is set or `load_col` names the label column (and, set by the run's
    /// plan, when the evaluation is labelled); a stray `label` column otherwise changes nothing.
    public var readsLabels: Bool
    /// Columns to load per suffix; nil loads every column of every file present.
    public var loadColumns: [String: [String]]?
    public var unusedColumns: [String: [String]]
    /// Float columns that context-aware models read (`numerical_features`).
    public var numericalFeatures: [String]
    public var removeDuplicates: DuplicatePolicy?
    public var userInterval: CountInterval?
    public var itemInterval: CountInterval?
    public var filterByUserOrItem: Bool

    /// The folder of the file an origin ("path/file.yml:5") names, or nil when the origin is no
    /// file ("default", "--set").
    static func folder(ofFileIn origin: String) -> String? {
        guard let colon = origin.lastIndex(of: ":"), Int(origin[origin.index(after: colon)...]) != nil else { return nil }
        let file = String(origin[..<colon])
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: file, isDirectory: &isFolder), !isFolder.boolValue else { return nil }
        let folder = (file as NSString).deletingLastPathComponent
        return folder.isEmpty ? "." : folder
    }

    /// Reads and validates the data keys of `config`.
    public init(_ config: Config) throws {
        dataset = try config.string("dataset")
        guard !dataset.isEmpty, !dataset.contains("/") else {
            throw RecBenchError.config("dataset", origin: config.origin(of: "dataset"), "must be a plain name, got '\(dataset)'")
        }
        dataPath = try config.string("data_path")
        guard !dataPath.isEmpty else {
            throw RecBenchError.config("data_path", origin: config.origin(of: "data_path"), "must not be empty (use `.` for the working directory)")
        }
        configFolder = dataPath.hasPrefix("/") ? nil : Self.folder(ofFileIn: config.origin(of: "data_path"))
        benchmarkFilenames = config["benchmark_filename"] == .null ? nil : try config.stringList("benchmark_filename")
        fieldSeparator = try config.string("field_separator")
        sequenceSeparator = try config.string("seq_separator")
        for key in ["field_separator", "seq_separator"] where try config.string(key).isEmpty {
            throw RecBenchError.config(key, origin: config.origin(of: key), "must not be empty")
        }
        userField = try config.string("USER_ID_FIELD")
        itemField = try config.string("ITEM_ID_FIELD")
        guard userField != itemField else {
            // Blame the key the user set (a default clashing with a set key is not the user's line).
            let (key, other) = config.isSet("ITEM_ID_FIELD") ? ("ITEM_ID_FIELD", "USER_ID_FIELD") : ("USER_ID_FIELD", "ITEM_ID_FIELD")
            throw RecBenchError.config(key, origin: config.origin(of: key), "names the same column as \(other) ('\(userField)')")
        }
        // RecBole's general models never read it: null is its default, empty would match every `item_id:` header.
        listSuffix = try config.optionalString("LIST_SUFFIX") ?? ConfigKeys.byName["LIST_SUFFIX"]!.defaultValue.stringValue!
        guard !listSuffix.isEmpty else { throw RecBenchError.config("LIST_SUFFIX", origin: config.origin(of: "LIST_SUFFIX"), "must not be empty") }
        ratingField = try config.optionalString("RATING_FIELD")
        timeField = try config.optionalString("TIME_FIELD")
        loadColumns = try config.columnMap("load_col")
        unusedColumns = try config.columnMap("unused_col") ?? [:]
        numericalFeatures = config["numerical_features"] == .null ? [] : try config.stringList("numerical_features")
        for suffix in loadColumns?.keys.sorted() ?? [] where !["inter", "item", "user"].contains(suffix) {
            throw RecBenchError.config("load_col", origin: config.origin(of: "load_col"), "unknown file suffix '\(suffix)' (expected inter, item or user)")
        }
        if let policy = try config.optionalString("rm_dup_inter") {
            guard let p = DuplicatePolicy(rawValue: policy) else {
                throw RecBenchError.config("rm_dup_inter", origin: config.origin(of: "rm_dup_inter"), "expected null, first or last, got '\(policy)'")
            }
            removeDuplicates = p
        }
        for (key, side) in [("user_inter_num_interval", true), ("item_inter_num_interval", false)] {
            let value: CountInterval?
            switch config[key] {
            case .null: value = nil
            case .string(let text):
                do { value = try CountInterval(parsing: text) } catch let e as RecBenchError {
                    throw RecBenchError.config(key, origin: config.origin(of: key), e.message)
                }
            case .int(let n):   // RecBole 1.2.1 warns "illegal interval" and filters nothing: refused, not read as a minimum
                throw RecBenchError.config(key, origin: config.origin(of: key), "a bare number (\(n)) is no interval: RecBole 1.2.1 ignores it "
                                           + "and filters nothing; write \"[\(n),inf)\" for at least \(n)")
            default: throw config.typeError(key, "an interval such as \"[5,inf)\"")
            }
            if side { userInterval = value } else { itemInterval = value }
        }
        filterByUserOrItem = try config.bool("filter_inter_by_user_or_item")
        (labelField, threshold, readsLabels) = try Self.labelling(config, ratingField: ratingField, loadColumns: loadColumns)
    }

    /// `LABEL_FIELD`, `threshold`, and whether labels are read at all.
    static func labelling(_ config: Config, ratingField: String?, loadColumns: [String: [String]]?) throws -> (String, Threshold?, Bool) {
        let labelField = try config.string("LABEL_FIELD")
        let threshold = try Threshold(config, ratingField: ratingField, labelField: labelField)
        return (labelField, threshold, threshold != nil || loadColumns?["inter"]?.contains(labelField) == true)
    }
}

/// RecBole's `threshold: {column: value}`: a row's label is 1 where the column is ≥ the value, else 0
/// (RecBole 1.2.1's `_set_label_by_threshold`, which takes exactly one column).
public struct Threshold: Sendable, Hashable {
    public var field: String
    public var value: Double

    /// The threshold `config` sets, nil when none; its column must be the rating or the label column.
    init?(_ config: Config, ratingField: String?, labelField: String) throws {
        let key = "threshold", origin = config.origin(of: key)
        switch config[key] {
        case .null: return nil
        case .map(let m) where m.count == 1:
            let (field, v) = m.first!
            guard let number = v.doubleValue else { throw config.typeError(key, "a number for '\(field)'") }
            guard field == ratingField || field == labelField else {
                throw RecBenchError.config(key, origin: origin, "names '\(field)', which is neither RATING_FIELD ('\(ratingField ?? "null")') "
                                           + "nor LABEL_FIELD ('\(labelField)'): recbench labels rows from one of those two columns")
            }
            (self.field, self.value) = (field, number)
        case .map(let m):
            throw RecBenchError.config(key, origin: origin, "takes exactly one column, got \(m.count) (RecBole 1.2.1: \"Threshold [...] should be "
                                       + "only one key\")")
        default: throw config.typeError(key, "a map of one column to a number, e.g. {rating: 4}")
        }
    }

    /// 1 where `value` ≥ the threshold, else 0.
    public func label(_ value: Double) -> Float { value >= self.value ? 1 : 0 }
}

/// RecBole's interval syntax for interaction counts: `[a,b)`, `(a,b]`, … joined by `;`
/// (a count is kept when it lies in any of them); `inf` is allowed as a bound.
public struct CountInterval: Sendable, Hashable, CustomStringConvertible {
    struct Piece: Sendable, Hashable {
        var lower: Double, upper: Double, lowerClosed: Bool, upperClosed: Bool
    }
    var pieces: [Piece]
    /// The text it was parsed from.
    public let description: String

    /// Parses e.g. `"[5,inf)"` or `"(0,10];[20,30)"`.
    public init(parsing text: String) throws {
        description = text
        pieces = try text.split(separator: ";").map { raw in
            let s = raw.trimmingCharacters(in: .whitespaces)
            guard let first = s.first, let last = s.last, "[(".contains(first), ")]".contains(last), s.count >= 5 else {
                throw RecBenchError("'\(s)' is not an interval like [5,inf)")
            }
            let bounds = s.dropFirst().dropLast().split(separator: ",", omittingEmptySubsequences: false)
            guard bounds.count == 2,
                  let lo = Double(bounds[0].trimmingCharacters(in: .whitespaces)),
                  let hi = Double(bounds[1].trimmingCharacters(in: .whitespaces)), lo <= hi else {
                throw RecBenchError("'\(s)' is not an interval like [5,inf)")
            }
            return Piece(lower: lo, upper: hi, lowerClosed: first == "[", upperClosed: last == "]")
        }
        if pieces.isEmpty { throw RecBenchError("empty interval") }
    }

    /// Whether a side-file row (`.user` / `.item`) with `count` interactions stays, by RecBole
    /// 1.2.1's rule (`_get_illegal_ids_by_inter_num`): one with interactions when the count lies
    /// in the interval; one with none unless 0 is below the first piece's lower value, open or
    /// closed — so `"(0,inf)"` keeps an id that has no interaction, as RecBole does.
    public func keepsSideRow(withCount count: Int) -> Bool {
        count > 0 ? contains(count) : !(0 < pieces[0].lower)
    }

    /// Whether `count` lies in the interval.
    public func contains(_ count: Int) -> Bool {
        let x = Double(count)
        return pieces.contains { p in
            (p.lowerClosed ? x >= p.lower : x > p.lower) && (p.upperClosed ? x <= p.upper : x < p.upper)
        }
    }
}

import Foundation
