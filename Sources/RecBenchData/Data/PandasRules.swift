import RecBenchSupport

/// RecBole 1.2.1 reads atomic files with pandas' CSV parser (`pd.read_csv`, default quoting and
/// missing-value texts), so with a one-character `field_separator` (pandas quotes only then:
/// a longer one is a regular expression, split with quotes taken literally) a field whose
/// first byte is `"` is a quoted field: it ends at the next lone `"`, `""` inside stands for
/// one `"`, and a separator or the line's end must follow. A `"` anywhere
/// else is an ordinary byte. recbench reads the same values; a quoted field that runs into the
/// next line (which pandas would join) is refused, since `recbench convert` never writes one.
extension AtomicFileReader {
    static let quote: UInt8 = 0x22

    /// The texts pandas 2.2 reads as a missing value by default (`STR_NA_VALUES`), whatever the
    /// column's dtype: RecBole 1.2.1 drops a row whose user or item id is one of them (with
    /// `benchmark_filename`, which skips its filtering, the id becomes its padding id).
    public static let pandasMissing: Set<String> = ["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
                                                    "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"]

    /// Whether pandas quotes fields under `separator`: only a one-character one (`len(sep) == 1`).
    static func quotes(under separator: [UInt8]) -> Bool {
        String(decoding: separator, as: UTF8.self).unicodeScalars.count == 1
    }

    /// Calls `body` with each field of a data line, a quoted one unquoted when `quoting`.
    static func forEachRecordField(
        _ bytes: UnsafeBufferPointer<UInt8>, separator: [UInt8], quoting: Bool, path: String, line: Int,
        _ body: (UnsafeBufferPointer<UInt8>) throws -> Void
    ) throws {
        var start = 0
        while true {
            if quoting && start < bytes.count && bytes[start] == quote {
                let (value, end) = try unquoted(bytes, from: start, separator: separator, path: path, line: line)
                try value.withUnsafeBufferPointer { try body($0) }
                guard end < bytes.count else { return }
                start = end + separator.count
                continue
            }
            var i = start
            while i < bytes.count && !(bytes[i] == separator[0] && matches(bytes, at: i, separator)) { i += 1 }
            try body(UnsafeBufferPointer(rebasing: bytes[start..<i]))
            guard i < bytes.count else { return }
            start = i + separator.count
        }
    }

    /// The value of the quoted field that opens at `start`, and where it ends (a separator's
    /// first byte, or the line's end).
    private static func unquoted(
        _ bytes: UnsafeBufferPointer<UInt8>, from start: Int, separator: [UInt8], path: String, line: Int
    ) throws -> (value: [UInt8], end: Int) {
        var value: [UInt8] = []
        var i = start + 1
        while i < bytes.count {
            if bytes[i] == quote {
                if i + 1 < bytes.count && bytes[i + 1] == quote { value.append(quote); i += 2; continue }
                let end = i + 1
                guard end == bytes.count || matches(bytes, at: end, separator) else {
                    throw RecBenchError.file(path, line: line, "a field that starts with a double quote is quoted (RecBole reads atomic files "
                                             + "with pandas): its closing quote must end the field; write a literal \" as \"\"")
                }
                return (value, end)
            }
            value.append(bytes[i])
            i += 1
        }
        throw RecBenchError.file(path, line: line, "a field that starts with a double quote is quoted (RecBole reads atomic files with pandas) "
                                 + "and does not close on this line; write a literal \" as \"\" inside quotes")
    }
}
