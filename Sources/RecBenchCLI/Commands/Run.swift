import ArgumentParser
import Foundation
import RecBenchCore
import Linalg

public struct Run: ParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        abstract: "Fit one model and evaluate it on the valid and test splits.",
        discussion: """
            Config layers, later wins: built-in defaults (the model's declared ones) < each \
            --config file in order < --set key=value < --dataset. Each run writes one JSON \
            result to results_dir/<dataset>/ (atomically) unless --no-save is given.

            Metrics (config key `metrics`, each at every `topk` cutoff but GAUC, which ranks every item): \
            \(MetricRegistry.names.joined(separator: ", ")). Under eval_args.mode: labeled (context-aware models, \
            labels from `threshold`), RecBole's value metrics over every labelled row instead: \
            \(ValueMetric.allCases.map(\.rawValue).joined(separator: ", ")).
            """)

    @Option(name: .shortAndLong, help: "Model to run (see `recbench models`); default: the config's `model` key.")
    public var model: String?

    @OptionGroup public var experiment: ExperimentOptions

    @Flag(help: "Print the result record as JSON on stdout instead of tables.")
    public var json = false

    @Flag(help: "Print the effective config with the origin of every value, then run.")
    public var showConfig = false

    @Flag(help: "Do not write the result file.")
    public var noSave = false

    @Flag(help: "Also write per-user metrics (one row per split, user token, metric) beside the result, as .users.csv and .users.jsonl.")
    public var perUser = false

    @Flag(help: ArgumentHelp("Also write each evaluated user's (next-item example's) ranked list of valid and test beside the result, as "
                             + ".lists.csv: split, user, rank, item, before (1: in the user's earlier splits; next-item: earlier in the sequence), "
                             + "hit (1: an answer). A later run of the same settings without --save-lists removes them."))
    public var saveLists = false

    @Flag(help: ArgumentHelp("Time every autodiff op (forward and backward) and the trainer's phases, and print where training went "
                             + "(stored with the result as training.profile)."))
    public var profile = false

    @OptionGroup public var logging: LoggingOptions

    public func run() throws {
        let logger = logging.makeLogger()
        try reportingErrors {
            if saveLists && noSave {
                throw RecBenchError(field: "--save-lists", "the lists are written beside the stored result, which --no-save does not write; drop one")
            }
            let plan = try Experiment.plan(RunRequest(
                model: model, configFiles: experiment.config, assignments: experiment.assignments,
                dataset: experiment.dataset))
            if plan.evaluation.isLabeled, let flag = perUser ? "--per-user" : saveLists ? "--save-lists" : nil {
                throw RecBenchError(field: flag, "eval_args.mode is labeled, which scores each labelled row and ranks nothing, so there are no "
                                    + "per-user values or lists to export; drop \(flag), or rank (mode: full) to have them")
            }
            for notice in plan.notices { logger.notice("\(notice)") }
            if showConfig {
                Terminal.out("# effective config for \(plan.modelType.name)")
                Terminal.out(plan.config.rendered())
                Terminal.out()
            }
            let report = RunReport(decimals: plan.evaluation.decimalPlaces, enabled: !json && !logging.quiet,
                                   epochLines: !logging.quiet, bar: Terminal.stderrIsTTY && !logging.quiet,
                                   validMetric: plan.evaluation.validMetric, rows: plan.evaluationProtocol == .nextItem ? "examples" : "users",
                                   tables: !json)
            report.header(plan)
            let outcome = try Experiment.run(plan, logger: logger, profile: profile ? OpProfile() : nil, resumable: !noSave, lists: saveLists) {
                report.event($0)
            }
            var savedPath: String?
            if !noSave { savedPath = try ResultStore(root: plan.resultsDirectory).save(outcome.result, perUser: outcome.perUser, lists: outcome.lists) }
            if perUser {
                let exported = try ResultStore(root: plan.resultsDirectory).exportPerUser(outcome.result, perUser: outcome.perUser, test: outcome.test)
                if !json { Terminal.out("per-user  \(exported.csv), \(exported.jsonLines)") }
            }
            if let saved = savedPath, saveLists, !json { Terminal.out("lists     \(RunFiles(record: saved).path(.lists))") }
            if json {
                Terminal.out(String(decoding: try ResultStore.encode(outcome.result), as: UTF8.self).trimmingCharacters(in: .newlines))
            } else {
                report.footer(outcome, savedPath: savedPath)
                if let training = outcome.result.training, let entries = training.profile {
                    Terminal.out()
                    Terminal.out(RunReport.profileTable(entries, fitSeconds: outcome.result.seconds["fit"] ?? 0))
                }
            }
        }
    }
}

/// The human-readable output of `run`: a header, one line per phase, metric tables.
struct RunReport: Sendable {
    let decimals: Int
    let enabled: Bool
    /// Per-epoch lines on stderr (all but --quiet): under nohup or a scheduler they are the log.
    public var epochLines = false
    /// A batch progress bar (stderr is a terminal).
    public var bar = false
    public var validMetric = ""
    /// What an evaluation row is ("users" or "examples"), from the plan.
    public var rows = "users"
    /// The metric tables (all but --json); with --quiet they are all that is printed.
    public var tables = true

    func header(_ plan: ExperimentPlan) {
        guard enabled else { return }
        Terminal.out("recbench \(recbenchVersion) · \(plan.modelType.name) on \(plan.data.dataset) · history mask: \(plan.evaluation.historyMask.rawValue)"
                     + " · evaluation: \(plan.evaluationProtocol.rawValue)")
        let params = plan.parameters.resolved.keys.sorted().map { "\($0)=\(plan.parameters.resolved[$0]!)" }
        if !params.isEmpty { Terminal.out("model     \(params.joined(separator: " · "))") }
        let unused = plan.data.unusedColumns.keys.sorted().flatMap { suffix in plan.data.unusedColumns[suffix]!.map { "\(suffix).\($0)" } }
        if !unused.isEmpty { Terminal.out("columns   not model inputs (unused_col): \(unused.joined(separator: ", "))") }
    }

    func event(_ event: Experiment.Event) {
        switch event {
        case .epoch(let e):
            guard epochLines else { return }
            Terminal.writeError("\(bar ? "\r\u{1B}[K" : "")\(epochLine(e))\n")
            return
        case .batch(let done, let total, let elapsed):
            guard bar, total > 1 else { return }
            let width = 24, filled = width * done / total
            let eta = done > 0 ? elapsed / Double(done) * Double(total - done) : 0
            Terminal.writeError("\r\u{1B}[K  [\(String(repeating: "█", count: filled))\(String(repeating: "░", count: width - filled))] "
                                + "batch \(done)/\(total) · ETA \(String(format: "%.1f", eta)) s")
            return
        default:
            break
        }
        guard enabled else { return }
        switch event {
        case .epoch, .batch:
            break
        case .loaded(let s, let seconds):
            Terminal.out("dataset   \(group(s.users)) users · \(group(s.items)) items · \(group(s.interactions)) interactions · "
                         + "sparsity \(String(format: "%.2f", s.sparsity * 100))% (\(time(seconds)))")
        case .split(let s, let seconds):
            Terminal.out("split     train \(group(s.train)) · valid \(group(s.valid)) · test \(group(s.test)) · "
                         + "evaluated \(rows) valid \(group(s.validUsers)) / test \(group(s.testUsers)) (\(time(seconds)))")
        case .fields(let fields):
            for (k, f) in fields.enumerated() {
                let size = f.type == .float ? "numerical" : "\(group(f.cardinality - 1)) values + padding"
                Terminal.out("\(k == 0 ? "fields   " : "         ") \(f.name) (\(f.side.rawValue), \(f.type.rawValue), \(f.file), \(size))")
            }
        case .fitted(let seconds):
            Terminal.out("fit       \(time(seconds))")
        case .evaluated(let r):
            Terminal.out("evaluate  \(r.part.name) \(time(r.seconds))")
        }
    }

    /// "epoch  7/50 · loss 0.1234 · valid MRR@10 0.2100 * · best 0.2100 (7) · 0.81 s · ETA ≤ 35 s"
    func epochLine(_ e: EpochReport) -> String {
        var parts = ["epoch \(String(format: "%3d", e.epoch))/\(e.epochs)", "loss \(String(format: "%.4f", e.loss))"]
        if let v = e.validScore { parts.append("valid \(validMetric) \(String(format: "%.4f", v))\(e.improved ? " *" : "")") }
        if let best = e.best { parts.append("best \(String(format: "%.4f", best.score)) (\(best.epoch))") }
        parts.append(time(e.seconds))
        if e.epoch < e.epochs { parts.append("ETA ≤ \(time(e.remainingSeconds))") }
        return parts.joined(separator: " · ")
    }

    func footer(_ outcome: RunOutcome, savedPath: String?) {
        guard tables else { return }
        let r = outcome.result
        let s = r.seconds
        if enabled {
            Terminal.out("time      load \(time(s["load"]!)) · split \(time(s["split"]!)) · fit \(time(s["fit"]!)) · "
                         + "evaluate \(time(s["evaluate_valid"]! + s["evaluate_test"]!)) · total \(time(s["total"]!)) · "
                         + "peak memory \(Int(r.peakMemoryMiB.rounded())) MiB")
        }
        if let valid = outcome.valid {
            if enabled { Terminal.out() }
            Terminal.out(table(title: "valid (\(counted(valid)))", keys: r.metricKeys, values: r.valid))
        }
        Terminal.out()
        Terminal.out(table(title: "test (\(counted(outcome.test)))", keys: r.metricKeys, values: r.test))
        if let line = Self.repeatModeLine(r.analyses["test"] ?? [:]) { Terminal.out(); Terminal.out(line) }
        if let savedPath, enabled {
            Terminal.out()
            Terminal.out("result    \(savedPath)")
        }
    }

    /// A repeat-aware model's switch on the test rows (RepeatNet), when it has one.
    static func repeatModeLine(_ analyses: [String: Double]) -> String? {
        guard let mean = analyses["repeat_mode_mean"] else { return nil }
        func f(_ key: String) -> String { analyses[key].map { String(format: "%.3f", $0) } ?? "–" }
        return "repeat mode (test): mean P(repeat) \(String(format: "%.3f", mean)) · rows whose target is a repeat "
            + "\(f("repeat_mode_mean_repeat_targets")), new \(f("repeat_mode_mean_new_targets")) · AUC \(f("repeat_mode_auc"))"
    }

    /// Where training's time went: one row per op or phase, most time first, each with its
    /// share of the fit; the rest of the fit (outside every timed op and phase) last.
    static func profileTable(_ entries: [OpProfileEntry], fitSeconds: Double) -> String {
        let width = max(28, (entries.map(\.op.count).max() ?? 0) + 2)
        func row(_ cells: [String]) -> String {
            cells[0].padding(toLength: width, withPad: " ", startingAt: 0)
                + cells.dropFirst().map { String(repeating: " ", count: max(1, 11 - $0.count)) + $0 }.joined()
        }
        func seconds(_ s: Double) -> String { String(format: "%.4f", s) }
        func share(_ s: Double) -> String { fitSeconds > 0 ? String(format: "%.1f %%", 100 * s / fitSeconds) : "–" }
        var lines = ["where training went (fit \(String(format: "%.2f", fitSeconds)) s; an op's forward includes building its inputs)",
                     row(["op or phase", "calls", "forward s", "backward s", "total s", "of fit"])]
        for e in entries {
            lines.append(row([e.op, String(e.calls), seconds(e.forwardSeconds), seconds(e.backwardSeconds), seconds(e.totalSeconds), share(e.totalSeconds)]))
        }
        let rest = fitSeconds - entries.reduce(0) { $0 + $1.totalSeconds }
        lines.append(row(["(rest of the fit)", "–", "–", "–", seconds(rest), share(rest)]))
        return lines.joined(separator: "\n")
    }

    /// What a split's table counts: its evaluated rows (users or examples), or its labelled rows.
    private func counted(_ e: EvaluationResult) -> String {
        e.labelledRows > 0 ? "\(group(e.labelledRows)) labelled rows" : "\(group(e.users.count)) \(rows)"
    }

    /// Metrics as rows, cutoffs as columns, in config order; columns sized to their values.
    func table(title: String, keys: [String], values: [String: Double]) -> String {
        var metrics: [String] = [], cutoffs: [String] = []
        for key in keys.compactMap(MetricKey.init(parsing:)) {
            if !metrics.contains(key.name) { metrics.append(key.name) }
            if !cutoffs.contains(String(key.k)) { cutoffs.append(String(key.k)) }
        }
        let cells = metrics.map { m in
            cutoffs.map { k in values[MetricKey(m, k: Int(k)!).description].map { String(format: "%.\(decimals)f", $0) } ?? "–" }
        }
        let nameWidth = max(24, title.count + 1, (metrics.map(\.count).max() ?? 0) + 3)
        let cell = max(cells.flatMap { $0 }.map(\.count).max() ?? 0, cutoffs.map { $0.count + 1 }.max() ?? 0) + 2
        var lines = [title.padding(toLength: nameWidth, withPad: " ", startingAt: 0) + cutoffs.map { pad("@" + $0, cell) }.joined()]
        for (m, row) in zip(metrics, cells) {
            lines.append(("  " + m).padding(toLength: nameWidth, withPad: " ", startingAt: 0) + row.map { pad($0, cell) }.joined())
        }
        // A metric without a cutoff (GAUC ranks every item): its one value under the first column.
        for key in keys where MetricKey(parsing: key) == nil {
            let value = values[key].map { String(format: "%.\(decimals)f", $0) } ?? "–"
            lines.append(("  " + key + (key == GAUC.key ? " (all items)" : "")).padding(toLength: nameWidth, withPad: " ", startingAt: 0) + pad(value, cell))
        }
        return lines.joined(separator: "\n")
    }

    private func pad(_ s: String, _ width: Int) -> String {
        String(repeating: " ", count: max(1, width - s.count)) + s
    }

    private func time(_ seconds: Double) -> String {
        seconds < 0.1 ? String(format: "%.3f s", seconds) : String(format: "%.2f s", seconds)
    }

    private func group(_ n: Int) -> String {
        let digits = String(n)
        var out = ""
        for (i, ch) in digits.reversed().enumerated() {
            if i > 0 && i % 3 == 0 { out.append(",") }
            out.append(ch)
        }
        return String(out.reversed())
    }
}
