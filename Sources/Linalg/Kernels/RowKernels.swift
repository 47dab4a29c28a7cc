/// Row operations on embedding-sized matrices (a batch of short rows). They run on the
/// calling thread: waking a worker costs more than the rows do.
public enum RowKernels {
    /// Rows `indices` of `table`, in order; an index equal to `zeroing` gives a row of zeros.
    public static func gather(_ table: Matrix, rows indices: [Int32], zeroing: Int32? = nil) -> Matrix {
        let d = table.columns
        var outputs = [Matrix(uninitializedRows: indices.count, columns: d)]
        guard !indices.isEmpty && d > 0 else { return outputs[0] }
        Matrix.withBuffers(reading: [table], writing: &outputs) { b in
            let (out, source) = (b.write[0], b.read[0])
            for (r, i) in indices.enumerated() {
                if i == zeroing { (out + r * d).update(repeating: 0, count: d) } else { (out + r * d).update(from: source + Int(i) * d, count: d) }
            }
        }
        return outputs[0]
    }

    /// Σ_j a[r, j] · b[r, j] per row: rows × 1. Eight partial sums, then their total: a fixed
    /// order without a chain of n dependent adds.
    public static func rowDot(_ a: Matrix, _ b: Matrix) -> Matrix {
        let n = a.columns, rows = a.rows
        precondition(b.rows == rows && b.columns == n, "rowDot: shapes differ")
        var outputs = [Matrix(uninitializedRows: rows, columns: 1)]
        guard rows > 0 && n > 0 else { return Matrix(rows: rows, columns: 1) }
        Matrix.withBuffers(reading: [a, b], writing: &outputs) { p in
            let (x, y, out) = (p.read[0], p.read[1], p.write[0])
            for r in 0..<rows {
                out[r] = Lanes.dot(x + r * n, y + r * n, count: n)
            }
        }
        return outputs[0]
    }

    /// Row r of m times s[r].
    public static func scaleRows(_ m: Matrix, by s: Matrix) -> Matrix {
        let rows = m.rows, n = m.columns
        precondition(s.values.count == rows, "scaleRows: one scale per row")
        var outputs = [Matrix(uninitializedRows: rows, columns: n)]
        guard rows > 0 && n > 0 else { return outputs[0] }
        Matrix.withBuffers(reading: [m, s], writing: &outputs) { b in
            let (source, scales, out) = (b.read[0], b.read[1], b.write[0])
            for r in 0..<rows {
                let scale = scales[r], from = source + r * n, to = out + r * n
                for j in stride(from: 0, to: n, by: 8) { (scale * Lanes.load(from, j, count: n)).store(to, j, count: n) }
            }
        }
        return outputs[0]
    }

    /// Adds row r of `g` to row `indices[r]` of `m` (a gather's pullback), in index order:
    /// `g` is read front to back and the table's rows stay in cache.
    /// With `skipping`, rows whose index equals it add nothing (a padding id's).
    public static func addRows(_ g: Matrix, at indices: [Int32], skipping: Int32? = nil, into m: inout Matrix) {
        precondition(g.rows == indices.count && g.columns == m.columns, "addRows: shapes differ")
        scatterAdd(g, sourceRow: { r, _ in r }, at: indices, skipping: skipping, scale: { _ in 1 }, into: &m)
    }

    /// Σ_j a[ra[r], j] · b[rb[r], j] for each r: the row dots of listed rows of two tables
    /// (the same table allowed), without gathering them; as `rowDot` sums.
    public static func rowDot(_ a: Matrix, rows ra: [Int32], _ b: Matrix, rows rb: [Int32]) -> Matrix {
        let n = a.columns
        precondition(b.columns == n && ra.count == rb.count, "rowDot(rows:): shapes differ")
        var outputs = [Matrix(uninitializedRows: ra.count, columns: 1)]
        guard !ra.isEmpty && n > 0 else { return Matrix(rows: ra.count, columns: 1) }
        Matrix.withBuffers(reading: [a, b], writing: &outputs) { p in
            for r in 0..<ra.count {
                p.write[0][r] = Lanes.dot(p.read[0] + Int(ra[r]) * n, p.read[1] + Int(rb[r]) * n, count: n)
            }
        }
        return outputs[0]
    }

    /// Adds g[r] · row `from[r]` of `source` to row `to[r]` of `m` for every r, in order (the
    /// pullback of `rowDot(_:rows:_:rows:)` towards one side).
    public static func addScaledRows(of source: Matrix, rows from: [Int32], by g: Matrix, at to: [Int32], into m: inout Matrix) {
        precondition(source.columns == m.columns && from.count == to.count && g.values.count == to.count, "addScaledRows(rows:by:at:): shapes differ")
        g.values.withUnsafeBufferPointer { scales in
            scatterAdd(source, sourceRow: { r, _ in Int(from[r]) }, at: to, scale: { scales[$0] }, into: &m)
        }
    }

    /// Adds scale(r) · row sourceRow(r, i) of `source` to row i of `m` for each listed i (its
    /// position r in the list), in list order.
    static func scatterAdd(_ source: Matrix, sourceRow: (Int, Int) -> Int, at indices: [Int32], skipping: Int32? = nil, scale: (Int) -> Float,
                           into m: inout Matrix) {
        let d = m.columns
        guard !indices.isEmpty && d > 0 else { return }
        var outputs = [m]
        m = Matrix(rows: 0, columns: 0)   // the buffer moves into `outputs`, unshared
        Matrix.withBuffers(reading: [source], writing: &outputs) { b in
            for (r, i) in indices.enumerated() where i != skipping {
                let s = Lanes(repeating: scale(r))
                let row = b.write[0] + Int(i) * d, from = b.read[0] + sourceRow(r, Int(i)) * d
                for j in stride(from: 0, to: d, by: 8) {
                    (Lanes.load(row, j, count: d) + s * Lanes.load(from, j, count: d)).store(row, j, count: d)
                }
            }
        }
        m = outputs[0]
    }

    /// Σ over the listed rows of `table` (repeats counted) of their squared entries, each row
    /// in eight-lane partial sums: ‖table[indices]‖² without gathering the rows.
    public static func sumOfSquares(rows indices: [Int32], of table: Matrix) -> Float {
        let d = table.columns
        return table.values.withUnsafeBufferPointer { t in
            guard let base = t.baseAddress else { return 0 }
            var sum = Lanes()
            for i in indices {
                let row = base + Int(i) * d
                for j in stride(from: 0, to: d, by: 8) {
                    let x = Lanes.load(row, j, count: d)
                    sum += x * x
                }
            }
            return sum.sum()
        }
    }

    /// Adds scale · row i of `table` to row i of `m` once per listing of i (the pullback of a
    /// norm of listed rows).
    public static func addScaledRows(of table: Matrix, at indices: [Int32], scale: Float, into m: inout Matrix) {
        precondition(table.rows == m.rows && table.columns == m.columns, "addScaledRows: shapes differ")
        scatterAdd(table, sourceRow: { _, i in i }, at: indices, scale: { _ in scale }, into: &m)
    }

    /// Adds w · row r of `g` to row c of `m` for every entry (c, w) of row `rows[r]` of `bags`
    /// (a pooled lookup's pullback), in order; `g` may be wider than `m`, its rows' block
    /// from `columnOffset` then being read (side-by-side lookups).
    public static func addPooled(_ g: Matrix, bags: SparseMatrix, rows: [Int32], into m: inout Matrix, columnOffset: Int = 0) {
        let d = m.columns, rowStride = g.columns
        precondition(g.rows == rows.count && rowStride >= columnOffset + d && bags.columns == m.rows, "addPooled: shapes differ")
        guard !rows.isEmpty && d > 0 else { return }
        var outputs = [m]
        m = Matrix(rows: 0, columns: 0)   // the buffer moves into `outputs`, unshared
        Matrix.withBuffers(reading: [g], writing: &outputs) { b in
            let (table, source) = (b.write[0], b.read[0])
            bags.rowStarts.withUnsafeBufferPointer { starts in
                bags.columnIndices.withUnsafeBufferPointer { columns in
                    bags.values.withUnsafeBufferPointer { weights in
                        for (r, entity) in rows.enumerated() {
                            let from = source + r * rowStride + columnOffset
                            for e in starts[Int(entity)]..<starts[Int(entity) + 1] {
                                let row = table + Int(columns[e]) * d, w = weights[e]
                                for j in stride(from: 0, to: d, by: 8) {
                                    (Lanes.load(row, j, count: d) + w * Lanes.load(from, j, count: d)).store(row, j, count: d)
                                }
                            }
                        }
                    }
                }
            }
        }
        m = outputs[0]
    }

    /// Σ over `pairs` of ⟨parts[a][r, aStart..<aStart+d], parts[b][r, bStart..<bStart+d]⟩ per
    /// row r: rows × 1 (FFM's field-aware pairs, without slicing any matrix).
    public static func sliceDots(_ parts: [Matrix], _ pairs: [SlicePair], width d: Int) -> Matrix {
        let rows = parts.first?.rows ?? 0, widths = parts.map(\.columns)
        var outputs = [Matrix(rows: rows, columns: 1)]
        guard rows > 0 && d > 0 && !pairs.isEmpty else { return outputs[0] }
        Matrix.withBuffers(reading: parts, writing: &outputs) { b in
            let out = b.write[0]
            let terms = pairs.map { p in (b.read[p.a] + p.aStart, widths[p.a], b.read[p.b] + p.bStart, widths[p.b], p.weight) }
            for r in 0..<rows {
                var sum = Lanes()
                for (a, aWidth, c, cWidth, w) in terms {
                    let x = a + r * aWidth, y = c + r * cWidth
                    for j in stride(from: 0, to: d, by: 8) { sum += w * (Lanes.load(x, j, count: d) * Lanes.load(y, j, count: d)) }
                }
                out[r] = sum.total
            }
        }
        return outputs[0]
    }

    /// The pullback of `sliceDots`: the gradient of every part (zero where no pair reads it),
    /// each pair's slice getting g[r] times the other slice, in one pass over the rows (a pass
    /// per part would re-read every other part from memory).
    public static func sliceDotGradients(_ g: Matrix, _ parts: [Matrix], _ pairs: [SlicePair], width d: Int) -> [Matrix] {
        let rows = g.rows, widths = parts.map(\.columns)
        var grads = parts.map { Matrix(rows: $0.rows, columns: $0.columns) }
        guard rows > 0 && d > 0 && !pairs.isEmpty else { return grads }
        Matrix.withBuffers(reading: parts + [g], writing: &grads) { b in
            let scale = b.read[parts.count]
            // Per pair, both directions: (gradient slice base, its row width, other slice base, its row width).
            let terms = pairs.flatMap { p in
                [(b.write[p.a] + p.aStart, widths[p.a], b.read[p.b] + p.bStart, widths[p.b], p.weight),
                 (b.write[p.b] + p.bStart, widths[p.b], b.read[p.a] + p.aStart, widths[p.a], p.weight)]
            }
            for r in 0..<rows {
                for (to, toWidth, from, fromWidth, w) in terms {
                    let s = w * scale[r]
                    let t = to + r * toWidth, f = from + r * fromWidth
                    for j in stride(from: 0, to: d, by: 8) {
                        (Lanes.load(t, j, count: d) + s * Lanes.load(f, j, count: d)).store(t, j, count: d)
                    }
                }
            }
        }
        return grads
    }

    /// weight · parts[a][r, aStart..<aStart+d] ⊙ parts[b][r, bStart..<bStart+d] for each of `pairs`,
    /// summed (rows × d: FwFM's weighted field pairs) or side by side (`summed` false: rows × pairs·d,
    /// AFM's pair vectors): one pass instead of an op per pair.
    public static func sliceProducts(_ parts: [Matrix], _ pairs: [SlicePair], width d: Int, summed: Bool, compute: Compute) -> Matrix {
        let rows = parts.first?.rows ?? 0, widths = parts.map(\.columns), n = summed ? d : d * pairs.count
        var outputs = [Matrix(rows: rows, columns: n)]
        guard rows > 0 && d > 0 && !pairs.isEmpty else { return outputs[0] }
        Matrix.withBuffers(reading: parts, writing: &outputs) { b in
            let shared = UnsafeShared(pairs.map { p in (b.read[p.a] + p.aStart, widths[p.a], b.read[p.b] + p.bStart, widths[p.b], p.weight) })
            compute.forEachChunk(count: rows, chunkSize: max(1, elementwiseChunk / (d * pairs.count))) { range in   // workers own rows
                let out = b.write[0], terms = shared.value
                for r in range {
                    for j in stride(from: 0, to: d, by: 8) {
                        var sum = Lanes()
                        for (k, (x, xWidth, y, yWidth, w)) in terms.enumerated() {
                            let product = w * (Lanes.load(x + r * xWidth, j, count: d) * Lanes.load(y + r * yWidth, j, count: d))
                            if summed { sum += product } else { product.store(out + r * n + k * d, j, count: d) }
                        }
                        if summed { sum.store(out + r * n, j, count: d) }
                    }
                }
            }
        }
        return outputs[0]
    }

    /// The pullback of `sliceProducts`: each pair's slice gets weight · G ⊙ the other slice (G
    /// the pair's own block when not `summed`).
    public static func sliceProductGradients(_ g: Matrix, _ parts: [Matrix], _ pairs: [SlicePair], width d: Int, summed: Bool,
                                             compute: Compute) -> [Matrix] {
        let rows = g.rows, widths = parts.map(\.columns), n = g.columns
        var grads = parts.map { Matrix(rows: $0.rows, columns: $0.columns) }
        guard rows > 0 && d > 0 && !pairs.isEmpty else { return grads }
        Matrix.withBuffers(reading: parts + [g], writing: &grads) { b in
            // Per pair, both directions: (its block in G, gradient slice, its row width, other slice, its row width, weight).
            let shared = UnsafeShared(pairs.enumerated().flatMap { k, p in
                [(summed ? 0 : k * d, b.write[p.a] + p.aStart, widths[p.a], b.read[p.b] + p.bStart, widths[p.b], p.weight),
                 (summed ? 0 : k * d, b.write[p.b] + p.bStart, widths[p.b], b.read[p.a] + p.aStart, widths[p.a], p.weight)]
            })
            compute.forEachChunk(count: rows, chunkSize: max(1, elementwiseChunk / (d * pairs.count))) { range in   // workers own rows
                let upstream = b.read[parts.count], terms = shared.value
                for r in range {
                    for j in stride(from: 0, to: d, by: 8) {
                        for (block, to, toWidth, from, fromWidth, w) in terms {
                            let t = to + r * toWidth, gw = Lanes.load(upstream + r * n + block, j, count: d)
                            (Lanes.load(t, j, count: d) + w * (gw * Lanes.load(from + r * fromWidth, j, count: d))).store(t, j, count: d)
                        }
                    }
                }
            }
        }
        return grads
    }

    /// Σ_j m[r, j] per row, added in order: rows × 1.
    public static func rowSums(_ m: Matrix) -> Matrix {
        let rows = m.rows, n = m.columns
        var outputs = [Matrix(rows: rows, columns: 1)]
        guard rows > 0 && n > 0 else { return outputs[0] }
        Matrix.withBuffers(reading: [m], writing: &outputs) { b in
            let (source, out) = (b.read[0], b.write[0])
            for r in 0..<rows {
                var s: Float = 0
                for j in 0..<n { s += source[r * n + j] }
                out[r] = s
            }
        }
        return outputs[0]
    }

    /// Each entry of the column `v` repeated across `columns`: rows × columns.
    public static func broadcastRows(_ v: Matrix, columns n: Int) -> Matrix {
        let rows = v.values.count
        var outputs = [Matrix(uninitializedRows: rows, columns: n)]
        guard rows > 0 && n > 0 else { return outputs[0] }
        Matrix.withBuffers(reading: [v], writing: &outputs) { b in
            let (source, out) = (b.read[0], b.write[0])
            for r in 0..<rows { (out + r * n).update(repeating: source[r], count: n) }
        }
        return outputs[0]
    }
}

/// One term of `RowKernels.sliceDots` and `sliceProducts`: the dot of `parts[a]`'s columns from `aStart` with
/// `parts[b]`'s columns from `bStart`, row by row.
/// `weight` scales the term (FwFM's field-pair weights; 1 for FFM's).
public struct SlicePair: Sendable, Hashable {
    public let a: Int, aStart: Int, b: Int, bStart: Int, weight: Float

    /// A term.
    public init(_ a: Int, _ aStart: Int, _ b: Int, _ bStart: Int, weight: Float = 1) {
        self.a = a; self.aStart = aStart; self.b = b; self.bStart = bStart; self.weight = weight
    }
}
