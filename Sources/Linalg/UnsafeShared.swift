/// Wraps a value that is shared across threads under a discipline the compiler cannot check
/// (for example a pointer whose rows are written by disjoint workers). The one place the core
/// opts out of Sendable checking; every use must say why it is safe.
public struct UnsafeShared<Value>: @unchecked Sendable {
    /// The wrapped value.
    public let value: Value
    /// Wraps `value`.
    public init(_ value: Value) { self.value = value }
}

extension Matrix {
    /// Runs `body(r, row r's storage)` for every row, rows split over `compute`'s workers in
    /// chunks of `chunkSize`: each worker writes only its own rows (a scorer's block of users).
    public mutating func updateRows(compute: Compute, chunkSize: Int = 1, _ body: @Sendable (Int, UnsafeMutablePointer<Float>) -> Void) {
        let columns = self.columns, rows = self.rows
        values.withUnsafeMutableBufferPointer { out in
            let shared = UnsafeShared(out.baseAddress!)
            compute.forEachChunk(count: rows, chunkSize: chunkSize) { range in
                for r in range { body(r, shared.value + r * columns) }
            }
        }
    }
}
