import Foundation
import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// RepeatNet (Ren et al. 2019, "RepeatNet: A Repeat Aware Neural Recommendation Machine for
/// Session-based Recommendation"), as RecBole 1.2.1 builds it. Over the input padded to
/// `MAX_ITEM_LIST_LENGTH` positions L (padding included, as RecBole's):
///
///     h_1…h_L = GRU(E[s_1]…E[s_L])                          (with biases; the padding row a fixed random vector)
///     attend(W, U, m)_t = softmax_t(m_t · vᵀ tanh(drop(U h_t) + drop(W h_len)))
///     mode = softmax(W_c · Σ_t attend(W_re, U_re, 1)_t h_t)      (P(repeat), P(explore); no mask)
///     P_r(i) = Σ_{t: s_t = i} attend(W_r, U_r, real)_t            (the user's own items)
///     P_e = softmax_{i ∉ s}(drop(M [Σ_t attend(W_e, U_e, real)_t h_t ; h_len]))
///     P(i) = mode_r · P_r(i) + mode_e · P_e(i);   loss = −log(P(next item) + 1e-8)
///
/// (+ with `joint_train`, the switch's own loss against whether the next item is a repeat,
/// with RecBole's broadcast; log P(mode) without its 1e-8.)
/// Scores are P itself: the explore block (queries × items) is formed once and the repeat
/// mass added onto the sequence's items in place. Initialisation as RecBole's: E and the
/// linear maps xavier normal (biases 0), the GRU torch's default U(±1/√H). The attention
/// vectors' biases (RecBole's V_r, V_e) are left out: a constant before a softmax.
public struct RepeatNet: SequentialModel, RepeatModeSequenceScorer {
    public static let name = "RepeatNet"
    public static let summary = "Repeat-aware next-item model: a switch between re-buying an item of the sequence and exploring the catalogue"
    public static let kind = ModelKind.recurrent
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(64), SharedKeys.hiddenSize(64),
        ConfigKey("joint_train", "bool", .bool(false), "RepeatNet: add the repeat/explore switch's own loss (is the next item a repeat?)."),
        SharedKeys.dropoutProb(0.5),
    ]
    public static let testSettings: [[String: ConfigValue]] = [
        ["embedding_size": .int(3), "hidden_size": .int(4), "dropout_prob": .double(0)],
        ["embedding_size": .int(2), "hidden_size": .int(3), "dropout_prob": .double(0), "joint_train": .bool(true)],
    ]

    let embeddingSize: Int, hiddenSize: Int, jointTrain: Bool
    let dropout: Float
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var sequences: SequenceData?

    public init(parameters: ModelParameters) throws {
        embeddingSize = try parameters.int("embedding_size", in: 1...4096)
        hiddenSize = try parameters.int("hidden_size", in: 1...4096)
        jointTrain = try parameters.bool("joint_train")
        dropout = Float(try parameters.double("dropout_prob", in: 0...0.99))
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        sequences = data.sequenceData
        let (items, d, h) = (data.itemCount, embeddingSize, hiddenSize)
        var initial = Parameters()
        initial.add("item_embedding", Initializer.xavierNormal(fanIn: items + 1, fanOut: d, rng: &rng))   // row `items`: padding
        let bound = 1 / Float(h).squareRoot()
        initial.add("gru.input", Initializer.uniform(rows: d, columns: 3 * h, bound: bound, rng: &rng))
        initial.add("gru.hidden", Initializer.uniform(rows: h, columns: 3 * h, bound: bound, rng: &rng))
        initial.add("gru.input_bias", Initializer.uniform(rows: 1, columns: 3 * h, bound: bound, rng: &rng))
        initial.add("gru.hidden_bias", Initializer.uniform(rows: 1, columns: 3 * h, bound: bound, rng: &rng))
        for part in ["re", "r", "e"] {
            initial.add("W_\(part)", Initializer.xavierNormal(fanIn: h, fanOut: h, rng: &rng))
            initial.add("U_\(part)", Initializer.xavierNormal(fanIn: h, fanOut: h, rng: &rng))
            initial.add("v_\(part)", Initializer.xavierNormal(fanIn: h, fanOut: 1, rng: &rng))
        }
        initial.add("W_e.bias", Matrix(rows: 1, columns: h))
        initial.add("U_e.bias", Matrix(rows: 1, columns: h))
        initial.add("W_c", Initializer.xavierNormal(fanIn: h, fanOut: 2, rng: &rng))
        initial.add("explore", Initializer.xavierNormal(fanIn: 2 * h, fanOut: items + 1, rng: &rng))   // column `items`: padding
        return initial
    }

    /// What one forward pass gives: the switch (log and plain), the repeat attention, the
    /// explore logits, and the padded batch's time-major items they refer to.
    struct Pass { let logMode: Variable, mode: Variable, repeatWeights: Variable, explore: Variable, items: [Int32] }

    /// The GRU's states over the padded input and what the attentions read of it.
    struct Memory {
        let all: Variable, last: Variable, steps: Int, items: [Int32], mask: [Float]
        let p: [String: Variable], tape: Tape, training: Bool, dropout: Float

        /// softmax_t(m_t · vᵀ tanh(drop(U h_t) + drop(W h_len))), optionally with biases on U and W.
        func attend(_ part: String, masked: Bool, bias: Bool = false, rng: inout SeededGenerator) -> Variable {
            let keys = bias ? tape.linear(all, p["U_\(part)"]!, p["U_\(part).bias"]!) : tape.matmul(all, p["U_\(part)"]!)
            let query = bias ? tape.linear(last, p["W_\(part)"]!, p["W_\(part).bias"]!) : tape.matmul(last, p["W_\(part)"]!)
            let keysDropout = training ? Dropout.mask(rate: dropout, rng: &rng) : nil   // drop(keys), applied as the attention reads them
            return tape.additiveAttention(keys: keys, query: drop(query, rng: &rng), v: p["v_\(part)"]!, mask: masked ? mask : nil, steps: steps,
                                          keysDropout: keysDropout)
        }

        func drop(_ v: Variable, rng: inout SeededGenerator) -> Variable {
            training ? Dropout.apply(v, rate: dropout, tape: tape, rng: &rng) : v
        }

        /// log(P(repeat), P(explore)) per row: the unmasked attention's context through W_c.
        func logMode(rng: inout SeededGenerator) -> Variable {
            let context = tape.weightedSumSteps(all, weights: attend("re", masked: false, rng: &rng), steps: steps)
            return tape.logSoftmaxRows(tape.matmul(context, p["W_c"]!))
        }
    }

    func memory(_ batch: SequenceBatch, _ p: [String: Variable], tape: Tape, training: Bool) -> Memory {
        let input = batch.padded(to: sequences?.maxLength ?? batch.width), steps = input.width
        let items = input.timeMajorItems
        let x = tape.gather(p["item_embedding"]!, rows: items, padding: input.padding, readsPaddingRow: true)
        let all = tape.gru(x, wInput: p["gru.input"]!, wHidden: p["gru.hidden"]!, biases: (p["gru.input_bias"]!, p["gru.hidden_bias"]!),
                           stepCounts: Array(repeating: input.count, count: steps))
        return Memory(all: all, last: tape.gather(all, rows: input.lastTimeMajorRows), steps: steps, items: items, mask: input.timeMajorMask,
                      p: p, tape: tape, training: training, dropout: dropout)
    }

    func forward(_ batch: SequenceBatch, _ p: [String: Variable], tape: Tape, training: Bool, rng: inout SeededGenerator) -> Pass {
        let m = memory(batch, p, tape: tape, training: training)
        let logMode = m.logMode(rng: &rng)
        let repeatWeights = m.attend("r", masked: true, rng: &rng)
        let exploreContext = tape.weightedSumSteps(m.all, weights: m.attend("e", masked: true, bias: true, rng: &rng), steps: m.steps)
        let explore = m.drop(tape.matmul(tape.concatColumns([exploreContext, m.last]), p["explore"]!), rng: &rng)
        return Pass(logMode: logMode, mode: tape.exp(logMode), repeatWeights: repeatWeights, explore: explore, items: m.items)
    }

    public func loss(_ batch: TrainingBatch, _ p: [String: Variable], tape: Tape, rng: inout SeededGenerator) -> Variable {
        let examples = SequenceBatch(examples: examples(of: batch), of: sequences!)
        let pass = forward(examples, p, tape: tape, training: true, rng: &rng)
        let targets = examples.targets!
        let loss = tape.repeatExploreNLL(mode: pass.mode, repeatWeights: pass.repeatWeights, explore: pass.explore, items: pass.items,
                                         padding: examples.padding, targets: targets)
        guard jointTrain else { return loss }
        // RecBole's repeat_explore_loss multiplies a B × 1 indicator by a length-B log-probability,
        // which broadcasts to B × B: its mean is (share of repeats) × mean log P(repeat), and
        // likewise for explore. That is what RecBole trains, so it is what this does.
        let b = targets.count, steps = pass.items.count / max(1, b)
        let repeats = (0..<b).count { r in (0..<steps).contains { pass.items[$0 * b + r] == targets[r] } }
        let share = Float(repeats) / Float(max(1, b))
        let weights = Matrix(rows: b, columns: 2, values: Array((0..<b).map { _ in [share, 1 - share] }.joined()))
        return tape.add(loss, tape.affine(tape.mean(tape.mul(pass.logMode, tape.constant(weights))), scale: -1))
    }

    /// P(i) for every item of the catalogue: the explore block times P(explore), the repeat
    /// attention times P(repeat) added onto the rows' own items.
    public func scores(for rows: ArraySlice<Int32>, of queries: SequenceQueries, into block: inout Matrix, compute: Compute) {
        score(rows, of: queries, into: &block, repeatModes: nil, compute: compute)
    }

    /// The scores, and each row's P(repeat) from the same pass.
    public func scores(for rows: ArraySlice<Int32>, of queries: SequenceQueries, into block: inout Matrix,
                       repeatModes: UnsafeMutableBufferPointer<Float>, compute: Compute) {
        score(rows, of: queries, into: &block, repeatModes: repeatModes, compute: compute)
    }

    func score(_ rows: ArraySlice<Int32>, of queries: SequenceQueries, into block: inout Matrix, repeatModes: UnsafeMutableBufferPointer<Float>?,
               compute: Compute) {
        let batch = SequenceBatch(rows: rows, of: queries)
        let tape = Tape(compute: compute)
        var rng = SeededGenerator(seed: 0, stream: 0)   // nothing is drawn outside training
        let pass = forward(batch, tape.leaves(parameters, trainable: { _ in false }), tape: tape, training: false, rng: &rng)
        let steps = pass.items.count / max(1, batch.count)
        RepeatExplore.scores(logits: pass.explore.value, mode: pass.mode.value, repeatWeights: pass.repeatWeights.value, items: pass.items,
                             padding: batch.padding, steps: steps, into: &block, compute: compute)
        if let repeatModes { for r in 0..<rows.count { repeatModes[r] = pass.mode.value[r, 0] } }
    }

    /// Per example: the GRU over L steps (2·3H·(d + H) forward, twice back), three attentions
    /// (2·2H² per step each way), the explore logits 2·2H·(items + 1) each way; validation the
    /// explore logits for every query.
    public func cost(_ s: WorkShape) -> ModelCost? {
        let (d, h, n) = (Double(embeddingSize), Double(hiddenSize), Double(s.items + 1))
        let steps = Double(sequences?.maxLength ?? 50)
        let perExample = 3 * (steps * (6 * h * (d + h) + 3 * 2 * h * h) + 4 * h * n)
        let flops = Double(s.trainInteractions) * perExample + 4 * Double(s.users) * Double(s.items) * h
        return ModelCost(nominal: flops, executed: flops, scoringInner: 2 * hiddenSize)
    }
}
