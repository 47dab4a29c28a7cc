/// A dense, row-major, contiguous float32 matrix.
public struct Matrix: Sendable, Equatable {
    /// Number of rows.
    public let rows: Int
    /// Number of columns.
    public let columns: Int
    /// Row-major elements: element (r, c) is at `r * columns + c`.
    public var values: [Float]

    /// A `rows × columns` matrix with every element set to `value`.
    public init(rows: Int, columns: Int, repeating value: Float = 0) {
        precondition(rows >= 0 && columns >= 0, "Matrix: negative shape \(rows)×\(columns)")
        self.rows = rows
        self.columns = columns
        self.values = [Float](repeating: value, count: rows * columns)
    }

    /// A `rows × columns` matrix whose elements the caller must all overwrite before reading
    /// (op outputs, GEMM results with β = 0): skips zero-filling large buffers.
    public init(uninitializedRows rows: Int, columns: Int) {
        precondition(rows >= 0 && columns >= 0, "Matrix: negative shape \(rows)×\(columns)")
        self.rows = rows
        self.columns = columns
        let count = rows * columns
        self.values = [Float](unsafeUninitializedCapacity: Matrix.allocationSize(count)) { _, initialized in initialized = count }
    }

    /// Elements to allocate for `count`: large buffers are rounded up to one of sixteen sizes
    /// per power of two, so that batches whose sizes differ a little (packed sequences) can
    /// reuse the blocks the last batch freed rather than grow the heap. At most 6 % more memory.
    static func allocationSize(_ count: Int) -> Int {
        guard count >= 1 << 18 else { return count }
        let step = 1 << (Int.bitWidth - count.leadingZeroBitCount - 5)
        return (count + step - 1) / step * step
    }

    /// `count` copies of the 1 × n matrix `row`, one per row (a broadcast bias).
    public init(repeatingRow row: Matrix, count: Int, compute: Compute) {
        self.init(uninitializedRows: count, columns: row.columns)
        fillRows(with: row, compute: compute)
    }

    /// Sets every row to the 1 × columns matrix `row`.
    public mutating func fillRows(with row: Matrix, compute: Compute) {
        precondition(row.rows == 1 && row.columns == columns, "fillRows: expected one row of \(columns), got \(row.rows)×\(row.columns)")
        let n = columns, count = rows
        guard n > 0 else { return }
        values.withUnsafeMutableBufferPointer { out in
            row.values.withUnsafeBufferPointer { source in
                let p = UnsafeShared((out.baseAddress!, source.baseAddress!))   // workers write disjoint rows
                compute.forEachChunk(count: count, chunkSize: max(1, (1 << 15) / n)) { rows in
                    for r in rows { (p.value.0 + r * n).update(from: p.value.1, count: n) }
                }
            }
        }
    }

    /// A matrix over the given row-major elements.
    public init(rows: Int, columns: Int, values: [Float]) {
        precondition(values.count == rows * columns, "Matrix: \(values.count) values for \(rows)×\(columns)")
        self.rows = rows
        self.columns = columns
        self.values = values
    }

    /// Element at row `r`, column `c`.
    @inlinable
    public subscript(r: Int, c: Int) -> Float {
        get { values[r * columns + c] }
        set { values[r * columns + c] = newValue }
    }

    /// The elements of row `r`.
    public func row(_ r: Int) -> ArraySlice<Float> {
        values[(r * columns)..<((r + 1) * columns)]
    }

    /// Rows `range`, as a new matrix.
    public func rows(_ range: Range<Int>) -> Matrix {
        Matrix(rows: range.count, columns: columns, values: Array(values[(range.lowerBound * columns)..<(range.upperBound * columns)]))
    }

    /// diag(s) · self: row r scaled by s[r] (per-user cross weights, a normalisation folded into the next layer).
    public func scalingRows<S: Sequence<Float>>(by s: S) -> Matrix {
        var out = self, r = 0
        for x in s {
            precondition(r < rows, "Matrix.scalingRows: more scales than rows")
            for c in 0..<columns { out.values[r * columns + c] *= x }
            r += 1
        }
        precondition(r == rows, "Matrix.scalingRows: \(r) scales for \(rows) rows")
        return out
    }

    /// self · diag(s): column c scaled by s[c].
    public func scalingColumns(by s: [Float]) -> Matrix {
        precondition(s.count == columns, "Matrix.scalingColumns: \(s.count) scales for \(columns) columns")
        var out = self
        for r in 0..<rows { for c in 0..<columns { out.values[r * columns + c] *= s[c] } }
        return out
    }

    /// The transpose, as a new matrix.
    public func transposed() -> Matrix {
        var result = Matrix(rows: columns, columns: rows)
        for r in 0..<rows {
            for c in 0..<columns { result.values[c * rows + r] = values[r * columns + c] }
        }
        return result
    }

    /// Σ values², in two accumulators of eight lanes (a scalar loop is one long chain of
    /// dependent adds: LightGCN's batch norms spent 15 % of its training in it).
    public var sumOfSquares: Float {
        values.withUnsafeBufferPointer { v in
            guard let p = v.baseAddress else { return 0 }
            let n = v.count
            var a = Lanes(), b = Lanes(), i = 0
            while i + 16 <= n {
                let x = Lanes.load(p, i, count: n), y = Lanes.load(p, i + 8, count: n)
                a += x * x; b += y * y
                i += 16
            }
            while i < n {   // the tail; lanes past the end load as 0
                let x = Lanes.load(p, i, count: n)
                a += x * x
                i += 8
            }
            return (a + b).sum()
        }
    }

    /// True when every element is finite (no NaN or infinity).
    public var isFinite: Bool { isFinite(compute: .serial) }

    /// True when every element is finite, checked in parallel chunks.
    public func isFinite(compute: Compute) -> Bool {
        // x · 0 is 0 for finite x and NaN for ±∞ and NaN, so the sum is 0 exactly when all are finite.
        values.withUnsafeBufferPointer { p in
            guard let base = p.baseAddress else { return true }
            let chunk = 1 << 16, count = p.count
            var finite = [Bool](repeating: true, count: (count + chunk - 1) / chunk)
            finite.withUnsafeMutableBufferPointer { f in
                let shared = UnsafeShared((base, f.baseAddress!))   // one flag per chunk
                compute.forEachChunk(count: count, chunkSize: chunk) { range in
                    var sum = Lanes()
                    for i in stride(from: range.lowerBound, to: range.upperBound, by: 8) { sum += Lanes.load(shared.value.0, i, count: count) * 0 }
                    shared.value.1[range.lowerBound / chunk] = sum.total == 0
                }
            }
            return !finite.contains(false)
        }
    }
}
