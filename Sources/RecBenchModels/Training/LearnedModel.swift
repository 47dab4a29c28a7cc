import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// A model trained by gradient steps over epochs. The model declares its parameters, the
/// passes of an epoch and a batch loss; the `Trainer` owns everything else: the parameters
/// while training, the optimizers, batching, random streams, validation, early stopping,
/// best-epoch keeping and checkpoints.
///
/// While training, the model holds no parameters: the trainer does, and hands them to the
/// loss as tape leaves. So no copy of the model can share parameter storage with the
/// optimizer's target, and every optimizer step updates in place.
public protocol LearnedModel: Recommender {
    /// Where the model's random numbers come from (default: streams named by the model's name).
    static var randomStreams: RandomStreams { get }
    /// The parameters the model scores with (set by the trainer: the best epoch's, at the end).
    var parameters: Parameters { get set }
    /// What the last fit did.
    var trainingSummary: TrainingSummary? { get set }

    /// Builds per-data state (input rows, samplers) and returns the initial parameters,
    /// drawn from `rng`.
    mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters
    /// The passes of one epoch, in order (default: one gradient pass updating everything).
    var passes: [TrainingPass] { get }
    /// The number of training examples a pass shuffles into batches (users, pairs, …).
    func exampleCount(_ data: TrainingData) -> Int
    /// Examples per batch (default `train_batch_size`; a pointwise model whose examples bring
    /// their negatives along counts those too, as RecBole's data loader does).
    func examplesPerBatch(_ training: TrainingSettings) -> Int
    /// The loss of one batch, built on `tape` over the parameter leaves `p`; `rng` is the
    /// pass's stream (dropout, negatives, noise), drawn in batch order.
    func loss(_ batch: TrainingBatch, _ p: [String: Variable], tape: Tape, rng: inout SeededGenerator) -> Variable

    /// The key whose step size a divergence is blamed on (default `learning_rate`).
    var stepSizeKey: String { get }
    /// Called before each pass with the current parameters and the training loop's threads
    /// (RecVAE refreshes its prior).
    mutating func willBegin(_ pass: TrainingPass, parameters: Parameters, data: TrainingData, compute: Compute)
    /// Runs a `.custom` pass: the model updates `parameters` by its own rule (Hogwild BPR)
    /// and returns the pass's mean loss.
    mutating func customPass(_ pass: TrainingPass, index: Int, parameters: inout Parameters, context: FitContext) -> Double
    /// Called once when training continues from a saved state, with its parameters: state the
    /// model keeps between epochs besides them is rebuilt here (RecVAE's prior).
    mutating func resumed(with parameters: Parameters, data: TrainingData, compute: Compute)
}

extension LearnedModel {
    public static var randomStreams: RandomStreams { RandomStreams(named: name) }
    public static var readsTrainingKeys: Bool { true }

    /// The declared parameters' spaces after the learning rate's: 1e-4 to 1e-2, log-uniform (ln 1e-4, ln 1e-2).
    public static var searchSpace: [SearchDimension] {
        [SearchDimension("learning_rate", .loguniform(low: -9.210340371976184, high: -4.605170185988091))]
            + parameters.compactMap { p in p.search.map { SearchDimension(p.name, $0) } }
    }

    public var passes: [TrainingPass] { [.all] }

    public var stepSizeKey: String { "learning_rate" }

    /// The error of a fit that diverged at `epoch` (1-based): `what` went non-finite.
    func diverged(at epoch: Int, _ what: String) -> RecBenchError {
        let features = Self.readsFeatures ? ", or scale down large float features" : ""
        return RecBenchError.config(stepSizeKey, "\(Self.name): training diverged at epoch \(epoch) (\(what)); try a lower \(stepSizeKey)\(features)")
    }

    public func examplesPerBatch(_ training: TrainingSettings) -> Int { training.batchSize }

    public mutating func willBegin(_ pass: TrainingPass, parameters: Parameters, data: TrainingData, compute: Compute) {}

    public mutating func resumed(with parameters: Parameters, data: TrainingData, compute: Compute) {}

    public mutating func customPass(_ pass: TrainingPass, index: Int, parameters: inout Parameters, context: FitContext) -> Double {
        preconditionFailure("\(Self.name) declares the custom pass '\(pass.name)' but does not implement customPass")
    }

    /// Models whose passes are all `.custom` (Item2vec's SGD) have no batch loss.
    public func loss(_ batch: TrainingBatch, _ p: [String: Variable], tape: Tape, rng: inout SeededGenerator) -> Variable {
        preconditionFailure("\(Self.name) has a gradient pass but does not implement loss")
    }

    /// Trains with the shared trainer.
    public mutating func fit(_ data: TrainingData, context: FitContext) throws {
        trainingSummary = try Trainer(context: context).train(&self, data: data)
    }
}

/// One pass over the training examples within an epoch.
public struct TrainingPass: Sendable {
    /// How a pass updates the parameters.
    public enum Method: Sendable {
        /// Mini-batch gradient steps with the optimizer the trainer keeps for the pass's name.
        case gradient
        /// The model's own update rule (`LearnedModel.customPass`).
        case custom
    }

    /// The pass's name; gradient passes with one name share one optimizer.
    public let name: String
    /// Gradient steps or the model's own rule.
    public let method: Method
    /// Whether the pass updates the parameter of this name (the rest are constants).
    public let updates: @Sendable (String) -> Bool
    /// Whether the pass's loss is the epoch's reported loss (the last such pass wins).
    public let reportsLoss: Bool

    /// A pass.
    public init(_ name: String, method: Method = .gradient, reportsLoss: Bool = true,
                updates: @escaping @Sendable (String) -> Bool = { _ in true }) {
        self.name = name; self.method = method; self.reportsLoss = reportsLoss; self.updates = updates
    }

    /// One gradient pass updating every parameter.
    public static let all = TrainingPass("all")
}

/// A batch of training examples, as the trainer hands it to a model's loss.
public struct TrainingBatch: Sendable {
    /// Indices of the examples (users, pairs, …), in shuffled order.
    public let examples: ArraySlice<Int>
    /// The pass the batch belongs to.
    public let pass: TrainingPass
    /// Batches stepped so far in this fit, this one included (KL annealing counts them).
    public let step: Int
    /// Set by gradient checks: noise is drawn at unit scale, so that every path carries a
    /// gradient large enough to compare with finite differences.
    public let unitNoise: Bool
    /// Negatives a pairwise loss draws per example: `train_neg_sample_args`' `sample_num`, at least 1.
    public let negatives: Int
    /// The fit's distribution of negatives (`train_neg_sample_args.distribution`).
    public let negativeItems: NegativeItems

    /// A batch.
    public init(examples: ArraySlice<Int>, pass: TrainingPass, step: Int, unitNoise: Bool = false, negatives: Int = 1,
                negativeItems: NegativeItems = .uniform) {
        self.examples = examples; self.pass = pass; self.step = step; self.unitNoise = unitNoise; self.negatives = negatives
        self.negativeItems = negativeItems
    }

    /// The examples as user ids (models whose examples are users).
    public var users: [Int32] { examples.map { Int32($0) } }

    /// The rows of a pairwise loss that draws one negative per row: the examples once per
    /// negative, the whole batch after itself (RecBole's `Interaction.repeat`).
    public var pairwiseRows: [Int] { negatives == 1 ? Array(examples) : Array(Array(repeating: examples, count: negatives).joined()) }
}

/// The random streams of a learned model's fit, all derived from the run's seed: one for
/// the initial parameters, and per pass one for the batch order and one for the batches'
/// draws. Fixed per model, so a seed reproduces a run exactly.
public struct RandomStreams: Sendable {
    /// Stream of the initial parameters.
    public let initialization: UInt64
    /// Low byte of each pass's draw stream (dropout, negatives, noise).
    public let batches: UInt64
    /// Passes are numbered `epoch × passStride + k` for the k-th pass of an epoch.
    public let passStride: Int

    /// Streams with these identities.
    public init(initialization: UInt64, batches: UInt64, passStride: Int = 1) {
        self.initialization = initialization; self.batches = batches; self.passStride = passStride
    }

    /// The streams of the model called `name`: identities derived from the name (FNV-1a), so
    /// no two models share them by accident and no model picks constants by hand. A model
    /// whose epoch has several passes may space the passes' numbers (`passStride`).
    public init(named name: String, passStride: Int = 1) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        // The pass streams are `pass << 8 | batches`; the initial stream's high bits keep it
        // out of their range.
        self.init(initialization: hash | 1 << 63, batches: hash >> 56, passStride: passStride)
    }

    /// The number of the k-th pass of `epoch`.
    func passNumber(epoch: Int, k: Int) -> Int { epoch * passStride + k }

    /// The draws of pass number `pass`.
    func draws(seed: UInt64, pass: Int) -> SeededGenerator { SeededGenerator(seed: seed, stream: UInt64(pass) << 8 | batches) }

    /// The shuffled batches of pass number `pass`.
    func batches(count: Int, batchSize: Int, seed: UInt64, pass: Int) -> [ArraySlice<Int>] {
        Sampling.shuffledBatches(count: count, batchSize: batchSize, seed: seed, epoch: pass, purpose: 1)
    }
}
