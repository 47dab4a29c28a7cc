import CBLAS
import CLanes
import Foundation

/// xDeepFM's compressed-interaction layer, z = relu((x ⊗ x₀) · W + b), where row r of x ⊗ x₀ is
/// the outer product of x's row (H wide) and x₀'s (F wide), flattened h-major (column h·F + m).
/// The outer products (H·F, often 350, floats a row) are built a block of rows at a time in a
/// buffer that stays in cache and multiplied at once on that worker, so the whole batch's are never
/// stored (they were 57 MB a layer at RecBole's batch), and the pullback builds them again. Blocks
/// have a fixed row count, so a block's rows, and the weight gradient's sum over blocks in block
/// order (within fixed groups of blocks, then over the groups), do not depend on the worker count. The buffer holds each row's products x₀-major
/// (column m·H + h, W's rows reordered to match once per call), so they are built and unfolded
/// eight lanes of x at a time. Each row's forward sum is the dense layers' (the register kernel
/// with AVX2 for widths up to 512, else OpenBLAS).
public enum CINKernels {
    /// Rows a block holds: its outer products (rows × H·F) and their gradient stay within a
    /// core's L2 at H·F = 350; a multiple of the register kernel's row groups.
    static let blockRows = 192
    /// Blocks a worker takes at once in the pullback, their weight gradients summed into one
    /// partial (so partials number rows / 1,536, not rows / 192: 27 of 350 × 100 at RecBole's batch).
    static let groupBlocks = 8

    /// relu((x ⊗ x₀) · W + b): rows × W.columns.
    public static func forward(_ x: Matrix, _ x0: Matrix, weight w: Matrix, bias: Matrix, compute: Compute,
                               kernels: KernelSet = .current) -> Matrix {
        let (rows, h, f, n) = (x.rows, x.columns, x0.columns, w.columns)
        precondition(x0.rows == rows && w.rows == h * f && bias.rows == 1 && bias.columns == n, "CIN layer: shapes do not match")
        var outputs = [Matrix(uninitializedRows: rows, columns: n)]
        guard rows > 0 && n > 0 && h * f > 0 else {   // no fields: relu(b) in every row
            outputs[0].fillRows(with: bias, compute: compute)
            return outputs[0].map(compute) { Lanes.relu($0) }
        }
        let wm = reordered(w, h: h, f: f, toMMajor: true)
        let packed = SmallProducts.registerKernel(kernels, inner: h * f, columns: n) ? SmallProducts.pack(wm, transposed: false, k: h * f, n: n) : nil
        Matrix.withBuffers(reading: [x, x0, wm, bias, packed ?? wm], writing: &outputs) { p in
            let z = UnsafeShared(p.write[0])   // blocks write disjoint rows
            OpenBLASThreads.shared.run(threads: 1) {
                compute.forEachChunk(count: rows, chunkSize: blockRows) { range in
                    withOuterProducts(p.read[0], p.read[1], rows: range, h: h, f: f) { outer in
                        let out = z.value + range.lowerBound * n, k = h * f
                        if packed != nil {
                            recbench_gemm_rows_avx2(range.count, n, k, outer, k, p.read[4], out, n, 0, p.read[3])
                        } else {
                            for r in 0..<range.count { (out + r * n).update(from: p.read[3], count: n) }
                            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Int32(range.count), Int32(n), Int32(k), 1,
                                        outer, Int32(k), p.read[2], Int32(n), 1, out, Int32(n))
                        }
                        for i in stride(from: 0, to: range.count * n, by: 8) {
                            Lanes.relu(Lanes.load(out, i, count: range.count * n)).store(out, i, count: range.count * n)
                        }
                    }
                }
            }
        }
        return outputs[0]
    }

    /// Gradients given dL/dz `g` and the forward's output `z`: dL/dx, dL/dx₀ (each when asked),
    /// dL/dW (when `weight`) and dL/db (when `bias`: the column sums of relu′ ⊙ g).
    public static func backward(_ g: Matrix, output z: Matrix, _ x: Matrix, _ x0: Matrix, weight w: Matrix, inputs: (x: Bool, x0: Bool),
                                weight: Bool, bias: Bool, compute: Compute, kernels: KernelSet = .current)
        -> (x: Matrix?, x0: Matrix?, weight: Matrix?, bias: Matrix?) {
        let (rows, h, f, n, k) = (x.rows, x.columns, x0.columns, w.columns, x.columns * x0.columns)
        precondition(g.rows == rows && g.columns == n && z.rows == rows && z.columns == n, "CIN layer: the gradient's shape does not match")
        let gz = g.zipMap(z, compute) { g, y in Lanes.reluGradient(g, output: y) }
        let dBias = bias ? gz.columnSums(compute) : nil
        guard rows > 0 && n > 0 && k > 0 && (inputs.x || inputs.x0 || weight) else {
            return (inputs.x ? Matrix(rows: rows, columns: h) : nil, inputs.x0 ? Matrix(rows: rows, columns: f) : nil,
                    weight ? Matrix(rows: k, columns: n) : nil, dBias)
        }
        // A gradient not asked for is a 1 × 1 stand-in, never written.
        var outputs = [Matrix(uninitializedRows: inputs.x ? rows : 1, columns: inputs.x ? h : 1),
                       Matrix(uninitializedRows: inputs.x0 ? rows : 1, columns: inputs.x0 ? f : 1)]
        let wm = reordered(w, h: h, f: f, toMMajor: true), wanted = inputs.x || inputs.x0
        let inCache = wanted && SmallProducts.registerKernel(kernels, inner: n, columns: k)
        let packed = inCache ? SmallProducts.pack(wm, transposed: true, k: n, n: k) : nil   // Wᵀ
        let partials: [Matrix?] = Matrix.withBuffers(reading: [gz, x, x0, wm, packed ?? wm], writing: &outputs) { p in
            let d = UnsafeShared((inputs.x ? p.write[0] : nil, inputs.x0 ? p.write[1] : nil))   // groups write disjoint rows
            return OpenBLASThreads.shared.run(threads: 1) {
                compute.mapChunks(count: rows, chunkSize: blockRows * groupBlocks) { group -> Matrix? in
                    var dWeight = weight ? Matrix(uninitializedRows: k, columns: n) : nil
                    for first in stride(from: group.lowerBound, to: group.upperBound, by: blockRows) {
                        let range = first..<min(group.upperBound, first + blockRows), gBlock = p.read[0] + first * n
                        withOuterProducts(p.read[1], p.read[2], rows: range, h: h, f: f) { outer in
                            if weight {   // the group's blocks added in order: β = 0 for its first
                                dWeight!.values.withUnsafeMutableBufferPointer { dw in
                                    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Int32(k), Int32(n), Int32(range.count), 1,
                                                outer, Int32(k), gBlock, Int32(n), first == group.lowerBound ? 0 : 1, dw.baseAddress!, Int32(n))
                                }
                            }
                            guard wanted else { return }
                            // The outer products are spent: their gradient g · Wᵀ takes the buffer.
                            if packed != nil {
                                recbench_gemm_rows_avx2(range.count, k, n, gBlock, n, p.read[4], outer, k, 0, nil)
                            } else {
                                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Int32(range.count), Int32(k), Int32(n), 1,
                                            gBlock, Int32(n), p.read[3], Int32(n), 0, outer, Int32(k))
                            }
                            unfold(outer, p.read[1], p.read[2], rows: range, h: h, f: f, into: d.value)
                        }
                    }
                    return dWeight
                }
            }
        }
        let dWeight = weight ? reordered(SmallProducts.sum(partials, rows: k, columns: n), h: h, f: f, toMMajor: false) : nil
        return (inputs.x ? outputs[0] : nil, inputs.x0 ? outputs[1] : nil, dWeight, dBias)
    }

    /// W's rows from h-major (h·F + m, RecBole's order) to x₀-major (m·H + h), or back.
    static func reordered(_ w: Matrix, h: Int, f: Int, toMMajor: Bool) -> Matrix {
        var out = Matrix(uninitializedRows: w.rows, columns: w.columns)
        let n = w.columns
        for a in 0..<h {
            for m in 0..<f {
                let (from, to) = toMMajor ? (a * f + m, m * h + a) : (m * h + a, a * f + m)
                out.values[to * n..<(to + 1) * n] = w.values[from * n..<(from + 1) * n]
            }
        }
        return out
    }

    /// body(outer) with the rows' outer products (range.count × H·F, column m·H + h) in a buffer of this worker.
    static func withOuterProducts(_ x: UnsafePointer<Float>, _ x0: UnsafePointer<Float>, rows: Range<Int>, h: Int, f: Int,
                                  _ body: (UnsafeMutablePointer<Float>) -> Void) {
        let k = h * f
        var buffer = [Float](unsafeUninitializedCapacity: rows.count * k) { _, count in count = rows.count * k }
        buffer.withUnsafeMutableBufferPointer { o in
            for (i, r) in rows.enumerated() {
                let row = x + r * h
                for m in 0..<f {
                    let v = x0[r * f + m], to = o.baseAddress! + i * k + m * h
                    for j in stride(from: 0, to: h, by: 8) { (Lanes.load(row, j, count: h) * v).store(to, j, count: h) }
                }
            }
            body(o.baseAddress!)
        }
    }

    /// dx[r, h] = Σ_m d[r, m·H + h] x₀[r, m] and dx₀[r, m] = Σ_h d[r, m·H + h] x[r, h] for the
    /// block's rows, given the outer products' gradient `d`.
    static func unfold(_ d: UnsafePointer<Float>, _ x: UnsafePointer<Float>, _ x0: UnsafePointer<Float>, rows: Range<Int>, h: Int, f: Int,
                       into out: (UnsafeMutablePointer<Float>?, UnsafeMutablePointer<Float>?)) {
        for (i, r) in rows.enumerated() {
            let row = d + i * h * f
            if let dx0 = out.1 {
                for m in 0..<f { dx0[r * f + m] = Lanes.dot(row + m * h, x + r * h, count: h) }
            }
            guard let dx = out.0 else { continue }
            for j in stride(from: 0, to: h, by: 8) {
                var sum = Lanes()
                for m in 0..<f { sum += Lanes.load(row + m * h, j, count: h) * x0[r * f + m] }
                sum.store(dx + r * h, j, count: h)
            }
        }
    }
}
