import CBLAS
import Foundation

/// A narrow product (an output too small for a row or column split: a narrow layer's weight
/// gradient) shared out over the workers with the bits of one OpenBLAS call.
///
/// OpenBLAS's level-3 driver walks the inner dimension in blocks of `GEMM_Q` (the last two
/// evened out to a multiple of the kernel's `GEMM_UNROLL_M`) and adds each block's sum to c
/// in turn. The same blocks computed as separate calls, each into its own partial, and added
/// to c in the same order give the same floats, so the blocks can go to different workers.
/// `GEMM_Q` and the unroll depend on the core OpenBLAS picked, and some cores take a
/// small-matrix path without blocks: the parameters are probed once, and each shape is
/// checked once on random data against a single call; a shape that differs runs as one call.
enum OpenBLASBlocks {
    /// The largest partials buffer, in floats (16 MB), and the smallest product worth sharing.
    static let maxPartialFloats = 1 << 22, minWork = 1 << 22

    /// The inner dimension's blocks, as OpenBLAS's `level3.c` cuts them.
    static func blocks(k: Int, q: Int, unroll: Int) -> [Range<Int>] {
        var blocks: [Range<Int>] = [], start = 0
        while start < k {
            var length = k - start
            if length >= 2 * q {
                length = q
            } else if length > q {
                length = (length / 2 + unroll - 1) / unroll * unroll
            }
            blocks.append(start..<(start + length))
            start += length
        }
        return blocks
    }

    /// The blocks to share `op(a) · op(b)` over, or nil when one call is the way: not worth
    /// sharing, α ≠ 1 or β ∉ {0, 1} (a partial would round α · sum once more), or this
    /// OpenBLAS build does not add the shape's blocks as `blocks(k:q:unroll:)` says.
    static func plan(m: Int, n: Int, k: Int, transposeA: Bool, transposeB: Bool, alpha: Float, beta: Float,
                     compute: Compute) -> [Range<Int>]? {
        guard compute.splitsProducts, alpha == 1, beta == 0 || beta == 1, m < 128, n < 256, m * n * k >= minWork,
              let (q, unroll) = parameters, k >= 2 * q else { return nil }
        let blocks = blocks(k: k, q: q, unroll: unroll)
        guard blocks.count * m * n <= maxPartialFloats else { return nil }
        let shape = Shape(m: m, n: n, k: k, transposeA: transposeA, transposeB: transposeB, accumulate: beta == 1)
        return CheckedShapes.shared.matches(shape) ? blocks : nil
    }

    /// `c = op(a) · op(b) + β c` (β 0 or 1) over the planned blocks: each block's partial on
    /// some worker, then added to c in block order.
    static func gemm(_ a: Matrix, aOffset: Int, transposeA: Bool, _ b: Matrix, transposeB: Bool, beta: Float, into c: inout Matrix,
                     firstRow first: Int, shape: (m: Int, n: Int, k: Int), blocks: [Range<Int>], compute: Compute) {
        let (m, n, _) = shape, size = m * n
        let partials = BLAS.innerPartials(a, aOffset: aOffset, transposeA: transposeA, b, transposeB: transposeB, shape: shape, over: blocks,
                                          compute: compute)
        partials.values.withUnsafeBufferPointer { pp in
            c.values.withUnsafeMutableBufferPointer { pc in
                let out = pc.baseAddress! + first * n
                if beta == 0 { out.update(repeating: 0, count: size) }
                for block in 0..<blocks.count {
                    let partial = pp.baseAddress! + block * size
                    for i in 0..<size { out[i] += partial[i] }
                }
            }
        }
    }

    /// One row-major `cblas_sgemm` with α = 1 and c's rows n apart.
    private static func product(_ a: UnsafePointer<Float>, transposeA: Bool, _ b: UnsafePointer<Float>, transposeB: Bool,
                                shape: (m: Int, n: Int, k: Int), lda: Int, ldb: Int, beta: Float, into c: UnsafeMutablePointer<Float>) {
        cblas_sgemm(CblasRowMajor, transposeA ? CblasTrans : CblasNoTrans, transposeB ? CblasTrans : CblasNoTrans,
                    Int32(shape.m), Int32(shape.n), Int32(shape.k), 1, a, Int32(max(1, lda)), b, Int32(max(1, ldb)), beta, c, Int32(shape.n))
    }

    struct Shape: Hashable {
        let m: Int, n: Int, k: Int, transposeA: Bool, transposeB: Bool, accumulate: Bool
    }

    /// OpenBLAS's `GEMM_Q` and `GEMM_UNROLL_M` for this process's core: the first candidate
    /// pair whose blocks reproduce single calls of three shapes (nil: none does).
    static let parameters: (q: Int, unroll: Int)? = {
        let probes = [Shape(m: 64, n: 64, k: 4_096, transposeA: true, transposeB: false, accumulate: false),
                      Shape(m: 48, n: 40, k: 3_001, transposeA: true, transposeB: false, accumulate: true),
                      Shape(m: 96, n: 32, k: 1_000, transposeA: false, transposeB: true, accumulate: false)]
        for q in [320, 384, 256, 512, 192, 448, 640, 768] {
            for unroll in [16, 8, 4, 24, 32] where probes.allSatisfy({ reproduces($0, q: q, unroll: unroll) }) { return (q, unroll) }
        }
        return nil
    }()

    /// Whether the blocks give a single call's bits for this shape, on random data.
    static func reproduces(_ shape: Shape, q: Int, unroll: Int) -> Bool {
        var rng = SeededGenerator(seed: UInt64(shape.m * 31 + shape.n * 7 + shape.k))
        let a = Matrix(rows: shape.transposeA ? shape.k : shape.m, columns: shape.transposeA ? shape.m : shape.k,
                       values: (0..<(shape.m * shape.k)).map { _ in Float.random(in: -1...1, using: &rng) })
        let b = Matrix(rows: shape.transposeB ? shape.n : shape.k, columns: shape.transposeB ? shape.k : shape.n,
                       values: (0..<(shape.n * shape.k)).map { _ in Float.random(in: -1...1, using: &rng) })
        let start = Matrix(rows: shape.m, columns: shape.n, values: (0..<(shape.m * shape.n)).map { _ in Float.random(in: -1...1, using: &rng) })
        let beta: Float = shape.accumulate ? 1 : 0
        var single = start, blocked = start
        OpenBLASThreads.shared.run(threads: 1) {
            a.values.withUnsafeBufferPointer { pa in
                b.values.withUnsafeBufferPointer { pb in
                    single.values.withUnsafeMutableBufferPointer { pc in
                        product(pa.baseAddress!, transposeA: shape.transposeA, pb.baseAddress!, transposeB: shape.transposeB,
                                shape: (shape.m, shape.n, shape.k), lda: a.columns, ldb: b.columns, beta: beta, into: pc.baseAddress!)
                    }
                }
            }
        }
        gemm(a, aOffset: 0, transposeA: shape.transposeA, b, transposeB: shape.transposeB, beta: beta, into: &blocked, firstRow: 0,
             shape: (shape.m, shape.n, shape.k), blocks: blocks(k: shape.k, q: q, unroll: unroll), compute: .serial)
        return single.values.map(\.bitPattern) == blocked.values.map(\.bitPattern)
    }
}

/// The shapes checked so far and whether each reproduced a single call. Like `OpenBLASThreads`,
/// this holds a fact about the linked library, not about any run: the answer for a shape is
/// the same whenever it is asked.
final class CheckedShapes: @unchecked Sendable {   // state guarded by `lock`
    static let shared = CheckedShapes()
    private let lock = NSLock()
    private var known: [OpenBLASBlocks.Shape: Bool] = [:]

    func matches(_ shape: OpenBLASBlocks.Shape) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        if let answer = known[shape] { return answer }
        guard let (q, unroll) = OpenBLASBlocks.parameters else { return false }
        let answer = OpenBLASBlocks.reproduces(shape, q: q, unroll: unroll)
        known[shape] = answer
        return answer
    }
}
