/// Mult-VAE (Liang et al. 2018, "Variational Autoencoders for Collaborative Filtering"),
/// as RecBole 1.2.1 implements it.
///
///     x̃ = dropout(x / ‖x‖)
///     [μ, log σ²] = encoder(x̃)        encoder: n → 600 → 128, tanh between layers; μ and
///                                      log σ² are its two halves (64 each): RecBole's
///                                      `latent_dimension` is the encoder's output width
///     z = μ + ε·σ,  ε ~ N(0, 0.01²)     (RecBole's noise scale; z = μ when scoring)
///     ŷ = decoder(z)                   decoder: 64 → 600 → n
///     β = min(anneal_cap, step / total_anneal_steps)      (step = batches so far)
///     loss = −mean_u Σ_i x_ui log softmax(ŷ_u)_i − β/2 · mean_u Σ_k (1 + log σ²_k − μ²_k − σ²_k)
public struct MultiVAE: LearnedModel {
    public static let name = "MultiVAE"
    public static let summary = "Variational auto-encoder with a multinomial likelihood and KL annealing (Liang et al. 2018)"
    public static let kind = ModelKind.autoencoder
    public static let trainsWithLargeProducts = false   // BLAS.gemm splits large products over our workers
    public static let parameters: [ConfigKey] = [
        AutoEncoderParameters.hiddenSizes,
        ConfigKey("latent_dimension", "int", .int(128), "MultiVAE: encoder output width, even: μ and log σ² are its halves (RecBole's meaning)."),
        AutoEncoderParameters.dropout,
        ConfigKey("anneal_cap", "float", .double(0.2), "MultiVAE: largest KL weight β."),
        ConfigKey("total_anneal_steps", "int", .int(200_000), "MultiVAE: batches over which β grows linearly to anneal_cap (0: β = anneal_cap)."),
    ]

    let hidden: [Int], latent: Int, dropout: Float, annealCap: Float, totalAnnealSteps: Int
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    private var optimizer: (any Optimizer)?
    private var input: AutoEncoderInput?
    private var encoder = MLP([], prefix: "encoder"), decoder = MLP([], prefix: "decoder")
    private var steps = 0

    /// The latent code's size: half the encoder output.
    var code: Int { latent / 2 }

    public init(parameters: ModelParameters) throws {
        hidden = try parameters.intList("mlp_hidden_size", in: 1...100_000)
        latent = try parameters.int("latent_dimension", in: 2...100_000)
        guard latent % 2 == 0 else {
            throw RecBenchError.config("latent_dimension", origin: parameters.config.origin(of: "latent_dimension"),
                                       "MultiVAE splits the encoder output into μ and log σ², so it must be even, got \(latent)")
        }
        dropout = Float(try parameters.double("dropout_prob", in: 0...0.99))
        annealCap = Float(try parameters.double("anneal_cap", in: 0...10))
        totalAnnealSteps = try parameters.int("total_anneal_steps", in: 0...Int.max)
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext) {
        var rng = SeededGenerator(seed: context.seed, stream: 0x5AE)
        encoder = MLP([data.itemCount] + hidden + [latent], prefix: "encoder")
        decoder = MLP([code] + hidden.reversed() + [data.itemCount], prefix: "decoder")
        parameters = Parameters()
        encoder.initialize(&parameters, rng: &rng)
        decoder.initialize(&parameters, rng: &rng)
        optimizer = context.training.makeOptimizer()
        input = AutoEncoderInput(trainMatrix: data.trainMatrix)
        steps = 0
    }

    public mutating func trainEpoch(_ epoch: Int, data: TrainingData, context: FitContext) throws -> Double {
        let batches = Sampling.shuffledBatches(count: data.userCount, batchSize: context.training.batchSize,
                                               seed: context.seed, epoch: epoch, purpose: 1)
        var rng = SeededGenerator(seed: context.seed, stream: UInt64(epoch) << 8 | 3)
        var stepper = optimizer.take()   // before `lossModel`: see MultiDAE
        let model = lossModel, input = self.input!
        var steps = self.steps
        defer { optimizer = stepper }
        let loss = optimize(batches, with: &stepper, context: context) { tape, p, batch in
            steps += 1
            let beta = model.totalAnnealSteps > 0 ? min(model.annealCap, Float(steps) / Float(model.totalAnnealSteps)) : model.annealCap
            let users = batch.map { Int32($0) }
            let x = input.encoderInput(users, dropout: model.dropout, rng: &rng)
            let noise = Initializer.normal(rows: users.count, columns: model.code, std: 0.01, rng: &rng)
            return model.lossGraph(tape, p, input: x, target: input.target(users), noise: noise, beta: beta)
        }
        self.steps = steps
        return loss
    }

    /// The negative multinomial log-likelihood plus β times the KL divergence to N(0, I).
    func lossGraph(_ tape: Tape, _ p: [String: Variable], input x: SparseMatrix, target: SparseMatrix, noise: Matrix, beta: Float) -> Variable {
        let h = encoder(x, p, tape: tape)
        let mu = tape.columns(h, 0..<code), logVariance = tape.columns(h, code..<latent)
        let z = tape.add(mu, tape.mul(tape.constant(noise), tape.exp(tape.affine(logVariance, scale: 0.5))))
        let logits = decoder(z, p, tape: tape)
        let likelihood = tape.affine(tape.mean(tape.multinomialLogLikelihood(logits, target)), scale: -1)
        let inner = tape.sub(tape.sub(tape.affine(logVariance, scale: 1, shift: 1), tape.square(mu)), tape.exp(logVariance))
        let kl = tape.affine(tape.mean(tape.sumRows(inner)), scale: -0.5 * beta)
        return tape.add(likelihood, kl)
    }

    public func gradientCheckLoss(_ data: TrainingData, tape: Tape, leaves: [String: Variable]) -> Variable {
        var rng = SeededGenerator(seed: 1)
        let users = Array(0..<Int32(min(4, data.userCount)))
        let x = input!.encoderInput(users, dropout: dropout, rng: &rng)
        // Noise std 1 (not 0.01) so the σ path is exercised; β = anneal_cap so the KL counts.
        let noise = Initializer.normal(rows: users.count, columns: code, std: 1, rng: &rng)
        return lossGraph(tape, leaves, input: x, target: input!.target(users), noise: noise, beta: annealCap)
    }

    public func scores(for users: ArraySlice<Int32>, into block: inout Matrix) {
        var rng = SeededGenerator(seed: 0)
        let tape = Tape()
        let p = tape.leaves(parameters) { _ in false }
        let h = encoder(input!.encoderInput(Array(users), dropout: 0, rng: &rng), p, tape: tape)
        block = decoder(tape.columns(h, 0..<code), p, tape: tape).value
    }
}
