import Foundation
import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// NPE (Nguyen et al. 2018, "NPE: Neural Personalized Embedding for Collaborative
/// Filtering"), as RecBole 1.2.1 builds it:
///
///     s = drop(relu(U_u)) + drop(relu(Σ_{t<L} E[s_t]))     (all L positions: the padding row,
///                                                            trainable here, once per padded one)
///     loss = CE(s · relu(E)ᵀ, next item);   score(·) = s · relu(E[items])ᵀ
///
/// relu(E) is formed once per evaluation pass. RecBole's item table has no padding index
/// (its row 0 trains like any other) and its unused `embedding_seq_item` is left out; U and
/// E xavier normal over RecBole's row counts.
public struct NPE: EncodedSequentialModel, NextItemLossModel {
    public static let name = "NPE"
    public static let summary = "Neural personalised embedding: the user's vector plus the sequence's summed items, scored against relu(items)"
    public static let kind = ModelKind.factorisation
    public static let parameters: [ConfigKey] = [SharedKeys.embeddingSize(64), SharedKeys.dropoutProb(0.3), SharedKeys.lossType("CE")]
    public static let testSettings: [[String: ConfigValue]] = [
        ["embedding_size": .int(3), "dropout_prob": .double(0)],
        ["embedding_size": .int(3), "dropout_prob": .double(0), "loss_type": .string("BPR")],
    ]

    let embeddingSize: Int, dropout: Float
    public let lossType: NextItemLoss
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var sequences: SequenceData?

    public init(parameters: ModelParameters) throws {
        embeddingSize = try parameters.int("embedding_size", in: 1...4096)
        dropout = Float(try parameters.double("dropout_prob", in: 0...0.99))
        lossType = try NextItemLoss(parameters)
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        prepareSequences(data, context: context)
        let (users, items, d) = (data.userCount, data.itemCount, embeddingSize)
        var initial = Parameters()
        initial.add("user_embedding", Initializer.normal(rows: users, columns: d, std: (2 / Float(users + 1 + d)).squareRoot(), rng: &rng))
        initial.add("item_embedding", Initializer.xavierNormal(fanIn: items + 1, fanOut: d, rng: &rng))   // row `items`: padding
        return initial
    }

    public func encode(_ batch: SequenceBatch, _ p: [String: Variable], tape: Tape, training: Bool, rng: inout SeededGenerator) -> Variable {
        let input = batch.padded(to: sequences?.maxLength ?? batch.width)
        // A plain gather: the padding row is read and trained at every padded position.
        let sum = tape.sumSteps(tape.gather(p["item_embedding"]!, rows: input.timeMajorItems), steps: input.width)
        func drop(_ v: Variable) -> Variable { training ? Dropout.apply(v, rate: dropout, tape: tape, rng: &rng) : v }
        return tape.add(drop(tape.relu(tape.gather(p["user_embedding"]!, rows: batch.users))), drop(tape.relu(sum)))
    }

    public func itemVectors(_ parameters: Parameters, itemCount: Int) -> Matrix {
        leadingRows(of: "item_embedding", itemCount).map(.serial) { Lanes.relu($0) }
    }

    public func loss(_ batch: TrainingBatch, _ p: [String: Variable], tape: Tape, rng: inout SeededGenerator) -> Variable {
        let examples = SequenceBatch(examples: lossExamples(of: batch), of: sequences!)
        let encoded = encode(examples, p, tape: tape, training: true, rng: &rng)
        return lossType(encoded, tape.relu(p["item_embedding"]!), targets: examples.targets!,
                                           items: sequences!.log.itemCount, negatives: batch.negativeItems, tape: tape, rng: &rng)
    }

    /// Per example: L gathered rows summed (L·d), the output product each way (`trainingFLOPs`);
    /// validation rows × items × 2d.
    public func cost(_ s: WorkShape) -> ModelCost? {
        let d = Double(embeddingSize)
        let steps = Double(sequences?.maxLength ?? 50)
        let flops = trainingFLOPs(s, encoder: 2 * steps * d, width: d) + 2 * Double(s.users) * Double(s.items) * d
        return ModelCost(nominal: flops, executed: flops, scoringInner: embeddingSize)
    }
}
