import Foundation
import Logging
import RecBenchCore
import RecBenchBench

extension Bench {
    /// The context-aware models as whole `recbench run` processes on ml-100k with the
    /// protocol's features (RecBole's split when present, the shipped `.user` / `.item` files
    /// beside it), against RecBole's FM wall; then FM's full-ranking pass against its GEMM.
    func contextRows(_ reference: BenchmarkReference, logger: Logger) throws -> [BenchmarkRow] {
        let folder = NSTemporaryDirectory() + "recbench-bench-context-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let assignments = try contextData(in: folder, reference: reference)
        var rows: [BenchmarkRow] = []
        let models = ModelRegistry.models.filter { $0.family == .contextAware && reference.models[$0.name] != nil }.map { $0.name }
        for model in models {
            logger.notice("\(model): \(learnedRuns) × recbench run on ml-100k with features")
            let theirs = try reference.model(model)
            let (seconds, peak, result) = try bestRun(model, assignments + theirs.settings)
            let training = result.training!
            rows.append(BenchmarkRow(step: "\(model): whole process, \(training.epochsRun) epochs (best \(training.bestEpoch)), "
                                         + "test ndcg@10 \(String(format: "%.4f", result.test["ndcg@10"] ?? 0)), peak RSS \(Int(peak)) MiB",
                                     seconds: seconds, reference: theirs.label ?? "reference process wall", referenceSeconds: theirs.wall,
                                     target: theirs.speedup.map { 1 / $0 }))
            rows += try epochRows(model, result: result, reference: reference)   // its share of the peak, where the model states its FLOPs
        }
        // The scoring pass of the first context-aware model whose scores are two towers and one GEMM.
        let plan = try Experiment.plan(RunRequest(model: models.first ?? "FM", configFiles: [config], assignments: assignments))
        rows += try FMScoringBenchmark.run(plan: plan, repeats: repeats, logger: logger)
        return rows
    }

    /// ml-100k with the protocol's features in `folder` (RecBole's split when present, else the shipped file; the shipped
    /// `.user` / `.item` beside it), and the assignments that run a context-aware model on it.
    func contextData(in folder: String, reference: BenchmarkReference) throws -> [String] {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let shipped = "Datasets/ml-100k"
        var assignments = ["data_path=\(folder)", Self.featureColumns]
        if let split = reference.recboleSplit, FileManager.default.fileExists(atPath: split + "/ml-100k.train.inter") {
            for part in ["train", "valid", "test"] {
                try FileManager.default.copyItem(atPath: "\(split)/ml-100k.\(part).inter", toPath: "\(folder)/ml-100k.\(part).inter")
            }
            assignments.append("benchmark_filename=[train,valid,test]")
        } else {
            try FileManager.default.copyItem(atPath: "\(shipped)/ml-100k.inter", toPath: "\(folder)/ml-100k.inter")
        }
        for suffix in ["user", "item"] { try FileManager.default.copyItem(atPath: "\(shipped)/ml-100k.\(suffix)", toPath: "\(folder)/ml-100k.\(suffix)") }
        return assignments
    }

    /// The shared protocol's FM columns (reference README, §A).
    static let featureColumns = "load_col={inter: [user_id, item_id, timestamp], user: [user_id, age, gender, occupation], "
        + "item: [item_id, release_year, class]}"
}
