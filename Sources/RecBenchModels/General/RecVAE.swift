import Foundation
import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// RecVAE (Shenbin et al. 2020, "RecVAE: a New Variational Autoencoder for Top-N
/// Recommendations with Implicit Feedback"), as RecBole 1.2.1 implements it.
///
///     encoder(x):  x̃ = dropout(x / ‖x‖)
///                  h1 = LN(swish(W1 x̃))
///                  h_k = LN(swish(W_k h_{k−1} + h1 + … + h_{k−1}))     k = 2…5   (LN eps 0.1)
///                  μ = W_μ h5,  log σ² = W_σ h5
///     z = μ + ε·σ,  ε ~ N(0, 0.01²)            (z = μ when scoring)
///     ŷ = W_d z + b_d
///     prior(z | x) = log Σ_m w_m N(z; μ_m, σ²_m) over N(0, 1), the posterior of a frozen
///                    copy of the encoder ("old encoder", no dropout), and N(0, e^10);
///                    w = mixture_weights
///     loss = −mean_u [ Σ_i x_ui log softmax(ŷ_u)_i − γ|x_u| · Σ_k (log q(z|x) − prior(z|x))_k ]
///
/// Each epoch: `n_enc_epochs` passes updating the encoder (dropout on, its own Adam), then
/// the old encoder becomes a copy of the encoder, then `n_dec_epochs` passes updating the
/// decoder (dropout off, a second Adam).
public struct RecVAE: LearnedModel, ScoresWhenPrepared {
    public static let name = "RecVAE"
    public static let summary = "VAE with a composite prior and alternating encoder/decoder updates (Shenbin et al. 2020)"
    public static let kind = ModelKind.autoencoder
    public static let randomStreams = RandomStreams(named: name, passStride: 16)
    public static let parameters: [ConfigKey] = [
        ConfigKey("hidden_dimension", "int", .int(600), "RecVAE: width of the five encoder layers."),
        SharedKeys.latentDimension(200),
        SharedKeys.dropoutProb(0.5),
        SharedKeys.beta(0.2),
        ConfigKey("gamma", "float", .double(0.005), "RecVAE: KL weight per interaction of the user (γ·|x_u|)."),
        ConfigKey("mixture_weights", "list of float", .list([.double(0.15), .double(0.75), .double(0.1)]),
                  "RecVAE: weights of the standard, old-posterior and wide components of the prior."),
        ConfigKey("n_enc_epochs", "int", .int(3), "RecVAE: encoder passes per epoch."),
        ConfigKey("n_dec_epochs", "int", .int(1), "RecVAE: decoder passes per epoch."),
    ]
    public static let testSettings: [[String: ConfigValue]] = [["hidden_dimension": .int(5), "latent_dimension": .int(3)]]

    let hidden: Int, latent: Int, dropout: Float, beta: Float, gamma: Float
    let logMixture: [Float]
    let encoderPasses: Int, decoderPasses: Int
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    /// The frozen encoder copy inside the prior.
    private var oldEncoder = Parameters()
    /// The old encoder's (μ, log σ²) for every user: its input has no dropout and its
    /// parameters change only between epochs, so one forward per epoch serves all passes.
    private var oldPosterior: (mu: Matrix, logVariance: Matrix)?
    private var input: AutoEncoderInput?

    public init(parameters: ModelParameters) throws {
        hidden = try parameters.int("hidden_dimension", in: 1...100_000)
        latent = try parameters.int("latent_dimension", in: 1...100_000)
        dropout = Float(try parameters.double("dropout_prob", in: 0...0.99))
        beta = Float(try parameters.double("beta", in: 0...1_000))
        gamma = Float(try parameters.double("gamma", in: 0...1_000))
        let weights = try parameters.doubleList("mixture_weights", in: Double.leastNonzeroMagnitude...1)
        guard weights.count == 3 else { throw parameters.invalid("mixture_weights", "expected 3 weights, got \(weights.count)") }
        logMixture = weights.map { Float(log($0)) }
        encoderPasses = try parameters.int("n_enc_epochs", in: 1...100)
        decoderPasses = try parameters.int("n_dec_epochs", in: 1...100)
    }

    static func isEncoder(_ name: String) -> Bool { name.hasPrefix("encoder.") }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        var initial = RecVAE.encoderParameters(items: data.itemCount, hidden: hidden, latent: latent, rng: &rng)
        initial.add("decoder.weight", Initializer.xavierNormal(fanIn: latent, fanOut: data.itemCount, rng: &rng))
        initial.add("decoder.bias", Matrix(rows: 1, columns: data.itemCount))
        oldEncoder = RecVAE.encoderParameters(items: data.itemCount, hidden: hidden, latent: latent, rng: &rng)
        input = AutoEncoderInput(trainMatrix: data.trainMatrix)
        refreshOldPosterior(users: data.userCount, compute: context.compute)
        return initial
    }

    /// The encoder passes (dropout on, the encoder's own Adam), then the decoder passes
    /// (dropout off, a second Adam); the epoch reports the last encoder pass's loss.
    public var passes: [TrainingPass] {
        Array(repeating: RecVAE.encoderPass, count: encoderPasses) + Array(repeating: RecVAE.decoderPass, count: decoderPasses)
    }

    static let encoderPass = TrainingPass("encoder") { RecVAE.isEncoder($0) }
    static let decoderPass = TrainingPass("decoder", reportsLoss: false) { !RecVAE.isEncoder($0) }

    public func exampleCount(_ data: TrainingData) -> Int { data.userCount }

    /// Before the decoder passes, `update_prior`: the old encoder becomes a copy of the
    /// encoder (a no-op when it already is one).
    public mutating func willBegin(_ pass: TrainingPass, parameters: Parameters, data: TrainingData, compute: Compute) {
        guard pass.name == RecVAE.decoderPass.name, !oldEncoder.names.allSatisfy({ oldEncoder[$0] == parameters[$0] }) else { return }
        for name in oldEncoder.names { oldEncoder[name] = parameters[name] }
        refreshOldPosterior(users: data.userCount, compute: compute)
    }

    /// After a saved epoch the old encoder is the encoder (the epoch's decoder passes copied it and
    /// left the encoder as it was).
    public mutating func resumed(with parameters: Parameters, data: TrainingData, compute: Compute) {
        willBegin(RecVAE.decoderPass, parameters: parameters, data: data, compute: compute)
    }

    /// Recomputes the cached old-encoder posterior of every user.
    mutating func refreshOldPosterior(users count: Int, compute: Compute) {
        var rng = SeededGenerator(seed: 0)
        let tape = Tape(compute: compute)
        let (mu, logVariance) = encode(input!.encoderInput(Array(0..<Int32(count)), dropout: 0, rng: &rng),
                                       tape.leaves(oldEncoder) { _ in false }, tape: tape)
        oldPosterior = (mu.value, logVariance.value)
    }

    static func encoderParameters(items: Int, hidden: Int, latent: Int, rng: inout SeededGenerator) -> Parameters {
        var p = Parameters()
        for k in 1...5 {
            p.add("encoder.fc\(k).weight", Initializer.xavierNormal(fanIn: k == 1 ? items : hidden, fanOut: hidden, rng: &rng))
            p.add("encoder.fc\(k).bias", Matrix(rows: 1, columns: hidden))
            p.add("encoder.ln\(k).scale", Matrix(rows: 1, columns: hidden, repeating: 1))
            p.add("encoder.ln\(k).shift", Matrix(rows: 1, columns: hidden))
        }
        for head in ["mu", "logvar"] {
            p.add("encoder.\(head).weight", Initializer.xavierNormal(fanIn: hidden, fanOut: latent, rng: &rng))
            p.add("encoder.\(head).bias", Matrix(rows: 1, columns: latent))
        }
        return p
    }

    /// (μ, log σ²) of the encoder with parameters `p`.
    func encode(_ x: SparseMatrix, _ p: [String: Variable], tape: Tape) -> (Variable, Variable) {
        func linear(_ h: Variable, _ k: String) -> Variable { tape.linear(h, p["encoder.\(k).weight"]!, p["encoder.\(k).bias"]!) }
        func norm(_ h: Variable, _ k: Int) -> Variable { tape.layerNorm(h, scale: p["encoder.ln\(k).scale"]!, shift: p["encoder.ln\(k).shift"]!, eps: 0.1) }
        var h = norm(tape.swish(tape.linear(x, p["encoder.fc1.weight"]!, p["encoder.fc1.bias"]!)), 1)
        var residual = h   // h1 + … + h_{k−1}, kept as a running sum
        for k in 2...5 {
            h = norm(tape.swish(tape.add(linear(h, "fc\(k)"), residual)), k)
            if k < 5 { residual = tape.add(residual, h) }
        }
        return (linear(h, "mu"), linear(h, "logvar"))
    }

    /// The negative ELBO (encoder passes) or the negative likelihood alone (decoder passes:
    /// the KL term does not depend on the decoder, so they skip the prior).
    public func loss(_ batch: TrainingBatch, _ p: [String: Variable], tape: Tape, rng: inout SeededGenerator) -> Variable {
        let updatingEncoder = batch.pass.name == RecVAE.encoderPass.name
        let users = batch.users
        let target = input!.target(users)
        let weights = (0..<users.count).map { r -> Float in gamma > 0 ? gamma * Float(target.entries(ofRow: r).count) : beta }
        // In the decoder pass the encoder is frozen, has no dropout, and equals the old
        // encoder (just copied), so its posterior is exactly the cached one.
        let (mu, logVariance) = updatingEncoder
            ? encode(input!.encoderInput(users, dropout: dropout, rng: &rng), p, tape: tape)
            : (tape.constant(RowKernels.gather(oldPosterior!.mu, rows: users)), tape.constant(RowKernels.gather(oldPosterior!.logVariance, rows: users)))
        let noise = Initializer.normal(rows: users.count, columns: latent, std: batch.unitNoise ? 1 : 0.01, rng: &rng)
        let z = tape.add(mu, tape.mul(tape.constant(noise), tape.exp(tape.affine(logVariance, scale: 0.5))))
        let logits = tape.linear(z, p["decoder.weight"]!, p["decoder.bias"]!)
        let likelihood = tape.mean(tape.multinomialLogLikelihood(logits, target))
        guard updatingEncoder else { return tape.affine(likelihood, scale: -1) }
        return negativeELBO(tape, likelihood: likelihood, z: z, mu: mu, logVariance: logVariance, users: users, weights: weights)
    }

    /// −(likelihood − mean_u w_u Σ_k (log q(z|x) − log prior(z|x))_k), the prior mixing N(0, 1),
    /// the cached old-encoder posterior and N(0, e^10).
    func negativeELBO(_ tape: Tape, likelihood: Variable, z: Variable, mu: Variable, logVariance: Variable, users: [Int32], weights: [Float]) -> Variable {
        let oldMu = tape.constant(RowKernels.gather(oldPosterior!.mu, rows: users))
        let oldLogVariance = tape.constant(RowKernels.gather(oldPosterior!.logVariance, rows: users))
        let zero = tape.constant(Matrix(rows: users.count, columns: latent))
        let wide = tape.constant(Matrix(rows: users.count, columns: latent, repeating: 10))
        let prior = tape.logSumExp([
            tape.affine(tape.logNormalDensity(z, mean: zero, logVariance: zero), scale: 1, shift: logMixture[0]),
            tape.affine(tape.logNormalDensity(z, mean: oldMu, logVariance: oldLogVariance), scale: 1, shift: logMixture[1]),
            tape.affine(tape.logNormalDensity(z, mean: zero, logVariance: wide), scale: 1, shift: logMixture[2]),
        ])
        let posterior = tape.logNormalDensity(z, mean: mu, logVariance: logVariance)
        let kl = tape.mean(tape.scaleRows(tape.sumRows(tape.sub(posterior, prior)), by: weights))
        return tape.sub(kl, likelihood)
    }

    /// RecBole: an encoder pass = forward encoder + old encoder + decoder, backward encoder
    /// (dense layers ×2, first layer weight) and decoder input; a decoder pass = forward
    /// encoder + old encoder + decoder, decoder weight gradient; validation = forward.
    /// recbench: the old encoder's posterior once per epoch, reused by the decoder pass and
    /// validation; a sparse first layer.
    public func cost(_ s: WorkShape) -> ModelCost? {
        let U = Double(s.users), n = Double(s.items), nnz = Double(s.trainPairs)
        let hd = Double(hidden), l = Double(latent), encPasses = Double(encoderPasses), decPasses = Double(decoderPasses)
        let E = 2 * U * (4 * hd * hd + 2 * hd * l), F1 = 2 * U * n * hd, S1 = 2 * nnz * hd, D = 2 * U * l * n
        let nominal = encPasses * (4 * E + 3 * F1 + 2 * D) + decPasses * (2 * E + 2 * F1 + 2 * D) + (E + F1 + D)
        let executed = encPasses * (3 * E + 2 * S1 + 2 * D) + (E + S1) + decPasses * 2 * D + D
        return ModelCost(nominal: nominal, executed: executed, scoringInner: latent)
    }

    /// Decides once per evaluation pass where the users' codes come from: the posterior
    /// cached with the old encoder when the encoder still equals it (true during training;
    /// checked in O(1) when the storage is shared), else the encoder run on each batch.
    public func preparedForScoring(compute: Compute) -> any Scorer {
        let weight = parameters["decoder.weight"], bias = parameters["decoder.bias"]
        if let cached = oldPosterior, oldEncoder.names.allSatisfy({ oldEncoder[$0] == parameters[$0] }) {
            return PreparedScores { users, block, compute in
                BLAS.linear(RowKernels.gather(cached.mu, rows: Array(users)), weight, bias: bias, into: &block, compute: compute)
            }
        }
        return PreparedScores { [self] users, block, compute in
            let tape = Tape(compute: compute)
            var rng = SeededGenerator(seed: 0)
            let mu = encode(input!.encoderInput(Array(users), dropout: 0, rng: &rng), tape.leaves(parameters) { _ in false }, tape: tape).0
            BLAS.linear(mu.value, weight, bias: bias, into: &block, compute: compute)
        }
    }
}
