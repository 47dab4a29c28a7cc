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
        var data = Data(magic)
        func append<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v.littleEndian) { data.append(contentsOf: $0) } }
        append(UInt32(parameters.names.count))
        for name in parameters.names {
            let m = parameters[name], bytes = Array(name.utf8)
            append(UInt32(bytes.count)); data.append(contentsOf: bytes)
            append(UInt32(m.rows)); append(UInt32(m.columns))
            m.values.withUnsafeBytes { data.append(contentsOf: $0) }
        }
        try AtomicWrite.write(data, to: path)
        return path
    }

    /// Reads parameters written by `write`.
    public static func read(_ path: String) throws -> Parameters {
        guard let data = FileManager.default.contents(atPath: path), data.starts(with: magic) else {
            throw RecBenchError.file(path, "is not a recbench checkpoint")
        }
        var offset = magic.count
        func read32() throws -> Int {
            guard offset + 4 <= data.count else { throw RecBenchError.file(path, "is truncated") }
            let v = data[offset..<(offset + 4)].withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) }
            offset += 4
            return Int(v)
        }
        var parameters = Parameters()
        for _ in 0..<(try read32()) {
            let length = try read32()
            guard offset + length <= data.count else { throw RecBenchError.file(path, "is truncated") }
            let name = String(decoding: data[offset..<(offset + length)], as: UTF8.self)
            offset += length
            let rows = try read32(), columns = try read32()
            let byteCount = rows * columns * 4
            guard offset + byteCount <= data.count else { throw RecBenchError.file(path, "is truncated") }
            var values = [Float](repeating: 0, count: rows * columns)
            _ = values.withUnsafeMutableBytes { data[offset..<(offset + byteCount)].copyBytes(to: $0) }
            offset += byteCount
            let value = Matrix(rows: rows, columns: columns, values: values)
            if BatchNorm.isRunningStatistic(name) { parameters.addStatistic(name, value) } else { parameters.add(name, value) }
        }
        return parameters
    }
}
