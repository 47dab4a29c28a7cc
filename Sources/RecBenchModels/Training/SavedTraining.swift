import Foundation
import Logging
import Linalg
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// Where a fit stands between epochs, besides its tensors: early stopping, the epochs' records,
/// the checkpoint written, a pruned epoch.
struct FitProgress: Codable {
    var stopping: EarlyStopping
    var records: [TrainingSummary.Epoch] = []
    var checkpoint: String?
    var prunedAt: Int?
    /// The epoch a saved state was taken up after.
    var resumedAfter: Int?

    init(stopping: EarlyStopping) { self.stopping = stopping }

    /// Whether training is over before its last epoch (stopped early or pruned).
    var isOver: Bool { stopping.shouldStop || prunedAt != nil }

    /// The summary of the fit; without kept best parameters (no validation) the last epoch is the one used.
    func summary(keptBest: Bool, profile: [OpProfileEntry]?) -> TrainingSummary {
        var summary = TrainingSummary(epochsRun: records.count, bestEpoch: keptBest ? stopping.bestEpoch : records.count,
                                      bestValid: keptBest ? stopping.bestScore : nil, stoppedEarly: stopping.shouldStop, epochs: records,
                                      checkpoint: checkpoint, profile: profile, prunedAt: prunedAt)
        summary.resumedAfter = resumedAfter
        return summary
    }
}

/// A fit's state after an epoch: enough to continue it as if it had not stopped (each pass's
/// random streams are drawn from the seed and the pass number, so nothing else is needed).
struct SavedTraining {
    var progress: FitProgress
    var parameters: Parameters
    var best: Parameters?
    var optimizers: [String: any Optimizer]
    var steps: Int

    /// The file: magic, the header's length and JSON, then the tensors (`p:` parameters,
    /// `b:` best parameters, `o:<pass>/` optimizer state).
    static let magic = Array("RBSTATE1\n".utf8)

    struct Header: Codable {
        let identity: String, model: String, steps: Int, hasBest: Bool
        /// The build that saved it (`BuildIdentity`; nil: unknown, or saved before builds were recorded).
        let build: String?
        let progress: FitProgress
        let optimizers: [String: OptimizerHeader]
    }
    struct OptimizerHeader: Codable { let kind: String, counts: [String: Int] }

    /// Writes the state to `path` atomically, a tensor at a time.
    func write(to path: String, identity: String, build: String?, model: String) throws {
        let header = Header(identity: identity, model: model, steps: steps, hasBest: best != nil, build: build, progress: progress,
                            optimizers: optimizers.mapValues { OptimizerHeader(kind: $0.saved.kind, counts: $0.saved.counts) })
        let json = try JSONEncoder().encode(header)
        var tensors = parameters.names.map { ("p:\($0)", parameters[$0]) }
        if let best { tensors += best.names.map { ("b:\($0)", best[$0]) } }
        for pass in optimizers.keys.sorted() { tensors += optimizers[pass]!.saved.tensors.map { ("o:\(pass)/\($0.0)", $0.1) } }
        try AtomicWrite.stream(to: path) { write in
            try write(Self.magic + withUnsafeBytes(of: UInt64(json.count).littleEndian) { Array($0) } + Array(json))
            try TensorList.write(tensors, write)
        }
    }
}

/// What a saved training state says without loading its tensors (a sweep's listing and progress).
public enum SavedTrainingFile {
    /// The epochs the state at `path` holds, reading its header only; nil when there is no file, it is not a state, or
    /// another build saved it (`build`: the running one by default), so it will not be continued.
    public static func epochs(at path: String, build: String? = BuildIdentity.current) -> Int? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        let prefix = SavedTraining.magic.count + 8
        guard let start = try? handle.read(upToCount: prefix), start.count == prefix, start.starts(with: SavedTraining.magic) else { return nil }
        var reader = TensorList.Reader(data: start, offset: SavedTraining.magic.count, path: path)
        guard let length = try? reader.uint64(), length < 1 << 30, let json = try? handle.read(upToCount: length), json.count == length,
              let header = try? JSONDecoder().decode(SavedTraining.Header.self, from: json), header.build == build else { return nil }
        return header.progress.records.count
    }
}

/// Saves a fit's state to its `TrainingResume` file and takes it up again.
struct TrainingSaver {
    let resume: TrainingResume
    let logger: Logger
    private var lastSave = ContinuousClock.now
    /// The epochs of the state last saved or taken up (nil: none yet).
    private var savedEpochs: Int?

    init(_ resume: TrainingResume, logger: Logger) { self.resume = resume; self.logger = logger }

    /// Writes the state after an epoch that ends `interval` seconds or more after the last save
    /// (or the fit's start); at the end (`final`), also whenever a state was saved or taken up
    /// before, so a kill during the final evaluation does not repeat the last epochs. A state
    /// that cannot be written (a full disk) is said and training goes on: it only saves time.
    mutating func save(_ state: TrainingState, _ progress: FitProgress, model: String, final: Bool) {
        let epochs = progress.records.count
        guard savedEpochs != epochs, (ContinuousClock.now - lastSave).seconds >= resume.interval || (final && savedEpochs != nil) else { return }
        let snapshot = SavedTraining(progress: progress, parameters: state.parameters, best: state.best, optimizers: state.optimizers,
                                     steps: state.steps)
        do {
            try snapshot.write(to: resume.path, identity: resume.identity, build: resume.build, model: model)
            savedEpochs = epochs
        } catch {
            logger.warning("\(model): training state not saved after epoch \(epochs) (\(error)); training goes on")
        }
        lastSave = ContinuousClock.now
    }

    /// The saved state of this run, when the file holds one that fits `initial`'s names and
    /// shapes; nil (with a notice naming the file and why) when it holds something else.
    /// `adopt` fits the state to this fit (its pruner, its checkpoint folder) or throws why it cannot be continued.
    mutating func load(model: String, initial: Parameters, makeOptimizer: () -> any Optimizer,
                       adopt: (inout SavedTraining) throws -> Void) -> SavedTraining? {
        guard let data = FileManager.default.contents(atPath: resume.path) else { return nil }
        do {
            var result = try decode(data, model: model, initial: initial, makeOptimizer: makeOptimizer)
            try adopt(&result)
            let epochs = result.progress.records.count
            result.progress.resumedAfter = epochs
            logger.notice("\(model): continuing after epoch \(epochs), as saved in \(resume.path)")
            savedEpochs = epochs
            return result
        } catch {
            logger.notice("\(resume.path): not taken up (\(error)); \(model) trains from its first epoch and overwrites it")
            return nil
        }
    }

    func decode(_ data: Data, model: String, initial: Parameters, makeOptimizer: () -> any Optimizer) throws -> SavedTraining {
        let path = resume.path
        guard data.starts(with: SavedTraining.magic) else { throw RecBenchError.file(path, "is not a recbench training state") }
        var reader = TensorList.Reader(data: data, offset: SavedTraining.magic.count, path: path)
        let length = try reader.uint64()
        guard length < 1 << 30 else { throw RecBenchError.file(path, "has a header of \(length) bytes") }
        let header = try JSONDecoder().decode(SavedTraining.Header.self, from: try reader.bytes(length))
        guard header.identity == resume.identity, header.model == model else {
            throw RecBenchError.file(path, "was saved by another run (\(header.model), run key \(header.identity.prefix(16)))")
        }
        guard header.build == resume.build else {
            let builds = "\(Self.describe(header.build)); this one is \(Self.describe(resume.build))"
            throw RecBenchError.file(path, "was saved by another build of recbench (\(builds))")
        }
        var groups: [String: [(String, Matrix)]] = [:]
        for (name, value) in try reader.tensors() {
            let (kind, rest) = (String(name.prefix(2)), String(name.dropFirst(2)))
            groups[kind, default: []].append((rest, value))
        }
        func parameters(_ kind: String) throws -> Parameters {
            var loaded = Parameters()
            for (name, value) in groups[kind] ?? [] { loaded.add(name, value) }
            return try Trainer.replacing(initial, from: loaded, source: path, field: kind == "p:" ? "parameters" : "best parameters", model: model)
        }
        var optimizers: [String: any Optimizer] = [:]
        for (pass, saved) in header.optimizers {
            let tensors = (groups["o:"] ?? []).filter { $0.0.hasPrefix("\(pass)/") }.map { (String($0.0.dropFirst(pass.count + 1)), $0.1) }
            var optimizer = makeOptimizer()
            try optimizer.restore(OptimizerState(kind: saved.kind, counts: saved.counts, tensors: tensors), parameters: initial)
            optimizers[pass] = optimizer
        }
        return SavedTraining(progress: header.progress, parameters: try parameters("p:"), best: header.hasBest ? try parameters("b:") : nil,
                             optimizers: optimizers, steps: header.steps)
    }

    static func describe(_ build: String?) -> String { build.map { "build \($0.prefix(16))" } ?? "no build id" }
}
