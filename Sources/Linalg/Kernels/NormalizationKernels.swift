import CLanes

/// Row-wise layer normalisation (biased variance, `eps` added to it, as torch's LayerNorm).
public enum LayerNormKernels {
    /// Rows of x normalised (x̂), scaled by γ and shifted by β; also x̂ and each row's
    /// 1 / std, kept for the gradient. With `residual`, the rows normalised are x + keep ⊙ y
    /// (a post-LN transformer's residual step, its dropout factors `keep` if any), built a row
    /// at a time and never stored; with `relu`, the output is max(0, ·). Workers own disjoint rows.
    public static func forward(_ x: Matrix, residual: (y: Matrix, keep: Matrix?)? = nil, scale gamma: Matrix, shift beta: Matrix, eps: Float,
                               relu: Bool = false, compute: Compute) -> (value: Matrix, normalized: Matrix, inverseStd: Matrix) {
        let rows = x.rows, n = x.columns
        precondition([residual?.y, residual?.keep].allSatisfy { $0.map { $0.rows == rows && $0.columns == n } ?? true }, "layer norm: residual shape")
        var outputs = [Matrix(uninitializedRows: rows, columns: n), Matrix(uninitializedRows: rows, columns: n), Matrix(rows: rows, columns: 1)]
        guard rows > 0 && n > 0 else { return (outputs[0], outputs[1], outputs[2]) }
        let inputs = [x, gamma, beta] + [residual?.y, residual?.keep].compactMap { $0 }
        let (adds, drops) = (residual != nil, residual?.keep != nil)
        Matrix.withBuffers(reading: inputs, writing: &outputs) { b in
            compute.forEachChunk(count: rows, chunkSize: max(1, elementwiseChunk / n)) { range in
                let (x, g, bias, y, xn, inv) = (b.read[0], b.read[1], b.read[2], b.write[0], b.write[1], b.write[2])
                withUnsafeTemporaryAllocation(of: Float.self, capacity: adds ? n : 0) { sum in
                    for r in range {
                        var row = x + r * n
                        if adds {
                            for j in stride(from: 0, to: n, by: 8) {
                                var v = Lanes.load(b.read[3] + r * n, j, count: n)
                                if drops { v = v * Lanes.load(b.read[4] + r * n, j, count: n) }
                                (Lanes.load(row, j, count: n) + v).store(sum.baseAddress!, j, count: n)
                            }
                            row = UnsafePointer(sum.baseAddress!)
                        }
                        inv[r] = normalize(row, into: xn + r * n, output: y + r * n, scale: g, shift: bias, count: n, eps: eps, relu: relu)
                    }
                }
            }
        }
        return (outputs[0], outputs[1], outputs[2])
    }

    /// One row: x̂ into `normalized`, γ ⊙ x̂ + β (or its relu) into `output`; returns 1 / std.
    @inline(__always)
    static func normalize(_ row: UnsafePointer<Float>, into xn: UnsafeMutablePointer<Float>, output y: UnsafeMutablePointer<Float>,
                          scale g: UnsafePointer<Float>, shift bias: UnsafePointer<Float>, count n: Int, eps: Float, relu: Bool) -> Float {
        var total = Lanes()
        for j in stride(from: 0, to: n, by: 8) { total += Lanes.load(row, j, count: n) }
        let mean = total.total / Float(n)
        // Tail lanes padded with the mean contribute 0 to the variance.
        var squares = Lanes()
        for j in stride(from: 0, to: n, by: 8) { let d = Lanes.load(row, j, count: n, padding: mean) - mean; squares += d * d }
        let k = 1 / (squares.total / Float(n) + eps).squareRoot()
        for j in stride(from: 0, to: n, by: 8) {
            let h = (Lanes.load(row, j, count: n) - mean) * k
            h.store(xn, j, count: n)
            let out = h * Lanes.load(g, j, count: n) + Lanes.load(bias, j, count: n)
            (relu ? Lanes.relu(out) : out).store(y, j, count: n)
        }
        return k
    }

    /// d/dx of the normalisation: (1/std)/n · (n·dx̂ − Σ dx̂ − x̂ · Σ dx̂·x̂) with dx̂ = g ⊙ γ.
    public static func inputGradient(_ g: Matrix, normalized: Matrix, inverseStd: Matrix, scale gamma: Matrix, compute: Compute) -> Matrix {
        let rows = g.rows, n = g.columns
        var outputs = [Matrix(uninitializedRows: rows, columns: n)]
        guard rows > 0 && n > 0 else { return outputs[0] }
        Matrix.withBuffers(reading: [g, normalized, inverseStd, gamma], writing: &outputs) { b in
            compute.forEachChunk(count: rows, chunkSize: max(1, elementwiseChunk / n)) { range in
                let (dd, gg, xn, inv, scale) = (b.write[0], b.read[0], b.read[1], b.read[2], b.read[3])
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
        return outputs[0]
    }
}

extension LayerNormKernels {
    /// Everything layer norm's pullback needs, from the output's gradient `g`: the 2 × n sums
    /// (row 0 Σ g', β's gradient; row 1 Σ g' ⊙ x̂, γ's) with g' = g, or g where `output` > 0 after
    /// a relu; with `inputs`, dx, and dx ⊙ keep for the residual when `keep` is given. With AVX2,
    /// one pass over each chunk of rows (the composed pullback makes three to five over the whole
    /// matrix); the column sums are added per chunk of
    /// rows, then chunk by chunk, so they do not depend on the worker count.
    public static func backward(_ g: Matrix, output: Matrix?, normalized xn: Matrix, inverseStd: Matrix, scale gamma: Matrix, keep: Matrix?,
                                inputs: Bool, compute: Compute, kernels: KernelSet = .current) -> (sums: Matrix, dx: Matrix?, dy: Matrix?) {
        guard kernels == .avx2 else {
            let gr = output.map { o in g.zipMap(o, compute) { Lanes.reluGradient($0, output: $1) } } ?? g
            let sums = BatchNormKernels.gradientSums(gr, normalized: .init(normalized: xn), compute: compute)
            guard inputs else { return (sums, nil, nil) }
            let dx = inputGradient(gr, normalized: xn, inverseStd: inverseStd, scale: gamma, compute: compute)
            return (sums, dx, keep.map { k in dx.zipMap(k, compute) { $0 * $1 } })
        }
        let rows = g.rows, n = g.columns, chunk = max(1, elementwiseChunk / max(1, n))
        guard rows > 0 && n > 0 else {
            let empty = inputs ? Matrix(rows: rows, columns: n) : nil
            return (Matrix(rows: 2, columns: n), empty, keep == nil ? nil : empty)
        }
        var outputs = inputs ? [Matrix(uninitializedRows: rows, columns: n)] + (keep == nil ? [] : [Matrix(uninitializedRows: rows, columns: n)]) : []
        let partial: [[Float]] = Matrix.withBuffers(reading: [g, output ?? g, xn, inverseStd, gamma, keep ?? g], writing: &outputs) { b in
            compute.mapChunks(count: rows, chunkSize: chunk) { range -> [Float] in
                var sums = [Float](repeating: 0, count: 2 * n)
                sums.withUnsafeMutableBufferPointer { s in
                    let r = b.read, (dx, dy) = (inputs ? b.write[0] : nil, inputs && keep != nil ? b.write[1] : nil)
                    let relu = output != nil, (beta, gamma) = (s.baseAddress!, s.baseAddress! + n)
                    for i in range {
                        let at = i * n
                        let out: UnsafePointer<Float>? = relu ? r[1] + at : nil
                        let (dxRow, dyRow): (UnsafeMutablePointer<Float>?, UnsafeMutablePointer<Float>?) = (dx.map { $0 + at }, dy.map { $0 + at })
                        recbench_layer_norm_backward_row_avx2(r[0] + at, out, r[2] + at, r[4], r[3][i], n, beta, gamma, dxRow, r[5] + at, dyRow)
                    }
                }
                return sums
            }
        }
        var sums = Matrix(rows: 2, columns: n)
        for chunkSums in partial { for j in 0..<(2 * n) { sums.values[j] += chunkSums[j] } }   // chunk order
        return (sums, inputs ? outputs[0] : nil, inputs && keep != nil ? outputs[1] : nil)
    }
}

/// Column-wise batch normalisation (torch's BatchNorm1d over a batch's rows). Column sums split
/// the columns into one contiguous block per worker, each column's sum down its rows in order,
/// so no result depends on the split; elementwise parts split the rows.
public enum BatchNormKernels {
    /// Lanes `j ..< j + 8` of row `r` (zeros past the row's end).
    @inline(__always)
    static func load(_ p: UnsafePointer<Float>, row r: Int, _ j: Int, columns n: Int) -> Lanes {
        j < n ? Lanes.load(p + r * n, j, count: n) : Lanes()
    }

    /// Each column's mean and biased variance over the rows (Double sums: a batch is thousands of rows).
    public static func statistics(_ x: Matrix, compute: Compute, kernels: KernelSet = .current) -> (mean: Matrix, variance: Matrix) {
        let rows = x.rows, n = x.columns
        var outputs = [Matrix(rows: 1, columns: n), Matrix(rows: 1, columns: n)]
        guard rows > 0 && n > 0 else { return (outputs[0], outputs[1]) }
        if kernels == .avx2 {
            Matrix.withBuffers(reading: [x], writing: &outputs) { b in
                forEachColumnBlock(n, compute: compute) { block in
                    recbench_bn_statistics_avx2(b.read[0], rows, n, block.lowerBound, block.upperBound, b.write[0], b.write[1])
                }
            }
            return (outputs[0], outputs[1])
        }
        Matrix.withBuffers(reading: [x], writing: &outputs) { b in
            forEachColumnBlock(n, compute: compute, accumulators: 2, of: SIMD8<Double>.self) { block, acc in
                let (x, mean, variance, groups) = (b.read[0], b.write[0], b.write[1], (block.count + 7) / 8)
                let (m, q) = (acc, acc + groups)
                for r in 0..<rows { for k in 0..<groups { m[k] += SIMD8<Double>(load(x, row: r, block.lowerBound + 8 * k, columns: n)) } }
                for k in 0..<groups { m[k] /= Double(rows) }
                for r in 0..<rows {
                    for k in 0..<groups { let d = SIMD8<Double>(load(x, row: r, block.lowerBound + 8 * k, columns: n)) - m[k]; q[k] += d * d }
                }
                for j in block {
                    let (k, l) = ((j - block.lowerBound) / 8, (j - block.lowerBound) % 8)
                    mean[j] = Float(m[k][l]); variance[j] = Float(q[k][l] / Double(rows))
                }
            }
        }
        return (outputs[0], outputs[1])
    }

    /// body(columns) for contiguous blocks of columns (whole groups of eight), one per worker. A
    /// block walks its rows in order, reading each row's block contiguously, so every column's
    /// sum is added in row order whatever the split: the same bits on any worker count. Blocks
    /// are at least `Matrix.minimumColumnBlock` columns: a worker reading part of each row is slower than one
    /// reading whole rows alone.
    static func forEachColumnBlock(_ n: Int, compute: Compute, _ body: @Sendable (Range<Int>) -> Void) {
        guard n > 0 else { return }
        let groups = (n + 7) / 8, perBlock = max(Matrix.minimumColumnBlock / 8, (groups + compute.activeWorkers - 1) / compute.activeWorkers)
        compute.forEachChunk(count: groups, chunkSize: perBlock) { range in body((range.lowerBound * 8)..<min(n, range.upperBound * 8)) }
    }

    /// `forEachColumnBlock` with each block's `accumulators` zeroed lane groups per eight columns.
    static func forEachColumnBlock<T: SIMD & Sendable>(_ n: Int, compute: Compute, accumulators: Int, of: T.Type,
                                            _ body: @Sendable (Range<Int>, UnsafeMutablePointer<T>) -> Void) where T.Scalar: FloatingPoint {
        forEachColumnBlock(n, compute: compute) { block in
            let count = accumulators * ((block.count + 7) / 8)
            withUnsafeTemporaryAllocation(of: T.self, capacity: count) { acc in
                acc.initialize(repeating: T())
                body(block, acc.baseAddress!)
            }
        }
    }

    /// y = γ ⊙ x̂ + β for x̂ = (x − μ) / √(σ² + ε) per column, or f(γ ⊙ x̂ + β) with an
    /// `activation` applied to each chunk of rows while it is in cache; also each column's
    /// 1 / √(σ² + ε). x̂ is not stored: the pullback recomputes it from x (`Centered`).
    public static func forward(_ x: Matrix, mean: Matrix, variance: Matrix, scale gamma: Matrix, shift beta: Matrix, eps: Float,
                               activation: PointwiseActivation? = nil, compute: Compute,
                               kernels: KernelSet = .current) -> (value: Matrix, inverseStd: Matrix) {
        let rows = x.rows, n = x.columns
        let inverse = Matrix(rows: 1, columns: n, values: variance.values.map { 1 / ($0 + eps).squareRoot() })
        var outputs = [Matrix(uninitializedRows: rows, columns: n)]
        guard rows > 0 && n > 0 else { return (outputs[0], inverse) }
        Matrix.withBuffers(reading: [x, mean, inverse, gamma, beta], writing: &outputs) { b in
            compute.forEachChunk(count: rows, chunkSize: max(1, elementwiseChunk / n)) { range in
                let (x, mu, inv, g, bias, y) = (b.read[0], b.read[1], b.read[2], b.read[3], b.read[4], b.write[0])
                if kernels == .avx2 {
                    recbench_bn_forward_avx2(x, mu, inv, g, bias, n, range.lowerBound, range.upperBound, y)
                    activation?.apply(y + range.lowerBound * n, count: range.count * n, kernels: kernels)
                    return
                }
                for r in range {
                    for j in stride(from: 0, to: n, by: 8) {
                        let h = (Lanes.load(x + r * n, j, count: n) - Lanes.load(mu, j, count: n)) * Lanes.load(inv, j, count: n)
                        (Lanes.load(g, j, count: n) * h + Lanes.load(bias, j, count: n)).store(y + r * n, j, count: n)
                    }
                }
                activation?.apply(y + range.lowerBound * n, count: range.count * n, kernels: kernels)
            }
        }
        return (outputs[0], inverse)
    }

    /// Where a pullback pass finds x̂: stored (layer norm's fallback), or the input x with each
    /// column's μ and 1 / √(σ² + ε), x̂ = (x − μ) · inv recomputed as the forward pass computed it.
    public struct Centered: Sendable {
        let source: Matrix, mean: Matrix?, inverseStd: Matrix?

        /// x̂ as stored.
        public init(normalized: Matrix) { source = normalized; mean = nil; inverseStd = nil }

        /// x̂ from the input and its column statistics.
        public init(input: Matrix, mean: Matrix, inverseStd: Matrix) { source = input; self.mean = mean; self.inverseStd = inverseStd }

        /// The buffers a pass reads: the source, then μ and inv (the source again when stored).
        var buffers: [Matrix] { [source, mean ?? source, inverseStd ?? source] }
        var recomputes: Bool { mean != nil }
    }

    /// Each column's Σ g (row 0: β's gradient) and Σ g·x̂ (row 1: γ's), which the input gradient needs too.
    /// With `activation`, g is the gradient of f's output y and its pullback g ⊙ f′ is taken on the fly, never stored.
    public static func gradientSums(_ g: Matrix, normalized xn: Centered, activation: (kind: PointwiseActivation, output: Matrix)? = nil,
                                    compute: Compute, kernels: KernelSet = .current) -> Matrix {
        let rows = g.rows, n = g.columns, f = activation?.kind, centers = xn.recomputes
        var columnSums = [Matrix(rows: 2, columns: n)]
        guard rows > 0 && n > 0 else { return columnSums[0] }
        if kernels == .avx2 {
            let kind = f?.code ?? 0
            Matrix.withBuffers(reading: [g, activation?.output ?? g] + xn.buffers, writing: &columnSums) { b in
                forEachColumnBlock(n, compute: compute) { block in
                    recbench_bn_gradient_sums_avx2(b.read[0], b.read[1], kind, b.read[2], centers ? b.read[3] : nil, b.read[4], rows, n,
                                                   block.lowerBound, block.upperBound, b.write[0])
                }
            }
            return columnSums[0]
        }
        Matrix.withBuffers(reading: [g, activation?.output ?? g] + xn.buffers, writing: &columnSums) { b in
            forEachColumnBlock(n, compute: compute, accumulators: 2, of: Lanes.self) { block, acc in
                let (g, y, xs, mu, inv, sums, groups) = (b.read[0], b.read[1], b.read[2], b.read[3], b.read[4], b.write[0], (block.count + 7) / 8)
                let (s, d) = (acc, acc + groups)
                for r in 0..<rows {
                    for k in 0..<groups {
                        let j = block.lowerBound + 8 * k
                        var gr = load(g, row: r, j, columns: n)
                        if let f { gr = f.pullback(gr, output: load(y, row: r, j, columns: n)) }
                        var x = load(xs, row: r, j, columns: n)
                        if centers { x = (x - load(mu, row: 0, j, columns: n)) * load(inv, row: 0, j, columns: n) }
                        s[k] += gr; d[k] += gr * x
                    }
                }
                for k in 0..<groups { s[k].store(sums, block.lowerBound + 8 * k, count: n); d[k].store(sums + n, block.lowerBound + 8 * k, count: n) }
            }
        }
        return columnSums[0]
    }

    /// d/dx when μ and σ² are the batch's own: γ/√(σ²+ε)/N · (N·g − Σ g − x̂ · Σ g·x̂) per column, given `gradientSums`
    /// (with `activation`, of g ⊙ f′ again taken on the fly), x̂ recomputed from the input x.
    public static func inputGradient(_ g: Matrix, input x: Matrix, mean: Matrix, inverseStd: Matrix, scale gamma: Matrix, sums: Matrix,
                                     activation: (kind: PointwiseActivation, output: Matrix)? = nil, compute: Compute,
                                     kernels: KernelSet = .current) -> Matrix {
        let rows = g.rows, n = g.columns, count = Float(rows), f = activation?.kind
        var outputs = [Matrix(uninitializedRows: rows, columns: n)]
        guard rows > 0 && n > 0 else { return outputs[0] }
        Matrix.withBuffers(reading: [g, x, inverseStd, gamma, sums, activation?.output ?? g, mean], writing: &outputs) { b in
            compute.forEachChunk(count: rows, chunkSize: max(1, elementwiseChunk / n)) { range in
                let (g, x, inv, scale, sums, y, mu, out) = (b.read[0], b.read[1], b.read[2], b.read[3], b.read[4], b.read[5], b.read[6], b.write[0])
                if kernels == .avx2 {
                    recbench_bn_input_gradient_avx2(g, y, f?.code ?? 0, x, mu, inv, scale, sums, n, count, range.lowerBound, range.upperBound, out)
                    return
                }
                for r in range {
                    for j in stride(from: 0, to: n, by: 8) {
                        let k = Lanes.load(scale, j, count: n) * Lanes.load(inv, j, count: n) / count
                        var gr = Lanes.load(g + r * n, j, count: n)
                        if let f { gr = f.pullback(gr, output: Lanes.load(y + r * n, j, count: n)) }
                        let xn = (Lanes.load(x + r * n, j, count: n) - Lanes.load(mu, j, count: n)) * Lanes.load(inv, j, count: n)
                        let d = count * gr - Lanes.load(sums, j, count: n) - xn * Lanes.load(sums + n, j, count: n)
                        (k * d).store(out + r * n, j, count: n)
                    }
                }
            }
        }
        return outputs[0]
    }

    /// g ⊙ a ⊙ b with a and b 1 × n rows (d/dx under fixed statistics: g · γ / √(σ² + ε)).
    public static func scaledColumns(_ g: Matrix, _ a: Matrix, _ b: Matrix, compute: Compute) -> Matrix {
        let rows = g.rows, n = g.columns
        var outputs = [Matrix(uninitializedRows: rows, columns: n)]
        guard rows > 0 && n > 0 else { return outputs[0] }
        Matrix.withBuffers(reading: [g, a, b], writing: &outputs) { p in
            compute.forEachChunk(count: rows, chunkSize: max(1, elementwiseChunk / n)) { range in
                let (g, a, b, out) = (p.read[0], p.read[1], p.read[2], p.write[0])
                for r in range {
                    for j in stride(from: 0, to: n, by: 8) {
                        (Lanes.load(g + r * n, j, count: n) * (Lanes.load(a, j, count: n) * Lanes.load(b, j, count: n))).store(out + r * n, j, count: n)
                    }
                }
            }
        }
        return outputs[0]
    }
}
