import Foundation
import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// GRU4Rec (Hidasi et al. 2016, "Session-based Recommendations with Recurrent Neural
/// Networks"; Tan et al. 2016's augmented prefixes), as RecBole 1.2.1 builds it.
///
///     x_t = dropout(E[s_t])                          (item embeddings, padding id → 0)
///     h_t = GRU_L(x_t, h_{t−1})                      (num_layers layers, no biases)
///     s = W_d · h_{len} + b_d                         (back to the embedding width)
///     loss = CE(s · Eᵀ, next item)                    (softmax over every item and the padding row)
///     score(·) = s · E[items]ᵀ
///
/// Initialisation as RecBole's: E xavier normal over n_items + 1 rows; the first GRU
/// layer's weights xavier uniform, deeper layers and W_d torch's defaults.
public struct GRU4Rec: TiedNextItemModel {
    public static let name = "GRU4Rec"
    public static let summary = "Recurrent next-item model: a GRU reads the sequence; its last state, projected, scores every item"
    public static let kind = ModelKind.recurrent
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(64), SharedKeys.hiddenSize(128),
        SharedKeys.gruLayers(1),
        SharedKeys.dropoutProb(0.3), SharedKeys.lossType("CE"),
    ]
    public static let testSettings: [[String: ConfigValue]] = [
        ["embedding_size": .int(3), "hidden_size": .int(4), "dropout_prob": .double(0)],
        ["embedding_size": .int(3), "hidden_size": .int(2), "num_layers": .int(2), "loss_type": .string("BPR"), "dropout_prob": .double(0)],
    ]

    let embeddingSize: Int, hiddenSize: Int, layers: Int
    let dropout: Float
    public let lossType: NextItemLoss
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var sequences: SequenceData?

    public init(parameters: ModelParameters) throws {
        embeddingSize = try parameters.int("embedding_size", in: 1...4096)
        hiddenSize = try parameters.int("hidden_size", in: 1...4096)
        layers = try parameters.int("num_layers", in: 1...16)
        dropout = Float(try parameters.double("dropout_prob", in: 0...0.99))
        lossType = try NextItemLoss(parameters)
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        prepareSequences(data, context: context)
        let (items, d, h) = (data.itemCount, embeddingSize, hiddenSize)
        var initial = Parameters()
        initial.add("item_embedding", Initializer.xavierNormal(fanIn: items + 1, fanOut: d, rng: &rng))   // row `items`: padding
        for l in 0..<layers {
            let input = l == 0 ? d : h
            let bound = { (fanIn: Int) in l == 0 ? (6 / Float(fanIn + 3 * h)).squareRoot() : 1 / Float(h).squareRoot() }
            initial.add("gru.\(l).input", Initializer.uniform(rows: input, columns: 3 * h, bound: bound(input), rng: &rng))
            initial.add("gru.\(l).hidden", Initializer.uniform(rows: h, columns: 3 * h, bound: bound(h), rng: &rng))
        }
        initial.add("dense.weight", Initializer.torchLinear(fanIn: h, rows: h, columns: d, rng: &rng))
        initial.add("dense.bias", Initializer.torchLinear(fanIn: h, rows: 1, columns: d, rng: &rng))
        return initial
    }

    public func encode(_ batch: SequenceBatch, _ p: [String: Variable], tape: Tape, training: Bool, rng: inout SeededGenerator) -> Variable {
        let packing = batch.stepPacking
        var x = tape.gather(p["item_embedding"]!, rows: packing.items, padding: batch.padding)
        if training { x = Dropout.apply(x, rate: dropout, tape: tape, rng: &rng) }
        for l in 0..<layers { x = tape.gru(x, wInput: p["gru.\(l).input"]!, wHidden: p["gru.\(l).hidden"]!, stepCounts: packing.stepCounts) }
        return tape.linear(tape.gather(x, rows: packing.lastRows), p["dense.weight"]!, p["dense.bias"]!)
    }

    /// Per example and step: the GRU's input and hidden products (2·3H·(d + H)) forward, twice
    /// that back; the output product each way (`trainingFLOPs`); validation rows × items × 2d.
    /// Executed: the real steps only (packed); nominal: every padded step, as RecBole runs it.
    public func cost(_ s: WorkShape) -> ModelCost? {
        let (d, h) = (Double(embeddingSize), Double(hiddenSize))
        func flops(steps: Double) -> Double {
            trainingFLOPs(s, encoder: steps * 6 * h * (d + h * Double(layers)), width: d) + 2 * Double(s.users) * Double(s.items) * d
        }
        return ModelCost(nominal: flops(steps: Double(sequences?.maxLength ?? 50)), executed: flops(steps: sequences?.meanTrainInputLength ?? 50),
                         scoringInner: embeddingSize)
    }
}
