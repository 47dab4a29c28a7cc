import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// A model's named parameter matrices, in a fixed order. A value type: keeping the best
/// epoch's parameters is a copy (copy-on-write, so it costs nothing until training moves on).
public struct Parameters: Sendable, Equatable {
    /// Names in creation order.
    public private(set) var names: [String] = []
    private var tensors: [String: Matrix] = [:]
    /// Names of running statistics: model state the forward pass moves, never trained.
    public private(set) var statistics: Set<String> = []

    /// No parameters yet.
    public init() {}

    /// The matrix called `name`.
    public subscript(name: String) -> Matrix {
        get { tensors[name]! }
        set {
            precondition(tensors[name] != nil, "unknown parameter \(name)")
            tensors[name] = newValue
        }
    }

    /// Mutates the parameter `name` in place (no copy when its storage is not shared).
    public mutating func update(_ name: String, _ body: (inout Matrix) -> Void) {
        precondition(tensors[name] != nil, "unknown parameter \(name)")
        body(&tensors[name]!)
    }

    /// Adds a parameter.
    public mutating func add(_ name: String, _ value: Matrix) {
        precondition(tensors[name] == nil, "parameter \(name) added twice")
        names.append(name)
        tensors[name] = value
    }

    /// Adds a running statistic (a constant leaf on the tape; the trainer writes what the
    /// batch's forward pass recorded for it).
    public mutating func addStatistic(_ name: String, _ value: Matrix) {
        add(name, value)
        statistics.insert(name)
    }

    /// Copies `other`'s values into this set's own storage (same names and shapes), in
    /// parallel. The trainer keeps the best epoch this way: a plain assignment would share
    /// storage with the live parameters, and the next optimizer step would then copy all of
    /// them on one thread.
    public mutating func overwrite(with other: Parameters, compute: Compute) {
        precondition(names == other.names, "overwrite: parameter names differ")
        for name in names {
            let source = other.tensors[name]!
            update(name) { target in
                precondition(target.rows == source.rows && target.columns == source.columns, "overwrite: \(name) changed shape")
                target.values.withUnsafeMutableBufferPointer { t in
                    source.values.withUnsafeBufferPointer { s in
                        let p = UnsafeShared((t.baseAddress!, s.baseAddress!))   // disjoint ranges
                        compute.forEachChunk(count: t.count, chunkSize: 1 << 16) { range in
                            (p.value.0 + range.lowerBound).update(from: p.value.1 + range.lowerBound, count: range.count)
                        }
                    }
                }
            }
        }
    }

    /// Number of scalars.
    public var scalarCount: Int { tensors.values.reduce(0) { $0 + $1.values.count } }

    /// Whether every parameter is finite (checked after every epoch).
    public func isFinite(compute: Compute) -> Bool { tensors.values.allSatisfy { $0.isFinite(compute: compute) } }
}

/// Seeded initialisers, as RecBole's `xavier_normal_initialization` and torch's defaults.
public enum Initializer {
    /// Normal(0, std) samples (Box–Muller over the seeded generator).
    public static func normal(rows: Int, columns: Int, std: Float, rng: inout SeededGenerator) -> Matrix {
        var m = Matrix(rows: rows, columns: columns)
        var i = 0
        while i < m.values.count {
            let u1 = max(Float.leastNormalMagnitude, 1 - rng.nextUnitFloat()), u2 = rng.nextUnitFloat()
            let radius = (-2 * log(u1)).squareRoot()
            m.values[i] = std * radius * cos(2 * .pi * u2)
            if i + 1 < m.values.count { m.values[i + 1] = std * radius * sin(2 * .pi * u2) }
            i += 2
        }
        return m
    }

    /// Gumbel(0, 1) samples, −log(E) for E ~ Exp(1) (torch's `gumbel_softmax` noise).
    public static func gumbel(rows: Int, columns: Int, rng: inout SeededGenerator) -> Matrix {
        var m = Matrix(rows: rows, columns: columns)
        for i in 0..<m.values.count {
            // u is moved half a step off the grid into (0, 1), so E = −log u is finite and positive.
            let u = rng.nextUnitFloat() + 0.5 / Float(1 << 24)
            m.values[i] = -log(-log(u))
        }
        return m
    }

    /// U(−1/√fanIn, 1/√fanIn) samples: torch's default for a linear layer's weight and bias
    /// (Kaiming-uniform with a = √5).
    public static func torchLinear(fanIn: Int, rows: Int, columns: Int, rng: inout SeededGenerator) -> Matrix {
        uniform(rows: rows, columns: columns, bound: 1 / Float(fanIn).squareRoot(), rng: &rng)
    }

    /// U(−bound, bound) samples (Xavier-uniform with bound √(6 / (fanIn + fanOut))).
    public static func uniform(rows: Int, columns: Int, bound: Float, rng: inout SeededGenerator) -> Matrix {
        var m = Matrix(rows: rows, columns: columns)
        for i in 0..<m.values.count { m.values[i] = bound * (2 * rng.nextUnitFloat() - 1) }
        return m
    }

    /// Xavier (Glorot) normal for a fanIn × fanOut weight: std = √(2 / (fanIn + fanOut)).
    public static func xavierNormal(fanIn: Int, fanOut: Int, rng: inout SeededGenerator) -> Matrix {
        normal(rows: fanIn, columns: fanOut, std: (2 / Float(fanIn + fanOut)).squareRoot(), rng: &rng)
    }
}

import Foundation

extension Parameters {
    /// A copy with storage of its own (a plain assignment shares it until the next write).
    public func copy() -> Parameters {
        var fresh = Parameters()
        for name in names {
            let m = self[name], value = Matrix(rows: m.rows, columns: m.columns, values: m.values.withUnsafeBufferPointer { Array($0) })
            if statistics.contains(name) { fresh.addStatistic(name, value) } else { fresh.add(name, value) }
        }
        return fresh
    }
}

extension Tape {
    /// Every parameter as a leaf: trainable when `trainable(name)` and not a running statistic, else constant.
    public func leaves(_ parameters: Parameters, trainable: (String) -> Bool = { _ in true }) -> [String: Variable] {
        Dictionary(uniqueKeysWithValues: parameters.names.map { name in
            (name, trainable(name) && !parameters.statistics.contains(name) ? parameter(parameters[name]) : constant(parameters[name]))
        })
    }

    /// The gradients of the trainable leaves (zero for a leaf the loss did not reach).
    public static func gradients(_ leaves: [String: Variable]) -> [String: Matrix] {
        var g: [String: Matrix] = [:]
        for (name, v) in leaves where v.requiresGrad {
            g[name] = v.grad ?? Matrix(rows: v.value.rows, columns: v.value.columns)
        }
        return g
    }
}
