import CBLAS
import Foundation

/// Thin, shape-checked wrappers over OpenBLAS and LAPACKE for the float32 `Matrix`.
public enum BLAS {
    /// The number of threads OpenBLAS uses for one call (process-wide).
    public static var threadCount: Int { Int(openblas_get_num_threads()) }

    /// Sets the number of threads OpenBLAS uses (process-wide).
    public static func setThreadCount(_ count: Int) {
        openblas_set_num_threads(Int32(max(1, count)))
    }

    private static let configurationLock = NSRecursiveLock()

    /// Runs `body` with `threads` OpenBLAS threads and `workers` parallel-loop workers, holding
    /// a process-wide lock: both settings are global, so two runs in one process (tests, a
    /// library user) must not change them under each other. Restores both afterwards.
    public static func withConfiguration<T>(threads: Int, workers: Int? = nil, _ body: () throws -> T) rethrows -> T {
        configurationLock.lock()
        defer { configurationLock.unlock() }
        let previousThreads = threadCount, previousWorkers = Parallel.workerLimit
        setThreadCount(threads)
        if let workers { Parallel.workerLimit = workers }
        defer {
            setThreadCount(previousThreads)
            Parallel.workerLimit = previousWorkers
        }
        return try body()
    }

    /// The OpenBLAS build string (version, kernel, threading), for result records.
    public static var configuration: String {
        guard let config = openblas_get_config() else { return "unknown" }
        return String(cString: config)
    }

    /// `c = alpha · op(a) · op(b) + beta · c`, where op transposes when asked.
    public static func gemm(
        _ a: Matrix, transposeA: Bool = false, _ b: Matrix, transposeB: Bool = false,
        alpha: Float = 1, beta: Float = 0, into c: inout Matrix
    ) {
        let m = transposeA ? a.columns : a.rows
        let k = transposeA ? a.rows : a.columns
        let kb = transposeB ? b.columns : b.rows
        let n = transposeB ? b.rows : b.columns
        precondition(k == kb, "gemm: inner dimensions \(k) and \(kb) differ")
        precondition(c.rows == m && c.columns == n, "gemm: output is \(c.rows)×\(c.columns), expected \(m)×\(n)")
        checkSize(m, n, k)
        guard m > 0, n > 0 else { return }
        // With one OpenBLAS thread (training), large products are split over our own workers
        // instead: no OpenBLAS thread is left spinning between calls. Tall outputs split by
        // rows, short wide ones (m < 128: a weight gradient of a narrow layer) by columns.
        // One block per worker: fewest re-packings. OpenBLAS's edge kernels round some
        // entries differently at block borders, so results depend on the worker count (as
        // with OpenBLAS's own threading); runs record it.
        let workers = min(Parallel.workerLimit, ProcessStats.coreCount)
        let split = threadCount == 1 && workers > 1 && m * n * k >= 1 << 22
        let byRows = split && m >= 128, byColumns = split && !byRows && n >= 256
        let rowChunk = byRows ? (m + workers - 1) / workers : m
        let columnChunk = byColumns ? (n + workers - 1) / workers : n
        a.values.withUnsafeBufferPointer { pa in
            b.values.withUnsafeBufferPointer { pb in
                c.values.withUnsafeMutableBufferPointer { pc in
                    // Workers write disjoint blocks of c.
                    let p = UnsafeShared((pa.baseAddress!, pb.baseAddress!, pc.baseAddress!))
                    let lda = max(1, a.columns), ldb = max(1, b.columns)
                    let blocks = (m + rowChunk - 1) / rowChunk * ((n + columnChunk - 1) / columnChunk)
                    Parallel.forEachChunk(count: blocks, chunkSize: 1) { range in
                        let (ap, bp, cp) = p.value
                        let block = range.lowerBound
                        let rowBlocks = (m + rowChunk - 1) / rowChunk
                        let rows = (block % rowBlocks * rowChunk)..<min(m, (block % rowBlocks + 1) * rowChunk)
                        let columns = (block / rowBlocks * columnChunk)..<min(n, (block / rowBlocks + 1) * columnChunk)
                        // Rows r of op(a): row r of a, or column r of a when transposed; columns
                        // j of op(b): column j of b, or row j of b when transposed.
                        let aStart = transposeA ? ap + rows.lowerBound : ap + rows.lowerBound * lda
                        let bStart = transposeB ? bp + columns.lowerBound * ldb : bp + columns.lowerBound
                        cblas_sgemm(
                            CblasRowMajor, transposeA ? CblasTrans : CblasNoTrans,
                            transposeB ? CblasTrans : CblasNoTrans,
                            Int32(rows.count), Int32(columns.count), Int32(k), alpha,
                            aStart, Int32(lda), bStart, Int32(ldb),
                            beta, cp + rows.lowerBound * n + columns.lowerBound, Int32(max(1, n)))
                    }
                }
            }
        }
    }

    /// `op(a) · op(b)` as a new matrix.
    public static func gemm(
        _ a: Matrix, transposeA: Bool = false, _ b: Matrix, transposeB: Bool = false
    ) -> Matrix {
        // β = 0: BLAS does not read c, so it need not be zeroed.
        var c = Matrix(uninitializedRows: transposeA ? a.columns : a.rows, columns: transposeB ? b.rows : b.columns)
        gemm(a, transposeA: transposeA, b, transposeB: transposeB, into: &c)
        return c
    }

    /// The Gram matrix `aᵀ · a` (columns × columns), computed by `ssyrk` on the upper
    /// triangle and mirrored so the result is a full symmetric matrix.
    public static func gram(_ a: Matrix) -> Matrix {
        let n = a.columns
        checkSize(n, n, a.rows)
        var c = Matrix(rows: n, columns: n)
        guard n > 0 else { return c }
        a.values.withUnsafeBufferPointer { pa in
            c.values.withUnsafeMutableBufferPointer { pc in
                cblas_ssyrk(
                    CblasRowMajor, CblasUpper, CblasTrans, Int32(n), Int32(a.rows), 1,
                    pa.baseAddress, Int32(max(1, n)), 0, pc.baseAddress, Int32(n))
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
    public static func invertSymmetricPositiveDefinite(_ m: inout Matrix) throws {
        precondition(m.rows == m.columns, "invertSymmetricPositiveDefinite: \(m.rows)×\(m.columns) is not square")
        let n = m.rows
        checkSize(n, n, 1)
        guard n > 0 else { return }
        let lower = CChar(UInt8(ascii: "L"))
        var info: Int32 = 0
        m.values.withUnsafeMutableBufferPointer { p in
            info = LAPACKE_spotrf(LAPACK_COL_MAJOR, lower, Int32(n), p.baseAddress, Int32(n))
            if info == 0 {
                info = LAPACKE_spotri(LAPACK_COL_MAJOR, lower, Int32(n), p.baseAddress, Int32(n))
            }
        }
        if info > 0 { throw LinalgError.notPositiveDefinite(order: Int(info)) }
        if info < 0 { throw LinalgError.lapack(routine: "spotrf/spotri", info: Int(info)) }
        m.mirrorUpperToLower()
    }

    /// OpenBLAS in this build takes 32-bit sizes: refuse shapes that would overflow.
    private static func checkSize(_ a: Int, _ b: Int, _ c: Int) {
        let limit = Int(Int32.max)
        precondition(a * b < limit && a * c < limit && b * c < limit,
                     "BLAS: shape \(a)×\(b)×\(c) exceeds the 32-bit index range of this OpenBLAS build")
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
