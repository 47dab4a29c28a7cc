import CLanes

/// The elementwise parts of a GRU step and its pullback (`Tape.gru`), eight lanes at a time,
/// rows of the step split over the workers; an AVX2+FMA build of each row where the CPU has it.
public enum GRUKernels {
    /// Where step t's rows are in the packed layout: its first row, the first row of the
    /// step before (nil at step 0: h₀ = 0), how many sequences run, and H.
    public struct Step: Sendable {
        let first: Int, previous: Int?, count: Int, hidden: Int
        public init(_ t: Int, _ offsets: [Int], count: Int, hidden: Int) {
            first = offsets[t]; previous = t > 0 ? offsets[t - 1] : nil; self.count = count; self.hidden = hidden
        }
    }

    /// One step: `state[0]`'s rows (x W_i) become the gates r, z, n; writes h W_hn (the
    /// step's `product` rows) into `state[1]` and h' into `state[2]`.
    public static func forward(_ step: Step, product: Matrix, state: inout [Matrix], compute: Compute, kernels: KernelSet = .current) {
        let hidden = step.hidden, h3 = 3 * hidden, avx2 = kernels == .avx2
        Matrix.withBuffers(reading: [product], writing: &state) { p in
            compute.forEachChunk(count: step.count, chunkSize: max(1, 8192 / hidden)) { range in
                for i in range {
                    let row = step.first + i
                    let gates = p.write[0] + row * h3, products = p.read[0] + i * h3
                    let before = step.previous.map { p.write[2] + ($0 + i) * hidden }
                    let kept = p.write[1] + row * hidden, out = p.write[2] + row * hidden
                    if avx2 { recbench_gru_forward_avx2(gates, products, before, kept, out, hidden); continue }
                    for j in stride(from: 0, to: hidden, by: 8) {
                        let r = Lanes.sigmoid(Lanes.load(gates, j, count: hidden) + Lanes.load(products, j, count: hidden))
                        let z = Lanes.sigmoid(Lanes.load(gates + hidden, j, count: hidden) + Lanes.load(products + hidden, j, count: hidden))
                        let hn = Lanes.load(products + 2 * hidden, j, count: hidden)
                        let n = Lanes.tanh(Lanes.load(gates + 2 * hidden, j, count: hidden) + r * hn)
                        let h = before.map { Lanes.load($0, j, count: hidden) } ?? Lanes()
                        r.store(gates, j, count: hidden)
                        z.store(gates + hidden, j, count: hidden)
                        n.store(gates + 2 * hidden, j, count: hidden)
                        hn.store(kept, j, count: hidden)
                        ((1 - z) * n + z * h).store(out, j, count: hidden)
                    }
                }
            }
        }
    }

    /// One step of the pullback: reads the output's gradient, h W_hn and the outputs
    /// (`reads`); turns the step's gate rows of `buffers[0]` into d(x W_i), writes d(h W_h)
    /// into `buffers[1]`, and replaces the carried dL/dh (`buffers[2]`, a row per running
    /// sequence) by its z ⊙ part (the caller adds the W_hᵀ product).
    public static func backward(_ step: Step, reads: [Matrix], buffers: inout [Matrix], compute: Compute, kernels: KernelSet = .current) {
        let hidden = step.hidden, h3 = 3 * hidden, avx2 = kernels == .avx2
        Matrix.withBuffers(reading: reads, writing: &buffers) { p in
            compute.forEachChunk(count: step.count, chunkSize: max(1, 8192 / hidden)) { range in
                for i in range {
                    let row = step.first + i
                    let g = p.read[0] + row * hidden, hn = p.read[1] + row * hidden
                    let before = step.previous.map { p.read[2] + ($0 + i) * hidden }
                    let gates = p.write[0] + row * h3, dHidden = p.write[1] + row * h3, carry = p.write[2] + i * hidden
                    if avx2 { recbench_gru_backward_avx2(g, hn, before, gates, dHidden, carry, hidden); continue }
                    for j in stride(from: 0, to: hidden, by: 8) {
                        let h = before.map { Lanes.load($0, j, count: hidden) } ?? Lanes()
                        let dh = Lanes.load(g, j, count: hidden) + Lanes.load(carry, j, count: hidden)
                        let r = Lanes.load(gates, j, count: hidden), z = Lanes.load(gates + hidden, j, count: hidden)
                        let n = Lanes.load(gates + 2 * hidden, j, count: hidden)
                        let dn = dh * (1 - z) * (1 - n * n)
                        let dz = dh * (h - n) * z * (1 - z)
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
