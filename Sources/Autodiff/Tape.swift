import Foundation
import Linalg

/// Reverse-mode autodiff: ops record pullbacks in execution order; `backward` runs them in
/// reverse (micrograd's design over matrices).
public final class Tape {
    private var pullbacks: [(output: Variable, run: () -> Void)] = []
    /// The threads the ops and their pullbacks may use.
    public let compute: Compute
    /// Where op times go, when profiling.
    public let profile: OpProfile?
    /// When the previous op was recorded (profiling only).
    private var mark = ContinuousClock.now
    /// Model state the batch's forward pass moved (BatchNorm's running statistics), by
    /// parameter name: the trainer writes it into the parameters after the step.
    public private(set) var statistics: [String: Matrix] = [:]

    /// An empty tape whose ops run with `compute`, charging their times to `profile` if given.
    public init(compute: Compute, profile: OpProfile? = nil) {
        self.compute = compute
        self.profile = profile
    }

    /// A trainable leaf (gradient wanted).
    public func parameter(_ value: Matrix) -> Variable {
        let leaf = Variable(value, requiresGrad: true)
        leaf.compute = compute
        return leaf
    }

    /// Records the new value of the running statistic `name`.
    public func setStatistic(_ name: String, _ value: Matrix) { statistics[name] = value }

    /// A constant leaf (no gradient).
    public func constant(_ value: Matrix) -> Variable { Variable(value) }

    /// Records the result of an op: `pullback` runs during `backward` when `output` needs a
    /// gradient. Ops outside this module (test references, new layers) use it too; `op`
    /// names the op in a profile.
    public func record(_ output: Variable, op: String = #function, _ pullback: @escaping () -> Void) -> Variable {
        output.compute = compute
        guard let profile else {
            if output.requiresGrad { pullbacks.append((output, pullback)) }
            return output
        }
        let now = ContinuousClock.now, name = OpProfile.opName(op)
        profile.charge(name, forward: (now - mark).seconds)
        mark = now
        if output.requiresGrad {
            pullbacks.append((output, {
                let start = ContinuousClock.now
                pullback()
                profile.charge(name, backward: (ContinuousClock.now - start).seconds, calls: 0)
            }))
        }
        return output
    }

    /// d(loss)/d(every node): seeds the 1×1 `loss` with 1 and runs the pullbacks in reverse.
    public func backward(_ loss: Variable) {
        precondition(loss.value.rows == 1 && loss.value.columns == 1, "backward needs a scalar loss")
        loss.accumulate(Matrix(rows: 1, columns: 1, repeating: 1))
        // An output the loss never reached has no gradient: its pullback has nothing to pass back (a
        // term scaled by a weight of 0 that a model leaves out, say, after its lookups were recorded).
        for pullback in pullbacks.reversed() where pullback.output.grad != nil { pullback.run() }
        pullbacks.removeAll()
    }
}
