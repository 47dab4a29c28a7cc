import ArgumentParser
import Foundation
import RecBenchCore

public struct Tune: ParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        abstract: "Search a model's hyperparameters on the valid split; then one test run with the best values.",
        discussion: """
            Each trial fits the model with sampled values on the train split and scores \
            `valid_metric` on the valid split (the data is loaded and split once). Every trial \
            is stored atomically under results_dir/<dataset>/tune/<model>-<search key>/ when it \
            ends (finished, pruned or failed), so a killed search resumes without redoing one; \
            --shard i/N lets N processes search into one folder (trial k belongs to shard \
            1 + k mod N; each reads every stored trial before proposing). When all trials are \
            stored, the best finished trial's values get one ordinary run, the only one that \
            sees the test split, stored with how it was tuned.

            The space file is RecBole's hyper-parameter file as is (`learning_rate loguniform \
            -8,0`, `embedding_size choice [64,96,128]`, `uniform low,high`, `quniform \
            low,high,q`; loguniform bounds are natural logs), or YAML in RecBole's dict form \
            ({loguniform: {learning_rate: [-8, 0]}}). Without --space the model's declared \
            space is searched (`recbench models --defaults` lists it).

            Progress: one line per ended trial on stderr (its values, valid metric, the best so \
            far, ETA), led by a bar of stored trials against --trials when stderr is a terminal.
            """)

    @Option(name: .shortAndLong, help: "Model to tune (see `recbench models`); default: the config's `model` key.")
    public var model: String?

    @OptionGroup public var experiment: ExperimentOptions

    @Option(help: "The search space file (RecBole's hyper-parameter format or YAML); default: the model's declared space.")
    public var space: String?

    @Option(help: "Trials in all (every shard's together).")
    public var trials: Int?

    @Option(help: "Stop proposing trials after this many seconds (the trial in progress finishes).")
    public var budgetSeconds: Double?

    @Option(help: "tpe (Tree-structured Parzen Estimator) or random.")
    public var sampler: SamplerName = .tpe

    @Option(help: "TPE: random trials before the estimator takes over.")
    public var startupTrials = 10

    @Option(help: ArgumentHelp("median (stop a trial whose best validation value falls below the median of finished trials at that epoch, "
                               + "from epoch W after 5 finished trials), halving (successive halving: at epochs W, 3W, 9W, … keep the top "
                               + "third of the trials that got there) or none; W is --pruner-warmup."))
    public var pruner: PrunerName = .median

    @Option(help: ArgumentHelp("Epochs a trial trains before the pruner may stop it (the median rule's first epoch, halving's first rung). "
                               + "Raise it for models whose validation dips and recovers, e.g. BPR at learning rates above 3e-3.",
                               valueName: "epochs"))
    public var prunerWarmup = 5

    @Option(help: ArgumentHelp("Run only shard i of N: trials k with k mod N = i − 1.", valueName: "i/N"))
    public var shard: String?

    @Flag(help: ArgumentHelp("Run no new trial: only the test run of the best stored trial (after a time-budgeted sharded search); "
                             + "give it with the search's own --trials/--budget-seconds, which name the tuned run a sweep looks for."))
    public var finish = false

    @OptionGroup public var logging: LoggingOptions

    public enum SamplerName: String, ExpressibleByArgument, CaseIterable, Sendable { case tpe, random }
    public enum PrunerName: String, ExpressibleByArgument, CaseIterable, Sendable { case median, halving, none }

    public func validate() throws {
        guard trials != nil || budgetSeconds != nil else {
            throw ValidationError(finish
                ? "--finish needs the search's own --trials N and/or --budget-seconds S: they name its tuned run (the one a sweep looks for)"
                : "give --trials N, --budget-seconds S, or both (with --finish: test the best stored trial)")
        }
        if finish, shard != nil { throw ValidationError("--finish runs the test once for the whole search: give it without --shard") }
        if let trials, trials < 1 { throw ValidationError("--trials must be at least 1, got \(trials)") }
        if let budgetSeconds, !(budgetSeconds > 0) { throw ValidationError("--budget-seconds must be positive, got \(budgetSeconds)") }
        guard startupTrials >= 0 else { throw ValidationError("--startup-trials must be at least 0") }
        guard prunerWarmup >= 1 else { throw ValidationError("--pruner-warmup must be at least 1 epoch, got \(prunerWarmup)") }
        if let shard { do { _ = try Shard(parsing: shard) } catch { throw ValidationError("\(error)") } }
    }

    public func run() throws {
        let logger = logging.makeLogger()
        try reportingErrors {
            let request = SearchRequest(
                run: RunRequest(model: model, configFiles: experiment.config, assignments: experiment.assignments, dataset: experiment.dataset),
                space: try space.map(SearchSpace.file), sampler: sampler == .tpe ? TPESampler(startupTrials: startupTrials) : RandomSampler(),
                pruner: [.median: MedianPruner(warmupEpochs: prunerWarmup), .halving: HalvingPruner(minimumEpochs: prunerWarmup)][pruner],
                trials: trials, budgetSeconds: budgetSeconds,
                shard: try shard.map(Shard.init(parsing:)), finishOnly: finish)
            let quiet = logging.quiet
            let outcome = try Search.run(request, logger: logger) { event in if !quiet { Tune.report(event) } }
            Tune.summary(outcome, timeBudgetedShard: trials == nil && shard != nil)
            if outcome.best == nil, let failed = outcome.trials.first(where: { $0.state == .failed }) {
                throw RecBenchError(location: outcome.store.folder, "no trial finished: all \(outcome.trials.count) failed; "
                                    + "trial \(failed.number + 1): \(failed.error ?? "no message")")
            }
        }
    }

    static func report(_ event: SearchEvent) {
        switch event {
        case .started(let folder, let space, let stored):
            Terminal.writeError("search  \(space.description.split(separator: "\n").joined(separator: " · "))\n"
                                + "trials  \(folder)\(stored > 0 ? " (\(stored) stored: resuming)" : "")\n")
        case .trial(let trial, let best, let done, let target, let eta):
            // On a TTY a bar of the stored trials against the target leads each line (a budget alone has no target).
            let bar = Terminal.stderrIsTTY ? target.map { Terminal.bar(done, of: $0) } ?? "" : ""
            Terminal.writeError(bar + trialLine(trial, best: best, done: done, target: target, eta: eta) + "\n")
        case .finalRun(let values):
            Terminal.writeError("test    one run with the best values: \(describe(values))\n")
        }
    }

    /// "trial 7/20 · learning_rate=0.0031 · valid MRR@10 0.3012 (pruned at 6) · best 0.3120 (trial 4) · 12.3 s · ETA 2.1 min"
    static func trialLine(_ trial: TrialRecord, best: TrialRecord?, done: Int, target: Int?, eta: Double?) -> String {
        var parts = ["trial \(trial.number + 1)\(target.map { "/\($0)" } ?? "")", describe(trial.values)]
        switch trial.state {
        case .failed: parts.append("FAILED: \(trial.error ?? "")")
        case .finished, .pruned:
            let value = trial.objective.map { String(format: "%.4f", $0) } ?? "–"
            let how = trial.sameAs.map { " (same values as trial \($0 + 1))" }
                ?? (trial.state == .pruned ? " (pruned at epoch \(trial.curve.last?.epoch ?? 0))" : "")
            parts.append("valid \(trial.validMetric) \(value)\(how)")
        }
        if let best, let objective = best.objective { parts.append("best \(String(format: "%.4f", objective)) (trial \(best.number + 1))") }
        parts.append(String(format: "%.1f s", trial.seconds))
        if let eta, eta > 0 { parts.append("ETA \(eta < 120 ? String(format: "%.0f s", eta) : String(format: "%.1f min", eta / 60))") }
        return parts.joined(separator: " · ")
    }

    static func describe(_ values: [String: ConfigValue]) -> String { TuningRecord.describe(values, separator: " ") }

    static func summary(_ outcome: SearchOutcome, timeBudgetedShard: Bool) {
        let trials = outcome.trials
        let counts = [TrialRecord.State.finished, .pruned, .failed].map { s in "\(trials.filter { $0.state == s }.count) \(s.rawValue)" }
        Terminal.out("search    \(trials.count) trials (\(counts.joined(separator: ", "))) in \(outcome.store.folder)")
        guard let best = outcome.best else {
            Terminal.out("best      none: no trial finished")
            return
        }
        let objective = String(format: "%.4f", best.objective ?? .nan)
        Terminal.out("best      trial \(best.number + 1): \(describe(best.values)) · valid \(best.validMetric) \(objective)")
        guard let final = outcome.final else {
            Terminal.out(timeBudgetedShard
                ? "test      not run by a shard of a time-budgeted search: once every shard has stopped, rerun without --shard and with --finish"
                : "test      not run yet: other shards' trials are outstanding (rerun `recbench tune` without --shard once they finish)")
            return
        }
        let report = RunReport(decimals: 4, enabled: true)
        Terminal.out()
        Terminal.out(report.table(title: "test (tuned)", keys: final.metricKeys, values: final.test))
        if let path = outcome.savedPath { Terminal.out(); Terminal.out("result    \(path)") }
    }
}
