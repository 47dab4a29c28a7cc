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
            added as the repeat baseline. The ETA counts each run as long as earlier runs of \
            its model on the same data took (any settings), else as this sweep's mean run.
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

    @Option(help: ArgumentHelp("Also tune every model (that declares a search space) with N trials of `recbench tune` "
                               + "(TPE, median pruner): each model's tuned test run joins the sweep beside its default one.", valueName: "N"))
    public var tune: Int?

    @Option(help: "Also tune every model, each search limited to this many seconds (with --tune: whichever ends first).")
    public var tuneSeconds: Double?

    @Flag(help: "Print the planned runs (run key, shard under --shard, done / failed / pending) and exit.")
    public var list = false

    @Flag(help: "Each run also writes its ranked lists (as `run --save-lists`; not the tuned runs; runs already stored are not run again for them).")
    public var saveLists = false

    @OptionGroup public var logging: LoggingOptions

    public func validate() throws {
        guard jobs >= 1 else { throw ValidationError("--jobs must be at least 1") }
        guard !experiment.config.isEmpty else { throw ValidationError("give at least one --config") }
        guard models.split(separator: ",").contains(where: { !$0.trimmingCharacters(in: .whitespaces).isEmpty }) else {
            throw ValidationError("--models is empty: give `all` or a comma-separated list of models")
        }
        if let shard { do { _ = try Shard(parsing: shard) } catch { throw ValidationError("\(error)") } }
        if let tune, tune < 1 { throw ValidationError("--tune must be at least 1 trial, got \(tune)") }
        if let tuneSeconds, !(tuneSeconds > 0) { throw ValidationError("--tune-seconds must be positive, got \(tuneSeconds)") }
    }

    public func run() throws {
        let logger = logging.makeLogger()
        let failed: Int = try reportingErrors {
            let names = models.lowercased() == "all" ? [] : models.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }
            let plan = try SweepPlanner.plan(models: names, configFiles: experiment.config, assignments: experiment.assignments,
                                             dataset: experiment.dataset,
                                             tune: tune == nil && tuneSeconds == nil ? nil : TuneBudget(trials: tune, seconds: tuneSeconds))
            for notice in plan.notices { logger.notice("\(notice)") }
            if saveLists, let labeled = plan.runs.first(where: { !$0.ranks }) {
                throw RecBenchError(field: "--save-lists", "\(labeled.label) is evaluated on labelled rows (eval_args.mode: labeled), which ranks "
                                    + "nothing: there are no lists to write; drop --save-lists")
            }
            let part = try shard.map(Shard.init(parsing:))
            if list { Sweep.list(plan.runs, shard: part); return 0 }
            let runs = part.map { $0.runs(of: plan.runs) } ?? plan.runs
            if let part { logger.notice("shard \(part): \(runs.count) of the plan's \(plan.runs.count) runs") }
            let total = runs.count
            var progress = Progress(total: total, done: 0, jobs: jobs, quiet: logging.quiet)
            var previous: [String: Double?] = [:]   // one read of the folder per model and data, not per run
            progress.expected = runs.map { run in
                if SweepPlanner.isDone(run) { return 0 }
                let key = "\((run.files.record as NSString).deletingLastPathComponent)\u{1}\(run.model)\u{1}\(run.datasetFingerprint)"
                if previous[key] == nil { previous[key] = SweepPlanner.previousSeconds(run) }
                // A tuned run is a search: its trials each take about a run, within its seconds.
                guard let tune = run.tune else { return previous[key]! }
                let trials = previous[key]!.flatMap { one in tune.trials.map { one * Double($0) } }
                return [trials, tune.seconds].compactMap { $0 }.min()
            }
            var executor = SweepExecutor(executable: ChildProcess.selfPath, configFiles: experiment.config, dataset: experiment.dataset, jobs: jobs)
            executor.lists = saveLists
            let outcome = try executor.run(runs) { event in
                switch event {
                case .skipped(let index, let run):
                    progress.done += 1
                    progress.settled.insert(index)
                    progress.line("[\(index + 1)/\(total)] \(run.label): already done, skipped")
                case .started(let index, let run):
                    let saved = SweepExecutor.savedEpochs(run).map { ", continuing after epoch \($0)" } ?? ""
                    progress.line("[\(index + 1)/\(total)] \(run.label): started\(saved)")
                case .finished(let index, let run, let seconds, let summary):
                    progress.finished(index, seconds: seconds)
                    progress.line("[\(index + 1)/\(total)] \(run.label): done in \(String(format: "%.2f", seconds)) s\(summary)")
                case .failed(let index, let run, let seconds, let error):
                    progress.finished(index, seconds: seconds)
                    progress.line("[\(index + 1)/\(total)] \(run.label): FAILED: \(error)", always: true)
                }
            }
            Terminal.out("sweep: \(total) runs — \(outcome.completed) run now, \(outcome.skipped) already done, \(outcome.failed) failed")
            return outcome.failed
        }
        if failed > 0 { throw ExitCode(1) }
    }

    /// The plan as a table on stdout: one line per run, with its shard among `shard.count`.
    static func list(_ runs: [SweepRun], shard: Shard?) {
        for (index, run) in runs.enumerated() {
            let status = SweepExecutor.status(run)
            let part = shard.map { "\tshard \(Shard.of(position: index, count: $0.count))/\($0.count)" } ?? ""
            Terminal.out("\(index + 1)\t\(run.label)\t\(run.runKey.prefix(16))\(part)\t\(status)")
        }
    }
}

/// Sweep progress: one line per run start and end on stderr, with ETA; a bar on a TTY. A
/// run's expected time is that of earlier runs of its model on the same data (any settings)
/// in the results folder, else the mean of this sweep's finished runs; an ETA with runs of
/// neither kind left is a lower bound (≥).
struct Progress {
    let total: Int
    public var done: Int
    let jobs: Int
    /// --quiet: only failures.
    let quiet: Bool
    public var durations: [Double] = []
    /// Per run of the plan, its expected seconds (nil: no earlier run to go by).
    public var expected: [Double?] = []
    /// Runs finished, failed or skipped.
    public var settled = Set<Int>()

    init(total: Int, done: Int, jobs: Int, quiet: Bool = false) {
        self.total = total; self.done = done; self.jobs = jobs; self.quiet = quiet
    }

    mutating func finished(_ index: Int, seconds: Double) {
        done += 1
        durations.append(seconds)
        settled.insert(index)
    }

    /// Seconds left and whether every remaining run had an estimate.
    var remaining: (seconds: Double, complete: Bool)? {
        let mean = durations.isEmpty ? nil : durations.reduce(0, +) / Double(durations.count)
        let left = (0..<total).filter { !settled.contains($0) }.map { i in (i < expected.count ? expected[i] : nil) ?? mean }
        guard !left.isEmpty, left.contains(where: { $0 != nil }) else { return nil }
        return (left.compactMap { $0 }.reduce(0, +) / Double(jobs), !left.contains { $0 == nil })
    }

    func line(_ text: String, always: Bool = false) {
        guard always || !quiet else { return }
        var eta = ""
        if let (seconds, complete) = remaining, done < total {
            eta = " · ETA \(complete ? "" : "≥ ")\(Int(seconds) / 60):\(String(format: "%02d", Int(seconds) % 60))"
        }
        Terminal.writeError("\(Terminal.stderrIsTTY ? Terminal.bar(done, of: total) : "")\(text)\(eta)\n")
    }
}
