import Foundation
import Logging
import Linalg
import RecBenchCore

/// A two-tower context-aware model's full-ranking pass (FM's) beside the one GEMM its cross
/// scores need: the pass should cost little more than that GEMM (no user row is repeated
/// per item).
public enum FMScoringBenchmark {
    /// Fits the plan's model for one epoch on the plan's data, then times (best of `repeats`)
    /// its scores for every user × every item, and the GEMM users × d by d × items (d its
    /// `embedding_size`) that makes the cross terms.
    public static func run(plan: ExperimentPlan, repeats: Int, compute: Compute = .allCores, logger: Logger) throws -> [BenchmarkRow] {
        let dataset = try DatasetLoader.load(plan.data)
        let split = SplitData(dataset: dataset, parts: try Splitter.split(dataset.interactions, userCount: dataset.userCount, settings: plan.split))
        var model = plan.model
        let d = try plan.parameters.int("embedding_size")
        var training = plan.training
        training.epochs = 1
        try model.fit(TrainingData(dataset: dataset, split: split), context: FitContext(seed: plan.seed, compute: compute, logger: logger, training: training))
        let users = Array(0..<Int32(dataset.userCount))[...]
        var block = Matrix(uninitializedRows: dataset.userCount, columns: dataset.itemCount)
        let ranking = best(repeats) { model.scores(for: users, into: &block, compute: compute) }
        var rng = SeededGenerator(seed: 1)
        let left = Initializer.normal(rows: dataset.userCount, columns: d, std: 1, rng: &rng)
        let right = Initializer.normal(rows: dataset.itemCount, columns: d, std: 1, rng: &rng)
        let gemm = best(repeats) { BLAS.gemm(left, right, transposeB: true, into: &block, compute: compute) }
        return [BenchmarkRow(step: "\(plan.modelType.name) full-ranking pass, \(dataset.userCount) users × \(dataset.itemCount) items "
                                 + "(towers + one GEMM of width \(d) + 2)",
                             seconds: ranking, reference: "the GEMM of width \(d) alone, this run", referenceSeconds: gemm, target: 2)]
    }

    /// The fastest of `repeats` runs of `body`, seconds.
    static func best(_ repeats: Int, _ body: () -> Void) -> Double {
        var fastest = Double.infinity
        for _ in 0..<max(1, repeats) {
            let start = ContinuousClock.now
            body()
            fastest = min(fastest, (ContinuousClock.now - start).seconds)
        }
        return fastest
    }
}
