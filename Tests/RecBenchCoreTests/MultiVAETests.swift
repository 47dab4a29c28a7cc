import Testing
import RecBenchCore
import Linalg

/// MultiVAE's own tests.
struct MultiVAETests {
    /// RecBole's MultiVAE: `latent_dimension` is the encoder's output, split into μ and log σ²,
    /// so the decoder reads half of it.
    @Test func codeIsHalfTheEncoderOutput() throws {
        let (split, d) = try blockFixture()
        let settings: [String: ConfigValue] = ["latent_dimension": .int(8), "mlp_hidden_size": .list([.int(5)])]
        let model = try #require(try fitted(MultiVAE.self, on: split, dataset: d, settings) as? MultiVAE)
        #expect(model.parameters["encoder.1.weight"].columns == 8)
        #expect(model.parameters["decoder.0.weight"].rows == 4)
    }
}
