import Foundation
import RecBenchSupport

/// A streaming CSV reader (RFC 4180: quoted fields, `""` escapes, line breaks inside
/// quotes; LF or CRLF). Memory stays constant in the number of rows: it holds one buffer
/// and one record.
public struct CSVReader {
    /// The file being read.
    public let path: String
    /// The field delimiter (given, or detected from the header line).
    public let delimiter: UInt8
    private var stream: ByteStream
    /// 1-based line where the next record starts.
    private var line = 1

    /// Opens `path`. With no `delimiter`, picks the most frequent of `,` tab `;` `|` in the
    /// first line (outside quotes), defaulting to `,`.
    public init(path: String, delimiter: UInt8? = nil) throws {
        self.path = path
        guard let handle = fopen(path, "rb") else {
            throw RecBenchError.file(path, FileManager.default.fileExists(atPath: path) ? "cannot be read" : "file not found")
        }
        stream = ByteStream(handle)
        if stream.peek() == nil { throw RecBenchError.file(path, line: 1, "empty file: expected a header row") }
        // Skip a UTF-8 byte-order mark.
        if stream.peek() == 0xEF {
            let bom = stream.peekPrefix(3)
            if bom == [0xEF, 0xBB, 0xBF] { _ = stream.next(); _ = stream.next(); _ = stream.next() }
        }
        self.delimiter = delimiter ?? CSVReader.detectDelimiter(stream.peekPrefix(64 * 1024))
    }

    /// The delimiter most frequent in the first line, outside quotes.
    static func detectDelimiter(_ prefix: [UInt8]) -> UInt8 {
        var counts: [UInt8: Int] = [0x2C: 0, 0x09: 0, 0x3B: 0, 0x7C: 0]
        var quoted = false
        for b in prefix {
            if b == 0x22 { quoted.toggle() }
            if !quoted && (b == 0x0A || b == 0x0D) { break }
            if !quoted, counts[b] != nil { counts[b]! += 1 }
        }
        let best = counts.max { $0.value != $1.value ? $0.value < $1.value : $0.key > $1.key }!
        return best.value > 0 ? best.key : 0x2C
    }

    /// The next record and the line it starts on, or nil at the end of the file. Blank
    /// lines are skipped.
    public mutating func next() throws -> (fields: [String], line: Int)? {
        while true {
            guard stream.peek() != nil else { return nil }
            let start = line
            var fields: [String] = []
            var field: [UInt8] = []
            var quoted = false, wasQuoted = false
            func finish() throws {
                guard let s = String(validating: field, as: UTF8.self) else {
                    throw RecBenchError.file(path, line: start, "field \(fields.count + 1) is not valid UTF-8")
                }
                fields.append(s)
                field.removeAll(keepingCapacity: true)
                wasQuoted = false
            }
            recordLoop: while let b = stream.next() {
                if quoted {
                    if b == 0x22 {
                        if stream.peek() == 0x22 { _ = stream.next(); field.append(0x22) } else { quoted = false }
                    } else {
                        if b == 0x0A { line += 1 }
                        field.append(b)
                    }
                    continue
                }
                switch b {
                case delimiter:
                    try finish()
                case 0x0A:
                    line += 1
                    break recordLoop
                case 0x0D:
                    if stream.peek() == 0x0A { continue }
                    line += 1
                    break recordLoop
                case 0x22 where field.isEmpty && !wasQuoted:
                    quoted = true
                    wasQuoted = true
                default:
                    if wasQuoted {
                        throw RecBenchError.file(path, line: line, "unexpected text after a closing quote in field \(fields.count + 1)")
                    }
                    if b == 0x22 {
                        throw RecBenchError.file(path, line: line,
                                                 "stray quote in field \(fields.count + 1): quote the whole field and double inner quotes (\"\")")
                    }
                    field.append(b)
                }
            }
            if quoted { throw RecBenchError.file(path, line: start, "a quoted field is not closed before the end of the file") }
            try finish()
            if fields.count == 1 && fields[0].isEmpty && !wasQuoted { continue }   // blank line
            return (fields, start)
        }
    }
}

/// Buffered byte input from a C stream, with one-byte lookahead; closes the stream when
/// done or when dropped.
final class ByteStream {
    private let handle: UnsafeMutablePointer<FILE>
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)
    private var position = 0
    private var count = 0
    private var finished = false

    init(_ handle: UnsafeMutablePointer<FILE>) { self.handle = handle }

    deinit { if !finished { fclose(handle) } }

    private func refill() {
        guard !finished else { return }
        if position < count { return }
        count = buffer.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, handle) }
        position = 0
        if count == 0 { finished = true; fclose(handle) }
    }

    func peek() -> UInt8? {
        if position >= count { refill() }
        return position < count ? buffer[position] : nil
    }

    func next() -> UInt8? {
        guard let b = peek() else { return nil }
        position += 1
        return b
    }

    /// Up to `n` bytes from the current position without consuming them (within one buffer).
    func peekPrefix(_ n: Int) -> [UInt8] {
        _ = peek()
        return Array(buffer[position..<min(count, position + n)])
    }
}
