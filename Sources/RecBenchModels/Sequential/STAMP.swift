import Foundation
import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// STAMP (Liu et al. 2018, "STAMP: Short-Term Attention/Memory Priority Model for
/// Session-based Recommendation"), as RecBole 1.2.1 builds it.
///
///     x_1 … x_L = E[s_1 … s_L]                  (L = MAX_ITEM_LIST_LENGTH; padding reads E's padding row)
///     x_t = x_len,  m_s = Σ_{i ≤ L} x_i / len
///     α_i = w₀ᵀ σ(W₁ x_i + W₂ x_t + W₃ m_s + b_a)   (neither normalised nor masked)
///     m_a = Σ_i α_i x_i + m_s                      (RecBole adds m_s)
///     s = tanh(MLP_A m_a + b_A) ⊙ tanh(MLP_B x_t + b_B)
///     loss = CE(s · Eᵀ, next item);  score(·) = s · E[items]ᵀ
///
/// RecBole's padding row is a trained softmax class that lookups read but do not update
/// (torch's `padding_idx`), so padded positions enter m_s and m_a: kept here, since STAMP is
/// the one model whose output they change. Initialisation: E ~ N(0, 0.002), linear weights
/// ~ N(0, 0.05), biases and b_a zero.
public struct STAMP: TiedNextItemModel {
    public static let name = "STAMP"
    public static let summary = "Attention/memory next-item model: the session's mean, an attention over it and the last item"
    public static let kind = ModelKind.attention
    public static let parameters: [ConfigKey] = [SharedKeys.embeddingSize(64), SharedKeys.lossType("CE")]
    public static let testSettings: [[String: ConfigValue]] = [["embedding_size": .int(3)]]

    let embeddingSize: Int
    public let lossType: NextItemLoss
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var sequences: SequenceData?

    public init(parameters: ModelParameters) throws {
        embeddingSize = try parameters.int("embedding_size", in: 1...4096)
        lossType = try NextItemLoss(parameters)
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        prepareSequences(data, context: context)
        let d = embeddingSize
        var initial = Parameters()
        initial.add("item_embedding", Initializer.normal(rows: data.itemCount + 1, columns: d, std: 0.002, rng: &rng))   // row `items`: padding
        for name in ["w1", "w2", "w3", "mlp_a.weight", "mlp_b.weight"] {
            initial.add(name, Initializer.normal(rows: d, columns: d, std: 0.05, rng: &rng))
        }
        initial.add("w0", Initializer.normal(rows: d, columns: 1, std: 0.05, rng: &rng))
        for name in ["b_a", "mlp_a.bias", "mlp_b.bias"] { initial.add(name, Matrix(rows: 1, columns: d)) }
        return initial
    }

    public func encode(_ batch: SequenceBatch, _ p: [String: Variable], tape: Tape, training: Bool, rng: inout SeededGenerator) -> Variable {
        let batch = batch.padded(to: sequences?.maxLength ?? batch.width), steps = batch.width
        let x = tape.gather(p["item_embedding"]!, rows: batch.timeMajorItems, padding: batch.padding, readsPaddingRow: true)
        let last = tape.gather(x, rows: batch.lastTimeMajorRows)
        let mean = tape.scaleRows(tape.sumSteps(x, steps: steps), by: batch.lengths.map { 1 / Float(max(1, $0)) })
        let context = tape.add(tape.matmul(last, p["w2"]!), tape.matmul(mean, p["w3"]!))
        let pooled = tape.attentionPool(keys: x, projected: tape.linear(x, p["w1"]!, p["b_a"]!), query: context, v: p["w0"]!, mask: nil, steps: steps)
        let memory = tape.add(pooled, mean)
        return tape.mul(tape.tanh(tape.linear(memory, p["mlp_a.weight"]!, p["mlp_a.bias"]!)),
                        tape.tanh(tape.linear(last, p["mlp_b.weight"]!, p["mlp_b.bias"]!)))
    }

    /// Per example: the attention's d × d product at every position, four more, and the output
    /// product, ×3 for the pullback; validation rows × items × 2d.
    public func cost(_ s: WorkShape) -> ModelCost? {
        let d = Double(embeddingSize)
        let steps = Double(sequences?.maxLength ?? 50)
        let flops = trainingFLOPs(s, encoder: 2 * steps * d * (d + 1) + 8 * d * d, width: d) + 2 * Double(s.users) * Double(s.items) * d
        return ModelCost(nominal: flops, executed: flops, scoringInner: embeddingSize)
    }
}
