import CLanes
/// Pooled embedding bags beyond a weighted sum: max pooling (RecBole's `pooling_mode: max` over a
/// token sequence) and FM's bi-interaction of several fields' bags.
public enum PoolingKernels {
    /// Per output row r and column j, the largest w_e · table[c_e, j] over the entries e of
    /// `bags` row `rows[r]` (`empty` for an empty bag), and the entry that won (−1: none).
    public static func max(_ table: Matrix, bags: SparseMatrix, rows: [Int32], empty: Float) -> (value: Matrix, winners: [Int32]) {
        let d = table.columns
        var value = Matrix(rows: rows.count, columns: d, repeating: empty)
        var winners = [Int32](repeating: -1, count: rows.count * d)
        for (r, row) in rows.enumerated() {
            for e in bags.entries(ofRow: Int(row)) {
                let (c, w) = (Int(bags.columnIndices[e]), bags.values[e])
                for j in 0..<d where winners[r * d + j] < 0 || w * table[c, j] > value[r, j] {
                    value[r, j] = w * table[c, j]
                    winners[r * d + j] = Int32(e)
                }
            }
        }
        return (value, winners)
    }

    /// The pullback of `max`: each output gradient times its winner's weight, added to the
    /// winner's table row.
    public static func addMaxGradient(_ g: Matrix, bags: SparseMatrix, winners: [Int32], into grad: inout Matrix) {
        let d = g.columns
        for k in 0..<winners.count where winners[k] >= 0 {
            let e = Int(winners[k])
            grad[Int(bags.columnIndices[e]), k % d] += bags.values[e] * g.values[k]
        }
    }

    /// FM's bi-interaction of pooled field embeddings, ½ ((Σ_f e_f)² − Σ_f e_f²) per row, e_f =
    /// bags_f[rows_f[r], :] · table, in one pass over the fields (no per-field matrix); also Σ_f e_f,
    /// which the pullback needs. Rows in fixed chunks on the workers, each chunk field by field.
    public static func biInteraction(_ table: Matrix, _ lookups: [(bags: SparseMatrix, rows: [Int32])], compute: Compute,
                                     kernels: KernelSet = .current) -> (value: Matrix, sum: Matrix) {
        let d = table.columns, n = lookups.first?.rows.count ?? 0
        precondition(lookups.allSatisfy { $0.rows.count == n && $0.bags.columns == table.rows }, "biInteraction: shapes differ")
        var outputs = [Matrix(rows: n, columns: d), Matrix(rows: n, columns: d)]
        guard n > 0 && d > 0 && !lookups.isEmpty else { return (outputs[0], outputs[1]) }
        if kernels == .avx2 && d <= 16 {   // one C call per chunk of rows and every field
            withFields(lookups[...], offsets: Array(repeating: 0, count: lookups.count)[...]) { fields in
                Matrix.withBuffers(reading: [table], writing: &outputs) { b in
                    let shared = UnsafeShared(fields)   // workers write disjoint rows; the fields' arrays are only read
                    compute.forEachChunk(count: n, chunkSize: 256) { range in
                        let f = shared.value
                        recbench_bi_interaction_avx2(b.write[0], b.write[1], b.read[0], d, f, f.count, range.lowerBound, range.upperBound)
                    }
                }
            }
            return (outputs[0], outputs[1])
        }
        Matrix.withBuffers(reading: [table], writing: &outputs) { b in
            compute.forEachChunk(count: n, chunkSize: 256) { range in   // disjoint output rows
                let (value, sum) = (b.write[0], b.write[1])
                for l in lookups {
                    forEachPooled(l, rows: range, table: b.read[0], d: d) { r, e in
                        for j in stride(from: 0, to: d, by: 8) {
                            let x = Lanes.load(e, j, count: d)
                            (Lanes.load(sum + r * d, j, count: d) + x).store(sum + r * d, j, count: d)
                            (Lanes.load(value + r * d, j, count: d) - x * x).store(value + r * d, j, count: d)
                        }
                    }
                }
                for i in (range.lowerBound * d)..<(range.upperBound * d) { value[i] = 0.5 * (sum[i] * sum[i] + value[i]) }
            }
        }
        return (outputs[0], outputs[1])
    }

    /// The pullback of `biInteraction`: ∂/∂e_f = g ⊙ (Σ e − e_f), scattered to each field's
    /// bag rows with their weights, field by field in row order (a fixed order).
    public static func addBiInteractionGradient(_ g: Matrix, sum: Matrix, table: Matrix, _ lookups: [(bags: SparseMatrix, rows: [Int32])],
                                                into grad: inout Matrix, kernels: KernelSet = .current) {
        let d = table.columns
        precondition(g.columns == d && sum.columns == d && grad.columns == d && grad.rows == table.rows, "biInteraction: gradient shapes")
        guard g.rows > 0 && d > 0 else { return }
        if kernels == .avx2 && d <= 16 {   // the delta made per row in registers and scattered at once
            withFields(lookups[...], offsets: Array(repeating: 0, count: lookups.count)[...]) { fields in
                let rows = g.rows
                withScatterScratch(tableRows: grad.rows, width: d) { padded, touched, list in
                    grad.values.withUnsafeMutableBufferPointer { t in
                        Matrix.withBuffers(reading: [g, sum, table]) { b in
                            recbench_bi_interaction_scatter_avx2(t.baseAddress!, d, b.read[0], b.read[1], b.read[2], fields, fields.count, rows,
                                                                 padded, touched, list)
                        }
                    }
                }
            }
            return
        }
        var delta = Matrix(rows: g.rows, columns: d)
        for l in lookups {
            delta.values.withUnsafeMutableBufferPointer { dp in
                Matrix.withBuffers(reading: [table, g, sum]) { b in
                    forEachPooled(l, rows: 0..<g.rows, table: b.read[0], d: d) { r, e in
                        for j in 0..<d { dp[r * d + j] = b.read[1][r * d + j] * (b.read[2][r * d + j] - e[j]) }
                    }
                }
            }
            addPooledGradient(delta, [l], sideBySide: false, into: &grad)   // the lookup's own pullback
        }
    }

    /// body(r, e) for each row r of `rows`, e pointing at bags[rows[r]] · table (d floats, the
    /// same weighted sum a pooled lookup makes), reused between rows.
    static func forEachPooled(_ l: (bags: SparseMatrix, rows: [Int32]), rows: Range<Int>, table: UnsafePointer<Float>, d: Int,
                              _ body: (Int, UnsafePointer<Float>) -> Void) {
        var e = [Float](repeating: 0, count: d)
        e.withUnsafeMutableBufferPointer { ep in
            l.bags.rowStarts.withUnsafeBufferPointer { rs in
                l.bags.columnIndices.withUnsafeBufferPointer { ci in
                    l.bags.values.withUnsafeBufferPointer { vs in
                        for r in rows {
                            let bag = Int(l.rows[r]), row = ep.baseAddress!
                            row.update(repeating: 0, count: d)
                            guard rs[bag] < rs[bag + 1] else { body(r, row); continue }
                            SparseMatrix.addRowProduct(row, table, d, ci.baseAddress!, vs.baseAddress!, rs[bag], rs[bag + 1])
                            body(r, row)
                        }
                    }
                }
            }
        }
    }
}

/// A batch's pooled embedding lookups: each field's bags and, per output row, the bag it reads.
public typealias PooledLookup = (bags: SparseMatrix, rows: [Int32])

extension PoolingKernels {
    /// Σ over each field's bag row of weight × table row, per output row: summed over the
    /// fields (rows × d) or side by side (rows × F·d, field f at columns f·d). Rows at most 16
    /// wide (context models' fields) go through one AVX2 kernel per chunk of rows and every
    /// field, where one call per row and field cost more than its few floats.
    public static func pooled(_ lookups: [PooledLookup], by table: Matrix, sideBySide: Bool, compute: Compute,
                              kernels: KernelSet = .current) -> Matrix {
        let d = table.columns, n = lookups.first?.rows.count ?? 0
        precondition(lookups.allSatisfy { $0.rows.count == n && $0.bags.columns == table.rows }, "pooled: shapes differ")
        guard kernels == .avx2 && d <= 16 && n > 0 && d > 0 else {
            if sideBySide { return SparseMatrix.multiplySideBySide(lookups, by: table, compute: compute, kernels: kernels) }
            var value = Matrix(rows: n, columns: d)
            for l in lookups { l.bags.multiply(rows: l.rows[...], by: table, into: &value, adding: true, compute: compute, kernels: kernels) }
            return value
        }
        var out = Matrix(rows: n, columns: sideBySide ? lookups.count * d : d)
        let stride = out.columns
        withFields(lookups[...], offsets: lookups.indices.map { sideBySide ? $0 * d : 0 }[...]) { fields in
            out.values.withUnsafeMutableBufferPointer { o in
                table.values.withUnsafeBufferPointer { t in
                    // Workers write disjoint output rows; the fields' arrays are only read.
                    let shared = UnsafeShared((o.baseAddress!, t.baseAddress!, fields))
                    compute.forEachChunk(count: n, chunkSize: 256) { range in
                        let (op, tp, f) = shared.value
                        recbench_pooled_rows_avx2(op, stride, tp, d, f, f.count, range.lowerBound, range.upperBound)
                    }
                }
            }
        }
        return out
    }

    /// The pullback of `pooled`: g's rows (or each field's block of them, side by side)
    /// times the bags' weights, added to the table rows the bags read, field by field in the
    /// order given (`reversed`: the last first), rows in order.
    public static func addPooledGradient(_ g: Matrix, _ lookups: [PooledLookup], sideBySide: Bool, reversed: Bool = false,
                                         into grad: inout Matrix, kernels: KernelSet = .current) {
        let d = grad.columns
        let order = reversed ? Array(lookups.indices.reversed()) : Array(lookups.indices)
        guard kernels == .avx2 && d <= 16 && g.rows > 0 && d > 0 else {
            for f in order { RowKernels.addPooled(g, bags: lookups[f].bags, rows: lookups[f].rows, into: &grad, columnOffset: sideBySide ? f * d : 0) }
            return
        }
        precondition(g.columns == (sideBySide ? lookups.count * d : d) && lookups.allSatisfy { $0.rows.count == g.rows && $0.bags.columns == grad.rows },
                     "addPooledGradient: shapes differ")
        withFields(order.map { lookups[$0] }[...], offsets: order.map { sideBySide ? $0 * d : 0 }[...]) { fields in
            withScatterScratch(tableRows: grad.rows, width: d) { padded, touched, list in
                grad.values.withUnsafeMutableBufferPointer { t in
                    g.values.withUnsafeBufferPointer { gp in
                        recbench_pooled_scatter_avx2(t.baseAddress!, d, gp.baseAddress!, g.columns, fields, fields.count, g.rows,
                                                     padded, touched, list)
                    }
                }
            }
        }
    }

    /// body(padded, touched, list): the AVX2 scatters' scratch for a table of `tableRows` rows
    /// `width` wide: each touched row padded to whole registers (written before it is read),
    /// a zeroed flag per row, room for every row's index.
    static func withScatterScratch(tableRows: Int, width: Int,
                                   _ body: (UnsafeMutablePointer<Float>, UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<Int32>) -> Void) {
        let rows = Swift.max(1, tableRows)   // never an empty buffer without a base address
        var padded = [Float](unsafeUninitializedCapacity: rows * (width > 8 ? 16 : 8)) { $1 = $0.count }
        var touched = [UInt8](repeating: 0, count: rows), list = [Int32](repeating: 0, count: rows)
        padded.withUnsafeMutableBufferPointer { p in
            touched.withUnsafeMutableBufferPointer { t in list.withUnsafeMutableBufferPointer { l in body(p.baseAddress!, t.baseAddress!, l.baseAddress!) } }
        }
    }

    /// body(fields): each lookup's arrays as the C kernels' field descriptors, valid inside body.
    static func withFields<R>(_ lookups: ArraySlice<PooledLookup>, offsets: ArraySlice<Int>, built: [recbench_pooled_field] = [],
                              _ body: ([recbench_pooled_field]) -> R) -> R {
        guard let l = lookups.first, let offset = offsets.first else { return body(built) }
        return l.rows.withUnsafeBufferPointer { r in
            l.bags.rowStarts.withUnsafeBufferPointer { s in
                l.bags.columnIndices.withUnsafeBufferPointer { c in
                    l.bags.values.withUnsafeBufferPointer { v in
                        let field = recbench_pooled_field(rows: r.baseAddress, starts: s.baseAddress, columns: c.baseAddress,
                                                          values: v.baseAddress, offset: offset)
                        return withFields(lookups.dropFirst(), offsets: offsets.dropFirst(), built: built + [field], body)
                    }
                }
            }
        }
    }
}
