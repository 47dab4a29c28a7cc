import CLanes
/// Activations whose pullback reuses forward values, as fused passes.
public enum ActivationKernels {
    /// tanh of every element, with the given kernel build, in fixed chunks on the workers.
    public static func tanh(_ x: Matrix, compute: Compute, kernels: KernelSet = .current) -> Matrix {
        guard kernels == .avx2 else { return x.map(compute) { Lanes.tanh($0) } }
        return elementwise(x, compute: compute) { recbench_tanh_avx2($0, $1, $2) }
    }

    /// σ of every element, with the given kernel build, in fixed chunks on the workers (the
    /// AVX2 build: a closure call per vector costs as much as the exponential).
    public static func sigmoid(_ x: Matrix, compute: Compute, kernels: KernelSet = .current) -> Matrix {
        guard kernels == .avx2 else { return x.map(compute) { Lanes.sigmoid($0) } }
        return elementwise(x, compute: compute) { recbench_sigmoid_avx2($0, $1, $2) }
    }

    /// `kernel(input, output, count)` over fixed chunks of x's elements, on the workers.
    static func elementwise(_ x: Matrix, compute: Compute,
                            _ kernel: @Sendable (UnsafePointer<Float>, UnsafeMutablePointer<Float>, Int) -> Void) -> Matrix {
        let count = x.values.count
        var outputs = [Matrix(uninitializedRows: x.rows, columns: x.columns)]
        guard count > 0 else { return outputs[0] }
        Matrix.withBuffers(reading: [x], writing: &outputs) { b in
            compute.forEachChunk(count: count, chunkSize: elementwiseChunk) { range in   // disjoint ranges
                kernel(b.read[0] + range.lowerBound, b.write[0] + range.lowerBound, range.count)
            }
        }
        return outputs[0]
    }

    /// σ's pullback g ⊙ y ⊙ (1 − y) for the forward's output y.
    public static func sigmoidGradient(_ g: Matrix, output y: Matrix, compute: Compute, kernels: KernelSet = .current) -> Matrix {
        guard kernels == .avx2 else { return g.zipMap(y, compute) { g, y in g * y * (1 - y) } }
        let count = g.values.count
        precondition(y.rows == g.rows && y.columns == g.columns, "sigmoidGradient: shapes differ")
        var outputs = [Matrix(uninitializedRows: g.rows, columns: g.columns)]
        guard count > 0 else { return outputs[0] }
        Matrix.withBuffers(reading: [g, y], writing: &outputs) { b in
            compute.forEachChunk(count: count, chunkSize: elementwiseChunk) { range in   // disjoint ranges
                let at = range.lowerBound
                recbench_sigmoid_gradient_avx2(b.read[0] + at, b.read[1] + at, b.write[0] + at, range.count)
            }
        }
        return outputs[0]
    }

    /// GELU of every element (x·Φ(x)), or with `gradient`, the pullback g ⊙ (Φ(x) + x·φ(x)),
    /// with the given kernel build, in fixed chunks on the workers.
    public static func gelu(_ x: Matrix, gradient: Matrix? = nil, compute: Compute, kernels: KernelSet = .current) -> Matrix {
        guard kernels == .avx2 else {
            guard let gradient else { return x.map(compute) { Lanes.gelu($0) } }
            return gradient.zipMap(x, compute) { g, x in g * Lanes.geluSlope(x) }
        }
        let count = x.values.count
        precondition(gradient.map { $0.rows == x.rows && $0.columns == x.columns } ?? true, "gelu: gradient shape")
        var outputs = [Matrix(uninitializedRows: x.rows, columns: x.columns)]
        guard count > 0 else { return outputs[0] }
        Matrix.withBuffers(reading: [x] + (gradient.map { [$0] } ?? []), writing: &outputs) { b in
            compute.forEachChunk(count: count, chunkSize: elementwiseChunk) { range in   // disjoint ranges
                let g = b.read.count > 1 ? b.read[1] + range.lowerBound : nil
                recbench_gelu_avx2(b.read[0] + range.lowerBound, g, b.write[0] + range.lowerBound, range.count)
            }
        }
        return outputs[0]
    }

    /// swish(x) = x · σ(x), and σ(x) (kept for the gradient).
    public static func swish(_ x: Matrix, compute: Compute) -> (value: Matrix, sigmoid: Matrix) {
        let count = x.values.count
        var outputs = [Matrix(uninitializedRows: x.rows, columns: x.columns), Matrix(uninitializedRows: x.rows, columns: x.columns)]
        guard count > 0 else { return (outputs[0], outputs[1]) }
        Matrix.withBuffers(reading: [x], writing: &outputs) { b in
            compute.forEachChunk(count: count, chunkSize: elementwiseChunk) { range in   // disjoint ranges
                let (xp, yp, ss) = (b.read[0], b.write[0], b.write[1])
                for i in stride(from: range.lowerBound, to: range.upperBound, by: 8) {
                    let x = Lanes.load(xp, i, count: count), s = Lanes.sigmoid(x)
                    s.store(ss, i, count: count)
                    (x * s).store(yp, i, count: count)
                }
            }
        }
        return (outputs[0], outputs[1])
    }

    /// d swish: g · (σ + y · (1 − σ)) for the forward's output y and σ.
    public static func swishGradient(_ g: Matrix, value y: Matrix, sigmoid: Matrix, compute: Compute) -> Matrix {
        let count = g.values.count
        var outputs = [Matrix(uninitializedRows: g.rows, columns: g.columns)]
        guard count > 0 else { return outputs[0] }
        Matrix.withBuffers(reading: [g, y, sigmoid], writing: &outputs) { b in
            compute.forEachChunk(count: count, chunkSize: elementwiseChunk) { range in
                let (dd, gg, yy, ss) = (b.write[0], b.read[0], b.read[1], b.read[2])
                for i in stride(from: range.lowerBound, to: range.upperBound, by: 8) {
                    let s = Lanes.load(ss, i, count: count)
                    (Lanes.load(gg, i, count: count) * (s + Lanes.load(yy, i, count: count) * (1 - s))).store(dd, i, count: count)
                }
            }
        }
        return outputs[0]
    }
}

/// An activation that follows another elementwise pass inside one kernel (batch norm's), so
/// its input is never stored: applied to a chunk while it is in cache, and its pullback taken
/// from its output.
public enum PointwiseActivation: String, Sendable {
    case relu, tanh, sigmoid

    /// f on `count` floats at `p`, in place: the same arithmetic as `ActivationKernels`' and
    /// the tape's ops, so a fused pass gives their values to the bit.
    @inline(__always)
    func apply(_ p: UnsafeMutablePointer<Float>, count: Int, kernels: KernelSet) {
        switch (self, kernels) {
        case (.sigmoid, .avx2): recbench_sigmoid_avx2(p, p, count)
        case (.tanh, .avx2): recbench_tanh_avx2(p, p, count)
        case (.relu, _), (.tanh, .baseline), (.sigmoid, .baseline):
            for i in stride(from: 0, to: count, by: 8) { apply(Lanes.load(p, i, count: count)).store(p, i, count: count) }
        }
    }

    /// f on every element of `m` (tanh and σ through their vector kernels).
    public func apply(_ m: Matrix, compute: Compute) -> Matrix {
        switch self {
        case .relu: m.map(compute) { Lanes.relu($0) }
        case .tanh: ActivationKernels.tanh(m, compute: compute)
        case .sigmoid: ActivationKernels.sigmoid(m, compute: compute)
        }
    }

    /// f per lane (the baseline build's).
    @inline(__always)
    public func apply(_ x: Lanes) -> Lanes {
        switch self {
        case .relu: Lanes.relu(x)
        case .tanh: Lanes.tanh(x)
        case .sigmoid: Lanes.sigmoid(x)
        }
    }

    /// The C kernels' code for this activation (`RECBENCH_ACT_*`).
    var code: Int32 {
        switch self {
        case .relu: Int32(RECBENCH_ACT_RELU)
        case .tanh: Int32(RECBENCH_ACT_TANH)
        case .sigmoid: Int32(RECBENCH_ACT_SIGMOID)
        }
    }

    /// g ⊙ f′ from f's output y, as the tape's pullbacks compute it.
    @inline(__always)
    public func pullback(_ g: Lanes, output y: Lanes) -> Lanes {
        switch self {
        case .relu: Lanes.reluGradient(g, output: y)
        case .tanh: g * (1 - y * y)
        case .sigmoid: g * y * (1 - y)
        }
    }
}
