import Foundation
import Linalg

extension Tape {
    /// One GRU layer through time, torch's cell without biases:
    ///
    ///     r = σ(x W_ir + h W_hr),  z = σ(x W_iz + h W_hz),  n = tanh(x W_in + r ⊙ (h W_hn))
    ///     h' = (1 − z) ⊙ n + z ⊙ h,   h₀ = 0
    ///
    /// `x` is packed time-major, as torch's `PackedSequence`: the sequences sorted longest
    /// first, step t holds the first `stepCounts[t]` of them (a non-increasing count) in
    /// consecutive rows, so a sequence's padding is never computed. `wInput` (in × 3H) and
    /// `wHidden` (H × 3H) hold the r, z and n blocks side by side. Returns every step's h' in
    /// the same layout. The input products of all steps are one GEMM; each step adds one
    /// n_t × H by H × 3H GEMM; the pullback walks back through time. `biases` (each 1 × 3H),
    /// when given, are torch's b_i and b_h: b_i joins x W_i, b_h joins h W_h (so b_hn sits
    /// inside r ⊙ (h W_hn + b_hn)).
    public func gru(_ x: Variable, wInput: Variable, wHidden: Variable, biases: (input: Variable, hidden: Variable)? = nil,
                    stepCounts: [Int]) -> Variable {
        let rows = x.value.rows, h3 = wHidden.value.columns, hidden = h3 / 3
        let offsets = stepCounts.reduce(into: [0]) { $0.append($0.last! + $1) }
        precondition(offsets.last == rows && zip(stepCounts, stepCounts.dropFirst()).allSatisfy { $0 >= $1 && $1 >= 0 },
                     "gru: step counts must be non-increasing and sum to the rows")
        precondition(wHidden.value.rows == hidden && wInput.value.columns == h3, "gru: shapes do not match")
        let compute = self.compute
        // The input products, overwritten step by step with the gates r, z, n; built inside the
        // array, as a second reference to them would make the first step copy them.
        var state = [Matrix(uninitializedRows: rows, columns: h3),
                     Matrix(uninitializedRows: rows, columns: hidden),   // h W_hn, kept for the pullback
                     Matrix(uninitializedRows: rows, columns: hidden)]   // the output h'
        if let biases { BLAS.linear(x.value, wInput.value, bias: biases.input.value, into: &state[0], compute: compute) }
        else { BLAS.gemm(x.value, wInput.value, into: &state[0], compute: compute) }
        let packed = GRUKernels.fuses(hidden: hidden) ? GRUKernels.packedHidden(wHidden.value) : nil
        if let packed {
            for (t, n) in stepCounts.enumerated() where n > 0 {
                GRUKernels.fusedForward(GRUKernels.Step(t, offsets, count: n, hidden: hidden), packed: packed.forward, hiddenBias: biases?.hidden.value,
                                        state: &state, compute: compute)
            }
        } else {
            Self.gruSteps(stepCounts, offsets, wHidden: wHidden.value, hiddenBias: biases?.hidden.value, state: &state, compute: compute)
        }
        let output = state[2]
        let out = Variable(output, requiresGrad: x.requiresGrad || wInput.requiresGrad || wHidden.requiresGrad
                           || biases.map { $0.input.requiresGrad || $0.hidden.requiresGrad } ?? false)
        return record(out) {
            // Step by step, the gates' rows become d(x W_i); d(h W_h) gets its own rows; the
            // carried dL/dh has a row per sequence still running.
            var buffers = [state[0], Matrix(uninitializedRows: rows, columns: h3), Matrix(rows: stepCounts.first ?? 0, columns: hidden)]
            let reads = [out.grad!, state[1], output]
            state = []   // the gates live on in `buffers` only: no copy on write
            // The biases' gradients: each step's block summed right after it is written (still in cache), steps in order.
            var biasSums = biases == nil ? [] : [Matrix(rows: 1, columns: h3), Matrix(rows: 1, columns: h3)]
            for (t, n) in stepCounts.enumerated().reversed() where n > 0 {
                let step = GRUKernels.Step(t, offsets, count: n, hidden: hidden)
                if let packed {
                    GRUKernels.fusedBackward(step, packedTransposed: packed.backward, reads: reads, buffers: &buffers, compute: compute)
                } else {
                    GRUKernels.backward(step, reads: reads, buffers: &buffers, compute: compute)
                }
                for k in biasSums.indices {
                    let block = buffers[k].columnSums(rows: offsets[t]..<offsets[t] + n, compute)
                    for j in 0..<h3 { biasSums[k].values[j] += block.values[j] }
                }
                if packed == nil && t > 0 {   // step 0's carry, dL/dh₀, is never read
                    let dHidden = buffers[1]
                    BLAS.gemm(dHidden, aRows: offsets[t]..<offsets[t] + n, wHidden.value, transposeB: true, alpha: 1, beta: 1,
                              into: &buffers[2], firstRow: 0, compute: compute)
                }
            }
            let (dInputs, dHidden) = (buffers[0], buffers[1])
            if x.requiresGrad { x.accumulateProduct(dInputs, wInput.value, transposeB: true) }
            if wInput.requiresGrad { wInput.accumulateProduct(x.value, transposeA: true, dInputs) }
            if wHidden.requiresGrad { wHidden.accumulateProduct(Self.previousStates(output, offsets), transposeA: true, dHidden) }
            if let biases, biases.input.requiresGrad { biases.input.accumulate(biasSums[0]) }
            if let biases, biases.hidden.requiresGrad { biases.hidden.accumulate(biasSums[1]) }
        }
    }

    /// The forward steps as a product per step (into one buffer, its first n rows; h_{t−1} read
    /// where it lies), then the gates: the baseline build's path.
    private static func gruSteps(_ stepCounts: [Int], _ offsets: [Int], wHidden: Matrix, hiddenBias: Matrix?, state: inout [Matrix],
                                 compute: Compute) {
        let h3 = wHidden.columns, hidden = h3 / 3
        var product = Matrix(uninitializedRows: stepCounts.first ?? 0, columns: h3)
        for (t, n) in stepCounts.enumerated() where n > 0 {
            if let hiddenBias { product.fillRows(with: hiddenBias, compute: compute) }
            else if t == 0 { product.values.withUnsafeMutableBufferPointer { $0.baseAddress!.update(repeating: 0, count: n * h3) } }
            if t > 0 {
                BLAS.gemm(state[2], aRows: offsets[t - 1]..<offsets[t - 1] + n, wHidden, beta: hiddenBias == nil ? 0 : 1, into: &product,
                          firstRow: 0, compute: compute)
            }
            GRUKernels.forward(GRUKernels.Step(t, offsets, count: n, hidden: hidden), product: product, state: &state, compute: compute)
        }
    }

    /// The padded time-major layout's GRU: `steps` steps of `x.rows / steps` sequences each.
    public func gru(_ x: Variable, wInput: Variable, wHidden: Variable, steps: Int) -> Variable {
        let b = steps == 0 ? 0 : x.value.rows / steps
        precondition(b * steps == x.value.rows, "gru: \(x.value.rows) rows are not \(steps) steps")
        return gru(x, wInput: wInput, wHidden: wHidden, stepCounts: Array(repeating: b, count: steps))
    }

    /// h_{t−1} beside each packed row of step t (zero at step 0): the left factor of dW_h.
    private static func previousStates(_ output: Matrix, _ offsets: [Int]) -> Matrix {
        var previous = Matrix(rows: output.rows, columns: output.columns)
        let h = output.columns
        previous.values.withUnsafeMutableBufferPointer { to in
            output.values.withUnsafeBufferPointer { from in
                for t in 1..<max(1, offsets.count - 1) {
                    let n = offsets[t + 1] - offsets[t]
                    (to.baseAddress! + offsets[t] * h).update(from: from.baseAddress! + offsets[t - 1] * h, count: n * h)
                }
            }
        }
        return previous
    }
}
