import ArgumentParser
import Foundation
import RecBenchCore

public struct Sweep: ParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        abstract: "Run every (model, setting) combination, each as its own stored run; rerun to resume.",
        discussion: """
            `--set key=a,b,c` makes a grid (values split on top-level commas, so \
            `--set topk=[10,20]` stays one value); other --set values apply to every run. Runs \
            go in a fixed order (models as given, then the grid) and each runs in its own \
            process that writes its result atomically. A run whose result already exists for \
            the same run key (model, config, data fingerprint) is skipped, so an interrupted \
            sweep — even by kill -9 — resumes where it stopped. A failing run is recorded as \
            failed with its error and the sweep goes on (failed runs are retried next time); \
            the exit code is 1 if any run failed. On data with repeat purchases RepeatPop is \
            added as the repeat baseline.
            """)

    @OptionGroup public var experiment: ExperimentOptions

    @Option(help: "Models: all, or a comma-separated list.")
    public var models = "all"

    @Option(help: "Runs in parallel (separate processes). Each run also uses `threads` cores.")
    public var jobs = 1

    @Option(help: ArgumentHelp(
        "Run only shard i of N (1 ≤ i ≤ N): every N-th run of the plan, so N machines sharing one results folder together run the whole sweep once.",
        valueName: "i/N"))
    public var shard: String?

    @Flag(help: "Print the planned runs (run key, shard under --shard, done / failed / pending) and exit.")
    public var list = false

    @OptionGroup public var logging: LoggingOptions

    public func validate() throws {
        guard jobs >= 1 else { throw ValidationError("--jobs must be at least 1") }
        guard !experiment.config.isEmpty else { throw ValidationError("give at least one --config") }
        guard models.split(separator: ",").contains(where: { !$0.trimmingCharacters(in: .whitespaces).isEmpty }) else {
            throw ValidationError("--models is empty: give `all` or a comma-separated list of models")
        }
        if let shard { do { _ = try SweepShard(parsing: shard) } catch { throw ValidationError("\(error)") } }
    }

    public func run() throws {
        let logger = logging.makeLogger()
        let failed: Int = try reportingErrors {
            let names = models.lowercased() == "all" ? [] : models.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }
            let plan = try SweepPlanner.plan(models: names, configFiles: experiment.config, assignments: experiment.assignments,
                                             dataset: experiment.dataset)
            for notice in plan.notices { logger.notice("\(notice)") }
            let part = try shard.map(SweepShard.init(parsing:))
            if list { Sweep.list(plan.runs, shard: part); return 0 }
            let runs = part.map { $0.runs(of: plan.runs) } ?? plan.runs
            if let part { logger.notice("shard \(part): \(runs.count) of the plan's \(plan.runs.count) runs") }
            let total = runs.count
            let pending = runs.enumerated().filter { !SweepPlanner.isDone($0.element) }
            let skipped = total - pending.count
            var progress = Progress(total: total, done: skipped, jobs: jobs, quiet: logging.quiet)
            for (index, run) in runs.enumerated() where !pending.contains(where: { $0.offset == index }) {
                AtomicWrite.remove(run.failurePath)
                progress.line("[\(index + 1)/\(total)] \(run.label): already done, skipped")
            }
            var queue = pending[...]
            var running: [pid_t: (index: Int, run: SweepRun, log: String, started: ContinuousClock.Instant)] = [:]
            var failures = 0, completed = 0
            Sweep.removeStaleLogFolders()
            let logDirectory = NSTemporaryDirectory() + "recbench-sweep-\(getpid())"
            try? FileManager.default.createDirectory(atPath: logDirectory, withIntermediateDirectories: true)
            while !queue.isEmpty || !running.isEmpty {
                while running.count < jobs, let (index, run) = queue.popFirst() {
                    let log = "\(logDirectory)/\(run.runKey.prefix(16)).log"
                    let pid = try startRun(run, log: log)
                    running[pid] = (index, run, log, ContinuousClock.now)
                    progress.line("[\(index + 1)/\(total)] \(run.label): started")
                }
                let (pid, status, _) = ChildProcess.waitAny()
                guard let finished = running.removeValue(forKey: pid) else { continue }
                let seconds = (ContinuousClock.now - finished.started).seconds
                let tag = "[\(finished.index + 1)/\(total)] \(finished.run.label)"
                if status == 0 && SweepPlanner.isDone(finished.run) {
                    AtomicWrite.remove(finished.run.failurePath)
                    completed += 1
                    progress.finished(seconds: seconds)
                    progress.line("\(tag): done in \(String(format: "%.2f", seconds)) s\(summary(finished.run))")
                } else {
                    failures += 1
                    progress.finished(seconds: seconds)
                    let error = lastErrorLine(finished.log) ?? "exited with status \(status)"
                    try Sweep.recordFailure(finished.run, error: error)
                    progress.line("\(tag): FAILED: \(error)", always: true)
                }
                unlink(finished.log)
            }
            try? FileManager.default.removeItem(atPath: logDirectory)
            Terminal.out("sweep: \(total) runs — \(completed) run now, \(skipped) already done, \(failures) failed")
            return failures
        }
        if failed > 0 { throw ExitCode(1) }
    }

    /// Starts `recbench run` for one planned run as its own process, its stderr going to `log`; returns the pid.
    func startRun(_ run: SweepRun, log: String) throws -> pid_t {
        var arguments = ["run", "--model", run.model, "--quiet"]
        for file in experiment.config { arguments += ["--config", file] }
        for assignment in run.assignments { arguments += ["--set", assignment] }
        if let dataset = experiment.dataset { arguments += ["--dataset", dataset] }
        return try ChildProcess.start(ChildProcess.selfPath, arguments, stderrPath: log)
    }

    /// Writes a failed run's record (with its error) to its failure path, so `--list` shows it and the next sweep retries it.
    static func recordFailure(_ run: SweepRun, error: String) throws {
        let record = FailedRun(model: run.model, dataset: run.dataset, runKey: run.runKey,
                               label: run.label, error: error, finishedAt: ISO8601DateFormatter().string(from: Date()))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try AtomicWrite.write(try encoder.encode(record), to: run.failurePath)
    }

    /// The plan as a table on stdout: one line per run, with its shard among `shard.count`.
    static func list(_ runs: [SweepRun], shard: SweepShard?) {
        for (index, run) in runs.enumerated() {
            let status = SweepPlanner.isDone(run) ? "done" : FileManager.default.fileExists(atPath: run.failurePath) ? "failed" : "pending"
            let part = shard.map { "\tshard \(SweepShard.of(position: index, count: $0.count))/\($0.count)" } ?? ""
            Terminal.out("\(index + 1)\t\(run.label)\t\(run.runKey.prefix(16))\(part)\t\(status)")
        }
    }

    /// Deletes the run-log folders of sweeps that were killed (`recbench-sweep-<pid>` whose
    /// process no longer exists); a finished sweep removes its own.
    static func removeStaleLogFolders() {
        let temp = NSTemporaryDirectory()
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: temp)) ?? [] where entry.hasPrefix("recbench-sweep-") {
            guard let pid = pid_t(entry.dropFirst("recbench-sweep-".count)), pid != getpid(), !AtomicWrite.isAlive(pid) else { continue }
            try? FileManager.default.removeItem(atPath: temp + entry)
        }
    }

    /// " · ndcg@10 0.1264" from the stored result, when it has that key.
    func summary(_ run: SweepRun) -> String {
        guard let data = FileManager.default.contents(atPath: run.resultPath),
              let r = try? JSONDecoder().decode(RunResult.self, from: data),
              let key = r.metricKeys.first(where: { $0.hasPrefix("ndcg@") }) ?? r.metricKeys.first,
              let value = r.test[key] else { return "" }
        return " · test \(key) \(String(format: "%.4f", value))"
    }

    func lastErrorLine(_ path: String) -> String? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        return text.split(separator: "\n").last(where: { $0.contains("error") }).map { String($0).replacingOccurrences(of: "recbench: error: ", with: "") }
            ?? text.split(separator: "\n").last.map(String.init)
    }
}

/// Sweep progress: one line per run start and end on stderr, with ETA; a bar on a TTY.
struct Progress {
    let total: Int
    public var done: Int
    let jobs: Int
    /// --quiet: only failures.
    let quiet: Bool
    public var durations: [Double] = []

    init(total: Int, done: Int, jobs: Int, quiet: Bool = false) {
        self.total = total; self.done = done; self.jobs = jobs; self.quiet = quiet
    }

    mutating func finished(seconds: Double) {
        done += 1
        durations.append(seconds)
    }

    func line(_ text: String, always: Bool = false) {
        guard always || !quiet else { return }
        var eta = ""
        if !durations.isEmpty && done < total {
            let remaining = durations.reduce(0, +) / Double(durations.count) * Double(total - done) / Double(jobs)
            eta = " · ETA \(Int(remaining) / 60):\(String(format: "%02d", Int(remaining) % 60))"
        }
        if Terminal.stderrIsTTY {
            let width = 20, filled = total == 0 ? width : width * done / total
            let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
            Terminal.writeError("\(bar) \(done)/\(total)  \(text)\(eta)\n")
        } else {
            Terminal.writeError("\(text)\(eta)\n")
        }
    }
}
