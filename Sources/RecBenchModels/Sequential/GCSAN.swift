import Foundation
import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// GC-SAN (Xu et al. 2019, "Graph Contextualized Self-Attention Network for Session-based
/// Recommendation"), as RecBole 1.2.1 builds it.
///
///     H = GatedGraphLayer^step(E[nodes])                (SR-GNN's, without its node biases)
///     h_t = H[node of s_t];  h_ℓ = h_len
///     a = TransformerEncoder(h), causal;  a_ℓ = a_len    (no position embeddings, no input norm or dropout)
///     s = ω a_ℓ + (1 − ω) h_ℓ                            (ω = `weight`)
///     loss = CE(s · Eᵀ, next item) + reg_weight · ‖E‖ / rows(E)     (unsquared, the whole table)
///     score(·) = s · E[items]ᵀ
///
/// The graph layer's own tensors U(±1/√d); every linear map and the item table
/// N(0, initializer_range), biases 0 (RecBole's `_init_weights`, which overwrites the edge maps).
public struct GCSAN: TiedNextItemModel {
    public static let name = "GCSAN"
    public static let summary = "Graph next-item model: SR-GNN's gated GNN, then self-attention over its outputs, blended with the last item"
    public static let kind = ModelKind.graph
    public static let parameters: [ConfigKey] = TransformerEncoder.keys(dropout: 0.5) + [
        ConfigKey("weight", "float", .double(0.6), "GCSAN: weight ω of the self-attention's output against the graph's last item (0…1)."),
        GatedGraphLayer.stepKey, SharedKeys.regWeight(5e-5), SharedKeys.lossType("CE"),
    ]
    public static let testSettings: [[String: ConfigValue]] = [
        ["hidden_size": .int(4), "inner_size": .int(6), "n_layers": .int(1), "hidden_dropout_prob": .double(0), "attn_dropout_prob": .double(0),
         "reg_weight": .double(0.1)],
    ]

    let encoder: TransformerEncoder
    let gnn: GatedGraphLayer
    let std: Float, weight: Float, regWeight: Float
    public let lossType: NextItemLoss
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var sequences: SequenceData?

    public init(parameters: ModelParameters) throws {
        encoder = try TransformerEncoder(parameters)
        gnn = try GatedGraphLayer(parameters, width: encoder.width, nodeBiases: false)
        std = Float(try parameters.double("initializer_range", in: .leastNonzeroMagnitude...10))   // 0: every weight equal, nothing learns
        weight = Float(try parameters.double("weight", in: 0...1))
        regWeight = Float(try parameters.double("reg_weight", in: 0...1e6))
        lossType = try NextItemLoss(parameters)
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        prepareSequences(data, context: context)
        let d = encoder.width, std = self.std
        var initial = Parameters()
        initial.add("item_embedding", Initializer.normal(rows: data.itemCount + 1, columns: d, std: std, rng: &rng))   // row `items`: padding
        gnn.initialize(&initial, edge: { rows, columns, rng in
            rows == 1 ? Matrix(rows: 1, columns: columns) : Initializer.normal(rows: rows, columns: columns, std: std, rng: &rng)
        }, rng: &rng)
        encoder.initialize(&initial, std: std, rng: &rng)
        return initial
    }

    public func encode(_ batch: SequenceBatch, _ p: [String: Variable], tape: Tape, training: Bool, rng: inout SeededGenerator) -> Variable {
        let graph = SessionGraph(batch)
        let nodes = gnn(tape.gather(p["item_embedding"]!, rows: graph.nodeItems, padding: batch.padding, readsPaddingRow: true), graph: graph, p, tape: tape)
        let steps = tape.gather(nodes, rows: graph.positionNodes)
        let last = encoder(steps, lengths: graph.lengths, causal: true, reading: SequenceBatch.lastRows(graph.lengths), p, tape: tape,
                           training: training, rng: &rng)
        return tape.add(tape.affine(last, scale: weight), tape.affine(tape.gather(nodes, rows: graph.lastNodes), scale: 1 - weight))
    }

    public func loss(_ batch: TrainingBatch, _ p: [String: Variable], tape: Tape, rng: inout SeededGenerator) -> Variable {
        let examples = SequenceBatch(examples: lossExamples(of: batch), of: sequences!)
        let table = p["item_embedding"]!
        let loss = lossType(encode(examples, p, tape: tape, training: true, rng: &rng), table, targets: examples.targets!,
                            items: sequences!.log.itemCount, negatives: batch.negativeItems, tape: tape, rng: &rng)
        guard regWeight > 0 else { return loss }
        return tape.add(loss, tape.affine(tape.norm(table), scale: regWeight / Float(table.value.rows)))
    }

    /// Per example and real step: the graph layer and the transformer at the mean length,
    /// ×3 with the pullback; the output product (`trainingFLOPs`); validation rows × items × 2d. Executed: the
    /// transformer's last layer past its Q, K and V products on the one row read; nominal: on every row.
    public func cost(_ s: WorkShape) -> ModelCost? {
        let d = Double(encoder.width)
        let steps = sequences?.meanTrainInputLength ?? 50
        func flops(reading: Double?) -> Double {
            let encoded = 2 * (steps * gnn.multiplyAdds + encoder.multiplyAdds(steps: steps, reading: reading))
            return trainingFLOPs(s, encoder: encoded, width: d) + 2 * Double(s.users) * Double(s.items) * d
        }
        return ModelCost(nominal: flops(reading: nil), executed: flops(reading: 1), scoringInner: encoder.width)
    }
}
