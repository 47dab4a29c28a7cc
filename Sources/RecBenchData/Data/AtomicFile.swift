import Foundation
import RecBenchSupport

/// The column types of RecBole's atomic files.
public enum FieldType: String, Sendable, CaseIterable {
    case token
    case float
    case tokenSequence = "token_seq"
    case floatSequence = "float_seq"
}

/// One column of an atomic file's header (`name:type`).
public struct AtomicField: Sendable, Equatable {
    public let name: String
    public let type: FieldType
}

/// The values of one loaded column.
public enum AtomicColumn: Sendable, Equatable {
    case token(TokenColumn)
    case float([Double])
    case tokenSequence([[String]])
    case floatSequence([[Double]])

    /// Number of rows.
    public var count: Int {
        switch self {
        case .token(let v): return v.count
        case .float(let v): return v.count
        case .tokenSequence(let v): return v.count
        case .floatSequence(let v): return v.count
        }
    }
}

/// A loaded atomic file: the selected columns, in header order, and the data line of each row.
public struct AtomicTable: Sendable {
    /// The file it was read from.
    public let path: String
    /// Every column of the header.
    public let header: [AtomicField]
    /// The loaded columns, in header order.
    public let fields: [AtomicField]
    /// Loaded values by column name.
    public let columns: [String: AtomicColumn]
    /// Number of data rows.
    public let rowCount: Int
    /// 1-based file line of each row (for error messages).
    public let lineNumbers: [Int32]
    /// SHA-256 of the file's bytes.
    public var sha256: String = ""

    /// The token column `name`; throws if it is absent or not a token column.
    public func tokenColumn(_ name: String) throws -> TokenColumn {
        guard case .token(let v)? = columns[name] else {
            throw RecBenchError.file(path, field: name, "expected a loaded column of type token")
        }
        return v
    }

    /// The token column `name` as one `String` per row (for side files and tests).
    public func tokens(_ name: String) throws -> [String] { try tokenColumn(name).values }

    /// The float column `name`; throws if it is absent or not a float column.
    public func floats(_ name: String) throws -> [Double] {
        guard case .float(let v)? = columns[name] else {
            throw RecBenchError.file(path, field: name, "expected a loaded column of type float")
        }
        return v
    }
}

/// Reads RecBole atomic files: a `name:type` header line, then one row per line.
public enum AtomicFileReader {
    /// Reads `path`, loading only `columns` (all when nil). Every data line must have as many
    /// fields as the header; floats must parse; text must be UTF-8.
    public static func read(
        path: String, fieldSeparator: String, sequenceSeparator: String, columns wanted: [String]? = nil
    ) throws -> AtomicTable {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw RecBenchError.file(path, FileManager.default.fileExists(atPath: path) ? "cannot be read" : "file not found")
        }
        // The file's SHA-256 (its part of the run key) is computed on a second thread while
        // this one parses: on a 455 MB file each takes seconds.
        let digest = Background {
            var hash = SHA256()
            data.withUnsafeBytes { hash.update($0) }
            return hash.hexDigest()
        }
        let parsed = Result {
            try data.withUnsafeBytes { raw in
                try parse(UnsafeBufferPointer(start: raw.bindMemory(to: UInt8.self).baseAddress, count: data.count),
                          path: path, fieldSeparator: Array(fieldSeparator.utf8),
                          sequenceSeparator: sequenceSeparator, wanted: wanted)
            }
        }
        var table = try parsed.get()
        table.sha256 = digest.value()
        return table
    }

    /// Parses atomic-file bytes (exposed for tests and in-memory data).
    public static func parse(
        _ bytes: UnsafeBufferPointer<UInt8>, path: String, fieldSeparator sep: [UInt8],
        sequenceSeparator: String, wanted: [String]?
    ) throws -> AtomicTable {
        precondition(!sep.isEmpty, "empty field separator")
        var lines = LineScanner(bytes)
        let header = try readHeader(&lines, path: path, fieldSeparator: sep, wanted: wanted)
        let names = header.map(\.name)
        let selected = header.enumerated().filter { wanted?.contains($0.element.name) ?? true }
        let positionOfColumn = Dictionary(uniqueKeysWithValues: selected.enumerated().map { ($0.element.offset, $0.offset) })

        var interners = [TokenInterner](repeating: TokenInterner(), count: selected.count)
        var tokenCodes = [[Int32]](repeating: [], count: selected.count)
        var floatColumns = [[Double]](repeating: [], count: selected.count)
        var tokenSeqColumns = [[[String]]](repeating: [], count: selected.count)
        var floatSeqColumns = [[[Double]]](repeating: [], count: selected.count)
        var lineNumbers: [Int32] = []
        let seqSep = Array(sequenceSeparator.utf8), quoting = quotes(under: sep)

        while let line = lines.next() {
            try checkLength(line, path: path)
            if line.bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }   // blank line
            var column = 0
            let lineNo = line.number
            try forEachRecordField(line.bytes, separator: sep, quoting: quoting, path: path, line: lineNo) { field in
                defer { column += 1 }
                guard column < header.count else { return }
                guard let slot = positionOfColumn[column] else { return }
                let spec = header[column]
                switch spec.type {
                case .token:
                    tokenCodes[slot].append(try interners[slot].code(of: field) { try text($0, path, lineNo, spec.name) })
                case .float:
                    floatColumns[slot].append(try number(field, path, lineNo, spec.name))
                case .tokenSequence:
                    var items: [String] = []
                    if pandasMissing.contains(String(decoding: field, as: UTF8.self)) { tokenSeqColumns[slot].append([]); return }
                    try forEachField(field, separator: seqSep) { s, e in
                        if e > s { items.append(try text(UnsafeBufferPointer(rebasing: field[s..<e]), path, lineNo, spec.name)) }
                    }
                    tokenSeqColumns[slot].append(items)
                case .floatSequence:
                    var items: [Double] = []
                    try forEachField(field, separator: seqSep) { s, e in
                        if e > s { items.append(try number(UnsafeBufferPointer(rebasing: field[s..<e]), path, lineNo, spec.name)) }
                    }
                    floatSeqColumns[slot].append(items)
                }
            }
            if column != header.count {
                throw RecBenchError.file(path, line: lineNo, "expected \(header.count) fields (\(names.joined(separator: ", "))), found \(column)")
            }
            lineNumbers.append(Int32(truncatingIfNeeded: lineNo))
        }
        let columns = assembleColumns(selected, interners: interners, tokenCodes: tokenCodes, floats: floatColumns,
                                      tokenSequences: tokenSeqColumns, floatSequences: floatSeqColumns)
        return AtomicTable(path: path, header: header, fields: selected.map(\.element), columns: columns,
                           rowCount: lineNumbers.count, lineNumbers: lineNumbers)
    }

    /// Reads the header line (after a byte-order mark) and checks load_col against it, apart from `parse`'s row loop.
    private static func readHeader(
        _ lines: inout LineScanner, path: String, fieldSeparator sep: [UInt8], wanted: [String]?
    ) throws -> [AtomicField] {
        let bytes = lines.bytes
        // Skip a UTF-8 byte-order mark.
        if bytes.count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF { lines.position = 3 }
        guard let headerLine = lines.next() else {
            throw RecBenchError.file(path, line: 1, "empty file: expected a header line of `name:type` columns")
        }
        try checkLength(headerLine, path: path)
        let header = try parseHeader(headerLine.bytes, path: path, fieldSeparator: sep)
        let names = header.map(\.name)
        if let wanted {
            for name in wanted where !names.contains(name) {
                throw RecBenchError.file(path, line: 1, field: name,
                                         "column is listed in load_col but missing from the header (columns: \(names.joined(separator: ", ")))"
                                         + "\(Suggestion.hint(for: name, in: names))")
            }
        }
        return header
    }

    /// Wraps each selected column's parsed values in its `AtomicColumn` case, apart from `parse`'s row loop.
    private static func assembleColumns(
        _ selected: [(offset: Int, element: AtomicField)], interners: [TokenInterner], tokenCodes: [[Int32]],
        floats floatColumns: [[Double]], tokenSequences tokenSeqColumns: [[[String]]], floatSequences floatSeqColumns: [[[Double]]]
    ) -> [String: AtomicColumn] {
        var columns: [String: AtomicColumn] = [:]
        for (slot, entry) in selected.enumerated() {
            let f = entry.element
            switch f.type {
            case .token: columns[f.name] = .token(TokenColumn(vocabulary: interners[slot].vocabulary, codes: tokenCodes[slot]))
            case .float: columns[f.name] = .float(floatColumns[slot])
            case .tokenSequence: columns[f.name] = .tokenSequence(tokenSeqColumns[slot])
            case .floatSequence: columns[f.name] = .floatSequence(floatSeqColumns[slot])
            }
        }
        return columns
    }

    /// The longest line accepted: far beyond any real row (a token_seq of thousands of
    /// tokens fits), so a longer one is a binary file or a file without line breaks.
    public static let maxLineBytes = 1 << 20

    /// Refuses a line longer than `maxLineBytes`.
    static func checkLength(_ line: (bytes: UnsafeBufferPointer<UInt8>, number: Int), path: String) throws {
        guard line.bytes.count > maxLineBytes else { return }
        throw RecBenchError.file(path, line: line.number, "line is \(line.bytes.count) bytes long, "
                                                          + "more than the \(maxLineBytes >> 20) MiB a row may have (a binary file, or missing line breaks?)")
    }

    /// The `name:type` columns of a header line, checked (known types, no repeated name).
    static func parseHeader(_ line: UnsafeBufferPointer<UInt8>, path: String, fieldSeparator sep: [UInt8]) throws -> [AtomicField] {
        var headerFields: [String] = []
        try forEachField(line, separator: sep) { start, end in
            guard let s = String(validating: UnsafeBufferPointer(rebasing: line[start..<end]), as: UTF8.self) else {
                throw RecBenchError.file(path, line: 1, "header is not valid UTF-8")
            }
            headerFields.append(s.trimmingCharacters(in: .whitespaces))
        }
        var header: [AtomicField] = []
        for text in headerFields {
            guard let colon = text.lastIndex(of: ":"), colon != text.startIndex else {
                throw RecBenchError.file(path, line: 1, field: text,
                                         "malformed header column: expected `name:type` (types: token, float, token_seq, float_seq)")
            }
            let name = String(text[..<colon]), typeName = String(text[text.index(after: colon)...])
            guard let type = FieldType(rawValue: typeName) else {
                if typeName.contains("\r") {   // one line to the reader, and the error printer shows the CRs as spaces
                    throw RecBenchError.file(path, line: 1, "lines end in a bare carriage return (classic Mac OS): convert them to line feeds "
                                             + "(e.g. tr '\\r' '\\n')")
                }
                throw RecBenchError.file(path, line: 1, field: name,
                                         "unknown column type '\(typeName)'\(Suggestion.hint(for: typeName, in: FieldType.allCases.map(\.rawValue))) "
                                         + "(types: token, float, token_seq, float_seq)")
            }
            if header.contains(where: { $0.name == name }) {
                throw RecBenchError.file(path, line: 1, field: name, "column appears twice in the header")
            }
            header.append(AtomicField(name: name, type: type))
        }
        return header
    }

    private static func text(_ field: UnsafeBufferPointer<UInt8>, _ path: String, _ line: Int, _ name: String) throws -> String {
        guard let s = String(validating: field, as: UTF8.self) else {
            throw RecBenchError.file(path, line: line, field: name, "value is not valid UTF-8")
        }
        // A NUL would make two different tokens print alike and end C strings early.
        if field.contains(0) { throw RecBenchError.file(path, line: line, field: name, "value contains a NUL byte") }
        return s
    }

    /// Parses a float field; an empty field is NaN (a missing value), anything else must be
    /// a complete decimal number.
    private static func number(_ field: UnsafeBufferPointer<UInt8>, _ path: String, _ line: Int, _ name: String) throws -> Double {
        var start = 0, end = field.count
        while start < end && (field[start] == 0x20) { start += 1 }
        while end > start && (field[end - 1] == 0x20) { end -= 1 }
        if start == end { return .nan }
        let length = end - start
        let value: Double? = withUnsafeTemporaryAllocation(of: CChar.self, capacity: length + 1) { buffer in
            for i in 0..<length {
                let b = field[start + i]
                // strtod also accepts hex and "inf"/"nan" words: allow only decimal syntax.
                guard (b >= 0x30 && b <= 0x39) || b == 0x2E || b == 0x2D || b == 0x2B || b == 0x65 || b == 0x45 else { return nil }
                buffer[i] = CChar(bitPattern: b)
            }
            buffer[length] = 0
            var endPointer: UnsafeMutablePointer<CChar>?
            let v = strtod(buffer.baseAddress!, &endPointer)
            return endPointer == buffer.baseAddress! + length ? v : nil
        }
        guard let value else {
            let shown = String(decoding: field, as: UTF8.self)
            throw RecBenchError.file(path, line: line, field: name, "'\(shown)' is not a number (column type float)")
        }
        guard value.isFinite else {   // strtod turns 1e400 into infinity
            let shown = String(decoding: field, as: UTF8.self)
            throw RecBenchError.file(path, line: line, field: name, "'\(shown)' is outside the range of a float")
        }
        return value
    }

    /// Calls `body(start, end)` for each separator-delimited field of `bytes`.
    static func forEachField(
        _ bytes: UnsafeBufferPointer<UInt8>, separator: [UInt8], _ body: (Int, Int) throws -> Void
    ) rethrows {
        let first = separator[0]
        var start = 0, i = 0
        let n = bytes.count
        while i < n {
            if bytes[i] == first && (separator.count == 1 || matches(bytes, at: i, separator)) {
                try body(start, i)
                i += separator.count
                start = i
            } else {
                i += 1
            }
        }
        try body(start, n)
    }

    static func matches(_ bytes: UnsafeBufferPointer<UInt8>, at i: Int, _ sep: [UInt8]) -> Bool {
        guard i + sep.count <= bytes.count else { return false }
        for k in 0..<sep.count where bytes[i + k] != sep[k] { return false }
        return true
    }
}

/// Splits a byte buffer into lines (LF or CRLF), numbering them from 1.
struct LineScanner {
    let bytes: UnsafeBufferPointer<UInt8>
    var position = 0
    var lineNumber = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    mutating func next() -> (bytes: UnsafeBufferPointer<UInt8>, number: Int)? {
        guard position < bytes.count else { return nil }
        let start = position
        var end = start
        while end < bytes.count && bytes[end] != 0x0A { end += 1 }
        position = end + 1
        lineNumber += 1
        var contentEnd = end
        if contentEnd > start && bytes[contentEnd - 1] == 0x0D { contentEnd -= 1 }
        return (UnsafeBufferPointer(rebasing: bytes[start..<contentEnd]), lineNumber)
    }
}
