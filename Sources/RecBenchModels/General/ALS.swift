import Foundation
import Linalg
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// ALS for implicit feedback (Hu, Koren & Volinsky 2008, "Collaborative Filtering for
/// Implicit Feedback Datasets"), solved by conjugate gradient (Takács et al. 2011) as the
/// `implicit` library does.
///
///     c_ui = 1 + α·count(u, i),  p_ui = 1 if u had i in train, else 0
///     repeat `iterations` times:
///         for every user u:  (YᵀY + Yᵀ(C_u − I)Y + λI) x_u = Yᵀ C_u p_u
///         for every item i:  the same with the roles of X and Y exchanged
///     score(u, ·) = x_u · Yᵀ
///
/// With `use_cg`, each solve is `cg_steps` conjugate-gradient steps started from the previous
/// x_u (YᵀY + λI is formed once per half-step; the observed items add their rank-one terms
/// on the fly); without, an exact Cholesky solve per row. Fixed iterations: early stopping
/// does not apply, and the model is validated once, after the last.
public struct ALS: Recommender {
    public static let name = "ALS"
    public static let summary = "Alternating least squares on confidence-weighted implicit feedback (Hu et al. 2008), "
        + "conjugate-gradient solves as in `implicit`"
    public static let kind = ModelKind.factorisation
    public static let parameters: [ConfigKey] = [
        ConfigKey("factors", "int", .int(64), "ALS: dimension of user and item factors.").searched(.choice([32, 64, 128].map(ConfigValue.int))),
        ConfigKey("regularization", "float", .double(0.01), "ALS: L2 weight λ on the factors.")
            .searched(.loguniform(low: -6.907755278982137, high: 0)),
        SharedKeys.alpha(1.0),
        ConfigKey("iterations", "int", .int(15), "ALS: alternating sweeps (users, then items); fixed, no early stopping."),
        ConfigKey("use_cg", "bool", .bool(true), "ALS: solve each row by conjugate gradient (implicit's default) instead of exactly (Cholesky)."),
        ConfigKey("cg_steps", "int", .int(3), "ALS with use_cg: conjugate-gradient steps per row and half-step (implicit's default)."),
    ]

    let factors: Int, regularization: Float, alpha: Float, iterations: Int, useCG: Bool, cgSteps: Int
    /// The learned factors (users × factors, items × factors).
    public private(set) var userFactors = Matrix(rows: 0, columns: 0), itemFactors = Matrix(rows: 0, columns: 0)
    /// Seconds of the fit's half-steps and the FLOP rate of the solves.
    public private(set) var fitSteps: [String: Double] = [:]

    public init(parameters: ModelParameters) throws {
        factors = try parameters.int("factors", in: 1...4096)
        regularization = Float(try parameters.double("regularization", in: 0...1e6))
        alpha = Float(try parameters.double("alpha", in: 0...1e6))
        iterations = try parameters.int("iterations", in: 1...10_000)
        useCG = try parameters.bool("use_cg")
        cgSteps = try parameters.int("cg_steps", in: 1...1000)
    }

    public mutating func fit(_ data: TrainingData, context: FitContext) throws {
        var rng = SeededGenerator(seed: context.seed, stream: 0xA15)
        userFactors = Self.uniform(rows: data.userCount, columns: factors, rng: &rng)
        itemFactors = Self.uniform(rows: data.itemCount, columns: factors, rng: &rng)
        // One OpenBLAS thread per call: idle OpenBLAS threads busy-wait between calls and would
        // take a core from the row solves.
        let compute = context.trainingCompute
        let byUser = confidences(data.trainMatrix), byItem = byUser.transposed()
        let solver = ALSSolver(regularization: regularization, cgSteps: useCG ? cgSteps : nil)
        if let notice = exactSolveNotice(rows: data.userCount + data.itemCount) { context.logger.notice("\(notice)") }
        var flops = 0.0
        let start = ContinuousClock.now
        for _ in 0..<iterations {
            flops += solver.solve(&userFactors, against: itemFactors, confidences: byUser, compute: compute)
            flops += solver.solve(&itemFactors, against: userFactors, confidences: byItem, compute: compute)
        }
        let seconds = (ContinuousClock.now - start).seconds
        guard userFactors.isFinite(compute: context.compute), itemFactors.isFinite(compute: context.compute) else {
            throw RecBenchError.config("regularization", "ALS: factors are not finite; raise regularization")
        }
        fitSteps = ["iterations_seconds": seconds, "solve_gflop": flops / 1e9, "solve_gflops_per_second": flops / seconds / 1e9]
    }

    /// A note before an exact fit of more than 10 TFLOP: a Cholesky solve per row is cubic in
    /// `factors`, so at a few thousand the fit takes hours, which a user should hear first.
    public func exactSolveNotice(rows: Int) -> String? {
        let flops = Double(iterations) * Double(rows) * pow(Double(factors), 3) / 3
        guard !useCG, flops > 1e13 else { return nil }
        return "ALS: the exact solve (use_cg: false) costs about \(Int(flops / 1e12)) TFLOP over \(iterations) iterations "
            + "((users + items) × factors³ / 3), a long fit on a CPU; use_cg: true costs cg_steps × factors² per row"
    }

    /// The train counts as confidences c = 1 + α·count (users × items).
    func confidences(_ train: SparseMatrix) -> SparseMatrix {
        SparseMatrix(rows: train.rows, columns: train.columns, rowStarts: train.rowStarts, columnIndices: train.columnIndices,
                     values: train.values.map { 1 + alpha * $0 })
    }

    /// Uniform [0, 0.01) entries, as `implicit` starts its factors.
    static func uniform(rows: Int, columns: Int, rng: inout SeededGenerator) -> Matrix {
        var m = Matrix(rows: rows, columns: columns)
        for i in 0..<m.values.count { m.values[i] = 0.01 * rng.nextUnitFloat() }
        return m
    }

    public func scores(for users: ArraySlice<Int32>, into block: inout Matrix, compute: Compute) {
        FactorScores(users: userFactors, items: itemFactors).scores(for: users, into: &block, compute: compute)
    }
}

/// One ALS half-step: every row of X re-solved against a fixed Y, in parallel over rows.
struct ALSSolver: Sendable {
    let regularization: Float
    /// Conjugate-gradient steps per row; nil: an exact Cholesky solve.
    let cgSteps: Int?

    /// Re-solves every row of `x` against `y` (`confidences`: rows of x × rows of y); returns
    /// the FLOPs spent (multiply-adds count 2).
    func solve(_ x: inout Matrix, against y: Matrix, confidences c: SparseMatrix, compute: Compute) -> Double {
        let f = y.columns
        var gram = BLAS.gemm(y, transposeA: true, y, compute: compute)
        for i in 0..<f { gram.values[i * f + i] += regularization }
        var outputs = [x]
        x = Matrix(rows: 0, columns: 0)   // the buffer moves into `outputs`, unshared
        Matrix.withBuffers(reading: [y, gram, Matrix(rows: 1, columns: c.nonzeroCount, values: c.values)], writing: &outputs) { b in
            c.columnIndices.withUnsafeBufferPointer { columns in
                // Workers own disjoint rows of x; everything else is read-only.
                let shared = UnsafeShared((b.read[0], b.read[1], b.write[0], columns.baseAddress!, b.read[2]))
                compute.forEachChunk(count: c.rows, chunkSize: 16) { rows in
                    let (ys, yty, xs, items, weights) = shared.value
                    withUnsafeTemporaryAllocation(of: Float.self, capacity: 4 * f + f * f) { scratch in
                        for u in rows {
                            let entries = c.entries(ofRow: u)
                            let observed = Observed(items: items + entries.lowerBound, confidences: weights + entries.lowerBound, count: entries.count)
                            if let steps = cgSteps {
                                conjugateGradient(xs + u * f, observed, ys, yty, f: f, steps: steps, scratch: scratch.baseAddress!)
                            } else {
                                exact(xs + u * f, observed, ys, yty, f: f, scratch: scratch.baseAddress!)
                            }
                        }
                    }
                }
            }
        }
        x = outputs[0]
        let rows = Double(c.rows), nnz = Double(c.nonzeroCount), ff = Double(f * f), fd = Double(f)
        guard let steps = cgSteps.map(Double.init) else { return rows * (ff * fd / 3 + 2 * ff) + nnz * 2 * ff }
        return rows * (2 * ff + steps * (2 * ff + 10 * fd)) + nnz * (steps + 1) * 4 * fd
    }

    /// `implicit`'s CG update of one row x in place: r = b − A x, then `steps` CG steps.
    func conjugateGradient(_ x: UnsafeMutablePointer<Float>, _ observed: Observed,
                           _ y: UnsafePointer<Float>, _ yty: UnsafePointer<Float>, f: Int, steps: Int, scratch: UnsafeMutablePointer<Float>) {
        let r = scratch, p = scratch + f, ap = scratch + 2 * f
        Self.multiply(yty, x, into: r, f: f)
        for k in 0..<f { r[k] = -r[k] }
        for e in 0..<observed.count {
            let yi = y + Int(observed.items[e]) * f, c = observed.confidences[e]
            Self.axpy(c - (c - 1) * Self.dot(yi, x, f), yi, into: r, f: f)
        }
        p.update(from: r, count: f)
        var old = Self.dot(r, r, f)
        guard old >= 1e-20 else { return }
        for _ in 0..<steps {
            Self.multiply(yty, p, into: ap, f: f)
            for e in 0..<observed.count {
                let yi = y + Int(observed.items[e]) * f
                Self.axpy((observed.confidences[e] - 1) * Self.dot(yi, p, f), yi, into: ap, f: f)
            }
            let a = old / Self.dot(p, ap, f)
            Self.axpy(a, p, into: x, f: f)
            Self.axpy(-a, ap, into: r, f: f)
            let new = Self.dot(r, r, f)
            if new < 1e-20 { break }
            for k in 0..<f { p[k] = r[k] + (new / old) * p[k] }
            old = new
        }
    }

    /// The exact solve of one row: A = YᵀY + λI + Σ (c − 1) y yᵀ, b = Σ c y, by Cholesky.
    func exact(_ x: UnsafeMutablePointer<Float>, _ observed: Observed,
               _ y: UnsafePointer<Float>, _ yty: UnsafePointer<Float>, f: Int, scratch: UnsafeMutablePointer<Float>) {
        let a = scratch + 4 * f, rhs = scratch
        a.update(from: yty, count: f * f)
        rhs.initialize(repeating: 0, count: f)
        for e in 0..<observed.count {
            let yi = y + Int(observed.items[e]) * f, c = observed.confidences[e]
            for row in 0..<f { Self.axpy((c - 1) * yi[row], yi, into: a + row * f, f: f) }
            Self.axpy(c, yi, into: rhs, f: f)
        }
        // A = L Lᵀ in the lower triangle, then L z = b, Lᵀ x = z.
        for j in 0..<f {
            var d = a[j * f + j]
            for k in 0..<j { d -= a[j * f + k] * a[j * f + k] }
            let l = max(d, 1e-12).squareRoot()
            a[j * f + j] = l
            for i in (j + 1)..<max(j + 1, f) {
                var s = a[i * f + j]
                for k in 0..<j { s -= a[i * f + k] * a[j * f + k] }
                a[i * f + j] = s / l
            }
        }
        for i in 0..<f {
            var s = rhs[i]
            for k in 0..<i { s -= a[i * f + k] * rhs[k] }
            rhs[i] = s / a[i * f + i]
        }
        for i in stride(from: f - 1, through: 0, by: -1) {
            var s = rhs[i]
            for k in (i + 1)..<max(i + 1, f) { s -= a[k * f + i] * x[k] }
            x[i] = s / a[i * f + i]
        }
    }

    /// a · b with four independent accumulators (a single chain waits on every add).
    @inline(__always) static func dot(_ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, _ f: Int) -> Float {
        var s0 = Lanes(), s1 = Lanes(), s2 = Lanes(), s3 = Lanes()
        var j = 0
        while j + 32 <= f {
            s0 += Lanes.load(a, j, count: f) * Lanes.load(b, j, count: f)
            s1 += Lanes.load(a, j + 8, count: f) * Lanes.load(b, j + 8, count: f)
            s2 += Lanes.load(a, j + 16, count: f) * Lanes.load(b, j + 16, count: f)
            s3 += Lanes.load(a, j + 24, count: f) * Lanes.load(b, j + 24, count: f)
            j += 32
        }
        while j < f { s0 += Lanes.load(a, j, count: f) * Lanes.load(b, j, count: f); j += 8 }
        return ((s0 + s1) + (s2 + s3)).total
    }

    @inline(__always) static func axpy(_ a: Float, _ x: UnsafePointer<Float>, into y: UnsafeMutablePointer<Float>, f: Int) {
        for j in stride(from: 0, to: f, by: 8) { (Lanes.load(y, j, count: f) + a * Lanes.load(x, j, count: f)).store(y, j, count: f) }
    }

    /// out = M v for a symmetric f × f M (row-major), as Σ_k v[k] · M[k, :], 32 columns at a
    /// time held in registers: no horizontal sums, no stores until a block is done.
    @inline(__always) static func multiply(_ m: UnsafePointer<Float>, _ v: UnsafePointer<Float>, into out: UnsafeMutablePointer<Float>, f: Int) {
        var j = 0
        while j < f {
            var o0 = Lanes(), o1 = Lanes(), o2 = Lanes(), o3 = Lanes()
            for k in 0..<f {
                let s = v[k], row = m + k * f
                o0 += s * Lanes.load(row, j, count: f)
                if j + 8 < f { o1 += s * Lanes.load(row, j + 8, count: f) }
                if j + 16 < f { o2 += s * Lanes.load(row, j + 16, count: f) }
                if j + 24 < f { o3 += s * Lanes.load(row, j + 24, count: f) }
            }
            o0.store(out, j, count: f)
            if j + 8 < f { o1.store(out, j + 8, count: f) }
            if j + 16 < f { o2.store(out, j + 16, count: f) }
            if j + 24 < f { o3.store(out, j + 24, count: f) }
            j += 32
        }
    }
}

/// A row's observed entries: the other side's indices and their confidences.
struct Observed {
    let items: UnsafePointer<Int32>
    let confidences: UnsafePointer<Float>
    let count: Int
}
