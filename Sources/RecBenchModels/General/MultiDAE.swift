import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

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
    public static let parameters: [ConfigKey] = [
        SharedKeys.mlpHiddenSize([600]),
        SharedKeys.latentDimension(64),
        SharedKeys.dropoutProb(0.5),
    ]
    public static let testSettings: [[String: ConfigValue]] = [["mlp_hidden_size": .list([.int(5)]), "latent_dimension": .int(3)]]

    let hidden: [Int], latent: Int, dropout: Float
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    private var input: AutoEncoderInput?
    private var encoder = MLP([], prefix: "encoder"), decoder = MLP([], prefix: "decoder")

    public init(parameters: ModelParameters) throws {
        hidden = try parameters.intList("mlp_hidden_size", in: 1...100_000)
        latent = try parameters.int("latent_dimension", in: 1...100_000)
        dropout = Float(try parameters.double("dropout_prob", in: 0...0.99))
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        input = AutoEncoderInput(trainMatrix: data.trainMatrix)
        let initial: Parameters
        (encoder, decoder, initial) = MLP.autoEncoder(items: data.itemCount, hidden: hidden, encoderOutput: latent, code: latent, rng: &rng)
        return initial
    }

    public func exampleCount(_ data: TrainingData) -> Int { data.userCount }

    /// −mean_u Σ_i x_ui log softmax(decoder(encoder(x̃)))_i.
    public func loss(_ batch: TrainingBatch, _ p: [String: Variable], tape: Tape, rng: inout SeededGenerator) -> Variable {
        let users = batch.users
        let logits = forward(input!.encoderInput(users, dropout: dropout, rng: &rng), p, tape: tape)
        return tape.affine(tape.mean(tape.multinomialLogLikelihood(logits, input!.target(users))), scale: -1)
    }

    /// decoder(tanh(encoder(x))).
    func forward(_ x: SparseMatrix, _ p: [String: Variable], tape: Tape) -> Variable {
        decoder(tape.tanh(encoder(x, p, tape: tape)), p, tape: tape)
    }

    public func cost(_ shape: WorkShape) -> ModelCost? {
        MLP.autoEncoderCost(shape, hidden: hidden, encoderOutput: latent, code: latent)
    }

    public func memory(_ shape: WorkShape) -> MemoryEstimate? {
        MLP.autoEncoderMemory(shape, hidden: hidden, encoderOutput: latent, code: latent)
    }

    public func scores(for users: ArraySlice<Int32>, into block: inout Matrix, compute: Compute) {
        var rng = SeededGenerator(seed: 0)
        let tape = Tape(compute: compute)
        let p = tape.leaves(parameters) { _ in false }
        decoder.scores(tape.tanh(encoder(input!.encoderInput(Array(users), dropout: 0, rng: &rng), p, tape: tape)), p, tape: tape, into: &block)
    }
}
