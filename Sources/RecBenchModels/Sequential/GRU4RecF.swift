import Foundation
import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// GRU4RecF (Hidasi et al. 2016, "Parallel Recurrent Neural Network Architectures for
/// Feature-rich Session-based Recommendations", the parallel architecture), as RecBole 1.2.1
/// builds it.
///
///     x_t = dropout(E[s_t]);  h_t = GRU_items(x_t)                          (no biases)
///     f_t = [pool(F_k[tokens of s_t in column k]) for each selected column k]   (sum, mean or max)
///     g_t = GRU_features(f_t)                                               (no biases, no dropout)
///     s = W_d [h_len, g_len] + b_d
///     loss = CE(s · Eᵀ, next item);  score(·) = s · E[items]ᵀ           (features only shape s)
///
/// Columns in RecBole's order (tokens, token sequences, floats); an item without a row in
/// `.item` has padding features (a note says how many): the padding token, an empty sequence,
/// a float column's mean. Mean pooling divides by the count, not RecBole's count + 1e-8; max
/// pooling over no tokens gives RecBole's −1e9; a scalar float is value · e under every mode. Initialisation as
/// RecBole's: E, the feature tables (the token columns' shared table's std over all its rows)
/// and W_d xavier normal, b_d 0, both GRUs torch's default U(±1/√H).
public struct GRU4RecF: TiedNextItemModel {
    public static let name = "GRU4RecF"
    public static let summary = "GRU4Rec with item features: one GRU over the item embeddings, one over the items' pooled features, joined"
    public static let kind = ModelKind.recurrent
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(64), SharedKeys.hiddenSize(128), SharedKeys.gruLayers(1), SharedKeys.dropoutProb(0.3),
        ConfigKey("selected_features", "list of string", .list([.string("class")]),
                  "GRU4RecF: the .item columns it reads (load_col.item must load them; a float column only with numerical_features)."),
        ConfigKey("pooling_mode", "sum, mean or max", .string("sum"), "GRU4RecF: how a token-sequence column's embeddings are pooled per item."),
        SharedKeys.lossType("CE"),
    ]
    public static let testSettings: [[String: ConfigValue]] = [
        ["embedding_size": .int(3), "hidden_size": .int(4), "dropout_prob": .double(0), "selected_features": .list([.string("genre"), .string("price")])],
        ["embedding_size": .int(3), "hidden_size": .int(2), "dropout_prob": .double(0), "selected_features": .list([.string("genre")]),
         "pooling_mode": .string("max"), "loss_type": .string("BPR")],
        ["embedding_size": .int(3), "hidden_size": .int(2), "dropout_prob": .double(0), "selected_features": .list([.string("genre")]),
         "pooling_mode": .string("mean"), "num_layers": .int(2)],
    ]
    public static let readsFeatures = true

    let embeddingSize: Int, hiddenSize: Int, layers: Int
    let dropout: Float
    let selected: [String], pooling: String
    public let lossType: NextItemLoss
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var sequences: SequenceData?
    var features: SelectedItemFeatures?

    public init(parameters: ModelParameters) throws {
        embeddingSize = try parameters.int("embedding_size", in: 1...4096)
        hiddenSize = try parameters.int("hidden_size", in: 1...4096)
        layers = try parameters.int("num_layers", in: 1...16)
        dropout = Float(try parameters.double("dropout_prob", in: 0...0.99))
        selected = try parameters.stringList("selected_features")
        guard !selected.isEmpty, Set(selected).count == selected.count else {
            throw parameters.invalid("selected_features", "needs one or more distinct .item columns")
        }
        pooling = try parameters.choice("pooling_mode", of: ["sum", "mean", "max"])
        lossType = try NextItemLoss(parameters)
    }

    /// Checks the selected columns against the data (one clear error before any training).
    public mutating func fit(_ data: TrainingData, context: FitContext) throws {
        let features = try SelectedItemFeatures(data.dataset, selected: selected, model: Self.name)
        if pooling == "max", let column = features.fields.first(where: \.floatSequence) {
            throw RecBenchError.config("pooling_mode", "max pooling of the float_seq column \(column.name) is not built (RecBole 1.2.1 takes "
                                       + "the largest value × embedding per dimension); use sum or mean, or leave the column out")
        }
        for note in features.notes { context.logger.notice("\(Self.name): \(note)") }
        self.features = features
        trainingSummary = try Trainer(context: context).train(&self, data: data)
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        prepareSequences(data, context: context)
        if features == nil { features = try? SelectedItemFeatures(data.dataset, selected: selected, model: Self.name) }
        guard let fields = features?.fields else { preconditionFailure("GRU4RecF: fit checks selected_features before training") }
        let (items, d, h) = (data.itemCount, embeddingSize, hiddenSize)
        var initial = Parameters()
        initial.add("item_embedding", Initializer.xavierNormal(fanIn: items + 1, fanOut: d, rng: &rng))   // row `items`: padding
        let tokenRows = fields.filter { $0.type == .token }.reduce(0) { $0 + $1.cardinality }
        let floatRows = fields.filter { $0.type == .float }.reduce(0) { $0 + $1.declaredRows }
        for (k, field) in fields.enumerated() {
            let tableRows = field.type == .token ? tokenRows : field.type == .float ? floatRows : field.cardinality
            initial.add("feature.\(k)", Initializer.normal(rows: field.cardinality, columns: d, std: (2 / Float(tableRows + d)).squareRoot(), rng: &rng))
        }
        let bound = 1 / Float(h).squareRoot()
        for (gru, width) in [("item_gru", d), ("feature_gru", d * fields.count)] {
            for l in 0..<layers {
                initial.add("\(gru).\(l).input", Initializer.uniform(rows: l == 0 ? width : h, columns: 3 * h, bound: bound, rng: &rng))
                initial.add("\(gru).\(l).hidden", Initializer.uniform(rows: h, columns: 3 * h, bound: bound, rng: &rng))
            }
        }
        initial.add("dense.weight", Initializer.xavierNormal(fanIn: 2 * h, fanOut: d, rng: &rng))
        initial.add("dense.bias", Matrix(rows: 1, columns: d))
        return initial
    }

    public func encode(_ batch: SequenceBatch, _ p: [String: Variable], tape: Tape, training: Bool, rng: inout SeededGenerator) -> Variable {
        let packing = batch.stepPacking
        var x = tape.gather(p["item_embedding"]!, rows: packing.items, padding: batch.padding)
        if training { x = Dropout.apply(x, rate: dropout, tape: tape, rng: &rng) }
        var f = tape.concatColumns(features!.fields.enumerated().map { k, field in
            switch pooling {
            case "max" where field.type != .float:   // RecBole pools no scalar float: value · e under every mode
                tape.pooledMax(p["feature.\(k)"]!, bags: field.sums, rows: packing.items, empty: -1e9)
            case "mean": tape.pooledLookup(p["feature.\(k)"]!, [(bags: field.means, rows: packing.items)])
            default: tape.pooledLookup(p["feature.\(k)"]!, [(bags: field.sums, rows: packing.items)])
            }
        })
        for l in 0..<layers {
            x = tape.gru(x, wInput: p["item_gru.\(l).input"]!, wHidden: p["item_gru.\(l).hidden"]!, stepCounts: packing.stepCounts)
            f = tape.gru(f, wInput: p["feature_gru.\(l).input"]!, wHidden: p["feature_gru.\(l).hidden"]!, stepCounts: packing.stepCounts)
        }
        let last = tape.concatColumns([tape.gather(x, rows: packing.lastRows), tape.gather(f, rows: packing.lastRows)])
        return tape.linear(last, p["dense.weight"]!, p["dense.bias"]!)
    }

    /// GRU4Rec's cost with a second GRU over F·d-wide feature rows. Executed: the real steps only
    /// (packed); nominal: every padded step, as RecBole runs it.
    public func cost(_ s: WorkShape) -> ModelCost? {
        let (d, h, f) = (Double(embeddingSize), Double(hiddenSize), Double(max(1, selected.count)))
        func flops(steps: Double) -> Double {
            let encoder = steps * 6 * h * (d + f * d + 2 * h * Double(layers)) + 4 * h * d
            return trainingFLOPs(s, encoder: encoder, width: d) + 2 * Double(s.users) * Double(s.items) * d
        }
        return ModelCost(nominal: flops(steps: Double(sequences?.maxLength ?? 50)), executed: flops(steps: sequences?.meanTrainInputLength ?? 50),
                         scoringInner: embeddingSize)
    }
}
