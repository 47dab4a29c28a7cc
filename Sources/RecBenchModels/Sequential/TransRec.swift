import Foundation
import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// TransRec (He, Kang and McAuley 2017, "Translation-based Recommendation"), as RecBole
/// 1.2.1 builds it:
///
///     s = U_u + T + E[l]                         (l the last item: the user translates from it)
///     x̂(u, l, j) = β_j − ‖s − E_j‖
///     loss = −mean log σ(x̂(u, l, i) − x̂(u, l, j)) + Σ|T_k|      (BPR, one uniform j ≠ i)
///     score(·) = β − √max(0, ‖s‖² + ‖E‖² − 2 s · Eᵀ)             (one GEMM, item norms once)
///
/// RecBole's `reg_loss(T)` iterates over T's scalars, so its penalty is the L1 norm of T
/// with weight 1, and that is what trains here; its embedding terms act on detached tensors
/// (no gradient) and are left out. U, E and β xavier normal over RecBole's row counts
/// (padding included), T zero.
public struct TransRec: SequentialModel, NextItemLossModel {
    public static let name = "TransRec"
    public static let summary = "Translation-based: the user is a translation from the last item; items near it, plus a popularity bias, come next"
    public static let kind = ModelKind.factorisation
    public static let parameters: [ConfigKey] = [SharedKeys.embeddingSize(64)]
    public static let testSettings: [[String: ConfigValue]] = [["embedding_size": .int(3)]]

    let embeddingSize: Int
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var sequences: SequenceData?
    /// Pairwise by construction (RecBole's `input_type`), without a `loss_type` key.
    public var lossType: NextItemLoss { .bpr }

    public init(parameters: ModelParameters) throws {
        embeddingSize = try parameters.int("embedding_size", in: 1...4096)
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        prepareSequences(data, context: context)
        let (users, items, d) = (data.userCount, data.itemCount, embeddingSize)
        var initial = Parameters()
        initial.add("user_embedding", Initializer.normal(rows: users, columns: d, std: (2 / Float(users + 1 + d)).squareRoot(), rng: &rng))
        initial.add("item_embedding", Initializer.xavierNormal(fanIn: items + 1, fanOut: d, rng: &rng))   // row `items`: padding
        initial.add("bias", Initializer.xavierNormal(fanIn: items + 1, fanOut: 1, rng: &rng))
        initial.add("T", Matrix(rows: 1, columns: d))
        return initial
    }


    /// s = U_u + T + E[l] per row.
    func translated(_ batch: SequenceBatch, _ p: [String: Variable], tape: Tape) -> Variable {
        let t = tape.gather(p["T"]!, rows: [Int32](repeating: 0, count: batch.count))
        return tape.add(tape.add(tape.gather(p["user_embedding"]!, rows: batch.users), t),
                        tape.gather(p["item_embedding"]!, rows: batch.lastItems, padding: batch.padding, readsPaddingRow: true))
    }

    /// β_j − ‖s − E_j‖ for each row's item j.
    func score(_ s: Variable, _ items: [Int32], _ p: [String: Variable], tape: Tape) -> Variable {
        let difference = tape.sub(s, tape.gather(p["item_embedding"]!, rows: items))
        return tape.sub(tape.gather(p["bias"]!, rows: items), tape.sqrt(tape.rowDot(difference, difference)))
    }

    public func loss(_ batch: TrainingBatch, _ p: [String: Variable], tape: Tape, rng: inout SeededGenerator) -> Variable {
        let examples = SequenceBatch(examples: lossExamples(of: batch), of: sequences!)
        let targets = examples.targets!, items = sequences!.log.itemCount
        let drawn = batch.negativeItems.draw(otherThan: targets, items: items, rng: &rng)
        let s = translated(examples, p, tape: tape)
        let bpr = tape.affine(tape.mean(tape.logSigmoid(tape.sub(score(s, targets, p, tape: tape), score(s, drawn, p, tape: tape)))), scale: -1)
        // Σ|T_k| as T · sign(T) (its subgradient; 0 where T_k = 0, as torch's).
        let t = p["T"]!
        let signs = Matrix(rows: 1, columns: t.value.columns, values: t.value.values.map { $0 > 0 ? 1 : ($0 < 0 ? -1 : 0) })
        return tape.add(bpr, tape.affine(tape.mean(tape.mul(t, tape.constant(signs))), scale: Float(t.value.columns)))
    }

    public func scores(for rows: ArraySlice<Int32>, of queries: SequenceQueries, into block: inout Matrix, compute: Compute) {
        let tape = Tape(compute: compute)
        let p = tape.leaves(parameters, trainable: { _ in false })
        let s = translated(SequenceBatch(rows: rows, of: queries), p, tape: tape).value
        let n = block.columns
        let table = leadingRows(of: "item_embedding", n), bias = parameters["bias"]
        BLAS.gemm(s, table, transposeB: true, into: &block, compute: compute)
        let itemNorms = (0..<n).map { j in (0..<table.columns).reduce(Float(0)) { $0 + table[j, $1] * table[j, $1] } }
        for r in 0..<rows.count {
            let sNorm = (0..<s.columns).reduce(Float(0)) { $0 + s[r, $1] * s[r, $1] }
            for j in 0..<n { block[r, j] = bias.values[j] - max(0, sNorm + itemNorms[j] - 2 * block[r, j]).squareRoot() }
        }
    }

    /// Per example and draw: three gathers and two d-wide distances (≈ 30·d with their
    /// gradients); validation rows × items × 2d.
    public func cost(_ s: WorkShape) -> ModelCost? {
        let d = Double(embeddingSize)
        let flops = 30 * Double(s.trainInteractions) * d * Double(s.negatives) + 2 * Double(s.users) * Double(s.items) * d
        return ModelCost(nominal: flops, executed: flops, scoringInner: embeddingSize)
    }
}
