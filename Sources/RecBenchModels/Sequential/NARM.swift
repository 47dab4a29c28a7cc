import Foundation
import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// NARM (Li et al. 2017, "Neural Attentive Session-based Recommendation"), as RecBole
/// 1.2.1 builds it.
///
///     x_t = dropout₁(E[s_t]);  h_t = GRU(x_t, h_{t−1})           (no biases)
///     c_g = h_len
///     α_t = vᵀ (m_t · σ(A₁ h_t + A₂ c_g))                         (m_t = 1 on real items; not normalised)
///     c_l = Σ_t α_t h_t
///     s = B · dropout₂([c_l, c_g])                                 (bilinear decoder)
///     loss = CE(s · Eᵀ, next item);  score(·) = s · E[items]ᵀ
///
/// Initialisation as RecBole's: E and the linear maps xavier normal, the GRU torch's
/// default U(±1/√H).
public struct NARM: TiedNextItemModel {
    public static let name = "NARM"
    public static let summary = "Recurrent next-item model with attention: the GRU's last state and an attention-weighted sum of its states"
    public static let kind = ModelKind.recurrent
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(64), SharedKeys.hiddenSize(128),
        SharedKeys.layerCount(1),
        SharedKeys.dropoutProbs([0.25, 0.5]),
        SharedKeys.lossType("CE"),
    ]
    public static let testSettings: [[String: ConfigValue]] = [
        ["embedding_size": .int(3), "hidden_size": .int(4), "dropout_probs": .list([.double(0), .double(0)])],
    ]

    let embeddingSize: Int, hiddenSize: Int, layers: Int
    let dropouts: [Float]
    public let lossType: NextItemLoss
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var sequences: SequenceData?

    public init(parameters: ModelParameters) throws {
        embeddingSize = try parameters.int("embedding_size", in: 1...4096)
        hiddenSize = try parameters.int("hidden_size", in: 1...4096)
        layers = try parameters.int("n_layers", in: 1...16)
        dropouts = try parameters.doubleList("dropout_probs", in: 0...0.99).map { Float($0) }
        guard dropouts.count == 2 else { throw parameters.invalid("dropout_probs", "expected two probabilities, got \(dropouts.count)") }
        lossType = try NextItemLoss(parameters)
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        prepareSequences(data, context: context)
        let (items, d, h) = (data.itemCount, embeddingSize, hiddenSize)
        var initial = Parameters()
        initial.add("item_embedding", Initializer.xavierNormal(fanIn: items + 1, fanOut: d, rng: &rng))   // row `items`: padding
        let bound = 1 / Float(h).squareRoot()
        for l in 0..<layers {
            initial.add("gru.\(l).input", Initializer.uniform(rows: l == 0 ? d : h, columns: 3 * h, bound: bound, rng: &rng))
            initial.add("gru.\(l).hidden", Initializer.uniform(rows: h, columns: 3 * h, bound: bound, rng: &rng))
        }
        initial.add("a1", Initializer.xavierNormal(fanIn: h, fanOut: h, rng: &rng))
        initial.add("a2", Initializer.xavierNormal(fanIn: h, fanOut: h, rng: &rng))
        initial.add("v", Initializer.xavierNormal(fanIn: h, fanOut: 1, rng: &rng))
        initial.add("b", Initializer.xavierNormal(fanIn: 2 * h, fanOut: d, rng: &rng))
        return initial
    }

    public func encode(_ batch: SequenceBatch, _ p: [String: Variable], tape: Tape, training: Bool, rng: inout SeededGenerator) -> Variable {
        let packing = batch.stepPacking
        var x = tape.gather(p["item_embedding"]!, rows: packing.items, padding: batch.padding)
        if training { x = Dropout.apply(x, rate: dropouts[0], tape: tape, rng: &rng) }
        for l in 0..<layers { x = tape.gru(x, wInput: p["gru.\(l).input"]!, wHidden: p["gru.\(l).hidden"]!, stepCounts: packing.stepCounts) }
        let global = tape.gather(x, rows: packing.lastRows)
        let steps = batch.width
        x = tape.gather(x, rows: packing.timeMajorRows, padding: -1)   // padded time-major for the masked attention: padding → 0
        let local = tape.attentionPool(keys: x, projected: tape.matmul(x, p["a1"]!), query: tape.matmul(global, p["a2"]!), v: p["v"]!,
                                       mask: batch.timeMajorMask, steps: steps)
        var context = tape.concatColumns([local, global])
        if training { context = Dropout.apply(context, rate: dropouts[1], tape: tape, rng: &rng) }
        return tape.matmul(context, p["b"]!)
    }

    /// GRU4Rec's GRU cost plus the attention's two H × H products per step. Executed: the GRU
    /// over real steps only (packed), the attention over the padded window; nominal: both padded.
    public func cost(_ s: WorkShape) -> ModelCost? {
        let (d, h) = (Double(embeddingSize), Double(hiddenSize))
        let width = Double(sequences?.maxLength ?? 50)
        func flops(gruSteps: Double) -> Double {
            let encoder = gruSteps * 6 * h * (d + h * Double(layers)) + width * 2 * h * h + 4 * h * d
            return trainingFLOPs(s, encoder: encoder, width: d) + 2 * Double(s.users) * Double(s.items) * d
        }
        return ModelCost(nominal: flops(gruSteps: width), executed: flops(gruSteps: sequences?.meanTrainInputLength ?? width),
                         scoringInner: embeddingSize)
    }
}
