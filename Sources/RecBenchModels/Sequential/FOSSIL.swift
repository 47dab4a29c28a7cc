import Foundation
import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// FOSSIL (He and McAuley 2016, "Fusing Similarity Models with Markov Chains for Sparse
/// Sequential Recommendation"), as RecBole 1.2.1 builds it:
///
///     w = Λ_u + λ                                            (per order: the user's weight plus a shared one)
///     s = Σ_{i<n} w_i E[s_{len−n+i}]  +  len^{−α} Σ_{t<L} E[s_t]
///           (Markov chain of order n = `order_len`: a missing item is a zero vector;
///            similarity (FISM): all L positions, the padding row a fixed random vector)
///     loss = CE(s · Eᵀ, next item) + reg_weight · (‖Λ_batch‖ + ‖E[targets]‖ + ‖s‖)
///     score(·) = s · E[items]ᵀ
///
/// Norms unsquared, as RecBole's; no per-item bias (RecBole drops the paper's β). E and Λ
/// xavier normal over RecBole's row counts; λ starts at zero (RecBole's init never reaches it).
public struct FOSSIL: TiedNextItemModel {
    public static let name = "FOSSIL"
    public static let summary = "Item similarity (FISM) fused with a personalised higher-order Markov chain over the latest items"
    public static let kind = ModelKind.factorisation
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(64),
        ConfigKey("order_len", "int", .int(3), "FOSSIL: order of the Markov chain (latest items weighted per user)."),
        SharedKeys.alpha(0.6),
        SharedKeys.regWeight(0.0), SharedKeys.lossType("CE"),
    ]
    public static let testSettings: [[String: ConfigValue]] = [
        ["embedding_size": .int(3), "reg_weight": .double(0.1)],
        ["embedding_size": .int(3), "order_len": .int(1), "loss_type": .string("BPR")],
    ]

    let embeddingSize: Int, order: Int, alpha: Float, regWeight: Float
    public let lossType: NextItemLoss
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var sequences: SequenceData?

    public init(parameters: ModelParameters) throws {
        embeddingSize = try parameters.int("embedding_size", in: 1...4096)
        order = try parameters.int("order_len", in: 1...4096)
        alpha = Float(try parameters.double("alpha", in: 0...16))
        regWeight = Float(try parameters.double("reg_weight", in: 0...1e6))
        lossType = try NextItemLoss(parameters)
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        prepareSequences(data, context: context)
        let (users, items, d) = (data.userCount, data.itemCount, embeddingSize)
        var initial = Parameters()
        initial.add("item_embedding", Initializer.xavierNormal(fanIn: items + 1, fanOut: d, rng: &rng))   // row `items`: padding
        initial.add("user_lambda", Initializer.normal(rows: users, columns: order, std: (2 / Float(users + 1 + order)).squareRoot(), rng: &rng))
        initial.add("lambda", Matrix(rows: 1, columns: order))
        return initial
    }

    public func encode(_ batch: SequenceBatch, _ p: [String: Variable], tape: Tape, training: Bool, rng: inout SeededGenerator) -> Variable {
        let table = p["item_embedding"]!
        let weights = tape.add(tape.gather(p["user_lambda"]!, rows: batch.users), tape.gather(p["lambda"]!, rows: [Int32](repeating: 0, count: batch.count)))
        let chain = (0..<order).map { i in
            let latest = tape.gather(table, rows: (0..<batch.count).map { r in
                let position = batch.lengths[r] - order + i
                return position >= 0 ? batch.items[r * batch.width + position] : batch.padding
            }, padding: batch.padding)
            return tape.scaleRows(latest, by: tape.columns(weights, i..<(i + 1)))
        }
        let input = batch.padded(to: sequences?.maxLength ?? batch.width)
        let sum = tape.sumSteps(tape.gather(table, rows: input.timeMajorItems, padding: input.padding, readsPaddingRow: true), steps: input.width)
        let similarity = tape.scaleRows(sum, by: batch.lengths.map { Foundation.pow(Float(max(1, $0)), -alpha) })
        return chain.reduce(similarity) { tape.add($0, $1) }
    }

    public func loss(_ batch: TrainingBatch, _ p: [String: Variable], tape: Tape, rng: inout SeededGenerator) -> Variable {
        let examples = SequenceBatch(examples: lossExamples(of: batch), of: sequences!)
        let encoded = encode(examples, p, tape: tape, training: true, rng: &rng)
        let loss = lossType(encoded, p["item_embedding"]!, targets: examples.targets!,
                            items: sequences!.log.itemCount, negatives: batch.negativeItems, tape: tape, rng: &rng)
        guard regWeight > 0 else { return loss }
        let penalty = tape.add(tape.add(tape.norm(p["user_lambda"]!, rows: examples.users), tape.norm(p["item_embedding"]!, rows: examples.targets!)),
                               tape.norm(encoded))
        return tape.add(loss, tape.affine(penalty, scale: regWeight))
    }

    /// Per example: L + n gathered rows (2·(L + n)·d), the output product each way (`trainingFLOPs`);
    /// validation rows × items × 2d.
    public func cost(_ s: WorkShape) -> ModelCost? {
        let d = Double(embeddingSize)
        let steps = Double(sequences?.maxLength ?? 50) + Double(order)
        let flops = trainingFLOPs(s, encoder: 2 * steps * d, width: d) + 2 * Double(s.users) * Double(s.items) * d
        return ModelCost(nominal: flops, executed: flops, scoringInner: embeddingSize)
    }
}
