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
