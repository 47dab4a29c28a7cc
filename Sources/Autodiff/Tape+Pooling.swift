import Linalg

extension Tape {
    /// Max pooling of embedding bags: row r is, per column, the largest weighted row of
    /// `table` among the entries of `bags` row `rows[r]` (an empty bag gives `empty`, as
    /// RecBole's −1e9 fill does); the gradient goes to the winning rows only.
    public func pooledMax(_ table: Variable, bags: SparseMatrix, rows: [Int32], empty: Float) -> Variable {
        let (value, winners) = PoolingKernels.max(table.value, bags: bags, rows: rows, empty: empty)
        let out = Variable(value, requiresGrad: table.requiresGrad)
        return record(out) { table.accumulate { grad in PoolingKernels.addMaxGradient(out.grad!, bags: bags, winners: winners, into: &grad) } }
    }
}
