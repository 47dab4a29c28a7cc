import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// Mult-VAE (Liang et al. 2018, "Variational Autoencoders for Collaborative Filtering"),
/// as RecBole 1.2.1 implements it.
///
///     x̃ = dropout(x / ‖x‖)
///     [μ, log σ²] = encoder(x̃)        encoder: n → 600 → 128, tanh between layers; μ and
///                                      log σ² are its two halves (64 each): RecBole's
///                                      `latent_dimension` is the encoder's output width
///     z = μ + ε·σ,  ε ~ N(0, 0.01²)     (RecBole's noise scale; z = μ when scoring)
///     ŷ = decoder(z)                   decoder: 64 → 600 → n
///     β = min(anneal_cap, step / total_anneal_steps)      (step = batches so far, this one included)
///     loss = −mean_u Σ_i x_ui log softmax(ŷ_u)_i − β/2 · mean_u Σ_k (1 + log σ²_k − μ²_k − σ²_k)
public struct MultiVAE: LearnedModel {
    public static let name = "MultiVAE"
    public static let summary = "Variational auto-encoder with a multinomial likelihood and KL annealing (Liang et al. 2018)"
    public static let kind = ModelKind.autoencoder
    public static let parameters: [ConfigKey] = [
        SharedKeys.mlpHiddenSize([600]),
        SharedKeys.latentDimension(128),
        SharedKeys.dropoutProb(0.5),
        SharedKeys.annealCap(0.2),
        SharedKeys.totalAnnealSteps(200_000),
    ]
    public static let testSettings: [[String: ConfigValue]] = [["mlp_hidden_size": .list([.int(5)]), "latent_dimension": .int(6)]]

    let hidden: [Int], latent: Int, dropout: Float, annealCap: Float, totalAnnealSteps: Int
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    private var input: AutoEncoderInput?
    private var encoder = MLP([], prefix: "encoder"), decoder = MLP([], prefix: "decoder")

    /// The latent code's size: half the encoder output.
    var code: Int { latent / 2 }

    public init(parameters: ModelParameters) throws {
        hidden = try parameters.intList("mlp_hidden_size", in: 1...100_000)
        latent = try parameters.int("latent_dimension", in: 2...100_000)
        guard latent % 2 == 0 else {
            throw parameters.invalid("latent_dimension", "MultiVAE splits the encoder output into μ and log σ², so it must be even, got \(latent)")
        }
        dropout = Float(try parameters.double("dropout_prob", in: 0...0.99))
        annealCap = Float(try parameters.double("anneal_cap", in: 0...10))
        totalAnnealSteps = try parameters.int("total_anneal_steps", in: 0...Int.max)
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        input = AutoEncoderInput(trainMatrix: data.trainMatrix)
        let initial: Parameters
        (encoder, decoder, initial) = MLP.autoEncoder(items: data.itemCount, hidden: hidden, encoderOutput: latent, code: code, rng: &rng)
        return initial
    }

    public func exampleCount(_ data: TrainingData) -> Int { data.userCount }

    /// The negative multinomial log-likelihood plus β times the KL divergence to N(0, I).
    public func loss(_ batch: TrainingBatch, _ p: [String: Variable], tape: Tape, rng: inout SeededGenerator) -> Variable {
        let beta = AutoEncoderParameters.klWeight(step: batch.step, cap: annealCap, totalSteps: totalAnnealSteps)
        let users = batch.users
        let x = input!.encoderInput(users, dropout: dropout, rng: &rng)
        let noise = Initializer.normal(rows: users.count, columns: code, std: batch.unitNoise ? 1 : 0.01, rng: &rng)
        let h = encoder(x, p, tape: tape)
        let mu = tape.columns(h, 0..<code), logVariance = tape.columns(h, code..<latent)
        let z = tape.add(mu, tape.mul(tape.constant(noise), tape.exp(tape.affine(logVariance, scale: 0.5))))
        let logits = decoder(z, p, tape: tape)
        let likelihood = tape.affine(tape.mean(tape.multinomialLogLikelihood(logits, input!.target(users))), scale: -1)
        let inner = tape.sub(tape.sub(tape.affine(logVariance, scale: 1, shift: 1), tape.square(mu)), tape.exp(logVariance))
        let kl = tape.affine(tape.mean(tape.sumRows(inner)), scale: -0.5 * beta)
        return tape.add(likelihood, kl)
    }

    public func cost(_ shape: WorkShape) -> ModelCost? {
        MLP.autoEncoderCost(shape, hidden: hidden, encoderOutput: latent, code: code)
    }

    public func memory(_ shape: WorkShape) -> MemoryEstimate? {
        MLP.autoEncoderMemory(shape, hidden: hidden, encoderOutput: latent, code: code)
    }

    public func scores(for users: ArraySlice<Int32>, into block: inout Matrix, compute: Compute) {
        var rng = SeededGenerator(seed: 0)
        let tape = Tape(compute: compute)
        let p = tape.leaves(parameters) { _ in false }
        let h = encoder(input!.encoderInput(Array(users), dropout: 0, rng: &rng), p, tape: tape)
        decoder.scores(tape.columns(h, 0..<code), p, tape: tape, into: &block)
    }
}
