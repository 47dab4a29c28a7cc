import CBLAS
import CLanes
import Foundation

/// A causal 1-D convolution over time as im2col and a GEMM, a block of sequences at a time:
/// each block's taps (every row beside the rows `shifts[k]` steps before it, zeros before the
/// sequence starts) are built in a buffer that stays in cache and multiplied at once on that
/// worker, so the whole batch's taps (K times the input) are never stored, and the pullback
/// builds them again. Blocks are whole sequences of fixed count, so a block's rows, and the
/// weight gradient's sum over blocks in block order, do not depend on the worker count. With
/// AVX2 the products with a short inner dimension (the forward, taps · W, and the taps'
/// gradient, g · Wᵀ) run in the dense layers' register kernel, W packed once per call; the
/// weight gradient's long sum over a block's rows stays with OpenBLAS.
public enum ConvolutionKernels {
    /// Rows a block aims at: its taps (rows × K·C) stay within a core's cache.
    static let blockRows = 1024

    static func sequencesPerBlock(steps: Int) -> Int { max(1, blockRows / max(1, steps)) }

    /// y = taps · W + b over every sequence (rows × C′).
    public static func forward(_ x: Matrix, weight w: Matrix, bias: Matrix, steps: Int, shifts: [Int], compute: Compute,
                               kernels: KernelSet = .current) -> Matrix {
        var outputs = [Matrix(uninitializedRows: x.rows, columns: w.columns)]
        guard x.rows > 0 && w.columns > 0 && x.columns > 0 else { outputs[0].fillRows(with: bias, compute: compute); return outputs[0] }
        Matrix.withBuffers(reading: [], writing: &outputs) { out in
            let y = UnsafeShared(out.write[0])   // blocks write disjoint rows
            forEachBlock(x, weight: w, bias: bias, steps: steps, shifts: shifts, compute: compute, kernels: kernels) { first, rows, product in
                product(y.value + first * w.columns)
            }
        }
        return outputs[0]
    }

    /// The layer norm of `LayerNormKernels.forward` (its x̂, 1 / std and γ ⊙ x̂ + β, or that
    /// output's relu) of y = taps · W + b, each block's rows normalised while in cache: y is
    /// never stored. The same values as the two ops (the same sums in the same order).
    public static func forwardNormalized(_ x: Matrix, weight w: Matrix, bias: Matrix, steps: Int, shifts: [Int], scale gamma: Matrix,
                                         shift beta: Matrix, eps: Float, relu: Bool, compute: Compute,
                                         kernels: KernelSet = .current) -> (value: Matrix, normalized: Matrix, inverseStd: Matrix) {
        let rows = x.rows, n = w.columns
        precondition(gamma.values.count == n && beta.values.count == n, "causal convolution: the layer norm's scale and shift are not 1 × \(n)")
        var outputs = [Matrix(uninitializedRows: rows, columns: n), Matrix(uninitializedRows: rows, columns: n), Matrix(rows: rows, columns: 1)]
        guard rows > 0 && n > 0 && x.columns > 0 else {
            let plain = forward(x, weight: w, bias: bias, steps: steps, shifts: shifts, compute: compute, kernels: kernels)
            return LayerNormKernels.forward(plain, scale: gamma, shift: beta, eps: eps, relu: relu, compute: compute)
        }
        Matrix.withBuffers(reading: [gamma, beta], writing: &outputs) { b in
            let p = UnsafeShared((b.read[0], b.read[1], b.write[0], b.write[1], b.write[2]))   // blocks write disjoint rows
            forEachBlock(x, weight: w, bias: bias, steps: steps, shifts: shifts, compute: compute, kernels: kernels) { first, count, product in
                let (g, shift, y, xn, inv) = p.value
                var block = [Float](unsafeUninitializedCapacity: count * n) { _, c in c = count * n }
                block.withUnsafeMutableBufferPointer { z in
                    product(z.baseAddress!)
                    for r in 0..<count {
                        let at = (first + r) * n
                        inv[first + r] = LayerNormKernels.normalize(z.baseAddress! + r * n, into: xn + at, output: y + at, scale: g, shift: shift,
                                                                    count: n, eps: eps, relu: relu)
                    }
                }
            }
        }
        return (outputs[0], outputs[1], outputs[2])
    }

    /// body(first row, rows, product) for each block of whole sequences, on the workers: `product(to)`
    /// writes the block's taps · W + b (rows × C′) at `to`, its taps built in cache just before.
    static func forEachBlock(_ x: Matrix, weight w: Matrix, bias: Matrix, steps: Int, shifts: [Int], compute: Compute, kernels: KernelSet,
                             _ body: @Sendable (Int, Int, (UnsafeMutablePointer<Float>) -> Void) -> Void) {
        let c = x.columns, width = shifts.count * c, n = w.columns, sequences = steps == 0 ? 0 : x.rows / steps
        precondition(steps > 0 && x.rows % steps == 0 && w.rows == width && bias.columns == n, "causal convolution: shapes do not match")
        let packed = SmallProducts.registerKernel(kernels, inner: width, columns: n) ? SmallProducts.pack(w, transposed: false, k: width, n: n) : nil
        Matrix.withBuffers(reading: [x, w, bias, packed ?? w]) { p in
            OpenBLASThreads.shared.run(threads: 1) {
                compute.forEachChunk(count: sequences, chunkSize: sequencesPerBlock(steps: steps)) { range in
                    let rows = range.count * steps, first = range.lowerBound * steps
                    var taps = [Float](unsafeUninitializedCapacity: rows * width) { _, count in count = rows * width }
                    taps.withUnsafeMutableBufferPointer { t in
                        fill(t.baseAddress!, from: p.read[0] + first * c, sequences: range.count, steps: steps, channels: c, shifts: shifts)
                        body(first, rows) { out in
                            if packed != nil { return recbench_gemm_rows_avx2(rows, n, width, t.baseAddress!, width, p.read[3], out, n, 0, p.read[2]) }
                            for r in 0..<rows { (out + r * n).update(from: p.read[2], count: n) }
                            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Int32(rows), Int32(n), Int32(width), 1,
                                        t.baseAddress!, Int32(width), p.read[1], Int32(n), 1, out, Int32(n))
                        }
                    }
                }
            }
        }
    }

    /// dL/dx (when `input`) and dL/dW (when `weight`) given dL/dy `g`.
    public static func backward(_ g: Matrix, x: Matrix, weight w: Matrix, steps: Int, shifts: [Int], input: Bool, weight: Bool,
                                compute: Compute, kernels: KernelSet = .current) -> (x: Matrix?, weight: Matrix?) {
        let c = x.columns, width = shifts.count * c, n = w.columns, sequences = steps == 0 ? 0 : x.rows / steps
        precondition(steps > 0 && x.rows % steps == 0 && w.rows == width && g.rows == x.rows && g.columns == n, "causal convolution: shapes do not match")
        var outputs = [input ? Matrix(uninitializedRows: x.rows, columns: c) : Matrix(rows: 1, columns: 1)]
        guard x.rows > 0 && n > 0 && c > 0 && (input || weight) else {
            return (input ? Matrix(rows: x.rows, columns: c) : nil, weight ? Matrix(rows: width, columns: n) : nil)
        }
        let small = input && SmallProducts.registerKernel(kernels, inner: n, columns: width)
        let packed = small ? SmallProducts.pack(w, transposed: true, k: n, n: width) : nil   // Wᵀ
        let partials: [Matrix?] = Matrix.withBuffers(reading: [g, x, w, packed ?? w], writing: &outputs) { p in
            OpenBLASThreads.shared.run(threads: 1) {
                compute.mapChunks(count: sequences, chunkSize: sequencesPerBlock(steps: steps)) { range -> Matrix? in
                    let rows = range.count * steps, first = range.lowerBound * steps, gBlock = p.read[0] + first * n
                    var taps = [Float](unsafeUninitializedCapacity: rows * width) { _, count in count = rows * width }
                    var dWeight: Matrix?
                    taps.withUnsafeMutableBufferPointer { t in
                        if weight {
                            fill(t.baseAddress!, from: p.read[1] + first * c, sequences: range.count, steps: steps, channels: c, shifts: shifts)
                            var partial = Matrix(uninitializedRows: width, columns: n)
                            partial.values.withUnsafeMutableBufferPointer { d in
                                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Int32(width), Int32(n), Int32(rows), 1,
                                            t.baseAddress!, Int32(width), gBlock, Int32(n), 0, d.baseAddress!, Int32(n))
                            }
                            dWeight = partial
                        }
                        guard input else { return }
                        // dTaps = g · Wᵀ, then each tap's columns added back `shifts[k]` steps earlier.
                        if packed != nil {
                            recbench_gemm_rows_avx2(rows, width, n, gBlock, n, p.read[3], t.baseAddress!, width, 0, nil)
                        } else {
                            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Int32(rows), Int32(width), Int32(n), 1,
                                        gBlock, Int32(n), p.read[2], Int32(n), 0, t.baseAddress!, Int32(width))
                        }
                        unfill(t.baseAddress!, into: p.write[0] + first * c, sequences: range.count, steps: steps, channels: c, shifts: shifts)
                    }
                    return dWeight
                }
            }
        }
        return (input ? outputs[0] : nil, weight ? SmallProducts.sum(partials, rows: width, columns: n) : nil)
    }

    /// Calls `body(row, k, source)` for every row of the block and tap k: `source` is the row
    /// `shifts[k]` steps before `row` in its sequence, nil before the sequence starts.
    @inline(__always) static func forEachTap(sequences: Int, steps: Int, shifts: [Int], _ body: (Int, Int, Int?) -> Void) {
        for s in 0..<sequences {
            for t in 0..<steps {
                for (k, shift) in shifts.enumerated() { body(s * steps + t, k, t >= shift ? s * steps + t - shift : nil) }
            }
        }
    }

    /// The taps of `sequences` sequences of `steps` rows (C wide) starting at `x`: row t, tap k
    /// (columns k·C..<(k + 1)·C) is row t − shifts[k] of its sequence, or zeros before its start.
    static func fill(_ taps: UnsafeMutablePointer<Float>, from x: UnsafePointer<Float>, sequences: Int, steps: Int, channels c: Int,
                     shifts: [Int]) {
        let width = shifts.count * c
        forEachTap(sequences: sequences, steps: steps, shifts: shifts) { row, k, source in
            let to = taps + row * width + k * c
            if let source { to.update(from: x + source * c, count: c) } else { to.update(repeating: 0, count: c) }
        }
    }

    /// The adjoint of `fill`: each tap's columns added back onto the row they were copied from
    /// (the block's own rows of dx, zeroed first).
    static func unfill(_ taps: UnsafePointer<Float>, into dx: UnsafeMutablePointer<Float>, sequences: Int, steps: Int, channels c: Int,
                       shifts: [Int]) {
        let width = shifts.count * c
        dx.update(repeating: 0, count: sequences * steps * c)
        forEachTap(sequences: sequences, steps: steps, shifts: shifts) { row, k, source in
            guard let source else { return }
            let to = dx + source * c, from = taps + row * width + k * c
            for j in stride(from: 0, to: c, by: 8) { (Lanes.load(to, j, count: c) + Lanes.load(from, j, count: c)).store(to, j, count: c) }
        }
    }
}
