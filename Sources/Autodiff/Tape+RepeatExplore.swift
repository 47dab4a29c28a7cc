import Foundation
import Linalg

extension Tape {
    /// Softmax over the `steps` time steps of a time-major (steps·B) × 1 column of scores,
    /// one distribution per sequence. Masked steps (`mask` 0) get weight 0, as with torch's
    /// `masked_fill(-1e9)`; a sequence with every step masked gets the uniform distribution,
    /// as −1e9 everywhere gives.
    public func softmaxSteps(_ scores: Variable, steps: Int, mask: [Float]?) -> Variable {
        let rows = scores.value.rows, b = steps == 0 ? 0 : rows / steps
        precondition(b * steps == rows && scores.value.columns == 1, "softmaxSteps: \(rows) × \(scores.value.columns) is not \(steps) steps of one column")
        precondition(mask.map { $0.count == rows } ?? true, "softmaxSteps: one mask entry per row")
        var value = Matrix(rows: rows, columns: 1), constant = [Bool](repeating: false, count: b)
        for s in 0..<b {
            let kept = (0..<steps).filter { mask?[$0 * b + s] ?? 1 != 0 }
            guard !kept.isEmpty else {
                constant[s] = true   // a constant distribution: no gradient
                for t in 0..<steps { value.values[t * b + s] = 1 / Float(steps) }
                continue
            }
            let top = kept.map { scores.value.values[$0 * b + s] }.max() ?? 0
            var total: Float = 0
            for t in kept { let e = Foundation.exp(scores.value.values[t * b + s] - top); value.values[t * b + s] = e; total += e }
            for t in kept { value.values[t * b + s] /= total }
        }
        let out = Variable(value, requiresGrad: scores.requiresGrad)
        return record(out) {
            let g = out.grad!, p = out.value
            var d = Matrix(rows: rows, columns: 1)
            for s in 0..<b where !constant[s] {
                let dot = (0..<steps).reduce(Float(0)) { $0 + p.values[$1 * b + s] * g.values[$1 * b + s] }
                for t in 0..<steps { d.values[t * b + s] = p.values[t * b + s] * (g.values[t * b + s] - dot) }
            }
            scores.accumulate(d)
        }
    }

    /// RepeatNet's loss (Ren et al. 2019, as RecBole 1.2.1 computes it): the mean over the
    /// batch of −log(P(target) + 1e-8), where
    ///
    ///     P(i) = mode_r · Σ_{t: s_t = i} α_t  +  mode_e · softmax_{j ∉ s}(z)_i
    ///
    /// `mode` (B × 2) holds each row's repeat and explore probabilities, `repeatWeights` the
    /// repeat decoder's attention α (time-major, (steps·B) × 1) over the sequence's items
    /// `items` (time-major, `padding` past a sequence's end), `explore` the explore decoder's
    /// logits z (B × classes), whose softmax leaves out the items of the sequence (a repeat
    /// target has no explore probability). No B × steps × classes tensor is formed.
    public func repeatExploreNLL(mode: Variable, repeatWeights: Variable, explore: Variable, items: [Int32], padding: Int32,
                                 targets: [Int32]) -> Variable {
        let b = targets.count, n = explore.value.columns, steps = b == 0 ? 0 : items.count / b
        precondition(mode.value.rows == b && mode.value.columns == 2 && explore.value.rows == b && repeatWeights.value.rows == items.count,
                     "repeatExploreNLL: shapes do not match")
        let probabilities = RepeatExplore.exploreSoftmax(explore.value, items: items, padding: padding, steps: steps)
        var repeatMass = [Float](repeating: 0, count: b), predicted = [Float](repeating: 0, count: b), loss: Double = 0
        for r in 0..<b {
            for t in 0..<steps where items[t * b + r] == targets[r] { repeatMass[r] += repeatWeights.value.values[t * b + r] }
            predicted[r] = mode.value[r, 0] * repeatMass[r] + mode.value[r, 1] * probabilities[r, Int(targets[r])]
            loss -= Foundation.log(Double(predicted[r]) + 1e-8)
        }
        let out = Variable(Matrix(rows: 1, columns: 1, values: [Float(loss / Double(max(1, b)))]),
                           requiresGrad: mode.requiresGrad || repeatWeights.requiresGrad || explore.requiresGrad)
        return record(out) {
            var dMode = Matrix(rows: b, columns: 2), dRepeat = Matrix(rows: items.count, columns: 1), dExplore = Matrix(rows: b, columns: n)
            for r in 0..<b {
                let c = -out.grad!.values[0] / Float(b) / (predicted[r] + 1e-8), target = Int(targets[r])
                let p = probabilities[r, target]
                dMode[r, 0] = c * repeatMass[r]; dMode[r, 1] = c * p
                for t in 0..<steps where items[t * b + r] == targets[r] { dRepeat.values[t * b + r] = c * mode.value[r, 0] }
                // d p_target / d z_j = p_target (δ_j,target − p_j); zero for the excluded items (p_j = 0 there).
                guard p > 0 else { continue }
                let scale = c * mode.value[r, 1] * p
                for j in 0..<n { dExplore[r, j] = -scale * probabilities[r, j] }
                dExplore[r, target] += scale
            }
            if mode.requiresGrad { mode.accumulate(dMode) }
            if repeatWeights.requiresGrad { repeatWeights.accumulate(dRepeat) }
            if explore.requiresGrad { explore.accumulate(dExplore) }
        }
    }
}

/// RepeatNet's explore distribution, shared by its loss and its full-ranking scores.
public enum RepeatExplore {
    /// Row-wise softmax of `logits` over the classes that are not among the row's items
    /// (`items` time-major over `steps`, `padding` past the end; the padding class itself
    /// stays in, as in RecBole): those get probability exactly 0.
    public static func exploreSoftmax(_ logits: Matrix, items: [Int32], padding: Int32, steps: Int) -> Matrix {
        let b = logits.rows, n = logits.columns
        var p = logits
        p.values.withUnsafeMutableBufferPointer { v in
            for r in 0..<b {
                let row = v.baseAddress! + r * n
                for t in 0..<steps where items[t * b + r] != padding { row[Int(items[t * b + r])] = -.infinity }
                var top = -Float.infinity
                for j in 0..<n { top = max(top, row[j]) }
                var total: Float = 0
                for j in 0..<n { let e = row[j] == -.infinity ? 0 : Foundation.exp(row[j] - top); row[j] = e; total += e }
                for j in 0..<n { row[j] /= total }
            }
        }
        return p
    }
}
