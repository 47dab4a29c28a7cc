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
        let b = targets.count, steps = b == 0 ? 0 : items.count / b
        precondition(mode.value.rows == b && mode.value.columns == 2 && explore.value.rows == b && repeatWeights.value.rows == items.count,
                     "repeatExploreNLL: shapes do not match")
        let probabilities = RepeatExplore.exploreSoftmax(explore.value, items: items, padding: padding, steps: steps, compute: compute)
        var repeatMass = [Float](repeating: 0, count: b), predicted = [Float](repeating: 0, count: b), loss: Double = 0
        for r in 0..<b {
            for t in 0..<steps where items[t * b + r] == targets[r] { repeatMass[r] += repeatWeights.value.values[t * b + r] }
            predicted[r] = mode.value[r, 0] * repeatMass[r] + mode.value[r, 1] * probabilities[r, Int(targets[r])]
            loss -= Foundation.log(Double(predicted[r]) + 1e-8)
        }
        let out = Variable(Matrix(rows: 1, columns: 1, values: [Float(loss / Double(max(1, b)))]),
                           requiresGrad: mode.requiresGrad || repeatWeights.requiresGrad || explore.requiresGrad)
        return record(out) {
            var dMode = Matrix(rows: b, columns: 2), dRepeat = Matrix(rows: items.count, columns: 1), scales = Matrix(rows: b, columns: 1)
            for r in 0..<b {
                let c = -out.grad!.values[0] / Float(b) / (predicted[r] + 1e-8), target = Int(targets[r])
                let p = probabilities[r, target]
                dMode[r, 0] = c * repeatMass[r]; dMode[r, 1] = c * p
                for t in 0..<steps where items[t * b + r] == targets[r] { dRepeat.values[t * b + r] = c * mode.value[r, 0] }
                // d p_target / d z_j = p_target (δ_j,target − p_j); zero for the excluded items (p_j = 0 there).
                scales[r, 0] = p > 0 ? -c * mode.value[r, 1] * p : 0
            }
            var dExplore = RowKernels.scaleRows(probabilities, by: scales)
            for r in 0..<b { dExplore[r, Int(targets[r])] -= scales[r, 0] }
            if mode.requiresGrad { mode.accumulate(dMode) }
            if repeatWeights.requiresGrad { repeatWeights.accumulate(dRepeat) }
            if explore.requiresGrad { explore.accumulate(dExplore) }
        }
    }
}

/// RepeatNet's explore distribution, shared by its loss and its full-ranking scores; rows
/// split over the workers, eight lanes at a time.
public enum RepeatExplore {
    /// Row-wise softmax of `logits` over the classes that are not among the row's items
    /// (`items` time-major over `steps`, `padding` past the end; the padding class itself
    /// stays in, as in RecBole): those get probability exactly 0.
    public static func exploreSoftmax(_ logits: Matrix, items: [Int32], padding: Int32, steps: Int, compute: Compute) -> Matrix {
        var p = Matrix(uninitializedRows: logits.rows, columns: logits.columns)
        let n = logits.columns
        guard n > 0 else { return p }
        logits.values.withUnsafeBufferPointer { z in
            p.values.withUnsafeMutableBufferPointer { out in
                let (z, out) = (UnsafeShared(z.baseAddress!), UnsafeShared(out.baseAddress!))
                compute.forEachChunk(count: logits.rows, chunkSize: 64) { rows in   // disjoint rows
                    for r in rows {
                        let row = out.value + r * n
                        masked(z.value + r * n, into: row, count: n, row: r, items: items, padding: padding, steps: steps)
                        SoftmaxKernels.softmax(row, count: n)
                    }
                }
            }
        }
        return p
    }

    /// Full-ranking scores in place: row r of `block` (the catalogue's classes, the padding
    /// class left out) becomes P(explore)_r · the explore softmax, plus P(repeat)_r · α_t on
    /// each item s_t of the row's sequence. `mode` is B × 2 (repeat, explore), `repeatWeights`
    /// time-major (steps·B) × 1.
    public static func scores(logits: Matrix, mode: Matrix, repeatWeights: Matrix, items: [Int32], padding: Int32, steps: Int,
                              into block: inout Matrix, compute: Compute) {
        let (b, n, classes) = (logits.rows, block.columns, logits.columns)
        precondition(block.rows >= b && classes >= n && mode.rows == b && repeatWeights.values.count == items.count, "RepeatNet scores: shapes")
        guard b > 0, n > 0 else { return }
        logits.values.withUnsafeBufferPointer { z in
            block.values.withUnsafeMutableBufferPointer { out in
                let (z, out) = (UnsafeShared(z.baseAddress!), UnsafeShared(out.baseAddress!))
                compute.forEachChunk(count: b, chunkSize: 64) { rows in   // disjoint rows
                    var scratch = [Float](repeating: 0, count: classes)
                    scratch.withUnsafeMutableBufferPointer { e in
                        for r in rows {
                            masked(z.value + r * classes, into: e.baseAddress!, count: classes, row: r, items: items, padding: padding, steps: steps)
                            let inverse = 1 / SoftmaxKernels.exponentials(e.baseAddress!, into: e.baseAddress!, count: classes).sum
                            let share = mode[r, 1] * inverse, repeatShare = mode[r, 0], row = out.value + r * n
                            for j in stride(from: 0, to: n, by: 8) { (Lanes.load(e.baseAddress!, j, count: n) * share).store(row, j, count: n) }
                            for t in 0..<steps where items[t * b + r] != padding {
                                row[Int(items[t * b + r])] += repeatShare * repeatWeights.values[t * b + r]
                            }
                        }
                    }
                }
            }
        }
    }

    /// The row's logits copied to `out` with its sequence's items at −∞ (probability 0).
    @inline(__always)
    static func masked(_ z: UnsafePointer<Float>, into out: UnsafeMutablePointer<Float>, count n: Int, row r: Int, items: [Int32],
                       padding: Int32, steps: Int) {
        let b = steps == 0 ? 0 : items.count / steps
        out.update(from: z, count: n)
        for t in 0..<steps where items[t * b + r] != padding { out[Int(items[t * b + r])] = -.infinity }
    }
}
