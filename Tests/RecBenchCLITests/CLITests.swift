import Foundation
import Testing
import RecBenchCore

/// Runs the built `recbench` binary as a user would.
struct CLI {
    /// The executable beside this test bundle (SwiftPM puts both in the build folder).
    static let binary: String = {
        let own = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return own.deletingLastPathComponent().appendingPathComponent("recbench").path
    }()

    struct Output { let status: Int32; let stdout: String; let stderr: String }

    /// Starts `recbench` with `arguments` in `directory`, its output discarded, and kills it
    /// (SIGKILL, as a scheduler's timeout or `kill -9` does) once `until` holds, it exits or a minute passes.
    static func killed(_ arguments: [String], in directory: String, until: () throws -> Bool) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: binary)
        p.arguments = arguments
        p.currentDirectoryURL = URL(fileURLWithPath: directory)
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        let deadline = Date().addingTimeInterval(60)
        while try !until() && p.isRunning && Date() < deadline { usleep(2_000) }
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
    }

    static func run(_ arguments: [String], in directory: String, executable: String = binary) throws -> Output {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        p.currentDirectoryURL = URL(fileURLWithPath: directory)
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return Output(status: p.terminationStatus, stdout: String(decoding: o, as: UTF8.self), stderr: String(decoding: e, as: UTF8.self))
    }
}

/// A temporary project folder with a tiny dataset `tiny` and a config `run.yml`.
struct Workspace {
    /// The test process's scratch folder, removed when the process exits.
    static let scratchRoot: String = {
        let root = NSTemporaryDirectory() + "recbench-cli-tests-\(getpid())"
        try? FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(atPath: NSTemporaryDirectory() + "recbench-cli-tests-\(getpid())") }
        return root
    }()

    let root: String

    /// The interaction file's header.
    static let header = "user_id:token\titem_id:token\ttimestamp:float\n"
    /// The default rows: six users, two thirds of five items each, increasing times.
    static let rows = (0..<6).flatMap { u in (0..<5).filter { (u + $0) % 3 != 0 }.map { "u\(u)\ti\($0)\t\(u * 10 + $0)\n" } }.joined()
    /// The default `run.yml`.
    static let config = """
        dataset: tiny
        data_path: data/
        load_col: {inter: [user_id, item_id, timestamp]}
        eval_args: {order: TO, split: {RS: [0.6, 0.2, 0.2]}}
        topk: [2]
        valid_metric: MRR@2
        results_dir: out
        """

    init(inter: String? = nil, config: String? = nil) throws {
        root = Workspace.scratchRoot + "/" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: root + "/data/tiny", withIntermediateDirectories: true)
        try (inter ?? Workspace.header + Workspace.rows).write(toFile: root + "/data/tiny/tiny.inter", atomically: true, encoding: .utf8)
        let yaml = config ?? Workspace.config
        try yaml.write(toFile: root + "/run.yml", atomically: true, encoding: .utf8)
    }

    func run(_ arguments: [String]) throws -> CLI.Output { try CLI.run(arguments, in: root) }

    /// Run records under the results folder (none must appear after a failed run).
    var resultFiles: [String] {
        allFiles.filter { $0.hasSuffix(".json") && !$0.hasSuffix(".peruser.json") && !$0.hasSuffix(".failed.json") }
    }

    /// Every file under the results folder.
    var allFiles: [String] {
        (FileManager.default.enumerator(atPath: root + "/out")?.allObjects as? [String] ?? []).filter { $0.contains(".") }
    }
}

@Suite struct CLITests {
    /// Asserts the failure contract: non-zero exit, one stderr line with `needle`, no result.
    func expectFailure(_ w: Workspace, _ arguments: [String], mentions needles: [String]) throws {
        let out = try w.run(arguments)
        #expect(out.status != 0)
        let lines = out.stderr.split(separator: "\n")
        #expect(lines.count == 1, "stderr: \(out.stderr)")
        for needle in needles { #expect(out.stderr.contains(needle), "stderr lacks '\(needle)': \(out.stderr)") }
        #expect(w.allFiles.isEmpty)
    }

    /// A sequential model on a log without its time column is refused (file order would stand in
    /// for time), as a general model's TO split is.
    @Test func aSequentialSplitNeedsTheTimeColumn() throws {
        let w = try Workspace(config: Workspace.config.replacingOccurrences(of: "[user_id, item_id, timestamp]", with: "[user_id, item_id]"))
        let out = try w.run(["run", "--model", "STAMP", "--config", "run.yml"])
        #expect(out.status != 0 && out.stderr.contains("no time column") && out.stderr.split(separator: "\n").count == 1, "\(out.stderr)")
    }

    /// clip_grad_norm reaches the trainer: a tiny max_norm shrinks BPR's SGD steps (Adam would
    /// undo a uniform scale), so its metrics move; a huge one changes nothing.
    @Test func gradientClippingChangesTraining() throws {
        let w = try Workspace(config: Workspace.config + "\nepochs: 3\nlearner: sgd\nlearning_rate: 0.5")
        func metrics(_ extra: [String]) throws -> [Substring] {
            let out = try w.run(["run", "--model", "BPR", "--config", "run.yml", "--no-save"] + extra)
            #expect(out.status == 0, "\(out.stderr)")
            return out.stdout.split(separator: "\n").filter { $0.hasPrefix("  ndcg") || $0.hasPrefix("  mrr") || $0.hasPrefix("  recall") }
        }
        let plain = try metrics([]), clipped = try metrics(["--set", "clip_grad_norm={max_norm: 0.000001}"])
        #expect(!plain.isEmpty && plain != clipped, "\(plain) against \(clipped)")
        #expect(try metrics(["--set", "clip_grad_norm={max_norm: 1000000}"]) == plain)
    }

    /// A sequential model trained with CE draws no negatives: said once when a file or --set asks
    /// for some, naming where (RecBole 1.2.1 refuses the pair); not said for the default, when it
    /// is null, nor under loss_type BPR, which uses it.
    @Test func aCESequentialModelSaysItDrawsNoNegatives() throws {
        let w = try Workspace(config: Workspace.config + "\ntrain_neg_sample_args: {distribution: uniform, sample_num: 2}\nepochs: 1")
        let ce = try w.run(["run", "--model", "STAMP", "--config", "run.yml"])
        #expect(ce.status == 0 && ce.stderr.components(separatedBy: "draws no negatives").count == 2, "\(ce.stderr)")
        #expect(ce.stderr.contains("train_neg_sample_args (run.yml:"), "\(ce.stderr)")
        for extra in [["--set", "train_neg_sample_args=~"], ["--set", "loss_type=BPR"]] {
            let out = try w.run(["run", "--model", "STAMP", "--config", "run.yml"] + extra)
            #expect(out.status == 0 && !out.stderr.contains("draws no negatives"), "\(extra): \(out.stderr)")
        }
        let plain = try Workspace(config: Workspace.config + "\nepochs: 1").run(["run", "--model", "STAMP", "--config", "run.yml"])
        #expect(plain.status == 0 && !plain.stderr.contains("draws no negatives"), "the default: \(plain.stderr)")
    }

    @Test func aRunPrintsTablesAndWritesOneResultFile() throws {
        let w = try Workspace()
        let out = try w.run(["run", "--model", "EASE", "--config", "run.yml"])
        #expect(out.status == 0, "\(out.stderr)")
        #expect(out.stdout.contains("test ("))
        #expect(out.stdout.contains("  recall"))
        #expect(w.resultFiles.count == 1)
        #expect(w.allFiles.contains { $0.hasSuffix(".peruser.json") })   // the per-user sidecar
        // --json prints the same record that is stored.
        let json = try w.run(["run", "--model", "EASE", "--config", "run.yml", "--json", "--no-save"])
        let record = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as! [String: Any]
        let stored = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: w.root + "/out/" + w.resultFiles[0]))) as! [String: Any]
        #expect(record["test"] as? [String: Double] == stored["test"] as? [String: Double])
        #expect((record["test"] as? [String: Double])?["recall@2"] != nil)
        #expect(record["history_mask"] as? String == "recbole")
        // The record names the BLAS build and the kernel set that ran (results round differently per set).
        let blas = record["blas"] as? String ?? ""
        #expect(blas.hasPrefix("OpenBLAS"), "blas: \(blas)")
        if let core = ProcessInfo.processInfo.environment["OPENBLAS_CORETYPE"], !core.isEmpty {
            #expect(blas.lowercased().contains(core.lowercased()), "OPENBLAS_CORETYPE=\(core) but blas: \(blas)")
        }
    }

    /// Off a terminal (nohup, a scheduler) every epoch is one plain stderr line; --quiet
    /// leaves only the final tables.
    @Test func logsForLongRunsAndQuiet() throws {
        let w = try Workspace()
        let out = try w.run(["run", "--model", "BPR", "--config", "run.yml", "--set", "epochs=3", "--set", "stopping_step=5", "--no-save"])
        #expect(out.status == 0, "\(out.stderr)")
        let epochs = out.stderr.split(separator: "\n").filter { $0.hasPrefix("epoch ") }
        #expect(epochs.count == 3, "\(out.stderr)")
        #expect(epochs.allSatisfy { $0.contains("loss ") && $0.lowercased().contains("valid mrr@2") && $0.contains("best ") })
        #expect(!out.stderr.contains("\u{1B}"))   // no bar escapes in a log file
        #expect(epochs.first?.contains("ETA") == true && epochs.last?.contains("ETA") == false)
        let quiet = try w.run(["run", "--model", "BPR", "--config", "run.yml", "--set", "epochs=3", "--no-save", "--quiet"])
        #expect(quiet.status == 0 && quiet.stderr.isEmpty, "\(quiet.stderr)")
        #expect(quiet.stdout.hasPrefix("valid (") && quiet.stdout.contains("test ("), "\(quiet.stdout)")
    }

    /// `--profile` prints where training went, and stores it with the result.
    @Test func aProfiledRunSaysWhereTrainingWent() throws {
        let w = try Workspace()
        let out = try w.run(["run", "--model", "BPR", "--config", "run.yml", "--set", "epochs=2", "--profile", "--quiet"])
        #expect(out.status == 0, "\(out.stderr)")
        let lines = out.stdout.split(separator: "\n").map(String.init)
        let header = try #require(lines.firstIndex { $0.hasPrefix("where training went") }, "\(out.stdout)")
        let rows = lines[(header + 2)...].map { $0.split(separator: " ", omittingEmptySubsequences: true) }
        let ops = Set(rows.compactMap { $0.count >= 7 ? $0.dropLast(6).joined(separator: " ") : nil })
        for op in ["optimizer step", "validation: scores", "validation: rank", "rowDot", "(rest of the fit)"] {
            #expect(ops.contains(op), "no row for \(op): \(ops)")
        }
        let optimizer = rows.first { $0.starts(with: ["optimizer", "step"]) }
        #expect((optimizer.flatMap { Int($0[2]) } ?? 0) >= 2, "one optimizer step per batch, 2 epochs: \(out.stdout)")
        let record = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: w.root + "/out/" + w.resultFiles[0]))) as! [String: Any]
        let profile = (record["training"] as? [String: Any])?["profile"] as? [[String: Any]] ?? []
        #expect(profile.contains { $0["op"] as? String == "optimizer step" && ($0["calls"] as? Int ?? 0) >= 2 })
        // Without the flag nothing is profiled.
        let plain = try w.run(["run", "--model", "BPR", "--config", "run.yml", "--set", "epochs=2", "--json", "--no-save"])
        #expect(!plain.stdout.contains("\"profile\""))
    }

    /// `init_parameters` starts a learned model from a checkpoint: from its own best parameters
    /// with a step too small to move a float32, a run scores exactly as the run that wrote them;
    /// a checkpoint of other shapes is refused naming the parameter.
    @Test func aRunStartsFromTheCheckpointItIsGiven() throws {
        var rows = Workspace.header
        for u in 0..<40 { for i in 0..<30 where (u * 7 + i * 3) % 5 < 2 { rows += "u\(u)\ti\(i)\t\(u * 100 + i)\n" } }
        let w = try Workspace(inter: rows)
        func test(_ extra: [String]) throws -> [String: Double] {
            let out = try w.run(["run", "--model", "BPR", "--config", "run.yml", "--json", "--no-save"] + extra)
            #expect(out.status == 0, "\(out.stderr)")
            let record = try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any]
            return record?["test"] as? [String: Double] ?? [:]
        }
        let trained = try test(["--set", "epochs=20", "--set", "learning_rate=0.05", "--set", "checkpoint_dir=ck", "--set", "seed=7"])
        let file = "ck/BPR-tiny-seed7.params"
        #expect(FileManager.default.fileExists(atPath: w.root + "/" + file))
        let still = ["--set", "epochs=1", "--set", "learning_rate=1e-30", "--set", "seed=8"]
        #expect(try test(still + ["--set", "init_parameters=\(file)"]) == trained)
        #expect(try test(still) != trained, "without the checkpoint the same settings score otherwise")
        let other = try w.run(["run", "--model", "BPR", "--config", "run.yml", "--set", "embedding_size=8", "--set", "init_parameters=\(file)", "--no-save"])
        #expect(other.status != 0 && other.stderr.contains(file) && other.stderr.contains("needs"), "\(other.stderr)")
    }

    /// `thread_split` decides each phase's OpenBLAS threads, and the record says what ran.
    @Test func theThreadSplitIsAppliedPerPhaseAndRecorded() throws {
        let w = try Workspace()
        func threads(_ split: String) throws -> [String: Int] {
            let out = try w.run(["run", "--model", "BPR", "--config", "run.yml", "--set", "epochs=1", "--set", "threads=2",
                                 "--set", "thread_split=\(split)", "--json", "--no-save"])
            #expect(out.status == 0, "\(out.stderr)")
            let record = try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any]
            return record?["threads"] as? [String: Int] ?? [:]
        }
        let auto = try threads("auto"), workers = try threads("workers"), blas = try threads("blas")
        #expect(auto["training_blas"] == (ThreadSplit.auto.blasOnEveryThread(in: .training) ? 2 : 1)
                && auto["evaluation_blas"] == (ThreadSplit.auto.blasOnEveryThread(in: .evaluation) ? 2 : 1), "\(auto)")
        #expect(workers["training_blas"] == 1 && workers["evaluation_blas"] == 1, "\(workers)")
        #expect(blas["training_blas"] == 2 && blas["evaluation_blas"] == 2, "\(blas)")
        try expectFailure(w, ["run", "--model", "BPR", "--config", "run.yml", "--set", "thread_split=fast"],
                          mentions: ["thread_split", "auto, workers, blas", "fast"])
    }

    @Test func malformedHeader() throws {
        let w = try Workspace(inter: "user_id:token\titem_id\ttimestamp:float\nu1\ti1\t1\n")
        try expectFailure(w, ["run", "--model", "Pop", "--config", "run.yml"], mentions: ["tiny.inter:1", "item_id"])
    }

    @Test func wrongColumnCount() throws {
        let w = try Workspace(inter: "user_id:token\titem_id:token\ttimestamp:float\nu1\ti1\t1\nu2\ti2\n")
        try expectFailure(w, ["run", "--model", "Pop", "--config", "run.yml"], mentions: ["tiny.inter:3", "expected 3 fields"])
    }

    @Test func nonNumericFloat() throws {
        let w = try Workspace(inter: "user_id:token\titem_id:token\ttimestamp:float\nu1\ti1\t1\nu2\ti2\tnoon\n")
        try expectFailure(w, ["run", "--model", "Pop", "--config", "run.yml"], mentions: ["tiny.inter:3", "'timestamp'", "not a number"])
    }

    @Test func missingFile() throws {
        let w = try Workspace()
        try expectFailure(w, ["run", "--model", "Pop", "--config", "run.yml", "--dataset", "absent"], mentions: ["absent/absent.inter", "not found"])
        try expectFailure(w, ["run", "--model", "Pop", "--config", "nope.yml"], mentions: ["nope.yml", "not found"])
    }

    @Test func unknownModel() throws {
        let w = try Workspace()
        try expectFailure(w, ["run", "--model", "EASY", "--config", "run.yml"], mentions: ["unknown model", "did you mean 'EASE'"])
    }

    @Test func unknownConfigKey() throws {
        let w = try Workspace()
        try "topkk: [5]\n".write(toFile: w.root + "/extra.yml", atomically: true, encoding: .utf8)
        try expectFailure(w, ["run", "--model", "Pop", "--config", "run.yml", "--config", "extra.yml"],
                          mentions: ["extra.yml:1", "'topkk'", "did you mean 'topk'"])
        try expectFailure(w, ["run", "--model", "Pop", "--config", "run.yml", "--set", "sead=3"], mentions: ["--set", "'sead'", "did you mean 'seed'"])
    }

    @Test func modelsListsEveryRegisteredModel() throws {
        let out = try Workspace().run(["models"])
        for name in ["Pop", "ItemKNN", "EASE"] { #expect(out.stdout.contains(name)) }
    }
}
