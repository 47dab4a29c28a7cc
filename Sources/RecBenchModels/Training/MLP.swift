import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

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

    /// The forward pass on a dense input with the last layer written into `block` (scoring:
    /// the users × items output is never allocated apart from the evaluator's block).
    public func scores(_ x: Variable, _ p: [String: Variable], tape: Tape, into block: inout Matrix) {
        let last = dimensions.count - 2
        var h = x
        for i in 0..<last { h = tape.linear(i == 0 ? h : tape.tanh(h), p["\(prefix).\(i).weight"]!, p["\(prefix).\(i).bias"]!) }
        BLAS.linear(last == 0 ? h.value : tape.tanh(h).value, p["\(prefix).\(last).weight"]!.value, bias: p["\(prefix).\(last).bias"]!.value,
                    into: &block, compute: tape.compute)
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
    /// A dropout mask (`Matrix.dropoutMask`) seeded by one draw from `rng`.
    public static func dropoutMask(rows: Int, columns: Int, rate: Float, rng: inout SeededGenerator, compute: Compute) -> Matrix {
        Matrix.dropoutMask(rows: rows, columns: columns, rate: rate, seed: rng.next(), compute: compute)
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
    /// The weights of an auto-encoder built by `autoEncoder`, as a run holds them while training.
    public static func autoEncoderMemory(_ s: WorkShape, hidden: [Int], encoderOutput: Int, code: Int) -> MemoryEstimate {
        let encoder = [s.items] + hidden + [encoderOutput], decoder = [code] + hidden.reversed() + [s.items]
        let weights = [encoder, decoder].reduce(0.0) { total, dims in total + zip(dims, dims.dropFirst()).reduce(0.0) { $0 + Double($1.0 * $1.1) } }
        return .trainedWeights(weights)
    }

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
        let width = h.first ?? out   // without hidden layers the first layer maps the items straight to the encoder's output
        let first = 2 * U * n * width, firstSparse = 2 * nnz * width
        return ModelCost(nominal: 3 * dense + 2 * first + (dense + first),
                         executed: 3 * dense + 2 * firstSparse + (dense + firstSparse), scoringInner: hidden.first ?? code)
    }
}

/// Full ranking for an MLP over [user part | item part]: its first layer splits into a user
/// half and an item half (each computed once), so a user × every item costs one broadcast
/// add and ReLU, then the remaining layers as GEMMs over tiles of items (DeepFM's deep part,
/// NeuMF's MLP).
///
/// Users go to the workers; each tile (one user × `tileItems` items) stays in cache through
/// every layer, its GEMMs single-threaded, and the last layer (one output) is a dot product
/// per row added straight into the scores. A tile is computed the same way on any number of
/// workers, so the scores do not depend on the threads.
public struct SplitMLP: Sendable {
    /// b₁ (1 × width of the first layer).
    public let firstBias: Matrix
    /// The later layers (weight in × out, bias 1 × out); the activation after each but the last,
    /// whose output is the score (one column; activated too with `activatesScore`).
    public let layers: [(weight: Matrix, bias: Matrix)]
    /// Items per tile: NeuMF's first-layer tile (256 × 128 floats) and the next layer's
    /// output stay in L2 while the GEMM and the dot product read them. (Tiles of 64 to
    /// 1,682 items, and an item-major layout, measured no faster: the GEMMs run at ~90 % of
    /// one core's sgemm rate either way.)
    static let tileItems = 256
    /// The hidden layers' activation (RecBole's MLPLayers: ReLU; tanh for FNN and DSSM, sigmoid for NFM).
    public let activation: HiddenActivation
    /// Whether the score itself is activated too (xDeepFM's deep part ends in a ReLU).
    public let activatesScore: Bool
    /// The middle layers' weights, packed once for every tile.
    let packed: [PackedRightFactor]

    /// The layers after the split first layer.
    public init(firstBias: Matrix, layers: [(weight: Matrix, bias: Matrix)], activation: HiddenActivation = .relu, activatesScore: Bool = false) {
        precondition(layers.last?.weight.columns == 1, "SplitMLP: the last layer gives one score per pair")
        self.firstBias = firstBias; self.layers = layers; self.activation = activation; self.activatesScore = activatesScore
        packed = layers.dropLast().map { PackedRightFactor($0.weight) }
    }

    /// Adds the MLP's output for every (row of `userHalf`, row of `itemHalf`) pair to `block`
    /// (userHalf.rows × itemHalf.rows).
    public func addScores(userHalf: Matrix, itemHalf: Matrix, into block: inout Matrix, compute: Compute) {
        let n = itemHalf.rows
        precondition(block.rows == userHalf.rows && block.columns == n, "SplitMLP: block is \(block.rows)×\(block.columns), expected \(userHalf.rows)×\(n)")
        block.updateRows(compute: compute) { u, out in
            for start in stride(from: 0, to: n, by: Self.tileItems) {
                addTile(user: u, items: start..<min(n, start + Self.tileItems), userHalf: userHalf, itemHalf: itemHalf, into: out + start)
            }
        }
    }

    /// As `addScores`, but each user's item half first gets a term of its own (a product of
    /// user and item embeddings that crosses the split: PNN's cross pairs, NFM's
    /// bi-interaction), added by `cross(row, &items)`; one user at a time per worker.
    public func addScores(userHalf: Matrix, itemHalf: Matrix, into block: inout Matrix, compute: Compute,
                          cross: @Sendable (Int, inout Matrix) -> Void) {
        let columns = block.columns
        block.updateRows(compute: compute) { row, out in
            var items = itemHalf
            cross(row, &items)
            var scores = Matrix(rows: 1, columns: columns)
            addScores(userHalf: userHalf.rows(row..<row + 1), itemHalf: items, into: &scores, compute: .serial)
            for j in 0..<columns { out[j] += scores.values[j] }
        }
    }

    /// One user × a tile of items: h = act(user half + item half + b₁), the middle layers
    /// (GEMM over a bias-filled output, act), then the last layer's dot product into `out`.
    func addTile(user u: Int, items: Range<Int>, userHalf: Matrix, itemHalf: Matrix, into out: UnsafeMutablePointer<Float>) {
        let width = itemHalf.columns
        var h = [Matrix(uninitializedRows: items.count, columns: width)]
        Matrix.withBuffers(reading: [userHalf, itemHalf, firstBias], writing: &h) { b in
            let x = b.read[0] + u * width, b1 = b.read[2]
            for (r, i) in items.enumerated() {
                let row = b.write[0] + r * width, y = b.read[1] + i * width
                for j in stride(from: 0, to: width, by: 8) {
                    (Lanes.load(x, j, count: width) + Lanes.load(y, j, count: width) + Lanes.load(b1, j, count: width)).store(row, j, count: width)
                }
            }
        }
        var hidden = activation.apply(h[0], compute: .serial)
        for (layer, weight) in zip(layers.dropLast(), packed) {
            var next = Matrix(repeatingRow: layer.bias, count: items.count, compute: .serial)
            BLAS.gemm(hidden, weight, accumulate: true, into: &next)
            hidden = activation.apply(next, compute: .serial)
        }
        let last = layers.last!, inner = hidden.columns, bias = last.bias.values[0]
        hidden.values.withUnsafeBufferPointer { hv in
            last.weight.values.withUnsafeBufferPointer { w in
                for r in 0..<items.count {
                    var sum = Lanes()
                    for j in stride(from: 0, to: inner, by: 8) {
                        sum += Lanes.load(hv.baseAddress! + r * inner, j, count: inner) * Lanes.load(w.baseAddress!, j, count: inner)
                    }
                    out[r] += activatesScore ? activation.apply(Lanes(repeating: sum.sum() + bias))[0] : sum.sum() + bias
                }
            }
        }
    }
}

/// The activation after each hidden layer of an MLP: Linalg's, whose kernels fuse it into batch norm, with its tape op
/// in Autodiff.
public typealias HiddenActivation = PointwiseActivation
