import Linalg

/// A node of the computation: a value, its gradient, and whether gradients flow to it.
/// Reference type on purpose — ops link nodes into a graph — and local to one training step.
public final class Variable {
    /// The forward value, fixed once computed (a `let`: reading it needs no exclusivity check,
    /// which a `var` on a class costs on every element read in an op's loop).
    public let value: Matrix
    /// d(loss)/d(value), allocated on first accumulation.
    public private(set) var grad: Matrix?
    /// Whether a gradient is wanted for this node (a parameter, or anything computed from one).
    public let requiresGrad: Bool
    /// The threads gradient accumulation may use (the tape's, set when the tape records the node).
    var compute = Compute.serial

    /// A node over `value`.
    public init(_ value: Matrix, requiresGrad: Bool = false) {
        self.value = value
        self.requiresGrad = requiresGrad
    }

    /// Adds `g` to the gradient (gradients accumulate: a node used twice gets both).
    public func accumulate(_ g: Matrix) {
        precondition(g.rows == value.rows && g.columns == value.columns, "gradient shape \(g.rows)×\(g.columns) ≠ value \(value.rows)×\(value.columns)")
        if grad == nil { grad = g; return }
        grad!.values.withUnsafeMutableBufferPointer { d in
            g.values.withUnsafeBufferPointer { s in
                let p = UnsafeShared((d.baseAddress!, s.baseAddress!))   // disjoint element ranges
                compute.forEachChunk(count: d.count, chunkSize: 1 << 15) { range in
                    let (dp, sp) = p.value
                    for i in range { dp[i] += sp[i] }
                }
            }
        }
    }

    /// Adds α · op(a) · op(b) to the gradient with one GEMM: written directly on first use
    /// (β = 0, no zero fill), added in place afterwards (β = 1), never through a temporary.
    public func accumulateProduct(_ a: Matrix, transposeA: Bool = false, _ b: Matrix, transposeB: Bool = false, alpha: Float = 1) {
        if grad == nil {
            var c = Matrix(uninitializedRows: value.rows, columns: value.columns)   // β = 0: never read
            BLAS.gemm(a, transposeA: transposeA, b, transposeB: transposeB, alpha: alpha, beta: 0, into: &c, compute: compute)
            grad = c
        } else {
            BLAS.gemm(a, transposeA: transposeA, b, transposeB: transposeB, alpha: alpha, beta: 1, into: &grad!, compute: compute)
        }
    }

    /// Adds a · b for a sparse a to the gradient, in place.
    public func accumulateProduct(_ a: SparseMatrix, _ b: Matrix) {
        let fresh = grad == nil
        if fresh { grad = Matrix(uninitializedRows: value.rows, columns: value.columns) }
        a.multiply(rows: Array(0..<Int32(a.rows))[...], by: b, into: &grad!, adding: !fresh, compute: compute)
    }

    /// Adds to the gradient through a closure on the (zero-initialised) buffer, for sparse
    /// accumulations without building a dense temporary.
    public func accumulate(_ body: (inout Matrix) -> Void) {
        if grad == nil { grad = Matrix(rows: value.rows, columns: value.columns) }
        body(&grad!)
    }

    /// Adds row r of `g` to row `indices[r]` of the gradient (the pullback of a gather).
    func accumulateRows(_ g: Matrix, at indices: [Int32]) {
        accumulate { grad in RowKernels.addRows(g, at: indices, into: &grad) }
    }
}
