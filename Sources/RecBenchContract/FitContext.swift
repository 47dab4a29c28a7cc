import Logging
import Linalg
import RecBenchSupport
import RecBenchData

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
    /// Where training's op and phase times go (`run --profile`); nil: not profiled.
    public var profile: OpProfile?
    /// How training shares `compute` with OpenBLAS.
    public var threadSplit: ThreadSplit
    /// A search's pruner: asked after each validation with (epoch, best validation value so
    /// far); true ends training there (nil: never).
    public var prune: (@Sendable (Int, Double) -> Bool)? = nil
    /// Decimal places at which early stopping compares validation values: RecBole's evaluator
    /// rounds every metric to `metric_decimal_place` before its trainer compares, so a value
    /// equal to the best at those places counts as an improvement (nil: exact values).
    public var validDecimals: Int? = nil
    /// Where training saves its state between epochs so that a killed run continues (nil: not saved).
    public var resume: TrainingResume? = nil
    /// The threads of the training loop and its validation passes.
    public var trainingCompute: Compute { threadSplit.training(compute) }

    /// A context (training settings default to RecBole's).
    public init(seed: UInt64, compute: Compute, logger: Logger, training: TrainingSettings = TrainingSettings(),
                validate: (@Sendable (any Scorer, Compute) -> Double)? = nil, validMetricBigger: Bool = true, validMetric: String = "valid",
                onEpoch: (@Sendable (EpochReport) -> Void)? = nil, onBatch: (@Sendable (Int, Int) -> Void)? = nil,
                checkpointName: String = "model", profile: OpProfile? = nil, threadSplit: ThreadSplit = .auto) {
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
        self.profile = profile
        self.threadSplit = threadSplit
    }
}

/// Where a fit saves its training state (`resume_interval`): after an epoch that ends at least
/// `interval` seconds after the last save, so a run killed mid-training and started again with
/// the same run key continues after the last saved epoch.
public struct TrainingResume: Sendable {
    /// The state file (`RunFiles`' `.training`).
    public let path: String
    /// Seconds between saves.
    public let interval: Double
    /// The run key: a state saved under another is not this run's.
    public let identity: String
    /// The build that saves and may continue a state (`BuildIdentity`): the run key names the
    /// version, and two builds of one version may compute differently.
    public let build: String?

    /// Saves to `path` every `interval` seconds for the run `identity`, as the build `build`.
    public init(path: String, interval: Double, identity: String, build: String? = BuildIdentity.current) {
        self.path = path; self.interval = interval; self.identity = identity; self.build = build
    }
}
