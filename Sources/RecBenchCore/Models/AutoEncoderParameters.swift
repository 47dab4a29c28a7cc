/// Hyperparameters the auto-encoders share, declared once (one config drives them all, so
/// their meaning must not drift between model files).
public enum AutoEncoderParameters {
    /// Encoder hidden layer sizes (mirrored in the decoder): MultiDAE, MultiVAE.
    public static let hiddenSizes = ConfigKey("mlp_hidden_size", "list of int", .list([.int(600)]),
                                              "MultiDAE / MultiVAE: hidden layer sizes of the encoder (mirrored in the decoder).")
    /// Input dropout: MultiDAE, MultiVAE, RecVAE, MacridVAE.
    public static let dropout = ConfigKey("dropout_prob", "float", .double(0.5), "MultiDAE / MultiVAE / RecVAE / MacridVAE: input dropout.")
    /// The KL weight's cap: MultiVAE, MacridVAE.
    public static let annealCap = ConfigKey("anneal_cap", "float", .double(0.2), "MultiVAE / MacridVAE: largest KL weight β.")
    /// The KL weight's ramp: MultiVAE, MacridVAE.
    public static let totalAnnealSteps = ConfigKey("total_anneal_steps", "int", .int(200_000),
                                                   "MultiVAE / MacridVAE: batches over which β grows linearly to anneal_cap (0: β = anneal_cap).")

    /// β after `step` batches: min(cap, step / total), or the cap when there is no ramp.
    public static func klWeight(step: Int, cap: Float, totalSteps: Int) -> Float {
        totalSteps > 0 ? min(cap, Float(step) / Float(totalSteps)) : cap
    }
}
