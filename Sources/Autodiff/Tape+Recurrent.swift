import Foundation
import Linalg

extension Tape {
    /// One GRU layer through `steps` time steps, torch's cell without biases:
    ///
    ///     r = σ(x W_ir + h W_hr),  z = σ(x W_iz + h W_hz),  n = tanh(x W_in + r ⊙ (h W_hn))
    ///     h' = (1 − z) ⊙ n + z ⊙ h,   h₀ = 0
    ///
    /// `x` is time-major: rows `t·B ..< (t+1)·B` are step t of the B sequences. `wInput`
    /// (in × 3H) and `wHidden` (H × 3H) hold the r, z and n blocks side by side. Returns every
    /// step's h', time-major ((steps·B) × H). The input products of all steps are one GEMM;
    /// each step adds one B × H by H × 3H GEMM; the pullback walks back through time.
    public func gru(_ x: Variable, wInput: Variable, wHidden: Variable, steps: Int) -> Variable {
        let rows = x.value.rows, b = steps == 0 ? 0 : rows / steps, h3 = wHidden.value.columns, hidden = h3 / 3
        precondition(b * steps == rows && wHidden.value.rows == hidden && wInput.value.columns == h3, "gru: shapes do not match")
        let compute = self.compute
        // The input products, overwritten step by step with the gates r, z, n.
        var state = [BLAS.gemm(x.value, wInput.value, compute: compute),
                     Matrix(uninitializedRows: rows, columns: hidden),   // h W_hn, kept for the pullback
                     Matrix(uninitializedRows: rows, columns: hidden)]   // the output h'
        var previous = Matrix(rows: b, columns: hidden)
        var product = Matrix(uninitializedRows: b, columns: h3)
        for t in 0..<steps {
            BLAS.gemm(previous, wHidden.value, into: &product, compute: compute)
            GRUKernels.forward(t, batch: b, hidden: hidden, product: product, previous: previous, state: &state, compute: compute)
            previous = state[2].rows(t * b..<(t + 1) * b)
        }
        let output = state[2]
        let out = Variable(output, requiresGrad: x.requiresGrad || wInput.requiresGrad || wHidden.requiresGrad)
        return record(out) {
            // Step by step, the gates' rows become d(x W_i); d(h W_h) gets its own rows.
            var buffers = [state[0], Matrix(uninitializedRows: rows, columns: h3), Matrix(rows: b, columns: hidden)]
            let reads = [out.grad!, state[1], output]
            state = []   // the gates live on in `buffers` only: no copy on write
            for t in stride(from: steps - 1, through: 0, by: -1) {
                GRUKernels.backward(t, batch: b, hidden: hidden, reads: reads, buffers: &buffers, compute: compute)
                BLAS.gemm(buffers[1].rows(t * b..<(t + 1) * b), wHidden.value, transposeB: true, alpha: 1, beta: 1, into: &buffers[2],
                          compute: compute)
            }
            let (dInputs, dHidden) = (buffers[0], buffers[1])
            if x.requiresGrad { x.accumulateProduct(dInputs, wInput.value, transposeB: true) }
            if wInput.requiresGrad { wInput.accumulateProduct(x.value, transposeA: true, dInputs) }
            if wHidden.requiresGrad {
                // h_{t−1} of steps 1… is the output of steps …−1; step 0's is zero.
                if steps > 1 {
                    wHidden.accumulateProduct(output.rows(0..<(steps - 1) * b), transposeA: true, dHidden.rows(b..<rows))
                } else {
                    wHidden.accumulate(Matrix(rows: hidden, columns: h3))
                }
            }
        }
    }
}

/// The elementwise parts of a GRU step and its pullback, eight lanes at a time, rows of
/// the batch split over the workers.
enum GRUKernels {
    /// Step t: `state[0]`'s rows (x W_i) become the gates r, z, n; writes h W_hn into
    /// `state[1]` and h' into `state[2]`.
    static func forward(_ t: Int, batch b: Int, hidden: Int, product: Matrix, previous: Matrix, state: inout [Matrix], compute: Compute) {
        let h3 = 3 * hidden
        Matrix.withBuffers(reading: [product, previous], writing: &state) { p in
            compute.forEachChunk(count: b, chunkSize: max(1, 8192 / hidden)) { range in
                for i in range {
                    let row = t * b + i
                    let gates = p.write[0] + row * h3, products = p.read[0] + i * h3, before = p.read[1] + i * hidden
                    let kept = p.write[1] + row * hidden, out = p.write[2] + row * hidden
                    for j in stride(from: 0, to: hidden, by: 8) {
                        let r = Lanes.sigmoid(Lanes.load(gates, j, count: hidden) + Lanes.load(products, j, count: hidden))
                        let z = Lanes.sigmoid(Lanes.load(gates + hidden, j, count: hidden) + Lanes.load(products + hidden, j, count: hidden))
                        let hn = Lanes.load(products + 2 * hidden, j, count: hidden)
                        let n = Lanes.tanh(Lanes.load(gates + 2 * hidden, j, count: hidden) + r * hn)
                        r.store(gates, j, count: hidden)
                        z.store(gates + hidden, j, count: hidden)
                        n.store(gates + 2 * hidden, j, count: hidden)
                        hn.store(kept, j, count: hidden)
                        ((1 - z) * n + z * Lanes.load(before, j, count: hidden)).store(out, j, count: hidden)
                    }
                }
            }
        }
    }

    /// Step t of the pullback: reads the output's gradient, h W_hn and the outputs
    /// (`reads`); turns the step's gate rows of `buffers[0]` into d(x W_i), writes d(h W_h)
    /// into `buffers[1]`, and replaces the carried dL/dh (`buffers[2]`) by its z ⊙ part (the
    /// caller adds the W_hᵀ product).
    static func backward(_ t: Int, batch b: Int, hidden: Int, reads: [Matrix], buffers: inout [Matrix], compute: Compute) {
        let h3 = 3 * hidden
        Matrix.withBuffers(reading: reads, writing: &buffers) { p in
            compute.forEachChunk(count: b, chunkSize: max(1, 8192 / hidden)) { range in
                for i in range {
                    let row = t * b + i
                    let g = p.read[0] + row * hidden, hn = p.read[1] + row * hidden
                    let gates = p.write[0] + row * h3, dHidden = p.write[1] + row * h3, carry = p.write[2] + i * hidden
                    for j in stride(from: 0, to: hidden, by: 8) {
                        let before = t == 0 ? Lanes() : Lanes.load(p.read[2] + (row - b) * hidden, j, count: hidden)
                        let dh = Lanes.load(g, j, count: hidden) + Lanes.load(carry, j, count: hidden)
                        let r = Lanes.load(gates, j, count: hidden), z = Lanes.load(gates + hidden, j, count: hidden)
                        let n = Lanes.load(gates + 2 * hidden, j, count: hidden)
                        let dn = dh * (1 - z) * (1 - n * n)
                        let dz = dh * (before - n) * z * (1 - z)
                        let dr = dn * Lanes.load(hn, j, count: hidden) * r * (1 - r)
                        dr.store(gates, j, count: hidden); dr.store(dHidden, j, count: hidden)
                        dz.store(gates + hidden, j, count: hidden); dz.store(dHidden + hidden, j, count: hidden)
                        dn.store(gates + 2 * hidden, j, count: hidden); (dn * r).store(dHidden + 2 * hidden, j, count: hidden)
                        (dh * z).store(carry, j, count: hidden)
                    }
                }
            }
        }
    }
}
