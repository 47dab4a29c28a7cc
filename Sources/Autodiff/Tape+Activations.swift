import Foundation
import Linalg

/// Elementwise nonlinearities.
extension Tape {
    /// tanh(a).
    public func tanh(_ a: Variable) -> Variable {
        let compute = self.compute
        let out = Variable(ActivationKernels.tanh(a.value, compute: compute), requiresGrad: a.requiresGrad)
        return record(out) { a.accumulate(out.grad!.zipMap(out.value, compute) { g, y in g * (1 - y * y) }) }
    }

    /// swish(a) = a · σ(a); σ is kept from the forward pass for the pullback.
    public func swish(_ a: Variable) -> Variable {
        let compute = self.compute
        let (value, sigmoid) = ActivationKernels.swish(a.value, compute: compute)
        let out = Variable(value, requiresGrad: a.requiresGrad)
        return record(out) { a.accumulate(ActivationKernels.swishGradient(out.grad!, value: out.value, sigmoid: sigmoid, compute: compute)) }
    }

    /// max(a, 0).
    public func relu(_ a: Variable) -> Variable {
        let compute = self.compute
        let out = Variable(a.value.map(compute) { Lanes.relu($0) }, requiresGrad: a.requiresGrad)
        return record(out) { a.accumulate(out.grad!.zipMap(out.value, compute) { g, y in Lanes.reluGradient(g, output: y) }) }
    }

    /// max(a, 0) + slope · min(a, 0) (torch's LeakyReLU).
    public func leakyRelu(_ a: Variable, slope: Float) -> Variable {
        let compute = self.compute
        let out = Variable(a.value.map(compute) { x in x.replacing(with: x * slope, where: x .< 0) }, requiresGrad: a.requiresGrad)
        return record(out) { a.accumulate(out.grad!.zipMap(a.value, compute) { g, x in g.replacing(with: g * slope, where: x .< 0) }) }
    }

    /// log σ(a), computed stably.
    public func logSigmoid(_ a: Variable) -> Variable {
        let compute = self.compute
        var value = Matrix(uninitializedRows: a.value.rows, columns: a.value.columns)
        for i in 0..<value.values.count { let x = a.value.values[i]; value.values[i] = min(x, 0) - log1p(Foundation.exp(-abs(x))) }
        let out = Variable(value, requiresGrad: a.requiresGrad)
        return record(out) { a.accumulate(out.grad!.zipMap(a.value, compute) { g, x in g * Lanes.sigmoid(-x) }) }
    }

    /// exp(a).
    public func exp(_ a: Variable) -> Variable {
        let compute = self.compute
        let out = Variable(a.value.map(compute) { Lanes.exp($0) }, requiresGrad: a.requiresGrad)
        return record(out) { a.accumulate(out.grad!.zipMap(out.value, compute) { $0 * $1 }) }
    }

    /// √a for a ≥ 0 (a distance from its square); the gradient ½ / √a.
    public func sqrt(_ a: Variable) -> Variable {
        var value = a.value
        for i in 0..<value.values.count { value.values[i] = value.values[i].squareRoot() }
        let out = Variable(value, requiresGrad: a.requiresGrad)
        return record(out) {
            var d = out.grad!
            for i in 0..<d.values.count { d.values[i] *= 0.5 / out.value.values[i] }
            a.accumulate(d)
        }
    }

    /// 1 / √max(a, floor), elementwise (a graph's D^{−½} with RecBole's clamp of empty degrees);
    /// the gradient is −½ y³ where a > floor, else 0.
    public func reciprocalSqrt(_ a: Variable, floor: Float) -> Variable {
        var value = a.value
        for i in 0..<value.values.count { value.values[i] = 1 / Swift.max(value.values[i], floor).squareRoot() }
        let out = Variable(value, requiresGrad: a.requiresGrad)
        return record(out) {
            var d = out.grad!
            for i in 0..<d.values.count {
                let y = out.value.values[i]
                d.values[i] *= a.value.values[i] > floor ? -0.5 * y * y * y : 0
            }
            a.accumulate(d)
        }
    }

    /// a².
    public func square(_ a: Variable) -> Variable {
        let compute = self.compute
        let out = Variable(a.value.map(compute) { $0 * $0 }, requiresGrad: a.requiresGrad)
        return record(out) { a.accumulate(out.grad!.zipMap(a.value, compute) { g, x in 2 * x * g }) }
    }

    /// σ(a) = 1 / (1 + e^−a).
    public func sigmoid(_ a: Variable) -> Variable {
        let compute = self.compute
        let out = Variable(ActivationKernels.sigmoid(a.value, compute: compute), requiresGrad: a.requiresGrad)
        return record(out) { a.accumulate(ActivationKernels.sigmoidGradient(out.grad!, output: out.value, compute: compute)) }
    }
}

extension PointwiseActivation {
    /// f on the tape, as its own op.
    public func callAsFunction(_ x: Variable, tape: Tape) -> Variable {
        switch self {
        case .relu: tape.relu(x)
        case .tanh: tape.tanh(x)
        case .sigmoid: tape.sigmoid(x)
        }
    }
}
