import Foundation
import RecBenchSupport
import RecBenchData
/// The training keys of the config, typed and checked.
public struct TrainingSettings: Sendable, Equatable {
    public var epochs: Int
    public var batchSize: Int
    public var learner: String
    public var learningRate: Float
    public var weightDecay: Float
    public var evalStep: Int
    public var stoppingStep: Int
    /// Negatives per positive for pairwise and pointwise losses (items the user has not had in train; for a
    /// sequential model's BPR loss, any item but the example's own, as RecBole's repeatable sampler).
    public var negativesPerPositive: Int
    /// Whom those negatives favour (`train_neg_sample_args.distribution`).
    public var negativeDistribution: NegativeDistribution = .uniform
    /// Popularity draws wherever they are made (these negatives under `distribution: popularity`,
    /// and `eval_args.mode: popN`): the config's `alpha` (RecBole's sampler keeps one) and `negative_popularity`.
    public var popularityDraws = NegativeDistribution.popularity(alpha: 1, counts: .recbole)
    /// Where the best parameters are written, if anywhere.
    public var checkpointDirectory: String?
    /// `init_parameters`: a checkpoint the model starts from instead of its initialisation.
    public var initialParameters: String?
    /// `clip_grad_norm`: every step's gradients rescaled as torch's `clip_grad_norm_` does, or nil.
    public var clipping: GradientClipping?

    /// Settings for tests and benchmarks.
    public init(epochs: Int = 300, batchSize: Int = 2048, learner: String = "adam", learningRate: Float = 0.001,
                weightDecay: Float = 0, evalStep: Int = 1, stoppingStep: Int = 10, negativesPerPositive: Int = 1,
                checkpointDirectory: String? = nil) {
        self.epochs = epochs; self.batchSize = batchSize; self.learner = learner; self.learningRate = learningRate
        self.weightDecay = weightDecay; self.evalStep = evalStep; self.stoppingStep = stoppingStep
        self.negativesPerPositive = negativesPerPositive; self.checkpointDirectory = checkpointDirectory
    }

    /// The keys `init(_:)` reads that shape training (`checkpoint_dir` only says where it writes).
    public static let keys: Set<String> = ["epochs", "train_batch_size", "learner", "learning_rate", "weight_decay", "eval_step",
                                           "stopping_step", "train_neg_sample_args", "negative_popularity", "clip_grad_norm",
                                           "init_parameters"]

    /// Reads the training keys.
    public init(_ config: Config) throws {
        epochs = try config.int("epochs", atLeast: 1)
        batchSize = try config.int("train_batch_size", atLeast: 1)
        learner = try config.string("learner").lowercased()
        guard ["adam", "sgd"].contains(learner) else {
            throw RecBenchError.config("learner", origin: config.origin(of: "learner"), "expected adam or sgd, got '\(learner)'")
        }
        learningRate = Float(try config.double("learning_rate", positive: true))
        weightDecay = Float(try config.double("weight_decay", in: 0...Double.greatestFiniteMagnitude))
        evalStep = try config.int("eval_step", atLeast: 1)
        stoppingStep = try config.int("stopping_step", atLeast: 0)
        negativesPerPositive = try Self.negatives(config)
        popularityDraws = try Self.popularityDraws(config)
        if case .map(let args) = config["train_neg_sample_args"], args["distribution"]?.stringValue == "popularity" {
            negativeDistribution = popularityDraws
        }
        checkpointDirectory = try config.optionalString("checkpoint_dir")
        initialParameters = try config.optionalString("init_parameters")
        if let path = initialParameters, !FileManager.default.fileExists(atPath: path) {
            throw RecBenchError.config("init_parameters", origin: config.origin(of: "init_parameters"), "no such file: \(path)")
        }
        clipping = try GradientClipping(config)
    }

    /// Negatives a pairwise or pointwise loss draws per positive: the config's, at least one (a
    /// loss that needs negatives draws one when `train_neg_sample_args` is null, with a note).
    public var negativesDrawn: Int { max(1, negativesPerPositive) }

    /// Train pairs in one batch of a pairwise loss: RecBole 1.2.1's pairwise loader fits
    /// `train_batch_size` rows, one per negative, so a batch holds batch size / `sample_num` pairs.
    public var pairsPerPairwiseBatch: Int { Self.pairsPerPairwiseBatch(batchSize: batchSize, negatives: negativesDrawn) }

    /// `pairsPerPairwiseBatch` for a batch size and the negatives drawn.
    public static func pairsPerPairwiseBatch(batchSize: Int, negatives: Int) -> Int { examplesPerBatch(batchSize, rowsEach: max(1, negatives)) }

    /// Examples in a batch of `batchSize` rows when each example takes `rowsEach` of them:
    /// RecBole 1.2.1's `max(train_batch_size // times, 1)` (`times` = N pairwise, 1 + N pointwise).
    public static func examplesPerBatch(_ batchSize: Int, rowsEach: Int) -> Int { max(1, batchSize / rowsEach) }

    /// `train_neg_sample_args`: null (or distribution none) → 0; uniform or popularity → `sample_num` ≥ 1.
    static func negatives(_ config: Config) throws -> Int {
        let key = "train_neg_sample_args"
        let fail = { (message: String) in RecBenchError.config(key, origin: config.origin(of: key), message) }
        switch config[key] {
        case .null: return 0
        case .map(let args):
            for entry in args.keys where !["distribution", "sample_num", "alpha", "dynamic", "candidate_num"].contains(entry) {
                throw fail("unknown entry '\(entry)' (expected distribution, sample_num, alpha, dynamic, candidate_num)")
            }
            if let d = args["distribution"], d != .null, d.stringValue == nil { throw fail("distribution must be a name such as uniform, got \(d)") }
            let distribution = args["distribution"]?.stringValue ?? "uniform"
            if distribution.lowercased() == "none" || args["distribution"] == .null { return 0 }
            guard ["uniform", "popularity"].contains(distribution) else {
                throw fail("distribution must be uniform, popularity or none, got '\(distribution)'")
            }
            if args["dynamic"] == .bool(true) { throw fail("dynamic negative sampling is not supported; use dynamic: false") }
            if let a = args["alpha"], a != .null, a.doubleValue?.isFinite != true { throw fail("alpha must be a number, got \(a)") }
            guard let n = (args["sample_num"] ?? .int(1)).intValue, n >= 1 else {
                throw fail("sample_num must be an integer ≥ 1, got \(args["sample_num"]!) (for no negatives, set train_neg_sample_args: ~)")
            }
            return n
        default: throw config.typeError(key, "a map such as {distribution: uniform, sample_num: 1}")
        }
    }

    /// Popularity weighted by `train_neg_sample_args.alpha` (1 without one) and counted as `negative_popularity` says.
    static func popularityDraws(_ config: Config) throws -> NegativeDistribution {
        // RecBole's evaluation sampler keeps training's alpha; without training negatives it is built anew at 1.
        var alpha = 1.0
        if case .map(let args) = config["train_neg_sample_args"], args["distribution"] != .null,
           args["distribution"]?.stringValue?.lowercased() != "none", let a = args["alpha"]?.doubleValue { alpha = a }
        let counts = try config.string("negative_popularity")
        guard let from = NegativeDistribution.Counts(rawValue: counts) else {
            throw RecBenchError.config("negative_popularity", origin: config.origin(of: "negative_popularity"), "expected recbole or train, got '\(counts)'")
        }
        return .popularity(alpha: alpha, counts: from)
    }
}

/// Whom negatives favour, among the items a draw may return (a user's unseen items, or any but a next-item example's own).
public enum NegativeDistribution: Sendable, Equatable {
    /// Every item alike.
    case uniform
    /// RecBole's popularity sampler: item i with probability ∝ count(i)^alpha, an item never
    /// counted never drawn.
    case popularity(alpha: Double, counts: Counts)

    /// Which interactions count.
    public enum Counts: String, Sendable {
        /// Every interaction of train, valid and test, as RecBole 1.2.1's samplers count them.
        case recbole
        /// The train split's only.
        case train
    }
}

/// RecBole's `clip_grad_norm` (the keyword arguments of torch's `clip_grad_norm_`): when the
/// p-norm of all of a step's gradients together exceeds `maxNorm`, they are scaled by
/// maxNorm / (norm + 1e-6).
public struct GradientClipping: Sendable, Equatable {
    public var maxNorm: Float
    /// p of the norm (2 by default); `.infinity` for the largest magnitude.
    public var normType: Float

    /// Reads `clip_grad_norm` (null: no clipping).
    public init?(_ config: Config) throws {
        let key = "clip_grad_norm"
        let fail = { (message: String) in RecBenchError.config(key, origin: config.origin(of: key), message) }
        guard case .map(let args) = config[key] else {
            if config[key] == .null { return nil }
            throw config.typeError(key, "a map such as {max_norm: 5}")
        }
        for entry in args.keys where !["max_norm", "norm_type"].contains(entry) {
            throw fail("unknown entry '\(entry)' (expected max_norm, norm_type)")
        }
        guard let norm = args["max_norm"]?.doubleValue, norm > 0, norm.isFinite else {
            throw fail("max_norm must be a positive number, got \(args["max_norm"].map { "\($0)" } ?? "nothing")")
        }
        let p = args["norm_type"] ?? .int(2)
        if p.stringValue?.lowercased() == "inf" || p.doubleValue == .infinity { normType = .infinity } else {
            guard let value = p.doubleValue, value > 0, value.isFinite else { throw fail("norm_type must be a positive number or inf, got \(p)") }
            normType = Float(value)
        }
        maxNorm = Float(norm)
    }
}

