import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// LightGCN (He et al. 2020, "LightGCN: Simplifying and Powering Graph Convolution Network
/// for Recommendation"), as RecBole 1.2.1 trains it.
///
///     Â = D^{−½} A D^{−½},  A = [[0, R], [Rᵀ, 0]] over users ∪ items  (R: binary train pairs)
///     E_{k+1} = Â E_k,  E = (E_0 + … + E_K) / (K + 1)                (`n_layers` = K)
///     for each train (u, i) and each of its `sample_num` drawn negatives j:
///         loss = −mean log σ(⟨e_u, e_i⟩ − ⟨e_u, e_j⟩)
///                + λ · (‖E_0[u]‖ + ‖E_0[i]‖ + ‖E_0[j]‖) / batch     (norms of the batch's rows;
///                  `require_pow`: λ · (‖E_0[u]‖² + ‖E_0[i]‖² + ‖E_0[j]‖²) / (2 · batch))
///     score(u, ·) = e_u · E_itemsᵀ
///
/// Every batch propagates the whole graph (sparse × dense products, forward and backward,
/// Â being its own transpose), as RecBole does.
public struct LightGCN: PairwiseModel, ScoresWhenPrepared {
    public static let name = "LightGCN"
    public static let summary = "Graph convolution without transforms: embeddings averaged over propagations on the normalised user-item graph, BPR loss"
    public static let kind = ModelKind.factorisation
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(64),
        SharedKeys.layerCount(2),
        SharedKeys.regWeight(1e-5),
        ConfigKey("require_pow", "bool", .bool(false),
                  "LightGCN: the penalty on squared norms, halved (RecBole's `require_pow`, a key of its overall.yaml that only LightGCN reads)."),
    ]
    public static let testSettings: [[String: ConfigValue]] = [["embedding_size": .int(3), "reg_weight": .double(0.1)],
                                                              ["embedding_size": .int(3), "reg_weight": .double(0.1), "require_pow": .bool(true)]]

    let embeddingSize: Int, layers: Int, regWeight: Float, squaredPenalty: Bool
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    var training = GraphTraining()

    public init(parameters: ModelParameters) throws {
        embeddingSize = try parameters.int("embedding_size", in: 1...4096)
        layers = try parameters.int("n_layers", in: 0...16)
        regWeight = Float(try parameters.double("reg_weight", in: 0...1e6))
        squaredPenalty = try parameters.bool("require_pow")
    }

    /// Xavier-uniform embeddings (RecBole's init); the normalised graph; the train pairs.
    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        training = GraphTraining(data)
        context.pairwiseNegatives(model: Self.name)
        var initial = Parameters()
        for (name, rows) in [("user_embedding", data.userCount), ("item_embedding", data.itemCount)] {
            initial.add(name, Initializer.uniform(rows: rows, columns: embeddingSize, bound: (6 / Float(rows + embeddingSize)).squareRoot(), rng: &rng))
        }
        return initial
    }

    public func exampleCount(_ data: TrainingData) -> Int { training.exampleCount }

    /// The layer-averaged embeddings of every user and item (users first).
    func propagated(_ p: [String: Variable], tape: Tape) -> Variable {
        tape.propagationMean(training.graph.symmetric, training.graph.nodes(p, tape: tape), layers: layers, transposed: training.graph.symmetric)
    }

    /// Per batch: each layer's propagation over the graph's 2·nnz entries (2·2·nnz·d), with its
    /// pullback, as NGCF's count; validation: users × items × d.
    public func cost(_ s: WorkShape) -> ModelCost? {
        let d = Double(embeddingSize)
        let perBatch = Double(layers) * 2 * 2 * Double(s.trainPairs) * d * 3
        let flops = s.pairwiseBatches * perBatch + 2 * Double(s.users) * Double(s.items) * d
        return ModelCost(nominal: flops, executed: flops, scoringInner: embeddingSize)
    }

    public func loss(_ batch: TrainingBatch, _ p: [String: Variable], tape: Tape, rng: inout SeededGenerator) -> Variable {
        let t = training.triples(batch, rng: &rng)
        // The penalty is on the ego rows: E_0 = [users; items], as the propagated table is indexed.
        return tape.add(training.bpr(propagated(p, tape: tape), t, tape: tape),
                        training.penalty(training.graph.nodes(p, tape: tape), t, weight: regWeight, squared: squaredPenalty, tape: tape))
    }

    /// The propagated embeddings, computed once for a whole evaluation pass.
    public func preparedForScoring(compute: Compute) -> any Scorer {
        let tape = Tape(compute: compute)
        return training.graph.factorScores(propagated(tape.leaves(parameters) { _ in false }, tape: tape).value)
    }
}
