import Foundation
import Logging
import RecBenchCore
import RecBenchBench

/// The learned models side by side with RecBole 1.2.1 itself (issue 18): on this host, in
/// the same minutes, whole processes interleaved recbench, RecBole, recbench, RecBole, …,
/// so that a noisy neighbour or a slow host slows both alike.
extension Bench {
    /// One RecBole run's figures from its `RESULT_JSON` line.
    struct RecBoleRun { let seconds: Double; let epochs: Int; let ndcg: Double }

    func recboleRows(_ python: String, reference: BenchmarkReference, logger: Logger) throws -> [BenchmarkRow] {
        guard let runner = reference.recboleRunner, let raw = reference.recboleData,
              FileManager.default.fileExists(atPath: runner), FileManager.default.fileExists(atPath: raw) else {
            throw RecBenchError(location: self.reference,
                                "--recbole needs recbole_runner and recbole_data, and both files present (../shared beside the repository)")
        }
        // RecBole special-cases the name ml-100k; its copy is `ml100k` (shared RecBole README).
        let folder = NSTemporaryDirectory() + "recbench-recbole-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: folder + "/ml100k", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: raw, toPath: folder + "/ml100k/ml100k.inter")
        let names = recboleModels.split(separator: ",").map(String.init)
        var contextAssignments: [String] = []
        let readsFeatures = try names.contains { try reference.model($0).settings.contains { $0.hasPrefix("load_col=") } }
        if try names.contains(where: { try ModelRegistry.model(named: $0).family == .contextAware }) {
            guard reference.recboleSplit.map({ FileManager.default.fileExists(atPath: $0 + "/ml-100k.train.inter") }) == true else {
                throw RecBenchError(location: self.reference, "--recbole with a context-aware model needs recbole_split (RecBole's split of ml-100k)")
            }
            // recbench's copy in recbench/; RecBole reads the same `.user` / `.item` beside its raw file.
            contextAssignments = try contextData(in: folder + "/recbench", reference: reference)
        }
        if readsFeatures || !contextAssignments.isEmpty {
            for suffix in ["user", "item"] {
                try FileManager.default.copyItem(atPath: "Datasets/ml-100k/ml-100k.\(suffix)", toPath: "\(folder)/ml100k/ml100k.\(suffix)")
            }
        }
        var rows: [BenchmarkRow] = []
        // Both tools train the same epochs when asked (stopping held off).
        let epochs = recboleEpochs.map { ["epochs=\($0)", "stopping_step=\($0)"] } ?? []
        for model in names {
            logger.notice("\(model): \(recboleRuns) × (recbench run, RecBole run), interleaved")
            // Each model runs as its reference row says, in both tools (context-aware ones validated every 10 epochs,
            // GRU4RecF with its item feature loaded).
            let context = try ModelRegistry.model(named: model).family == .contextAware
            let settings = try reference.model(model).settings
            let assignments = try (context ? contextAssignments : recboleAssignments(model, reference: reference, raw: raw)) + settings + epochs
            var ours: (seconds: Double, result: RunResult)?, theirs: RecBoleRun?
            for _ in 0..<max(1, recboleRuns) {
                let (seconds, _, result) = try bestRun(model, assignments, runs: 1)
                if ours == nil || seconds < ours!.seconds { ours = (seconds, result) }
                let run = try recboleRun(python, runner: runner, model: model, data: folder, extra: settings + epochs)
                if theirs == nil || run.seconds < theirs!.seconds { theirs = run }
            }
            let row = try reference.model(model)
            let target = row.sameRunSpeedup ?? (context ? row.speedup : nil)   // context rows: their 10× (or bound) holds here too
            let training = ours!.result.training!
            rows.append(BenchmarkRow(step: "\(model) beside RecBole, best of \(recboleRuns) each: recbench \(training.epochsRun) epochs, "
                                           + "test ndcg@10 \(String(format: "%.4f", ours!.result.test["ndcg@10"] ?? 0)); "
                                           + "RecBole \(theirs!.epochs) epochs, \(String(format: "%.4f", theirs!.ndcg))"
                                           + (recboleEpochs == nil ? "" : " (both held to \(recboleEpochs!) epochs)"),
                                     seconds: ours!.seconds, reference: "RecBole 1.2.1 whole process, this host, interleaved",
                                     referenceSeconds: theirs!.seconds, target: target.map { 1 / $0 }))
            rows += try epochRows(model, result: ours!.result, reference: reference)
        }
        return rows
    }

    /// recbench's data for `model`, as RecBole's runner reads it: general models on RecBole's
    /// own split of ml-100k (when present), sequential ones on the raw file, which both tools
    /// cut into next-item examples themselves.
    func recboleAssignments(_ model: String, reference: BenchmarkReference, raw: String) throws -> [String] {
        if try ModelRegistry.model(named: model).family == .sequential {
            // `…/datasets/ml-100k/ml-100k.inter` → data_path `…/datasets`, dataset ml-100k (the config's).
            return ["data_path=\(URL(fileURLWithPath: raw).deletingLastPathComponent().deletingLastPathComponent().path)"]
        }
        if let split = reference.recboleSplit, FileManager.default.fileExists(atPath: split + "/ml-100k.train.inter") {
            return ["data_path=\(split)", "benchmark_filename=[train,valid,test]"]   // RecBole's own split of the same file
        }
        return []
    }

    /// One `run_rb.py MODEL` process: its wall and its `RESULT_JSON` line's epochs and NDCG@10.
    func recboleRun(_ python: String, runner: String, model: String, data: String, extra: [String] = []) throws -> RecBoleRun {
        let output = data + "/\(model).stdout"
        // In the temporary folder: RecBole writes its logs and checkpoints into its working folder.
        let runnerPath = URL(fileURLWithPath: runner).standardizedFileURL.path
        let pythonPath = URL(fileURLWithPath: python).standardizedFileURL.path
        let (seconds, _, status) = try ChildProcess.run(pythonPath,
                                                        [runnerPath, model, "--dataset", "ml100k", "--data-path", data + "/", "--out", data + "/runs"]
                                                            + (extra.isEmpty ? [] : ["--extra"] + extra),
                                                        stdoutPath: output, directory: data)
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        guard status == 0, let line = text.split(separator: "\n").last(where: { $0.hasPrefix("RESULT_JSON ") }),
              let object = try? JSONSerialization.jsonObject(with: Data(line.dropFirst("RESULT_JSON ".count).utf8)) as? [String: Any] else {
            let last = text.split(separator: "\n").last.map { String($0.suffix(200)) } ?? "no output"
            throw RecBenchError(location: runner, "RecBole's \(model) run failed (exit \(status)); its last line: \(last)")
        }
        let test = object["test_result"] as? [String: Double] ?? [:]
        return RecBoleRun(seconds: seconds, epochs: object["epochs_run"] as? Int ?? 0, ndcg: test["ndcg@10"] ?? .nan)
    }
}
