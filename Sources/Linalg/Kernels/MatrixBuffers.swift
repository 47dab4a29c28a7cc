/// The storage of several matrices at once, for kernels that make one pass over many
/// buffers: read-only inputs and outputs written in place. Valid only inside
/// `Matrix.withBuffers`; parallel workers must write disjoint ranges.
public struct MatrixBuffers: @unchecked Sendable {
    /// Base addresses of the inputs, in the order given.
    public let read: [UnsafePointer<Float>]
    /// Base addresses of the outputs, in the order given.
    public let write: [UnsafeMutablePointer<Float>]
}

extension Matrix {
    /// Runs `body` with the base addresses of `inputs` and `outputs` (each non-empty): one
    /// call instead of one nested closure per buffer.
    public static func withBuffers<R>(reading inputs: [Matrix], writing outputs: inout [Matrix], _ body: (MatrixBuffers) -> R) -> R {
        withReadable(inputs[...], []) { read in
            withWritable(&outputs, []) { write in body(MatrixBuffers(read: read, write: write)) }
        }
    }

    /// Runs `body` with the base addresses of `inputs` (each non-empty).
    public static func withBuffers<R>(reading inputs: [Matrix], _ body: (MatrixBuffers) -> R) -> R {
        withReadable(inputs[...], []) { read in body(MatrixBuffers(read: read, write: [])) }
    }

    private static func withReadable<R>(_ rest: ArraySlice<Matrix>, _ done: [UnsafePointer<Float>],
                                        _ body: ([UnsafePointer<Float>]) -> R) -> R {
        guard let m = rest.first else { return body(done) }
        return m.values.withUnsafeBufferPointer { p in withReadable(rest.dropFirst(), done + [p.baseAddress!], body) }
    }

    private static func withWritable<R>(_ all: inout [Matrix], _ done: [UnsafeMutablePointer<Float>],
                                        _ body: ([UnsafeMutablePointer<Float>]) -> R) -> R {
        let i = done.count
        guard i < all.count else { return body(done) }
        // Moved out of the array while its pointer is in use, so the array does not share
        // (and copy-on-write does not duplicate) its storage.
        var m = Matrix(rows: 0, columns: 0)
        swap(&m, &all[i])
        defer { swap(&m, &all[i]) }
        return m.values.withUnsafeMutableBufferPointer { p in withWritable(&all, done + [p.baseAddress!], body) }
    }
}

/// Elements per parallel chunk of elementwise work (fixed, so results never depend on cores).
public let elementwiseChunk = LaneKernels.chunk

extension Matrix {
    /// f over every element, eight lanes at a time.
    @inlinable @inline(__always)
    public func map(_ compute: Compute, _ f: @Sendable (Lanes) -> Lanes) -> Matrix {
        var out = Matrix(uninitializedRows: rows, columns: columns)
        let count = out.values.count
        guard count > 0 else { return out }
        out.values.withUnsafeMutableBufferPointer { o in
            values.withUnsafeBufferPointer { x in LaneKernels.map(x.baseAddress!, into: o.baseAddress!, count: count, compute: compute, f) }
        }
        return out
    }

    /// f over the elements of this matrix and a same-shaped one, eight lanes at a time.
    @inlinable @inline(__always)
    public func zipMap(_ other: Matrix, _ compute: Compute, _ f: @Sendable (Lanes, Lanes) -> Lanes) -> Matrix {
        precondition(rows == other.rows && columns == other.columns, "shape \(rows)×\(columns) vs \(other.rows)×\(other.columns)")
        var out = Matrix(uninitializedRows: rows, columns: columns)
        let count = out.values.count
        guard count > 0 else { return out }
        out.values.withUnsafeMutableBufferPointer { o in
            values.withUnsafeBufferPointer { x in other.values.withUnsafeBufferPointer { y in
                LaneKernels.zipMap(x.baseAddress!, y.baseAddress!, into: o.baseAddress!, count: count, compute: compute, f)
            } }
        }
        return out
    }

    /// self ⊙ other, the loop written out: `zipMap`'s closure is a call per eight lanes, as
    /// costly as the product itself (dropout's masks, gates).
    public func multiplied(by other: Matrix, compute: Compute) -> Matrix {
        precondition(rows == other.rows && columns == other.columns, "shape \(rows)×\(columns) vs \(other.rows)×\(other.columns)")
        var outputs = [Matrix(uninitializedRows: rows, columns: columns)]
        let count = values.count
        guard count > 0 else { return outputs[0] }
        Matrix.withBuffers(reading: [self, other], writing: &outputs) { b in
            compute.forEachChunk(count: count, chunkSize: elementwiseChunk) { range in   // disjoint ranges
                let (x, y, o) = (b.read[0], b.read[1], b.write[0])
                for i in stride(from: range.lowerBound, to: range.upperBound, by: 8) {
                    (Lanes.load(x, i, count: count) * Lanes.load(y, i, count: count)).store(o, i, count: count)
                }
            }
        }
        return outputs[0]
    }

    /// Column sums as a 1 × n matrix: rows added in order, so each column's sum has a fixed
    /// order whatever the worker count. Blocks of `minimumColumnBlock` columns run in parallel,
    /// each walking its rows once with its sums in L1: narrower blocks read every row in strided
    /// pieces, which the prefetchers stream at a third of the speed.
    public func columnSums(_ compute: Compute) -> Matrix { columnSums(rows: 0..<rows, compute) }

    /// Columns a worker sums alone (whole rows up to this width).
    public static let minimumColumnBlock = 512

    /// The column sums of rows `range` only (a GRU step's block while it is still in cache).
    public func columnSums(rows range: Range<Int>, _ compute: Compute) -> Matrix {
        precondition(range.lowerBound >= 0 && range.upperBound <= rows, "columnSums: rows \(range) outside \(rows)")
        let rows = range.count, n = columns, firstRow = range.lowerBound
        var outputs = [Matrix(rows: 1, columns: n)]
        guard rows > 0 && n > 0 else { return outputs[0] }
        Matrix.withBuffers(reading: [self], writing: &outputs) { b in
            compute.forEachChunk(count: n, chunkSize: Self.minimumColumnBlock) { columns in   // disjoint column blocks
                let (input, first, end, groups) = (b.read[0] + firstRow * n, columns.lowerBound, columns.upperBound, (columns.count + 7) / 8)
                withUnsafeTemporaryAllocation(of: Lanes.self, capacity: groups) { sums in
                    sums.initialize(repeating: Lanes())
                    for r in 0..<rows {
                        let row = input + r * n
                        for k in 0..<groups { sums[k] += Lanes.load(row, first + 8 * k, count: end) }
                    }
                    for k in 0..<groups { sums[k].store(b.write[0], first + 8 * k, count: end) }
                }
            }
        }
        return outputs[0]
    }
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
