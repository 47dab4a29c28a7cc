import Foundation
import Linalg

/// The sample distance correlation of two sets of row vectors (DGCF's independence term
/// between intent factors), as RecBole 1.2.1 computes it: distances with a √(· + 1e−8)
/// floor, double-centred, dcov = √(max(Σ A∘B / M², 0) + 1e−8), dCor = dcov₁₂ / (√(dcov₁₁ dcov₂₂) + 1e−10).
/// Worked in Double: M is small (DGCF's sampled users and items), the sums are not.
extension Tape {
    public func distanceCorrelation(_ x: Variable, _ y: Variable) -> Variable {
        precondition(x.value.rows == y.value.rows, "distanceCorrelation: both sides need the same rows")
        let dx = CentredDistances(x.value), dy = CentredDistances(y.value)
        let m2 = Double(x.value.rows * x.value.rows)
        let s = (xy: dx.dot(dy) / m2, xx: dx.dot(dx) / m2, yy: dy.dot(dy) / m2)
        let cov = (xy: (max(s.xy, 0) + 1e-8).squareRoot(), xx: (max(s.xx, 0) + 1e-8).squareRoot(), yy: (max(s.yy, 0) + 1e-8).squareRoot())
        let p = cov.xx * cov.yy, denominator = max(p, 0).squareRoot() + 1e-10
        let out = Variable(Matrix(rows: 1, columns: 1, values: [Float(cov.xy / denominator)]), requiresGrad: x.requiresGrad || y.requiresGrad)
        return record(out) {
            let g = Double(out.grad!.values[0])
            // d dCor / d dcov, then d dcov / d s (0 where the clamp holds s at 0).
            let gCovXY = g / denominator
            let root = p > 0 ? -g * cov.xy / (denominator * denominator) / (2 * p.squareRoot()) : 0
            func ds(_ gCov: Double, _ s: Double, _ cov: Double) -> Double { s > 0 ? gCov / (2 * cov) / m2 : 0 }
            let gxy = ds(gCovXY, s.xy, cov.xy), gxx = ds(root * cov.yy, s.xx, cov.xx), gyy = ds(root * cov.xx, s.yy, cov.yy)
            // s_ab = Σ A_a∘A_b / M²: each side's centred matrix gets the other's, its own twice.
            if x.requiresGrad { x.accumulate(dx.pullback(centred: zip(dy.a, dx.a).map { gxy * $0 + 2 * gxx * $1 })) }
            if y.requiresGrad { y.accumulate(dy.pullback(centred: zip(dx.a, dy.a).map { gxy * $0 + 2 * gyy * $1 })) }
        }
    }
}

/// D_ij = √(max(‖x_i − x_j‖², 0) + 1e−8) of a matrix's rows and A = H D H (H = I − 11ᵀ/M).
struct CentredDistances {
    let x: [Double], rows: Int, columns: Int
    /// ‖x_i‖² − 2 x_i·x_j + ‖x_j‖², as RecBole expands it, and D.
    let squared: [Double], d: [Double]
    /// The double-centred distances.
    let a: [Double]

    init(_ m: Matrix) {
        let (rows, columns, x) = (m.rows, m.columns, m.values.map(Double.init))
        self.rows = rows; self.columns = columns; self.x = x
        let norms = (0..<rows).map { i in (0..<columns).reduce(0.0) { $0 + x[i * columns + $1] * x[i * columns + $1] } }
        var squared = [Double](repeating: 0, count: rows * rows)
        for i in 0..<rows {
            for j in 0..<rows {
                var dot = 0.0
                for c in 0..<columns { dot += x[i * columns + c] * x[j * columns + c] }
                squared[i * rows + j] = norms[i] - 2 * dot + norms[j]
            }
        }
        let d = squared.map { (max($0, 0) + 1e-8).squareRoot() }
        self.squared = squared; self.d = d
        a = Self.centre(d, rows)
    }

    /// H m H: each entry less its row's and its column's mean, plus the overall mean (self-adjoint).
    static func centre(_ m: [Double], _ n: Int) -> [Double] {
        let rowMeans = (0..<n).map { i in m[(i * n)..<((i + 1) * n)].reduce(0, +) / Double(n) }
        let columnMeans = (0..<n).map { j in (0..<n).reduce(0.0) { $0 + m[$1 * n + j] } / Double(n) }
        let mean = rowMeans.reduce(0, +) / Double(n)
        return (0..<(n * n)).map { k in m[k] - rowMeans[k / n] - columnMeans[k % n] + mean }
    }

    func dot(_ other: CentredDistances) -> Double { zip(a, other.a).reduce(0) { $0 + $1.0 * $1.1 } }

    /// The gradient on the rows from the gradient on A: through the centring (H g H), then
    /// d D_ij = (x_i − x_j) / D_ij on each side where the clamp did not hold.
    func pullback(centred g: [Double]) -> Matrix {
        let gd = Self.centre(g, rows)
        var out = Matrix(rows: rows, columns: columns)
        for i in 0..<rows {
            for j in 0..<rows where squared[i * rows + j] > 0 {
                let w = gd[i * rows + j] / d[i * rows + j]
                for c in 0..<columns {
                    let diff = Float(w * (x[i * columns + c] - x[j * columns + c]))
                    out.values[i * columns + c] += diff
                    out.values[j * columns + c] -= diff
                }
            }
        }
        return out
    }
}
