import Foundation
import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// SR-GNN (Wu et al. 2019, "Session-based Recommendation with Graph Neural Networks"), as
/// RecBole 1.2.1 builds it.
///
///     H = GatedGraphLayer^step(E[nodes])               (over the row's session graph)
///     h_t = H[node of s_t];  h_ℓ = h_len                 (a repeated item shares its node's vector)
///     α_t = w₃ᵀ σ(W₁ h_ℓ + b₁ + W₂ h_t + b₂)             (not normalised)
///     s = W_t [Σ_t α_t h_t, h_ℓ] + b_t
///     loss = CE(s · Eᵀ, next item);  score(·) = s · E[items]ᵀ
///
/// Every weight and bias, the item table's too, U(±1/√d): RecBole resets all its parameters so.
public struct SRGNN: TiedNextItemModel {
    public static let name = "SRGNN"
    public static let summary = "Graph next-item model: a gated GNN over the session's item graph, an attention readout and the last item"
    public static let kind = ModelKind.graph
    public static let parameters: [ConfigKey] = [SharedKeys.embeddingSize(64), GatedGraphLayer.stepKey, SharedKeys.lossType("CE")]
    public static let testSettings: [[String: ConfigValue]] = [
        ["embedding_size": .int(3)],
        ["embedding_size": .int(3), "step": .int(2), "loss_type": .string("BPR")],
    ]

    let embeddingSize: Int
    let gnn: GatedGraphLayer
    public let lossType: NextItemLoss
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var sequences: SequenceData?

    public init(parameters: ModelParameters) throws {
        embeddingSize = try parameters.int("embedding_size", in: 1...4096)
        gnn = try GatedGraphLayer(parameters, width: embeddingSize, nodeBiases: true)
        lossType = try NextItemLoss(parameters)
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        prepareSequences(data, context: context)
        let d = embeddingSize, bound = 1 / Float(d).squareRoot()
        let uniform = { (rows: Int, columns: Int, rng: inout SeededGenerator) in Initializer.uniform(rows: rows, columns: columns, bound: bound, rng: &rng) }
        var initial = Parameters()
        initial.add("item_embedding", uniform(data.itemCount + 1, d, &rng))   // row `items`: padding
        gnn.initialize(&initial, edge: uniform, rng: &rng)
        for (name, rows, columns) in [("one.weight", d, d), ("one.bias", 1, d), ("two.weight", d, d), ("two.bias", 1, d), ("three", d, 1),
                                      ("transform.weight", 2 * d, d), ("transform.bias", 1, d)] {
            initial.add(name, uniform(rows, columns, &rng))
        }
        return initial
    }

    public func encode(_ batch: SequenceBatch, _ p: [String: Variable], tape: Tape, training: Bool, rng: inout SeededGenerator) -> Variable {
        let graph = SessionGraph(batch)
        let nodes = gnn(tape.gather(p["item_embedding"]!, rows: graph.nodeItems, padding: batch.padding, readsPaddingRow: true), graph: graph, p, tape: tape)
        let steps = tape.gather(nodes, rows: graph.positionNodes)
        let last = tape.gather(nodes, rows: graph.lastNodes)
        let query = tape.gather(tape.linear(last, p["one.weight"]!, p["one.bias"]!), rows: graph.positionRows)
        let alpha = tape.matmul(tape.sigmoid(tape.add(query, tape.linear(steps, p["two.weight"]!, p["two.bias"]!))), p["three"]!)
        let pooled = tape.matmul(graph.readout.sum, tape.scaleRows(steps, by: alpha), transposed: graph.readout.transposed)
        return tape.linear(tape.concatColumns([pooled, last]), p["transform.weight"]!, p["transform.bias"]!)
    }

    /// Per example and real step: the graph layer (one node per step at most) and the
    /// readout's W₂ (2·d² each), ×3 with the pullback; the output product (`trainingFLOPs`); validation rows × items × 2d.
    public func cost(_ s: WorkShape) -> ModelCost? {
        let d = Double(embeddingSize)
        let steps = sequences?.meanTrainInputLength ?? 50
        let encoder = 2 * (steps * (gnn.multiplyAdds + d * d) + 3 * d * d)
        let flops = trainingFLOPs(s, encoder: encoder, width: d) + 2 * Double(s.users) * Double(s.items) * d
        return ModelCost(nominal: flops, executed: flops, scoringInner: embeddingSize)
    }
}
