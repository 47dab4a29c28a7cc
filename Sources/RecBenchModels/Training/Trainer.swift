import Foundation
import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// The training loop every learned model shares: epochs of passes, validation every
/// `eval_step`, early stopping as RecBole 1.2.1 (`early_stopping`): a validation value at
/// least as good as the best so far is an improvement; training stops once
/// `stopping_step` + 1 validations in a row brought none; the best epoch's parameters are
/// kept (in memory, and in `checkpoint_dir` when set) and end up in the model.
public struct Trainer {
    /// Seed, threads, settings, validation and progress hooks of the fit.
    public let context: FitContext
    /// The threads of the training loop and its validation passes (`thread_split`; by default
    /// the fit's workers with one OpenBLAS thread per call, large products split over the
    /// workers: idle OpenBLAS threads busy-wait between calls and would take a core from the
    /// loop). Preparation runs with the fit's own `Compute`.
    public var compute: Compute { context.trainingCompute }

    /// A trainer for one fit.
    public init(context: FitContext) { self.context = context }

    /// Trains `model` on `data` and returns what training did. With `context.resume`, a saved
    /// state of this run is taken up first and the state is saved as the run goes.
    public func train<M: LearnedModel>(_ model: inout M, data: TrainingData) throws -> TrainingSummary {
        var rng = SeededGenerator(seed: context.seed, stream: M.randomStreams.initialization)
        let settings = context.training
        var initial = model.prepare(data, context: context, rng: &rng)
        if let path = settings.initialParameters { initial = try Self.replacing(initial, from: Checkpoint.read(path), source: path, model: M.name) }
        var state = TrainingState(parameters: initial, compute: compute)
        state.negativeItems = NegativeItems(settings.negativeDistribution, data: data)
        var progress = FitProgress(stopping: earlyStopping)
        var saver = context.resume.map { TrainingSaver($0, logger: context.logger) }
        if let saved = saver?.load(model: M.name, initial: initial, makeOptimizer: settings.makeOptimizer, adopt: { try adopt(&$0, model: M.name) }) {
            state.restore(saved)
            progress = saved.progress
            model.resumed(with: state.parameters, data: data, compute: compute)
        }
        // The ETA counts the epochs a saved state brought as if they had run here.
        let trainingStart = ContinuousClock.now.advanced(by: .seconds(-progress.records.reduce(0) { $0 + $1.seconds }))
        for epoch in min(progress.records.count, settings.epochs)..<settings.epochs where !progress.isOver {
            try runAndValidate(epoch, of: &model, state: &state, progress: &progress, data: data, since: trainingStart)
            saver?.save(state, progress, model: M.name, final: false)
        }
        saver?.save(state, progress, model: M.name, final: true)
        model.parameters = state.best ?? state.parameters
        return progress.summary(keptBest: state.best != nil, profile: context.profile?.summary)
    }

    /// Where the best parameters are written (`checkpoint_dir`), if anywhere.
    var checkpointPath: String? {
        context.training.checkpointDirectory.map { ($0 as NSString).appendingPathComponent("\(context.checkpointName).params") }
    }

    /// Early stopping as the settings ask, before any validation.
    var earlyStopping: EarlyStopping {
        EarlyStopping(patience: context.training.stoppingStep, biggerIsBetter: context.validMetricBigger, decimals: context.validDecimals)
    }

    /// Fits a saved state to this fit. A search's pruner replays the saved validations: a state past
    /// the epoch it would have pruned at cannot be continued, and without a pruner a saved pruning
    /// (a trial's state taken up by a plain run of the same values) is dropped. The best parameters
    /// go to this run's `checkpoint_dir`, if any.
    func adopt(_ saved: inout SavedTraining, model: String) throws {
        saved.progress.prunedAt = nil
        if let prune = context.prune {
            var replay = earlyStopping
            for record in saved.progress.records {
                guard let value = record.valid else { continue }
                _ = replay.record(value, epoch: record.epoch)
                guard prune(record.epoch, replay.bestScore) else { continue }
                guard record.epoch == saved.progress.records.count else {
                    throw RecBenchError(location: model, "this search's pruner ends the fit at epoch \(record.epoch)")
                }
                saved.progress.prunedAt = record.epoch
            }
        }
        saved.progress.checkpoint = nil
        if let path = checkpointPath, let best = saved.best { saved.progress.checkpoint = try Checkpoint.write(best, to: path) }
    }

    /// One epoch, its validation when due (keeping the best parameters), its record and report.
    func runAndValidate<M: LearnedModel>(_ epoch: Int, of model: inout M, state: inout TrainingState, progress: inout FitProgress,
                                         data: TrainingData, since trainingStart: ContinuousClock.Instant) throws {
        let settings = context.training, start = ContinuousClock.now
        let loss = try runEpoch(epoch, of: &model, state: &state, data: data)
        var score: Double?, validSeconds: Double?
        var improved = false
        if (epoch + 1) % settings.evalStep == 0, let validate = context.validate {
            let validStart = ContinuousClock.now
            score = validate(model.scoring(with: state.parameters), compute)
            validSeconds = (ContinuousClock.now - validStart).seconds
            guard !score!.isNaN else {   // parameters finite but so large that the scores overflow
                throw model.diverged(at: epoch + 1, "scores NaN or +∞ on the valid split")
            }
            improved = progress.stopping.record(score!, epoch: epoch + 1)
            if improved {
                time("keep best parameters") { state.keepBest() }
                if let path = checkpointPath { progress.checkpoint = try Checkpoint.write(state.parameters, to: path) }
            }
        }
        let seconds = (ContinuousClock.now - start).seconds
        progress.records.append(.init(epoch: epoch + 1, loss: loss, valid: score, seconds: seconds, validSeconds: validSeconds))
        let stopping = progress.stopping
        var report = EpochReport(model: M.name, epoch: epoch + 1, epochs: settings.epochs, loss: loss,
                                 validScore: score, improved: improved, seconds: seconds)
        report.best = stopping.bestEpoch > 0 ? (stopping.bestScore, stopping.bestEpoch) : nil
        report.elapsed = (ContinuousClock.now - trainingStart).seconds
        context.onEpoch?(report)
        if score != nil, let prune = context.prune, prune(epoch + 1, stopping.bestScore) { progress.prunedAt = epoch + 1 }
    }

    /// The passes of one epoch; returns the epoch's loss (the last reporting pass's).
    func runEpoch<M: LearnedModel>(_ epoch: Int, of model: inout M, state: inout TrainingState, data: TrainingData) throws -> Double {
        var loss = 0.0
        for (k, pass) in model.passes.enumerated() {
            time("pass setup") { model.willBegin(pass, parameters: state.parameters, data: data, compute: compute) }
            let number = M.randomStreams.passNumber(epoch: epoch, k: k)
            let passLoss: Double
            switch pass.method {
            case .custom: passLoss = time("\(M.name) pass") { model.customPass(pass, index: number, parameters: &state.parameters, context: context) }
            case .gradient: passLoss = gradientPass(pass, number: number, of: model, state: &state, data: data)
            }
            if pass.reportsLoss { loss = passLoss }
        }
        guard loss.isFinite, time("finite check", { state.parameters.isFinite(compute: compute) }) else {
            throw model.diverged(at: epoch + 1, "non-finite loss or parameters")
        }
        return loss
    }

    /// One optimizer step per shuffled batch: each batch's loss is built on a fresh tape whose
    /// leaves are the parameters (trainable where the pass says), and the tape is released
    /// before the step, so the optimizer updates the parameters in place. Returns the mean
    /// batch loss.
    func gradientPass<M: LearnedModel>(_ pass: TrainingPass, number: Int, of model: M, state: inout TrainingState,
                                       data: TrainingData) -> Double {
        let streams = M.randomStreams
        let batches = time("batch order") {
            streams.batches(count: model.exampleCount(data), batchSize: model.examplesPerBatch(context.training), seed: context.seed, pass: number)
        }
        var rng = streams.draws(seed: context.seed, pass: number)
        var optimizer = state.optimizers.removeValue(forKey: pass.name) ?? context.training.makeOptimizer()
        var total = 0.0
        for (b, examples) in batches.enumerated() {
            state.steps += 1
            let batch = TrainingBatch(examples: examples, pass: pass, step: state.steps, negatives: context.training.negativesDrawn,
                                      negativeItems: state.negativeItems)
            let (value, gradients, statistics) = { () -> (Double, [String: Matrix], [String: Matrix]) in
                let tape = Tape(compute: compute, profile: context.profile)
                let leaves = tape.leaves(state.parameters, trainable: pass.updates)
                let batchLoss = model.loss(batch, leaves, tape: tape, rng: &rng)
                tape.backward(batchLoss)
                return (Double(batchLoss.value.values[0]), Tape.gradients(leaves), tape.statistics)
            }()
            let clipped = context.training.clipping.map { $0.clipped(gradients) } ?? gradients
            time("optimizer step") { optimizer.step(&state.parameters, gradients: clipped, compute: compute) }
            for (name, value) in statistics { state.parameters[name] = value }
            total += value
            context.onBatch?(b + 1, batches.count)
        }
        state.optimizers[pass.name] = optimizer
        return total / Double(max(1, batches.count))
    }
}

extension Trainer {
    /// Runs `body`, charging its time to `phase` when the fit is profiled.
    func time<T>(_ phase: String, _ body: () throws -> T) rethrows -> T {
        guard let profile = context.profile else { return try body() }
        return try profile.time(phase, body)
    }
}

/// What the trainer holds while training: the live parameters, the best epoch's copy, one
/// optimizer per pass name and the batch count.
struct TrainingState {
    var parameters: Parameters
    var best: Parameters?
    var optimizers: [String: any Optimizer] = [:]
    var steps = 0
    let compute: Compute
    /// The distribution of the fit's negatives, built once from the data.
    var negativeItems = NegativeItems.uniform

    init(parameters: Parameters, compute: Compute) { self.parameters = parameters; self.compute = compute }

    /// Takes up a saved state's parameters, best parameters, optimizers and step count.
    mutating func restore(_ saved: SavedTraining) {
        parameters = saved.parameters; best = saved.best; optimizers = saved.optimizers; steps = saved.steps
    }

    /// Copies the live parameters into the best epoch's own storage (a plain assignment would
    /// share it, and the next optimizer step would then copy every parameter).
    mutating func keepBest() {
        if best == nil { best = parameters.copy() } else { best!.overwrite(with: parameters, compute: compute) }
    }
}

/// RecBole's early stopping: a value at least as good as the best, both rounded to `decimals`
/// places as RecBole's evaluator rounds them, is an improvement (so a tie keeps the later
/// epoch); stop once `patience` + 1 validations in a row brought none.
extension Trainer {
    /// `initial` with every parameter taken from `loaded` (read from `path`), which must hold each
    /// of them with the same shape (and nothing else, so a file for another model is refused).
    static func replacing(_ initial: Parameters, from loaded: Parameters, source path: String, field: String = "init_parameters",
                          model: String) throws -> Parameters {
        guard Set(loaded.names) == Set(initial.names) else {
            throw RecBenchError.file(path, field: field, "holds \(loaded.names.sorted().joined(separator: ", ")); "
                                     + "\(model) has \(initial.names.sorted().joined(separator: ", "))")
        }
        for name in initial.names where (loaded[name].rows, loaded[name].columns) != (initial[name].rows, initial[name].columns) {
            throw RecBenchError.file(path, field: name, "is \(loaded[name].rows) × \(loaded[name].columns); \(model) on this data needs "
                                     + "\(initial[name].rows) × \(initial[name].columns)")
        }
        var result = Parameters()   // in the model's order, running statistics kept as such
        for name in initial.names {
            if initial.statistics.contains(name) { result.addStatistic(name, loaded[name]) } else { result.add(name, loaded[name]) }
        }
        return result
    }
}

struct EarlyStopping: Codable {
    let patience: Int
    let biggerIsBetter: Bool
    let decimals: Int?
    private(set) var bestScore = 0.0
    private(set) var bestEpoch = 0
    private var stale = 0
    private var seen = false

    init(patience: Int, biggerIsBetter: Bool, decimals: Int? = nil) {
        self.patience = patience; self.biggerIsBetter = biggerIsBetter; self.decimals = decimals
    }

    /// Records a validation value; returns whether it improved on the best.
    mutating func record(_ value: Double, epoch: Int) -> Bool {
        let (new, best) = (compared(value), compared(bestScore))
        guard !seen || (biggerIsBetter ? new >= best : new <= best) else {
            stale += 1
            return false
        }
        seen = true; bestScore = value; bestEpoch = epoch; stale = 0
        return true
    }

    /// Whether training should stop.
    var shouldStop: Bool { stale > patience }

    /// A value as the comparison sees it: Python's `round(x, d)`, the exact binary value
    /// rounded to d places, ties to even. When x · 10ᵈ rounds to a half, the product's exact
    /// residual (one fused multiply-add) says on which side of it x · 10ᵈ really lies.
    func compared(_ value: Double) -> Double {
        guard let decimals, value.isFinite else { return value }
        let scale = pow(10, Double(decimals)), product = value * scale
        guard abs(product - product.rounded(.towardZero)) == 0.5 else { return product.rounded(.toNearestOrEven) / scale }
        let residual = (-product).addingProduct(value, scale)
        return (residual > 0 ? product.rounded(.up) : residual < 0 ? product.rounded(.down) : product.rounded(.toNearestOrEven)) / scale
    }
}

extension LearnedModel {
    /// This model scoring with `parameters` (a copy that shares their storage: validation
    /// drops it before the next optimizer step, which therefore still updates in place).
    func scoring(with parameters: Parameters) -> Self {
        var scorer = self
        scorer.parameters = parameters
        return scorer
    }
}
