import RecBenchSupport
import RecBenchData
/// The sizes a model's work depends on.
public struct WorkShape: Sendable {
    /// Users (all, as the training loop and validation see them).
    public let users: Int
    /// Items.
    public let items: Int
    /// Train interactions (with repeats).
    public let trainInteractions: Int
    /// Distinct (user, item) train pairs.
    public let trainPairs: Int
    /// `train_batch_size`.
    public let batchSize: Int
    /// Negatives a pairwise or pointwise loss draws per positive (`TrainingSettings.negativesDrawn`).
    public let negatives: Int

    /// A shape.
    public init(users: Int, items: Int, trainInteractions: Int, trainPairs: Int, batchSize: Int, negatives: Int) {
        self.users = users; self.items = items; self.trainInteractions = trainInteractions; self.trainPairs = trainPairs
        self.batchSize = batchSize; self.negatives = negatives
    }

    /// Rows one epoch of a pointwise loss runs: each train positive and its drawn negatives.
    public var pointwiseRows: Double { Double(trainInteractions) * Double(1 + negatives) }

    /// Batches of a pairwise loss in one epoch over the train interactions (each batch holds
    /// `TrainingSettings.pairsPerPairwiseBatch` of them, once per negative).
    public var pairwiseBatches: Double {
        (Double(trainInteractions) / Double(TrainingSettings.pairsPerPairwiseBatch(batchSize: batchSize, negatives: negatives))).rounded(.up)
    }
}

/// FLOPs of one training epoch including one validation pass (a multiply-add is 2 FLOPs;
/// elementwise work is not counted), for the benchmark's share-of-peak figures.
public struct ModelCost: Sendable {
    /// RecBole's algorithm as the reference computes it (dense input layers).
    public let nominal: Double
    /// What recbench executes (sparse input layers, cached forwards).
    public let executed: Double

    /// The inner dimension k of the GEMM that makes the scores (users × k times k × items:
    /// the last layer or the item embeddings), for comparing a validation pass with it.
    public let scoringInner: Int?

    /// The share of `executed` (and of `nominal`) that is the one validation pass, where the
    /// model states it: a run that validates every `eval_step` epochs does that much less per
    /// epoch on average, which the benchmark subtracts (a context model's pass can be most of it).
    public let validationPass: Double?

    /// A cost.
    public init(nominal: Double, executed: Double, scoringInner: Int? = nil, validationPass: Double? = nil) {
        self.nominal = nominal; self.executed = executed; self.scoringInner = scoringInner; self.validationPass = validationPass
    }
}

/// Memory a fit needs beyond the data, for models whose working set grows faster than the
/// data (a dense item × item matrix); checked against the budget before any allocation.
public struct MemoryEstimate: Sendable {
    /// Bytes at the peak.
    public let bytes: Double
    /// What takes them, for the refusal message ("the 30000 × 30000 float32 Gram matrix").
    public let what: String

    /// The order of a dense square matrix the fit hands to BLAS/LAPACK, which must not
    /// exceed `BLAS.maxSquareOrder`; nil when nothing square goes there.
    public let blasSquareOrder: Int?

    /// An estimate.
    public init(bytes: Double, what: String, blasSquareOrder: Int? = nil) {
        self.bytes = bytes; self.what = what; self.blasSquareOrder = blasSquareOrder
    }

    /// `count` trained float32 weights, five times over (values, gradients, Adam's two moments, the
    /// best epoch's copy): what a run allocates for them before its first step.
    public static func trainedWeights(_ count: Double) -> MemoryEstimate {
        MemoryEstimate(bytes: 5 * 4 * count, what: "\(Int(count)) weights (values, gradients, Adam's moments, the best copy)")
    }

    /// One dense float32 items × items matrix (EASE's inverse, SLIM's Gram); `factorised`
    /// when LAPACK works on it, which bounds the catalogue by `BLAS.maxSquareOrder`.
    public static func itemByItem(_ shape: WorkShape, _ name: String, factorised: Bool = false) -> MemoryEstimate {
        MemoryEstimate(bytes: 4 * Double(shape.items) * Double(shape.items), what: "the \(shape.items) × \(shape.items) float32 \(name)",
                       blasSquareOrder: factorised ? shape.items : nil)
    }
}
