import CBLAS
import Foundation

/// Thin, shape-checked wrappers over OpenBLAS and LAPACKE for the float32 `Matrix`.
public enum BLAS {
    /// The OpenBLAS build string (version, kernel, threading), for result records.
    public static var configuration: String {
        guard let config = openblas_get_config() else { return "unknown" }
        return String(cString: config)
    }

    /// Whether narrow products are shared out over OpenBLAS's own inner blocks in this process
    /// (`OpenBLASBlocks`: its probe found the blocking that gives one call's bits).
    public static var sharesNarrowProducts: Bool { OpenBLASBlocks.parameters != nil }

    /// The largest n for which a dense n × n matrix can go to this OpenBLAS build: it takes
    /// 32-bit indices, so n² must stay below 2³¹ (46,340² = 2,147,395,600). The ILP64 build
    /// (`libopenblas64-*`) lifts this; recbench links the LP64 one.
    public static let maxSquareOrder = 46_340

    /// `c = alpha · op(a) · op(b) + beta · c`, where op transposes when asked. With one
    /// OpenBLAS thread and several workers, large products are split over the workers: tall
    /// outputs by rows, short wide ones (m < 128: a weight gradient of a narrow layer) by
    /// columns, one block per worker (fewest re-packings); outputs too small for either over
    /// OpenBLAS's own inner blocks (`OpenBLASBlocks`, the same bits as one call). With `firstRow`, the product
    /// goes to c's rows `firstRow ..< firstRow + m` and the rest of c is left alone. With
    /// `aRows` (no transpose of a), only those rows of a are the left factor, read in place.
    public static func gemm(
        _ a: Matrix, aRows: Range<Int>? = nil, transposeA: Bool = false, _ b: Matrix, transposeB: Bool = false,
        alpha: Float = 1, beta: Float = 0, into c: inout Matrix, firstRow: Int? = nil, compute: Compute, kernels: KernelSet = .current
    ) {
        precondition(aRows.map { !transposeA && $0.lowerBound >= 0 && $0.upperBound <= a.rows } ?? true, "gemm: aRows outside a")
        let aOffset = aRows?.lowerBound ?? 0
        let m = aRows?.count ?? (transposeA ? a.columns : a.rows)
        let k = transposeA ? a.rows : a.columns
        let kb = transposeB ? b.columns : b.rows
        let n = transposeB ? b.rows : b.columns
        precondition(k == kb, "gemm: inner dimensions \(k) and \(kb) differ")
        let first = firstRow ?? 0
        precondition((firstRow == nil ? c.rows == m : first >= 0 && c.rows >= first + m) && c.columns == n,
                     "gemm: output is \(c.rows)×\(c.columns), expected \(m)×\(n) from row \(first)")
        checkSize(m, n, k)
        guard m > 0, n > 0 else { return }
        if SmallProducts.applies(m: m, n: n, k: k, transposeA: transposeA, alpha: alpha, beta: beta, kernels: kernels) {
            return SmallProducts.gemm(a, aOffset: aOffset, b, transposeB: transposeB, accumulate: beta == 1, into: &c, firstRow: first,
                                      shape: (m, n, k), compute: compute)
        }
        if InnerSlices.apply(m: m, n: n, k: k) {
            return gemmOverInnerSlices(a, aOffset: aOffset, transposeA: transposeA, b, transposeB: transposeB, alpha: alpha, beta: beta,
                                       into: &c, firstRow: first, shape: (m, n, k), compute: compute)
        }
        if let blocks = OpenBLASBlocks.plan(m: m, n: n, k: k, transposeA: transposeA, transposeB: transposeB, alpha: alpha, beta: beta,
                                            compute: compute) {
            return OpenBLASBlocks.gemm(a, aOffset: aOffset, transposeA: transposeA, b, transposeB: transposeB, beta: beta, into: &c,
                                       firstRow: first, shape: (m, n, k), blocks: blocks, compute: compute)
        }
        let workers = compute.activeWorkers
        let split = compute.splitsProducts && m * n * k >= 1 << 22
        let byRows = split && m >= 128, byColumns = split && !byRows && n >= 256
        let blocks = GemmBlocks(m: m, n: n, rowChunk: byRows ? (m + workers - 1) / workers : m,
                                columnChunk: byColumns ? (n + workers - 1) / workers : n)
        OpenBLASThreads.shared.run(threads: compute.blasThreads) {
            a.values.withUnsafeBufferPointer { pa in
                b.values.withUnsafeBufferPointer { pb in
                    c.values.withUnsafeMutableBufferPointer { pc in
                        // Workers write disjoint blocks of c.
                        let p = UnsafeShared((pa.baseAddress!, pb.baseAddress!, pc.baseAddress!))
                        let lda = max(1, a.columns), ldb = max(1, b.columns)
                        compute.forEachChunk(count: blocks.count, chunkSize: 1) { range in
                            let (ap, bp, cp) = p.value
                            let (rows, columns) = blocks[range.lowerBound]
                            // Rows r of op(a): row r of a, or column r of a when transposed; columns
                            // j of op(b): column j of b, or row j of b when transposed.
                            let aStart = transposeA ? ap + rows.lowerBound : ap + (aOffset + rows.lowerBound) * lda
                            let bStart = transposeB ? bp + columns.lowerBound * ldb : bp + columns.lowerBound
                            cblas_sgemm(
                                CblasRowMajor, transposeA ? CblasTrans : CblasNoTrans,
                                transposeB ? CblasTrans : CblasNoTrans,
                                Int32(rows.count), Int32(columns.count), Int32(k), alpha,
                                aStart, Int32(lda), bStart, Int32(ldb),
                                beta, cp + (first + rows.lowerBound) * n + columns.lowerBound, Int32(max(1, n)))
                        }
                    }
                }
            }
        }
    }

    /// A small output over a long inner dimension (a narrow layer's weight gradient over a
    /// (steps · batch)-row input, which neither a row nor a column split can share out): one
    /// partial product per fixed slice of the inner dimension, the slices over the workers,
    /// then added in slice order, so the sums are the same for any worker count.
    private static func gemmOverInnerSlices(_ a: Matrix, aOffset: Int, transposeA: Bool, _ b: Matrix, transposeB: Bool, alpha: Float,
                                            beta: Float, into c: inout Matrix, firstRow first: Int, shape: (m: Int, n: Int, k: Int),
                                            compute: Compute) {
        let (m, n, k) = shape, slice = (k + InnerSlices.count - 1) / InnerSlices.count
        let slices = (0..<InnerSlices.count).map { s in min(k, s * slice)..<min(k, (s + 1) * slice) }
        let stacked = innerPartials(a, aOffset: aOffset, transposeA: transposeA, b, transposeB: transposeB, shape: shape, over: slices,
                                    compute: compute)
        for r in 0..<m {
            for j in 0..<n {
                var sum: Float = 0
                for s in slices.indices { sum += stacked.values[s * m * n + r * n + j] }
                let at = (first + r) * n + j
                c.values[at] = beta == 0 ? alpha * sum : beta * c.values[at] + alpha * sum   // β = 0 never reads c
            }
        }
    }

    /// The partial products `op(a) · op(b)` over each range of the inner dimension, stacked (range
    /// r's m rows from row r · m), the ranges over the workers, one OpenBLAS thread each.
    static func innerPartials(_ a: Matrix, aOffset: Int, transposeA: Bool, _ b: Matrix, transposeB: Bool, shape: (m: Int, n: Int, k: Int),
                              over ranges: [Range<Int>], compute: Compute) -> Matrix {
        let (m, n, _) = shape
        var partials = Matrix(uninitializedRows: ranges.count * m, columns: n)
        OpenBLASThreads.shared.run(threads: 1) {
            a.values.withUnsafeBufferPointer { pa in
                b.values.withUnsafeBufferPointer { pb in
                    partials.values.withUnsafeMutableBufferPointer { pp in
                        let p = UnsafeShared((pa.baseAddress!, pb.baseAddress!, pp.baseAddress!))   // each range writes its own partial
                        let lda = max(1, a.columns), ldb = max(1, b.columns)
                        compute.forEachChunk(count: ranges.count, chunkSize: 1) { chunk in
                            let (ap, bp, out) = p.value, inner = ranges[chunk.lowerBound], c = out + chunk.lowerBound * m * n
                            guard !inner.isEmpty else { return c.update(repeating: 0, count: m * n) }
                            // Inner index i: column i of a (row i when transposed), row i of b (column i when transposed).
                            let aStart = transposeA ? ap + inner.lowerBound * lda : ap + aOffset * lda + inner.lowerBound
                            let bStart = transposeB ? bp + inner.lowerBound : bp + inner.lowerBound * ldb
                            cblas_sgemm(CblasRowMajor, transposeA ? CblasTrans : CblasNoTrans, transposeB ? CblasTrans : CblasNoTrans,
                                        Int32(m), Int32(n), Int32(inner.count), 1, aStart, Int32(lda), bStart, Int32(ldb), 0, c, Int32(n))
                        }
                    }
                }
            }
        }
        return partials
    }

    /// `x · w + b` with the 1 × n `b` in every row, written into `c` (a dense layer). In
    /// `SmallProducts`' shapes each entry is written once, the bias added as the sums are
    /// stored; otherwise c's rows are set to b and the GEMM adds the product (β = 1).
    public static func linear(_ x: Matrix, _ w: Matrix, bias b: Matrix, into c: inout Matrix, compute: Compute, kernels: KernelSet = .current) {
        precondition(c.rows == x.rows, "linear: output has \(c.rows) rows, input \(x.rows)")
        precondition(x.columns == w.rows && c.columns == w.columns, "linear: \(x.rows)×\(x.columns) input, \(w.rows)×\(w.columns) weight")
        if SmallProducts.applies(m: x.rows, n: w.columns, k: x.columns, transposeA: false, alpha: 1, beta: 0, kernels: kernels) {
            return SmallProducts.gemm(x, aOffset: 0, w, transposeB: false, accumulate: false, bias: b, into: &c, firstRow: 0,
                                      shape: (x.rows, w.columns, x.columns), compute: compute)
        }
        c.fillRows(with: b, compute: compute)
        gemm(x, w, alpha: 1, beta: 1, into: &c, compute: compute, kernels: kernels)
    }

    /// `op(a) · op(b)` as a new matrix.
    public static func gemm(
        _ a: Matrix, transposeA: Bool = false, _ b: Matrix, transposeB: Bool = false, compute: Compute
    ) -> Matrix {
        // β = 0: BLAS does not read c, so it need not be zeroed.
        var c = Matrix(uninitializedRows: transposeA ? a.columns : a.rows, columns: transposeB ? b.rows : b.columns)
        gemm(a, transposeA: transposeA, b, transposeB: transposeB, into: &c, compute: compute)
        return c
    }

    /// The Gram matrix `aᵀ · a` (columns × columns), computed by `ssyrk` on the upper
    /// triangle and mirrored so the result is a full symmetric matrix.
    public static func gram(_ a: Matrix, compute: Compute) -> Matrix {
        let n = a.columns
        checkSize(n, n, a.rows)
        var c = Matrix(rows: n, columns: n)
        guard n > 0 else { return c }
        OpenBLASThreads.shared.run(threads: compute.blasThreads) {
            a.values.withUnsafeBufferPointer { pa in
                c.values.withUnsafeMutableBufferPointer { pc in
                    cblas_ssyrk(
                        CblasRowMajor, CblasUpper, CblasTrans, Int32(n), Int32(a.rows), 1,
                        pa.baseAddress, Int32(max(1, n)), 0, pc.baseAddress, Int32(n))
                }
            }
        }
        c.mirrorUpperToLower()
        return c
    }

    /// Replaces the symmetric positive-definite matrix `m` by its full (mirrored) inverse
    /// (Cholesky: `spotrf` then `spotri`). Reads only the upper triangle of `m`. Throws when
    /// `m` is not positive definite.
    ///
    /// The row-major upper triangle is handed to LAPACKE as the column-major lower triangle
    /// (the same memory), which avoids LAPACKE's transposed n² copy.
    public static func invertSymmetricPositiveDefinite(_ m: inout Matrix, compute: Compute) throws {
        precondition(m.rows == m.columns, "invertSymmetricPositiveDefinite: \(m.rows)×\(m.columns) is not square")
        let n = m.rows
        checkSize(n, n, 1)
        guard n > 0 else { return }
        let lower = CChar(UInt8(ascii: "L"))
        var info: Int32 = 0
        OpenBLASThreads.shared.run(threads: compute.blasThreads) {
            m.values.withUnsafeMutableBufferPointer { p in
                info = LAPACKE_spotrf(LAPACK_COL_MAJOR, lower, Int32(n), p.baseAddress, Int32(n))
                if info == 0 {
                    info = LAPACKE_spotri(LAPACK_COL_MAJOR, lower, Int32(n), p.baseAddress, Int32(n))
                }
            }
        }
        if info > 0 { throw LinalgError.notPositiveDefinite(order: Int(info)) }
        if info < 0 { throw LinalgError.lapack(routine: "spotrf/spotri", info: Int(info)) }
        m.mirrorUpperToLower()
    }

    /// OpenBLAS in this build takes 32-bit sizes: refuse shapes that would overflow.
    private static func checkSize(_ a: Int, _ b: Int, _ c: Int) {
        let limit = maxSquareOrder * maxSquareOrder
        precondition(a * b <= limit && a * c <= limit && b * c <= limit,
                     "BLAS: shape \(a)×\(b)×\(c) exceeds the 32-bit index range of this OpenBLAS build")
    }
}

/// The blocks a split product computes: block b covers rows and columns of the output.
/// When a product's inner dimension is split (`gemmOverInnerSlices`): a rule on the shape
/// alone, never on the worker count, so a product sums in the same order on any machine.
enum InnerSlices {
    /// Fixed slices per product: eight share out over 1, 2, 4 or 8 workers evenly.
    static let count = 8

    /// Outputs too small for a row or column split (m < 128, n < 256) over k ≥ 32,768.
    static func apply(m: Int, n: Int, k: Int) -> Bool { m < 128 && n < 256 && k >= 32_768 }
}

struct GemmBlocks {
    let m: Int, n: Int, rowChunk: Int, columnChunk: Int
    var rowBlocks: Int { (m + rowChunk - 1) / rowChunk }
    var count: Int { rowBlocks * ((n + columnChunk - 1) / columnChunk) }

    subscript(block: Int) -> (rows: Range<Int>, columns: Range<Int>) {
        let r = block % rowBlocks, c = block / rowBlocks
        return ((r * rowChunk)..<min(m, (r + 1) * rowChunk), (c * columnChunk)..<min(n, (c + 1) * columnChunk))
    }
}

/// OpenBLAS's thread count belongs to the library, not to a call. recbench sets it for each
/// call from that call's `Compute`; calls that want different counts take turns, calls that
/// want the same count run together. (This lock mirrors the library's own global; it holds
/// nothing of recbench's.)
final class OpenBLASThreads: @unchecked Sendable {   // state guarded by `condition`
    static let shared = OpenBLASThreads()
    private let condition = NSCondition()
    private var current = 0, active = 0

    /// Runs `body` while OpenBLAS uses `threads` threads.
    func run<T>(threads: Int, _ body: () throws -> T) rethrows -> T {
        condition.lock()
        while active > 0 && current != threads { condition.wait() }
        if current != threads {
            openblas_set_num_threads(Int32(threads))
            current = threads
        }
        active += 1
        condition.unlock()
        defer {
            condition.lock()
            active -= 1
            if active == 0 { condition.broadcast() }
            condition.unlock()
        }
        return try body()
    }
}

/// Errors from the numerical core.
public enum LinalgError: Error, CustomStringConvertible, Equatable {
    /// The leading minor of this order is not positive.
    case notPositiveDefinite(order: Int)
    /// A LAPACK routine rejected an argument.
    case lapack(routine: String, info: Int)

    public var description: String {
        switch self {
        case .notPositiveDefinite(let order):
            return "matrix is not positive definite (leading minor \(order) is not positive)"
        case .lapack(let routine, let info):
            return "\(routine) rejected argument \(-info)"
        }
    }
}

extension Matrix {
    /// Copies the upper triangle onto the lower one, making the matrix symmetric.
    public mutating func mirrorUpperToLower() {
        precondition(rows == columns, "mirrorUpperToLower: not square")
        let n = rows
        values.withUnsafeMutableBufferPointer { p in
            // Blocked so both the read and the write side stay in cache.
            let block = 64
            var ib = 0
            while ib < n {
                var jb = 0
                while jb <= ib {
                    for i in ib..<min(n, ib + block) {
                        for j in jb..<min(i, jb + block) { p[i * n + j] = p[j * n + i] }
                    }
                    jb += block
                }
                ib += block
            }
        }
    }
}
