import Foundation

/// Elements per parallel chunk of elementwise work (fixed, so results never depend on cores).
let elementwiseChunk = LaneKernels.chunk

/// f over the elements of two same-shaped matrices, eight lanes at a time.
@inline(__always)
func zipMap(_ a: Matrix, _ b: Matrix, _ compute: Compute, _ f: @Sendable (Lanes, Lanes) -> Lanes) -> Matrix {
    precondition(a.rows == b.rows && a.columns == b.columns, "shape \(a.rows)×\(a.columns) vs \(b.rows)×\(b.columns)")
    var out = Matrix(uninitializedRows: a.rows, columns: a.columns)
    let count = out.values.count
    guard count > 0 else { return out }
    out.values.withUnsafeMutableBufferPointer { o in
        a.values.withUnsafeBufferPointer { x in b.values.withUnsafeBufferPointer { y in
            LaneKernels.zipMap(x.baseAddress!, y.baseAddress!, into: o.baseAddress!, count: count, compute: compute, f)
        } }
    }
    return out
}

/// f over the elements of a matrix, eight lanes at a time.
@inline(__always)
func map(_ a: Matrix, _ compute: Compute, _ f: @Sendable (Lanes) -> Lanes) -> Matrix {
    var out = Matrix(uninitializedRows: a.rows, columns: a.columns)
    let count = out.values.count
    guard count > 0 else { return out }
    out.values.withUnsafeMutableBufferPointer { o in
        a.values.withUnsafeBufferPointer { x in LaneKernels.map(x.baseAddress!, into: o.baseAddress!, count: count, compute: compute, f) }
    }
    return out
}

/// log(2π), for Gaussian densities.
let logTwoPi = Float(log(2 * Double.pi))

extension Tape {
    // MARK: Products

    /// a · b (BLAS sgemm).
    public func matmul(_ a: Variable, _ b: Variable) -> Variable {
        let compute = self.compute
        let out = Variable(BLAS.gemm(a.value, b.value, compute: compute), requiresGrad: a.requiresGrad || b.requiresGrad)
        return record(out) {
            let g = out.grad!
            if a.requiresGrad { a.accumulateProduct(g, b.value, transposeB: true) }
            if b.requiresGrad { b.accumulateProduct(a.value, transposeA: true, g) }
        }
    }

    /// x · w + b with the 1 × n b added to every row (a dense layer). The output starts as b
    /// in every row and the GEMM adds x · w to it (β = 1): the bias costs one write, not a
    /// copy of the product and a pass over it.
    public func linear(_ x: Variable, _ w: Variable, _ b: Variable) -> Variable {
        let compute = self.compute
        var value = Matrix(repeatingRow: b.value, count: x.value.rows, compute: compute)
        BLAS.gemm(x.value, w.value, alpha: 1, beta: 1, into: &value, compute: compute)
        let out = Variable(value, requiresGrad: x.requiresGrad || w.requiresGrad || b.requiresGrad)
        return record(out) {
            let g = out.grad!
            if x.requiresGrad { x.accumulateProduct(g, w.value, transposeB: true) }
            if w.requiresGrad { w.accumulateProduct(x.value, transposeA: true, g) }
            if b.requiresGrad { b.accumulate(columnSums(g, compute)) }
        }
    }

    /// x · w + b for a constant sparse x (an input layer): the product costs nnz(x)·columns
    /// and so does the weight gradient xᵀ·g, which touches only the rows of w that x uses.
    public func linear(_ x: SparseMatrix, _ w: Variable, _ b: Variable) -> Variable {
        let compute = self.compute
        var value = Matrix(repeatingRow: b.value, count: x.rows, compute: compute)
        x.multiply(rows: Array(0..<Int32(x.rows))[...], by: w.value, into: &value, adding: true, compute: compute)
        let out = Variable(value, requiresGrad: w.requiresGrad || b.requiresGrad)
        return record(out) {
            let g = out.grad!
            if w.requiresGrad { w.accumulateProduct(x.transposed(), g) }   // xᵀ's row c lists the batch rows that have item c
            if b.requiresGrad { b.accumulate(columnSums(g, compute)) }
        }
    }

    // MARK: Sums and broadcasts

    /// a + b (same shape).
    public func add(_ a: Variable, _ b: Variable) -> Variable {
        let compute = self.compute
        let out = Variable(zipMap(a.value, b.value, compute) { $0 + $1 }, requiresGrad: a.requiresGrad || b.requiresGrad)
        return record(out) {
            if a.requiresGrad { a.accumulate(out.grad!) }
            if b.requiresGrad { b.accumulate(out.grad!) }
        }
    }

    /// a − b (same shape).
    public func sub(_ a: Variable, _ b: Variable) -> Variable {
        let compute = self.compute
        let out = Variable(zipMap(a.value, b.value, compute) { $0 - $1 }, requiresGrad: a.requiresGrad || b.requiresGrad)
        return record(out) {
            if a.requiresGrad { a.accumulate(out.grad!) }
            if b.requiresGrad { b.accumulate(map(out.grad!, compute) { -$0 }) }
        }
    }

    /// a ⊙ b (elementwise, same shape).
    public func mul(_ a: Variable, _ b: Variable) -> Variable {
        let compute = self.compute
        let out = Variable(zipMap(a.value, b.value, compute) { $0 * $1 }, requiresGrad: a.requiresGrad || b.requiresGrad)
        return record(out) {
            if a.requiresGrad { a.accumulate(zipMap(out.grad!, b.value, compute) { $0 * $1 }) }
            if b.requiresGrad { b.accumulate(zipMap(out.grad!, a.value, compute) { $0 * $1 }) }
        }
    }

    /// s · a + c for constants s, c.
    public func affine(_ a: Variable, scale s: Float, shift c: Float = 0) -> Variable {
        let compute = self.compute
        let out = Variable(map(a.value, compute) { s * $0 + c }, requiresGrad: a.requiresGrad)
        return record(out) { a.accumulate(map(out.grad!, compute) { s * $0 }) }
    }

    /// Each row r scaled by the constant `weights[r]`.
    public func scaleRows(_ a: Variable, by weights: [Float]) -> Variable {
        precondition(weights.count == a.value.rows, "scaleRows: one weight per row")
        let n = a.value.columns
        var value = a.value
        for r in 0..<value.rows { for j in 0..<n { value.values[r * n + j] *= weights[r] } }
        let out = Variable(value, requiresGrad: a.requiresGrad)
        return record(out) {
            var g = out.grad!
            for r in 0..<g.rows { for j in 0..<n { g.values[r * n + j] *= weights[r] } }
            a.accumulate(g)
        }
    }

    /// Columns `range` of a.
    public func columns(_ a: Variable, _ range: Range<Int>) -> Variable {
        let n = a.value.columns, m = range.count
        var value = Matrix(rows: a.value.rows, columns: m)
        for r in 0..<a.value.rows { for j in 0..<m { value.values[r * m + j] = a.value.values[r * n + range.lowerBound + j] } }
        let out = Variable(value, requiresGrad: a.requiresGrad)
        return record(out) {
            let g = out.grad!
            a.accumulate { grad in
                for r in 0..<g.rows { for j in 0..<m { grad.values[r * n + range.lowerBound + j] += g.values[r * m + j] } }
            }
        }
    }

    /// Row sums: rows × 1.
    public func sumRows(_ a: Variable) -> Variable {
        let rows = a.value.rows, n = a.value.columns
        var value = Matrix(rows: rows, columns: 1)
        a.value.values.withUnsafeBufferPointer { ap in
            value.values.withUnsafeMutableBufferPointer { vp in
                for r in 0..<rows {
                    var s: Float = 0
                    for j in 0..<n { s += ap[r * n + j] }
                    vp[r] = s
                }
            }
        }
        let out = Variable(value, requiresGrad: a.requiresGrad)
        return record(out) {
            let g = out.grad!
            var d = Matrix(uninitializedRows: rows, columns: n)
            d.values.withUnsafeMutableBufferPointer { dp in
                g.values.withUnsafeBufferPointer { gp in
                    for r in 0..<rows { let v = gp[r]; for j in 0..<n { dp[r * n + j] = v } }
                }
            }
            a.accumulate(d)
        }
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

    // MARK: Nonlinearities

    /// tanh(a).
    public func tanh(_ a: Variable) -> Variable {
        let compute = self.compute
        let out = Variable(map(a.value, compute) { Lanes.tanh($0) }, requiresGrad: a.requiresGrad)
        return record(out) { a.accumulate(zipMap(out.grad!, out.value, compute) { g, y in g * (1 - y * y) }) }
    }

    /// swish(a) = a · σ(a); σ is kept from the forward pass for the pullback.
    public func swish(_ a: Variable) -> Variable {
        let compute = self.compute
        var value = Matrix(uninitializedRows: a.value.rows, columns: a.value.columns)
        var sig = Matrix(uninitializedRows: a.value.rows, columns: a.value.columns)
        let count = value.values.count
        a.value.values.withUnsafeBufferPointer { x in
            value.values.withUnsafeMutableBufferPointer { y in
                sig.values.withUnsafeMutableBufferPointer { sp in
                    let p = UnsafeShared((x.baseAddress!, y.baseAddress!, sp.baseAddress!))   // disjoint ranges
                    compute.forEachChunk(count: count, chunkSize: elementwiseChunk) { range in
                        let (xp, yp, ss) = p.value
                        for i in stride(from: range.lowerBound, to: range.upperBound, by: 8) {
                            let x = Lanes.load(xp, i, count: count), s = Lanes.sigmoid(x)
                            s.store(ss, i, count: count)
                            (x * s).store(yp, i, count: count)
                        }
                    }
                }
            }
        }
        let out = Variable(value, requiresGrad: a.requiresGrad)
        return record(out) {
            let g = out.grad!
            var d = Matrix(uninitializedRows: g.rows, columns: g.columns)
            d.values.withUnsafeMutableBufferPointer { dp in
                g.values.withUnsafeBufferPointer { gp in
                    out.value.values.withUnsafeBufferPointer { yp in
                        sig.values.withUnsafeBufferPointer { sp in
                            let p = UnsafeShared((dp.baseAddress!, gp.baseAddress!, yp.baseAddress!, sp.baseAddress!))
                            compute.forEachChunk(count: count, chunkSize: elementwiseChunk) { range in
                                let (dd, gg, yy, ss) = p.value
                                for i in stride(from: range.lowerBound, to: range.upperBound, by: 8) {
                                    let s = Lanes.load(ss, i, count: count)
                                    (Lanes.load(gg, i, count: count) * (s + Lanes.load(yy, i, count: count) * (1 - s))).store(dd, i, count: count)
                                }
                            }
                        }
                    }
                }
            }
            a.accumulate(d)
        }
    }

    /// log σ(a), computed stably.
    public func logSigmoid(_ a: Variable) -> Variable {
        let compute = self.compute
        var value = Matrix(uninitializedRows: a.value.rows, columns: a.value.columns)
        for i in 0..<value.values.count { let x = a.value.values[i]; value.values[i] = min(x, 0) - log1p(Foundation.exp(-abs(x))) }
        let out = Variable(value, requiresGrad: a.requiresGrad)
        return record(out) { a.accumulate(zipMap(out.grad!, a.value, compute) { g, x in g * Lanes.sigmoid(-x) }) }
    }

    /// exp(a).
    public func exp(_ a: Variable) -> Variable {
        let compute = self.compute
        let out = Variable(map(a.value, compute) { Lanes.exp($0) }, requiresGrad: a.requiresGrad)
        return record(out) { a.accumulate(zipMap(out.grad!, out.value, compute) { $0 * $1 }) }
    }

    /// a².
    public func square(_ a: Variable) -> Variable {
        let compute = self.compute
        let out = Variable(map(a.value, compute) { $0 * $0 }, requiresGrad: a.requiresGrad)
        return record(out) { a.accumulate(zipMap(out.grad!, a.value, compute) { g, x in 2 * x * g }) }
    }

    /// Row-wise layer normalisation with a learned 1 × n scale and shift (biased variance,
    /// `eps` added to it, as torch's LayerNorm).
    public func layerNorm(_ a: Variable, scale gamma: Variable, shift beta: Variable, eps: Float) -> Variable {
        let compute = self.compute
        let rows = a.value.rows, n = a.value.columns
        var normalized = Matrix(uninitializedRows: rows, columns: n)
        var inverseStd = [Float](repeating: 0, count: rows)
        var value = Matrix(uninitializedRows: rows, columns: n)
        let chunk = max(1, elementwiseChunk / max(1, n))
        a.value.values.withUnsafeBufferPointer { ap in
            normalized.values.withUnsafeMutableBufferPointer { np in
                value.values.withUnsafeMutableBufferPointer { vp in
                    inverseStd.withUnsafeMutableBufferPointer { ip in
                        gamma.value.values.withUnsafeBufferPointer { gp in
                            beta.value.values.withUnsafeBufferPointer { bp in
                                // Workers own disjoint rows.
                                let p = UnsafeShared((ap.baseAddress!, np.baseAddress!, vp.baseAddress!, ip.baseAddress!, gp.baseAddress!, bp.baseAddress!))
                                compute.forEachChunk(count: rows, chunkSize: chunk) { range in
                                    let (x, xn, y, inv, g, b) = p.value
                                    for r in range {
                                        let row = x + r * n
                                        var total = Lanes()
                                        for j in stride(from: 0, to: n, by: 8) { total += Lanes.load(row, j, count: n) }
                                        let mean = total.total / Float(n)
                                        // Tail lanes padded with the mean contribute 0 to the variance.
                                        var squares = Lanes()
                                        for j in stride(from: 0, to: n, by: 8) { let d = Lanes.load(row, j, count: n, padding: mean) - mean; squares += d * d }
                                        let k = 1 / (squares.total / Float(n) + eps).squareRoot()
                                        inv[r] = k
                                        for j in stride(from: 0, to: n, by: 8) {
                                            let h = (Lanes.load(row, j, count: n) - mean) * k
                                            h.store(xn + r * n, j, count: n)
                                            (h * Lanes.load(g, j, count: n) + Lanes.load(b, j, count: n)).store(y + r * n, j, count: n)
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        let out = Variable(value, requiresGrad: a.requiresGrad || gamma.requiresGrad || beta.requiresGrad)
        return record(out) {
            let g = out.grad!
            if gamma.requiresGrad { gamma.accumulate(columnSums(zipMap(g, normalized, compute) { $0 * $1 }, compute)) }
            if beta.requiresGrad { beta.accumulate(columnSums(g, compute)) }
            guard a.requiresGrad else { return }
            var d = Matrix(uninitializedRows: rows, columns: n)
            d.values.withUnsafeMutableBufferPointer { dp in
                g.values.withUnsafeBufferPointer { gp in
                    normalized.values.withUnsafeBufferPointer { np in
                        inverseStd.withUnsafeBufferPointer { ip in
                            gamma.value.values.withUnsafeBufferPointer { sp in
                                let p = UnsafeShared((dp.baseAddress!, gp.baseAddress!, np.baseAddress!, ip.baseAddress!, sp.baseAddress!))
                                compute.forEachChunk(count: rows, chunkSize: chunk) { range in
                                    let (dd, gg, xn, inv, scale) = p.value
                                    for r in range {
                                        let gr = gg + r * n, xr = xn + r * n
                                        var sums = Lanes(), dots = Lanes()
                                        for j in stride(from: 0, to: n, by: 8) {
                                            let dxhat = Lanes.load(gr, j, count: n) * Lanes.load(scale, j, count: n)
                                            sums += dxhat; dots += dxhat * Lanes.load(xr, j, count: n)
                                        }
                                        let sum = sums.total, dot = dots.total
                                        let k = inv[r] / Float(n)
                                        for j in stride(from: 0, to: n, by: 8) {
                                            let dxhat = Lanes.load(gr, j, count: n) * Lanes.load(scale, j, count: n)
                                            (k * (Float(n) * dxhat - sum - Lanes.load(xr, j, count: n) * dot)).store(dd + r * n, j, count: n)
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            a.accumulate(d)
        }
    }

    /// Row-wise log-softmax.
    public func logSoftmax(_ a: Variable) -> Variable {
        let rows = a.value.rows, n = a.value.columns
        var value = a.value
        for r in 0..<rows {
            var top = -Float.infinity
            for j in 0..<n { top = max(top, value.values[r * n + j]) }
            var s = 0.0
            for j in 0..<n { s += Foundation.exp(Double(value.values[r * n + j] - top)) }
            let lse = top + Float(Foundation.log(s))
            for j in 0..<n { value.values[r * n + j] -= lse }
        }
        let out = Variable(value, requiresGrad: a.requiresGrad)
        return record(out) {
            let g = out.grad!
            var d = g
            for r in 0..<rows {
                var s = 0.0
                for j in 0..<n { s += Double(g.values[r * n + j]) }
                for j in 0..<n { d.values[r * n + j] -= Float(s) * Foundation.exp(out.value.values[r * n + j]) }
            }
            a.accumulate(d)
        }
    }

    /// Σ_j a[r, j] · x[r, j] for a constant sparse x: rows × 1 (the multinomial
    /// log-likelihood of a log-softmax output against a user's items).
    public func sparseRowDot(_ a: Variable, _ x: SparseMatrix) -> Variable {
        precondition(x.rows == a.value.rows && x.columns == a.value.columns, "sparseRowDot: shapes differ")
        let n = a.value.columns
        var value = Matrix(rows: x.rows, columns: 1)
        for r in 0..<x.rows {
            var s = 0.0
            for e in x.entries(ofRow: r) { s += Double(a.value.values[r * n + Int(x.columnIndices[e])] * x.values[e]) }
            value.values[r] = Float(s)
        }
        let out = Variable(value, requiresGrad: a.requiresGrad)
        return record(out) {
            let g = out.grad!
            a.accumulate { grad in
                for r in 0..<x.rows { for e in x.entries(ofRow: r) { grad.values[r * n + Int(x.columnIndices[e])] += g.values[r] * x.values[e] } }
            }
        }
    }

    /// Σ_j x[r, j] · log softmax(a)[r, j] for a constant sparse x: rows × 1. The same as
    /// `sparseRowDot(logSoftmax(a), x)` without the rows × n log-softmax matrix: forward needs
    /// each row's log-sum-exp, and the gradient is g_r · (x[r, ·] − softmax(a)[r, ·] · Σ_j x[r, j]).
    /// The forward keeps e^{a − max_r}, which the pullback scales into the gradient in place,
    /// so each element's exponential is computed once.
    public func multinomialLogLikelihood(_ a: Variable, _ x: SparseMatrix) -> Variable {
        let compute = self.compute
        precondition(x.rows == a.value.rows && x.columns == a.value.columns, "multinomialLogLikelihood: shapes differ")
        let rows = a.value.rows, n = a.value.columns
        var exponentials = Matrix(uninitializedRows: rows, columns: n)   // e^{a[r, j] − max_j a[r, j]}
        var rowSums = [Float](repeating: 0, count: rows)
        var value = Matrix(rows: rows, columns: 1)
        a.value.values.withUnsafeBufferPointer { ap in
            exponentials.values.withUnsafeMutableBufferPointer { ep in
                rowSums.withUnsafeMutableBufferPointer { sp in
                    value.values.withUnsafeMutableBufferPointer { vp in
                        let p = UnsafeShared((ap.baseAddress!, ep.baseAddress!, sp.baseAddress!, vp.baseAddress!))   // disjoint rows
                        compute.forEachChunk(count: rows, chunkSize: 16) { range in
                            let (a, e, sums, v) = p.value
                            for r in range {
                                let row = a + r * n, out = e + r * n
                                var top = Lanes(repeating: -.infinity)
                                for j in stride(from: 0, to: n, by: 8) { top = Lanes.maximum(top, Lanes.load(row, j, count: n, padding: -.infinity)) }
                                let rowMax = top.max()
                                var total = Lanes()
                                for j in stride(from: 0, to: n, by: 8) {
                                    let t = Lanes.expNonPositive(Lanes.load(row, j, count: n, padding: -.infinity) - rowMax)
                                    t.store(out, j, count: n)
                                    total += t
                                }
                                let sum = total.total
                                sums[r] = sum
                                let lse = rowMax + Foundation.log(sum)
                                var dot: Float = 0
                                for k in x.entries(ofRow: r) { dot += (row[Int(x.columnIndices[k])] - lse) * x.values[k] }
                                v[r] = dot
                            }
                        }
                    }
                }
            }
        }
        let out = Variable(value, requiresGrad: a.requiresGrad)
        return record(out) {
            let g = out.grad!
            exponentials.values.withUnsafeMutableBufferPointer { ep in
                rowSums.withUnsafeBufferPointer { sp in
                    let p = UnsafeShared((ep.baseAddress!, sp.baseAddress!))   // disjoint rows
                    compute.forEachChunk(count: rows, chunkSize: 16) { range in
                        let (e, sums) = p.value
                        for r in range {
                            var mass: Float = 0
                            for k in x.entries(ofRow: r) { mass += x.values[k] }
                            let scale = -g.values[r] * mass / sums[r]
                            let row = e + r * n
                            for j in stride(from: 0, to: n, by: 8) { (scale * Lanes.load(row, j, count: n)).store(row, j, count: n) }
                            for k in x.entries(ofRow: r) { row[Int(x.columnIndices[k])] += g.values[r] * x.values[k] }
                        }
                    }
                }
            }
            a.accumulate(exponentials)
            exponentials = Matrix(rows: 0, columns: 0)   // the gradient now owns the buffer
        }
    }

    /// The Gaussian log-density log N(x; μ, exp(logvar)), elementwise.
    public func logNormalDensity(_ x: Variable, mean mu: Variable, logVariance lv: Variable) -> Variable {
        let compute = self.compute
        let n = x.value.values.count
        precondition(mu.value.values.count == n && lv.value.values.count == n, "logNormalDensity: shapes differ")
        var value = Matrix(uninitializedRows: x.value.rows, columns: x.value.columns)
        var scaled = Matrix(uninitializedRows: x.value.rows, columns: x.value.columns)   // (x − μ)·e^{−logvar}, for the pullback
        value.values.withUnsafeMutableBufferPointer { vp in
            scaled.values.withUnsafeMutableBufferPointer { sp in
                x.value.values.withUnsafeBufferPointer { xp in
                    mu.value.values.withUnsafeBufferPointer { mp in
                        lv.value.values.withUnsafeBufferPointer { lp in
                            let p = UnsafeShared((vp.baseAddress!, sp.baseAddress!, xp.baseAddress!, mp.baseAddress!, lp.baseAddress!))
                            compute.forEachChunk(count: n, chunkSize: elementwiseChunk) { range in
                                let (v, s, xx, m, l) = p.value
                                for i in stride(from: range.lowerBound, to: range.upperBound, by: 8) {
                                    let logVariance = Lanes.load(l, i, count: n)
                                    let d = Lanes.load(xx, i, count: n) - Lanes.load(m, i, count: n), inv = Lanes.exp(-logVariance)
                                    (d * inv).store(s, i, count: n)
                                    (-0.5 * (logVariance + logTwoPi + d * d * inv)).store(v, i, count: n)
                                }
                            }
                        }
                    }
                }
            }
        }
        let out = Variable(value, requiresGrad: x.requiresGrad || mu.requiresGrad || lv.requiresGrad)
        return record(out) {
            let g = out.grad!
            var dx = Matrix(uninitializedRows: x.value.rows, columns: x.value.columns)
            var dl = Matrix(uninitializedRows: x.value.rows, columns: x.value.columns)
            dx.values.withUnsafeMutableBufferPointer { dxp in
                dl.values.withUnsafeMutableBufferPointer { dlp in
                    g.values.withUnsafeBufferPointer { gp in
                        scaled.values.withUnsafeBufferPointer { sp in
                            x.value.values.withUnsafeBufferPointer { xp in
                                mu.value.values.withUnsafeBufferPointer { mp in
                                    let p = UnsafeShared((dxp.baseAddress!, dlp.baseAddress!, gp.baseAddress!, sp.baseAddress!, xp.baseAddress!, mp.baseAddress!))
                                    compute.forEachChunk(count: n, chunkSize: elementwiseChunk) { range in
                                        let (ddx, ddl, gg, ss, xx, m) = p.value
                                        for i in range {
                                            ddx[i] = -gg[i] * ss[i]
                                            ddl[i] = -0.5 * gg[i] * (1 - ss[i] * (xx[i] - m[i]))
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            if x.requiresGrad { x.accumulate(dx) }
            if mu.requiresGrad { mu.accumulate(map(dx, compute) { -$0 }) }
            if lv.requiresGrad { lv.accumulate(dl) }
        }
    }

    /// log Σ_i exp(terms[i]), elementwise over same-shaped terms.
    public func logSumExp(_ terms: [Variable]) -> Variable {
        let compute = self.compute
        let n = terms[0].value.values.count, k = terms.count
        precondition(terms.allSatisfy { $0.value.values.count == n }, "logSumExp: shapes differ")
        var value = Matrix(uninitializedRows: terms[0].value.rows, columns: terms[0].value.columns)
        // Raw pointers to each term, valid while `inputs` (copies of the matrices) lives.
        let inputs = terms.map(\.value.values)
        withExtendedLifetime(inputs) {
            let pointers = UnsafeShared(inputs.map { $0.withUnsafeBufferPointer { $0.baseAddress! } })
            value.values.withUnsafeMutableBufferPointer { vp in
                let out = UnsafeShared(vp.baseAddress!)   // disjoint element ranges
                compute.forEachChunk(count: n, chunkSize: elementwiseChunk) { range in
                    let t = pointers.value, o = out.value
                    for i in stride(from: range.lowerBound, to: range.upperBound, by: 8) {
                        var top = Lanes(repeating: -.infinity)
                        for j in 0..<k { top = Lanes.maximum(top, Lanes.load(t[j], i, count: n)) }
                        var sum = Lanes()
                        for j in 0..<k { sum += Lanes.exp(Lanes.load(t[j], i, count: n) - top) }
                        var result = top
                        for lane in 0..<8 { result[lane] += Foundation.log(sum[lane]) }
                        result.store(o, i, count: n)
                    }
                }
            }
        }
        let out = Variable(value, requiresGrad: terms.contains { $0.requiresGrad })
        return record(out) {
            let g = out.grad!
            for t in terms where t.requiresGrad {
                // d/dt_i = g · exp(t_i − lse).
                t.accumulate(zipMap(g, zipMap(t.value, out.value, compute) { $0 - $1 }, compute) { gi, d in gi * Lanes.exp(d) })
            }
        }
    }

    // MARK: Embeddings

    // Embedding-sized work (a batch of 64-wide rows) runs on the calling thread: waking a
    // worker costs more than the rows do.

    /// Rows `indices` of `table` (an embedding lookup); the gradient scatter-adds back.
    public func gather(_ table: Variable, rows indices: [Int32]) -> Variable {
        let d = table.value.columns
        var value = Matrix(uninitializedRows: indices.count, columns: d)
        value.values.withUnsafeMutableBufferPointer { out in
            table.value.values.withUnsafeBufferPointer { src in
                for (r, i) in indices.enumerated() { (out.baseAddress! + r * d).update(from: src.baseAddress! + Int(i) * d, count: d) }
            }
        }
        let out = Variable(value, requiresGrad: table.requiresGrad)
        return record(out) {
            table.accumulateRows(out.grad!, at: indices)
        }
    }

    /// Σ_j a[r, j] · b[r, j]: rows × 1.
    public func rowDot(_ a: Variable, _ b: Variable) -> Variable {
        let n = a.value.columns, rows = a.value.rows
        precondition(b.value.rows == rows && b.value.columns == n, "rowDot: shapes differ")
        var value = Matrix(uninitializedRows: rows, columns: 1)
        value.values.withUnsafeMutableBufferPointer { out in
            a.value.values.withUnsafeBufferPointer { x in
                b.value.values.withUnsafeBufferPointer { y in
                    for r in 0..<rows {
                        // Eight partial sums, then their total: a fixed order without a chain
                        // of n dependent adds.
                        let xr = x.baseAddress! + r * n, yr = y.baseAddress! + r * n
                        var sum = Lanes()
                        for j in stride(from: 0, to: n, by: 8) { sum += Lanes.load(xr, j, count: n) * Lanes.load(yr, j, count: n) }
                        out[r] = sum.total
                    }
                }
            }
        }
        let out = Variable(value, requiresGrad: a.requiresGrad || b.requiresGrad)
        return record(out) {
            let g = out.grad!
            /// Row r of m times g[r].
            func scaled(_ m: Matrix) -> Matrix {
                var d = Matrix(uninitializedRows: rows, columns: n)
                d.values.withUnsafeMutableBufferPointer { dp in
                    m.values.withUnsafeBufferPointer { mp in
                        for r in 0..<rows {
                            let s = g.values[r], from = mp.baseAddress! + r * n, to = dp.baseAddress! + r * n
                            for j in stride(from: 0, to: n, by: 8) { (s * Lanes.load(from, j, count: n)).store(to, j, count: n) }
                        }
                    }
                }
                return d
            }
            if a.requiresGrad { a.accumulate(scaled(b.value)) }
            if b.requiresGrad { b.accumulate(scaled(a.value)) }
        }
    }
}

/// Column sums as a 1 × n matrix: rows added in order (vectorised along the row), blocks
/// of columns in parallel, so each column's sum has a fixed order.
func columnSums(_ m: Matrix, _ compute: Compute) -> Matrix {
    let rows = m.rows, n = m.columns
    var s = Matrix(rows: 1, columns: n)
    s.values.withUnsafeMutableBufferPointer { sp in
        m.values.withUnsafeBufferPointer { mp in
            let p = UnsafeShared((sp.baseAddress!, mp.baseAddress!))   // disjoint column blocks
            compute.forEachChunk(count: n, chunkSize: 256) { columns in
                let (out, input) = p.value
                for r in 0..<rows {
                    let row = input + r * n
                    for j in columns { out[j] += row[j] }
                }
            }
        }
    }
    return s
}
