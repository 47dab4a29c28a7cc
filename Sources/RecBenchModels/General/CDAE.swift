import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// CDAE (Wu et al. 2016, "Collaborative Denoising Auto-Encoders for Top-N Recommender
/// Systems"), as RecBole 1.2.1 implements it.
///
///     x̃ = dropout(x)                      (x: the user's train items, binary; inverted dropout,
///                                          `corruption_ratio`, survivors × 1/(1 − p))
///     h = act_h(x̃ · W + b + V_u)          (W: items × d, V: one d-vector per user)
///     z = h · W' + b'
///     loss = Σ_{u ∈ batch} Σ_i BCE(σ(z_ui), x_ui)        (summed; `loss_type: MSE`: Σ (act_o(z) − x)²)
///            + reg_weight_1 · (‖V‖₁ + ‖W‖₁) + reg_weight_2 · (‖V‖_F + ‖W‖_F)   (whole tables, norms not squared)
///     score(u, ·) = z_u (BCE: σ is monotone, so the logits rank as RecBole's σ(z) does), act_o(z_u) under MSE
///
/// Batches are users (every user once per epoch), as RecBole's `UserDataLoader`; RecBole also
/// trains its padding user 0 (all-zero row) and item column 0, which recbench has not.
public struct CDAE: LearnedModel {
    public static let name = "CDAE"
    public static let summary = "Denoising auto-encoder with a per-user input embedding (Wu et al. 2016)"
    public static let kind = ModelKind.autoencoder
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(64),
        ConfigKey("corruption_ratio", "float", .double(0.5), "CDAE: probability of dropping each input entry while training.")
            .searched(.uniform(low: 0, high: 0.8)),
        ConfigKey("hid_activation", "relu, sigmoid or tanh", .string("relu"), "CDAE: activation of the hidden layer."),
        ConfigKey("out_activation", "sigmoid or relu", .string("sigmoid"), "CDAE: activation of the output under loss_type MSE (and of RecBole's scores)."),
        SharedKeys.lossType("BCE"),
        ConfigKey("reg_weight_1", "float", .double(0), "CDAE: weight of the L1 norms of the user embeddings and the input layer's weights."),
        ConfigKey("reg_weight_2", "float", .double(0.01), "CDAE: weight of the (unsquared) L2 norms of the user embeddings and the input layer's weights.")
            .searched(.loguniform(low: -9.210340371976184, high: 0)),   // 1e-4 … 1
    ]
    public static let testSettings: [[String: ConfigValue]] = [
        ["embedding_size": .int(4)],
        ["embedding_size": .int(3), "loss_type": .string("MSE"), "hid_activation": .string("tanh"), "reg_weight_1": .double(0.001)],
    ]

    enum Activation: String { case relu, sigmoid, tanh }
    let width: Int, corruption: Float, hiddenActivation: Activation, outputActivation: Activation, mse: Bool
    let l1: Float, l2: Float
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    private var input: AutoEncoderInput?

    public init(parameters: ModelParameters) throws {
        width = try parameters.int("embedding_size", in: 1...100_000)
        corruption = Float(try parameters.double("corruption_ratio", in: 0...0.99))
        hiddenActivation = Activation(rawValue: try parameters.choice("hid_activation", of: ["relu", "sigmoid", "tanh"]))!
        outputActivation = Activation(rawValue: try parameters.choice("out_activation", of: ["sigmoid", "relu"]))!
        mse = try parameters.choice("loss_type", of: ["BCE", "MSE"]) == "MSE"
        l1 = Float(try parameters.double("reg_weight_1", in: 0...1e6))
        l2 = Float(try parameters.double("reg_weight_2", in: 0...1e6))
    }

    var encoder: MLP { MLP([input?.ratings.columns ?? 0, width], prefix: "encoder") }
    var decoder: MLP { MLP([width, input?.ratings.columns ?? 0], prefix: "decoder") }

    /// Xavier-normal weights and embeddings, zero biases (RecBole's `xavier_normal_initialization`).
    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        input = AutoEncoderInput(trainMatrix: data.trainMatrix)
        var initial = Parameters()
        initial.add("user_embedding", Initializer.xavierNormal(fanIn: data.userCount, fanOut: width, rng: &rng))
        encoder.initialize(&initial, rng: &rng)
        decoder.initialize(&initial, rng: &rng)
        return initial
    }

    public func exampleCount(_ data: TrainingData) -> Int { data.userCount }

    public func loss(_ batch: TrainingBatch, _ p: [String: Variable], tape: Tape, rng: inout SeededGenerator) -> Variable {
        let users = batch.users
        let z = decoder(hidden(input!.corrupted(users, dropout: corruption, rng: &rng), users: users, p, tape: tape), p, tape: tape)
        let target = input!.target(users)
        var loss = mse ? tape.squaredErrorSum(activate(z, outputActivation, tape: tape), targets: target)
            : tape.binaryCrossEntropySum(logits: z, targets: target)
        let penalised = [p["user_embedding"]!, p["encoder.0.weight"]!]
        if l1 > 0 { for w in penalised { loss = tape.add(loss, tape.affine(tape.absoluteSum(w), scale: l1)) } }
        if l2 > 0 { for w in penalised { loss = tape.add(loss, tape.affine(tape.norm(w), scale: l2)) } }
        return loss
    }

    /// act_h(x · W + b + V_u).
    func hidden(_ x: SparseMatrix, users: [Int32], _ p: [String: Variable], tape: Tape) -> Variable {
        activate(tape.add(encoder(x, p, tape: tape), tape.gather(p["user_embedding"]!, rows: users)), hiddenActivation, tape: tape)
    }

    func activate(_ x: Variable, _ activation: Activation, tape: Tape) -> Variable {
        switch activation {
        case .relu: tape.relu(x)
        case .sigmoid: tape.sigmoid(x)
        case .tanh: tape.tanh(x)
        }
    }

    public func cost(_ shape: WorkShape) -> ModelCost? {
        // Per epoch: the input layer (dense in RecBole, sparse here), the output layer and its gradient (3 GEMMs of users × d × items).
        let dense = 2.0 * Double(shape.users) * Double(width) * Double(shape.items)
        let sparse = 2.0 * Double(shape.trainPairs) * Double(width)
        return ModelCost(nominal: 3 * dense + 3 * dense, executed: 3 * dense + 2 * sparse, scoringInner: width)
    }

    public func scores(for users: ArraySlice<Int32>, into block: inout Matrix, compute: Compute) {
        let tape = Tape(compute: compute)
        let p = tape.leaves(parameters) { _ in false }
        let ids = Array(users)
        let h = hidden(input!.target(ids), users: ids, p, tape: tape)
        decoder.scores(h, p, tape: tape, into: &block)
        if mse && outputActivation == .relu { for i in 0..<block.values.count { block.values[i] = max(block.values[i], 0) } }
    }
}
