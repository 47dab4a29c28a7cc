import Linalg
import RecBenchSupport
import RecBenchData

/// One epoch as reported to the user.
public struct EpochReport: Sendable {
    public let model: String
    public let epoch: Int
    public let epochs: Int
    public let loss: Double
    public let validScore: Double?
    public let improved: Bool
    public let seconds: Double
    /// The best validation score so far and its epoch (nil before the first validation).
    public var best: (score: Double, epoch: Int)? = nil
    /// Seconds since training began (for an ETA).
    public var elapsed: Double = 0

    /// A report of one finished epoch (`best` and `elapsed` are set afterwards).
    public init(model: String, epoch: Int, epochs: Int, loss: Double, validScore: Double?, improved: Bool, seconds: Double) {
        self.model = model; self.epoch = epoch; self.epochs = epochs; self.loss = loss
        self.validScore = validScore; self.improved = improved; self.seconds = seconds
    }

    /// Seconds left if every remaining epoch runs (early stopping may end sooner).
    public var remainingSeconds: Double { elapsed / Double(max(epoch, 1)) * Double(max(epochs - epoch, 0)) }
}

/// What training did, stored with the result.
public struct TrainingSummary: Sendable, Codable, Equatable {
    /// Per epoch: loss, validation score (if evaluated), seconds (validation included), and
    /// the validation pass's own seconds.
    public struct Epoch: Sendable, Codable, Equatable {
        public let epoch: Int
        public let loss: Double
        public let valid: Double?
        public let seconds: Double
        public var validSeconds: Double? = nil

        enum CodingKeys: String, CodingKey { case epoch, loss, valid, seconds, validSeconds = "valid_seconds" }

        /// One epoch's record.
        public init(epoch: Int, loss: Double, valid: Double?, seconds: Double, validSeconds: Double? = nil) {
            self.epoch = epoch; self.loss = loss; self.valid = valid; self.seconds = seconds; self.validSeconds = validSeconds
        }
    }
    public var epochsRun: Int
    public var bestEpoch: Int
    public var bestValid: Double?
    public var stoppedEarly: Bool
    public var epochs: [Epoch]
    public var checkpoint: String?
    /// Where training's time went, per op and phase (profiled runs only).
    public var profile: [OpProfileEntry]? = nil
    /// The epoch at which a search's pruner ended training (nil: not pruned).
    public var prunedAt: Int? = nil
    /// The last epoch of a saved training state this fit continued from (nil: trained from the start).
    public var resumedAfter: Int? = nil

    /// What a fit did.
    public init(epochsRun: Int, bestEpoch: Int, bestValid: Double?, stoppedEarly: Bool, epochs: [Epoch], checkpoint: String?,
                profile: [OpProfileEntry]? = nil, prunedAt: Int? = nil) {
        self.epochsRun = epochsRun; self.bestEpoch = bestEpoch; self.bestValid = bestValid; self.stoppedEarly = stoppedEarly
        self.epochs = epochs; self.checkpoint = checkpoint; self.profile = profile; self.prunedAt = prunedAt
    }

    enum CodingKeys: String, CodingKey {
        case epochsRun = "epochs_run", bestEpoch = "best_epoch", bestValid = "best_valid", stoppedEarly = "stopped_early", epochs, checkpoint, profile
        case prunedAt = "pruned_at", resumedAfter = "resumed_after"
    }
}
