import Logging

/// The family a model belongs to (the report's "type" column).
public enum ModelKind: String, Sendable, Codable {
    case baseline, neighbourhood, linear, factorisation, autoencoder
}

/// What a model is given to learn from.
public struct TrainingData: Sendable {
    /// The dataset (ids, features).
    public let dataset: Dataset
    /// The split (train / valid / test matrices).
    public let split: SplitData

    /// users × items train counts.
    public var trainMatrix: SparseMatrix { split.trainMatrix }
    /// Number of users.
    public var userCount: Int { split.userCount }
    /// Number of items.
    public var itemCount: Int { split.itemCount }

    /// Bundles a dataset and its split.
    public init(dataset: Dataset, split: SplitData) {
        self.dataset = dataset
        self.split = split
    }
}

/// Run-wide context for fitting: seed, threads, logger, and for learned models the
/// training settings, a validation callback and progress hooks.
public struct FitContext: Sendable {
    /// The run's seed.
    public let seed: UInt64
    /// Threads the model may use (recbench's workers and OpenBLAS's).
    public let compute: Compute
    /// Where progress and notices go.
    public let logger: Logger
    /// Epochs, batch size, optimiser, early stopping.
    public var training: TrainingSettings
    /// The validation metric of a scorer on the valid split, computed with the given threads
    /// (nil: no valid split).
    public var validate: (@Sendable (any Scorer, Compute) -> Double)?
    /// Whether a larger validation value is better.
    public var validMetricBigger: Bool
    /// The validation metric's key, for logs.
    public var validMetric: String
    /// Called after every epoch.
    public var onEpoch: (@Sendable (EpochReport) -> Void)?
    /// Called after every batch with (batches done, batches in the epoch).
    public var onBatch: (@Sendable (Int, Int) -> Void)?
    /// Names the checkpoint file, when checkpoints are written.
    public var checkpointName: String

    /// A context (training settings default to RecBole's).
    public init(seed: UInt64, compute: Compute, logger: Logger, training: TrainingSettings = TrainingSettings(),
                validate: (@Sendable (any Scorer, Compute) -> Double)? = nil, validMetricBigger: Bool = true, validMetric: String = "valid",
                onEpoch: (@Sendable (EpochReport) -> Void)? = nil, onBatch: (@Sendable (Int, Int) -> Void)? = nil,
                checkpointName: String = "model") {
        self.seed = seed
        self.compute = compute
        self.logger = logger
        self.training = training
        self.validate = validate
        self.validMetricBigger = validMetricBigger
        self.validMetric = validMetric
        self.onEpoch = onEpoch
        self.onBatch = onBatch
        self.checkpointName = checkpointName
    }
}

/// The contract every model meets, closed-form and learned alike.
public protocol Recommender: Scorer, Sendable {
    /// Registry key and CLI name (matched case-insensitively).
    static var name: String { get }
    /// One line for `recbench models`.
    static var summary: String { get }
    /// The model family.
    static var kind: ModelKind { get }
    /// Hyperparameters with defaults (RecBole's), documented like config keys.
    static var parameters: [ConfigKey] { get }

    /// Reads and validates hyperparameters.
    init(parameters: ModelParameters) throws
    /// Learns from the train split.
    mutating func fit(_ data: TrainingData, context: FitContext) throws
    /// Seconds per named step of the last fit, for models that report them.
    var fitSteps: [String: Double] { get }
    /// What training did (learned models only).
    var trainingSummary: TrainingSummary? { get }
}

extension Recommender {
    public var fitSteps: [String: Double] { [:] }
    public var trainingSummary: TrainingSummary? { nil }
}

/// A model's resolved hyperparameters, read with range checks. Errors name the key and
/// where it was set.
public struct ModelParameters: Sendable {
    /// The effective config (model keys resolved through all layers).
    public let config: Config
    /// The model's declared parameters.
    public let declared: [ConfigKey]

    /// Parameters for a model declaring `declared`, from `config`.
    public init(config: Config, declared: [ConfigKey]) {
        self.config = config
        self.declared = declared
    }

    private func value(_ name: String) -> ConfigValue {
        precondition(declared.contains { $0.name == name }, "parameter '\(name)' is not declared by the model")
        let v = config[name]
        return v == .null ? declared.first { $0.name == name }!.defaultValue : v
    }

    private func fail(_ name: String, _ message: String) -> RecBenchError {
        RecBenchError.config(name, origin: config.origin(of: name), message)
    }

    /// A number in `range`.
    public func double(_ name: String, in range: ClosedRange<Double> = -.infinity...(.infinity)) throws -> Double {
        guard let d = value(name).doubleValue else { throw fail(name, "expected a number, got \(value(name))") }
        guard range.contains(d) else { throw fail(name, "must lie in \(range.lowerBound)...\(range.upperBound), got \(d)") }
        return d
    }

    /// true or false.
    public func bool(_ name: String) throws -> Bool {
        guard case .bool(let b) = value(name) else { throw fail(name, "expected true or false, got \(value(name))") }
        return b
    }

    /// An integer in `range`.
    public func int(_ name: String, in range: ClosedRange<Int> = Int.min...Int.max) throws -> Int {
        guard let i = value(name).intValue else { throw fail(name, "expected an integer, got \(value(name))") }
        guard range.contains(i) else { throw fail(name, "must lie in \(range.lowerBound)...\(range.upperBound), got \(i)") }
        return i
    }

    /// A list of integers, each in `range`.
    public func intList(_ name: String, in range: ClosedRange<Int> = Int.min...Int.max) throws -> [Int] {
        let v = value(name)
        let items: [ConfigValue]
        switch v {
        case .list(let l): items = l
        case .int: items = [v]
        default: throw fail(name, "expected a list of integers, got \(v)")
        }
        return try items.map { item in
            guard let i = item.intValue else { throw fail(name, "expected a list of integers, got \(v)") }
            guard range.contains(i) else { throw fail(name, "entries must lie in \(range.lowerBound)...\(range.upperBound), got \(i)") }
            return i
        }
    }

    /// A list of numbers, each in `range`.
    public func doubleList(_ name: String, in range: ClosedRange<Double> = -.infinity...(.infinity)) throws -> [Double] {
        let v = value(name)
        guard case .list(let items) = v else { throw fail(name, "expected a list of numbers, got \(v)") }
        return try items.map { item in
            guard let d = item.doubleValue else { throw fail(name, "expected a list of numbers, got \(v)") }
            guard range.contains(d) else { throw fail(name, "entries must lie in \(range.lowerBound)...\(range.upperBound), got \(d)") }
            return d
        }
    }

    /// The resolved value of every declared parameter (stored with each result).
    public var resolved: [String: ConfigValue] {
        Dictionary(uniqueKeysWithValues: declared.map { ($0.name, value($0.name)) })
    }
}
