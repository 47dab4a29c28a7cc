/// Hyperparameters the auto-encoders share, declared once (one config drives them all, so
/// their meaning must not drift between model files).
public enum AutoEncoderParameters {
    /// Encoder hidden layer sizes (mirrored in the decoder): MultiDAE, MultiVAE.
    public static let hiddenSizes = ConfigKey("mlp_hidden_size", "list of int", .list([.int(600)]),
                                              "MultiDAE / MultiVAE: hidden layer sizes of the encoder (mirrored in the decoder).")
    /// Input dropout: MultiDAE, MultiVAE, RecVAE.
    public static let dropout = ConfigKey("dropout_prob", "float", .double(0.5), "MultiDAE / MultiVAE / RecVAE: input dropout.")
}
