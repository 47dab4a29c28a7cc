import Linalg
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// Draws indices from a fixed discrete distribution in O(1) per draw (Walker's alias
/// method, Vose's construction): one uniform column and one uniform coin.
public struct AliasTable: Sendable {
    private let probability: [Float]
    private let alias: [Int32]

    /// A table for the given non-negative weights (at least one positive).
    public init(weights: [Double]) {
        let n = weights.count
        let total = weights.reduce(0, +)
        precondition(n > 0 && total > 0, "AliasTable needs a positive weight")
        var scaled = weights.map { $0 * Double(n) / total }
        var probability = [Float](repeating: 1, count: n)
        var alias = [Int32](repeating: 0, count: n)
        var small = (0..<n).filter { scaled[$0] < 1 }, large = (0..<n).filter { scaled[$0] >= 1 }
        while let s = small.popLast(), let l = large.last {
            probability[s] = Float(scaled[s])
            alias[s] = Int32(l)
            scaled[l] -= 1 - scaled[s]
            if scaled[l] < 1 { large.removeLast(); small.append(l) }
        }
        for i in large + small { probability[i] = 1; alias[i] = Int32(i) }   // rounding leftovers
        self.probability = probability
        self.alias = alias
    }

    /// Number of outcomes.
    public var count: Int { probability.count }

    /// One draw.
    @inline(__always)
    public func draw(_ rng: inout SeededGenerator) -> Int32 {
        let bits = rng.next()
        let column = Int(((bits >> 32) &* UInt64(probability.count)) >> 32)   // top 32 bits → column
        let coin = Float(bits & 0xFF_FFFF) * (1.0 / Float(1 << 24))       // low 24 bits → coin
        return coin < probability[column] ? Int32(column) : alias[column]
    }
}
