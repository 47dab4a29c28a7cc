import RecBenchSupport
import RecBenchData
import RecBenchContract
import RecBenchEvaluation
import RecBenchModels
/// Everything one run produced and everything needed to trust or repeat it.
public struct RunResult: Codable, Sendable {
    /// recbench's version.
    public var recbenchVersion: String
    /// Model name (registry spelling).
    public var model: String
    /// Model type (baseline, neighbourhood, …).
    public var modelType: ModelKind
    /// General or context-aware (absent in records before context-aware models: general).
    public var modelFamily: ModelFamily?
    /// Dataset name.
    public var dataset: String
    /// Identity of the run: hash of model, result-relevant config and dataset fingerprint.
    public var runKey: String
    /// When the run finished (ISO 8601, UTC).
    public var finishedAt: String
    /// The history mask mode of both evaluations.
    public var historyMask: HistoryMask
    /// What an evaluation row was: a user or a next-item example (absent in records before
    /// sequential models: user).
    public var evaluationProtocol: EvaluationProtocol?
    /// SHA-256 over the loaded files.
    public var datasetFingerprint: String
    /// SHA-256 over the split assignment.
    public var splitFingerprint: String
    /// The effective config (every key, with model keys restricted to this model's).
    public var config: [String: ConfigValue]
    /// The model's resolved hyperparameters.
    public var hyperparameters: [String: ConfigValue]
    /// Dataset statistics after filtering.
    public var statistics: DatasetStatistics
    /// Interactions per split part and evaluated users per split.
    public var split: SplitSummary
    /// Report keys in order (metric × cutoff).
    public var metricKeys: [String]
    /// Validation metrics (empty when the split has no valid part).
    public var valid: [String: Double]
    /// Test metrics.
    public var test: [String: Double]
    /// Repeat-vs-new analyses per split ("valid", "test"), keys as in `Analyses`.
    public var analyses: [String: [String: Double]]
    /// Seconds per phase: load, split, fit, evaluate_valid, evaluate_test, total.
    public var seconds: [String: Double]
    /// Model-specific step timings (e.g. EASE's gram / inverse / scale).
    public var fitSteps: [String: Double]
    /// Epochs, losses, validation scores and the best epoch (learned models).
    public var training: TrainingSummary?
    /// Peak resident memory of the process, MiB.
    public var peakMemoryMiB: Double
    /// BLAS threads and worker threads used.
    public var threads: [String: Int]
    /// The BLAS build and the kernel set it ran (absent in older records).
    public var blas: String?
    /// recbench's own kernel build (`KernelSet`: baseline, or avx2+fma; absent in older records).
    public var kernels: String? = nil
    /// Notices raised during the run (ignored keys, mask warnings).
    public var notices: [String]
    /// The search that chose this run's hyperparameters (`recbench tune`; nil: not tuned).
    public var tuning: TuningRecord? = nil
    /// The fit's epoch whose validation pass is `valid` (its parameters are the ones kept); nil
    /// when `valid` was evaluated after the fit (models without such a pass, older records).
    public var validFromEpoch: Int? = nil

    enum CodingKeys: String, CodingKey {
        case recbenchVersion = "recbench_version", model, modelType = "model_type", modelFamily = "model_family", dataset
        case runKey = "run_key", finishedAt = "finished_at", historyMask = "history_mask"
        case evaluationProtocol = "eval_protocol"
        case datasetFingerprint = "dataset_fingerprint", splitFingerprint = "split_fingerprint"
        case config, hyperparameters, statistics, split, metricKeys = "metric_keys", valid, test, analyses
        case seconds, fitSteps = "fit_steps", training, peakMemoryMiB = "peak_memory_mib", threads, blas, kernels, notices, tuning
        case validFromEpoch = "valid_from_epoch"
    }
}

/// Split sizes as recorded in a result: interactions per part and users evaluated, or
/// under next-item evaluation examples per part and examples evaluated.
public struct SplitSummary: Codable, Sendable, Equatable {
    public var train: Int
    public var valid: Int
    public var test: Int
    public var validUsers: Int
    public var testUsers: Int
    /// Test positives the user already had in train or valid (repeat consumption).
    public var testRepeatPositives: Int
    /// Next-item evaluation: users with a single interaction, which makes no example (RecBole
    /// drops them the same way); nil under user rows.
    public var usersWithoutExamples: Int?

    /// A summary from its counts.
    public init(train: Int, valid: Int, test: Int, validUsers: Int, testUsers: Int, testRepeatPositives: Int) {
        self.train = train; self.valid = valid; self.test = test
        self.validUsers = validUsers; self.testUsers = testUsers; self.testRepeatPositives = testRepeatPositives
    }

    enum CodingKeys: String, CodingKey {
        case train, valid, test, validUsers = "valid_users", testUsers = "test_users"
        case testRepeatPositives = "test_repeat_positives", usersWithoutExamples = "users_without_examples"
    }
}

/// recbench's version string.
public let recbenchVersion = "0.3.7"
