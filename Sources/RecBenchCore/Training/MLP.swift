import Linalg
import Autodiff

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
    /// A dropout mask: each entry 0 with probability `rate`, else 1/(1 − rate) (inverted
    /// dropout, as torch's), drawn row by row from `rng`.
    public static func dropoutMask(rows: Int, columns: Int, rate: Float, rng: inout SeededGenerator) -> Matrix {
        let keep = 1 / (1 - rate)
        var mask = Matrix(uninitializedRows: rows, columns: columns)
        for i in 0..<mask.values.count { mask.values[i] = rng.nextUnitFloat() < rate ? 0 : keep }
        return mask
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

extension MLP {
    /// FLOPs of an epoch of an auto-encoder built by `autoEncoder` and trained on every user,
    /// plus one validation forward. Dense layers: forward + two backward GEMMs. The first
    /// layer: forward + weight gradient, dense in RecBole (nominal), sparse here (executed).
    public static func autoEncoderCost(_ s: WorkShape, hidden: [Int], encoderOutput: Int, code: Int) -> ModelCost {
        let U = Double(s.users), n = Double(s.items), nnz = Double(s.trainPairs)
        let h = hidden.map(Double.init), out = Double(encoderOutput)
        let encoder = zip(h, Array(h.dropFirst()) + [out]).map { $0 * $1 }
        let decoderDims = [Double(code)] + h.reversed() + [n]
        let decoder = zip(decoderDims, decoderDims.dropFirst()).map { $0 * $1 }
        let dense = 2 * U * (encoder.reduce(0, +) + decoder.reduce(0, +))   // forward, all dense layers
        let first = 2 * U * n * h[0], firstSparse = 2 * nnz * h[0]
        return ModelCost(nominal: 3 * dense + 2 * first + (dense + first),
                         executed: 3 * dense + 2 * firstSparse + (dense + firstSparse), scoringInner: hidden.first ?? code)
    }
}

/// Full ranking for an MLP over [user part | item part]: its first layer splits into a user
/// half and an item half (each computed once), so a user × every item costs one broadcast
/// add and ReLU, then the remaining layers as GEMMs over chunks of (user, item) rows
/// (DeepFM's deep part, NeuMF's MLP).
public struct SplitMLP: Sendable {
    /// b₁ (1 × width of the first layer).
    public let firstBias: Matrix
    /// The later layers (weight in × out, bias 1 × out); ReLU after each but the last.
    public let layers: [(weight: Matrix, bias: Matrix)]

    /// The layers after the split first layer.
    public init(firstBias: Matrix, layers: [(weight: Matrix, bias: Matrix)]) {
        self.firstBias = firstBias; self.layers = layers
    }

    /// Adds the MLP's output for every (row of `userHalf`, row of `itemHalf`) pair to `block`
    /// (userHalf.rows × itemHalf.rows), ~64k pairs per pass.
    public func addScores(userHalf: Matrix, itemHalf: Matrix, into block: inout Matrix, compute: Compute) {
        let n = itemHalf.rows, chunk = max(1, (1 << 16) / max(1, n))
        for start in stride(from: 0, to: userHalf.rows, by: chunk) {
            let count = min(chunk, userHalf.rows - start)
            let out = outputs(userHalf: userHalf, users: start..<start + count, itemHalf: itemHalf, compute: compute)
            for r in 0..<count { for i in 0..<n { block.values[(start + r) * n + i] += out.values[r * n + i] } }
        }
    }

    /// The last layer's output (one column) for the listed users × every item, user-major.
    func outputs(userHalf: Matrix, users: Range<Int>, itemHalf: Matrix, compute: Compute) -> Matrix {
        let n = itemHalf.rows, width = itemHalf.columns
        var h = [Matrix(uninitializedRows: users.count * n, columns: width)]
        Matrix.withBuffers(reading: [userHalf, itemHalf, firstBias], writing: &h) { b in
            let (userRows, itemRows, b1, out) = (b.read[0], b.read[1], b.read[2], b.write[0])
            for (r, u) in users.enumerated() {
                for i in 0..<n {
                    let row = out + (r * n + i) * width, x = userRows + u * width, y = itemRows + i * width
                    for j in stride(from: 0, to: width, by: 8) {
                        Lanes.relu(Lanes.load(x, j, count: width) + Lanes.load(y, j, count: width) + Lanes.load(b1, j, count: width))
                            .store(row, j, count: width)
                    }
                }
            }
        }
        var hidden = h[0]
        for (l, layer) in layers.enumerated() {
            var next = Matrix(repeatingRow: layer.bias, count: hidden.rows, compute: compute)
            BLAS.gemm(hidden, layer.weight, alpha: 1, beta: 1, into: &next, compute: compute)
            hidden = l == layers.count - 1 ? next : next.map(compute) { Lanes.relu($0) }
        }
        return hidden
    }
}
