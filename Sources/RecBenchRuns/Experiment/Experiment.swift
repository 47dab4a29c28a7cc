import Foundation
import Logging
import Linalg
import RecBenchSupport
import RecBenchData
import RecBenchContract
import RecBenchEvaluation
import RecBenchModels

/// What the user asked for: a model, config files, command-line overrides.
public struct RunRequest: Sendable {
    /// Model name; nil uses the config's `model` key.
    public var model: String?
    /// `--config` files, in order (later wins).
    public var configFiles: [String]
    /// `--set key=value` assignments (win over files).
    public var assignments: [String]
    /// `--dataset` (wins over everything).
    public var dataset: String?
    /// Layers over `--set` (a search trial's values).
    public var layers: [ConfigLayer] = []

    /// A request.
    public init(model: String? = nil, configFiles: [String] = [], assignments: [String] = [], dataset: String? = nil) {
        self.model = model; self.configFiles = configFiles; self.assignments = assignments; self.dataset = dataset
    }
}

/// A validated run: every setting parsed, nothing loaded yet.
public struct ExperimentPlan: Sendable {
    /// The model to run.
    public let modelType: any Recommender.Type
    /// The effective config (other models' hyperparameters removed).
    public let config: Config
    /// Data, split and evaluation settings.
    public let data: DataSettings
    public let split: SplitSettings
    public let evaluation: EvaluationSettings
    /// Epochs, optimiser, early stopping (used by learned models).
    public let training: TrainingSettings
    /// The model's parameters as resolved.
    public let parameters: ModelParameters
    /// The model built from them, unfitted: built once, when planning checks the parameters.
    public let model: any Recommender
    /// Seed, threads, output folder.
    public let seed: UInt64
    public let threads: Int
    /// How the threads are shared with OpenBLAS per phase.
    public let threadSplit: ThreadSplit
    public let resultsDirectory: String
    /// Seconds between saves of a learned model's training state (`resume_interval`; 0: never).
    public let resumeInterval: Double
    /// Bytes a run may plan to use (`memory_limit_mb`, or the machine's memory).
    public let memoryLimit: Double
    /// Notices gathered while planning.
    public let notices: [String]
    /// Where this run departs from RecBole's rules for its family (`RecBoleRules`):
    /// told once the model is fitted, beside its results (bad input still gets one line).
    public let recBoleNotes: [String]
    /// `MAX_ITEM_LIST_LENGTH` (sequences' latest items a sequential model reads).
    public let sequenceLength: Int

    /// Where the run of `runKey` saves its training state, when it has a training loop and
    /// `resume_interval` is not 0; a state is taken up only under the same `identity` (by default the key).
    public func trainingResume(runKey: String, identity: String? = nil) -> TrainingResume? {
        guard resumeInterval > 0, modelType.readsTrainingKeys else { return nil }
        let files = RunFiles(root: resultsDirectory, dataset: data.dataset, model: modelType.name, runKey: runKey)
        return TrainingResume(path: files.path(.training), interval: resumeInterval, identity: identity ?? runKey)
    }

    /// What an evaluation row is (resolved from `eval_protocol` when planning).
    public var evaluationProtocol: EvaluationProtocol { evaluation.evaluationProtocol ?? .user }
    /// Whether the run builds the time-ordered sequences: for a sequential model, or for
    /// next-item rows.
    var needsSequences: Bool { modelType.family == .sequential || evaluationProtocol == .nextItem }
}

/// What a run produced.
public struct RunOutcome: Sendable {
    /// The stored record.
    public let result: RunResult
    /// Full evaluation data (per-user values, top lists) for valid (if any) and test.
    public let valid: EvaluationResult?
    public let test: EvaluationResult
    /// Per-user values keyed by user token.
    public let perUser: PerUserResults
    /// Each evaluated row's ranked list, when the run was asked for them.
    public var lists: RecommendationLists?
}

/// Time since the first batch of the current epoch (for batch ETAs).
final class BatchClock: @unchecked Sendable {
    // Touched only from the training thread, one batch at a time.
    private var start = ContinuousClock.now
    func elapsed(restartingWhen restart: Bool) -> Double {
        if restart { start = ContinuousClock.now }
        return (ContinuousClock.now - start).seconds
    }
}

/// The run pipeline: plan → load → split → fit → evaluate → result.
public enum Experiment {
    /// Resolves the config layers and validates every setting.
    public static func plan(_ request: RunRequest) throws -> ExperimentPlan {
        let fileLayers = try request.configFiles.flatMap { try ConfigLayer.fileDocuments($0) }
        let setLayer = try ConfigLayer.assignments(request.assignments)
        let modelName = try request.model
            ?? (fileLayers + [setLayer]).reversed().lazy.compactMap { $0.values["model"]?.stringValue }.first
            ?? { throw RecBenchError(field: "model", "no model given: pass --model NAME or set `model:` in a config") }()
        let modelType = try ModelRegistry.model(named: modelName)

        // The model's defaults are its compiled-in declaration: no file in the working folder
        // can change a result.
        let familyLayer = RecBoleRules.layer(for: modelType.family).map { [$0] } ?? []
        var config = try Config(layers: familyLayer + fileLayers + [setLayer] + request.layers, modelKeys: ModelRegistry.parameterNames,
                                recBoleNegatives: RecBoleRules.negatives(for: modelType.family))
        if let dataset = request.dataset { config.set("dataset", to: .string(dataset), origin: "--dataset") }
        config.set("model", to: .string(modelType.name), origin: request.model != nil ? "--model" : config.origin(of: "model"))
        // Keep this model's hyperparameters (defaults included), drop other models'.
        let own = Set(modelType.parameters.map(\.name))
        let others = Set(ModelRegistry.parameterNames).subtracting(own)
        config = config.restricted { !others.contains($0) }
        for p in modelType.parameters where config[p.name] == .null {
            config.set(p.name, to: p.defaultValue, origin: "default")
        }

        let parameters = ModelParameters(config: config, declared: modelType.parameters)
        let model = try modelType.init(parameters: parameters)   // validates hyperparameters now, before loading data
        let threads = try config.int("threads", atLeast: 0), memoryLimit = try config.int("memory_limit_mb", atLeast: 0)
        for key in ["results_dir", "checkpoint_dir"] where config[key] == .string("") {
            throw RecBenchError.config(key, origin: config.origin(of: key),
                                       "must not be empty (use `.` for the working directory\(key == "checkpoint_dir" ? ", or ~ for no checkpoints" : ""))")
        }
        var notices = config.notices
        config = try RecBoleRules.labeledDefaults(config)
        let evaluation = try resolveProtocol(try EvaluationSettings(config), family: modelType.family, config: config, notices: &notices)
        let split = try SplitSettings(config)
        if evaluation.evaluationProtocol == .nextItem || modelType.family == .sequential, split.order != .time {
            throw RecBenchError.config("eval_args.order", origin: config.origin(of: "eval_args"),
                                       "is RO, but \(modelType.family == .sequential ? "sequential models read" : "next-item evaluation reads") "
                                       + "each user's items in time order: use order: TO (RecBole: \"The ordering args for sequential "
                                       + "recommendation has to be 'TO'\")")
        }
        let training = try TrainingSettings(config)   // checked whatever the model, then dropped where no loop reads them:
        var data = try DataSettings(config)          // a grid over learning rates is one run of EASE, not one per rate
        data.readsLabels = data.readsLabels || evaluation.isLabeled
        try checkLabeled(evaluation, modelType, config: config, data: data)
        if evaluation.evaluationProtocol == .nextItem, !split.cutsEachUser, data.benchmarkFilenames == nil {
            throw RecBenchError.config("eval_args", origin: config.origin(of: "eval_args"), SequenceSplitter.cutsEachUserOnly)
        }
        return ExperimentPlan(
            modelType: modelType, config: identity(config, modelType, split: split, data: data, evaluation: evaluation), data: data, split: split,
            evaluation: evaluation, training: training, parameters: parameters, model: model,
            seed: UInt64(bitPattern: Int64(try config.int("seed"))),
            threads: threads == 0 ? Compute.coreCount : threads, threadSplit: try threadSplit(config),
            resultsDirectory: try config.string("results_dir"), resumeInterval: try config.double("resume_interval", in: 0...1e9),
            memoryLimit: memoryLimit == 0 ? ProcessStats.availableMemoryBytes : Double(memoryLimit) * 1_048_576,
            notices: notices, recBoleNotes: RecBoleRules.notes(modelType, config: config, training: training, split: split, data: data,
                                                                labeled: evaluation.isLabeled),
            sequenceLength: try config.int("MAX_ITEM_LIST_LENGTH", atLeast: 1))
    }

    /// The config values that make the run what it is (its key and record): training keys (and
    /// `metric_decimal_place`, at which early stopping compares) only for a model with a training
    /// loop — a grid over learning rates is one run of EASE — and the seed only where something
    /// draws: the model, the split or sampled ranking. Popularity-drawn
    /// candidates read `alpha` and `negative_popularity` whatever the model.
    static func identity(_ config: Config, _ modelType: any Recommender.Type, split: SplitSettings, data: DataSettings,
                         evaluation: EvaluationSettings) -> Config {
        let sampled = evaluation.rankingModes.values.filter { if case .sampled = $0 { true } else { false } }
        let seedFree = !modelType.readsSeed && (split.order == .time || data.benchmarkFilenames != nil) && sampled.isEmpty
        let drawsByPopularity = sampled.contains { if case .sampled(_, true) = $0 { true } else { false } }
        let fitKeys = TrainingSettings.keys.union(["metric_decimal_place"])   // early stopping compares at those places
        return config.restricted { key in
            !(seedFree && key == "seed") && (data.readsLabels || !["LABEL_FIELD", "threshold"].contains(key))
                && (modelType.readsTrainingKeys || !fitKeys.contains(key)
                    || (drawsByPopularity && ["train_neg_sample_args", "negative_popularity"].contains(key)))
        }
    }

    /// Resolves `eval_protocol: auto` by the model's family and the history mask that
    /// applies: RecBole's sequential evaluation masks nothing, so under next-item rows its
    /// `recbole` mode is `none` (`seen` still masks every earlier item).
    static func resolveProtocol(_ settings: EvaluationSettings, family: ModelFamily, config: Config, notices: inout [String]) throws
        -> EvaluationSettings {
        var resolved = settings
        let chosen = settings.evaluationProtocol ?? (family == .sequential ? .nextItem : .user)
        resolved.evaluationProtocol = chosen
        if let note = SampledRanking.notice(settings.rankingModes) { notices.append(note) }
        if chosen == .nextItem && settings.historyMask == .recbole {
            resolved.historyMask = .none
            if config.origin(of: "history_mask") != "default" {
                notices.append("history_mask: recbole under next-item evaluation is RecBole's sequential protocol, which masks nothing: none applied")
            }
        }
        return resolved
    }

    /// The threads each phase used: the run's (`blas`, `workers`), training's and the final
    /// evaluation's under the split.
    static func threadRecord(_ compute: Compute, split: ThreadSplit) -> [String: Int] {
        let training = split.training(compute), evaluation = split.evaluation(compute)
        return ["blas": compute.blasThreads, "workers": compute.activeWorkers,
                "training_blas": training.blasThreads, "training_workers": training.activeWorkers,
                "evaluation_blas": evaluation.blasThreads, "evaluation_workers": evaluation.activeWorkers]
    }

    /// Labelled evaluation scores a row by σ(z), the probability a pointwise-trained context-aware model
    /// gives; recbench's other families score for ranking alone (RecBole would call their `predict`).
    static func checkLabeled(_ evaluation: EvaluationSettings, _ modelType: any Recommender.Type, config: Config, data: DataSettings) throws {
        guard evaluation.isLabeled else { return }
        guard modelType.family == .contextAware else {
            throw RecBenchError.config("eval_args.mode", origin: config.origin(of: "eval_args"), "labeled scores each row's probability σ(z), "
                                       + "which recbench's context-aware models give; \(modelType.name) is \(modelType.family.rawValue): "
                                       + "use full, uniN or popN")
        }
        if data.threshold == nil, let inter = data.loadColumns?["inter"], !inter.contains(data.labelField) {
            throw labelsMissing(config, data)
        }
        if evaluation.evaluationProtocol == .nextItem {
            throw RecBenchError.config("eval_protocol", origin: config.origin(of: "eval_protocol"), "next-item rows are ranked, but "
                                       + "eval_args.mode is labeled: use eval_protocol user (or auto)")
        }
    }

    static func threadSplit(_ config: Config) throws -> ThreadSplit {
        let value = try config.string("thread_split")
        guard let split = ThreadSplit(rawValue: value) else {
            throw RecBenchError.config("thread_split", origin: config.origin(of: "thread_split"),
                                       "expected \(ThreadSplit.allCases.map(\.rawValue).joined(separator: ", ")), got '\(value)'")
        }
        return split
    }

    /// Phases a run reports as they finish (for progress output).
    public enum Event: Sendable {
        case loaded(DatasetStatistics, seconds: Double)
        case split(SplitSummary, seconds: Double)
        /// The model input fields (context-aware models only), before fitting.
        case fields([FeatureField])
        case fitted(seconds: Double)
        case evaluated(EvaluationResult)
        case epoch(EpochReport)
        case batch(done: Int, of: Int, elapsed: Double)
    }

    /// The data a run fits and evaluates on: loaded, split, with both evaluation targets.
    public struct LoadedData: Sendable {
        public let dataset: Dataset
        package let outcome: SplitOutcome
        /// Seconds to load and to split.
        public let loadSeconds: Double, splitSeconds: Double
        /// Notices raised while loading and splitting (the plan's first).
        public let notices: [String]
        /// What fitting reads.
        var trainingData: TrainingData { TrainingData(dataset: dataset, split: outcome.split, sequences: outcome.sequences) }
        /// The validation target, when the split has a valid part.
        var validTarget: EvaluationTarget? { outcome.summary.validUsers > 0 ? outcome.valid : nil }
        /// The valid part's labelled rows under labelled evaluation, when it has any.
        var labeledValid: LabeledTarget? { outcome.labeled[.valid].flatMap { $0.users.isEmpty ? nil : $0 } }
    }

    /// Loads and splits the data of `plan`.
    public static func load(_ plan: ExperimentPlan, logger: Logger, onEvent: @Sendable (Event) -> Void = { _ in }) throws -> LoadedData {
        var notices = plan.notices
        if plan.needsSequences, let expanded = try DatasetLoader.preExpandedExamples(plan.data) {
            throw RecBenchError.file(expanded.path, line: 1, field: expanded.column, "holds RecBole's pre-expanded sequential examples; "
                                     + "recbench builds the examples itself from each file's plain log (user, item, time): give it those")
        }
        let start = ContinuousClock.now
        let dataset = try DatasetLoader.load(plan.data)
        for line in dataset.filterLog { logger.info("\(line)") }
        for line in dataset.notices { logger.notice("\(line)") }
        notices += dataset.notices
        if let k = plan.evaluation.cutoffs.max(), k > dataset.itemCount {
            throw RecBenchError.config("topk", origin: plan.config.origin(of: "topk"),
                                       "cutoff \(k) is larger than the catalogue (\(dataset.itemCount) items)")
        }
        let loadSeconds = (ContinuousClock.now - start).seconds
        onEvent(.loaded(dataset.statistics, seconds: loadSeconds))
        if plan.modelType.family == .contextAware { onEvent(.fields(FeatureFields(dataset).fields)) }
        let outcome = try splitAndTargets(dataset, plan: plan, logger: logger, notices: &notices)
        let splitSeconds = (ContinuousClock.now - start).seconds - loadSeconds
        onEvent(.split(outcome.summary, seconds: splitSeconds))
        return LoadedData(dataset: dataset, outcome: outcome, loadSeconds: loadSeconds, splitSeconds: splitSeconds, notices: notices)
    }

    /// Fits the model of `plan` on `data` (checking its memory first); returns it and the seconds.
    /// With a `validationLog`, each validation pass evaluates at the run's full settings and is kept there.
    static func fit(_ plan: ExperimentPlan, on data: LoadedData, compute: Compute, logger: Logger, profile: OpProfile?,
                    validationLog: ValidationLog? = nil, prune: (@Sendable (Int, Double) -> Bool)? = nil, resume: TrainingResume? = nil,
                    onEvent: @escaping @Sendable (Event) -> Void) throws -> (model: any Recommender, seconds: Double) {
        let start = ContinuousClock.now
        var model = plan.model
        let training = data.trainingData
        try checkMemory(model, data: training, plan: plan)
        var context = fitContext(plan, compute: compute, validTarget: data.validTarget, logger: logger, profile: profile, log: validationLog,
                                 onEvent: onEvent)
        if let labeled = data.labeledValid { context.validate = labeledValidation(plan, labeled) }
        context.prune = prune
        context.resume = resume
        try model.fit(training, context: context)
        let seconds = (ContinuousClock.now - start).seconds
        onEvent(.fitted(seconds: seconds))
        return (model, seconds)
    }

    /// Runs `plan` (on `loaded` when the data is already loaded). The caller stores the result;
    /// only a `resumable` run (one whose caller stores it) writes here: its training state.
    /// A tuned run (`tuning`) carries its search's run key (`runKey`), not one of its values; `lists` keeps the ranked lists.
    public static func run(_ plan: ExperimentPlan, loaded: LoadedData? = nil, logger: Logger, profile: OpProfile? = nil,
                           tuning: TuningRecord? = nil, runKey tunedKey: String? = nil, resumable: Bool = false, lists: Bool = false,
                           onEvent: @escaping @Sendable (Event) -> Void = { _ in }) throws -> RunOutcome {
        let compute = Compute(threads: plan.threads)
        let runStart = ContinuousClock.now
        let data = try loaded ?? load(plan, logger: logger, onEvent: onEvent)
        let (dataset, split, summary) = (data.dataset, data.outcome.split, data.outcome.summary)
        let log = ValidationLog()
        let ownKey = Experiment.runKey(plan: plan, datasetFingerprint: dataset.fingerprint), runKey = tunedKey ?? ownKey
        // A tuned run's key names its search, not its values: its state is this run's only if the values are the same.
        let resume = resumable ? plan.trainingResume(runKey: runKey, identity: tunedKey.map { "\($0)/\(ownKey)" }) : nil
        let (model, fitSeconds) = try fit(plan, on: data, compute: compute, logger: logger, profile: profile, validationLog: log,
                                          resume: resume, onEvent: onEvent)
        for note in plan.recBoleNotes { logger.notice("\(note)") }
        var clock = ContinuousClock.now
        func lap() -> Double {
            let now = ContinuousClock.now
            defer { clock = now }
            return (now - clock).seconds
        }
        let (valid, validFromEpoch) = plan.evaluation.isLabeled
            ? (try data.labeledValid.map { try evaluate(model, labeled: $0, plan: plan, compute: compute, onEvent: onEvent) }, nil)
            : try validResult(model, log: log, data: data, plan: plan, compute: compute, onEvent: onEvent)
        let validSeconds = lap()
        let test = try data.outcome.labeled[.test].map { try evaluate(model, labeled: $0, plan: plan, compute: compute, onEvent: onEvent) }
            ?? evaluate(model, on: data.outcome.test, plan: plan, compute: compute, onEvent: onEvent)
        let testSeconds = lap()

        let result = RunResult(
            recbenchVersion: recbenchVersion, model: plan.modelType.name, modelType: plan.modelType.kind, modelFamily: plan.modelType.family,
            dataset: plan.data.dataset, runKey: runKey,
            finishedAt: ISO8601DateFormatter().string(from: Date()), historyMask: plan.evaluation.historyMask,
            evaluationProtocol: plan.evaluationProtocol,
            datasetFingerprint: dataset.fingerprint, splitFingerprint: split.fingerprint,
            config: plan.config.values, hyperparameters: plan.parameters.resolved, statistics: dataset.statistics,
            split: summary, metricKeys: plan.evaluation.keys, valid: valid?.values ?? [:], test: test.values,
            analyses: ["test": test.analyses].merging(valid.map { ["valid": $0.analyses] } ?? [:]) { a, _ in a },
            seconds: ["load": data.loadSeconds, "split": data.splitSeconds, "fit": fitSeconds,
                      "evaluate_valid": validSeconds, "evaluate_test": testSeconds,
                      "total": (ContinuousClock.now - runStart).seconds + (loaded == nil ? 0 : data.loadSeconds + data.splitSeconds)],
            fitSteps: model.fitSteps.merging(costSteps(model, workShape(data.trainingData, plan.training, examples: summary.train))) { own, _ in own },
            training: model.trainingSummary,
            peakMemoryMiB: ProcessStats.peakMemoryMiB,
            threads: threadRecord(compute, split: plan.threadSplit),
            blas: BLAS.configuration, kernels: KernelSet.current.rawValue, notices: data.notices + plan.recBoleNotes, tuning: tuning,
            validFromEpoch: validFromEpoch)
        let evaluations = [valid.map { ($0, data.outcome.valid) }, (test, data.outcome.test)].compactMap { $0 }
        let perUser = PerUserResults(runKey: runKey, dataset: dataset, evaluations: evaluations)
        return RunOutcome(result: result, valid: valid, test: test, perUser: perUser,
                          lists: lists ? RecommendationLists(dataset: dataset, evaluations: evaluations) : nil)
    }

    /// The valid result (nil without a valid part): the fit's kept validation pass and its epoch
    /// when the log holds it, else an evaluation of the fitted model.
    static func validResult(_ model: any Recommender, log: ValidationLog, data: LoadedData, plan: ExperimentPlan, compute: Compute,
                            onEvent: @Sendable (Event) -> Void) throws -> (EvaluationResult?, Int?) {
        guard let target = data.validTarget else { return (nil, nil) }
        guard let kept = log.takeBestPass(of: model.trainingSummary) else {
            // A fit that continued a saved state past its best epoch: that epoch's pass, ranked again as the fit's validation ranked it.
            if let summary = model.trainingSummary, summary.bestValid != nil, let after = summary.resumedAfter, summary.bestEpoch <= after {
                let pass = Evaluator.evaluate(model, target: target, settings: plan.evaluation, compute: plan.threadSplit.training(compute))
                let result = try finite(pass, model: plan.modelType.name)
                onEvent(.evaluated(result))
                return (result, summary.bestEpoch)
            }
            return (try evaluate(model, on: target, plan: plan, compute: compute, onEvent: onEvent), nil)
        }
        let result = try finite(kept.pass.summarized(), model: plan.modelType.name)
        onEvent(.evaluated(result))
        return (result, kept.epoch)
    }

    /// The fitted model's FLOPs per epoch (what the bench sets against the sgemm peak): asked
    /// of the fitted model, which knows its data (a sequential model's mean input length).
    static func costSteps(_ model: any Recommender, _ shape: WorkShape) -> [String: Double] {
        guard let cost = model.cost(shape) else { return [:] }
        return ["flops_executed_per_epoch": cost.executed, "flops_nominal_per_epoch": cost.nominal]
            .merging(cost.scoringInner.map { ["scoring_inner": Double($0)] } ?? [:]) { a, _ in a }
            .merging(cost.validationPass.map { ["flops_validation_pass": $0] } ?? [:]) { a, _ in a }
    }

    /// Evaluates `model` on `target` with the evaluation's share of `compute`, and reports the result as an event.
    static func evaluate(_ model: any Scorer, on target: EvaluationTarget, plan: ExperimentPlan, compute: Compute,
                         onEvent: @Sendable (Event) -> Void) throws -> EvaluationResult {
        let result = try finite(Evaluator.evaluate(model, target: target, settings: plan.evaluation, compute: plan.threadSplit.evaluation(compute)),
                                model: plan.modelType.name)
        onEvent(.evaluated(result))
        return result
    }

    /// Labelled evaluation of `model` on `target`'s rows (the value metrics), reported as an event.
    static func evaluate(_ model: any Scorer, labeled target: LabeledTarget, plan: ExperimentPlan, compute: Compute,
                         onEvent: @Sendable (Event) -> Void) throws -> EvaluationResult {
        let pass = LabeledEvaluation.evaluate(model, target: target, metrics: plan.evaluation.valueMetrics, settings: plan.evaluation,
                                              compute: plan.threadSplit.evaluation(compute))
        let result = try finite(pass, model: plan.modelType.name)
        onEvent(.evaluated(result))
        return result
    }

    /// Early stopping's validation under labelled evaluation: the valid metric over the valid rows (NaN when a row's logit is not finite).
    static func labeledValidation(_ plan: ExperimentPlan, _ target: LabeledTarget) -> @Sendable (any Scorer, Compute) -> Double {
        { [evaluation = plan.evaluation] scorer, compute in
            let pass = LabeledEvaluation.evaluate(scorer, target: target, metrics: evaluation.valueMetrics, settings: evaluation, compute: compute)
            return pass.nonFiniteRows > 0 ? .nan : pass.values[evaluation.validMetric] ?? 0
        }
    }

    /// `result`, unless some rows' scores held NaN or +∞: TopK cannot order those, and a run that
    /// stored them would report a table of near-zero metrics as if the model had been measured.
    static func finite(_ result: EvaluationResult, model: String) throws -> EvaluationResult {
        guard result.nonFiniteRows > 0 else { return result }
        let rows = max(result.users.count, result.labelledRows)
        throw RecBenchError(location: model, "the scores of \(result.nonFiniteRows) of \(rows) \(result.part.name) rows are NaN or +∞ "
                            + "(the fitted model diverged or overflowed); try a lower step size (learning_rate, or the model's own "
                            + "such as hogwild_learning_rate) or a stronger regularisation")
    }

    /// A split and what evaluating on it needs.
    package struct SplitOutcome: Sendable {
        package let split: SplitData
        /// The time-ordered sequences, when the model or the protocol reads them.
        package let sequences: SequenceData?
        package let valid: EvaluationTarget, test: EvaluationTarget
        package let summary: SplitSummary
        /// Each evaluated part's labelled rows, under labelled evaluation (else empty).
        package var labeled: [SplitPart: LabeledTarget] = [:]
    }

    /// Splits the dataset (per user's interactions, or per user's next-item examples),
    /// builds both evaluation targets (validation reuses its target every epoch), and warns
    /// when RecBole's mask meets repeat purchases.
    package static func splitAndTargets(_ dataset: Dataset, plan: ExperimentPlan, logger: Logger, notices: inout [String]) throws
        -> SplitOutcome {
        let nextItem = plan.evaluationProtocol == .nextItem
        let (users, items) = (dataset.userCount, dataset.itemCount)
        let parts = nextItem ? try SequenceSplitter.split(dataset.interactions, userCount: users, settings: plan.split)
                             : try Splitter.split(dataset.interactions, userCount: users, settings: plan.split)
        let split = SplitData(dataset: dataset, parts: parts)
        let sequences = plan.needsSequences
            ? SequenceData(log: SequenceLog(dataset.interactions, userCount: users, itemCount: items, parts: parts), maxLength: plan.sequenceLength)
            : nil
        func target(_ part: SplitPart) throws -> EvaluationTarget {
            let data = TrainingData(dataset: dataset, split: split), mode = plan.evaluation.rankingModes[part]
            if nextItem, let sequences {
                let rows = EvaluationTarget.nextItem(part, sequences: sequences, trainCounts: split.trainMatrix.columnSums(),
                                                     maskSeen: plan.evaluation.historyMask == .seen)
                return try SampledRanking.ranked(rows, mode: mode, plan: plan, data: data)
            }
            let target = try SampledRanking.ranked(EvaluationTarget(part, in: split), mode: mode, plan: plan, data: data)
            return plan.modelType.family == .sequential ? target.withSequences(sequences!) : target
        }
        let validTarget = try target(.valid), testTarget = try target(.test)
        for t in [validTarget, testTarget] {
            if let note = SampledRanking.groupingNotice(t, mode: plan.evaluation.rankingModes[t.part]) { notices.append(note) }
        }
        let testRepeats = testTarget.repeatPositives, validRepeats = validTarget.repeatPositives
        if plan.evaluation.historyMask == .recbole && (testRepeats > 0 || validRepeats > 0) && plan.evaluation.rankingModes.values.contains(.full) {
            let message = HistoryMask.repeatLeakWarning(counts: "\(testRepeats) test, \(validRepeats) valid positives were seen earlier")
            logger.warning("\(message)")
            notices.append(message)
        }
        notices += splitNotices(plan, dataset: dataset, split: split, valid: validTarget, test: testTarget, logger: logger)
        // Next-item rows count examples, as RecBole reports its sequential split.
        let sizes = nextItem ? SplitPart.allCases.map { sequences!.log.examples(of: $0).count } : SplitPart.allCases.map { split.sizes[$0] ?? 0 }
        var summary = SplitSummary(train: sizes[0], valid: sizes[1], test: sizes[2],
                                   validUsers: validTarget.users.count, testUsers: testTarget.users.count, testRepeatPositives: testRepeats)
        if nextItem, let log = sequences?.log {
            let alone = (0..<log.userCount).filter { log.userStarts[$0 + 1] - log.userStarts[$0] == 1 }.count
            summary.usersWithoutExamples = alone
            if alone > 0 { notices.append("\(alone) users have a single interaction: no next-item example (their item is never a target, as in RecBole)") }
        }
        guard summary.testUsers > 0 else {
            throw RecBenchError.config("eval_args", "the split leaves no \(nextItem ? "example" : "user") with a test interaction")
        }
        if summary.validUsers == 0, plan.data.benchmarkFilenames == nil, plan.split.hasValidPart {
            notices.append("the split leaves the valid part empty (users too short for its ratios): no validation, so no early stopping, "
                           + "and the last epoch's parameters are tested")
            logger.notice("\(notices.last!)")
        }
        var outcome = SplitOutcome(split: split, sequences: sequences, valid: validTarget, test: testTarget, summary: summary)
        if plan.evaluation.isLabeled { outcome.labeled = try labeledTargets(split, dataset: dataset, plan: plan) }
        return outcome
    }

    /// The notes a user split may call for: a random split of timed data, and cold-start users. RecBole's labelled
    /// protocol is a random split of the whole log, and ranks nothing for a cold user to spoil: neither applies to it.
    static func splitNotices(_ plan: ExperimentPlan, dataset: Dataset, split: SplitData, valid: EvaluationTarget, test: EvaluationTarget,
                             logger: Logger) -> [String] {
        guard !plan.evaluation.isLabeled else { return [] }
        var notes: [String] = []
        if plan.split.order == .random, let time = dataset.timeField, plan.data.benchmarkFilenames == nil {
            notes.append("the split is random (eval_args.order: RO, RecBole's default) though the data has a time field (\(time)): "
                         + "set eval_args.order: TO for a temporal split")
        }
        if plan.evaluationProtocol != .nextItem, let message = coldStartNotice(split, valid: valid, test: test) { notes.append(message) }
        for note in notes { logger.notice("\(note)") }
        return notes
    }

    /// The valid and test parts' labelled rows; refused without labels, or when a part's labels hold one
    /// class only (its AUC would be undefined: RecBole warns and reports NaN).
    static func labeledTargets(_ split: SplitData, dataset: Dataset, plan: ExperimentPlan) throws -> [SplitPart: LabeledTarget] {
        guard dataset.interactions.labels != nil else { throw labelsMissing(plan.config, plan.data) }
        var targets: [SplitPart: LabeledTarget] = [:]
        for part in [SplitPart.valid, .test] {
            let target = LabeledTarget(part, in: split, dataset: dataset), (positive, other) = target.classCounts
            if plan.evaluation.valueMetrics.contains(.auc), !target.users.isEmpty, positive == 0 || other == 0 {
                throw RecBenchError.config("metrics", origin: plan.config.origin(of: "metrics"), "AUC needs both classes, but every one of the "
                                           + "\(part.name) split's \(target.users.count) rows is labelled \(positive == 0 ? "other than 1" : "1")")
            }
            targets[part] = target
        }
        return targets
    }

    /// Labelled evaluation without a threshold or a loaded label column.
    static func labelsMissing(_ config: Config, _ data: DataSettings) -> RecBenchError {
        RecBenchError.config("eval_args.mode", origin: config.origin(of: "eval_args"), "labeled needs labelled rows: set threshold "
                             + "(RecBole's ml-100k context-aware default is {rating: 4}) or load a '\(data.labelField)' column (LABEL_FIELD)")
    }

    /// A note when evaluated users have no train interaction (a log cut at a time, `group_by: none` or
    /// `TS`, leaves the newest users without one; TS gives a user with one earlier row a valid row and
    /// no train row): a model that reads interactions alone scores all their items alike, and their
    /// lists then follow its tie order (recbench's: lower item id first; RecBole's: torch's).
    static func coldStartNotice(_ split: SplitData, valid: EvaluationTarget, test: EvaluationTarget) -> String? {
        func cold(_ target: EvaluationTarget) -> Int { target.users.filter { split.trainMatrix.entries(ofRow: Int($0)).isEmpty }.count }
        let (coldValid, coldTest) = (cold(valid), cold(test))
        guard coldValid + coldTest > 0 else { return nil }
        return "\(coldTest) of the \(test.users.count) test users and \(coldValid) of the \(valid.users.count) valid users have no train "
            + "interaction (cold start): models that learn from a user's items have nothing to go on for them (EASE, ItemKNN and the "
            + "like score all their items alike: lower item id first)"
    }

    /// The sizes the model's FLOP and memory estimates read: the train split's interactions (repeats
    /// counted; or `examples`, the split's count of what an epoch trains on, which for a sequential
    /// run leaves out each user's first item) and its distinct pairs, the batch size and the negatives drawn.
    static func workShape(_ data: TrainingData, _ training: TrainingSettings, examples: Int? = nil) -> WorkShape {
        let matrix = data.trainMatrix
        return WorkShape(users: data.userCount, items: data.itemCount, trainInteractions: examples ?? Int(matrix.values.reduce(0, +)),
                         trainPairs: matrix.values.count, batchSize: training.batchSize, negatives: training.negativesDrawn)
    }

    /// Refuses a run whose estimated peak (the model's declared need plus one evaluation
    /// block of scores) exceeds the plan's memory limit, before anything large is allocated.
    static func checkMemory(_ model: any Recommender, data: TrainingData, plan: ExperimentPlan) throws {
        let shape = workShape(data, plan.training)
        let rows = min(plan.evaluation.usersPerBlock(items: data.itemCount), data.userCount)
        var needs = [MemoryEstimate(bytes: 4 * Double(rows) * Double(data.itemCount),
                                    what: "a \(rows) × \(data.itemCount) block of scores (eval_batch_size × items, at most eval_memory_mb)")]
        if let fit = model.memory(shape) {
            if let order = fit.blasSquareOrder, order > BLAS.maxSquareOrder {
                throw RecBenchError.config(plan.modelType.name, "needs \(fit.what), but the linked OpenBLAS takes 32-bit indices: "
                    + "a dense square matrix holds at most \(BLAS.maxSquareOrder) × \(BLAS.maxSquareOrder) (n² < 2³¹); "
                    + "shrink the catalogue with item_inter_num_interval (e.g. \"[5,inf)\"), or use a model without an item × item matrix")
            }
            needs.append(fit)
        }
        let total = needs.reduce(0) { $0 + $1.bytes }
        guard total > plan.memoryLimit else { return }
        func gib(_ b: Double) -> String {
            b < 1_073_741_824 ? String(format: "%.0f MiB", b / 1_048_576) : String(format: "%.1f GiB", b / 1_073_741_824)
        }
        let key = plan.config.origin(of: "memory_limit_mb") == "default" ? "this machine's memory" : "memory_limit_mb"
        let parts = needs.map { "\($0.what): \(gib($0.bytes))" }.joined(separator: "; ")
        throw RecBenchError.config(plan.modelType.name, "needs an estimated \(gib(total)) (\(parts)), "
            + "more than the \(gib(plan.memoryLimit)) of \(key); lower eval_memory_mb or use a smaller catalogue")
    }

    /// What a model's fit receives: seed, threads, training settings, validation on
    /// `validTarget` (when there is a valid split) and progress events.
    /// The fit's validation passes rank for the validation metric alone, or, with a `log`, for
    /// every metric and analysis, kept in the log.
    static func fitContext(_ plan: ExperimentPlan, compute: Compute, validTarget: EvaluationTarget?, logger: Logger,
                           profile: OpProfile?, log: ValidationLog? = nil, onEvent: @escaping @Sendable (Event) -> Void) -> FitContext {
        let evaluation = plan.evaluation
        let validation = log == nil ? evaluation.validationOnly : evaluation
        let validate: (@Sendable (any Scorer, Compute) -> Double)? = validTarget.map { [validation] target in
            { @Sendable scorer, compute in
                let pass = Evaluator.rank(scorer, target: target, settings: validation, compute: compute, profile: profile, phase: "validation")
                // NaN tells the trainer the model diverged (scores it cannot rank), whatever the metric's value.
                let score = pass.nonFiniteRows > 0 ? .nan : pass.value(of: evaluation.validMetric) ?? 0
                log?.record(score: score, pass: pass)
                return score
            }
        }
        var context = FitContext(
            seed: plan.seed, compute: compute, logger: logger, training: plan.training, validate: validate,
            validMetricBigger: evaluation.validMetricBigger, validMetric: evaluation.validMetric,
            onEpoch: { log?.epochEnded($0); onEvent(.epoch($0)) },
            onBatch: { [clock = BatchClock()] done, total in
                onEvent(.batch(done: done, of: total, elapsed: clock.elapsed(restartingWhen: done == 1)))
            },
            checkpointName: "\(plan.modelType.name)-\(plan.data.dataset)-seed\(plan.seed)", profile: profile, threadSplit: plan.threadSplit)
        context.validDecimals = evaluation.decimalPlaces
        return context
    }

    /// The run's identity: recbench's version, model, every result-relevant config value, and
    /// the data's fingerprint. The same key means the same run (a sweep skips it); a new
    /// version may compute a model differently, so its sweeps recompute older records.
    public static func runKey(plan: ExperimentPlan, datasetFingerprint: String) -> String {
        var h = SHA256()
        h.update("recbench=\(recbenchVersion)\n")
        h.update("model=\(plan.modelType.name)\n")
        for key in plan.config.values.keys.sorted() where !ConfigKeys.presentation.contains(key) {
            h.update("\(key)=\(plan.config.values[key]!)\n")
        }
        // A starting point is its bytes, not its path.
        if plan.modelType.readsTrainingKeys, let path = plan.training.initialParameters, let bytes = FileManager.default.contents(atPath: path) {
            var file = SHA256()
            bytes.withUnsafeBytes { file.update($0) }
            h.update("init_parameters=\(file.hexDigest())\n")
        }
        h.update("data=\(datasetFingerprint)\n")
        return h.hexDigest()
    }
}
