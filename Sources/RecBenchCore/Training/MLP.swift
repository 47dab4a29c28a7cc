/// A stack of dense layers with tanh between them (none after the last), as RecBole's
/// `mlp_layers`. Weights are stored in × out (y = x·W + b).
public struct MLP: Sendable {
    /// Layer sizes, input first.
    public let dimensions: [Int]
    /// Parameter-name prefix.
    public let prefix: String

    public init(_ dimensions: [Int], prefix: String) {
        self.dimensions = dimensions
        self.prefix = prefix
    }

    /// Adds Xavier-normal weights and zero biases.
    public func initialize(_ parameters: inout Parameters, rng: inout SeededGenerator) {
        for (i, (input, output)) in zip(dimensions, dimensions.dropFirst()).enumerated() {
            parameters.add("\(prefix).\(i).weight", Initializer.xavierNormal(fanIn: input, fanOut: output, rng: &rng))
            parameters.add("\(prefix).\(i).bias", Matrix(rows: 1, columns: output))
        }
    }

    /// The forward pass on a dense input.
    public func callAsFunction(_ x: Variable, _ p: [String: Variable], tape: Tape) -> Variable {
        hidden(tape.linear(x, p["\(prefix).0.weight"]!, p["\(prefix).0.bias"]!), p, tape: tape)
    }

    /// The forward pass on a sparse input (first layer as a sparse product).
    public func callAsFunction(_ x: SparseMatrix, _ p: [String: Variable], tape: Tape) -> Variable {
        hidden(tape.linear(x, p["\(prefix).0.weight"]!, p["\(prefix).0.bias"]!), p, tape: tape)
    }

    /// Layers 1… on the first layer's output.
    private func hidden(_ first: Variable, _ p: [String: Variable], tape: Tape) -> Variable {
        var h = first
        for i in 1..<(dimensions.count - 1) {
            h = tape.linear(tape.tanh(h), p["\(prefix).\(i).weight"]!, p["\(prefix).\(i).bias"]!)
        }
        return h
    }
}

extension MLP {
    /// An auto-encoder's pair: encoder n → hidden… → `encoderOutput`, decoder `code` →
    /// …hidden (mirrored) → n, with their initial parameters (encoder first, then decoder).
    public static func autoEncoder(items: Int, hidden: [Int], encoderOutput: Int, code: Int,
                                   rng: inout SeededGenerator) -> (encoder: MLP, decoder: MLP, parameters: Parameters) {
        let encoder = MLP([items] + hidden + [encoderOutput], prefix: "encoder")
        let decoder = MLP([code] + hidden.reversed() + [items], prefix: "decoder")
        var parameters = Parameters()
        encoder.initialize(&parameters, rng: &rng)
        decoder.initialize(&parameters, rng: &rng)
        return (encoder, decoder, parameters)
    }
}
