import Foundation
import Testing
import RecBenchCore
import Linalg
import Autodiff

/// The encoder's `reading:` path (the last layer past its Q, K and V products on the read rows only) against
/// a full pass whose output is gathered at the same rows: same values, same gradients.
@Suite struct TransformerEncoderTests {
    let ops = AutodiffTests()

    func encoder(layers: Int) throws -> TransformerEncoder {
        let keys = TransformerEncoder.keys(dropout: 0)
        var values = Dictionary(uniqueKeysWithValues: keys.map { ($0.name, $0.defaultValue) })
        values["n_layers"] = .int(layers)
        values["hidden_size"] = .int(8)
        values["inner_size"] = .int(16)
        let config = try Config(layers: [ConfigLayer(source: "test", values: values)], modelKeys: ModelRegistry.parameterNames)
        return try TransformerEncoder(ModelParameters(config: config, declared: keys))
    }

    /// The read rows' values, every parameter's gradient and the input's, of Σ w ⊙ out.
    func pass(_ encoder: TransformerEncoder, _ parameters: Parameters, causal: Bool, partial: Bool) -> (Matrix, [String: Matrix], Matrix) {
        let lengths = [3, 5, 2], reading: [Int32] = [2, 7, 9, 3, 0]
        let tape = Tape(compute: .serial)
        let leaves = tape.leaves(parameters), input = tape.parameter(ops.m(10, 8, 60))
        var rng = SeededGenerator(seed: 1)
        let out = partial
            ? encoder(input, lengths: lengths, causal: causal, reading: reading, leaves, tape: tape, training: true, rng: &rng)
            : tape.gather(encoder(input, lengths: lengths, causal: causal, leaves, tape: tape, training: true, rng: &rng), rows: reading)
        tape.backward(tape.mean(tape.mul(out, tape.constant(ops.m(reading.count, 8, 61)))))
        return (out.value, Tape.gradients(leaves), input.grad!)
    }

    @Test(arguments: [(1, true), (2, true), (2, false)])
    func readingRowsEqualsTheFullPassGathered(layers: Int, causal: Bool) throws {
        let encoder = try encoder(layers: layers)
        var parameters = Parameters(), rng = SeededGenerator(seed: 5)
        encoder.initialize(&parameters, std: 0.3, rng: &rng)
        let (fullOut, fullGrads, fullInput) = pass(encoder, parameters, causal: causal, partial: false)
        let (readOut, readGrads, readInput) = pass(encoder, parameters, causal: causal, partial: true)
        func close(_ a: Matrix, _ b: Matrix) -> Bool {
            a.rows == b.rows && a.columns == b.columns && zip(a.values, b.values).allSatisfy { abs($0 - $1) <= 1e-5 * max(1, abs($1)) }
        }
        #expect(close(readOut, fullOut))
        #expect(close(readInput, fullInput))
        #expect(readInput.values.contains { $0 != 0 })
        for name in parameters.names {
            #expect(close(readGrads[name]!, fullGrads[name]!), "gradient of \(name)")
        }
    }
}
