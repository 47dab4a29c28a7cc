import CLanes
/// A compressed-sparse-row float32 matrix. Column indices are sorted within each row and
/// unique: building from entries sums duplicates (as scipy's COO → CSR does).
public struct SparseMatrix: Sendable, Equatable {
    /// Number of rows.
    public let rows: Int
    /// Number of columns.
    public let columns: Int
    /// Row `r`'s entries are at `rowStarts[r]..<rowStarts[r + 1]`; `rowStarts.count == rows + 1`.
    public private(set) var rowStarts: [Int]
    /// Column of each stored entry.
    public private(set) var columnIndices: [Int32]
    /// Value of each stored entry.
    public private(set) var values: [Float]

    /// Builds from coordinate entries; duplicate (row, column) pairs are summed.
    public init(rows: Int, columns: Int, rowIndices: [Int32], columnIndices: [Int32], values: [Float]? = nil) {
        precondition(rowIndices.count == columnIndices.count, "SparseMatrix: index arrays differ in length")
        precondition(values == nil || values!.count == rowIndices.count, "SparseMatrix: values differ in length")
        self.rows = rows
        self.columns = columns
        // Counting sort by row keeps the input order within a row; then sort columns per row.
        var counts = [Int](repeating: 0, count: rows + 1)
        for r in rowIndices {
            precondition(r >= 0 && Int(r) < rows, "SparseMatrix: row \(r) out of 0..<\(rows)")
            counts[Int(r) + 1] += 1
        }
        for r in 0..<rows { counts[r + 1] += counts[r] }
        var next = counts
        var cols = [Int32](repeating: 0, count: rowIndices.count)
        var vals = [Float](repeating: 1, count: rowIndices.count)
        for e in 0..<rowIndices.count {
            let c = columnIndices[e]
            precondition(c >= 0 && Int(c) < columns, "SparseMatrix: column \(c) out of 0..<\(columns)")
            let slot = next[Int(rowIndices[e])]
            cols[slot] = c
            if let values { vals[slot] = values[e] }
            next[Int(rowIndices[e])] += 1
        }
        // Sort each row by column and merge duplicates.
        var outStarts = [Int](repeating: 0, count: rows + 1)
        var outCols = [Int32]()
        var outVals = [Float]()
        outCols.reserveCapacity(cols.count)
        outVals.reserveCapacity(cols.count)
        var pairs: [(Int32, Float)] = []
        for r in 0..<rows {
            pairs.removeAll(keepingCapacity: true)
            for e in counts[r]..<counts[r + 1] { pairs.append((cols[e], vals[e])) }
            pairs.sort { $0.0 < $1.0 }
            var i = 0
            while i < pairs.count {
                var sum = pairs[i].1
                var j = i + 1
                while j < pairs.count && pairs[j].0 == pairs[i].0 { sum += pairs[j].1; j += 1 }
                outCols.append(pairs[i].0)
                outVals.append(sum)
                i = j
            }
            outStarts[r + 1] = outCols.count
        }
        self.rowStarts = outStarts
        self.columnIndices = outCols
        self.values = outVals
    }

    /// A matrix from CSR arrays whose rows are already sorted by column without duplicates
    /// (no sorting or merging, unlike building from entries).
    public init(rows: Int, columns: Int, rowStarts: [Int], columnIndices: [Int32], values: [Float]) {
        precondition(rowStarts.count == rows + 1 && rowStarts.first == 0 && rowStarts.last == columnIndices.count,
                     "SparseMatrix: rowStarts do not describe \(rows) rows of \(columnIndices.count) entries")
        precondition(values.count == columnIndices.count, "SparseMatrix: values differ in length")
        self.rows = rows
        self.columns = columns
        self.rowStarts = rowStarts
        self.columnIndices = columnIndices
        self.values = values
    }

    /// An empty `rows × columns` matrix.
    public init(rows: Int, columns: Int) {
        self.init(rows: rows, columns: columns, rowIndices: [], columnIndices: [])
    }

    /// Number of stored entries.
    public var nonzeroCount: Int { columnIndices.count }

    /// Row `r`'s entry positions in `columnIndices` / `values`.
    @inlinable
    public func entries(ofRow r: Int) -> Range<Int> { rowStarts[r]..<rowStarts[r + 1] }

    /// Columns of row `r`, ascending.
    public func columns(ofRow r: Int) -> ArraySlice<Int32> { columnIndices[entries(ofRow: r)] }

    /// Stored value at (r, c), or 0.
    public subscript(r: Int, c: Int) -> Float {
        let range = entries(ofRow: r)
        var lo = range.lowerBound, hi = range.upperBound
        while lo < hi {
            let mid = (lo + hi) / 2
            if Int(columnIndices[mid]) < c { lo = mid + 1 } else { hi = mid }
        }
        return lo < range.upperBound && Int(columnIndices[lo]) == c ? values[lo] : 0
    }

    /// The listed rows, in the listed order (repeats allowed): a `indices.count × columns` matrix.
    public func selectingRows(_ indices: [Int32]) -> SparseMatrix {
        var starts = [0], cols = [Int32](), vals = [Float]()
        starts.reserveCapacity(indices.count + 1)
        for r in indices {
            let range = entries(ofRow: Int(r))
            cols.append(contentsOf: columnIndices[range]); vals.append(contentsOf: values[range])
            starts.append(cols.count)
        }
        return SparseMatrix(rows: indices.count, columns: columns, rowStarts: starts, columnIndices: cols, values: vals)
    }

    /// The transpose (CSR of the transpose, i.e. this matrix in CSC form). A counting sort:
    /// rows are visited in order, so each output row comes out sorted with no extra pass.
    public func transposed() -> SparseMatrix {
        var starts = [Int](repeating: 0, count: columns + 1)
        for c in columnIndices { starts[Int(c) + 1] += 1 }
        for c in 0..<columns { starts[c + 1] += starts[c] }
        var next = starts
        var cols = [Int32](repeating: 0, count: nonzeroCount)
        var vals = [Float](repeating: 0, count: nonzeroCount)
        for r in 0..<rows {
            for e in rowStarts[r]..<rowStarts[r + 1] {
                let c = Int(columnIndices[e])
                cols[next[c]] = Int32(r)
                vals[next[c]] = values[e]
                next[c] += 1
            }
        }
        var t = SparseMatrix(rows: columns, columns: rows)
        t.rowStarts = starts; t.columnIndices = cols; t.values = vals
        return t
    }

    /// The dense copy.
    public func dense() -> Matrix {
        var m = Matrix(rows: rows, columns: columns)
        for r in 0..<rows { for e in entries(ofRow: r) { m.values[r * columns + Int(columnIndices[e])] = values[e] } }
        return m
    }

    /// Sum of squares of each column (length `columns`).
    public func columnSquaredNorms() -> [Float] {
        var sums = [Float](repeating: 0, count: columns)
        for e in 0..<nonzeroCount { sums[Int(columnIndices[e])] += values[e] * values[e] }
        return sums
    }

    /// Sum of each column (length `columns`).
    public func columnSums() -> [Float] {
        var sums = [Float](repeating: 0, count: columns)
        for e in 0..<nonzeroCount { sums[Int(columnIndices[e])] += values[e] }
        return sums
    }

    /// Keeps only the rows and entries for which `keep(row, column)` is true.
    public func filtered(_ keep: (Int, Int32) -> Bool) -> SparseMatrix {
        var starts = [Int](repeating: 0, count: rows + 1)
        var cols = [Int32](), vals = [Float]()
        for r in 0..<rows {
            for e in entries(ofRow: r) where keep(r, columnIndices[e]) {
                cols.append(columnIndices[e]); vals.append(values[e])
            }
            starts[r + 1] = cols.count
        }
        var m = self
        m.rowStarts = starts; m.columnIndices = cols; m.values = vals
        return m
    }
}

extension SparseMatrix {
    /// The dense Gram matrix `selfᵀ · self` (columns × columns), built straight from the
    /// sparse rows: for sparse inputs this beats `ssyrk` on a densified copy (BLAS-NOTES).
    /// With `upperOnly`, only entries (i, j ≥ i) are computed and the rest stay 0 — half the
    /// work, and all a Cholesky factorisation reads. Each output row is written by one
    /// worker in a fixed order, so the result is deterministic.
    public func gram(upperOnly: Bool = false, compute: Compute) -> Matrix {
        let n = columns
        var g = Matrix(rows: n, columns: n)
        let byColumn = transposed()   // row i lists the rows (users) that have column i
        g.values.withUnsafeMutableBufferPointer { out in
            let shared = UnsafeShared(out.baseAddress!)   // workers write disjoint rows of g
            compute.forEachChunk(count: n, chunkSize: 32) { range in
                for i in range { self.accumulateGramRow(i, byColumn: byColumn, from: upperOnly ? i : 0, into: shared.value + i * n) }
            }
        }
        return g
    }

    /// Calls `body(i, row)` for every row i of the Gram matrix `selfᵀ · self`, each built in
    /// a buffer of `columns` floats that its worker reuses: memory is one row per worker,
    /// never the n × n matrix. `body` may overwrite the row; calls run concurrently.
    public func forEachGramRow(compute: Compute, _ body: @Sendable (Int, UnsafeMutableBufferPointer<Float>) -> Void) {
        let n = columns
        let byColumn = transposed()
        compute.forEachChunk(count: n, chunkSize: 32) { range in
            var row = [Float](repeating: 0, count: n)
            row.withUnsafeMutableBufferPointer { buffer in
                for i in range {
                    buffer.update(repeating: 0)
                    self.accumulateGramRow(i, byColumn: byColumn, from: 0, into: buffer.baseAddress!)
                    body(i, buffer)
                }
            }
        }
    }

    /// Adds row i of `selfᵀ · self`, columns ≥ `from`, into `out`: for each row u holding
    /// column i, u's entries scaled by its value at i. `byColumn` is `transposed()`.
    private func accumulateGramRow(_ i: Int, byColumn: SparseMatrix, from: Int, into out: UnsafeMutablePointer<Float>) {
        columnIndices.withUnsafeBufferPointer { cp in
            values.withUnsafeBufferPointer { vp in
                for e in byColumn.entries(ofRow: i) {
                    let u = Int(byColumn.columnIndices[e])
                    let w = byColumn.values[e]
                    var f = rowStarts[u]
                    let end = rowStarts[u + 1]
                    if from > 0 {   // columns are sorted: binary search for the first ≥ `from`
                        var hi = end
                        while f < hi {
                            let mid = (f + hi) >> 1
                            if Int(cp[mid]) < from { f = mid + 1 } else { hi = mid }
                        }
                    }
                    while f < end {
                        out[Int(cp[f])] += w * vp[f]
                        f += 1
                    }
                }
            }
        }
    }

    /// Writes `self[rows[i], :] · dense` into row `i` of `output` for every listed row (or
    /// adds it, when `adding`), in parallel over rows, with the given kernel build. `output`
    /// must be `rows.count × dense.columns`.
    public func multiply(rows selected: ArraySlice<Int32>, by dense: Matrix, into output: inout Matrix, adding: Bool = false,
                         compute: Compute, kernels: KernelSet = .current) {
        precondition(dense.rows == columns, "multiply: \(rows)×\(columns) by \(dense.rows)×\(dense.columns)")
        precondition(output.rows == selected.count && output.columns == dense.columns, "multiply: output shape")
        let n = dense.columns
        guard n > 0, !selected.isEmpty else { return }
        guard !values.isEmpty else {   // no entries: the product is zero (and the buffers have no address)
            if !adding { output.values.withUnsafeMutableBufferPointer { $0.update(repeating: 0) } }
            return
        }
        let selectedRows = Array(selected)
        if kernels == .avx2 { return multiplyAVX2(rows: selectedRows, by: dense, into: &output, adding: adding, compute: compute) }
        withProductBuffers(selectedRows, dense, &output) { p in   // each worker owns disjoint output rows
            compute.forEachChunk(count: selectedRows.count, chunkSize: 16) { range in
                let (o, dp, sr, rs, ci, vs) = p.value
                for i in range {
                    let row = o + i * n
                    if !adding { row.initialize(repeating: 0, count: n) }
                    let r = Int(sr[i])
                    Self.addRowProduct(row, dp, n, ci, vs, rs[r], rs[r + 1])
                }
            }
        }
    }

    /// row[0..<n] += Σ_e vs[e] · dense[ci[e]·n ..< +n] for e in start..<end, the baseline
    /// build's loop.
    @inline(__always)
    static func addRowProduct(_ row: UnsafeMutablePointer<Float>, _ dp: UnsafePointer<Float>, _ n: Int, _ ci: UnsafePointer<Int32>,
                              _ vs: UnsafePointer<Float>, _ start: Int, _ end: Int) {
        var e = start
        // Four source rows per pass over the output row: a quarter of the accumulator loads and stores.
        while e + 4 <= end {
            let (w0, w1, w2, w3) = (vs[e], vs[e + 1], vs[e + 2], vs[e + 3])
            let s0 = dp + Int(ci[e]) * n, s1 = dp + Int(ci[e + 1]) * n
            let s2 = dp + Int(ci[e + 2]) * n, s3 = dp + Int(ci[e + 3]) * n
            for j in stride(from: 0, to: n, by: 8) {
                let sum = (w0 * Lanes.load(s0, j, count: n) + w1 * Lanes.load(s1, j, count: n))
                    + (w2 * Lanes.load(s2, j, count: n) + w3 * Lanes.load(s3, j, count: n))
                (Lanes.load(row, j, count: n) + sum).store(row, j, count: n)
            }
            e += 4
        }
        while e < end {
            let w = vs[e], src = dp + Int(ci[e]) * n
            for j in stride(from: 0, to: n, by: 8) {
                (Lanes.load(row, j, count: n) + w * Lanes.load(src, j, count: n)).store(row, j, count: n)
            }
            e += 1
        }
    }

    /// Pooled lookups side by side: block f of output row i is `lookups[f].bags[rows[i], :] ·
    /// dense` (rows × F·n), the same sums as `multiply(rows:by:into:)` gives each field, in
    /// one parallel pass over chunks of rows (a batch's seven fields of ten columns are too
    /// little work for one dispatch each).
    public static func multiplySideBySide(_ lookups: [(bags: SparseMatrix, rows: [Int32])], by dense: Matrix, compute: Compute,
                                          kernels: KernelSet = .current) -> Matrix {
        let n = dense.columns, count = lookups.first?.rows.count ?? 0, width = lookups.count * n
        precondition(lookups.allSatisfy { $0.rows.count == count && $0.bags.columns == dense.rows }, "multiplySideBySide: shapes differ")
        var out = Matrix(rows: count, columns: width)
        guard count > 0 && n > 0 else { return out }
        out.values.withUnsafeMutableBufferPointer { o in
            dense.values.withUnsafeBufferPointer { d in
                let shared = UnsafeShared((o.baseAddress!, d.baseAddress!))   // each worker owns disjoint output rows
                compute.forEachChunk(count: count, chunkSize: 256) { range in
                    let (op, dp) = shared.value
                    for (f, l) in lookups.enumerated() where !l.bags.values.isEmpty {
                        l.bags.rowStarts.withUnsafeBufferPointer { rs in
                            l.bags.columnIndices.withUnsafeBufferPointer { ci in
                                l.bags.values.withUnsafeBufferPointer { vs in
                                    for i in range {
                                        let r = Int(l.rows[i]), row = op + i * width + f * n
                                        if kernels == .avx2 {
                                            recbench_sparse_block_avx2(row, dp, n, n, ci.baseAddress!, vs.baseAddress!, rs[r], rs[r + 1])
                                        } else {
                                            addRowProduct(row, dp, n, ci.baseAddress!, vs.baseAddress!, rs[r], rs[r + 1])
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        return out
    }

    /// `multiply(rows:by:into:)` with the AVX2 + FMA kernel, in tiles of 64 rows × 64 columns:
    /// a tile reads only its 64 columns of `dense` (rows × 64 floats, which stay in L2 while
    /// consecutive tiles of the same columns go by), where a whole output row would sweep all
    /// of `dense` through the cache. Tiles of one column block come one after another, so
    /// the workers share it.
    func multiplyAVX2(rows selectedRows: [Int32], by dense: Matrix, into output: inout Matrix, adding: Bool, compute: Compute) {
        let n = dense.columns, tileRows = 64, blockColumns = 64
        let groups = (selectedRows.count + tileRows - 1) / tileRows, blocks = (n + blockColumns - 1) / blockColumns
        withProductBuffers(selectedRows, dense, &output) { p in   // each tile is a disjoint block of the output
            compute.forEachChunk(count: groups * blocks, chunkSize: 1) { tiles in
                let (o, dp, sr, rs, ci, vs) = p.value
                let block = tiles.lowerBound / groups, group = tiles.lowerBound % groups
                let j0 = block * blockColumns, width = min(blockColumns, n - j0)
                for i in (group * tileRows)..<min(selectedRows.count, (group + 1) * tileRows) {
                    let row = o + i * n + j0, r = Int(sr[i])
                    if !adding { row.initialize(repeating: 0, count: width) }
                    recbench_sparse_block_avx2(row, dp + j0, n, width, ci, vs, rs[r], rs[r + 1])
                }
            }
        }
    }

    /// The raw buffers a product of selected rows with a dense matrix reads and writes:
    /// output, dense side, selected rows, and this matrix's row starts, columns and values
    /// (shared with the workers; the caller keeps their writes disjoint).
    func withProductBuffers(_ selectedRows: [Int32], _ dense: Matrix, _ output: inout Matrix,
                            _ body: (UnsafeShared<(UnsafeMutablePointer<Float>, UnsafePointer<Float>, UnsafePointer<Int32>,
                                                   UnsafePointer<Int>, UnsafePointer<Int32>, UnsafePointer<Float>)>) -> Void) {
        output.values.withUnsafeMutableBufferPointer { out in
            dense.values.withUnsafeBufferPointer { d in
                selectedRows.withUnsafeBufferPointer { sr in
                    rowStarts.withUnsafeBufferPointer { rs in
                        columnIndices.withUnsafeBufferPointer { ci in
                            values.withUnsafeBufferPointer { vs in
                                body(UnsafeShared((out.baseAddress!, d.baseAddress!, sr.baseAddress!, rs.baseAddress!, ci.baseAddress!, vs.baseAddress!)))
                            }
                        }
                    }
                }
            }
        }
    }

    /// Like `multiply(rows:by:into:)` with a sparse right-hand side.
    public func multiply(rows selected: ArraySlice<Int32>, bySparse other: SparseMatrix, into output: inout Matrix, compute: Compute) {
        precondition(other.rows == columns, "multiply: inner dimensions differ")
        precondition(output.rows == selected.count && output.columns == other.columns, "multiply: output shape")
        let n = other.columns
        let selectedRows = Array(selected)
        output.values.withUnsafeMutableBufferPointer { out in
            let shared = UnsafeShared(out.baseAddress!)   // each worker owns disjoint output rows
            compute.forEachChunk(count: selectedRows.count, chunkSize: 16) { range in
                for i in range {
                    let row = shared.value + i * n
                    row.initialize(repeating: 0, count: n)
                    let r = Int(selectedRows[i])
                    for e in self.rowStarts[r]..<self.rowStarts[r + 1] {
                        let w = self.values[e]
                        let k = Int(self.columnIndices[e])
                        for f in other.rowStarts[k]..<other.rowStarts[k + 1] {
                            row[Int(other.columnIndices[f])] += w * other.values[f]
                        }
                    }
                }
            }
        }
    }
}

extension SparseMatrix {
    /// The same pattern with every stored value set to 1.
    public func binarized() -> SparseMatrix {
        SparseMatrix(rows: rows, columns: columns, rowStarts: rowStarts, columnIndices: columnIndices,
                     values: [Float](repeating: 1, count: nonzeroCount))
    }
}

extension SparseMatrix {
    /// Whether (row, column) is stored: compares with every entry of a row of at most 32
    /// (no branch to mispredict, where a binary search mispredicts half its steps), binary
    /// search in a longer sorted row.
    @inlinable
    public func contains(row: Int, column: Int) -> Bool {
        var lo = rowStarts[row], hi = rowStarts[row + 1]
        let c = Int32(column)
        if hi - lo <= 32 {
            return columnIndices.withUnsafeBufferPointer { entries in
                var matches: UInt8 = 0
                for e in lo..<hi { matches |= entries[e] == c ? 1 : 0 }
                return matches != 0
            }
        }
        while lo < hi {
            let mid = (lo + hi) >> 1
            let v = columnIndices[mid]
            if v == c { return true }
            if v < c { lo = mid + 1 } else { hi = mid }
        }
        return false
    }

    /// Entry-wise sum with a matrix of the same shape.
    public func union(_ other: SparseMatrix) -> SparseMatrix {
        precondition(rows == other.rows && columns == other.columns, "union: shapes differ")
        var r = [Int32](), c = [Int32](), v = [Float]()
        for m in [self, other] {
            for row in 0..<m.rows {
                for e in m.entries(ofRow: row) { r.append(Int32(row)); c.append(m.columnIndices[e]); v.append(m.values[e]) }
            }
        }
        return SparseMatrix(rows: rows, columns: columns, rowIndices: r, columnIndices: c, values: v)
    }
}

extension SparseMatrix {
    /// The entry index of (row, column), or nil when it is not stored.
    public func position(row: Int, column: Int) -> Int? {
        var lo = rowStarts[row], hi = rowStarts[row + 1]
        let c = Int32(column)
        while lo < hi {
            let mid = (lo + hi) >> 1
            if columnIndices[mid] == c { return mid }
            if columnIndices[mid] < c { lo = mid + 1 } else { hi = mid }
        }
        return nil
    }
}
