import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// SpectralCF (Zheng et al. 2018, "Spectral Collaborative Filtering"), as RecBole 1.2.1
/// builds it: RecBole replaces the eigenvector filter UUᵀ + UΛUᵀ by I + L, so no
/// eigendecomposition is made.
///
///     Â = I + L = 2I − D^{−1}A          (A: the user-item graph; D^{−1}: 1/(degree + 1e−7))
///     E_{k+1} = σ((Â E_k) Θ_k),  k < K  (`n_layers` = K; Θ_k: d × d)
///     e = [E_0 | E_1 | … | E_K]          (concatenated, (K + 1)·d wide)
///     loss = −mean log σ(⟨e_u, e_i⟩ − ⟨e_u, e_j⟩) + λ (‖e[u]‖ + ‖e[i]‖ + ‖e[j]‖) / batch
///            (j: a drawn negative, `sample_num` per pair; norms of the batch's propagated rows, not squared)
///     score(u, ·) = e_u · e_itemsᵀ
///
/// Embeddings Xavier-uniform, Θ_k ~ N(0.01, 0.02²) (RecBole's).
public struct SpectralCF: PairwiseModel, ScoresWhenPrepared {
    public static let name = "SpectralCF"
    public static let summary = "Graph filters on the user-item graph's Laplacian, layers concatenated (Zheng et al. 2018)"
    public static let kind = ModelKind.factorisation
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(64),
        SharedKeys.layerCount(4),
        SharedKeys.regWeight(1e-3),
    ]
    public static let testSettings: [[String: ConfigValue]] = [["embedding_size": .int(3), "n_layers": .int(2), "reg_weight": .double(0.1)]]

    let width: Int, layers: Int, regWeight: Float
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    var training = GraphTraining()
    var filter = (operator: SparseMatrix(rows: 0, columns: 0), transposed: SparseMatrix(rows: 0, columns: 0))

    public init(parameters: ModelParameters) throws {
        width = try parameters.int("embedding_size", in: 1...4096)
        layers = try parameters.int("n_layers", in: 0...16)
        regWeight = Float(try parameters.double("reg_weight", in: 0...1e6))
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        training = GraphTraining(data)
        context.pairwiseNegatives(model: Self.name)
        filter = training.graph.spectral()
        var initial = Parameters()
        for (name, rows) in [("user_embedding", data.userCount), ("item_embedding", data.itemCount)] {
            initial.add(name, Initializer.uniform(rows: rows, columns: width, bound: (6 / Float(rows + width)).squareRoot(), rng: &rng))
        }
        for k in 0..<layers {
            var theta = Initializer.normal(rows: width, columns: width, std: 0.02, rng: &rng)
            for i in theta.values.indices { theta.values[i] += 0.01 }
            initial.add("filter.\(k)", theta)
        }
        return initial
    }

    public func exampleCount(_ data: TrainingData) -> Int { training.exampleCount }

    /// [E_0 | … | E_K] for every node (users first).
    func propagated(_ p: [String: Variable], tape: Tape) -> Variable {
        var e = training.graph.nodes(p, tape: tape), all = [e]
        for k in 0..<layers {
            e = tape.sigmoid(tape.matmul(tape.matmul(filter.operator, e, transposed: filter.transposed), p["filter.\(k)"]!))
            all.append(e)
        }
        return all.count == 1 ? e : tape.concatColumns(all)
    }

    public func loss(_ batch: TrainingBatch, _ p: [String: Variable], tape: Tape, rng: inout SeededGenerator) -> Variable {
        let t = training.triples(batch, rng: &rng)
        let all = propagated(p, tape: tape)
        return tape.add(training.bpr(all, t, tape: tape), training.penalty(all, t, weight: regWeight, tape: tape))
    }

    /// Per batch: K propagations (nnz·d) and filters (nodes·d²), forward and backward; validation: users × items × (K + 1)·d.
    public func cost(_ s: WorkShape) -> ModelCost? {
        let nodes = Double(s.users + s.items), d = Double(width)
        let perBatch = Double(layers) * (2 * 2 * Double(s.trainPairs) * d + 2 * nodes * d * d) * 3
        let batches = s.pairwiseBatches
        let flops = batches * perBatch + 2 * Double(s.users) * Double(s.items) * d * Double(layers + 1)
        return ModelCost(nominal: flops, executed: flops, scoringInner: width * (layers + 1))
    }

    /// The propagated representations, once per evaluation pass.
    public func preparedForScoring(compute: Compute) -> any Scorer {
        let tape = Tape(compute: compute)
        return training.graph.factorScores(propagated(tape.leaves(parameters) { _ in false }, tape: tape).value)
    }
}
