import Foundation
import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// HRM (Wang et al. 2015, "Learning Hierarchical Representation Model for Next Basket
/// Recommendation"), as RecBole 1.2.1 builds it, baskets of one item:
///
///     h = pool₁(E[s_{len−k+1}], …, E[s_len])             (the k = `high_order` latest items;
///                                                          fewer: the padding row, a fixed random vector)
///     s = pool₂(drop(drop(U_u)), drop(h))                  (the user vector dropped out twice, as RecBole)
///     loss = CE(s · Eᵀ, next item);   score(·) = s · E[items]ᵀ
///
/// Pooling is an elementwise max (the default) or a mean; RecBole's layer-1 mean sums every
/// one of the `MAX_ITEM_LIST_LENGTH` positions (padding rows included) over min(len, k), and
/// that is what `average` does here. E and U xavier normal over RecBole's row counts
/// (padding included); no regularisation (RecBole reads `reg_weight` and never uses it).
public struct HRM: TiedNextItemModel {
    public static let name = "HRM"
    public static let summary = "Hierarchical pooling: the latest items pooled, then pooled with the user's vector"
    public static let kind = ModelKind.factorisation
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(64),
        ConfigKey("high_order", "int", .int(2), "HRM: how many of the latest items the first pooling reads."),
        SharedKeys.dropoutProb(0.2),
        ConfigKey("pooling_type_layer_1", "string", .string("max"), "HRM: pooling of the latest items, max or average."),
        ConfigKey("pooling_type_layer_2", "string", .string("max"), "HRM: pooling of the user vector with the items', max or average."),
        SharedKeys.lossType("CE"),
    ]
    public static let testSettings: [[String: ConfigValue]] = [
        ["embedding_size": .int(3), "dropout_prob": .double(0)],
        ["embedding_size": .int(3), "dropout_prob": .double(0), "high_order": .int(3), "pooling_type_layer_1": .string("average"),
         "pooling_type_layer_2": .string("average"), "loss_type": .string("BPR")],
    ]

    let embeddingSize: Int, highOrder: Int, dropout: Float
    let averages: (items: Bool, user: Bool)
    public let lossType: NextItemLoss
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var sequences: SequenceData?

    public init(parameters: ModelParameters) throws {
        embeddingSize = try parameters.int("embedding_size", in: 1...4096)
        highOrder = try parameters.int("high_order", in: 1...4096)
        dropout = Float(try parameters.double("dropout_prob", in: 0...0.99))
        averages = (try parameters.choice("pooling_type_layer_1", of: ["max", "average"]) == "average",
                    try parameters.choice("pooling_type_layer_2", of: ["max", "average"]) == "average")
        lossType = try NextItemLoss(parameters)
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        prepareSequences(data, context: context)
        let (users, items, d) = (data.userCount, data.itemCount, embeddingSize)
        var initial = Parameters()
        initial.add("item_embedding", Initializer.xavierNormal(fanIn: items + 1, fanOut: d, rng: &rng))   // row `items`: padding
        initial.add("user_embedding", Initializer.normal(rows: users, columns: d, std: (2 / Float(users + 1 + d)).squareRoot(), rng: &rng))
        return initial
    }

    public func encode(_ batch: SequenceBatch, _ p: [String: Variable], tape: Tape, training: Bool, rng: inout SeededGenerator) -> Variable {
        let table = p["item_embedding"]!
        let items = averages.items ? paddedMean(batch, table, tape: tape) : latestMax(batch, table, tape: tape)
        func drop(_ v: Variable) -> Variable { training ? Dropout.apply(v, rate: dropout, tape: tape, rng: &rng) : v }
        let user = drop(drop(tape.gather(p["user_embedding"]!, rows: batch.users)))
        let item = drop(items)
        return averages.user ? tape.affine(tape.add(user, item), scale: 0.5) : tape.maximum(user, item)
    }

    /// The elementwise max of the k latest items' vectors (the padding row where fewer).
    func latestMax(_ batch: SequenceBatch, _ table: Variable, tape: Tape) -> Variable {
        let latest = (0..<highOrder).map { j in
            tape.gather(table, rows: (0..<batch.count).map { r in
                let position = batch.lengths[r] - highOrder + j
                return position >= 0 ? batch.items[r * batch.width + position] : batch.padding
            }, padding: batch.padding, readsPaddingRow: true)
        }
        return latest.dropFirst().reduce(latest[0]) { tape.maximum($0, $1) }
    }

    /// RecBole's layer-1 `average`: the sum over all L positions (padding rows included) over min(len, k).
    func paddedMean(_ batch: SequenceBatch, _ table: Variable, tape: Tape) -> Variable {
        let input = batch.padded(to: sequences?.maxLength ?? batch.width)
        let sum = tape.sumSteps(tape.gather(table, rows: input.timeMajorItems, padding: input.padding, readsPaddingRow: true), steps: input.width)
        return tape.scaleRows(sum, by: batch.lengths.map { 1 / Float(max(1, min($0, highOrder))) })
    }

    /// Per example: k gathers and the pools (≈ 4kd), the output product each way (`trainingFLOPs`);
    /// validation rows × items × 2d.
    public func cost(_ s: WorkShape) -> ModelCost? {
        let d = Double(embeddingSize)
        let flops = trainingFLOPs(s, encoder: 4 * Double(highOrder) * d, width: d) + 2 * Double(s.users) * Double(s.items) * d
        return ModelCost(nominal: flops, executed: flops, scoringInner: embeddingSize)
    }
}
