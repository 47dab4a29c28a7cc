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
        let c = x.value.columns, kernel = weight.value.rows / max(1, c), compute = self.compute
        precondition(kernel * c == weight.value.rows && steps > 0 && x.value.rows % steps == 0 && dilation > 0,
                     "causalConvolution: weight rows must be kernel × channels, rows whole sequences of \(steps) steps")
        let shifts = (0..<kernel).map { (kernel - 1 - $0) * dilation }
        let value = ConvolutionKernels.forward(x.value, weight: weight.value, bias: bias.value, steps: steps, shifts: shifts, compute: compute)
        let out = Variable(value, requiresGrad: x.requiresGrad || weight.requiresGrad || bias.requiresGrad)
        return record(out) {
            let g = out.grad!
            let grads = ConvolutionKernels.backward(g, x: x.value, weight: weight.value, steps: steps, shifts: shifts, input: x.requiresGrad,
                                                    weight: weight.requiresGrad, compute: compute)
            if let dw = grads.weight { weight.accumulate(dw) }
            if bias.requiresGrad { bias.accumulate(g.columnSums(compute)) }
            if let dx = grads.x { x.accumulate(dx) }
        }
    }
}
