/// Row operations on embedding-sized matrices (a batch of short rows). They run on the
/// calling thread: waking a worker costs more than the rows do.
public enum RowKernels {
    /// Rows `indices` of `table`, in order.
    public static func gather(_ table: Matrix, rows indices: [Int32]) -> Matrix {
        let d = table.columns
        var outputs = [Matrix(uninitializedRows: indices.count, columns: d)]
        guard !indices.isEmpty && d > 0 else { return outputs[0] }
        Matrix.withBuffers(reading: [table], writing: &outputs) { b in
            let (out, source) = (b.write[0], b.read[0])
            for (r, i) in indices.enumerated() { (out + r * d).update(from: source + Int(i) * d, count: d) }
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
                let xr = x + r * n, yr = y + r * n
                var sum = Lanes()
                for j in stride(from: 0, to: n, by: 8) { sum += Lanes.load(xr, j, count: n) * Lanes.load(yr, j, count: n) }
                out[r] = sum.total
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
    public static func addRows(_ g: Matrix, at indices: [Int32], into m: inout Matrix) {
        let d = m.columns
        precondition(g.rows == indices.count && g.columns == d, "addRows: shapes differ")
        guard !indices.isEmpty && d > 0 else { return }
        var outputs = [m]
        m = Matrix(rows: 0, columns: 0)   // the buffer moves into `outputs`, unshared
        Matrix.withBuffers(reading: [g], writing: &outputs) { b in
            let (table, rows) = (b.write[0], b.read[0])
            for (r, i) in indices.enumerated() {
                let row = table + Int(i) * d, from = rows + r * d
                for j in stride(from: 0, to: d, by: 8) {
                    (Lanes.load(row, j, count: d) + Lanes.load(from, j, count: d)).store(row, j, count: d)
                }
            }
        }
        m = outputs[0]
    }

    /// Adds w · row r of `g` to row c of `m` for every entry (c, w) of row `rows[r]` of `bags`
    /// (a pooled lookup's pullback), in order.
    public static func addPooled(_ g: Matrix, bags: SparseMatrix, rows: [Int32], into m: inout Matrix) {
        let d = m.columns
        precondition(g.rows == rows.count && g.columns == d && bags.columns == m.rows, "addPooled: shapes differ")
        guard !rows.isEmpty && d > 0 else { return }
        var outputs = [m]
        m = Matrix(rows: 0, columns: 0)   // the buffer moves into `outputs`, unshared
        Matrix.withBuffers(reading: [g], writing: &outputs) { b in
            let (table, source) = (b.write[0], b.read[0])
            bags.rowStarts.withUnsafeBufferPointer { starts in
                bags.columnIndices.withUnsafeBufferPointer { columns in
                    bags.values.withUnsafeBufferPointer { weights in
                        for (r, entity) in rows.enumerated() {
                            let from = source + r * d
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
