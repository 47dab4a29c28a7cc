import Foundation
import Linalg
import RecBenchData

/// A finished trial as a sampler sees it: its values and how it ended.
public struct TrialObservation: Sendable {
    public let values: [String: ConfigValue]
    /// The objective as a loss (smaller is better); nil for a trial that failed.
    public let loss: Double?
    /// Whether the pruner ended it (its loss is then the best value it reached).
    public let pruned: Bool

    public init(values: [String: ConfigValue], loss: Double?, pruned: Bool = false) {
        self.values = values; self.loss = loss; self.pruned = pruned
    }
}

/// Proposes the values of a trial. The proposal depends only on the seed, the trial's number
/// and the observations, so a resumed search proposes what the killed one would have.
public protocol TrialSampler: Sendable {
    /// The name recorded with the search (`random`, `tpe`).
    var name: String { get }
    func propose(trial: Int, space: SearchSpace, history: [TrialObservation], seed: UInt64) -> [String: ConfigValue]
}

/// Independent uniform draws from each dimension's distribution.
public struct RandomSampler: TrialSampler {
    public var name: String { "random" }
    public init() {}

    public func propose(trial: Int, space: SearchSpace, history: [TrialObservation], seed: UInt64) -> [String: ConfigValue] {
        var rng = SeededGenerator(seed: seed, stream: 0x7475_6E65_0000_0000 &+ UInt64(trial))
        var values: [String: ConfigValue] = [:]
        for d in space.dimensions {
            values[d.name] = SearchCoordinate.value(of: d.distribution, at: SearchCoordinate.uniformDraw(d.distribution, rng: &rng))
        }
        return values
    }
}

/// The Tree-structured Parzen Estimator (Bergstra et al. 2011, as hyperopt and Optuna define
/// it): after `startupTrials` random ones, the observations are split at the γ quantile of
/// the loss into good and bad; per dimension a Parzen estimator l (good) and g (bad) is fitted,
/// `candidates` values are drawn from l, and the one with the largest l/g is proposed. Pruned
/// trials count as bad; failed ones are left out.
public struct TPESampler: TrialSampler {
    public var name: String { "tpe" }
    public var startupTrials = 10
    public var gamma = 0.25
    public var candidates = 24

    public init(startupTrials: Int = 10) { self.startupTrials = startupTrials }

    public func propose(trial: Int, space: SearchSpace, history: [TrialObservation], seed: UInt64) -> [String: ConfigValue] {
        let scored = history.filter { $0.loss != nil }
        guard scored.count >= startupTrials, scored.count >= 2 else {
            return RandomSampler().propose(trial: trial, space: space, history: history, seed: seed)
        }
        // Finished trials by loss, then pruned ones (they never reached the end).
        let ordered = scored.sorted { a, b in a.pruned != b.pruned ? !a.pruned : a.loss! < b.loss! }
        let goodCount = max(1, min(ordered.count - 1, Int((gamma * Double(ordered.count)).rounded(.up))))
        let good = ordered.prefix(goodCount), bad = ordered.dropFirst(goodCount)
        var rng = SeededGenerator(seed: seed, stream: 0x7470_6500_0000_0000 &+ UInt64(trial))
        var values: [String: ConfigValue] = [:]
        for d in space.dimensions {
            let l = ParzenEstimator(d.distribution, points: good.compactMap { SearchCoordinate.coordinate(of: $0.values[d.name], in: d.distribution) })
            let g = ParzenEstimator(d.distribution, points: bad.compactMap { SearchCoordinate.coordinate(of: $0.values[d.name], in: d.distribution) })
            var best = (x: 0.0, score: -Double.infinity)
            for _ in 0..<candidates {
                let x = l.sample(rng: &rng)
                let score = l.logDensity(x) - g.logDensity(x)
                if score > best.score { best = (x, score) }
            }
            values[d.name] = SearchCoordinate.value(of: d.distribution, at: best.x)
        }
        return values
    }
}

/// Where a value sits in a dimension's search coordinate: the choice's index, the log of a
/// `loguniform` value, the value itself otherwise.
enum SearchCoordinate {
    static func uniformDraw(_ distribution: SearchDistribution, rng: inout SeededGenerator) -> Double {
        let u = unit(&rng)
        switch distribution {
        case .choice(let values): return Double(min(values.count - 1, Int(u * Double(values.count))))
        case .uniform(let low, let high), .quniform(let low, let high, _), .loguniform(let low, let high): return low + u * (high - low)
        }
    }

    /// The config value at coordinate `x`.
    static func value(of distribution: SearchDistribution, at x: Double) -> ConfigValue {
        switch distribution {
        case .choice(let values): return values[max(0, min(values.count - 1, Int(x.rounded())))]
        case .uniform: return .double(x)
        case .loguniform: return .double(exp(x))
        case .quniform(_, _, let q):
            let v = (x / q).rounded() * q
            // Integral steps give integers, so `embedding_size quniform 16,128,16` sets an int.
            return q.rounded() == q && abs(v) < 1e15 ? .int(Int(v)) : .double(v)
        }
    }

    /// The coordinate of a stored value (nil when the value does not belong to the distribution).
    static func coordinate(of value: ConfigValue?, in distribution: SearchDistribution) -> Double? {
        guard let value else { return nil }
        switch distribution {
        case .choice(let values): return values.firstIndex(of: value).map(Double.init)
        case .uniform, .quniform: return value.doubleValue
        case .loguniform: return value.doubleValue.flatMap { $0 > 0 ? log($0) : nil }
        }
    }

    static func unit(_ rng: inout SeededGenerator) -> Double { Double(rng.next() >> 11) * 0x1p-53 }
}

/// A Parzen estimator over one dimension: for a numeric one, a mixture of normals truncated
/// to the bounds, one at each point plus a prior one at the centre with the range as its
/// width; each point's width is its larger gap to a neighbour, clipped to
/// [range / min(100, n + 1), range] (hyperopt's adaptive Parzen estimator); for a choice,
/// counts plus one per value.
struct ParzenEstimator {
    let distribution: SearchDistribution
    private var means: [Double] = [], widths: [Double] = [], weights: [Double] = []
    private let low: Double, high: Double

    init(_ distribution: SearchDistribution, points: [Double]) {
        self.distribution = distribution
        switch distribution {
        case .choice(let values):
            (low, high) = (0, Double(values.count - 1))
            var counts = [Double](repeating: 1, count: values.count)
            for p in points { counts[Int(p)] += 1 }
            let total = counts.reduce(0, +)
            weights = counts.map { $0 / total }
        case .uniform(let l, let h), .quniform(let l, let h, _), .loguniform(let l, let h):
            (low, high) = (l, h)
            let range = max(h - l, 1e-12), prior = (l + h) / 2
            let sorted = (points.map { ($0, false) } + [(prior, true)]).sorted { $0.0 < $1.0 }
            let minimum = range / min(100, Double(points.count + 1))
            for (i, (mean, isPrior)) in sorted.enumerated() {
                let left = mean - (i > 0 ? sorted[i - 1].0 : l), right = (i + 1 < sorted.count ? sorted[i + 1].0 : h) - mean
                means.append(mean)
                widths.append(isPrior ? range : min(range, max(minimum, left, right)))
            }
            weights = [Double](repeating: 1 / Double(sorted.count), count: sorted.count)
        }
    }

    func sample(rng: inout SeededGenerator) -> Double {
        var u = SearchCoordinate.unit(&rng), k = 0
        while k < weights.count - 1 && u >= weights[k] { u -= weights[k]; k += 1 }
        if case .choice = distribution { return Double(k) }
        guard high > low else { return low }
        for _ in 0..<100 {
            // Box–Muller; rejection keeps the draw inside the bounds.
            let r = sqrt(-2 * log(max(SearchCoordinate.unit(&rng), 1e-300))), t = 2 * Double.pi * SearchCoordinate.unit(&rng)
            let x = means[k] + widths[k] * r * cos(t)
            if x >= low && x <= high { return x }
        }
        return min(high, max(low, means[k]))
    }

    func logDensity(_ x: Double) -> Double {
        if case .choice = distribution { return log(weights[Int(x)]) }
        guard high > low else { return 0 }
        var total = 0.0
        for k in means.indices {
            let (m, s) = (means[k], widths[k])
            let mass = max(normalCDF((high - m) / s) - normalCDF((low - m) / s), 1e-300)
            let z = (x - m) / s
            total += weights[k] * exp(-0.5 * z * z) / (s * (2 * Double.pi).squareRoot() * mass)
        }
        return log(max(total, 1e-300))
    }

    private func normalCDF(_ z: Double) -> Double { 0.5 * (1 + erf(z / 2.squareRoot())) }
}
