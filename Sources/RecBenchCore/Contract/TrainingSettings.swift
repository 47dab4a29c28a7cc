/// The training keys of the config, typed and checked.
public struct TrainingSettings: Sendable, Equatable {
    public var epochs: Int
    public var batchSize: Int
    public var learner: String
    public var learningRate: Float
    public var weightDecay: Float
    public var evalStep: Int
    public var stoppingStep: Int
    /// Negatives per positive for pairwise models (uniform over items the user has not had in train).
    public var negativesPerPositive: Int
    /// Where the best parameters are written, if anywhere.
    public var checkpointDirectory: String?

    /// Settings for tests and benchmarks.
    public init(epochs: Int = 300, batchSize: Int = 2048, learner: String = "adam", learningRate: Float = 0.001,
                weightDecay: Float = 0, evalStep: Int = 1, stoppingStep: Int = 10, negativesPerPositive: Int = 1,
                checkpointDirectory: String? = nil) {
        self.epochs = epochs; self.batchSize = batchSize; self.learner = learner; self.learningRate = learningRate
        self.weightDecay = weightDecay; self.evalStep = evalStep; self.stoppingStep = stoppingStep
        self.negativesPerPositive = negativesPerPositive; self.checkpointDirectory = checkpointDirectory
    }

    /// Reads the training keys.
    public init(_ config: Config) throws {
        epochs = try config.int("epochs", atLeast: 0)
        batchSize = try config.int("train_batch_size", atLeast: 1)
        learner = try config.string("learner").lowercased()
        guard ["adam", "sgd"].contains(learner) else {
            throw RecBenchError.config("learner", origin: config.origin(of: "learner"), "expected adam or sgd, got '\(learner)'")
        }
        learningRate = Float(try config.double("learning_rate"))
        weightDecay = Float(try config.double("weight_decay"))
        evalStep = try config.int("eval_step", atLeast: 1)
        stoppingStep = try config.int("stopping_step", atLeast: 0)
        switch config["train_neg_sample_args"] {
        case .null: negativesPerPositive = 0
        case .map(let args):
            if let d = args["distribution"]?.stringValue, d != "uniform" {
                throw RecBenchError.config("train_neg_sample_args", origin: config.origin(of: "train_neg_sample_args"),
                                           "only the uniform distribution is supported, got '\(d)'")
            }
            negativesPerPositive = args["sample_num"]?.intValue ?? 1
        default: throw config.typeError("train_neg_sample_args", "a map such as {distribution: uniform, sample_num: 1}")
        }
        checkpointDirectory = try config.optionalString("checkpoint_dir")
    }
}
