import Foundation
import Logging
import RecBenchCore
import RecBenchBench

extension Bench {
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
        let slimRow = BenchmarkRow(step: "SLIMElastic: whole process, \(Int(slimResult.fitSteps["nonzero_weights"] ?? 0)) weights, "
                                         + "test ndcg@10 \(String(format: "%.4f", slimResult.test["ndcg@10"] ?? 0)), peak RSS \(Int(slimPeak)) MiB",
                                   seconds: slimSeconds, reference: "reference process wall", referenceSeconds: slim.wall, target: slim.speedup.map { 1 / $0 })
        let theirs = try reference.model("ALS")
        let (_, _, result) = try bestRun("ALS", assignments, learned: false)   // the fastest process's record
        let seconds = result.fitSteps["iterations_seconds"] ?? .nan, flops = (result.fitSteps["solve_gflop"] ?? 0) * 1e9
        return [slimRow, BenchmarkRow(step: "ALS: \(result.hyperparameters["iterations"].map { "\($0)" } ?? "?") iterations, training alone, "
                                            + "test ndcg@10 \(String(format: "%.4f", result.test["ndcg@10"] ?? 0))",
                             seconds: seconds, reference: theirs.label ?? "reference training", referenceSeconds: theirs.wall,
                             target: theirs.wallTarget.map { $0 / theirs.wall }),
                BenchmarkRow(step: "  ALS solves: \(String(format: "%.2f", flops / 1e9)) GFLOP → "
                                   + "\(String(format: "%.1f", flops / seconds / 1e9)) GFLOP/s",
                             seconds: seconds, reference: "those FLOPs at \(reference.sgemmPeakLabel)", referenceSeconds: flops / reference.sgemmPeak,
                             target: nil)]
    }
}
