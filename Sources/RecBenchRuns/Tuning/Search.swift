import Foundation
import Logging
import Linalg
import RecBenchSupport
import RecBenchData
import RecBenchContract
import RecBenchEvaluation
import RecBenchModels

/// What `recbench tune` asked for.
public struct SearchRequest: Sendable {
    /// The model, config files and overrides every trial starts from.
    public var run: RunRequest
    /// What is searched (nil: the model's declared default space).
    public var space: SearchSpace?
    public var sampler: any TrialSampler
    /// nil: no pruning.
    public var pruner: (any TrialPruner)?
    /// Trials in all (every shard's), and this process's time limit; at least one is set.
    public var trials: Int?
    public var budgetSeconds: Double?
    public var shard: Shard?
    /// Run no new trial: only the test run of the best stored one (after a time-budgeted sharded search).
    public var finishOnly: Bool

    public init(run: RunRequest, space: SearchSpace?, sampler: any TrialSampler, pruner: (any TrialPruner)?, trials: Int?,
                budgetSeconds: Double?, shard: Shard? = nil, finishOnly: Bool = false) {
        self.run = run; self.space = space; self.sampler = sampler; self.pruner = pruner
        self.trials = trials; self.budgetSeconds = budgetSeconds; self.shard = shard; self.finishOnly = finishOnly
    }
}

/// What a search produced.
public struct SearchOutcome: Sendable {
    /// Every stored trial (other shards' too), by number.
    public let trials: [TrialRecord]
    /// The best finished trial.
    public let best: TrialRecord?
    /// The test run with the best values (nil while other shards' trials are outstanding, or
    /// when no trial finished); `savedPath` is its record.
    public let final: RunResult?
    public let savedPath: String?
    public let store: TrialStore
    public let space: SearchSpace
}

/// What a search reports as it goes (for progress output).
public enum SearchEvent: Sendable {
    /// The search's folder, its space, and how many trials were stored before this process.
    case started(folder: String, space: SearchSpace, stored: Int)
    /// A trial ended; `done` counts every stored trial, `eta` the seconds this process still needs.
    case trial(TrialRecord, best: TrialRecord?, done: Int, target: Int?, eta: Double?)
    /// The final run with the best values began.
    case finalRun([String: ConfigValue])
}

/// A hyperparameter search: trials are fits on the train split scored on the valid split
/// only (the data is loaded and split once); the test split is evaluated once, by a run with
/// the best trial's values, stored as an ordinary run record that says how it was tuned.
public enum Search {
    /// Runs (or resumes) the search of `request`.
    public static func run(_ request: SearchRequest, logger: Logger, onEvent: @escaping @Sendable (SearchEvent) -> Void = { _ in }) throws
        -> SearchOutcome {
        let plan = try Experiment.plan(request.run)
        let space = try request.space ?? defaultSpace(plan.modelType)
        try validate(space, for: plan, request: request.run)
        let loaded = try Experiment.load(plan, logger: logger)
        guard loaded.validTarget != nil else {
            throw RecBenchError.config("eval_args", origin: plan.config.origin(of: "eval_args"),
                                       "a search scores its trials on the valid split, and this split has none: use e.g. split: {RS: [0.8, 0.1, 0.1]}")
        }
        let key = searchKey(plan, space: space, request: request, fingerprint: loaded.dataset.fingerprint)
        let store = TrialStore(root: plan.resultsDirectory, dataset: plan.data.dataset, model: plan.modelType.name, searchKey: key)
        if request.finishOnly, try store.trials().isEmpty {
            throw RecBenchError(location: store.folder, "--finish: no trial stored for this search (its key hashes the config, data, space, "
                                + "sampler and pruner: give the search's own arguments)")
        }
        try store.describe(["model": .string(plan.modelType.name), "space": .string(space.description), "sampler": .string(request.sampler.name),
                            "pruner": .string(request.pruner?.name ?? "none"), "seed": .int(Int(truncatingIfNeeded: plan.seed)),
                            "valid_metric": .string(plan.evaluation.validMetric), "search_key": .string(key)])
        onEvent(.started(folder: store.folder, space: space, stored: try store.trials().count))
        if !request.finishOnly { try runTrials(request, plan: plan, space: space, loaded: loaded, store: store, logger: logger, onEvent: onEvent) }

        // A search rerun with fewer trials than it stored chooses among its first ones only.
        let trials = try store.trials().filter { trial in request.trials.map { trial.number < $0 } ?? true }
        let best = bestTrial(trials, biggerIsBetter: plan.evaluation.validMetricBigger)
        // A shard of a time-budgeted search cannot tell when the others stop: its test run is left to a `finishOnly` rerun.
        let complete = request.trials.map { n in (0..<n).allSatisfy(store.hasTrial) } ?? (request.shard == nil || request.finishOnly)
        guard complete, let best else {
            return SearchOutcome(trials: trials, best: best, final: nil, savedPath: nil, store: store, space: space)
        }
        let tuning = TuningRecord(
            searchKey: key, sampler: request.sampler.name, pruner: request.pruner?.name ?? "none", space: space.description,
            trials: trials.count, finished: trials.filter { $0.state == .finished }.count, pruned: trials.filter { $0.state == .pruned }.count,
            failed: trials.filter { $0.state == .failed }.count, bestTrial: best.number, values: best.values, bestValid: best.objective ?? .nan,
            searchSeconds: trials.reduce(0) { $0 + $1.seconds })
        let (final, path) = try finalRun(request, best: best, tuning: tuning, loaded: loaded, logger: logger, onEvent: onEvent)
        return SearchOutcome(trials: trials, best: best, final: final, savedPath: path, store: store, space: space)
    }

    /// The trials of this process: every trial number of its shard without a record, until
    /// the count or the time budget is reached.
    static func runTrials(_ request: SearchRequest, plan: ExperimentPlan, space: SearchSpace, loaded: Experiment.LoadedData, store: TrialStore,
                          logger: Logger, onEvent: @escaping @Sendable (SearchEvent) -> Void) throws {
        let start = ContinuousClock.now
        var ran: [Double] = []
        var number = 0
        while request.trials.map({ number < $0 }) ?? true {
            defer { number += 1 }
            let elapsed = (ContinuousClock.now - start).seconds
            if let budget = request.budgetSeconds, elapsed >= budget { break }
            if let shard = request.shard, Shard.of(position: number, count: shard.count) != shard.index { continue }
            if store.hasTrial(number) { continue }
            let history = try store.trials()
            let values = request.sampler.propose(trial: number, space: space, history: observations(history, plan: plan), seed: plan.seed)
            var record = trial(number, values: values, request: request, base: plan, loaded: loaded, history: history, logger: logger)
            record.searchKey = store.searchKey
            try store.save(record)
            if let key = record.runKey, let resume = plan.trainingResume(runKey: key) { AtomicWrite.remove(resume.path) }   // the trial is stored
            ran.append(record.seconds)
            let mine = request.trials.map { n in
                (number + 1..<n).filter { k in (request.shard.map { Shard.of(position: k, count: $0.count) == $0.index } ?? true) && !store.hasTrial(k) }.count
            }
            let mean = ran.reduce(0, +) / Double(ran.count)
            let eta = [mine.map { Double($0) * mean }, request.budgetSeconds.map { max(0, $0 - (ContinuousClock.now - start).seconds) }]
                .compactMap { $0 }.min()
            let all = history + [record]
            onEvent(.trial(record, best: bestTrial(all, biggerIsBetter: plan.evaluation.validMetricBigger), done: all.count,
                           target: request.trials, eta: eta))
        }
    }

    /// Runs trial `number` with `values` and returns its record (a refused value or a failed
    /// fit makes a failed trial, not a failed search).
    static func trial(_ number: Int, values: [String: ConfigValue], request: SearchRequest, base: ExperimentPlan, loaded: Experiment.LoadedData,
                      history: [TrialRecord], logger: Logger) -> TrialRecord {
        let start = ContinuousClock.now
        var record = TrialRecord(searchKey: "", number: number, model: base.modelType.name, state: .failed, values: values,
                                 validMetric: base.evaluation.validMetric, objective: nil, curve: [], error: nil, runKey: nil, sameAs: nil,
                                 seconds: 0, finishedAt: "", shard: request.shard?.description)
        do {
            var runRequest = request.run
            runRequest.layers.append(ConfigLayer(source: "trial \(number + 1)", values: values))   // trials are numbered from 1 where printed
            let plan = try Experiment.plan(runRequest)
            let key = Experiment.runKey(plan: plan, datasetFingerprint: loaded.dataset.fingerprint)
            record.runKey = key
            if let same = history.first(where: { $0.runKey == key && $0.state != .failed }) {
                // The same values make the same run: its result stands.
                (record.state, record.objective, record.curve, record.sameAs) = (same.state, same.objective, same.curve, same.number)
            } else {
                try fitAndScore(plan, loaded: loaded, pruner: request.pruner, history: history, logger: logger, into: &record)
            }
        } catch {
            record.error = "\(error)"
        }
        record.seconds = (ContinuousClock.now - start).seconds
        record.finishedAt = ISO8601DateFormatter().string(from: Date())
        return record
    }

    /// Fits the trial's model (pruned by `pruner` against the earlier trials) and records its
    /// validation curve and objective.
    static func fitAndScore(_ plan: ExperimentPlan, loaded: Experiment.LoadedData, pruner: (any TrialPruner)?, history: [TrialRecord], logger: Logger,
                            into record: inout TrialRecord) throws {
        let compute = Compute(threads: plan.threads), bigger = plan.evaluation.validMetricBigger, step = plan.training.evalStep
        var prune: (@Sendable (Int, Double) -> Bool)?
        if let pruner {
            prune = { @Sendable (epoch: Int, best: Double) -> Bool in   // called at validated epochs, every `eval_step`
                pruner.shouldPrune(epoch: epoch, previous: max(0, epoch - step), best: best, biggerIsBetter: bigger, earlier: history)
            }
        }
        let (model, _) = try Experiment.fit(plan, on: loaded, compute: compute, logger: logger, profile: nil, prune: prune,
                                            resume: record.runKey.flatMap { plan.trainingResume(runKey: $0) }) { _ in }
        let summary = model.trainingSummary
        record.curve = summary?.epochs.compactMap { e in e.valid.map { TrialRecord.Point(epoch: e.epoch, valid: $0) } } ?? []
        if let best = summary?.bestValid {
            record.objective = best
        } else if let labeled = loaded.labeledValid {
            record.objective = try Experiment.evaluate(model, labeled: labeled, plan: plan, compute: compute) { _ in }.values[plan.evaluation.validMetric]
        } else {
            let settings = plan.evaluation.validationOnly
            let result = Evaluator.evaluate(model, target: loaded.validTarget!, settings: settings, compute: plan.threadSplit.evaluation(compute))
            let values = try Experiment.finite(result, model: plan.modelType.name).values
            record.objective = values[plan.evaluation.validMetric]
        }
        record.state = summary?.prunedAt == nil ? .finished : .pruned
    }

    /// The test run with the best trial's values (reused when already stored).
    static func finalRun(_ request: SearchRequest, best: TrialRecord, tuning: TuningRecord, loaded: Experiment.LoadedData, logger: Logger,
                         onEvent: @Sendable (SearchEvent) -> Void) throws -> (RunResult, String) {
        var runRequest = request.run
        runRequest.layers.append(ConfigLayer(source: "tuned (trial \(best.number + 1))", values: best.values))
        let plan = try Experiment.plan(runRequest)
        let resultStore = ResultStore(root: plan.resultsDirectory)
        let key = tunedRunKey(searchKey: tuning.searchKey, trials: request.trials, budgetSeconds: request.budgetSeconds)
        let files = RunFiles(root: plan.resultsDirectory, dataset: plan.data.dataset, model: plan.modelType.name, runKey: key)
        if FileManager.default.fileExists(atPath: files.record), let stored = try? resultStore.load(files.record), stored.runKey == key {
            return (stored, files.record)
        }
        onEvent(.finalRun(best.values))
        let outcome = try Experiment.run(plan, loaded: loaded, logger: logger, tuning: tuning, runKey: key, resumable: true)
        return (outcome.result, try resultStore.save(outcome.result, perUser: outcome.perUser))
    }

    /// The run key of a search's test run: the search and its limits (a sweep knows it before
    /// the search has chosen values; the same search with more trials is another tuned run).
    public static func tunedRunKey(searchKey: String, trials: Int?, budgetSeconds: Double?) -> String {
        var h = SHA256()
        h.update("tuned=\(searchKey)\ntrials=\(trials.map(String.init) ?? "-")\nbudget_seconds=\(budgetSeconds.map { "\($0)" } ?? "-")\n")
        return h.hexDigest()
    }

    /// The best finished trial (the earliest of equals).
    public static func bestTrial(_ trials: [TrialRecord], biggerIsBetter: Bool) -> TrialRecord? {
        trials.filter { $0.state == .finished && $0.objective != nil }.min { a, b in
            a.objective! != b.objective! ? (biggerIsBetter ? a.objective! > b.objective! : a.objective! < b.objective!) : a.number < b.number
        }
    }

    static func observations(_ trials: [TrialRecord], plan: ExperimentPlan) -> [TrialObservation] {
        let sign = plan.evaluation.validMetricBigger ? -1.0 : 1.0
        return trials.map { TrialObservation(values: $0.values, loss: $0.objective.map { sign * $0 }, pruned: $0.state == .pruned) }
    }

    /// The search's identity: the run's result-relevant config without the searched keys, the
    /// data, the space, the sampler, the pruner (the seed is in the config).
    static func searchKey(_ plan: ExperimentPlan, space: SearchSpace, request: SearchRequest, fingerprint: String) -> String {
        var h = SHA256()
        let searched = Set(space.dimensions.map(\.name))
        h.update("recbench=\(recbenchVersion)\nmodel=\(plan.modelType.name)\n")
        for key in plan.config.values.keys.sorted() where !ConfigKeys.presentation.contains(key) && !searched.contains(key) {
            h.update("\(key)=\(plan.config.values[key]!)\n")
        }
        h.update("data=\(fingerprint)\nspace=\(space)\nsampler=\(String(describing: request.sampler))\n")
        if let pruner = request.pruner { h.update("pruner=\(String(describing: pruner))\n") }
        return h.hexDigest()
    }
}
