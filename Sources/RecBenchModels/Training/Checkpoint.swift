import Foundation
import Linalg
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// Parameters on disk: a small self-describing binary (magic, then per parameter its name,
/// shape and little-endian float32 values), written atomically.
public enum Checkpoint {
    static let magic = Array("RBCKPT1\n".utf8)

    /// Writes `parameters` to `path` and returns the path.
    @discardableResult
    public static func write(_ parameters: Parameters, to path: String) throws -> String {
        try AtomicWrite.stream(to: path) { write in
            try write(magic)
            try TensorList.write(parameters.names.map { ($0, parameters[$0]) }, write)
        }
        return path
    }

    /// Reads parameters written by `write`.
    public static func read(_ path: String) throws -> Parameters {
        guard let data = FileManager.default.contents(atPath: path), data.starts(with: magic) else {
            throw RecBenchError.file(path, "is not a recbench checkpoint")
        }
        var reader = TensorList.Reader(data: data, offset: magic.count, path: path)
        var parameters = Parameters()
        for (name, value) in try reader.tensors() {
            if BatchNorm.isRunningStatistic(name) { parameters.addStatistic(name, value) } else { parameters.add(name, value) }
        }
        return parameters
    }
}

/// Named float32 matrices in a byte buffer: a count, then per matrix its name, shape and
/// little-endian values. Checkpoints and saved training states share it.
enum TensorList {
    /// Writes `tensors` (count first) through `write`, one tensor's bytes at a time (a state
    /// as large as the model is never copied whole).
    static func write(_ tensors: [(String, Matrix)], _ write: ([UInt8]) throws -> Void) throws {
        func le(_ v: Int) -> [UInt8] { withUnsafeBytes(of: UInt32(v).littleEndian) { Array($0) } }
        try write(le(tensors.count))
        for (name, m) in tensors {
            let bytes = Array(name.utf8)
            try write(le(bytes.count) + bytes + le(m.rows) + le(m.columns))
            try m.values.withUnsafeBytes { try write(Array($0)) }
        }
    }

    /// Reads what `write` wrote, checking every length against the buffer.
    struct Reader {
        let data: Data
        var offset: Int
        let path: String

        mutating func uint32() throws -> Int {
            try need(4)
            let v = data[(data.startIndex + offset)...].prefix(4).withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) }
            offset += 4
            return Int(v)
        }

        mutating func uint64() throws -> Int {
            try need(8)
            let v = data[(data.startIndex + offset)...].prefix(8).withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
            offset += 8
            guard v <= UInt64(Int.max) else { throw RecBenchError.file(path, "is truncated") }
            return Int(v)
        }

        mutating func bytes(_ count: Int) throws -> Data {
            try need(count)
            defer { offset += count }
            return data[(data.startIndex + offset)..<(data.startIndex + offset + count)]
        }

        func need(_ count: Int) throws {
            guard count >= 0, count <= data.count - offset else { throw RecBenchError.file(path, "is truncated") }
        }

        mutating func tensors() throws -> [(String, Matrix)] {
            var result: [(String, Matrix)] = [], names = Set<String>()
            for _ in 0..<(try uint32()) {
                let name = String(decoding: try bytes(try uint32()), as: UTF8.self)
                guard names.insert(name).inserted else { throw RecBenchError.file(path, field: name, "appears twice") }
                let rows = try uint32(), columns = try uint32()
                let (count, overflow) = rows.multipliedReportingOverflow(by: columns)
                guard !overflow, count <= (data.count - offset) / 4 else { throw RecBenchError.file(path, "is truncated") }
                let raw = try bytes(count * 4)
                var values = [Float](repeating: 0, count: count)
                _ = values.withUnsafeMutableBytes { raw.copyBytes(to: $0) }
                result.append((name, Matrix(rows: rows, columns: columns, values: values)))
            }
            return result
        }
    }
}
