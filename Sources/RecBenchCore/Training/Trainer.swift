import Foundation

/// A model trained by gradient steps over epochs. Conformers describe one epoch; the shared
/// `Trainer` does validation, early stopping, best-parameter keeping and checkpoints.
public protocol LearnedModel: Recommender {
    /// The trainable parameters.
    var parameters: Parameters { get set }
    /// What the last fit did.
    var trainingSummary: TrainingSummary? { get set }
    /// Creates the initial parameters (seeded) and any per-data state.
    mutating func prepare(_ data: TrainingData, context: FitContext)
    /// One pass over the training data; returns the mean batch loss.
    mutating func trainEpoch(_ epoch: Int, data: TrainingData, context: FitContext) throws -> Double
    /// The training loss on one fixed mini-batch (fixed dropout, negatives and noise),
    /// built on `tape` over `leaves` — the graph gradient checks compare with finite
    /// differences. Call after `prepare`.
    func gradientCheckLoss(_ data: TrainingData, tape: Tape, leaves: [String: Variable]) -> Variable
    /// Whether training multiplies matrices large enough to profit from several BLAS
    /// threads. When not, training runs with one BLAS thread: idle OpenBLAS threads
    /// busy-wait between calls and take the other core from the training loop.
    static var trainsWithLargeProducts: Bool { get }
}

extension LearnedModel {
    /// Prepares, then trains with the shared trainer.
    public mutating func fit(_ data: TrainingData, context: FitContext) throws {
        prepare(data, context: context)
        trainingSummary = try Trainer.train(&self, data: data, context: context)
    }
}

/// One epoch as reported to the user.
public struct EpochReport: Sendable {
    public let model: String
    public let epoch: Int
    public let epochs: Int
    public let loss: Double
    public let validScore: Double?
    public let improved: Bool
    public let seconds: Double
}

/// What training did, stored with the result.
public struct TrainingSummary: Sendable, Codable, Equatable {
    /// Per epoch: loss, validation score (if evaluated), seconds.
    public struct Epoch: Sendable, Codable, Equatable {
        public let epoch: Int
        public let loss: Double
        public let valid: Double?
        public let seconds: Double
    }
    public var epochsRun: Int
    public var bestEpoch: Int
    public var bestValid: Double?
    public var stoppedEarly: Bool
    public var epochs: [Epoch]
    public var checkpoint: String?

    enum CodingKeys: String, CodingKey {
        case epochsRun = "epochs_run", bestEpoch = "best_epoch", bestValid = "best_valid", stoppedEarly = "stopped_early", epochs, checkpoint
    }
}

/// Epochs, validation every `eval_step`, early stopping as RecBole 1.2.1 (`early_stopping`):
/// a validation value at least as good as the best so far is an improvement; training stops
/// once `stopping_step` + 1 validations in a row brought none; the best epoch's parameters
/// are kept (in memory, and in `checkpoint_dir` when set).
public enum Trainer {
    public static func train<M: LearnedModel>(_ model: inout M, data: TrainingData, context: FitContext) throws -> TrainingSummary {
        try BLAS.withConfiguration(threads: M.trainsWithLargeProducts ? context.threads : 1, workers: context.threads) {
            try trainLocked(&model, data: data, context: context)
        }
    }

    static func trainLocked<M: LearnedModel>(_ model: inout M, data: TrainingData, context: FitContext) throws -> TrainingSummary {
        let s = context.training
        var best: Parameters?
        var bestScore = 0.0, bestEpoch = 0, stale = 0
        var records: [TrainingSummary.Epoch] = []
        var stoppedEarly = false
        var checkpoint: String?
        for epoch in 0..<s.epochs {
            let start = ContinuousClock.now
            let loss = try model.trainEpoch(epoch, data: data, context: context)
            guard loss.isFinite, model.parameters.isFinite else {
                throw RecBenchError.config("learning_rate", "\(M.name): training diverged at epoch \(epoch + 1) (non-finite loss or parameters); try a lower learning_rate")
            }
            var score: Double?
            var improved = false
            if (epoch + 1) % s.evalStep == 0, let validate = context.validate {
                let value = validate(model)
                score = value
                if best == nil || (context.validMetricBigger ? value >= bestScore : value <= bestScore) {
                    if best == nil { best = model.parameters } else { best!.overwrite(with: model.parameters) }
                    bestScore = value; bestEpoch = epoch + 1; stale = 0; improved = true
                    if let directory = s.checkpointDirectory {
                        checkpoint = try Checkpoint.write(model.parameters, to: "\(directory)/\(context.checkpointName).params")
                    }
                } else {
                    stale += 1
                }
            }
            let seconds = (ContinuousClock.now - start).seconds
            records.append(.init(epoch: epoch + 1, loss: loss, valid: score, seconds: seconds))
            context.onEpoch?(EpochReport(model: M.name, epoch: epoch + 1, epochs: s.epochs, loss: loss, validScore: score, improved: improved, seconds: seconds))
            if stale > s.stoppingStep { stoppedEarly = true; break }
        }
        if let best { model.parameters = best } else { bestEpoch = records.count }
        return TrainingSummary(epochsRun: records.count, bestEpoch: bestEpoch, bestValid: best == nil ? nil : bestScore,
                               stoppedEarly: stoppedEarly, epochs: records, checkpoint: checkpoint)
    }
}

/// Parameters on disk: a small self-describing binary (magic, then per parameter its name,
/// shape and little-endian float32 values), written atomically.
public enum Checkpoint {
    static let magic = Array("RBCKPT1\n".utf8)

    /// Writes `parameters` to `path` and returns the path.
    @discardableResult
    public static func write(_ parameters: Parameters, to path: String) throws -> String {
        var data = Data(magic)
        func append<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v.littleEndian) { data.append(contentsOf: $0) } }
        append(UInt32(parameters.names.count))
        for name in parameters.names {
            let m = parameters[name], bytes = Array(name.utf8)
            append(UInt32(bytes.count)); data.append(contentsOf: bytes)
            append(UInt32(m.rows)); append(UInt32(m.columns))
            m.values.withUnsafeBytes { data.append(contentsOf: $0) }
        }
        try ResultStore.writeAtomically(data, to: path)
        return path
    }

    /// Reads parameters written by `write`.
    public static func read(_ path: String) throws -> Parameters {
        guard let data = FileManager.default.contents(atPath: path), data.starts(with: magic) else {
            throw RecBenchError.file(path, "is not a recbench checkpoint")
        }
        var offset = magic.count
        func read32() throws -> Int {
            guard offset + 4 <= data.count else { throw RecBenchError.file(path, "is truncated") }
            let v = data[offset..<(offset + 4)].withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) }
            offset += 4
            return Int(v)
        }
        var parameters = Parameters()
        for _ in 0..<(try read32()) {
            let length = try read32()
            guard offset + length <= data.count else { throw RecBenchError.file(path, "is truncated") }
            let name = String(decoding: data[offset..<(offset + length)], as: UTF8.self)
            offset += length
            let rows = try read32(), columns = try read32()
            let byteCount = rows * columns * 4
            guard offset + byteCount <= data.count else { throw RecBenchError.file(path, "is truncated") }
            var values = [Float](repeating: 0, count: rows * columns)
            _ = values.withUnsafeMutableBytes { data[offset..<(offset + byteCount)].copyBytes(to: $0) }
            offset += byteCount
            parameters.add(name, Matrix(rows: rows, columns: columns, values: values))
        }
        return parameters
    }
}
