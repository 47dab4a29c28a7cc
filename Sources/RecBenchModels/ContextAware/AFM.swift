import Foundation
import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// AFM (Xiao et al. 2017, "Attentional Factorization Machines"), as RecBole 1.2.1's `AFM`
/// trains it: FM's pairwise interactions weighted by an attention network.
///
///     x_fg = e_f ⊙ e_g  (f < g),  a = softmax_fg(hᵀ ReLU(W x_fg))       (W: `attention_size` × d, no bias)
///     z(u, i) = b + Σ_f w_f + pᵀ dropout(Σ_fg a_fg x_fg)
///     loss = BCE(σ(z), label) + λ ‖W‖                                      (`reg_weight`, unsquared)
///
/// Embeddings and W Xavier-normal; h and p N(0, 1) (RecBole's `torch.randn`, which its init
/// leaves alone). Training: the pairs, their attention and its pooling are one op (`pairAttention`).
/// Full ranking: pairs within one side give that side's constant logits and values; each cross
/// pair's logits for every item come from NAIS's fused attention network with e_f(u) as the target
/// (one GEMM per user, E_g · diag(e_f(u)) W, outside the AVX2 build), then the softmax per item.
public struct AFM: ContextModel, ScoresWhenPrepared {
    public static let name = "AFM"
    public static let summary = "Attentional FM: pairwise field interactions weighted by an attention network (Xiao et al. 2017)"
    public static let kind = ModelKind.attention
    public static let family = ModelFamily.contextAware
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(10),
        SharedKeys.attentionSize(25),
        SharedKeys.dropoutProb(0.3),
        SharedKeys.regWeight(2),
    ]
    public static let testSettings: [[String: ConfigValue]] = [
        ["embedding_size": .int(3), "attention_size": .int(4), "dropout_prob": .double(0.2), "reg_weight": .double(0.1)],
        ["embedding_size": .int(10), "attention_size": .int(25)],   // the defaults' shapes: lane tails, two register panels
    ]

    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var inputs: ContextInputs?
    public var sampler: PointwiseSampler?
    let width: Int, attention: Int, dropout: Float, regWeight: Float

    public init(parameters: ModelParameters) throws {
        width = try parameters.int("embedding_size", in: 1...1024)
        attention = try parameters.int("attention_size", in: 1...4096)
        dropout = Float(try parameters.double("dropout_prob", in: 0...0.99))
        regWeight = Float(try parameters.double("reg_weight", in: 0...1e6))
    }

    /// The field pairs f < g, in RecBole's order.
    var pairs: [(Int, Int)] {
        let f = inputs?.fieldCount ?? 0
        return (0..<f).flatMap { a in ((a + 1)..<f).map { (a, $0) } }
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        let inputs = prepareInputs(data, context: context)
        var initial = Parameters()
        initial.add("embedding", inputs.table(width: width, columns: width, rng: &rng))
        FirstOrderTerm.initialize(&initial, inputs, rng: &rng)
        initial.add("attention.weight", Initializer.xavierNormal(fanIn: width, fanOut: attention, rng: &rng))
        initial.add("attention.h", Initializer.normal(rows: attention, columns: 1, std: 1, rng: &rng))
        initial.add("p", Initializer.normal(rows: 1, columns: width, std: 1, rng: &rng))
        return initial
    }

    public func logits(users: [Int32], items: [Int32], _ p: [String: Variable], tape: Tape, dropout rng: inout SeededGenerator?) -> Variable {
        let e = inputs!.embeddedSideBySide(users: users, items: items, p, tape: tape), batch = users.count
        // p ⊙ the pooled vector's dropout mask, one row per example: the same for all its pairs.
        let q = Dropout.apply(tape.matmul(tape.constant(Matrix(rows: batch, columns: 1, repeating: 1)), p["p"]!), rate: dropout, tape: tape, rng: &rng)
        let pooled = tape.pairAttention(e, width: width, pairs: pairs, weight: p["attention.weight"]!, output: p["attention.h"]!, values: q)
        return tape.add(FirstOrderTerm.logits(inputs!, users: users, items: items, p, tape: tape), pooled)
    }

    /// λ ‖W‖ of the attention layer.
    public func penalty(_ p: [String: Variable], tape: Tape) -> Variable? { normPenalty(["attention.weight"], weight: regWeight, p, tape: tape) }
}

extension AFM {
    /// The item-only pairs' logits and values for every item, once per evaluation pass; per
    /// user, its own pairs' and each cross pair's (the logits in registers by `ProductAttention`
    /// in the AVX2 build, else one GEMM over the items), then the softmax over the pairs per item.
    public func preparedForScoring(compute: Compute) -> any Scorer {
        let inputs = inputs!, entities = Array(0..<Int32(inputs.itemCount))[...]
        let wide = FirstOrderTerm.preparedScores(inputs, parameters: parameters, compute: compute)
        let items = embeddings(inputs.itemFields, entities: entities, compute: compute)
        let itemFields = Set(inputs.itemFields)
        let isOwn: @Sendable ((Int, Int)) -> Bool = { itemFields.contains($0.0) && itemFields.contains($0.1) }
        let own = pairs.filter(isOwn).map { attend(items[$0.0]!, items[$0.1]!) }
        let fused = ProductAttention(weight: parameters["attention.weight"], bias: [Float](repeating: 0, count: attention),
                                     output: parameters["attention.h"].values)
        return PreparedScores { [self] users, block, compute in
            wide.scores(for: users, into: &block, compute: compute)
            let user = embeddings(inputs.userFields, entities: users, compute: compute), columns = block.columns
            block.updateRows(compute: compute) { row, out in
                var terms = PairTerms(columns: columns, capacity: pairs.count)
                for t in own { terms.append(t.logits, t.values) }
                for (a, b) in pairs where !isOwn((a, b)) {
                    if let ua = user[a], let ub = user[b] {
                        let t = attend(ua.rows(row..<row + 1), ub.rows(row..<row + 1))
                        terms.append([Float](repeating: t.logits[0], count: columns), [Float](repeating: t.values[0], count: columns))
                    } else {
                        let (f, g) = user[a] != nil ? (a, b) : (b, a)
                        let t = cross(user[f]!.row(row), items[g]!, fused: fused)
                        terms.append(t.logits, t.values)
                    }
                }
                terms.addSoftmaxPooled(into: out)
            }
        }
    }

    func embeddings(_ fields: [Int], entities: ArraySlice<Int32>, compute: Compute) -> [Int: Matrix] {
        Dictionary(uniqueKeysWithValues: fields.map { ($0, inputs!.pooled($0, entities: entities, table: parameters["embedding"], compute: compute)) })
    }

    /// Row by row: the attention logit hᵀReLU(W(a ⊙ b)) and the value pᵀ(a ⊙ b).
    func attend(_ a: Matrix, _ b: Matrix) -> (logits: [Float], values: [Float]) {
        let x = Matrix(rows: a.rows, columns: width, values: zip(a.values, b.values).map { $0 * $1 })
        let hidden = BLAS.gemm(x, parameters["attention.weight"], compute: .serial).map(.serial) { Lanes.relu($0) }
        let h = parameters["attention.h"].values, p = parameters["p"].values
        return ((0..<a.rows).map { r in (0..<attention).reduce(Float(0)) { $0 + hidden[r, $1] * h[$1] } },
                (0..<a.rows).map { r in (0..<width).reduce(Float(0)) { $0 + x[r, $1] * p[$1] } })
    }

    /// A cross pair for one user's e_f and every item's e_g: the values from the items times
    /// p ⊙ e_f; the logits by `fused` (e_f the target, the items its history), else from one
    /// GEMM of the items with diag(e_f) W.
    func cross(_ ef: ArraySlice<Float>, _ items: Matrix, fused: ProductAttention?) -> (logits: [Float], values: [Float]) {
        let e = Array(ef), p = parameters["p"].values
        let values = BLAS.gemm(items, Matrix(rows: width, columns: 1, values: (0..<width).map { p[$0] * e[$0] }), compute: .serial).values
        if let fused {
            var logits = [Float](repeating: 0, count: items.rows)
            fused.forEachTarget(0..<1, of: Matrix(rows: 1, columns: width, values: e), history: items) { _, a, _ in
                logits.withUnsafeMutableBufferPointer { $0.baseAddress!.update(from: a, count: items.rows) }
            }
            return (logits, values)
        }
        let w = parameters["attention.weight"], h = parameters["attention.h"].values
        var scaled = w
        for k in 0..<width { for c in 0..<attention { scaled.values[k * attention + c] *= e[k] } }
        let hidden = BLAS.gemm(items, scaled, compute: .serial).map(.serial) { Lanes.relu($0) }
        return ((0..<items.rows).map { r in (0..<attention).reduce(Float(0)) { $0 + hidden[r, $1] * h[$1] } }, values)
    }
}

/// One user's pair terms for a row of items: each pair's logits and values, item by item.
struct PairTerms {
    let columns: Int
    var logits: [Float] = [], values: [Float] = []

    init(columns: Int, capacity terms: Int) {
        self.columns = columns
        logits.reserveCapacity(terms * columns); values.reserveCapacity(terms * columns)
    }

    mutating func append(_ l: [Float], _ v: [Float]) {
        precondition(l.count == columns && v.count == columns, "AFM: a pair term is not one row of the block")
        logits += l; values += v
    }

    /// out[j] += Σ_t softmax_t(logits[t, j]) · values[t, j], eight items at a time.
    func addSoftmaxPooled(into out: UnsafeMutablePointer<Float>) {
        let terms = logits.count / max(1, columns), n = columns
        logits.withUnsafeBufferPointer { lp in
            values.withUnsafeBufferPointer { vp in
                let (l, v) = (lp.baseAddress!, vp.baseAddress!)
                for j in stride(from: 0, to: n, by: 8) {
                    var top = Lanes(repeating: -Float.infinity)
                    for t in 0..<terms { top = Lanes.maximum(top, Lanes.load(l + t * n, j, count: n)) }
                    var total = Lanes(), weighted = Lanes()
                    for t in 0..<terms {
                        let w = Lanes.exp(Lanes.load(l + t * n, j, count: n) - top)
                        total += w; weighted += w * Lanes.load(v + t * n, j, count: n)
                    }
                    (Lanes.load(out, j, count: n) + weighted / total).store(out, j, count: n)
                }
            }
        }
    }
}
