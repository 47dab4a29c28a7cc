import Linalg

/// Elementwise arithmetic, broadcasts and reductions.
extension Tape {
    /// a + b (same shape).
    public func add(_ a: Variable, _ b: Variable) -> Variable {
        let out = Variable(a.value.zipMap(b.value, compute) { $0 + $1 }, requiresGrad: a.requiresGrad || b.requiresGrad)
        return record(out) {
            if a.requiresGrad { a.accumulate(out.grad!) }
            if b.requiresGrad { b.accumulate(out.grad!) }
        }
    }

    /// a − b (same shape).
    public func sub(_ a: Variable, _ b: Variable) -> Variable {
        let compute = self.compute
        let out = Variable(a.value.zipMap(b.value, compute) { $0 - $1 }, requiresGrad: a.requiresGrad || b.requiresGrad)
        return record(out) {
            if a.requiresGrad { a.accumulate(out.grad!) }
            if b.requiresGrad { b.accumulate(out.grad!.map(compute) { -$0 }) }
        }
    }

    /// a ⊙ b (elementwise, same shape).
    public func mul(_ a: Variable, _ b: Variable) -> Variable {
        let compute = self.compute
        let out = Variable(a.value.multiplied(by: b.value, compute: compute), requiresGrad: a.requiresGrad || b.requiresGrad)
        return record(out) {
            if a.requiresGrad { a.accumulate(out.grad!.multiplied(by: b.value, compute: compute)) }
            if b.requiresGrad { b.accumulate(out.grad!.multiplied(by: a.value, compute: compute)) }
        }
    }

    /// max(a, b) elementwise (same shape): torch's max over two stacked rows; the gradient
    /// goes to a where a ≥ b (the first on ties, as torch's index), else to b.
    public func maximum(_ a: Variable, _ b: Variable) -> Variable {
        let compute = self.compute
        let out = Variable(a.value.zipMap(b.value, compute) { Lanes.maximum($0, $1) }, requiresGrad: a.requiresGrad || b.requiresGrad)
        return record(out) {
            let g = out.grad!
            var ga = Matrix(rows: g.rows, columns: g.columns), gb = ga
            for i in 0..<g.values.count {
                if a.value.values[i] >= b.value.values[i] { ga.values[i] = g.values[i] } else { gb.values[i] = g.values[i] }
            }
            if a.requiresGrad { a.accumulate(ga) }
            if b.requiresGrad { b.accumulate(gb) }
        }
    }

    /// s · a + c for constants s, c.
    public func affine(_ a: Variable, scale s: Float, shift c: Float = 0) -> Variable {
        let compute = self.compute
        let out = Variable(a.value.map(compute) { s * $0 + c }, requiresGrad: a.requiresGrad)
        return record(out) { a.accumulate(out.grad!.map(compute) { s * $0 }) }
    }

    /// Each row r scaled by the constant `weights[r]`.
    public func scaleRows(_ a: Variable, by weights: [Float]) -> Variable {
        precondition(weights.count == a.value.rows, "scaleRows: one weight per row")
        let scales = Matrix(rows: weights.count, columns: 1, values: weights)
        let out = Variable(RowKernels.scaleRows(a.value, by: scales), requiresGrad: a.requiresGrad)
        return record(out) { a.accumulate(RowKernels.scaleRows(out.grad!, by: scales)) }
    }

    /// Columns `range` of a (row slices copied whole: a gate's block of a fused product).
    public func columns(_ a: Variable, _ range: Range<Int>) -> Variable {
        let n = a.value.columns, m = range.count, rows = a.value.rows, first = range.lowerBound
        var value = Matrix(uninitializedRows: rows, columns: m)
        value.values.withUnsafeMutableBufferPointer { out in
            a.value.values.withUnsafeBufferPointer { x in
                for r in 0..<rows { (out.baseAddress! + r * m).update(from: x.baseAddress! + r * n + first, count: m) }
            }
        }
        let out = Variable(value, requiresGrad: a.requiresGrad)
        return record(out) {
            a.accumulate { grad in
                out.grad!.values.withUnsafeBufferPointer { g in
                    grad.values.withUnsafeMutableBufferPointer { ga in
                        for r in 0..<rows { for j in 0..<m { ga[r * n + first + j] += g[r * m + j] } }
                    }
                }
            }
        }
    }

    /// The parts side by side (same row count): rows × Σ columns.
    public func concatColumns(_ parts: [Variable]) -> Variable {
        let rows = parts[0].value.rows, n = parts.reduce(0) { $0 + $1.value.columns }
        precondition(parts.allSatisfy { $0.value.rows == rows }, "concatColumns: row counts differ")
        // Zero-width parts own no storage (withBuffers needs some): they are skipped.
        let filled = rows == 0 ? [] : parts.filter { $0.value.columns > 0 }, widths = filled.map(\.value.columns)
        var wide = [Matrix(uninitializedRows: rows, columns: n)]
        if !filled.isEmpty {
            Matrix.withBuffers(reading: filled.map(\.value), writing: &wide) { b in
                Self.forEachColumnBlock(widths, rows: rows) { k, r, start, m in (b.write[0] + r * n + start).update(from: b.read[k] + r * m, count: m) }
            }
        }
        let out = Variable(wide[0], requiresGrad: parts.contains { $0.requiresGrad })
        return record(out) {
            // Parts with no entries get their (empty) gradient all the same, as every part always did.
            for p in parts where p.requiresGrad && (rows == 0 || p.value.columns == 0) { p.accumulate(Matrix(rows: rows, columns: p.value.columns)) }
            guard !filled.isEmpty else { return }
            var slices = widths.map { Matrix(uninitializedRows: rows, columns: $0) }
            Matrix.withBuffers(reading: [out.grad!], writing: &slices) { b in
                Self.forEachColumnBlock(widths, rows: rows) { k, r, start, m in (b.write[k] + r * m).update(from: b.read[0] + r * n + start, count: m) }
            }
            for (p, slice) in zip(filled, slices) where p.requiresGrad { p.accumulate(slice) }
        }
    }

    /// body(part, row, first column, width) for every row of every part's block of the
    /// concatenated layout: one memcpy per row and part.
    private static func forEachColumnBlock(_ widths: [Int], rows: Int, _ body: (Int, Int, Int, Int) -> Void) {
        var start = 0
        for (k, m) in widths.enumerated() {
            for r in 0..<rows { body(k, r, start, m) }
            start += m
        }
    }

    /// a stacked above b (same column count).
    public func concatRows(_ a: Variable, _ b: Variable) -> Variable {
        precondition(a.value.columns == b.value.columns, "concatRows: column counts differ")
        let out = Variable(Matrix(rows: a.value.rows + b.value.rows, columns: a.value.columns, values: a.value.values + b.value.values),
                           requiresGrad: a.requiresGrad || b.requiresGrad)
        return record(out) {
            let g = out.grad!, split = a.value.values.count
            if a.requiresGrad { a.accumulate(Matrix(rows: a.value.rows, columns: a.value.columns, values: Array(g.values[..<split]))) }
            if b.requiresGrad { b.accumulate(Matrix(rows: b.value.rows, columns: b.value.columns, values: Array(g.values[split...]))) }
        }
    }

    /// Row sums: rows × 1 (each row added in order).
    public func sumRows(_ a: Variable) -> Variable {
        let n = a.value.columns
        let out = Variable(RowKernels.rowSums(a.value), requiresGrad: a.requiresGrad)
        return record(out) { a.accumulate(RowKernels.broadcastRows(out.grad!, columns: n)) }
    }

    /// The mean of every element: 1 × 1.
    public func mean(_ a: Variable) -> Variable {
        let count = Float(a.value.values.count)
        let total = a.value.values.reduce(0.0) { $0 + Double($1) }
        let out = Variable(Matrix(rows: 1, columns: 1, values: [Float(total / Double(count))]), requiresGrad: a.requiresGrad)
        return record(out) {
            let g = out.grad!.values[0] / count
            a.accumulate(Matrix(rows: a.value.rows, columns: a.value.columns, repeating: g))
        }
    }
}

extension Tape {
    /// Inverted dropout, x ⊙ m with m = `Matrix.dropoutMask(…, seed:)` (0 with probability
    /// `rate`, else 1/(1 − rate)): the mask drawn and applied in one pass and kept as bits (one
    /// per entry: drawing it again cost as much as the forward); the pullback g ⊙ m.
    public func dropout(_ x: Variable, rate: Float, seed: UInt64) -> Variable {
        let compute = self.compute
        guard x.requiresGrad else { return record(Variable(x.value.droppedOut(rate: rate, seed: seed, compute: compute), requiresGrad: false)) {} }
        let (value, kept) = x.value.droppedOutKeepingMask(rate: rate, seed: seed, compute: compute)
        let out = Variable(value, requiresGrad: true)
        return record(out) { x.accumulate(out.grad!.droppedOut(kept: kept, rate: rate, compute: compute)) }
    }
}
