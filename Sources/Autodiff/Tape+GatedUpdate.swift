import Linalg

extension Tape {
    /// SR-GNN's gated update of node states as one op (its gates from two fused products,
    /// as `gru`'s cell, but z weighs the new state, not the old):
    ///
    ///     r = σ(gi_r + gh_r),  z = σ(gi_z + gh_z),  n = tanh(gi_n + r ⊙ gh_n)
    ///     h' = (1 − z) ⊙ h + z ⊙ n
    ///
    /// `gi` and `gh` are rows × 3H (blocks r, z, n side by side), `h` rows × H. The gates are
    /// kept for the pullback; no per-gate matrix goes on the tape.
    public func gatedUpdate(inputs gi: Variable, hidden gh: Variable, state h: Variable) -> Variable {
        let rows = h.value.rows, hidden = h.value.columns, h3 = 3 * hidden, compute = self.compute
        precondition(gi.value.columns == h3 && gh.value.columns == h3 && gi.value.rows == rows && gh.value.rows == rows,
                     "gatedUpdate: gates must be rows × 3H beside a rows × H state")
        var written = [Matrix(uninitializedRows: rows, columns: h3), Matrix(uninitializedRows: rows, columns: hidden)]   // r, z, n; h'
        Matrix.withBuffers(reading: [gi.value, gh.value, h.value], writing: &written) { p in
            compute.forEachChunk(count: rows, chunkSize: max(1, 8192 / max(1, hidden))) { range in
                for i in range {
                    let (a, b, gates) = (p.read[0] + i * h3, p.read[1] + i * h3, p.write[0] + i * h3)
                    for j in stride(from: 0, to: hidden, by: 8) {
                        let r = Lanes.sigmoid(Lanes.load(a, j, count: hidden) + Lanes.load(b, j, count: hidden))
                        let z = Lanes.sigmoid(Lanes.load(a + hidden, j, count: hidden) + Lanes.load(b + hidden, j, count: hidden))
                        let n = Lanes.tanh(Lanes.load(a + 2 * hidden, j, count: hidden) + r * Lanes.load(b + 2 * hidden, j, count: hidden))
                        r.store(gates, j, count: hidden); z.store(gates + hidden, j, count: hidden); n.store(gates + 2 * hidden, j, count: hidden)
                        ((1 - z) * Lanes.load(p.read[2] + i * hidden, j, count: hidden) + z * n).store(p.write[1] + i * hidden, j, count: hidden)
                    }
                }
            }
        }
        let gates = written[0]
        let out = Variable(written[1], requiresGrad: gi.requiresGrad || gh.requiresGrad || h.requiresGrad)
        return record(out) {
            let grads = Self.gatedUpdateGradients(out.grad!, gates: gates, hidden: gh.value, state: h.value, compute: compute)
            if gi.requiresGrad { gi.accumulate(grads[0]) }
            if gh.requiresGrad { gh.accumulate(grads[1]) }
            if h.requiresGrad { h.accumulate(grads[2]) }
        }
    }

    /// d gi, d gh and dh of `gatedUpdate` from dL/dh'.
    private static func gatedUpdateGradients(_ g: Matrix, gates: Matrix, hidden gh: Matrix, state h: Matrix, compute: Compute) -> [Matrix] {
        let rows = h.rows, hidden = h.columns, h3 = 3 * hidden
        var grads = [Matrix(uninitializedRows: rows, columns: h3), Matrix(uninitializedRows: rows, columns: h3),
                     Matrix(uninitializedRows: rows, columns: hidden)]
        Matrix.withBuffers(reading: [g, gates, gh, h], writing: &grads) { p in
            compute.forEachChunk(count: rows, chunkSize: max(1, 8192 / max(1, hidden))) { range in
                for i in range {
                    let (gates, b, di, dh) = (p.read[1] + i * h3, p.read[2] + i * h3, p.write[0] + i * h3, p.write[1] + i * h3)
                    for j in stride(from: 0, to: hidden, by: 8) {
                        let dOut = Lanes.load(p.read[0] + i * hidden, j, count: hidden), old = Lanes.load(p.read[3] + i * hidden, j, count: hidden)
                        let r = Lanes.load(gates, j, count: hidden), z = Lanes.load(gates + hidden, j, count: hidden)
                        let n = Lanes.load(gates + 2 * hidden, j, count: hidden)
                        let dn = dOut * z * (1 - n * n)
                        let dz = dOut * (n - old) * z * (1 - z)
                        let dr = dn * Lanes.load(b + 2 * hidden, j, count: hidden) * r * (1 - r)
                        dr.store(di, j, count: hidden); dr.store(dh, j, count: hidden)
                        dz.store(di + hidden, j, count: hidden); dz.store(dh + hidden, j, count: hidden)
                        dn.store(di + 2 * hidden, j, count: hidden); (dn * r).store(dh + 2 * hidden, j, count: hidden)
                        (dOut * (1 - z)).store(p.write[2] + i * hidden, j, count: hidden)
                    }
                }
            }
        }
        return grads
    }
}
