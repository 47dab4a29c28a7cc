import Foundation
import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// NAIS (He et al. 2018, "NAIS: Neural Attentive Item Similarity Model for Recommendation"),
/// as RecBole 1.2.1 trains it: an item-based model whose user is the attention-weighted sum
/// of the similarities between the target and the user's train items.
///
///     for target i and the items j the user had in train (RecBole keeps i itself among them):
///       s_j = p_j · q_i                                   (p: source, q: target embeddings)
///       a_j = wᵀ ReLU(W (p_j ⊙ q_i) + b)                  (`algorithm: prod`; `concat`: W [p_j | q_i])
///       z(u, i) = n_u^{−α} Σ_j e^{a_j} s_j / (Σ_j e^{a_j})^β + b_i
///     loss = BCE(σ(z), label) over positives and drawn negatives (uniform by default)
///            + λ₁ ‖P‖ + λ₂ ‖Q‖ + λ₃ ‖W‖                  (`reg_weights`; Frobenius norms, not squared)
///
/// Embeddings N(0, 0.01²), W Xavier-normal, b and the item biases 0, w all ones (RecBole's
/// init). Full ranking attends over the user's history once per candidate: in the AVX2 build
/// (`prod`), each candidate's logits made and reduced in registers (`ProductAttention`); else per
/// user one GEMM of an item block with every history item's scaled W, in blocks of bounded size.
public struct NAIS: PointwiseModel, ScoresWhenPrepared {
    public static let name = "NAIS"
    public static let summary = "Neural attentive item similarity: attention over the user's items, smoothed by β (He et al. 2018)"
    public static let kind = ModelKind.attention
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(64),
        ConfigKey("weight_size", "int", .int(64), "NAIS: width of the attention network's hidden layer."),
        ConfigKey("algorithm", "prod or concat", .string("prod"), "NAIS: the attention network's input, p_j ⊙ q_i (prod) or [p_j | q_i] (concat)."),
        SharedKeys.regWeightList([1e-7, 1e-7, 1e-5]),
        SharedKeys.alpha(0),
        SharedKeys.beta(0.5).searched(.uniform(low: 0, high: 1)),
        ConfigKey("split_to", "int", .int(0),
                  "NAIS: least number of item blocks scored per user (0: as few as the 32 MiB scratch per block allows; RecBole's memory knob). "
                    + "The AVX2 build's prod scorer keeps no block and ignores it."),
        ConfigKey("pretrain_path", "str or null", .null,
                  "NAIS: a pre-trained FISM model to start from (RecBole's option; not supported, refused unless null)."),
    ]
    public static let testSettings: [[String: ConfigValue]] = [
        ["embedding_size": .int(3), "weight_size": .int(4), "reg_weights": .list([.double(0.01), .double(0.02), .double(0.03)])],
        ["embedding_size": .int(4), "weight_size": .int(3), "algorithm": .string("concat"), "alpha": .double(0.5), "beta": .double(1), "split_to": .int(3)],
        ["embedding_size": .int(2), "weight_size": .int(2), "beta": .double(2), "split_to": .int(50)],   // more blocks than items: one item each
        ["embedding_size": .int(5), "weight_size": .int(17), "alpha": .double(0.5), "beta": .double(0.8)],   // prod: padded panels, n^−α
    ]

    /// Scratch for one block of attention logits (items × history × weight_size floats).
    static let blockBytes = 32 << 20

    let width: Int, hidden: Int, concat: Bool, regWeights: [Float], alpha: Float, beta: Float, splitTo: Int
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var sampler: PointwiseSampler?
    /// Each user's train items, one entry per interaction (RecBole's history matrix).
    var history = UserHistories()

    public init(parameters: ModelParameters) throws {
        width = try parameters.int("embedding_size", in: 1...4096)
        hidden = try parameters.int("weight_size", in: 1...4096)
        concat = try parameters.choice("algorithm", of: ["prod", "concat"]) == "concat"
        regWeights = try parameters.doubleList("reg_weights", in: 0...1e6).map(Float.init)
        guard regWeights.count == 3 else { throw parameters.invalid("reg_weights", "needs 3 weights (source embeddings, target embeddings, attention)") }
        alpha = Float(try parameters.double("alpha", in: 0...10))
        beta = Float(try parameters.double("beta", in: 0...10))
        splitTo = try parameters.int("split_to", in: 0...1_000_000)
        if let path = try parameters.optionalString("pretrain_path") {
            throw parameters.invalid("pretrain_path",
                                     "starting from a pre-trained model ('\(path)') is not supported: NAIS trains from RecBole's initialisation")
        }
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        prepareSampler(data, context: context)
        history = UserHistories(data.trainMatrix)
        var initial = Parameters()
        initial.add("item_src", Initializer.normal(rows: data.itemCount, columns: width, std: 0.01, rng: &rng))
        initial.add("item_dst", Initializer.normal(rows: data.itemCount, columns: width, std: 0.01, rng: &rng))
        initial.add("attention.weight", Initializer.xavierNormal(fanIn: concat ? 2 * width : width, fanOut: hidden, rng: &rng))
        initial.add("attention.bias", Matrix(rows: 1, columns: hidden))
        initial.add("attention.output", Matrix(rows: hidden, columns: 1, values: [Float](repeating: 1, count: hidden)))
        initial.add("item_bias", Matrix(rows: data.itemCount, columns: 1))
        return initial
    }

    public func logits(users: [Int32], items: [Int32], _ p: [String: Variable], tape: Tape, dropout: inout SeededGenerator?) -> Variable {
        var offsets = [0], rows: [Int32] = [], targets: [Int32] = []
        for (u, i) in zip(users, items) {
            let h = history.items(of: Int(u))
            rows.append(contentsOf: h)
            targets.append(contentsOf: repeatElement(i, count: h.count))
            offsets.append(rows.count)
        }
        let source = tape.gather(p["item_src"]!, rows: rows), target = tape.gather(p["item_dst"]!, rows: targets)
        let input = concat ? tape.concatColumns([source, target]) : tape.mul(source, target)
        let attention = tape.matmul(tape.relu(tape.linear(input, p["attention.weight"]!, p["attention.bias"]!)), p["attention.output"]!)
        var z = tape.smoothedAttention(logits: attention, values: tape.rowDot(source, target), offsets: offsets, beta: beta)
        if alpha != 0 {
            let coefficients = users.map { Foundation.pow(Float(max(1, history.count(of: Int($0)))), -alpha) }
            z = tape.mul(z, tape.constant(Matrix(rows: users.count, columns: 1, values: coefficients)))
        }
        return tape.add(z, tape.gather(p["item_bias"]!, rows: items))
    }

    /// Σ_k λ_k ‖W_k‖ over the source and target embeddings and the attention weight.
    public func penalty(_ p: [String: Variable], tape: Tape) -> Variable? {
        let terms = zip(["item_src", "item_dst", "attention.weight"], regWeights).compactMap { normPenalty([$0], weight: $1, p, tape: tape) }
        return terms.first.map { terms.dropFirst().reduce($0) { tape.add($0, $1) } }
    }

    /// Per training row (a positive or a negative of user u): u's n_u history rows through the
    /// attention layer, forward and backward; validation: every user's history against every item.
    /// Σ_u n_u² is bounded below by (Σ_u n_u)² / users, the figure used here.
    public func cost(_ s: WorkShape) -> ModelCost? {
        let n = Double(s.trainInteractions), squares = n * n / Double(max(1, s.users))
        let layer = Double((concat ? 2 : 1) * width * hidden + hidden + width)
        let flops = Double(1 + s.negatives) * squares * 3 * 2 * layer + 2 * n * Double(s.items) * (concat ? Double(hidden + width) : layer)
        return ModelCost(nominal: flops, executed: flops)
    }

    public func preparedForScoring(compute: Compute) -> any Scorer {
        let scorer = NAISScorer(parameters: parameters, history: history, concat: concat, alpha: alpha, beta: beta,
                                splitTo: splitTo, blockBytes: Self.blockBytes)
        return PreparedScores { users, block, compute in scorer.scores(for: users, into: &block, compute: compute) }
    }
}

/// Each user's train items, one entry per interaction, in CSR form.
struct UserHistories: Sendable {
    private var starts: [Int] = [0], items: [Int32] = []

    init() {}

    /// From a users × items count matrix: item j listed count times.
    init(_ counts: SparseMatrix) {
        for u in 0..<counts.rows {
            for e in counts.entries(ofRow: u) {
                items.append(contentsOf: repeatElement(counts.columnIndices[e], count: max(1, Int(counts.values[e].rounded()))))
            }
            starts.append(items.count)
        }
    }

    func items(of user: Int) -> ArraySlice<Int32> { items[starts[user]..<starts[user + 1]] }
    func count(of user: Int) -> Int { starts[user + 1] - starts[user] }
    var longest: Int { zip(starts, starts.dropFirst()).map { $1 - $0 }.max() ?? 0 }
}

/// NAIS's full ranking: for each user, items in blocks; a block's attention logits for every
/// (item, history item) come from one GEMM (`prod`: the block's target embeddings times
/// [diag(p_1) W | … | diag(p_n) W]; `concat`: the two halves of W apart, added per pair).
/// In the AVX2 build, `prod` instead makes and reduces each target's logits in registers
/// (`ProductAttention`), with no block.
struct NAISScorer: Sendable {
    let source: Matrix, target: Matrix, weight: Matrix, bias: [Float], output: [Float], itemBias: [Float]
    let history: UserHistories, concat: Bool, alpha: Float, beta: Float, splitTo: Int, blockBytes: Int
    let fused: ProductAttention?

    init(parameters p: Parameters, history: UserHistories, concat: Bool, alpha: Float, beta: Float, splitTo: Int, blockBytes: Int,
         kernels: KernelSet = .current) {
        source = p["item_src"]; target = p["item_dst"]; weight = p["attention.weight"]
        bias = p["attention.bias"].values; output = p["attention.output"].values; itemBias = p["item_bias"].values
        self.history = history; self.concat = concat; self.alpha = alpha; self.beta = beta; self.splitTo = splitTo; self.blockBytes = blockBytes
        fused = concat ? nil : ProductAttention(weight: weight, bias: bias, output: output, kernels: kernels)
    }

    /// Items per block for a history of n: the logits fit `blockBytes`, and there are at least `split_to` blocks.
    func blockSize(history n: Int) -> Int {
        let items = target.rows, perItem = 4 * max(1, n) * bias.count
        var size = max(1, min(items, blockBytes / perItem))
        if splitTo > 0 { size = min(size, (items + splitTo - 1) / splitTo) }
        return size
    }

    func scores(for users: ArraySlice<Int32>, into block: inout Matrix, compute: Compute) {
        let d = source.columns, hidden = bias.count
        for (row, u) in users.enumerated() {
            let h = Array(history.items(of: Int(u))), n = h.count
            let coefficient = n == 0 ? 1 : Foundation.pow(Float(n), -alpha)
            let p = RowKernels.gather(source, rows: h)
            if let fused, n > 0 {
                scoreFused(fused, history: p, coefficient: coefficient, into: &block, row: row, compute: compute)
                continue
            }
            // prod: [diag(p_j) W]_j side by side (d × n·hidden); concat: the history's half p W_top.
            var weights = Matrix(rows: concat ? n : d, columns: concat ? hidden : n * hidden)
            if concat {
                weights = BLAS.gemm(p, weight.rows(0..<d), compute: compute)
            } else {
                for k in 0..<d { for j in 0..<n { for c in 0..<hidden { weights.values[k * n * hidden + j * hidden + c] = p[j, k] * weight[k, c] } } }
            }
            let size = blockSize(history: n)
            for start in stride(from: 0, to: target.rows, by: size) {
                let t = target.rows(start..<min(target.rows, start + size))
                let similarity = BLAS.gemm(t, p, transposeB: true, compute: compute)      // items × n
                let logits = concat ? BLAS.gemm(t, weight.rows(d..<2 * d), compute: compute) : BLAS.gemm(t, weights, compute: compute)
                attend(logits: logits, history: concat ? weights : nil, similarity: similarity, n: n, coefficient: coefficient,
                       into: &block, row: row, firstItem: start, compute: compute)
            }
        }
    }

    /// Row `row` of the block by `ProductAttention`, the items in fixed chunks over the workers.
    func scoreFused(_ fused: ProductAttention, history p: Matrix, coefficient: Float, into block: inout Matrix, row: Int, compute: Compute) {
        let columns = block.columns, n = p.rows
        block.values.withUnsafeMutableBufferPointer { out in
            let shared = UnsafeShared(out.baseAddress!)   // workers write disjoint items of one row
            compute.forEachChunk(count: target.rows, chunkSize: 64) { items in
                fused.forEachTarget(items, of: target, history: p) { i, a, s in
                    shared.value[row * columns + i] = coefficient * pooled(a, similarity: s, n: n) + itemBias[i]
                }
            }
        }
    }

    /// The smoothed attention over j: Σ_j e^{a_j} s_j / (Σ_j e^{a_j})^β, shifted by the largest a_j,
    /// eight lanes at a time (a libm exp per history item cost as much as the fused logits).
    func pooled(_ a: UnsafePointer<Float>, similarity s: UnsafePointer<Float>, n: Int) -> Float {
        guard n > 0 else { return 0 }
        var top = a[0]
        for j in 1..<n { top = max(top, a[j]) }
        let shift = Lanes(repeating: top)
        var total = Lanes(), weighted = Lanes()
        for j in stride(from: 0, to: n, by: 8) {
            var e = Lanes.expNonPositive(Lanes.load(a, j, count: n) - shift)
            if j + 8 > n { for l in (n - j)..<8 { e[l] = 0 } }   // lanes past the history add nothing
            total += e; weighted += e * Lanes.load(s, j, count: n)
        }
        return Foundation.exp((1 - beta) * top - beta * Foundation.log(total.total)) * weighted.total
    }

    /// Per item of the block: a_j = wᵀ ReLU(logits + b) (concat: + the history's half), then
    /// the smoothed attention over j (shifted by the largest a_j), times n^{−α}, plus the item's bias.
    func attend(logits: Matrix, history: Matrix?, similarity: Matrix, n: Int, coefficient: Float,
                into block: inout Matrix, row: Int, firstItem: Int, compute: Compute) {
        let hidden = bias.count, columns = block.columns
        block.values.withUnsafeMutableBufferPointer { out in
            let shared = UnsafeShared(out.baseAddress!)   // workers write disjoint items of one row
            compute.forEachChunk(count: logits.rows, chunkSize: 64) { items in
                var a = [Float](repeating: 0, count: n)
                for r in items {
                    for j in 0..<n {
                        var s: Float = 0
                        for c in 0..<hidden {
                            let x = (history == nil ? logits.values[r * n * hidden + j * hidden + c]
                                                    : logits.values[r * hidden + c] + history!.values[j * hidden + c]) + bias[c]
                            s += max(0, x) * output[c]
                        }
                        a[j] = s
                    }
                    let value = a.withUnsafeBufferPointer { a in
                        similarity.values.withUnsafeBufferPointer { pooled(a.baseAddress!, similarity: $0.baseAddress! + r * n, n: n) }
                    }
                    shared.value[row * columns + firstItem + r] = coefficient * value + itemBias[firstItem + r]
                }
            }
        }
    }
}
