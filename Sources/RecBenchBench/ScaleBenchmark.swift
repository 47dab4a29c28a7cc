import Foundation
import Logging
import Linalg
import RecBenchCore

/// This host's speed limits, measured in the run that compares with them: hosts of one
/// machine kind differ by ~1.75× in sgemm speed (BLAS-NOTES), so rooflines use these.
public struct HostPeaks: Sendable {
    /// sgemm FLOP/s on every core (2048³, best of 3).
    public let sgemm: Double
    /// Copy bandwidth in bytes/s, counting the read and the write (256 MiB per worker's
    /// share, best of 5).
    public let bandwidth: Double
    /// spotrf + spotri rate as n³ / seconds, at n = 4,096 (best of 2).
    public let choleskyInverse: Double

    /// Measures the three on `compute`; call with the machine otherwise idle.
    public static func measure(compute: Compute) throws -> HostPeaks {
        HostPeaks(sgemm: sgemmRate(compute: compute), bandwidth: copyBandwidth(compute: compute),
                  choleskyInverse: try choleskyInverseRate(compute: compute))
    }

    /// sgemm FLOP/s on `compute`: the best of three 2048³ products.
    public static func sgemmRate(compute: Compute) -> Double {
        2 * pow(2048, 3) / gemmSeconds(m: 2048, k: 2048, n: 2048, compute: compute, repeats: 3)
    }

    /// The fastest of `repeats` (m × k) · (k × n) sgemms on `compute`, in seconds.
    public static func gemmSeconds(m: Int, k: Int, n: Int, compute: Compute, repeats: Int) -> Double {
        var rng = SeededGenerator(seed: 7)
        let a = Matrix(rows: m, columns: k, values: (0..<(m * k)).map { _ in rng.nextUnitFloat() })
        let b = Matrix(rows: k, columns: n, values: (0..<(k * n)).map { _ in rng.nextUnitFloat() })
        var c = Matrix(rows: m, columns: n)
        return best(of: repeats) { BLAS.gemm(a, b, into: &c, compute: compute) }
    }

    /// Copy bandwidth in bytes/s on `compute` (read + write counted): 256 MiB split over
    /// the workers, best of 5.
    static func copyBandwidth(compute: Compute) -> Double {
        let count = 64 << 20   // 256 MiB of floats
        let source = [Float](repeating: 1, count: count)
        var target = [Float](repeating: 0, count: count)
        let seconds = best(of: 5) {
            source.withUnsafeBufferPointer { from in
                target.withUnsafeMutableBufferPointer { to in
                    let pointers = UnsafeShared((from.baseAddress!, to.baseAddress!))   // workers copy disjoint ranges
                    compute.forEachChunk(count: count, chunkSize: count / max(1, compute.activeWorkers)) { range in
                        let (f, t) = pointers.value
                        (t + range.lowerBound).update(from: f + range.lowerBound, count: range.count)
                    }
                }
            }
        }
        return 2 * 4 * Double(count) / seconds
    }

    /// spotrf + spotri as n³ / seconds at n = 4,096 on a well-conditioned matrix, best of 2.
    static func choleskyInverseRate(compute: Compute) throws -> Double {
        var rng = SeededGenerator(seed: 7)
        let order = 4096
        let x = Matrix(rows: order, columns: order, values: (0..<(order * order)).map { _ in rng.nextUnitFloat() - 0.5 })
        var spd = BLAS.gram(x, compute: compute)
        for i in 0..<order { spd.values[i * order + i] += Float(order) }
        var inverseError: Error?
        let seconds = best(of: 2) {
            var m = spd
            do { try BLAS.invertSymmetricPositiveDefinite(&m, compute: compute) } catch { inverseError = error }
        }
        if let inverseError { throw inverseError }
        return pow(Double(order), 3) / seconds
    }

    /// The fastest of `repeats` timings of `body`, in seconds.
    static func best(of repeats: Int, _ body: () -> Void) -> Double {
        (0..<repeats).map { _ in
            let start = ContinuousClock.now
            body()
            return (ContinuousClock.now - start).seconds
        }.min()!
    }
}

/// What the scale benchmark measures inside its own process on the generated log: the work
/// each phase does (for the rooflines), and evaluation's memory at two user counts.
public struct ScaleProbe: Sendable {
    /// Distinct (user, item) pairs in train.
    public let trainPairs: Int
    /// Σ over users of d², d = distinct train items: the multiply-adds of the whole Gram XᵀX.
    public let gramMultiplyAdds: Double
    /// Σ over users of d(d+1)/2: the multiply-adds of its upper triangle (EASE).
    public let upperGramMultiplyAdds: Double
    /// Users evaluated on valid, and the smaller population compared with them.
    public let users: Int, probeUsers: Int
    /// Users per block of scores at the plan's eval budget.
    public let blockUsers: Int
    /// Peak memory above what was resident, evaluating every user and the first `probeUsers`
    /// (MiB); nil where the peak cannot be reset (not Linux).
    public let evaluationPeakMiB: Double?, probeEvaluationPeakMiB: Double?

    /// Loads and splits `plan`'s data as a run does, fits its model (Pop: the cheapest
    /// scorer; the block of scores is the same for every model), and evaluates valid for
    /// every user and for the first `probeUsers`, each from a reset peak.
    public static func measure(plan: ExperimentPlan, probeUsers: Int, logger: Logger) throws -> ScaleProbe {
        let compute = Compute(threads: plan.threads)
        let dataset = try DatasetLoader.load(plan.data)
        var notices: [String] = []
        let outcome = try Experiment.splitAndTargets(dataset, plan: plan, logger: logger, notices: &notices)
        let (split, validTarget) = (outcome.split, outcome.valid)
        let train = split.trainMatrix
        let degrees = (0..<train.rows).map { Double(train.entries(ofRow: $0).count) }
        var model = plan.model
        try model.fit(TrainingData(dataset: dataset, split: split), context: FitContext(seed: plan.seed, compute: compute, logger: logger))
        let small = validTarget.prefix(probeUsers)
        func peak(_ target: EvaluationTarget) -> Double? {
            guard ProcessStats.resetPeakMemory() else { return nil }
            let resident = ProcessStats.residentMemoryMiB
            _ = Evaluator.evaluate(model, target: target, settings: plan.evaluation, compute: compute)
            return ProcessStats.peakMemoryMiB - resident
        }
        let probePeak = peak(small), fullPeak = peak(validTarget)
        return ScaleProbe(trainPairs: train.nonzeroCount, gramMultiplyAdds: degrees.reduce(0) { $0 + $1 * $1 },
                          upperGramMultiplyAdds: degrees.reduce(0) { $0 + $1 * ($1 + 1) / 2 },
                          users: validTarget.users.count, probeUsers: small.users.count,
                          blockUsers: plan.evaluation.usersPerBlock(items: dataset.itemCount),
                          evaluationPeakMiB: fullPeak, probeEvaluationPeakMiB: probePeak)
    }
}
