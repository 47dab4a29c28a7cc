import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// MacridVAE (Ma et al. 2019, "Learning Disentangled Representations for Recommendation"),
/// as RecBole 1.2.1 implements it.
///
///     items = normalize(E_items), cores = normalize(E_concepts)         (rows to unit length)
///     c = softmax(items · coresᵀ / τ + g)      g ~ Gumbel while training (soft, temperature 1;
///                                              no noise with nogb or when scoring): n × K
///     x̃ = dropout(x / ‖x‖)
///     for each concept k:
///         [h_μ, log σ²_k] = encoder(x̃ ⊙ c_k)   encoder: n → 600 → 2d, tanh between layers
///         μ_k = normalize(h_μ)
///         z_k = normalize(μ_k + ε·σ_k),  ε ~ N(0, std²)     (z_k = μ_k when scoring)
///     ŷ_ui = log Σ_k c_ik · exp(z_k · items_i / τ)
///     β = min(anneal_cap, step / total_anneal_steps)
///     loss = −mean_u Σ_i x_ui log softmax(ŷ_u)_i − β/2 · Σ_k mean_u Σ_j (1 + log σ²_kj − σ²_kj)
///            + reg₁(‖E_items‖ + ‖E_concepts‖) + reg₂ Σ ‖encoder weights‖
///
/// The mixture is summed in log space (log c_ik added to each concept's logits), which is
/// RecBole's log(Σ probs) without its underflow. x̃ ⊙ c_k through the first layer W equals
/// x̃ through diag(c_k)·W, so the input stays sparse and c gets its gradient from W's.
public struct MacridVAE: LearnedModel {
    public static let name = "MacridVAE"
    public static let summary = "Disentangled VAE: items grouped into concepts, one unit-length user code per concept (Ma et al. 2019)"
    public static let kind = ModelKind.autoencoder
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(64),
        ConfigKey("kfac", "int", .int(10), "MacridVAE: number K of concepts."),
        ConfigKey("tau", "float", .double(0.1), "MacridVAE: temperature of the cosine logits."),
        ConfigKey("nogb", "bool", .bool(false), "MacridVAE: true assigns items to concepts by softmax alone, without Gumbel noise while training."),
        ConfigKey("std", "float", .double(0.01), "MacridVAE: scale of the reparameterisation noise ε."),
        ConfigKey("encoder_hidden_size", "list of int", .list([.int(600)]), "MacridVAE: hidden layer sizes of the encoder."),
        SharedKeys.regWeightList([0, 0]),
        SharedKeys.dropoutProb(0.5),
        SharedKeys.annealCap(0.2),
        SharedKeys.totalAnnealSteps(200_000),
    ]
    /// Both the Gumbel assignment and the plain softmax one (nogb), and both penalties.
    /// τ = 1 and no dropout keep every user's code away from the zero vector: where a row's
    /// code is tiny (dropout leaving one item of a concept with a small weight), normalising
    /// it curves so sharply that central differences at any usable step miss the slope.
    public static let testSettings: [[String: ConfigValue]] = [false, true].map { nogb in
        ["embedding_size": .int(3), "kfac": .int(2), "encoder_hidden_size": .list([.int(5)]), "tau": .double(1),
         "reg_weights": .list([.double(0.1), .double(0.2)]), "dropout_prob": .double(0), "nogb": .bool(nogb)]
    }

    let hidden: [Int], size: Int, concepts: Int, tau: Float, gumbel: Bool, noiseScale: Float
    let embeddingRegularization: Float, encoderRegularization: Float
    let dropout: Float, annealCap: Float, totalAnnealSteps: Int
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    private var input: AutoEncoderInput?
    private var encoder = MLP([], prefix: "encoder")

    public init(parameters: ModelParameters) throws {
        size = try parameters.int("embedding_size", in: 1...100_000)
        concepts = try parameters.int("kfac", in: 1...1_000)
        tau = Float(try parameters.double("tau", in: 1e-4...1_000))
        gumbel = !(try parameters.bool("nogb"))
        noiseScale = Float(try parameters.double("std", in: 0...1_000))
        hidden = try parameters.intList("encoder_hidden_size", in: 1...100_000)
        let regs = try parameters.doubleList("reg_weights", in: 0...1_000)
        guard regs.count == 2 else { throw parameters.invalid("reg_weights", "expected 2 weights (embeddings, encoder), got \(regs.count)") }
        embeddingRegularization = Float(regs[0]); encoderRegularization = Float(regs[1])
        dropout = Float(try parameters.double("dropout_prob", in: 0...0.99))
        annealCap = Float(try parameters.double("anneal_cap", in: 0...10))
        totalAnnealSteps = try parameters.int("total_anneal_steps", in: 0...Int.max)
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        input = AutoEncoderInput(trainMatrix: data.trainMatrix)
        encoder = MLP([data.itemCount] + hidden + [2 * size], prefix: "encoder")
        var initial = Parameters()
        encoder.initialize(&initial, rng: &rng)
        initial.add("item_embedding", Initializer.xavierNormal(fanIn: data.itemCount, fanOut: size, rng: &rng))
        initial.add("concept_embedding", Initializer.xavierNormal(fanIn: concepts, fanOut: size, rng: &rng))
        return initial
    }

    public func exampleCount(_ data: TrainingData) -> Int { data.userCount }

    /// What one forward pass produces: the mixture logits and each concept's log σ².
    struct Forward {
        let logits: Variable
        let logVariances: [Variable]
    }

    /// Noise of a training forward: Gumbel and ε draws come from `rng`, ε at unit scale for
    /// gradient checks. A scoring forward has none (softmax assignment, z = μ).
    enum Noise { case none, drawn(unitScale: Bool) }

    /// The forward pass on encoder input `x`.
    func forward(_ x: SparseMatrix, _ p: [String: Variable], tape: Tape, noise: Noise, rng: inout SeededGenerator) -> Forward {
        let items = tape.normalizeRows(p["item_embedding"]!)
        var assignment = tape.affine(tape.matmul(items, tape.transpose(tape.normalizeRows(p["concept_embedding"]!))), scale: 1 / tau)
        if gumbel, case .drawn = noise {
            assignment = tape.add(assignment, tape.constant(Initializer.gumbel(rows: items.value.rows, columns: concepts, rng: &rng)))
        }
        let logWeights = tape.logSoftmaxRows(assignment)   // log c: n × K
        let weights = tape.exp(logWeights), logWeightRows = tape.transpose(logWeights)
        let itemColumns = tape.transpose(items)
        var conceptLogits: [Variable] = [], logVariances: [Variable] = []
        for k in 0..<concepts {
            var scaled = p
            scaled["encoder.0.weight"] = tape.scaleRows(p["encoder.0.weight"]!, by: tape.columns(weights, k..<k + 1))
            let h = encoder(x, scaled, tape: tape)
            let mu = tape.normalizeRows(tape.columns(h, 0..<size)), logVariance = tape.columns(h, size..<2 * size)
            var z = mu
            if case .drawn(let unitScale) = noise {
                let epsilon = Initializer.normal(rows: mu.value.rows, columns: size, std: unitScale ? 1 : noiseScale, rng: &rng)
                z = tape.add(mu, tape.mul(tape.constant(epsilon), tape.exp(tape.affine(logVariance, scale: 0.5))))
            }
            let code = tape.affine(tape.normalizeRows(z), scale: 1 / tau)
            conceptLogits.append(tape.linear(code, itemColumns, tape.gather(logWeightRows, rows: [Int32(k)])))
            logVariances.append(logVariance)
        }
        return Forward(logits: tape.logSumExp(conceptLogits), logVariances: logVariances)
    }

    /// The negative multinomial log-likelihood, β times the KL term of every concept, and the
    /// norm penalties when their weights are set.
    public func loss(_ batch: TrainingBatch, _ p: [String: Variable], tape: Tape, rng: inout SeededGenerator) -> Variable {
        let beta = AutoEncoderParameters.klWeight(step: batch.step, cap: annealCap, totalSteps: totalAnnealSteps)
        let users = batch.users
        let x = input!.encoderInput(users, dropout: dropout, rng: &rng)
        let out = forward(x, p, tape: tape, noise: .drawn(unitScale: batch.unitNoise), rng: &rng)
        var total = tape.affine(tape.mean(tape.multinomialLogLikelihood(out.logits, input!.target(users))), scale: -1)
        for logVariance in out.logVariances {
            // μ has unit length, so RecBole's KL drops the μ² term (a constant).
            let inner = tape.sub(tape.affine(logVariance, scale: 1, shift: 1), tape.exp(logVariance))
            total = tape.add(total, tape.affine(tape.mean(tape.sumRows(inner)), scale: -0.5 * beta))
        }
        return tape.add(total, penalty(p, tape: tape))
    }

    /// reg₁ (‖E_items‖ + ‖E_concepts‖) + reg₂ Σ ‖encoder weights‖ (norms, not squares, as RecBole).
    func penalty(_ p: [String: Variable], tape: Tape) -> Variable {
        var terms: [(Float, String)] = [(embeddingRegularization, "item_embedding"), (embeddingRegularization, "concept_embedding")]
        terms += (0..<(encoder.dimensions.count - 1)).map { (encoderRegularization, "encoder.\($0).weight") }
        return terms.filter { $0.0 != 0 }.reduce(tape.constant(Matrix(rows: 1, columns: 1))) { sum, term in
            tape.add(sum, tape.affine(tape.norm(p[term.1]!), scale: term.0))
        }
    }

    /// RecBole per concept: dense input layer forward, weight and input gradients (the input
    /// x ⊙ c_k needs one for c), dense layers and decoder forward + 2 backward GEMMs,
    /// validation forward. recbench: the input layer as sparse products, no input gradient.
    public func cost(_ s: WorkShape) -> ModelCost? {
        let U = Double(s.users), n = Double(s.items), nnz = Double(s.trainPairs), K = Double(concepts)
        let dims = ([s.items] + hidden + [2 * size]).map(Double.init)
        let E = 2 * U * zip(dims.dropFirst(), dims.dropFirst(2)).reduce(0) { $0 + $1.0 * $1.1 }
        let F1 = 2 * U * n * dims[1], S1 = 2 * nnz * dims[1], D = 2 * U * Double(size) * n
        return ModelCost(nominal: K * (4 * F1 + 4 * E + 4 * D), executed: K * (3 * S1 + 4 * E + 4 * D))
    }

    public func scores(for users: ArraySlice<Int32>, into block: inout Matrix, compute: Compute) {
        var rng = SeededGenerator(seed: 0)
        let tape = Tape(compute: compute)
        let p = tape.leaves(parameters) { _ in false }
        block = forward(input!.encoderInput(Array(users), dropout: 0, rng: &rng), p, tape: tape, noise: .none, rng: &rng).logits.value
    }
}
