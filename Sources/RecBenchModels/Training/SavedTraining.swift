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
        let progress: FitProgress
        let optimizers: [String: OptimizerHeader]
    }
    struct OptimizerHeader: Codable { let kind: String, counts: [String: Int] }

    func encoded(identity: String, model: String) throws -> Data {
        let names = optimizers.keys.sorted()
        let header = Header(identity: identity, model: model, steps: steps, hasBest: best != nil, progress: progress,
                            optimizers: optimizers.mapValues { OptimizerHeader(kind: $0.saved.kind, counts: $0.saved.counts) })
        let json = try JSONEncoder().encode(header)
        var data = Data(Self.magic)
        TensorList.append(UInt64(json.count), to: &data)
        data.append(json)
        var tensors = parameters.names.map { ("p:\($0)", parameters[$0]) }
        if let best { tensors += best.names.map { ("b:\($0)", best[$0]) } }
        for pass in names { tensors += optimizers[pass]!.saved.tensors.map { ("o:\(pass)/\($0.0)", $0.1) } }
        TensorList.append(tensors, to: &data)
        return data
    }
}

/// Saves a fit's state to its `TrainingResume` file and takes it up again.
struct TrainingSaver {
    let resume: TrainingResume
    private var lastSave = ContinuousClock.now
    private var saved = false

    init(_ resume: TrainingResume) { self.resume = resume }

    /// Writes the state after an epoch that ends `interval` seconds or more after the last save
    /// (or the fit's start); at the end (`final`), also whenever a state was saved or taken up
    /// before, so a kill during the final evaluation does not repeat the last epochs.
    mutating func save(_ state: TrainingState, _ progress: FitProgress, model: String, final: Bool) throws {
        guard (ContinuousClock.now - lastSave).seconds >= resume.interval || (final && saved) else { return }
        let snapshot = SavedTraining(progress: progress, parameters: state.parameters, best: state.best, optimizers: state.optimizers,
                                     steps: state.steps)
        try AtomicWrite.write(try snapshot.encoded(identity: resume.identity, model: model), to: resume.path)
        lastSave = ContinuousClock.now
        saved = true
    }

    /// The saved state of this run, when the file holds one that fits `initial`'s names and
    /// shapes; nil (with a notice naming the file and why) when it holds something else.
    mutating func load(model: String, initial: Parameters, makeOptimizer: () -> any Optimizer, logger: Logger) -> SavedTraining? {
        guard let data = FileManager.default.contents(atPath: resume.path) else { return nil }
        do {
            var result = try decode(data, model: model, initial: initial, makeOptimizer: makeOptimizer)
            let epochs = result.progress.records.count
            result.progress.resumedAfter = epochs
            logger.notice("\(model): continuing after epoch \(epochs), as saved in \(resume.path)")
            saved = true
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
        let header = try JSONDecoder().decode(SavedTraining.Header.self, from: try reader.bytes(try reader.uint64()))
        guard header.identity == resume.identity, header.model == model else {
            throw RecBenchError.file(path, "was saved by another run (\(header.model), run key \(header.identity.prefix(16)))")
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
            try optimizer.restore(OptimizerState(kind: saved.kind, counts: saved.counts, tensors: tensors))
            optimizers[pass] = optimizer
        }
        return SavedTraining(progress: header.progress, parameters: try parameters("p:"), best: header.hasBest ? try parameters("b:") : nil,
                             optimizers: optimizers, steps: header.steps)
    }
}
