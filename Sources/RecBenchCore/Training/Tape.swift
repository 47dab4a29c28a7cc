/// A node of the computation: a value, its gradient, and whether gradients flow to it.
/// Reference type on purpose — ops link nodes into a graph — and local to one training step.
public final class Variable {
    /// The forward value.
    public var value: Matrix
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
    func accumulate(_ g: Matrix) {
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

    /// Adds op(a) · op(b) to the gradient with one GEMM: written directly on first use
    /// (β = 0, no zero fill), added in place afterwards (β = 1), never through a temporary.
    func accumulateProduct(_ a: Matrix, transposeA: Bool = false, _ b: Matrix, transposeB: Bool = false) {
        if grad == nil {
            grad = BLAS.gemm(a, transposeA: transposeA, b, transposeB: transposeB, compute: compute)
        } else {
            BLAS.gemm(a, transposeA: transposeA, b, transposeB: transposeB, alpha: 1, beta: 1, into: &grad!, compute: compute)
        }
    }

    /// Adds a · b for a sparse a to the gradient, in place.
    func accumulateProduct(_ a: SparseMatrix, _ b: Matrix) {
        let fresh = grad == nil
        if fresh { grad = Matrix(uninitializedRows: value.rows, columns: value.columns) }
        a.multiply(rows: Array(0..<Int32(a.rows))[...], by: b, into: &grad!, adding: !fresh, compute: compute)
    }

    /// Adds to the gradient through a closure on the (zero-initialised) buffer, for sparse
    /// accumulations without building a dense temporary.
    func accumulate(_ body: (inout Matrix) -> Void) {
        if grad == nil { grad = Matrix(rows: value.rows, columns: value.columns) }
        body(&grad!)
    }

    /// Adds row r of `g` to row `indices[r]` of the gradient (the pullback of a gather), in
    /// index order: `g` is read front to back and the table's rows stay in cache.
    func accumulateRows(_ g: Matrix, at indices: [Int32]) {
        precondition(g.rows == indices.count && g.columns == value.columns, "accumulateRows: shapes differ")
        let d = value.columns
        accumulate { grad in
            grad.values.withUnsafeMutableBufferPointer { dst in
                g.values.withUnsafeBufferPointer { src in
                    for (r, i) in indices.enumerated() {
                        let row = dst.baseAddress! + Int(i) * d, from = src.baseAddress! + r * d
                        for j in stride(from: 0, to: d, by: 8) {
                            (Lanes.load(row, j, count: d) + Lanes.load(from, j, count: d)).store(row, j, count: d)
                        }
                    }
                }
            }
        }
    }
}

/// Reverse-mode autodiff: ops record pullbacks in execution order; `backward` runs them in
/// reverse (micrograd's design over matrices).
public final class Tape {
    private var pullbacks: [() -> Void] = []
    /// The threads the ops and their pullbacks may use.
    public let compute: Compute

    /// An empty tape whose ops run with `compute`.
    public init(compute: Compute) { self.compute = compute }

    /// A trainable leaf (gradient wanted).
    public func parameter(_ value: Matrix) -> Variable {
        let leaf = Variable(value, requiresGrad: true)
        leaf.compute = compute
        return leaf
    }

    /// A constant leaf (no gradient).
    public func constant(_ value: Matrix) -> Variable { Variable(value) }

    /// Records the result of an op: `pullback` runs during `backward` when `output` needs a gradient.
    func record(_ output: Variable, _ pullback: @escaping () -> Void) -> Variable {
        output.compute = compute
        if output.requiresGrad { pullbacks.append(pullback) }
        return output
    }

    /// d(loss)/d(every node): seeds the 1×1 `loss` with 1 and runs the pullbacks in reverse.
    public func backward(_ loss: Variable) {
        precondition(loss.value.rows == 1 && loss.value.columns == 1, "backward needs a scalar loss")
        loss.accumulate(Matrix(rows: 1, columns: 1, repeating: 1))
        for pullback in pullbacks.reversed() { pullback() }
        pullbacks.removeAll()
    }
}
