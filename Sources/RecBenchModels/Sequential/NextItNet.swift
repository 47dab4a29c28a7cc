import Foundation
import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// NextItNet (Yuan et al. 2019, "A Simple Convolutional Generative Network for Next Item
/// Recommendation"), as RecBole 1.2.1 builds it.
///
///     x⁰_t = E[s_t] over all L = MAX_ITEM_LIST_LENGTH positions     (padding: a row no lookup trains)
///     for each dilation d of `dilations` repeated `block_num` times:   (a residual block)
///         a = relu(LN₁(conv_d(x)));  x ← relu(LN₂(conv_2d(a))) + x      (causal, kernel `kernel_size`)
///     s = W_f x_{L−1} + b_f                                            (the last position, padding or not)
///     loss = CE(s · Eᵀ, next item)
///            + reg_weight · (‖E‖ + ‖W_f‖ + Σ_blocks ‖conv₁‖ + ‖conv₂‖ + ‖γ₁‖ + ‖γ₂‖)   (unsquared norms)
///     score(·) = s · E[items]ᵀ
///
/// Initialisation as RecBole's: E ~ U(±√(1/rows)), W_f xavier normal with b_f = 0.1, the
/// convolutions torch's default U(±1/√(C·K)), LayerNorm γ 1, β 0.
public struct NextItNet: TiedNextItemModel {
    public static let name = "NextItNet"
    public static let summary = "Convolutional next-item model: residual blocks of dilated causal convolutions over the padded sequence"
    public static let kind = ModelKind.convolutional
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(64),
        ConfigKey("kernel_size", "int", .int(3), "NextItNet: width of each causal convolution."),
        ConfigKey("block_num", "int", .int(5), "NextItNet: how many times the dilations list is repeated (blocks = block_num × its length)."),
        ConfigKey("dilations", "list of int", .list([.int(1), .int(4)]), "NextItNet: a block's dilation d (its two convolutions use d and 2d)."),
        SharedKeys.regWeight(1e-5), SharedKeys.lossType("CE"),
    ]
    public static let testSettings: [[String: ConfigValue]] = [
        ["embedding_size": .int(3), "block_num": .int(1), "dilations": .list([.int(1), .int(2)]), "reg_weight": .double(0.1)],
    ]

    let embeddingSize: Int, kernel: Int
    let dilations: [Int]
    let regWeight: Float
    public let lossType: NextItemLoss
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var sequences: SequenceData?

    public init(parameters: ModelParameters) throws {
        embeddingSize = try parameters.int("embedding_size", in: 1...4096)
        kernel = try parameters.int("kernel_size", in: 1...64)
        let blocks = try parameters.int("block_num", in: 1...64)
        dilations = Array(repeating: try parameters.intList("dilations", in: 1...4096), count: blocks).flatMap { $0 }
        guard !dilations.isEmpty else { throw parameters.invalid("dilations", "needs at least one dilation") }
        regWeight = Float(try parameters.double("reg_weight", in: 0...1e6))
        lossType = try NextItemLoss(parameters)
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        prepareSequences(data, context: context)
        let (rows, c) = (data.itemCount + 1, embeddingSize)   // row `items`: padding
        var initial = Parameters()
        initial.add("item_embedding", Initializer.uniform(rows: rows, columns: c, bound: (1 / Float(rows)).squareRoot(), rng: &rng))
        for b in dilations.indices {
            for conv in ["conv1", "conv2"] {
                initial.add("block.\(b).\(conv).weight", Initializer.torchLinear(fanIn: c * kernel, rows: kernel * c, columns: c, rng: &rng))
                initial.add("block.\(b).\(conv).bias", Initializer.torchLinear(fanIn: c * kernel, rows: 1, columns: c, rng: &rng))
            }
            for norm in ["ln1", "ln2"] { LayerNormParameters.add("block.\(b).\(norm)", width: c, to: &initial) }
        }
        initial.add("final.weight", Initializer.xavierNormal(fanIn: c, fanOut: c, rng: &rng))
        initial.add("final.bias", Matrix(rows: 1, columns: c, repeating: 0.1))
        return initial
    }

    public func encode(_ batch: SequenceBatch, _ p: [String: Variable], tape: Tape, training: Bool, rng: inout SeededGenerator) -> Variable {
        let input = batch.padded(to: sequences?.maxLength ?? batch.width), steps = input.width
        var x = tape.gather(p["item_embedding"]!, rows: input.items, padding: input.padding, readsPaddingRow: true)
        for (b, d) in dilations.enumerated() {
            // relu(LN(conv(·))) as one op: each block of the convolution is normalised while in cache.
            let convNorm = { (conv: String, norm: String, x: Variable, dilation: Int) in
                tape.causalConvolution(x, weight: p["block.\(b).\(conv).weight"]!, bias: p["block.\(b).\(conv).bias"]!, steps: steps, dilation: dilation,
                                       layerNorm: p["block.\(b).\(norm).weight"]!, p["block.\(b).\(norm).bias"]!, eps: 1e-8, relu: true)
            }
            let a = convNorm("conv1", "ln1", x, d)
            x = tape.add(convNorm("conv2", "ln2", a, 2 * d), x)
        }
        let last = tape.gather(x, rows: (0..<input.count).map { Int32($0 * steps + steps - 1) })
        return tape.linear(last, p["final.weight"]!, p["final.bias"]!)
    }

    public func loss(_ batch: TrainingBatch, _ p: [String: Variable], tape: Tape, rng: inout SeededGenerator) -> Variable {
        let examples = SequenceBatch(examples: lossExamples(of: batch), of: sequences!)
        let loss = lossType(encode(examples, p, tape: tape, training: true, rng: &rng), p["item_embedding"]!, targets: examples.targets!,
                            items: sequences!.log.itemCount, negatives: batch.negativeItems, tape: tape, rng: &rng)
        guard regWeight > 0 else { return loss }
        let penalised = ["item_embedding", "final.weight"] + dilations.indices.flatMap { b in
            ["conv1.weight", "conv2.weight", "ln1.weight", "ln2.weight"].map { "block.\(b).\($0)" }
        }
        let penalty = penalised.dropFirst().reduce(tape.norm(p[penalised[0]]!)) { tape.add($0, tape.norm(p[$1]!)) }
        return tape.add(loss, tape.affine(penalty, scale: regWeight))
    }

    /// Per example: two K·C × C convolutions per block at each of the L positions, ×3 with the
    /// pullback; the output product (`trainingFLOPs`); validation rows × items × 2C.
    public func cost(_ s: WorkShape) -> ModelCost? {
        let c = Double(embeddingSize)
        let steps = Double(sequences?.maxLength ?? 50)
        let encoder = 2 * (Double(dilations.count) * 2 * steps * Double(kernel) * c * c + c * c)
        let flops = trainingFLOPs(s, encoder: encoder, width: c) + 2 * Double(s.users) * Double(s.items) * c
        return ModelCost(nominal: flops, executed: flops, scoringInner: embeddingSize)
    }
}
