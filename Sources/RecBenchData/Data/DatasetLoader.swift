import Foundation
import RecBenchSupport

/// Finds, reads, filters and remaps a dataset as RecBole 1.2.1 does.
public enum DatasetLoader {
    /// Loads the dataset described by `settings`: locate, read, filter, remap.
    public static func load(_ settings: DataSettings) throws -> Dataset {
        let folder = try locate(settings)
        let interColumns = try interactionColumns(settings)
        let read = { (path: String, columns: [String]?) in
            try AtomicFileReader.read(path: path, fieldSeparator: settings.fieldSeparator,
                                      sequenceSeparator: settings.sequenceSeparator, columns: columns)
        }
        let sources = sourceFiles(settings, folder: folder)
        let tables = try sources.inter.map { try read($0, interColumns) }
        var raw = try interactionLog(tables, settings: settings)
        if raw.count == 0, let first = tables.first {
            throw RecBenchError.file(first.path, "has a header but no interaction rows")
        }
        // Side files.
        let itemTable = try sources.item.map { path in
            try uniqueIDs(read(path, settings.loadColumns?["item"] ?? nil), settings.itemField)
        }
        let userTable = try sources.user.map { path in
            try uniqueIDs(read(path, settings.loadColumns?["user"] ?? nil), settings.userField)
        }
        for (suffix, columns) in settings.unusedColumns {
            let table = suffix == "inter" ? tables.first : (suffix == "item" ? itemTable : userTable)
            for column in columns where table != nil && table!.columns[column] == nil {
                throw RecBenchError.config("unused_col", "column '\(column)' is not loaded from the .\(suffix) file")
            }
        }
        var log: [String] = [], notices: [String] = []
        let kept = try filter(&raw, settings: settings, itemTable: itemTable, userTable: userTable, log: &log, notices: &notices)
        var files = tables.map { ($0.path, $0.sha256) }
        for t in [itemTable, userTable].compactMap({ $0 }) { files.append((t.path, t.sha256)) }
        var dataset = try remap(raw, settings: settings, userTable: userTable.map { ($0, kept.userRows!) },
                                itemTable: itemTable.map { ($0, kept.itemRows!) }, files: files, log: log)
        dataset.unusedColumns = settings.unusedColumns
        dataset.notices = notices
        dataset.timeField = dataset.interactions.timestamps == nil ? nil : settings.timeField
        dataset.userField = settings.userField
        dataset.itemField = settings.itemField
        try checkNumericalFeatures(settings, tables: [("inter", tables.first), ("user", userTable), ("item", itemTable)])
        dataset.numericalFeatures = settings.numericalFeatures
        return dataset
    }

    /// Every `numerical_features` column must be a loaded float column of some file.
    static func checkNumericalFeatures(_ settings: DataSettings, tables: [(suffix: String, table: AtomicTable?)]) throws {
        for name in settings.numericalFeatures {
            let found = tables.compactMap { entry in
                entry.table.flatMap { t in t.fields.first { $0.name == name }.map { (t, $0) } }
            }
            guard let (table, field) = found.first else {
                let loaded = tables.flatMap { $0.table?.fields.map(\.name) ?? [] }
                throw RecBenchError.config("numerical_features",
                                           "column '\(name)' is not loaded from any file (load_col)\(Suggestion.hint(for: name, in: loaded))")
            }
            guard field.type == .float || field.type == .floatSequence else {
                throw RecBenchError.file(table.path, line: 1, field: name,
                                         "numerical_features lists a \(field.type.rawValue) column; only float and float_seq columns are numerical "
                                         + "(a token column is already a model input)")
            }
        }
    }

    /// The `.inter` columns `load_col` asks for (nil: every column), checked to hold the ids.
    static func interactionColumns(_ settings: DataSettings) throws -> [String]? {
        guard let wanted = settings.loadColumns.map({ $0["inter"] }) else { return nil }
        guard let columns = wanted else {
            throw RecBenchError.config("load_col", "has no `inter` entry: recbench needs the interaction file")
        }
        for field in [settings.userField, settings.itemField] where !columns.contains(field) {
            throw RecBenchError.config("load_col", "`inter` must include '\(field)' (USER_ID_FIELD / ITEM_ID_FIELD)")
        }
        return columns
    }

    /// The interaction rows of every `.inter` table, in order, as token codes (with the
    /// benchmark part of each row when the dataset is pre-split).
    static func interactionLog(_ tables: [AtomicTable], settings: DataSettings) throws -> RawLog {
        var users = TokenMerger(), items = TokenMerger()
        var timestamps: [Double]? = [], ratings: [Double]? = [], labelSource: [Double]? = []
        let labelColumn = settings.threshold?.field ?? settings.labelField
        var parts: [UInt8]? = settings.benchmarkFilenames == nil ? nil : []
        for (index, table) in tables.enumerated() {
            for field in [settings.userField, settings.itemField] {
                guard let f = table.header.first(where: { $0.name == field }) else {
                    throw RecBenchError.file(table.path, line: 1, field: field,
                                             "the interaction file has no such column (columns: \(table.header.map(\.name).joined(separator: ", ")))")
                }
                guard f.type == .token else {
                    throw RecBenchError.file(table.path, line: 1, field: field, "id column must have type token, found \(f.type.rawValue)")
                }
                let column = try table.tokenColumn(field)
                try refuseMissingIDs(column, of: table, field)
                if field == settings.userField { users.append(column) } else { items.append(column) }
            }
            timestamps = try appendFloatColumn(settings.timeField, of: table, to: timestamps)
            ratings = try appendFloatColumn(settings.ratingField, of: table, to: ratings)
            if settings.readsLabels {
                if labelColumn != settings.ratingField { labelSource = try appendFloatColumn(labelColumn, of: table, to: labelSource) }
                try refuseMissingLabels(labelColumn == settings.ratingField ? ratings : labelSource, of: table, labelColumn)
            }
            parts? += [UInt8](repeating: UInt8(min(index, 2)), count: table.rowCount)
            if let times = timestamps, let field = settings.timeField {
                let base = times.count - table.rowCount
                if let bad = (0..<table.rowCount).first(where: { times[base + $0].isNaN }) {
                    throw RecBenchError.file(table.path, line: Int(table.lineNumbers[bad]), field: field, "missing timestamp")
                }
            }
        }
        if let names = settings.benchmarkFilenames, names.count != 3 && names.count != 2 {
            throw RecBenchError.config("benchmark_filename", "expected [train, valid, test] or [train, test], got \(names.count) names")
        }
        if settings.benchmarkFilenames?.count == 2 { parts = parts?.map { $0 == 1 ? 2 : $0 } }
        var raw = RawLog(users: users.column, items: items.column, timestamps: timestamps, ratings: ratings, parts: parts)
        raw.labelSource = !settings.readsLabels ? nil : labelColumn == settings.ratingField ? (settings.threshold == nil ? nil : ratings) : labelSource
        if let t = settings.threshold, raw.labelSource == nil {
            throw RecBenchError.file(tables[0].path, line: 1, field: t.field, "threshold labels rows by this column, which the interaction file "
                                     + "\(tables[0].header.contains { $0.name == t.field } ? "holds but load_col leaves out" : "does not hold") "
                                     + "(RecBole: \"Field [\(t.field)] not in inter_feat\")")
        }
        return raw
    }

    /// RecBole's filters on provisional (token) ids: duplicates, rows whose user or item is
    /// missing from a side file, interaction-count intervals. Returns which side-file rows
    /// survive (nil for a file not loaded).
    static func filter(_ raw: inout RawLog, settings: DataSettings, itemTable: AtomicTable?, userTable: AtomicTable?,
                       log: inout [String], notices: inout [String]) throws -> (itemRows: [Bool]?, userRows: [Bool]?) {
        var keptItemRows = itemTable.map { t in [Bool](repeating: true, count: t.rowCount) }
        var keptUserRows = userTable.map { t in [Bool](repeating: true, count: t.rowCount) }
        guard raw.parts == nil else {
            if settings.removeDuplicates != nil || settings.userInterval != nil || settings.itemInterval != nil {
                log.append("benchmark_filename is set: filtering keys are not applied (as in RecBole)")
            }
            return (keptItemRows, keptUserRows)
        }
        if let policy = settings.removeDuplicates { raw.removeDuplicates(keep: policy, log: &log) }
        if settings.filterByUserOrItem {
            // An incomplete side file silently shrinks the data: every run says so (RecBole's default, and easy to miss).
            for (t, side) in [(itemTable, "item"), (userTable, "user")] {
                guard let t else { continue }
                let before = raw.count
                if side == "item" { raw.keepOnly(items: Set(try t.tokens(settings.itemField))) }
                if side == "user" { raw.keepOnly(users: Set(try t.tokens(settings.userField))) }
                try checkSomeLeft(raw, by: t, side)
                if raw.count < before {
                    notices.append("\(t.path) lists no row for the \(side) of \(before - raw.count) of \(before) interactions: dropped "
                                   + "(filter_inter_by_user_or_item: true, as in RecBole; false keeps them, with padding features)")
                }
            }
        }
        guard settings.userInterval != nil || settings.itemInterval != nil else { return (keptItemRows, keptUserRows) }
        let (bannedUsers, bannedItems) = raw.filterByCounts(users: settings.userInterval, items: settings.itemInterval, log: &log)
        if raw.count == 0 {
            let keys = [("user_inter_num_interval", settings.userInterval), ("item_inter_num_interval", settings.itemInterval)].filter { $0.1 != nil }.map(\.0)
            throw RecBenchError.config(keys.joined(separator: " / "), "the interaction-count filter removed every interaction")
        }
        if let t = itemTable, let interval = settings.itemInterval {
            let ids = try t.tokens(settings.itemField), counts = raw.itemCounts()
            for r in 0..<ids.count where bannedItems.contains(ids[r]) || !interval.keepsSideRow(withCount: counts[ids[r]] ?? 0) { keptItemRows![r] = false }
        }
        if let t = userTable, let interval = settings.userInterval {
            let ids = try t.tokens(settings.userField), counts = raw.userCounts()
            for r in 0..<ids.count where bannedUsers.contains(ids[r]) || !interval.keepsSideRow(withCount: counts[ids[r]] ?? 0) { keptUserRows![r] = false }
        }
        return (keptItemRows, keptUserRows)
    }

    /// `table` with its id column checked: present, a token column, each id on one row only.
    static func uniqueIDs(_ table: AtomicTable, _ field: String) throws -> AtomicTable {
        try refuseMissingIDs(try table.tokenColumn(field), of: table, field)
        var firstLine: [String: Int32] = [:]
        for (r, id) in try table.tokens(field).enumerated() {
            if let first = firstLine[id] {
                throw RecBenchError.file(table.path, line: Int(table.lineNumbers[r]), field: field,
                                         "'\(id)' is listed again (first on line \(first)): one row per id")
            }
            firstLine[id] = table.lineNumbers[r]
        }
        return table
    }

    /// An empty id, or one pandas reads as missing, is refused with its line: RecBole 1.2.1 drops
    /// such a row (or, under `benchmark_filename`, which skips its filtering, reads it as its
    /// padding id), so recbench would rank another catalogue.
    static func refuseMissingIDs(_ column: TokenColumn, of table: AtomicTable, _ field: String) throws {
        guard let code = column.vocabulary.firstIndex(where: AtomicFileReader.pandasMissing.contains),
              let row = column.codes.firstIndex(of: Int32(code)) else { return }
        let id = column.vocabulary[code]
        throw RecBenchError.file(table.path, line: Int(table.lineNumbers[row]), field: field, id.isEmpty ? "empty id"
            : "id '\(id)' is a missing value to RecBole 1.2.1 (pandas reads it so; it drops the row, or pre-split makes it padding): give it another id")
    }

    /// Throws when dropping the interactions whose `side` is missing from `table` dropped all.
    static func checkSomeLeft(_ raw: RawLog, by table: AtomicTable, _ side: String) throws {
        guard raw.count == 0 else { return }
        let what = table.rowCount == 0 ? "has a header but no rows" : "lists none of the interactions' \(side)s"
        throw RecBenchError.file(table.path, "\(what), so no interaction is left "
                                             + "(filter_inter_by_user_or_item, on by default as in RecBole, drops those whose \(side) it does not list)")
    }

    /// Final dense ids: interactions first, then the kept side-file rows (RecBole's factorize order).
    static func remap(_ raw: RawLog, settings: DataSettings, userTable: (AtomicTable, [Bool])?, itemTable: (AtomicTable, [Bool])?,
                      files: [(String, String)], log: [String]) throws -> Dataset {
        var userIDs: [String: Int32] = [:], itemIDs: [String: Int32] = [:]
        var userList: [String] = [], itemList: [String] = []
        func id(_ token: String, _ ids: inout [String: Int32], _ list: inout [String]) -> Int32 {
            if let i = ids[token] { return i }
            let i = Int32(list.count)
            ids[token] = i; list.append(token)
            return i
        }
        // Codes → ids in order of first appearance among the kept rows, as RecBole factorizes.
        func ids(_ column: TokenColumn, _ ids: inout [String: Int32], _ list: inout [String]) -> [Int32] {
            var idOfCode = [Int32](repeating: -1, count: column.vocabulary.count)
            return column.codes.map { code in
                if idOfCode[Int(code)] < 0 { idOfCode[Int(code)] = id(column.vocabulary[Int(code)], &ids, &list) }
                return idOfCode[Int(code)]
            }
        }
        let users = ids(raw.users, &userIDs, &userList), items = ids(raw.items, &itemIDs, &itemList)
        var userFeatures: (AtomicTable, [Int32])?, itemFeatures: (AtomicTable, [Int32])?
        if let (t, kept) = userTable {
            let tokens = try t.tokens(settings.userField)
            userFeatures = (t, tokens.indices.map { kept[$0] ? id(tokens[$0], &userIDs, &userList) : -1 })
        }
        if let (t, kept) = itemTable {
            let tokens = try t.tokens(settings.itemField)
            itemFeatures = (t, tokens.indices.map { kept[$0] ? id(tokens[$0], &itemIDs, &itemList) : -1 })
        }
        let labels = raw.labelSource.map { source in settings.threshold.map { t in source.map(t.label) } ?? source.map { Float($0) } }
        let interactions = Interactions(users: users, items: items, timestamps: raw.timestamps, ratings: raw.ratings, parts: raw.parts, labels: labels)
        return Dataset(name: settings.dataset, userTokens: userList, itemTokens: itemList, userIDs: userIDs, itemIDs: itemIDs,
                       interactions: interactions, userFeatures: userFeatures, itemFeatures: itemFeatures,
                       files: files, filterLog: log)
    }

    /// The files `load` reads: the interaction file(s), then `.item` and `.user` when loaded
    /// (listed in `load_col`, or present when `load_col` is null).
    static func sourceFiles(_ settings: DataSettings, folder: String) -> (inter: [String], item: String?, user: String?) {
        let inter = settings.benchmarkFilenames.map { names in names.map { "\(folder)/\(settings.dataset).\($0).inter" } }
            ?? ["\(folder)/\(settings.dataset).inter"]
        func side(_ suffix: String) -> String? {
            let path = "\(folder)/\(settings.dataset).\(suffix)"
            guard let map = settings.loadColumns else { return FileManager.default.fileExists(atPath: path) ? path : nil }
            return map[suffix] != nil ? path : nil
        }
        return (inter, side("item"), side("user"))
    }

    /// The first pre-split interaction file that holds RecBole's pre-expanded sequential examples
    /// (an `{item}{LIST_SUFFIX}` column: RecBole's `_benchmark_presets` reads such files as they are),
    /// and that column; nil when none does.
    public static func preExpandedExamples(_ settings: DataSettings) throws -> (path: String, column: String)? {
        guard settings.benchmarkFilenames != nil else { return nil }
        let column = settings.itemField + settings.listSuffix
        for path in sourceFiles(settings, folder: try locate(settings)).inter {
            guard let handle = FileHandle(forReadingAtPath: path) else { continue }
            defer { try? handle.close() }
            let head = String(decoding: (try handle.read(upToCount: 1 << 16) ?? Data()).prefix { $0 != 0x0A }, as: UTF8.self)
            if head.components(separatedBy: settings.fieldSeparator).contains(where: { $0.hasPrefix(column + ":") }) { return (path, column) }
        }
        return nil
    }

    /// The dataset's fingerprint without parsing it: the same value `load(_:).fingerprint`
    /// gives, from the files' bytes alone (used to decide whether a run is already done).
    public static func fingerprint(_ settings: DataSettings) throws -> String {
        let folder = try locate(settings)
        let sources = sourceFiles(settings, folder: folder)
        let paths = sources.inter + [sources.item, sources.user].compactMap { $0 }
        return Dataset.fingerprint(of: try paths.map { path in
            guard let data = FileManager.default.contents(atPath: path) else { throw RecBenchError.file(path, "file not found") }
            var h = SHA256()
            data.withUnsafeBytes { h.update($0) }
            return (path, h.hexDigest())
        })
    }

    /// The folder holding `{dataset}.inter`: `{data_path}/{dataset}/`, else `{data_path}/`;
    /// a relative `data_path` is tried against the working folder (RecBole's rule), then
    /// against the folder of the config file that set it.
    static func locate(_ s: DataSettings) throws -> String {
        let base = s.dataPath.hasSuffix("/") && s.dataPath.count > 1 ? String(s.dataPath.dropLast()) : s.dataPath
        let probe = s.benchmarkFilenames.map { "\(s.dataset).\($0.first ?? "train").inter" } ?? "\(s.dataset).inter"
        var bases = [base]
        if let folder = s.configFolder, folder != "." { bases.append("\(folder)/\(base)") }
        let candidates = bases.flatMap { ["\($0)/\(s.dataset)", $0] }
        for folder in candidates where FileManager.default.fileExists(atPath: "\(folder)/\(probe)") { return folder }
        let looked = candidates.dropFirst().map { "\($0)/\(probe)" }.joined(separator: ", ")
        let folders = bases.count > 1 ? " (relative to the working folder \(FileManager.default.currentDirectoryPath), then to the config's folder)" : ""
        throw RecBenchError.file("\(candidates[0])/\(probe)",
                                 "dataset '\(s.dataset)' not found (also looked for \(looked)\(folders); set data_path and dataset)")
    }

    /// A row without a value in the column labels are read from: RecBole means to fill it with the column's mean
    /// (`_fill_nan`), but under pandas 3 its in-place fill leaves NaN, which its threshold labels 0 — a silent label either way.
    private static func refuseMissingLabels(_ column: [Double]?, of table: AtomicTable, _ field: String) throws {
        guard let column else { return }
        let base = column.count - table.rowCount
        if let bad = (0..<table.rowCount).first(where: { column[base + $0].isNaN }) {
            throw RecBenchError.file(table.path, line: Int(table.lineNumbers[bad]), field: field, "missing value: a labelled row needs its label")
        }
    }

    private static func appendFloatColumn(_ field: String?, of table: AtomicTable, to column: [Double]?) throws -> [Double]? {
        guard var column, let field, let values = table.columns[field] else { return nil }
        guard case .float(let v) = values else {
            throw RecBenchError.file(table.path, line: 1, field: field, "must have type float, found \(table.header.first { $0.name == field }!.type.rawValue)")
        }
        column += v
        return column
    }
}

/// Token columns of several tables as one column, codes in order of first appearance.
struct TokenMerger {
    private var index: [String: Int32] = [:]
    private(set) var column = TokenColumn(vocabulary: [], codes: [])

    /// Appends `next`'s rows, re-coding them into this column's vocabulary.
    mutating func append(_ next: TokenColumn) {
        if column.codes.isEmpty && column.vocabulary.isEmpty {
            column = next
            for (code, value) in next.vocabulary.enumerated() { index[value] = Int32(code) }
            return
        }
        let recode = next.vocabulary.map { value in
            if let code = index[value] { return code }
            let code = Int32(column.vocabulary.count)
            index[value] = code
            column.vocabulary.append(value)
            return code
        }
        column.codes += next.codes.map { recode[Int($0)] }
    }
}

/// The interaction rows as token codes, while filtering (before final ids are assigned).
struct RawLog {
    var users: TokenColumn
    var items: TokenColumn
    var timestamps: [Double]?
    var ratings: [Double]?
    var parts: [UInt8]?
    /// The column labels come from (`threshold`'s, or `LABEL_FIELD`'s when loaded).
    var labelSource: [Double]? = nil

    var count: Int { users.count }

    mutating func keep(_ indices: [Int]) {
        users.codes = indices.map { users.codes[$0] }
        items.codes = indices.map { items.codes[$0] }
        timestamps = timestamps.map { t in indices.map { t[$0] } }
        ratings = ratings.map { r in indices.map { r[$0] } }
        labelSource = labelSource.map { l in indices.map { l[$0] } }
        parts = parts.map { p in indices.map { p[$0] } }
    }

    /// Rows per code of `column`.
    static func counts(_ column: TokenColumn) -> [Int] {
        var counts = [Int](repeating: 0, count: column.vocabulary.count)
        for code in column.codes { counts[Int(code)] += 1 }
        return counts
    }

    func userCounts() -> [String: Int] { Self.byValue(Self.counts(users), users) }
    func itemCounts() -> [String: Int] { Self.byValue(Self.counts(items), items) }

    private static func byValue(_ counts: [Int], _ column: TokenColumn) -> [String: Int] {
        var result: [String: Int] = [:]
        for (code, n) in counts.enumerated() where n > 0 { result[column.vocabulary[code]] = n }
        return result
    }

    /// Sorts by time (stable) and keeps the first or last row of each (user, item) pair.
    mutating func removeDuplicates(keep policy: DataSettings.DuplicatePolicy, log: inout [String]) {
        var order = Array(0..<count)
        if let t = timestamps { order.sort { (t[$0], $0) < (t[$1], $1) } }
        var chosen: [Int64: Int] = [:]
        for (position, r) in order.enumerated() {
            let pair = Int64(users.codes[r]) << 32 | Int64(items.codes[r])
            if policy == .last || chosen[pair] == nil { chosen[pair] = position }
        }
        var keepPosition = [Bool](repeating: false, count: count)
        for position in chosen.values { keepPosition[position] = true }
        let before = count
        keep(order.indices.filter { keepPosition[$0] }.map { order[$0] })
        log.append("rm_dup_inter=\(policy.rawValue): removed \(before - count) duplicate rows")
    }

    mutating func keepOnly(items allowed: Set<String>) {
        let allowedCode = items.vocabulary.map { allowed.contains($0) }
        keep((0..<count).filter { allowedCode[Int(items.codes[$0])] })
    }

    mutating func keepOnly(users allowed: Set<String>) {
        let allowedCode = users.vocabulary.map { allowed.contains($0) }
        keep((0..<count).filter { allowedCode[Int(users.codes[$0])] })
    }

    /// RecBole's `_filter_by_inter_num`: ban users and items whose counts fall outside their
    /// intervals, drop their rows, recount, until nothing changes. Returns everything banned.
    mutating func filterByCounts(users userInterval: CountInterval?, items itemInterval: CountInterval?, log: inout [String]) -> (Set<String>, Set<String>) {
        var bannedUser = [Bool](repeating: false, count: users.vocabulary.count)
        var bannedItem = [Bool](repeating: false, count: items.vocabulary.count)
        let before = count
        var rounds = 0
        /// Bans the codes present in the rows whose count is outside `interval`; true if any.
        func ban(_ column: TokenColumn, _ interval: CountInterval?, _ banned: inout [Bool]) -> Bool {
            guard let interval else { return false }
            var any = false
            for (code, n) in Self.counts(column).enumerated() where n > 0 && !interval.contains(n) { banned[code] = true; any = true }
            return any
        }
        while true {
            let newUsers = ban(users, userInterval, &bannedUser), newItems = ban(items, itemInterval, &bannedItem)
            if !newUsers && !newItems { break }
            keep((0..<count).filter { !bannedUser[Int(users.codes[$0])] && !bannedItem[Int(items.codes[$0])] })
            rounds += 1
        }
        let allUsers = Set(users.vocabulary.indices.filter { bannedUser[$0] }.map { users.vocabulary[$0] })
        let allItems = Set(items.vocabulary.indices.filter { bannedItem[$0] }.map { items.vocabulary[$0] })
        log.append("interaction-count filter: removed \(allUsers.count) users, \(allItems.count) items, \(before - count) interactions in \(rounds) rounds")
        return (allUsers, allItems)
    }
}
