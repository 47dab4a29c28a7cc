import Linalg

extension Tape {
    /// A causal dilated convolution over time (NextItNet's `Conv2d` with a 1 × K kernel on
    /// left zero-padded steps): sequences are `steps` consecutive rows of `x` (rows × C), and
    ///
    ///     y_t = b + Σ_k x_{t − (K−1−k)·dilation} W_k        (x before the sequence's start is 0)
    ///
    /// with `weight` (K·C) × C′ holding W_0 … W_{K−1} top to bottom (torch's kernel index k).
    /// The taps are copied side by side (im2col) a block of sequences at a time, each block one
    /// GEMM on one worker while its taps are in cache (`ConvolutionKernels`).
    public func causalConvolution(_ x: Variable, weight: Variable, bias: Variable, steps: Int, dilation: Int) -> Variable {
        let shifts = Self.convolutionShifts(x, weight: weight, steps: steps, dilation: dilation)
        let value = ConvolutionKernels.forward(x.value, weight: weight.value, bias: bias.value, steps: steps, shifts: shifts, compute: compute)
        let out = Variable(value, requiresGrad: x.requiresGrad || weight.requiresGrad || bias.requiresGrad)
        return record(out) { self.convolutionPullback(out.grad!, x, weight: weight, bias: bias, steps: steps, shifts: shifts) }
    }

    /// LN(`causalConvolution`) with the layer norm's scale and shift (and a relu after it when
    /// asked: NextItNet's relu(LN(conv(x)))) as one op: each block of the convolution is
    /// normalised while in cache and never stored. The same values and gradients as the two ops.
    public func causalConvolution(_ x: Variable, weight: Variable, bias: Variable, steps: Int, dilation: Int,
                                  layerNorm gamma: Variable, _ beta: Variable, eps: Float, relu: Bool) -> Variable {
        let shifts = Self.convolutionShifts(x, weight: weight, steps: steps, dilation: dilation)
        let (value, normalized, inverseStd) = ConvolutionKernels.forwardNormalized(
            x.value, weight: weight.value, bias: bias.value, steps: steps, shifts: shifts, scale: gamma.value, shift: beta.value, eps: eps,
            relu: relu, compute: compute)
        let out = Variable(value, requiresGrad: [x, weight, bias, gamma, beta].contains { $0.requiresGrad })
        return record(out, op: "causalConvolutionLayerNorm") {
            let convolved = x.requiresGrad || weight.requiresGrad || bias.requiresGrad
            let d = LayerNormKernels.backward(out.grad!, output: relu ? out.value : nil, normalized: normalized, inverseStd: inverseStd,
                                              scale: gamma.value, keep: nil, inputs: convolved, compute: self.compute)
            Self.accumulateAffine(d.sums, scale: gamma, shift: beta)
            if let dy = d.dx { self.convolutionPullback(dy, x, weight: weight, bias: bias, steps: steps, shifts: shifts) }
        }
    }

    private static func convolutionShifts(_ x: Variable, weight: Variable, steps: Int, dilation: Int) -> [Int] {
        let c = x.value.columns, kernel = weight.value.rows / max(1, c)
        precondition(kernel * c == weight.value.rows && steps > 0 && x.value.rows % steps == 0 && dilation > 0,
                     "causalConvolution: weight rows must be kernel × channels, rows whole sequences of \(steps) steps")
        return (0..<kernel).map { (kernel - 1 - $0) * dilation }
    }

    /// The convolution's gradients given dL/dy `g`.
    private func convolutionPullback(_ g: Matrix, _ x: Variable, weight: Variable, bias: Variable, steps: Int, shifts: [Int]) {
        let grads = ConvolutionKernels.backward(g, x: x.value, weight: weight.value, steps: steps, shifts: shifts, input: x.requiresGrad,
                                                weight: weight.requiresGrad, compute: compute)
        if let dw = grads.weight { weight.accumulate(dw) }
        if bias.requiresGrad { bias.accumulate(g.columnSums(compute)) }
        if let dx = grads.x { x.accumulate(dx) }
    }
}
