import Foundation
import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// SASRec (Kang & McAuley 2018, "Self-Attentive Sequential Recommendation"), as RecBole
/// 1.2.1 builds it.
///
///     e_t = dropout(LN(E[s_t] + P[t]))                  (learned positions from the left)
///     h = TransformerEncoder(e), causal                 (each step sees itself and earlier steps)
///     s = h_len
///     loss = CE(s · Eᵀ, next item);  score(·) = s · E[items]ᵀ
///
/// Every weight ~ N(0, initializer_range), biases 0, as RecBole's `_init_weights`.
public struct SASRec: TiedNextItemModel {
    public static let name = "SASRec"
    public static let summary = "Self-attentive next-item model: a causal transformer over the sequence; its last position scores every item"
    public static let kind = ModelKind.attention
    public static let parameters: [ConfigKey] = TransformerEncoder.keys(dropout: 0.5) + [SharedKeys.lossType("CE")]
    public static let testSettings: [[String: ConfigValue]] = [
        ["hidden_size": .int(4), "inner_size": .int(6), "n_layers": .int(1), "hidden_dropout_prob": .double(0), "attn_dropout_prob": .double(0)],
    ]

    let encoder: TransformerEncoder
    let std: Float
    public let lossType: NextItemLoss
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var sequences: SequenceData?

    public init(parameters: ModelParameters) throws {
        encoder = try TransformerEncoder(parameters)
        std = Float(try parameters.double("initializer_range", in: .leastNonzeroMagnitude...10))   // 0: every weight equal, nothing learns
        lossType = try NextItemLoss(parameters)
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        prepareSequences(data, context: context)
        let d = encoder.width
        var initial = Parameters()
        initial.add("item_embedding", Initializer.normal(rows: data.itemCount + 1, columns: d, std: std, rng: &rng))   // row `items`: padding
        initial.add("position_embedding", Initializer.normal(rows: sequences!.maxLength, columns: d, std: std, rng: &rng))
        LayerNormParameters.add("embedding_norm", width: d, to: &initial)
        encoder.initialize(&initial, std: std, rng: &rng)
        return initial
    }

    public func encode(_ batch: SequenceBatch, _ p: [String: Variable], tape: Tape, training: Bool, rng: inout SeededGenerator) -> Variable {
        let packed = batch.packed
        let items = tape.gather(p["item_embedding"]!, rows: packed.items, padding: batch.padding)
        var x = LayerNormParameters.apply("embedding_norm", tape.add(items, tape.gather(p["position_embedding"]!, rows: packed.positions)), p,
                                          eps: encoder.eps, tape: tape)
        if training { x = Dropout.apply(x, rate: encoder.hiddenDropout, tape: tape, rng: &rng) }
        return encoder(x, lengths: packed.lengths, causal: true, reading: SequenceBatch.lastRows(packed.lengths), p, tape: tape, training: training,
                       rng: &rng)
    }

    /// The encoder's multiply-adds and the output product (`trainingFLOPs`), ×2 FLOPs, ×3 with the pullback;
    /// validation rows × items × 2d. Nominal: every layer at full length, as RecBole pads;
    /// executed: at the mean real length (packed; the attention's t² term taken at the mean
    /// too), the last layer past its Q, K and V products on the one row read.
    public func cost(_ s: WorkShape) -> ModelCost? {
        let d = Double(encoder.width)
        func flops(_ multiplyAdds: Double) -> Double {
            trainingFLOPs(s, encoder: 2 * multiplyAdds, width: d) + 2 * Double(s.users) * Double(s.items) * d
        }
        let full = Double(sequences?.maxLength ?? 50), mean = sequences?.meanTrainInputLength ?? full
        return ModelCost(nominal: flops(encoder.multiplyAdds(steps: full)), executed: flops(encoder.multiplyAdds(steps: mean, reading: 1)),
                         scoringInner: encoder.width)
    }
}
