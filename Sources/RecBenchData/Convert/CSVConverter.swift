import Foundation
import RecBenchSupport

/// What to convert: CSV exports → `{out}/{name}.inter|.item|.user` atomic files.
public struct ConversionSpec: Sendable {
    /// The dataset name (file stem).
    public var name: String
    /// The output folder.
    public var outputDirectory: String
    /// CSV input per suffix (`inter`, `item`, `user`).
    public var inputs: [String: String]
    /// `[csv name=]atomic name[:type]` mappings: rename and/or fix a column's type.
    public var fields: [String]
    /// The CSV delimiter; nil detects it per file.
    public var delimiter: UInt8?
    /// The column holding times: always float, dates converted to Unix seconds (UTC).
    public var timeField: String
    /// Columns that are ids: always token.
    public var idFields: Set<String>
    /// Replace existing output files.
    public var overwrite: Bool
    /// Whether the interaction CSV must have `timeField` (it was asked for, not the default).
    public var timeFieldRequired = false

    /// A spec with RecBole's default field names.
    public init(name: String, outputDirectory: String, inputs: [String: String], fields: [String] = [],
                delimiter: UInt8? = nil, timeField: String = "timestamp", idFields: Set<String> = ["user_id", "item_id"],
                overwrite: Bool = false) {
        self.name = name; self.outputDirectory = outputDirectory; self.inputs = inputs; self.fields = fields
        self.delimiter = delimiter; self.timeField = timeField; self.idFields = idFields; self.overwrite = overwrite
    }
}

/// What a conversion did, file by file and column by column.
public struct ConversionReport: Sendable {
    /// One converted column: its atomic name, type, and why that type.
    public struct Column: Sendable, Equatable {
        public let source: String
        public let name: String
        public let type: FieldType
        public let reason: String
    }
    /// One written file.
    public struct File: Sendable {
        public let suffix: String
        public let input: String
        public let output: String
        public let rows: Int
        public let columns: [Column]
    }
    public var files: [File] = []
}

/// CSV → atomic files in two streaming passes (infer and validate, then write), into temp
/// files that are renamed into place only when every file succeeded: an error leaves no
/// partial output.
public enum CSVConverter {
    /// Characters an atomic-file value cannot hold (the field separator and line breaks).
    static let forbidden: Set<UInt8> = [0x09, 0x0A, 0x0D]

    /// Converts per `spec`.
    public static func convert(_ spec: ConversionSpec) throws -> ConversionReport {
        guard !spec.name.isEmpty, !spec.name.contains("/") else {
            throw RecBenchError(field: "name", "must be a plain dataset name, got '\(spec.name)'")
        }
        guard spec.inputs["inter"] != nil else { throw RecBenchError(field: "inter", "an interaction CSV is required") }
        for suffix in spec.inputs.keys where !["inter", "item", "user"].contains(suffix) {
            throw RecBenchError(field: suffix, "unknown file kind (expected inter, item or user)")
        }
        let mappings = try checkedMappings(spec)
        let order = ["inter", "item", "user"].filter { spec.inputs[$0] != nil }
        let outputs = Dictionary(uniqueKeysWithValues: order.map { ($0, "\(spec.outputDirectory)/\(spec.name).\($0)") })
        if !spec.overwrite {
            for suffix in order where FileManager.default.fileExists(atPath: outputs[suffix]!) {
                throw RecBenchError.file(outputs[suffix]!, "already exists (use --force to replace it)")
            }
        }
        // Pass 1: every file, before anything is written.
        var plans: [(String, FilePlan)] = []
        for suffix in order {
            plans.append((suffix, try inspect(spec.inputs[suffix]!, suffix: suffix, spec: spec, mappings: mappings)))
        }
        for mapping in mappings where !plans.contains(where: { $0.1.columns.contains { $0.source == mapping.source } }) {
            throw RecBenchError(field: mapping.source, "--field names a column that no input CSV has")
        }
        if spec.timeFieldRequired, let inter = plans.first(where: { $0.0 == "inter" })?.1 { try checkTimeField(inter, spec: spec) }
        // Pass 2: write temp files, then rename them all.
        do {
            try FileManager.default.createDirectory(atPath: spec.outputDirectory, withIntermediateDirectories: true)
        } catch {
            throw RecBenchError.file(spec.outputDirectory, "cannot create the output folder")
        }
        var temps: [(String, String)] = []
        do {
            for (suffix, plan) in plans {
                let temp = "\(spec.outputDirectory)/.\(spec.name).\(suffix).\(getpid()).tmp"
                temps.append((temp, outputs[suffix]!))
                try write(plan, to: temp, spec: spec)
            }
            for (temp, final) in temps where rename(temp, final) != 0 {
                throw RecBenchError.file(final, "cannot be written (errno \(errno))")
            }
        } catch {
            for (temp, _) in temps { unlink(temp) }
            throw error
        }
        var report = ConversionReport()
        for (suffix, plan) in plans {
            report.files.append(.init(suffix: suffix, input: plan.path, output: outputs[suffix]!, rows: plan.rows, columns: plan.columns))
        }
        return report
    }

    /// The `--field` mappings, each column mapped once and ids kept tokens.
    static func checkedMappings(_ spec: ConversionSpec) throws -> [FieldMapping] {
        let mappings = try spec.fields.map(FieldMapping.init(parsing:))
        for (i, m) in mappings.enumerated() {
            if let earlier = mappings[..<i].first(where: { $0.source == m.source }) {
                throw RecBenchError(field: spec.fields[i], "column '\(m.source)' is mapped twice (also by '\(earlier.text)'): give one mapping")
            }
            if spec.idFields.contains(m.name), let type = m.type, type != .token {
                throw RecBenchError(field: spec.fields[i], "\(m.name) is an id column: always token (RecBole reads ids as tokens)")
            }
        }
        return mappings
    }

    /// A time column asked for by name must be one of the interaction CSV's (the default may be absent).
    static func checkTimeField(_ inter: FilePlan, spec: ConversionSpec) throws {
        let names = inter.columns.map(\.name)
        guard !names.contains(spec.timeField) else { return }
        throw RecBenchError.file(inter.path, line: 1, field: spec.timeField, "the time column asked for is not a column "
                                 + "(columns: \(names.joined(separator: ", ")))\(Suggestion.hint(for: spec.timeField, in: names))")
    }

    struct FieldMapping {
        let text: String
        let source: String
        let name: String
        let type: FieldType?

        /// `[csv=]name[:type]`.
        init(parsing text: String) throws {
            var rest = Substring(text)
            var source: String?
            if let eq = rest.firstIndex(of: "=") {
                source = String(rest[..<eq])
                rest = rest[rest.index(after: eq)...]
            }
            var type: FieldType?
            if let colon = rest.lastIndex(of: ":") {
                let typeName = String(rest[rest.index(after: colon)...])
                guard let t = FieldType(rawValue: typeName) else {
                    throw RecBenchError(field: text, "unknown type '\(typeName)'\(Suggestion.hint(for: typeName, in: FieldType.allCases.map(\.rawValue))) "
                                                     + "(types: token, float, token_seq, float_seq)")
                }
                type = t
                rest = rest[..<colon]
            }
            guard !rest.isEmpty else { throw RecBenchError(field: text, "expected [csv=]name[:type], e.g. timestamp:float") }
            self.text = text
            self.name = String(rest)
            self.source = source ?? self.name
            self.type = type
        }
    }

    struct FilePlan {
        let path: String
        let delimiter: UInt8
        var rows = 0
        var columns: [ConversionReport.Column] = []
    }

    /// Pass 1: header, column count of every row, timestamps, and type inference.
    static func inspect(_ path: String, suffix: String, spec: ConversionSpec, mappings: [FieldMapping]) throws -> FilePlan {
        var reader = try CSVReader(path: path, delimiter: spec.delimiter)
        guard let (header, _) = try reader.next() else {
            throw RecBenchError.file(path, line: 1, "empty file: expected a header row")
        }
        let sources = header.map(\.trimmingSpaces)
        let names = try columnNames(sources, path: path, mappings: mappings)
        let required = suffix == "inter" ? ["user_id", "item_id"].filter { spec.idFields.contains($0) }
            : suffix == "item" ? ["item_id"] : ["user_id"]
        for field in required where !names.contains(field) {
            throw RecBenchError.file(path, line: 1, field: field,
                                     "required column missing (columns: \(names.joined(separator: ", ")))\(Suggestion.hint(for: field, in: names)); "
                                     + "rename one with --field csv_name=\(field)")
        }
        var stats = [ColumnStats](repeating: ColumnStats(), count: names.count)
        var plan = FilePlan(path: path, delimiter: reader.delimiter)
        // A side file lists each id once (the atomic reader refuses a repeat): find it here, with both lines.
        var firstLine: [String: Int] = [:]
        let idColumn = suffix == "inter" ? nil : names.firstIndex(of: suffix == "item" ? "item_id" : "user_id")
        while let (fields, line) = try reader.next() {
            guard fields.count == names.count else {
                throw RecBenchError.file(path, line: line, "expected \(names.count) fields (\(names.joined(separator: ", "))), found \(fields.count)")
            }
            for (c, value) in fields.enumerated() {
                if names[c] == spec.timeField && Timestamp.seconds(value) == nil {
                    throw RecBenchError.file(path, line: line, field: names[c],
                                             "'\(value)' is not a timestamp (Unix seconds, or a date such as 2024-04-01 or 2024-04-01 09:30:00)")
                }
                if spec.idFields.contains(names[c]) && value.isEmpty {
                    throw RecBenchError.file(path, line: line, field: names[c], "empty id")
                }
                stats[c].observe(value, line: line)
            }
            if let idColumn, let first = firstLine.updateValue(line, forKey: fields[idColumn]) {
                throw RecBenchError.file(path, line: line, field: names[idColumn], "'\(fields[idColumn])' is listed again (first on line \(first))")
            }
            plan.rows += 1
        }
        if suffix == "inter" && plan.rows == 0 { throw RecBenchError.file(path, line: 2, "no interaction rows after the header") }
        plan.columns = try columnTypes(names: names, sources: sources, stats: stats, path: path, spec: spec, mappings: mappings)
        return plan
    }

    /// Each column's type: as given by a mapping, an id's, the time column's, or inferred from its values.
    static func columnTypes(names: [String], sources: [String], stats: [ColumnStats], path: String, spec: ConversionSpec,
                            mappings: [FieldMapping]) throws -> [ConversionReport.Column] {
        var columns: [ConversionReport.Column] = []
        for (c, name) in names.enumerated() {
            let s = stats[c]
            let type: FieldType, reason: String
            if let given = mappings.first(where: { $0.source == sources[c] })?.type {
                type = given; reason = "given"
                if given == .float || given == .floatSequence, let bad = s.firstNonNumeric, name != spec.timeField {
                    throw RecBenchError.file(path, line: bad.line, field: name, "'\(bad.value)' is not a number (column given as \(given.rawValue))")
                }
            } else if spec.idFields.contains(name) {
                type = .token; reason = "id column"
            } else if name == spec.timeField {
                type = .float; reason = s.sawDate ? "time column: dates converted to Unix seconds (UTC)" : "time column"
            } else if s.nonEmpty > 0 && s.allNumeric && s.sawDecimal {
                type = .float; reason = "inferred: decimal numbers"
            } else if s.nonEmpty > 0 && s.allNumeric {
                type = .token; reason = "inferred: integers (ids and codes stay tokens)"
            } else {
                type = .token; reason = s.nonEmpty == 0 ? "inferred: empty column" : "inferred: text"
            }
            columns.append(.init(source: sources[c], name: name, type: type, reason: reason))
        }
        return columns
    }

    /// The atomic-file name of each CSV column (mapped, checked), apart from `inspect`'s pass over the rows.
    private static func columnNames(_ sources: [String], path: String, mappings: [FieldMapping]) throws -> [String] {
        var names: [String] = []
        for (index, source) in sources.enumerated() {
            guard !source.isEmpty else { throw RecBenchError.file(path, line: 1, "column \(index + 1) has an empty name") }
            let name = mappings.first { $0.source == source }?.name ?? source
            if let previous = names.firstIndex(of: name) {
                throw RecBenchError.file(path, line: 1, field: name, "duplicate column name (columns \(previous + 1) and \(index + 1))")
            }
            guard !name.contains(":"), !name.utf8.contains(where: forbidden.contains) else {
                throw RecBenchError.file(path, line: 1, field: name, "a column name cannot contain ':', tabs or line breaks")
            }
            names.append(name)
        }
        return names
    }

    struct ColumnStats {
        var nonEmpty = 0
        var allNumeric = true
        var sawDecimal = false
        var sawDate = false
        var firstNonNumeric: (value: String, line: Int)?

        mutating func observe(_ value: String, line: Int) {
            let v = value.trimmingSpaces
            guard !v.isEmpty else { return }
            nonEmpty += 1
            if isDecimalNumber(v) {
                if v.utf8.contains(where: { (b: UInt8) -> Bool in b == 0x2E || b == 0x65 || b == 0x45 }) { sawDecimal = true }   // . e E
            } else {
                if allNumeric { firstNonNumeric = (value, line) }
                allNumeric = false
                if Timestamp.seconds(v) != nil { sawDate = true }
            }
        }
    }

    /// Plain decimal syntax only and finite (no hex, inf or nan words, nor 1e400), as atomic-file floats accept.
    static func isDecimalNumber(_ s: String) -> Bool {
        s.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E || $0 == 0x2D || $0 == 0x2B || $0 == 0x65 || $0 == 0x45 }
            && s.utf8.contains { $0 >= 0x30 && $0 <= 0x39 } && Double(s)?.isFinite == true
    }

    /// Pass 2: stream the CSV again and write the atomic file.
    static func write(_ plan: FilePlan, to temp: String, spec: ConversionSpec) throws {
        var reader = try CSVReader(path: plan.path, delimiter: plan.delimiter)
        _ = try reader.next()   // header
        guard let out = fopen(temp, "wb") else { throw RecBenchError.file(temp, "cannot be created") }
        var buffer: [UInt8] = []
        buffer.reserveCapacity(1 << 20)
        func flush() throws {
            let written = buffer.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, out) }
            guard written == buffer.count else { throw RecBenchError.file(temp, "write failed (disk full?)") }
            buffer.removeAll(keepingCapacity: true)
        }
        do {
            buffer += Array(plan.columns.map { "\($0.name):\($0.type.rawValue)" }.joined(separator: "\t").utf8)
            buffer.append(0x0A)
            while let (fields, line) = try reader.next() {
                for (c, raw) in fields.enumerated() {
                    let column = plan.columns[c]
                    if c > 0 { buffer.append(0x09) }
                    var value = raw
                    switch column.type {
                    case .float:
                        let trimmed = raw.trimmingSpaces
                        value = column.name == spec.timeField ? Timestamp.text(Timestamp.seconds(trimmed)!) : trimmed
                    case .floatSequence:
                        for part in raw.split(separator: " ") where !isDecimalNumber(String(part)) {
                            throw RecBenchError.file(plan.path, line: line, field: column.name, "'\(part)' is not a number (float_seq)")
                        }
                    case .token, .tokenSequence:
                        break
                    }
                    if value.utf8.contains(where: { $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) {
                        throw RecBenchError.file(plan.path, line: line, field: column.name,
                                                 "value contains a tab or line break, which atomic files cannot hold; remove it from the CSV")
                    }
                    if value.utf8.first == AtomicFileReader.quote {   // RecBole's pandas would read it as quoted: quote it
                        buffer.append(AtomicFileReader.quote)
                        for b in value.utf8 { buffer.append(b); if b == AtomicFileReader.quote { buffer.append(b) } }
                        buffer.append(AtomicFileReader.quote)
                    } else {
                        buffer.append(contentsOf: value.utf8)
                    }
                }
                buffer.append(0x0A)
                if buffer.count >= 1 << 20 { try flush() }
            }
            try flush()
            guard fflush(out) == 0, fsync(fileno(out)) == 0 else { throw RecBenchError.file(temp, "write failed") }
            fclose(out)
        } catch {
            fclose(out)
            throw error
        }
    }
}
