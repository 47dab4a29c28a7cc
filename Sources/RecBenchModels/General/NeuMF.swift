import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// NeuMF (He et al. 2017, "Neural Collaborative Filtering"), as RecBole 1.2.1's `NeuMF`
/// trains it: a generalised matrix factorisation and an MLP over separate embeddings, fused
/// by one linear layer.
///
///     GMF:  p_u ⊙ q_i                                          (`mf_embedding_size`)
///     MLP:  h_0 = [p'_u | q'_i],  h_l = ReLU(W_l · dropout(h_{l−1}) + b_l)   (`mlp_hidden_size`)
///     z(u, i) = w · [p_u ⊙ q_i | h_L] + b
///     loss = BCE(σ(z), label) over positives and drawn negatives (uniform by default)   (Adam)
///
/// Full ranking: the GMF part is one GEMM ((p_u ⊙ w_GMF) · Qᵀ); the MLP's first layer splits
/// into a user half and an item half (each computed once), then the rest runs as GEMMs over
/// the items (`SplitMLP`).
public struct NeuMF: PointwiseModel, ScoresWhenPrepared {
    public static let name = "NeuMF"
    public static let summary = "Neural collaborative filtering: GMF and an MLP over user and item embeddings, trained pointwise on sampled negatives"
    public static let kind = ModelKind.factorisation
    public static let parameters: [ConfigKey] = [
        ConfigKey("mf_embedding_size", "int", .int(64), "NeuMF: width of the GMF embeddings."),
        ConfigKey("mlp_embedding_size", "int", .int(64), "NeuMF: width of the MLP's user and item embeddings."),
        SharedKeys.mlpHiddenSize([128, 64]),
        SharedKeys.dropoutProb(0.1),
        // RecBole's NeuMF.yaml holds these; only their defaults run here.
        ConfigKey("mf_train", "bool", .bool(true), "NeuMF: whether the GMF part is in the model (false: an MLP-only NCF; not built, refused)."),
        ConfigKey("mlp_train", "bool", .bool(true), "NeuMF: whether the MLP part is in the model (false: GMF only; not built, refused)."),
        ConfigKey("use_pretrain", "bool", .bool(false), "NeuMF: start from pre-trained GMF and MLP models (RecBole's option; not supported, refused)."),
        ConfigKey("mf_pretrain_path", "str or null", .null, "NeuMF: the pre-trained GMF model, read only with use_pretrain."),
        ConfigKey("mlp_pretrain_path", "str or null", .null, "NeuMF: the pre-trained MLP model, read only with use_pretrain."),
    ]
    /// Small widths with two layers, and the default widths with one layer.
    public static let testSettings: [[String: ConfigValue]] = [
        ["mf_embedding_size": .int(3), "mlp_embedding_size": .int(3), "mlp_hidden_size": .list([.int(5), .int(3)]), "dropout_prob": .double(0.2)],
        ["mlp_hidden_size": .list([.int(7)])],
    ]

    let mf: Int, mlp: Int, hidden: [Int], dropout: Float
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var sampler: PointwiseSampler?

    public init(parameters: ModelParameters) throws {
        mf = try parameters.int("mf_embedding_size", in: 1...4096)
        mlp = try parameters.int("mlp_embedding_size", in: 1...4096)
        hidden = try parameters.intList("mlp_hidden_size", in: 1...65536)
        guard !hidden.isEmpty else { throw parameters.invalid("mlp_hidden_size", "needs at least one layer") }
        dropout = Float(try parameters.double("dropout_prob", in: 0...0.99))
        for part in ["mf_train", "mlp_train"] where try !parameters.bool(part) {
            throw parameters.invalid(part, "NeuMF without its \(part == "mf_train" ? "GMF" : "MLP") part is not built: both parts train (RecBole's default)")
        }
        if try parameters.bool("use_pretrain") {
            throw parameters.invalid("use_pretrain", "pre-trained GMF and MLP parts are not supported: NeuMF trains from RecBole's initialisation")
        }
        _ = try (parameters.optionalString("mf_pretrain_path"), parameters.optionalString("mlp_pretrain_path"))   // read only with use_pretrain
    }

    /// Embeddings N(0, 0.01²) (RecBole's init); linear layers as torch initialises them.
    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        prepareSampler(data, context: context)
        var initial = Parameters()
        for (name, rows, width) in [("user_mf", data.userCount, mf), ("item_mf", data.itemCount, mf),
                                    ("user_mlp", data.userCount, mlp), ("item_mlp", data.itemCount, mlp)] {
            initial.add(name, Initializer.normal(rows: rows, columns: width, std: 0.01, rng: &rng))
        }
        let widths = [2 * mlp] + hidden
        for (l, (input, output)) in zip(widths, widths.dropFirst()).enumerated() {
            initial.add("mlp.\(l).weight", Initializer.torchLinear(fanIn: input, rows: input, columns: output, rng: &rng))
            initial.add("mlp.\(l).bias", Initializer.torchLinear(fanIn: input, rows: 1, columns: output, rng: &rng))
        }
        initial.add("predict.weight", Initializer.torchLinear(fanIn: mf + hidden.last!, rows: mf + hidden.last!, columns: 1, rng: &rng))
        initial.add("predict.bias", Initializer.torchLinear(fanIn: mf + hidden.last!, rows: 1, columns: 1, rng: &rng))
        return initial
    }

    /// z(u, i) for each listed pair; dropout before each hidden layer while training.
    public func logits(users: [Int32], items: [Int32], _ p: [String: Variable], tape: Tape, dropout rng: inout SeededGenerator?) -> Variable {
        let gmf = tape.mul(tape.gather(p["user_mf"]!, rows: users), tape.gather(p["item_mf"]!, rows: items))
        var h = tape.concatColumns([tape.gather(p["user_mlp"]!, rows: users), tape.gather(p["item_mlp"]!, rows: items)])
        for l in 0..<hidden.count {
            h = Dropout.apply(h, rate: dropout, tape: tape, rng: &rng)
            h = tape.relu(tape.linear(h, p["mlp.\(l).weight"]!, p["mlp.\(l).bias"]!))
        }
        return tape.linear(tape.concatColumns([gmf, h]), p["predict.weight"]!, p["predict.bias"]!)
    }

    /// Per training row (a positive or a negative): the MLP and predict layer forward and
    /// backward (6 FLOPs per weight); validation: the GMF GEMM and the MLP after its split first
    /// layer for every user × item (the halves are per user and per item, negligible).
    public func cost(_ s: WorkShape) -> ModelCost? {
        let widths = [Double(2 * mlp)] + hidden.map(Double.init)
        let mlpWeights = zip(widths, widths.dropFirst()).map { $0 * $1 }.reduce(0, +)
        let predict = Double(mf + hidden.last!), first = widths[0] * widths[1]
        let pairs = Double(s.users) * Double(s.items)
        let flops = s.pointwiseRows * 6 * (mlpWeights + predict)
            + 2 * pairs * (Double(mf) + mlpWeights - first + Double(hidden.last!))
        return ModelCost(nominal: flops, executed: flops)
    }

    /// The embeddings and the MLP's weights, as a run holds them while training.
    public func memory(_ s: WorkShape) -> MemoryEstimate? {
        let widths = [2 * mlp] + hidden
        let weights = Double((s.users + s.items) * (mf + mlp)) + zip(widths, widths.dropFirst()).reduce(0.0) { $0 + Double($1.0 * $1.1) }
        return .trainedWeights(weights)
    }

    /// The items' half of the MLP's first layer, computed once for a whole evaluation pass.
    public func preparedForScoring(compute: Compute) -> any Scorer {
        let out = parameters["predict.weight"], w1 = parameters["mlp.0.weight"], width = w1.columns
        let itemHalf = BLAS.gemm(parameters["item_mlp"], Matrix(rows: mlp, columns: width, values: Array(w1.values[mlp * width..<2 * mlp * width])),
                                 compute: compute)
        let userWeights = Matrix(rows: mlp, columns: width, values: Array(w1.values[0..<mlp * width]))
        var layers = (1..<hidden.count).map { (parameters["mlp.\($0).weight"], parameters["mlp.\($0).bias"]) }
        layers.append((Matrix(rows: hidden.last!, columns: 1, values: Array(out.values[mf...])), parameters["predict.bias"]))
        let network = SplitMLP(firstBias: parameters["mlp.0.bias"], layers: layers)
        return PreparedScores { [parameters, mf] users, block, compute in
            // GMF: (p_u ⊙ w_GMF) · Qᵀ.
            var scaled = RowKernels.gather(parameters["user_mf"], rows: Array(users))
            for r in 0..<users.count { for j in 0..<mf { scaled.values[r * mf + j] *= out.values[j] } }
            BLAS.gemm(scaled, parameters["item_mf"], transposeB: true, into: &block, compute: compute)
            // MLP: the users' half of the first layer meets the items', then the rest; its
            // output weights are predict's tail.
            let userHalf = BLAS.gemm(RowKernels.gather(parameters["user_mlp"], rows: Array(users)), userWeights, compute: compute)
            network.addScores(userHalf: userHalf, itemHalf: itemHalf, into: &block, compute: compute)
        }
    }
}
