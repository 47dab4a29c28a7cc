import Foundation
import Linalg
import RecBenchSupport
import RecBenchModels

/// Runs a sweep's runs, each as its own `recbench run` (or, tuned, `recbench tune`) process (so a crash or a kill loses at
/// most the runs in flight), at most `jobs` at once, and records each outcome in the store:
/// a finished run's record is written by the run itself; a failed run gets a failure record
/// with its last error line, which the next sweep retries and a later success removes.
public struct SweepExecutor: Sendable {
    /// What happened to a run, for progress output (`index` is its place in the runs given).
    public enum Event: Sendable {
        case skipped(index: Int, run: SweepRun)
        case started(index: Int, run: SweepRun)
        /// Finished and stored; `summary` is its headline test metric (" · test ndcg@10 0.1264").
        case finished(index: Int, run: SweepRun, seconds: Double, summary: String)
        case failed(index: Int, run: SweepRun, seconds: Double, error: String)
    }

    /// Counts of one call's runs.
    public struct Counts: Sendable, Equatable {
        public var completed = 0, skipped = 0, failed = 0
    }

    /// The `recbench` binary that runs each run.
    public let executable: String
    /// The sweep's `--config` files and `--dataset`, passed to every run.
    public let configFiles: [String]
    public let dataset: String?
    /// Runs in parallel.
    public let jobs: Int
    /// Each (untuned) run also writes its ranked lists (`run --save-lists`).
    public var lists = false

    /// An executor running `executable`.
    public init(executable: String, configFiles: [String], dataset: String?, jobs: Int) {
        self.executable = executable; self.configFiles = configFiles; self.dataset = dataset; self.jobs = max(1, jobs)
    }

    /// Runs every run of `runs` that has no stored record yet; reports each step to `onEvent`.
    public func run(_ runs: [SweepRun], onEvent: (Event) -> Void) throws -> Counts {
        var outcome = Counts()
        var queue: [(Int, SweepRun)] = []
        for (index, run) in runs.enumerated() {
            if SweepPlanner.isDone(run) {
                AtomicWrite.remove(run.files.failure)
                outcome.skipped += 1
                onEvent(.skipped(index: index, run: run))
            } else {
                queue.append((index, run))
            }
        }
        Self.removeStaleLogFolders()
        let logs = NSTemporaryDirectory() + "recbench-sweep-\(getpid())"
        try? FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: logs) }
        var pending = queue[...]
        var running: [pid_t: (index: Int, run: SweepRun, log: String, started: ContinuousClock.Instant)] = [:]
        while !pending.isEmpty || !running.isEmpty {
            while running.count < jobs, let (index, run) = pending.popFirst() {
                let log = "\(logs)/\(run.runKey.prefix(16)).log"
                running[try start(run, log: log)] = (index, run, log, ContinuousClock.now)
                onEvent(.started(index: index, run: run))
            }
            let (pid, status, _) = ChildProcess.waitAny()
            guard let done = running.removeValue(forKey: pid) else { continue }
            let seconds = (ContinuousClock.now - done.started).seconds
            if status == 0 && SweepPlanner.isDone(done.run) {
                AtomicWrite.remove(done.run.files.failure)
                outcome.completed += 1
                onEvent(.finished(index: done.index, run: done.run, seconds: seconds, summary: Self.summary(done.run)))
            } else {
                let error = Self.lastErrorLine(done.log) ?? "exited with status \(status)"
                try Self.recordFailure(done.run, error: error)
                outcome.failed += 1
                onEvent(.failed(index: done.index, run: done.run, seconds: seconds, error: error))
            }
            unlink(done.log)
        }
        return outcome
    }

    /// Starts `recbench run` for one run as its own process, its stderr going to `log`.
    func start(_ run: SweepRun, log: String) throws -> pid_t {
        var arguments = [run.tune == nil ? "run" : "tune", "--model", run.model, "--quiet"]
        if let trials = run.tune?.trials { arguments += ["--trials", String(trials)] }
        if let seconds = run.tune?.seconds { arguments += ["--budget-seconds", String(seconds)] }
        if lists && run.tune == nil { arguments.append("--save-lists") }
        for file in configFiles { arguments += ["--config", file] }
        for assignment in run.assignments { arguments += ["--set", assignment] }
        if let dataset { arguments += ["--dataset", dataset] }
        return try ChildProcess.start(executable, arguments, stderrPath: log)
    }

    /// Writes a failed run's record (with its error), so `--list` shows it and the next sweep retries it.
    static func recordFailure(_ run: SweepRun, error: String) throws {
        let record = FailedRun(model: run.model, dataset: run.dataset, runKey: run.runKey,
                               label: run.label, error: error, finishedAt: ISO8601DateFormatter().string(from: Date()))
        try ResultStore.saveFailure(record, to: run.files)
    }

    /// Whether the run is done, failed (with a failure record) or pending.
    /// A pending or failed run whose training was saved says after which epoch it continues.
    public static func status(_ run: SweepRun) -> String {
        if SweepPlanner.isDone(run) { return "done" }
        let status = FileManager.default.fileExists(atPath: run.files.failure) ? "failed" : "pending"
        return status + (savedEpochs(run).map { ", training saved after epoch \($0)" } ?? "")
    }

    /// The epochs a run's saved training state holds (nil: none).
    public static func savedEpochs(_ run: SweepRun) -> Int? { SavedTrainingFile.epochs(at: run.files.path(.training)) }

    /// Deletes the run-log folders of sweeps that were killed (`recbench-sweep-<pid>` whose
    /// process no longer exists); a finished sweep removes its own.
    static func removeStaleLogFolders() {
        let temp = NSTemporaryDirectory()
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: temp)) ?? [] where entry.hasPrefix("recbench-sweep-") {
            guard let pid = pid_t(entry.dropFirst("recbench-sweep-".count)), pid != getpid(), !AtomicWrite.isAlive(pid) else { continue }
            try? FileManager.default.removeItem(atPath: temp + entry)
        }
    }

    /// " · test ndcg@10 0.1264" from the stored result, when it has that key.
    static func summary(_ run: SweepRun) -> String {
        guard let data = FileManager.default.contents(atPath: run.files.record),
              let r = try? JSONDecoder().decode(RunResult.self, from: data),
              let key = r.metricKeys.first(where: { $0.hasPrefix("ndcg@") }) ?? r.metricKeys.first,
              let value = r.test[key] else { return "" }
        return " · test \(key) \(String(format: "%.4f", value))"
    }

    /// The run's last error line from its log (without the `recbench: error: ` prefix).
    static func lastErrorLine(_ path: String) -> String? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        return text.split(separator: "\n").last(where: { $0.contains("error") }).map { String($0).replacingOccurrences(of: "recbench: error: ", with: "") }
            ?? text.split(separator: "\n").last.map(String.init)
    }
}
