/// Mult-DAE (Liang et al. 2018, "Variational Autoencoders for Collaborative Filtering"),
/// as RecBole 1.2.1 implements it.
///
///     x̃ = dropout(x / ‖x‖)                       (x: the user's train items, binary)
///     z = tanh(encoder(x̃))   encoder: n → 600 → 64, tanh between layers and on the code
///                            (RecBole's `MLPLayers` puts its activation after every layer)
///     ŷ = decoder(z)         decoder: 64 → 600 → n, tanh between layers
///     loss = −mean_u Σ_i x_ui · log softmax(ŷ_u)_i
public struct MultiDAE: LearnedModel {
    public static let name = "MultiDAE"
    public static let summary = "Denoising auto-encoder with a multinomial likelihood (Liang et al. 2018)"
    public static let kind = ModelKind.autoencoder
    public static let trainsWithLargeProducts = false   // BLAS.gemm splits large products over our workers
    public static let parameters: [ConfigKey] = [
        AutoEncoderParameters.hiddenSizes,
        ConfigKey("latent_dimension", "int", .int(64), "MultiDAE: latent size (MultiVAE: 128, RecVAE: 200)."),
        AutoEncoderParameters.dropout,
    ]

    let hidden: [Int], latent: Int, dropout: Float
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    private var optimizer: (any Optimizer)?
    private var input: AutoEncoderInput?
    private var encoder = MLP([], prefix: "encoder"), decoder = MLP([], prefix: "decoder")

    public init(parameters: ModelParameters) throws {
        hidden = try parameters.intList("mlp_hidden_size", in: 1...100_000)
        latent = try parameters.int("latent_dimension", in: 1...100_000)
        dropout = Float(try parameters.double("dropout_prob", in: 0...0.99))
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext) {
        var rng = SeededGenerator(seed: context.seed, stream: 0xDAE)
        encoder = MLP([data.itemCount] + hidden + [latent], prefix: "encoder")
        decoder = MLP([latent] + hidden.reversed() + [data.itemCount], prefix: "decoder")
        parameters = Parameters()
        encoder.initialize(&parameters, rng: &rng)
        decoder.initialize(&parameters, rng: &rng)
        optimizer = context.training.makeOptimizer()
        input = AutoEncoderInput(trainMatrix: data.trainMatrix)
    }

    public mutating func trainEpoch(_ epoch: Int, data: TrainingData, context: FitContext) throws -> Double {
        let batches = Sampling.shuffledBatches(count: data.userCount, batchSize: context.training.batchSize,
                                               seed: context.seed, epoch: epoch, purpose: 1)
        var rng = SeededGenerator(seed: context.seed, stream: UInt64(epoch) << 8 | 3)
        // Moved out before `lossModel` copies the model: a copy holding the optimizer too
        // would make every step copy its moments.
        var stepper = optimizer.take()
        let model = lossModel, input = self.input!, dropout = self.dropout
        defer { optimizer = stepper }
        return optimize(batches, with: &stepper, context: context) { tape, p, batch in
            let users = batch.map { Int32($0) }
            return model.lossGraph(tape, p, input: input.encoderInput(users, dropout: dropout, rng: &rng), target: input.target(users))
        }
    }

    /// −mean_u Σ_i x_ui log softmax(decoder(encoder(x̃)))_i.
    func lossGraph(_ tape: Tape, _ p: [String: Variable], input x: SparseMatrix, target: SparseMatrix) -> Variable {
        let logits = decoder(tape.tanh(encoder(x, p, tape: tape)), p, tape: tape)
        return tape.affine(tape.mean(tape.multinomialLogLikelihood(logits, target)), scale: -1)
    }

    public func gradientCheckLoss(_ data: TrainingData, tape: Tape, leaves: [String: Variable]) -> Variable {
        var rng = SeededGenerator(seed: 1)
        let users = Array(0..<Int32(min(4, data.userCount)))
        return lossGraph(tape, leaves, input: input!.encoderInput(users, dropout: dropout, rng: &rng), target: input!.target(users))
    }

    public func scores(for users: ArraySlice<Int32>, into block: inout Matrix) {
        var rng = SeededGenerator(seed: 0)
        let tape = Tape()
        let p = tape.leaves(parameters) { _ in false }
        block = decoder(tape.tanh(encoder(input!.encoderInput(Array(users), dropout: 0, rng: &rng), p, tape: tape)), p, tape: tape).value
    }
}
