import Foundation
import Logging
import Linalg
import RecBenchCore

/// One measured step beside what it is compared with.
public struct BenchmarkRow: Sendable, Codable {
    /// What was measured.
    public let step: String
    /// Best-of-N seconds.
    public let seconds: Double
    /// The comparison, e.g. "spotrf+spotri, same matrix, this run".
    public let reference: String
    /// The comparison's seconds (measured in this run, or a stated roofline / figure).
    public let referenceSeconds: Double
    /// The ratio the target allows (seconds / referenceSeconds), if any.
    public let target: Double?

    /// A row.
    public init(step: String, seconds: Double, reference: String, referenceSeconds: Double, target: Double?) {
        self.step = step; self.seconds = seconds; self.reference = reference
        self.referenceSeconds = referenceSeconds; self.target = target
    }

    /// seconds / referenceSeconds.
    public var ratio: Double { seconds / referenceSeconds }
}

/// EASE fit and full evaluation on one dataset, with references measured in the same run
/// (the machines are noisy: ratios, not absolute seconds, are what to compare).
public enum EASEBenchmark {
    /// Runs the benchmark on `dataset` (split TO, RS 0.8/0.1/0.1); each timing is the best
    /// of `repeats`. `sgemmRows` caps the rows of the reference sgemm (its time is scaled
    /// linearly to all evaluated users).
    public static func run(dataset: Dataset, reference: BenchmarkReference, repeats: Int, sgemmRows: Int = 1024,
                           batchSize: Int = 4096, compute: Compute = .allCores, logger: Logger) throws -> [BenchmarkRow] {
        let parts = try Splitter.split(dataset.interactions, userCount: dataset.userCount,
                                       settings: SplitSettings(order: .time, strategy: .ratio([0.8, 0.1, 0.1]), seed: 2020))
        let split = SplitData(dataset: dataset, parts: parts)
        var model: (any Recommender)?
        let rows = try fitRows(TrainingData(dataset: dataset, split: split), into: &model, reference: reference, repeats: repeats,
                               compute: compute, logger: logger)
        logger.notice("\(dataset.name): full evaluation × \(repeats)")
        let settings = EvaluationSettings(metrics: ["Recall", "MRR", "NDCG", "Hit", "Precision", "MAP"], cutoffs: [10, 20],
                                          historyMask: .recbole, batchSize: batchSize)
        var evaluation = Double.infinity
        var users = 0
        for _ in 0..<repeats {
            let r = Evaluator.evaluate(model!, split: split, part: .test, settings: settings, compute: compute)
            evaluation = min(evaluation, r.seconds)
            users = r.users.count
        }
        model = nil   // free the weights before the reference sgemm
        return rows + referenceGEMMRows(evaluation: evaluation, users: users, items: dataset.itemCount, reference: reference, repeats: repeats,
                                        sgemmRows: sgemmRows, compute: compute, logger: logger)
    }

    /// EASE at its declared defaults, unfitted (built through the registry, like any run).
    static func ease() throws -> any Recommender { try ModelRegistry.model(named: "EASE", hyperparameters: [:]) }

    /// EASE's fit (best of `repeats`) and its steps beside LAPACK's inverse of the same
    /// matrix; the last fitted model goes to `fitted`.
    static func fitRows(_ data: TrainingData, into fitted: inout (any Recommender)?, reference: BenchmarkReference, repeats: Int,
                        compute: Compute, logger: Logger) throws -> [BenchmarkRow] {
        let n = data.itemCount, name = data.dataset.name
        let regWeight = Float(try ModelRegistry.model(named: "EASE").parameters.first { $0.name == "reg_weight" }!.defaultValue.doubleValue!)
        let context = FitContext(seed: 2020, compute: compute, logger: logger)
        var rows: [BenchmarkRow] = []

        // Reference first (cold), then the model: the model does not profit from warm-up.
        logger.notice("\(name): reference spotrf + spotri on XᵀX + λI (n = \(n))")
        var gram = data.trainMatrix.gram(upperOnly: true, compute: compute)
        for i in 0..<n { gram.values[i * n + i] += regWeight }
        var referenceInverse = Double.infinity
        for _ in 0..<repeats {
            var copy = gram
            let t = ContinuousClock.now
            try BLAS.invertSymmetricPositiveDefinite(&copy, compute: compute)
            referenceInverse = min(referenceInverse, (ContinuousClock.now - t).seconds)
        }
        gram = Matrix(rows: 0, columns: 0)

        logger.notice("\(name): EASE fit × \(repeats)")
        var best: (total: Double, steps: [String: Double]) = (.infinity, [:])
        var model = try ease()
        for _ in 0..<repeats {
            var m = try ease()
            let t = ContinuousClock.now
            try m.fit(data, context: context)
            let s = (ContinuousClock.now - t).seconds
            if s < best.total { best = (s, m.fitSteps) }
            model = m
        }
        let roofline = pow(Double(n), 3) / reference.choleskyInverseRate
        rows.append(BenchmarkRow(step: "EASE fit (n = \(n))", seconds: best.total,
                                 reference: "spotrf+spotri alone, same matrix, this run", referenceSeconds: referenceInverse, target: 1.5))
        rows.append(BenchmarkRow(step: "EASE fit (n = \(n))", seconds: best.total,
                                 reference: "formula n³/\(reference.choleskyInverseRate) from the reference file (BLAS-NOTES, fitted at large n)",
                                 referenceSeconds: roofline, target: nil))
        for step in ["gram", "inverse", "scale"] {
            rows.append(BenchmarkRow(step: "  \(step)", seconds: best.steps[step] ?? .nan,
                                     reference: "spotrf+spotri alone, same matrix, this run", referenceSeconds: referenceInverse, target: nil))
        }
        fitted = model
        return rows
    }

    /// The full evaluation's best time beside the dense sgemm that makes the same scores
    /// (timed on at most `sgemmRows` rows, scaled to all users), and beside the sgemm roofline.
    static func referenceGEMMRows(evaluation: Double, users: Int, items n: Int, reference: BenchmarkReference, repeats: Int, sgemmRows: Int,
                                  compute: Compute, logger: Logger) -> [BenchmarkRow] {
        var rows: [BenchmarkRow] = []
        logger.notice("reference sgemm (\(min(users, sgemmRows)) × \(n)) · (\(n) × \(n))")
        let m = min(users, sgemmRows)
        var rng = SeededGenerator(seed: 1)
        let a = Matrix(rows: m, columns: n, values: (0..<(m * n)).map { _ in rng.nextUnitFloat() })
        let b = Matrix(rows: n, columns: n, repeating: 0.001)
        var c = Matrix(rows: m, columns: n)
        var sgemm = Double.infinity
        for _ in 0..<max(1, repeats) {
            let t = ContinuousClock.now
            BLAS.gemm(a, b, into: &c, compute: compute)
            sgemm = min(sgemm, (ContinuousClock.now - t).seconds)
        }
        let scale = Double(users) / Double(m)
        rows.append(BenchmarkRow(step: "full evaluation (\(users) users × \(n) items)", seconds: evaluation,
                                 reference: "dense sgemm making the same scores, this run"
                                    + (scale > 1 ? String(format: " (×%.1f from %d rows)", scale, m) : ""),
                                 referenceSeconds: sgemm * scale, target: 2))
        rows.append(BenchmarkRow(step: "full evaluation (\(users) users × \(n) items)", seconds: evaluation,
                                 reference: "sgemm roofline 2·U·n² at \(reference.sgemmPeakLabel)",
                                 referenceSeconds: 2 * Double(users) * Double(n) * Double(n) / reference.sgemmPeak, target: nil))
        return rows
    }
}
