import Foundation
import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// BERT4Rec (Sun et al. 2019, "BERT4Rec: Sequential Recommendation with Bidirectional
/// Encoder Representations from Transformer"), as RecBole 1.2.1 trains and scores it.
///
///     training, per batch: with probability ft_ratio mask each sequence's last item, else
///       mask each item with probability mask_ratio (the mask token; the last
///       ⌊mask_ratio · L⌋ masked positions of a sequence enter the loss, position 0 never)
///     e_t = dropout(LN(E[s_t] + P[t]));  h = TransformerEncoder(e), bidirectional
///     o = LN(gelu(h W + b))  at the masked positions
///     loss = CE(o · E[items, padding]ᵀ + bias, the masked item)
///     score: the sequence without its first item, the mask token appended; o at the mask
///
/// The example's own next item is not used in training (RecBole's transform masks the
/// history only). Weights ~ N(0, initializer_range); biases, the output bias 0.
public struct BERT4Rec: EncodedSequentialModel {
    public static let name = "BERT4Rec"
    public static let summary = "Bidirectional transformer trained to fill masked items; scores the mask token appended to the sequence"
    public static let kind = ModelKind.attention
    public static let parameters: [ConfigKey] = TransformerEncoder.keys(dropout: 0.2) + [
        ConfigKey("mask_ratio", "float", .double(0.2), "BERT4Rec: probability that an item of a training sequence is masked."),
        ConfigKey("ft_ratio", "float", .double(0.5), "BERT4Rec: share of training batches that mask only each sequence's last item."),
        SharedKeys.lossType("CE"),
    ]
    public static let testSettings: [[String: ConfigValue]] = [
        ["hidden_size": .int(4), "inner_size": .int(6), "n_layers": .int(1), "hidden_dropout_prob": .double(0), "attn_dropout_prob": .double(0)],
    ]

    let encoder: TransformerEncoder
    let std: Float, maskRatio: Double, fineTuneRatio: Double
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var sequences: SequenceData?

    public init(parameters: ModelParameters) throws {
        encoder = try TransformerEncoder(parameters)
        std = Float(try parameters.double("initializer_range", in: .leastNonzeroMagnitude...10))   // 0: every weight equal, nothing learns
        maskRatio = try parameters.double("mask_ratio", in: 0...1)
        try Self.checkMask(maskRatio, parameters)
        fineTuneRatio = try parameters.double("ft_ratio", in: 0...1)
        guard try NextItemLoss(parameters) == .crossEntropy else { throw parameters.invalid("loss_type", "BERT4Rec here trains with CE only") }
    }

    /// Refuses a mask that keeps no position: ⌊mask_ratio · L⌋ = 0 leaves the loss nothing
    /// (RecBole 1.2.1 sizes its masked list the same way and divides by its zero count).
    static func checkMask(_ ratio: Double, _ parameters: ModelParameters) throws {
        let length = try parameters.sequenceLength()
        guard Int(ratio * Double(length)) < 1 else { return }
        let smallest = (10_000 / Double(length)).rounded(.up) / 10_000
        throw parameters.conflict("mask_ratio", "MAX_ITEM_LIST_LENGTH", "BERT4Rec: mask_ratio \(ratio) × MAX_ITEM_LIST_LENGTH \(length) masks no "
                                  + "position (⌊\(ratio * Double(length))⌋ = 0), so nothing would be learned; use a mask_ratio of at least \(smallest)")
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        sequences = data.sequenceData
        let d = encoder.width
        var initial = Parameters()
        // Rows: the items, the padding class (row n), the mask token (row n + 1).
        initial.add("item_embedding", Initializer.normal(rows: data.itemCount + 2, columns: d, std: std, rng: &rng))
        initial.add("position_embedding", Initializer.normal(rows: sequences!.maxLength, columns: d, std: std, rng: &rng))
        LayerNormParameters.add("embedding_norm", width: d, to: &initial)
        encoder.initialize(&initial, std: std, rng: &rng)
        initial.add("output.weight", Initializer.normal(rows: d, columns: d, std: std, rng: &rng))
        initial.add("output.bias", Matrix(rows: 1, columns: d))
        LayerNormParameters.add("output_norm", width: d, to: &initial)
        initial.add("output_bias", Matrix(rows: data.itemCount + 1, columns: 1))
        return initial
    }

    /// The encoder's output at the rows `read` of packed sequences (`items`, `lengths`),
    /// through the output head.
    func hidden(_ items: [Int32], lengths: [Int], read: [Int32], _ p: [String: Variable], tape: Tape, training: Bool,
                rng: inout SeededGenerator) -> Variable {
        let padding = Int32(sequences!.log.itemCount)
        let positions = lengths.flatMap { (0..<$0).map { Int32($0) } }
        let embedded = tape.add(tape.gather(p["item_embedding"]!, rows: items, padding: padding), tape.gather(p["position_embedding"]!, rows: positions))
        var x = LayerNormParameters.apply("embedding_norm", embedded, p, eps: encoder.eps, tape: tape)
        if training { x = Dropout.apply(x, rate: encoder.hiddenDropout, tape: tape, rng: &rng) }
        let h = encoder(x, lengths: lengths, causal: false, reading: read, p, tape: tape, training: training, rng: &rng)
        let o = tape.gelu(tape.linear(h, p["output.weight"]!, p["output.bias"]!))
        return LayerNormParameters.apply("output_norm", o, p, eps: encoder.eps, tape: tape)
    }

    /// [o, 1] at the mask token appended after each sequence without its first item.
    public func encode(_ batch: SequenceBatch, _ p: [String: Variable], tape: Tape, training: Bool, rng: inout SeededGenerator) -> Variable {
        let mask = Int32(sequences!.log.itemCount + 1)
        var items: [Int32] = [], lengths: [Int] = []
        for r in 0..<batch.count {
            let length = batch.lengths[r]
            for t in 1..<max(1, length) { items.append(batch.items[r * batch.width + t]) }
            items.append(mask)
            lengths.append(max(1, length))
        }
        let o = hidden(items, lengths: lengths, read: SequenceBatch.lastRows(lengths), p, tape: tape, training: training, rng: &rng)
        return tape.concatColumns([o, tape.constant(Matrix(rows: batch.count, columns: 1, repeating: 1))])
    }

    public func itemVectors(_ parameters: Parameters, itemCount: Int) -> Matrix {
        let e = parameters["item_embedding"], bias = parameters["output_bias"], d = e.columns
        var table = Matrix(rows: itemCount, columns: d + 1)
        for i in 0..<itemCount {
            for j in 0..<d { table[i, j] = e[i, j] }
            table[i, d] = bias.values[i]
        }
        return table
    }

    public func loss(_ batch: TrainingBatch, _ p: [String: Variable], tape: Tape, rng: inout SeededGenerator) -> Variable {
        let examples = SequenceBatch(examples: examples(of: batch), of: sequences!)
        let masked = MaskedItems(examples, maskToken: Int32(sequences!.log.itemCount + 1), ratio: maskRatio,
                                 kept: Int(maskRatio * Double(sequences!.maxLength)), lastOnly: Double(rng.nextUnitFloat()) < fineTuneRatio, rng: &rng)
        guard !masked.read.isEmpty else { return tape.constant(Matrix(rows: 1, columns: 1)) }
        let o = hidden(masked.items, lengths: masked.lengths, read: masked.read, p, tape: tape, training: true, rng: &rng)
        let table = tape.concatColumns([tape.rows(p["item_embedding"]!, 0..<(sequences!.log.itemCount + 1)), p["output_bias"]!])
        let encoded = tape.concatColumns([o, tape.constant(Matrix(rows: masked.read.count, columns: 1, repeating: 1))])
        return tape.softmaxCrossEntropy(encoded, table, targets: masked.targets)
    }

    /// The encoder and the CE product at the rows a batch reads; validation rows × items × 2d.
    /// Nominal: every layer at full length, as RecBole pads, and ⌊mask_ratio · L⌋ rows read;
    /// executed: at the mean real length (packed), the last layer past its Q, K and V products
    /// on the rows read: one per sequence in a share ft_ratio of batches, else the masked
    /// positions after the first, at most ⌊mask_ratio · L⌋ (attention terms at the mean length).
    public func cost(_ s: WorkShape) -> ModelCost? {
        let (d, n) = (Double(encoder.width), Double(s.items + 1))
        let full = Double(sequences?.maxLength ?? 50), mean = sequences?.meanTrainInputLength ?? full, kept = (maskRatio * full).rounded(.down)
        func flops(steps: Double, read: Double, lastLayerOnRead: Bool) -> Double {
            let perExample = 3 * 2 * (encoder.multiplyAdds(steps: steps, reading: lastLayerOnRead ? read : nil) + read * d * (n + d))
            return Double(s.trainInteractions) * perExample + 2 * Double(s.users) * Double(s.items) * d
        }
        let read = fineTuneRatio + (1 - fineTuneRatio) * min(kept, maskRatio * max(0, mean - 1))
        return ModelCost(nominal: flops(steps: full, read: max(1, kept), lastLayerOnRead: false),
                         executed: flops(steps: mean, read: read, lastLayerOnRead: true), scoringInner: encoder.width + 1)
    }
}

/// RecBole's `MaskItemSequence` on a batch, packed: the masked input and the rows whose
/// items the loss predicts.
struct MaskedItems {
    /// The sequences' items one after another, the masked ones replaced by the mask token
    /// (an empty sequence keeps one padding position).
    var items: [Int32] = []
    /// Each sequence's rows in `items`.
    var lengths: [Int] = []
    /// Rows the loss reads, and the item each is to predict.
    var read: [Int32] = [], targets: [Int32] = []

    init(_ batch: SequenceBatch, maskToken: Int32, ratio: Double, kept: Int, lastOnly: Bool, rng: inout SeededGenerator) {
        let packed = batch.packed
        items = packed.items
        lengths = packed.lengths
        var start = 0
        for r in 0..<batch.count {
            defer { start += lengths[r] }
            guard batch.lengths[r] > 0 else { continue }
            var positions: [Int] = []
            if lastOnly {
                positions = [batch.lengths[r] - 1]
            } else {
                for t in 0..<batch.lengths[r] where Double(rng.nextUnitFloat()) < ratio { positions.append(t) }
            }
            for t in positions { items[start + t] = maskToken }
            // RecBole keeps the last `kept` masked positions, and reads index 0 as padding.
            for t in positions.suffix(kept) where t > 0 {
                read.append(Int32(start + t))
                targets.append(batch.items[r * batch.width + t])
            }
        }
    }
}
