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
