import Logging
import Linalg
import RecBenchSupport
import RecBenchData

/// The family a model belongs to (the report's "type" column).
public enum ModelKind: String, Sendable, Codable {
    case baseline, neighbourhood, linear, factorisation, autoencoder, embedding, recurrent, attention, graph, convolutional
}

/// Which inputs a model reads: interactions only, or user and item features too (the
/// report groups its rows by family).
public enum ModelFamily: String, Sendable, Codable, CaseIterable {
    case general
    case contextAware = "context-aware"
    /// Reads the order of each user's items (the log's sequences).
    case sequential
}

/// What a model is to a sweep: a model to compare, or a baseline that joins a sweep
/// unasked when the data calls for it.
public enum ModelRole: String, Sendable, Codable {
    /// Runs when requested (or when a sweep names no models).
    case model
    /// Joins every sweep whose test split has repeat consumption: the score a model must
    /// beat on re-buys.
    case repeatBaseline = "repeat baseline"
}

/// What a model is given to learn from.
public struct TrainingData: Sendable {
    /// The dataset (ids, features).
    public let dataset: Dataset
    /// The split (train / valid / test matrices).
    public let split: SplitData
    /// The time-ordered sequences (sequential models only; nil for the others).
    public let sequences: SequenceData?

    /// users × items train counts.
    public var trainMatrix: SparseMatrix { split.trainMatrix }
    /// Number of users.
    public var userCount: Int { split.userCount }
    /// Number of items.
    public var itemCount: Int { split.itemCount }

    /// Bundles a dataset, its split and, for sequential models, its sequences.
    public init(dataset: Dataset, split: SplitData, sequences: SequenceData? = nil) {
        self.dataset = dataset
        self.split = split
        self.sequences = sequences
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
    /// General (interactions only), context-aware (features too) or sequential (the order).
    static var family: ModelFamily { get }
    /// Hyperparameters with defaults (RecBole's), documented like config keys; a key several
    /// models read comes from `SharedKeys`, with this model's default.
    static var parameters: [ConfigKey] { get }
    /// A model to compare, or a baseline sweeps add by themselves (default: a model).
    static var role: ModelRole { get }
    /// Small settings the shared tests build the model with (gradient checks, scorer
    /// checks), one entry per variant to check; each is laid over the declared defaults.
    static var testSettings: [[String: ConfigValue]] { get }
    /// Whether it reads `.user` / `.item` features (default: context-aware models), so that
    /// the shared tests build it on data with side files.
    static var readsFeatures: Bool { get }
    /// What `recbench tune` searches when given no space (default: the parameters declared
    /// `searched`; learned models add the learning rate).
    static var searchSpace: [SearchDimension] { get }
    /// Whether it has a training loop that reads `TrainingSettings.keys` (default: no; every
    /// `LearnedModel` does). A model that does not keeps none of them in its run's identity.
    static var readsTrainingKeys: Bool { get }
    /// Whether its fit or scores depend on `seed` (default: yes). A model that draws nothing
    /// says no, and a grid over seeds is one run of it where the split draws nothing either.
    static var readsSeed: Bool { get }

    /// Reads and validates hyperparameters.
    init(parameters: ModelParameters) throws
    /// Learns from the train split.
    mutating func fit(_ data: TrainingData, context: FitContext) throws
    /// Named figures of the last fit, for models that report them: seconds per step
    /// (EASE), counts of the work done (Item2vec's sessions and pairs per epoch).
    var fitSteps: [String: Double] { get }
    /// What training did (learned models only).
    var trainingSummary: TrainingSummary? { get }
    /// FLOPs per epoch on data of `shape`, for models that declare them (learned models).
    func cost(_ shape: WorkShape) -> ModelCost?
    /// The fit's memory beyond the data on data of `shape`, for models whose need grows
    /// faster than the data; nil when it does not.
    func memory(_ shape: WorkShape) -> MemoryEstimate?
}

extension Recommender {
    public static var family: ModelFamily { .general }
    public static var role: ModelRole { .model }
    public static var testSettings: [[String: ConfigValue]] { [[:]] }
    public static var readsFeatures: Bool { family == .contextAware }
    public static var readsTrainingKeys: Bool { false }
    public static var readsSeed: Bool { true }
    public static var searchSpace: [SearchDimension] { parameters.compactMap { p in p.search.map { SearchDimension(p.name, $0) } } }
    public var fitSteps: [String: Double] { [:] }
    public var trainingSummary: TrainingSummary? { nil }
    public func cost(_ shape: WorkShape) -> ModelCost? { nil }
    public func memory(_ shape: WorkShape) -> MemoryEstimate? { nil }
}
