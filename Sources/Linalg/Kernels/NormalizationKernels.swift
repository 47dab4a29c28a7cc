/// Row-wise layer normalisation (biased variance, `eps` added to it, as torch's LayerNorm).
public enum LayerNormKernels {
    /// Rows of x normalised (x̂), scaled by γ and shifted by β; also x̂ and each row's
    /// 1 / std, kept for the gradient. Workers own disjoint rows.
    public static func forward(_ x: Matrix, scale gamma: Matrix, shift beta: Matrix, eps: Float, compute: Compute)
        -> (value: Matrix, normalized: Matrix, inverseStd: Matrix) {
        let rows = x.rows, n = x.columns
        var outputs = [Matrix(uninitializedRows: rows, columns: n), Matrix(uninitializedRows: rows, columns: n), Matrix(rows: rows, columns: 1)]
        guard rows > 0 && n > 0 else { return (outputs[0], outputs[1], outputs[2]) }
        Matrix.withBuffers(reading: [x, gamma, beta], writing: &outputs) { b in
            compute.forEachChunk(count: rows, chunkSize: max(1, elementwiseChunk / n)) { range in
                let (x, g, bias, y, xn, inv) = (b.read[0], b.read[1], b.read[2], b.write[0], b.write[1], b.write[2])
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
                        (h * Lanes.load(g, j, count: n) + Lanes.load(bias, j, count: n)).store(y + r * n, j, count: n)
                    }
                }
            }
        }
        return (outputs[0], outputs[1], outputs[2])
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

/// Column-wise batch normalisation (torch's BatchNorm1d over a batch's rows).
public enum BatchNormKernels {
    /// Each column's mean and biased variance over the rows (Double sums: a batch is thousands of rows).
    public static func statistics(_ x: Matrix) -> (mean: Matrix, variance: Matrix) {
        let rows = x.rows, n = x.columns
        var sums = [Double](repeating: 0, count: n), squares = [Double](repeating: 0, count: n)
        for r in 0..<rows { for j in 0..<n { sums[j] += Double(x.values[r * n + j]) } }
        let means = sums.map { $0 / Double(max(1, rows)) }
        for r in 0..<rows { for j in 0..<n { let d = Double(x.values[r * n + j]) - means[j]; squares[j] += d * d } }
        return (Matrix(rows: 1, columns: n, values: means.map(Float.init)),
                Matrix(rows: 1, columns: n, values: squares.map { Float($0 / Double(max(1, rows))) }))
    }

    /// x̂ = (x − μ) / √(σ² + ε) per column, and y = γ ⊙ x̂ + β; also each column's 1 / √(σ² + ε).
    public static func forward(_ x: Matrix, mean: Matrix, variance: Matrix, scale gamma: Matrix, shift beta: Matrix, eps: Float)
        -> (value: Matrix, normalized: Matrix, inverseStd: Matrix) {
        let rows = x.rows, n = x.columns
        let inverse = Matrix(rows: 1, columns: n, values: variance.values.map { 1 / ($0 + eps).squareRoot() })
        var y = Matrix(rows: rows, columns: n), xn = Matrix(rows: rows, columns: n)
        for r in 0..<rows {
            for j in 0..<n {
                let h = (x.values[r * n + j] - mean.values[j]) * inverse.values[j]
                xn.values[r * n + j] = h
                y.values[r * n + j] = gamma.values[j] * h + beta.values[j]
            }
        }
        return (y, xn, inverse)
    }

    /// d/dx when μ and σ² are the batch's own: γ/√(σ²+ε)/N · (N·g − Σ g − x̂ · Σ g·x̂) per column.
    public static func inputGradient(_ g: Matrix, normalized xn: Matrix, inverseStd: Matrix, scale gamma: Matrix) -> Matrix {
        let rows = g.rows, n = g.columns, count = Float(rows)
        var sums = [Float](repeating: 0, count: n), dots = [Float](repeating: 0, count: n)
        for r in 0..<rows { for j in 0..<n { sums[j] += g.values[r * n + j]; dots[j] += g.values[r * n + j] * xn.values[r * n + j] } }
        var out = Matrix(rows: rows, columns: n)
        for r in 0..<rows {
            for j in 0..<n {
                let k = gamma.values[j] * inverseStd.values[j] / count
                out.values[r * n + j] = k * (count * g.values[r * n + j] - sums[j] - xn.values[r * n + j] * dots[j])
            }
        }
        return out
    }

    /// g ⊙ a ⊙ b with a and b 1 × n rows (d/dx under fixed statistics: g · γ / √(σ² + ε)).
    public static func scaledColumns(_ g: Matrix, _ a: Matrix, _ b: Matrix) -> Matrix {
        var out = g
        for r in 0..<g.rows { for j in 0..<g.columns { out.values[r * g.columns + j] *= a.values[j] * b.values[j] } }
        return out
    }
}
