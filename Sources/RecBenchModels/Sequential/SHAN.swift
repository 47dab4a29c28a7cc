import Foundation
import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// SHAN (Ying et al. 2018, "Sequential Recommender System based on Hierarchical Attention
/// Network"), as RecBole 1.2.1 builds it, the user vector u as both attentions' query:
///
///     a_t = softmax_t(m_t · uᵀ relu(W₁ E[s_t] + b₁ + b₁′))           (long term, every position)
///     z = Σ_t a_t E[s_t]
///     X = [z, E[short_1], …, E[short_k]]                            (k = `short_item_length` latest)
///     s = Σ_j softmax_j(m_j · uᵀ relu(W₂ X_j + b₂ + b₂′)) X_j
///     loss = CE(s · Eᵀ, next item) + λ₁(‖W₁‖ + ‖W₂‖) + λ₂(‖U[users]‖ + ‖E[targets]‖)   (unsquared)
///     score(·) = s · E[items]ᵀ
///
/// RecBole trains on the right-aligned sequence (its `inverse_itemseq` transform) but its
/// full ranking reads the left-aligned one: there the "latest" k positions are the last k
/// of `MAX_ITEM_LIST_LENGTH`, padding (masked) unless the sequence nearly fills them, so a
/// shorter sequence is scored by its long-term part alone. Ranking here does the same, so
/// that figures compare with RecBole's. E and U N(0, 0.01) (E's padding row included, fixed),
/// W U(±√(3/d)), b torch's default U(±1/√d), b′ U(±√(3/d)).
public struct SHAN: TiedNextItemModel {
    public static let name = "SHAN"
    public static let summary = "Hierarchical attention: a long-term attention over the sequence, then one over it and the latest items, the user as query"
    public static let kind = ModelKind.attention
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(64),
        ConfigKey("short_item_length", "int", .int(2), "SHAN: how many of the latest items the second attention reads beside the long-term vector."),
        SharedKeys.regWeights([0.01, 0.0001]), SharedKeys.lossType("CE"),
    ]
    public static let testSettings: [[String: ConfigValue]] = [
        ["embedding_size": .int(3), "reg_weight": .list([.double(0.1), .double(0.01)])],
        ["embedding_size": .int(3), "short_item_length": .int(1), "loss_type": .string("BPR")],
    ]

    let embeddingSize: Int, shortLength: Int, regWeights: [Float]
    public let lossType: NextItemLoss
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var sequences: SequenceData?

    public init(parameters: ModelParameters) throws {
        embeddingSize = try parameters.int("embedding_size", in: 1...4096)
        shortLength = try parameters.int("short_item_length", in: 1...4096)
        regWeights = try parameters.doubleList("reg_weight", in: 0...1e6).map { Float($0) }
        guard regWeights.count == 2 else { throw parameters.invalid("reg_weight", "SHAN: expected two weights, got \(regWeights.count)") }
        lossType = try NextItemLoss(parameters)
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        prepareSequences(data, context: context)
        let (users, items, d) = (data.userCount, data.itemCount, embeddingSize)
        let bound = (3 / Float(d)).squareRoot()
        var initial = Parameters()
        initial.add("item_embedding", Initializer.normal(rows: items + 1, columns: d, std: 0.01, rng: &rng))   // row `items`: padding
        initial.add("user_embedding", Initializer.normal(rows: users, columns: d, std: 0.01, rng: &rng))
        for part in ["long", "long_short"] {
            initial.add("\(part).weight", Initializer.uniform(rows: d, columns: d, bound: bound, rng: &rng))
            initial.add("\(part).bias", Initializer.torchLinear(fanIn: d, rows: 1, columns: d, rng: &rng))
            initial.add("\(part).extra_bias", Initializer.uniform(rows: 1, columns: d, bound: bound, rng: &rng))
        }
        return initial
    }

    /// Σ_j softmax_j(m_j · uᵀ relu(W x_j + b + b′)) x_j over `steps` time-major rows of `x`.
    func attend(_ x: Variable, user: Variable, steps: Int, mask: [Float], part: String, _ p: [String: Variable], tape: Tape) -> Variable {
        let hidden = tape.relu(tape.linear(x, p["\(part).weight"]!, tape.add(p["\(part).bias"]!, p["\(part).extra_bias"]!)))
        return tape.dotAttentionPool(keys: x, scored: hidden, query: user, mask: mask, steps: steps)
    }

    public func encode(_ batch: SequenceBatch, _ p: [String: Variable], tape: Tape, training: Bool, rng: inout SeededGenerator) -> Variable {
        let steps = sequences?.maxLength ?? batch.width, b = batch.count, table = p["item_embedding"]!
        // Position t of row r, right-aligned (training) or left-aligned (RecBole's full ranking).
        func item(_ r: Int, _ t: Int, rightAligned: Bool) -> Int32 {
            let index = rightAligned ? t - (steps - batch.lengths[r]) : t
            return index >= 0 && index < batch.lengths[r] ? batch.items[r * batch.width + index] : batch.padding
        }
        let all = (0..<steps).flatMap { t in (0..<b).map { item($0, t, rightAligned: true) } }
        let user = tape.gather(p["user_embedding"]!, rows: batch.users)
        let embedded = tape.gather(table, rows: all, padding: batch.padding, readsPaddingRow: true)
        let long = attend(embedded, user: user, steps: steps, mask: all.map { $0 == batch.padding ? 0 : 1 }, part: "long", p, tape: tape)
        let short = (steps - shortLength..<steps).flatMap { t in (0..<b).map { item($0, t, rightAligned: training) } }
        let x = tape.concatRows(long, tape.gather(table, rows: short, padding: batch.padding, readsPaddingRow: true))
        let mask = [Float](repeating: 1, count: b) + short.map { $0 == batch.padding ? 0 : 1 }
        return attend(x, user: user, steps: shortLength + 1, mask: mask, part: "long_short", p, tape: tape)
    }

    public func loss(_ batch: TrainingBatch, _ p: [String: Variable], tape: Tape, rng: inout SeededGenerator) -> Variable {
        let examples = SequenceBatch(examples: lossExamples(of: batch), of: sequences!)
        let encoded = encode(examples, p, tape: tape, training: true, rng: &rng)
        let loss = lossType(encoded, p["item_embedding"]!, targets: examples.targets!,
                            items: sequences!.log.itemCount, negatives: batch.negativeItems, tape: tape, rng: &rng)
        let weights = tape.affine(tape.add(tape.norm(p["long.weight"]!), tape.norm(p["long_short.weight"]!)), scale: regWeights[0])
        let vectors = tape.add(tape.norm(p["user_embedding"]!, rows: examples.users), tape.norm(p["item_embedding"]!, rows: examples.targets!))
        return tape.add(loss, tape.add(weights, tape.affine(vectors, scale: regWeights[1])))
    }

    /// Per example: the long attention's L × d × d layer and dots (≈ 6·L·d² with gradients),
    /// the output product each way (`trainingFLOPs`); validation rows × items × 2d.
    public func cost(_ s: WorkShape) -> ModelCost? {
        let d = Double(embeddingSize)
        let steps = Double(sequences?.maxLength ?? 50) + Double(shortLength + 1)
        let flops = trainingFLOPs(s, encoder: 2 * steps * d * d, width: d) + 2 * Double(s.users) * Double(s.items) * d
        return ModelCost(nominal: flops, executed: flops, scoringInner: embeddingSize)
    }
}
