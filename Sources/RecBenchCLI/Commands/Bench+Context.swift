import Foundation
import Logging
import RecBenchCore

extension Bench {
    /// The context-aware models as whole `recbench run` processes on ml-100k with the
    /// protocol's features (RecBole's split when present, the shipped `.user` / `.item` files
    /// beside it), against RecBole's FM wall; then FM's full-ranking pass against its GEMM.
    func contextRows(_ reference: BenchmarkReference, logger: Logger) throws -> [BenchmarkRow] {
        let folder = NSTemporaryDirectory() + "recbench-bench-context-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let shipped = "Datasets/ml-100k"
        var assignments = ["data_path=\(folder)", Self.featureColumns]
        if let split = reference.recboleSplit, FileManager.default.fileExists(atPath: split + "/ml-100k.train.inter") {
            for part in ["train", "valid", "test"] { try FileManager.default.copyItem(atPath: "\(split)/ml-100k.\(part).inter", toPath: "\(folder)/ml-100k.\(part).inter") }
            assignments.append("benchmark_filename=[train,valid,test]")
        } else {
            try FileManager.default.copyItem(atPath: "\(shipped)/ml-100k.inter", toPath: "\(folder)/ml-100k.inter")
        }
        for suffix in ["user", "item"] { try FileManager.default.copyItem(atPath: "\(shipped)/ml-100k.\(suffix)", toPath: "\(folder)/ml-100k.\(suffix)") }
        var rows: [BenchmarkRow] = []
        for model in ["FM", "FFM", "DeepFM"] {
            logger.notice("\(model): \(learnedRuns) × recbench run on ml-100k with features")
            let theirs = try reference.model(model)
            let (seconds, peak, result) = try bestRun(model, assignments)
            let training = result.training!
            rows.append(BenchmarkRow(step: "\(model): whole process, \(training.epochsRun) epochs (best \(training.bestEpoch)), test ndcg@10 \(String(format: "%.4f", result.test["ndcg@10"] ?? 0)), peak RSS \(Int(peak)) MiB",
                                     seconds: seconds, reference: theirs.label ?? "reference process wall", referenceSeconds: theirs.wall,
                                     target: theirs.speedup.map { 1 / $0 }))
        }
        let plan = try Experiment.plan(RunRequest(model: "FM", configFiles: [config], assignments: assignments))
        rows += try FMScoringBenchmark.run(plan: plan, repeats: repeats, logger: logger)
        return rows
    }

    /// SLIMElastic's whole process against RecBole's wall; ALS's iterations (training alone,
    /// from the fastest process's fit steps) against `implicit`'s ALS on the same train matrix
    /// (reference §C), and its solves' FLOP rate beside the peak.
    func classicRows(_ reference: BenchmarkReference, logger: Logger) throws -> [BenchmarkRow] {
        var assignments: [String] = []
        if let split = reference.recboleSplit, FileManager.default.fileExists(atPath: split + "/ml-100k.train.inter") {
            assignments = ["data_path=\(split)", "benchmark_filename=[train,valid,test]"]
        }
        logger.notice("SLIMElastic, ALS: \(learnedRuns) × recbench run on ml-100k each")
        let slim = try reference.model("SLIMElastic")
        let (slimSeconds, slimPeak, slimResult) = try bestRun("SLIMElastic", assignments, learned: false)
        let slimRow = BenchmarkRow(step: "SLIMElastic: whole process, \(Int(slimResult.fitSteps["nonzero_weights"] ?? 0)) weights, test ndcg@10 \(String(format: "%.4f", slimResult.test["ndcg@10"] ?? 0)), peak RSS \(Int(slimPeak)) MiB",
                                   seconds: slimSeconds, reference: "reference process wall", referenceSeconds: slim.wall, target: slim.speedup.map { 1 / $0 })
        let theirs = try reference.model("ALS")
        let (_, _, result) = try bestRun("ALS", assignments, learned: false)   // the fastest process's record
        let seconds = result.fitSteps["iterations_seconds"] ?? .nan, flops = (result.fitSteps["solve_gflop"] ?? 0) * 1e9
        return [slimRow, BenchmarkRow(step: "ALS: \(result.hyperparameters["iterations"].map { "\($0)" } ?? "?") iterations, training alone, test ndcg@10 \(String(format: "%.4f", result.test["ndcg@10"] ?? 0))",
                             seconds: seconds, reference: theirs.label ?? "reference training", referenceSeconds: theirs.wall, target: theirs.wallTarget.map { $0 / theirs.wall }),
                BenchmarkRow(step: "  ALS solves: \(String(format: "%.2f", flops / 1e9)) GFLOP → \(String(format: "%.1f", flops / seconds / 1e9)) GFLOP/s",
                             seconds: seconds, reference: "those FLOPs at the \(Int(reference.sgemmPeak / 1e9)) GFLOP/s sgemm peak", referenceSeconds: flops / reference.sgemmPeak, target: nil)]
    }

    /// The shared protocol's FM columns (reference README, §A).
    static let featureColumns = "load_col={inter: [user_id, item_id, timestamp], user: [user_id, age, gender, occupation], item: [item_id, release_year, class]}"
}
