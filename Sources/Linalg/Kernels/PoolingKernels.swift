/// Max pooling of embedding bags (RecBole's `pooling_mode: max` over a token sequence).
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
}
