import Foundation
import CLanes

/// log(2π), for Gaussian densities.
public let logTwoPi = Float(log(2 * Double.pi))

/// A row's softmax numerators, eight lanes at a time.
public enum SoftmaxKernels {
    /// Writes e^{x_j − max x} for the `count` values at `row` into `out` (which may be `row`)
    /// and returns the maximum and the sum of the exponentials, with the given kernel build.
    public static func exponentials(_ row: UnsafePointer<Float>, into out: UnsafeMutablePointer<Float>, count n: Int,
                                    kernels: KernelSet = .current) -> (max: Float, sum: Float) {
        guard kernels == .avx2 else { return baselineExponentials(row, into: out, count: n) }
        var peak: Float = 0
        let sum = recbench_exponentials_avx2(row, out, n, &peak)
        return (peak, sum)
    }

    /// Turns the `count` values at `row` into their softmax, in place.
    public static func softmax(_ row: UnsafeMutablePointer<Float>, count n: Int) {
        let inverse = Lanes(repeating: 1 / exponentials(row, into: row, count: n).sum)
        for j in stride(from: 0, to: n, by: 8) { (Lanes.load(row, j, count: n) * inverse).store(row, j, count: n) }
    }

    @inline(__always)
    static func baselineExponentials(_ row: UnsafePointer<Float>, into out: UnsafeMutablePointer<Float>, count n: Int) -> (max: Float, sum: Float) {
        var top = Lanes(repeating: -.infinity)
        for j in stride(from: 0, to: n, by: 8) { top = Lanes.maximum(top, Lanes.load(row, j, count: n, padding: -.infinity)) }
        let peak = top.max()
        var total = Lanes()
        for j in stride(from: 0, to: n, by: 8) {
            let t = Lanes.expNonPositive(Lanes.load(row, j, count: n, padding: -.infinity) - peak)
            t.store(out, j, count: n)
            total += t
        }
        return (peak, total.total)
    }
}

/// The multinomial log-likelihood of logits against sparse counts, and its gradient.
public enum MultinomialKernels {
    /// Per row r: Σ_j x[r, j] · log softmax(a)[r, j] (rows × 1), with e^{a − max_r} and each
    /// row's sum of them kept for the gradient. Workers own disjoint rows.
    public static func forward(_ a: Matrix, _ x: SparseMatrix, compute: Compute) -> (value: Matrix, exponentials: Matrix, rowSums: Matrix) {
        let rows = a.rows, n = a.columns
        var outputs = [Matrix(rows: rows, columns: 1), Matrix(uninitializedRows: rows, columns: n), Matrix(rows: rows, columns: 1)]
        guard rows > 0 && n > 0 else { return (outputs[0], outputs[1], outputs[2]) }
        Matrix.withBuffers(reading: [a], writing: &outputs) { b in
            compute.forEachChunk(count: rows, chunkSize: 16) { range in
                let (a, v, e, sums) = (b.read[0], b.write[0], b.write[1], b.write[2])
                for r in range {
                    let row = a + r * n
                    let (rowMax, sum) = SoftmaxKernels.exponentials(row, into: e + r * n, count: n)
                    sums[r] = sum
                    let lse = rowMax + Foundation.log(sum)
                    var dot: Float = 0
                    for k in x.entries(ofRow: r) { dot += (row[Int(x.columnIndices[k])] - lse) * x.values[k] }
                    v[r] = dot
                }
            }
        }
        return (outputs[0], outputs[1], outputs[2])
    }

    /// Turns the forward's e^{a − max} into the gradient in place:
    /// g_r · (x[r, ·] − softmax(a)[r, ·] · Σ_j x[r, j]).
    public static func gradient(_ g: Matrix, _ x: SparseMatrix, exponentials: inout Matrix, rowSums: Matrix, compute: Compute) {
        let rows = exponentials.rows, n = exponentials.columns
        guard rows > 0 && n > 0 else { return }
        var outputs = [exponentials]
        exponentials = Matrix(rows: 0, columns: 0)   // the buffer moves into `outputs`, unshared
        Matrix.withBuffers(reading: [rowSums], writing: &outputs) { b in
            compute.forEachChunk(count: rows, chunkSize: 16) { range in
                let (e, sums) = (b.write[0], b.read[0])
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
        exponentials = outputs[0]
    }
}

/// The Gaussian log-density log N(x; μ, exp(logvar)), elementwise, and its gradients.
public enum GaussianKernels {
    /// The density, and (x − μ)·e^{−logvar} kept for the gradient.
    public static func logDensity(_ x: Matrix, mean mu: Matrix, logVariance lv: Matrix, compute: Compute) -> (value: Matrix, scaled: Matrix) {
        let n = x.values.count
        var outputs = [Matrix(uninitializedRows: x.rows, columns: x.columns), Matrix(uninitializedRows: x.rows, columns: x.columns)]
        guard n > 0 else { return (outputs[0], outputs[1]) }
        Matrix.withBuffers(reading: [x, mu, lv], writing: &outputs) { b in
            compute.forEachChunk(count: n, chunkSize: elementwiseChunk) { range in
                let (v, s, xx, m, l) = (b.write[0], b.write[1], b.read[0], b.read[1], b.read[2])
                for i in stride(from: range.lowerBound, to: range.upperBound, by: 8) {
                    let logVariance = Lanes.load(l, i, count: n)
                    let d = Lanes.load(xx, i, count: n) - Lanes.load(m, i, count: n), inv = Lanes.exp(-logVariance)
                    (d * inv).store(s, i, count: n)
                    (-0.5 * (logVariance + logTwoPi + d * d * inv)).store(v, i, count: n)
                }
            }
        }
        return (outputs[0], outputs[1])
    }

    /// d/dx (= −d/dμ) and d/dlogvar of the density, scaled by the upstream gradient g.
    public static func gradients(_ g: Matrix, scaled: Matrix, x: Matrix, mean mu: Matrix, compute: Compute) -> (x: Matrix, logVariance: Matrix) {
        let n = x.values.count
        var outputs = [Matrix(uninitializedRows: x.rows, columns: x.columns), Matrix(uninitializedRows: x.rows, columns: x.columns)]
        guard n > 0 else { return (outputs[0], outputs[1]) }
        Matrix.withBuffers(reading: [g, scaled, x, mu], writing: &outputs) { b in
            compute.forEachChunk(count: n, chunkSize: elementwiseChunk) { range in
                let (ddx, ddl, gg, ss, xx, m) = (b.write[0], b.write[1], b.read[0], b.read[1], b.read[2], b.read[3])
                for i in range {
                    ddx[i] = -gg[i] * ss[i]
                    ddl[i] = -0.5 * gg[i] * (1 - ss[i] * (xx[i] - m[i]))
                }
            }
        }
        return (outputs[0], outputs[1])
    }

    /// log Σ_i exp(terms[i]), elementwise over same-shaped terms; with `weights`, also each
    /// term's share exp(terms[i] − result) (the gradient's factors), from the same exponentials.
    /// The exponentials and the logarithm are vectorised (MacridVAE takes 16 M per pass), in
    /// the given kernel build.
    public static func logSumExp(_ terms: [Matrix], weights: Bool, compute: Compute,
                                 kernels: KernelSet = .current) -> (value: Matrix, weights: [Matrix]) {
        let n = terms[0].values.count, k = terms.count
        precondition(terms.allSatisfy { $0.values.count == n }, "logSumExp: shapes differ")
        let shape = (terms[0].rows, terms[0].columns)
        var outputs = [Matrix(uninitializedRows: shape.0, columns: shape.1)]
        if weights { outputs += terms.map { _ in Matrix(uninitializedRows: shape.0, columns: shape.1) } }
        guard n > 0 else { return (outputs[0], Array(outputs.dropFirst())) }
        Matrix.withBuffers(reading: terms, writing: &outputs) { b in
            if kernels == .avx2 {
                // The C kernel takes arrays of the terms' and shares' addresses, built once.
                let pointers = UnsafeShared((b.read.map { Optional($0) }, b.write.dropFirst().map { Optional($0) }))
                compute.forEachChunk(count: n, chunkSize: elementwiseChunk) { range in   // disjoint element ranges
                    let (t, shares) = pointers.value
                    recbench_logsumexp_avx2(t, k, range.lowerBound, range.upperBound, n, b.write[0], weights ? shares : nil)
                }
                return
            }
            compute.forEachChunk(count: n, chunkSize: elementwiseChunk) { range in   // disjoint element ranges
                let t = b.read, o = b.write[0], w = b.write.dropFirst()
                for i in stride(from: range.lowerBound, to: range.upperBound, by: 8) {
                    var top = Lanes(repeating: -.infinity)
                    for j in 0..<k { top = Lanes.maximum(top, Lanes.load(t[j], i, count: n)) }
                    var sum = Lanes()
                    for j in 0..<k {
                        let e = Lanes.expNonPositive(Lanes.load(t[j], i, count: n) - top)
                        if weights { e.store(w[j + 1], i, count: n) }
                        sum += e
                    }
                    if weights {
                        let inverse = 1 / sum
                        for j in 0..<k { (Lanes.load(w[j + 1], i, count: n) * inverse).store(w[j + 1], i, count: n) }
                    }
                    (top + Lanes.log(sum)).store(o, i, count: n)
                }
            }
        }
        return (outputs[0], Array(outputs.dropFirst()))
    }
}
