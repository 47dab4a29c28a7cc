/// FLOP counts of the learned models per epoch and per validation pass, from their shapes.
/// "Nominal" counts RecBole's algorithm with a dense input layer (what the reference
/// computes); "executed" counts what recbench computes (sparse input layer and gradient,
/// RecVAE's cached old-encoder posterior). A multiply-add is 2 FLOPs; elementwise work is
/// not counted.
public enum LearnedModelCost {
    /// Shapes of a run: evaluated users U, items n, train interactions, distinct train pairs.
    public struct Shape: Sendable {
        public let users: Int, items: Int, trainInteractions: Int, trainPairs: Int
        public init(users: Int, items: Int, trainInteractions: Int, trainPairs: Int) {
            self.users = users; self.items = items; self.trainInteractions = trainInteractions; self.trainPairs = trainPairs
        }
    }

    /// (nominal, executed) FLOPs per epoch including one validation pass, or nil for a model
    /// without a formula.
    public static func flopsPerEpoch(model: String, hyperparameters h: [String: ConfigValue], shape s: Shape) -> (nominal: Double, executed: Double)? {
        let U = Double(s.users), n = Double(s.items), nnz = Double(s.trainPairs)
        func int(_ k: String) -> Double { Double(h[k]?.intValue ?? 0) }
        switch model {
        case "BPR":
            // Per pair: 2 dot products forward and their gradients (d each) ≈ 12·d; validation U·n·d·2.
            let d = int("embedding_size")
            let flops = 12 * Double(s.trainInteractions) * d + 2 * U * n * d
            return (flops, flops)
        case "MultiDAE", "MultiVAE":
            let hidden = h["mlp_hidden_size"].flatMap { v -> [Double]? in
                if case .list(let l) = v { return l.compactMap { $0.intValue }.map(Double.init) } else { return nil }
            } ?? [600]
            let latent = int("latent_dimension")
            // MultiVAE's code is half the encoder output (μ and log σ² are its halves).
            let code = model == "MultiVAE" ? latent / 2 : latent
            let encoder = zip([hidden[0]] + hidden.dropFirst(), Array(hidden.dropFirst()) + [latent]).map { $0 * $1 }
            let decoderDims = [code] + hidden.reversed() + [n]
            let decoder = zip(decoderDims, decoderDims.dropFirst()).map { $0 * $1 }
            let dense = 2 * U * (encoder.reduce(0, +) + decoder.reduce(0, +))   // forward, all dense layers
            let first = 2 * U * n * hidden[0], firstSparse = 2 * nnz * hidden[0]
            // Train: forward + 2× backward for dense layers; first layer forward + weight gradient.
            let nominal = 3 * dense + 2 * first + (dense + first)
            let executed = 3 * dense + 2 * firstSparse + (dense + firstSparse)
            return (nominal, executed)
        case "RecVAE":
            let hd = int("hidden_dimension"), l = int("latent_dimension")
            let encPasses = Double(h["n_enc_epochs"]?.intValue ?? 3), decPasses = Double(h["n_dec_epochs"]?.intValue ?? 1)
            let E = 2 * U * (4 * hd * hd + 2 * hd * l), F1 = 2 * U * n * hd, S1 = 2 * nnz * hd, D = 2 * U * l * n
            // RecBole: encoder pass = forward encoder + old encoder + decoder, backward encoder
            // (dense layers ×2, first layer weight) and decoder input; decoder pass = forward
            // encoder + old encoder + decoder, decoder weight gradient; validation = forward.
            let nominal = encPasses * (4 * E + 3 * F1 + 2 * D) + decPasses * (2 * E + 2 * F1 + 2 * D) + (E + F1 + D)
            // recbench: old-encoder posterior once per epoch, reused by the decoder pass and
            // validation; sparse first layer.
            let executed = encPasses * (3 * E + 2 * S1 + 2 * D) + (E + S1) + decPasses * 2 * D + D
            return (nominal, executed)
        default:
            return nil
        }
    }
}
