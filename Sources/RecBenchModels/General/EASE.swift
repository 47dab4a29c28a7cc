import Linalg
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// EASE (Steck 2019, "Embarrassingly Shallow Autoencoders for Sparse Data").
///
///     G = XᵀX + λI
///     P = G⁻¹                      (Cholesky: spotrf + spotri)
///     B = −P / diag(P) column-wise,  diag(B) = 0
///     score(u) = x_u · B
public struct EASE: Recommender {
    public static let name = "EASE"
    public static let readsSeed = false   // no draw: the same fit at every seed
    public static let summary = "Closed-form item-item linear autoencoder with L2 regularisation (Steck 2019)"
    public static let kind = ModelKind.linear
    /// λ, RecBole's default.
    public static let parameters: [ConfigKey] = [SharedKeys.regWeight(250)]

    let regWeight: Float
    private var trainMatrix = SparseMatrix(rows: 0, columns: 0)
    /// The item-item weights B (items × items).
    private var weights = Matrix(rows: 0, columns: 0)
    /// Seconds per step of the last fit: gram, inverse, scale.
    public private(set) var fitSteps: [String: Double] = [:]

    public init(parameters: ModelParameters) throws {
        regWeight = Float(try parameters.double("reg_weight", in: 0...Double.greatestFiniteMagnitude))
    }

    public func memory(_ shape: WorkShape) -> MemoryEstimate? { .itemByItem(shape, "Gram matrix, inverted in place", factorised: true) }

    public mutating func fit(_ data: TrainingData, context: FitContext) throws {
        let x = data.trainMatrix
        let n = x.columns
        var clock = ContinuousClock.now
        func lap(_ step: String) {
            let now = ContinuousClock.now
            fitSteps[step] = (now - clock).seconds
            clock = now
        }
        var g = x.gram(upperOnly: true, compute: context.compute)   // the Cholesky reads only the upper triangle
        for i in 0..<n { g.values[i * n + i] += regWeight }
        lap("gram")
        do {
            try BLAS.invertSymmetricPositiveDefinite(&g, compute: context.compute)
        } catch {
            throw RecBenchError.config("reg_weight", "EASE: XᵀX + λI is not positive definite (\(error)); use a larger reg_weight")
        }
        lap("inverse")
        // B[i, j] = −P[i, j] / P[j, j]; B[j, j] = 0.
        let diagonal = (0..<n).map { g.values[$0 * n + $0] }
        g.values.withUnsafeMutableBufferPointer { p in
            let shared = UnsafeShared(p.baseAddress!)   // workers own disjoint rows
            context.compute.forEachChunk(count: n, chunkSize: 64) { rows in
                for i in rows {
                    let row = shared.value + i * n
                    for j in 0..<n { row[j] = -row[j] / diagonal[j] }
                    row[i] = 0
                }
            }
        }
        lap("scale")
        guard g.isFinite(compute: context.compute) else { throw RecBenchError("EASE: weights are not finite; increase reg_weight") }
        weights = g
        trainMatrix = x
    }

    public func scores(for users: ArraySlice<Int32>, into block: inout Matrix, compute: Compute) {
        trainMatrix.multiply(rows: users, by: weights, into: &block, compute: compute)
    }
}
