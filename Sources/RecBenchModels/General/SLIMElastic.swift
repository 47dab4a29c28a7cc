import Foundation
import Linalg
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// SLIM with the elastic net (Ning & Karypis 2011, "SLIM: Sparse Linear Methods for Top-N
/// Recommender Systems"), as RecBole 1.2.1's `SLIMElastic` fits it with scikit-learn's
/// `ElasticNet(positive, fit_intercept=False, precompute=True, selection="random")`.
///
///     for every item j (in parallel):
///         w_j = argmin_{w ≥ 0, w_j = 0}  1/(2U)·‖x_j − X w‖² + α·ρ·‖w‖₁ + ½·α·(1 − ρ)·‖w‖²
///     by coordinate descent on the Gram matrix G = XᵀX (scikit-learn's Gram variant:
///     H = G w kept up to date, coordinates visited in random order, stopping when the
///     largest step is below `tol` of the largest weight and the duality gap below `tol`·‖x_j‖²)
///     W = [w_1 … w_n] kept sparse;  score(u, ·) = x_u · W
public struct SLIMElastic: Recommender {
    public static let name = "SLIMElastic"
    public static let summary = "Sparse item-item linear model fitted per item by elastic-net coordinate descent (Ning & Karypis 2011)"
    public static let kind = ModelKind.linear
    public static let parameters: [ConfigKey] = [
        SharedKeys.alpha(0.2),
        ConfigKey("l1_ratio", "float", .double(0.02), "SLIMElastic: share ρ of the L1 term in the penalty.")
            .searched(.loguniform(low: -6.214608098422191, high: -1.6094379124341003)),
        ConfigKey("positive_only", "bool", .bool(true), "SLIMElastic: constrain the weights to be non-negative."),
        ConfigKey("hide_item", "bool", .bool(true), "SLIMElastic: leave the target item out of its own regression (w_jj = 0)."),
        ConfigKey("max_iter", "int", .int(100), "SLIMElastic: coordinate-descent sweeps per item at most (scikit-learn's default, as RecBole runs it)."),
        ConfigKey("tol", "float", .double(1e-4), "SLIMElastic: stopping tolerance (scikit-learn's default)."),
    ]

    let alpha: Float, l1Ratio: Float, positiveOnly: Bool, hideItem: Bool, maxIterations: Int, tolerance: Float
    var trainMatrix = SparseMatrix(rows: 0, columns: 0)
    /// W (items × items): column j holds item j's regression weights.
    public private(set) var weights = SparseMatrix(rows: 0, columns: 0)
    /// Seconds of the fit's steps and the sweeps it took.
    public private(set) var fitSteps: [String: Double] = [:]

    public init(parameters: ModelParameters) throws {
        alpha = Float(try parameters.double("alpha", in: 0...1e6))
        l1Ratio = Float(try parameters.double("l1_ratio", in: 0...1))
        positiveOnly = try parameters.bool("positive_only")
        hideItem = try parameters.bool("hide_item")
        maxIterations = try parameters.int("max_iter", in: 1...100_000)
        tolerance = Float(try parameters.double("tol", in: 0...1))
    }

    public func memory(_ shape: WorkShape) -> MemoryEstimate? { .itemByItem(shape, "Gram matrix") }

    public mutating func fit(_ data: TrainingData, context: FitContext) throws {
        trainMatrix = data.trainMatrix
        let n = trainMatrix.columns, users = Float(trainMatrix.rows)
        let start = ContinuousClock.now
        let gram = trainMatrix.gram(compute: context.compute.splittingProducts)
        let gramSeconds = (ContinuousClock.now - start).seconds
        let net = ElasticNet(l1: alpha * l1Ratio * users, l2: alpha * (1 - l1Ratio) * users, positive: positiveOnly,
                             maxIterations: maxIterations, tolerance: tolerance)
        let hide = hideItem, seed = context.seed
        let columns = context.compute.mapChunks(count: n, chunkSize: 32) { targets in
            var solver = ElasticNet.Workspace(n: n)
            return targets.map { j in
                var rng = SeededGenerator(seed: seed, stream: 0x511A << 20 | UInt64(j))
                return net.solve(gram: gram, target: j, hide: hide, workspace: &solver, rng: &rng)
            }
        }.flatMap { $0 }
        var rows: [Int32] = [], cols: [Int32] = [], values: [Float] = []
        var sweeps = 0.0
        for (j, column) in columns.enumerated() {
            sweeps += Double(column.sweeps)
            for (k, w) in column.weights { rows.append(k); cols.append(Int32(j)); values.append(w) }
        }
        weights = SparseMatrix(rows: n, columns: n, rowIndices: rows, columnIndices: cols, values: values)
        fitSteps = ["gram": gramSeconds, "coordinate_descent": (ContinuousClock.now - start).seconds - gramSeconds,
                    "mean_sweeps": sweeps / Double(max(1, n)), "nonzero_weights": Double(values.count)]
    }

    public func scores(for users: ArraySlice<Int32>, into block: inout Matrix, compute: Compute) {
        trainMatrix.multiply(rows: users, bySparse: weights, into: &block, compute: compute)
    }
}

/// scikit-learn's elastic-net coordinate descent on a Gram matrix (`enet_coordinate_descent_gram`),
/// for one target column of that matrix, penalties already multiplied by the sample count.
struct ElasticNet: Sendable {
    let l1: Float, l2: Float, positive: Bool, maxIterations: Int, tolerance: Float

    /// A worker's buffers (weights w and H = G w), reused across targets.
    struct Workspace {
        var w: [Float], h: [Float]
        init(n: Int) { w = [Float](repeating: 0, count: n); h = [Float](repeating: 0, count: n) }
    }

    /// The nonzero weights of target `j`'s regression on every other column, and the sweeps it took.
    func solve(gram: Matrix, target j: Int, hide: Bool, workspace: inout Workspace, rng: inout SeededGenerator) -> (weights: [(Int32, Float)], sweeps: Int) {
        let n = gram.columns
        for k in 0..<n { workspace.w[k] = 0; workspace.h[k] = 0 }
        let yNorm = gram[j, j], gapTolerance = tolerance * yNorm
        var sweeps = 0
        gram.values.withUnsafeBufferPointer { g in
            workspace.w.withUnsafeMutableBufferPointer { w in
                workspace.h.withUnsafeMutableBufferPointer { h in
                    let q = { (k: Int) -> Float in hide && k == j ? 0 : g[k * n + j] }   // Xᵀ x_j (G is symmetric)
                    for iteration in 0..<maxIterations {
                        sweeps = iteration + 1
                        var largest: Float = 0, largestStep: Float = 0
                        for _ in 0..<n {
                            let k = rng.nextInt(below: n)
                            let diagonal = g[k * n + k]
                            if diagonal == 0 || (hide && k == j) { continue }
                            // H without k's own term, then one axpy for the change (scikit-learn
                            // removes and re-adds: two passes over G's row).
                            let old = w[k]
                            let t = q(k) - (h[k] - old * diagonal)
                            w[k] = positive && t < 0 ? 0 : (t < 0 ? -1 : 1) * max(abs(t) - l1, 0) / (diagonal + l2)
                            if w[k] != old { Self.axpy(w[k] - old, g.baseAddress! + k * n, h.baseAddress!, n) }
                            largestStep = max(largestStep, abs(w[k] - old)); largest = max(largest, abs(w[k]))
                        }
                        guard largest == 0 || largestStep / largest < tolerance || iteration == maxIterations - 1 else { continue }
                        if dualityGap(w, h, q, yNorm: yNorm, skip: hide ? j : -1) < gapTolerance { break }
                    }
                }
            }
        }
        let kept = workspace.w.indices.filter { workspace.w[$0] != 0 }
        return (kept.map { (Int32($0), workspace.w[$0]) }, sweeps)
    }

    /// scikit-learn's duality gap of the current weights (H = G w).
    func dualityGap(_ w: UnsafeMutableBufferPointer<Float>, _ h: UnsafeMutableBufferPointer<Float>, _ q: (Int) -> Float,
                    yNorm: Float, skip: Int) -> Float {
        var qw: Float = 0, wh: Float = 0, dual: Float = -.infinity, w2: Float = 0, l1Norm: Float = 0
        for k in 0..<w.count {
            qw += q(k) * w[k]; wh += w[k] * h[k]; w2 += w[k] * w[k]; l1Norm += abs(w[k])
            let xta = k == skip ? 0 : q(k) - h[k] - l2 * w[k]
            dual = max(dual, positive ? xta : abs(xta))
        }
        let residual = yNorm + wh - 2 * qw   // ‖y − Xw‖²
        let scale: Float = dual > l1 ? l1 / dual : 1
        var gap = dual > l1 ? 0.5 * (residual + residual * scale * scale) : residual
        gap += l1 * l1Norm - scale * yNorm + scale * qw + 0.5 * l2 * (1 + scale * scale) * w2
        return gap
    }

    @inline(__always) static func axpy(_ a: Float, _ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>, _ n: Int) {
        for i in stride(from: 0, to: n, by: 8) { (Lanes.load(y, i, count: n) + a * Lanes.load(x, i, count: n)).store(y, i, count: n) }
    }
}
