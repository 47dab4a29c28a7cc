import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// ENMF (Chen et al. 2020, "Efficient Neural Matrix Factorization without Sampling for
/// Recommendation"), user-based, as RecBole 1.2.1 trains it: no sampled negatives, every
/// unobserved (user, item) pair weighted by `negative_weight` w.
///
///     ŷ_ui = h · (p_u ⊙ q_i)
///     loss = w · Σ_{u ∈ batch} Σ_{all i} ŷ_ui²                        (p_u without dropout)
///            + Σ_{u ∈ batch} Σ_{i ∈ train(u)} [(1 − w) ŷ_ui² − 2 ŷ_ui]   (p_u with dropout `dropout_prob`)
///            + reg_weight · (‖P‖_F + ‖Q‖_F)                            (summed, not averaged)
///     score(u, ·) = (p_u ⊙ h) · Qᵀ
///
/// The all-pairs sum is the Gram identity Σ_{d,d'} (PᵀP)_{dd'} (QᵀQ)_{dd'} h_d h_{d'}: two
/// d × d products instead of users × items scores. RecBole pads each user's history to the
/// longest one with its padding item 0, whose embedding is not zero, and counts the padding
/// slots as positives of that item; recbench's positives are the user's train items only.
public struct ENMF: LearnedModel, ScoresWhenPrepared {
    public static let name = "ENMF"
    public static let summary = "Matrix factorisation trained on every (user, item) pair without sampling (Chen et al. 2020)"
    public static let kind = ModelKind.factorisation
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(64),
        SharedKeys.dropoutProb(0.7),
        SharedKeys.regWeight(0),
        ConfigKey("negative_weight", "float", .double(0.5), "ENMF: weight w of every unobserved (user, item) pair in the whole-data loss.")
            .searched(.loguniform(low: -4.605170185988091, high: 0)),   // 0.01 … 1
    ]
    public static let testSettings: [[String: ConfigValue]] = [["embedding_size": .int(4), "reg_weight": .double(0.01)]]

    let width: Int, dropout: Float, regularization: Float, negativeWeight: Float
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    private var history = SparseMatrix(rows: 0, columns: 0)

    public init(parameters: ModelParameters) throws {
        width = try parameters.int("embedding_size", in: 1...4096)
        dropout = Float(try parameters.double("dropout_prob", in: 0...0.99))
        regularization = Float(try parameters.double("reg_weight", in: 0...1e6))
        negativeWeight = Float(try parameters.double("negative_weight", in: 0...1))
    }

    /// Xavier-normal embeddings and h (RecBole's `xavier_normal_initialization`; h is torch's
    /// 64 → 1 linear weight, so its fans are 64 and 1).
    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        history = data.trainMatrix.binarized()
        var initial = Parameters()
        initial.add("user_embedding", Initializer.xavierNormal(fanIn: data.userCount, fanOut: width, rng: &rng))
        initial.add("item_embedding", Initializer.xavierNormal(fanIn: data.itemCount, fanOut: width, rng: &rng))
        initial.add("h", Initializer.normal(rows: 1, columns: width, std: (2 / Float(width + 1)).squareRoot(), rng: &rng))
        return initial
    }

    public func exampleCount(_ data: TrainingData) -> Int { data.userCount }

    public func loss(_ batch: TrainingBatch, _ p: [String: Variable], tape: Tape, rng: inout SeededGenerator) -> Variable {
        let users = batch.users
        let (P, Q, h) = (p["user_embedding"]!, p["item_embedding"]!, p["h"]!)
        let batchUsers = tape.gather(P, rows: users)
        // w · Σ (PᵀP ⊙ QᵀQ ⊙ hᵀh): the mean over the d² entries, scaled back.
        let gram = tape.mul(tape.mul(tape.matmul(tape.transpose(batchUsers), batchUsers), tape.matmul(tape.transpose(Q), Q)),
                            tape.matmul(tape.transpose(h), h))
        var loss = tape.affine(tape.mean(gram), scale: negativeWeight * Float(width * width))
        // The positives: ŷ = (dropout(p_u) ⊙ h) · q_i for each train item of each batch user.
        var rows: [Int32] = [], items: [Int32] = []
        for (r, u) in users.enumerated() {
            for e in history.entries(ofRow: Int(u)) { rows.append(Int32(r)); items.append(history.columnIndices[e]) }
        }
        if !rows.isEmpty {
            let hRows = tape.gather(h, rows: [Int32](repeating: 0, count: users.count))
            let scaled = tape.mul(Dropout.apply(batchUsers, rate: dropout, tape: tape, rng: &rng), hRows)
            let y = tape.rowDot(scaled, rows: rows, Q, rows: items)
            let terms = tape.add(tape.affine(tape.square(y), scale: 1 - negativeWeight), tape.affine(y, scale: -2))
            loss = tape.add(loss, tape.affine(tape.mean(terms), scale: Float(rows.count)))
        }
        if regularization > 0 { loss = tape.add(loss, tape.affine(tape.add(tape.norm(P), tape.norm(Q)), scale: regularization)) }
        return loss
    }

    public func cost(_ shape: WorkShape) -> ModelCost? {
        // Per epoch: PᵀP over every user and QᵀQ once per batch (about once here), the positives' dots; their gradients alike.
        let gram = 2.0 * Double(shape.users + shape.items) * Double(width * width)
        let positives = 2.0 * Double(shape.trainPairs) * Double(width)
        return ModelCost(nominal: 3 * (gram + positives), executed: 3 * (gram + positives), scoringInner: width)
    }

    /// (P ⊙ h) and Q: one GEMM per block of users.
    public func preparedForScoring(compute: Compute) -> any Scorer {
        FactorScores(users: parameters["user_embedding"].scalingColumns(by: parameters["h"].values), items: parameters["item_embedding"])
    }
}
