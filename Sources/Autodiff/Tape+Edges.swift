import Linalg

/// Products over a graph's edges whose weights differ per column group (K = the weights'
/// columns; group k is columns k·c ..< (k + 1)·c of the node rows, c = width / K). Both read
/// the node rows in place (`EdgeKernels`): no edges × width block is built, where gathering
/// the rows, scaling them and scattering them back took three.
extension Tape {
    /// F(h)_k = Σ_{e: h → t} w_ek · x(t)_k (DGCF's per-intent propagation). Pullback:
    /// dx(t)_k = Σ_{e: h → t} w_ek · dF(h)_k, dw_ek = ⟨dF(h)_k, x(t)_k⟩.
    public func factorPropagation(_ x: Variable, weights w: Variable, over edges: EdgeIndex) -> Variable {
        let compute = self.compute
        let value = EdgeKernels.propagate(x.value, weights: w.value, over: edges, to: .heads, compute: compute)
        let out = Variable(value, requiresGrad: x.requiresGrad || w.requiresGrad)
        return record(out) {
            let g = out.grad!
            if w.requiresGrad { w.accumulate(EdgeKernels.edgeDots(g, x.value, over: edges, factors: w.value.columns, compute: compute)) }
            if x.requiresGrad { x.accumulate(EdgeKernels.propagate(g, weights: w.value, over: edges, to: .tails, compute: compute)) }
        }
    }

    /// d_ek = ⟨x(h)_k, y(t)_k⟩ for every edge h → t and each of `factors` groups (edges × factors).
    /// Pullback: dx(h)_k = Σ_{e: h → t} g_ek · y(t)_k, dy(t)_k = Σ_{e: h → t} g_ek · x(h)_k.
    public func edgeFactorDots(_ x: Variable, _ y: Variable, over edges: EdgeIndex, factors: Int) -> Variable {
        let compute = self.compute
        let out = Variable(EdgeKernels.edgeDots(x.value, y.value, over: edges, factors: factors, compute: compute),
                           requiresGrad: x.requiresGrad || y.requiresGrad)
        return record(out) {
            let g = out.grad!
            if x.requiresGrad { x.accumulate(EdgeKernels.propagate(y.value, weights: g, over: edges, to: .heads, compute: compute)) }
            if y.requiresGrad { y.accumulate(EdgeKernels.propagate(x.value, weights: g, over: edges, to: .tails, compute: compute)) }
        }
    }
}
