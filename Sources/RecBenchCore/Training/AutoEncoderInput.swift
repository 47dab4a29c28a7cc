/// Input rows for auto-encoder models (RecBole's `AutoEncoderMixin`): each user's train
/// items as a binary row; the encoder sees it L2-normalised with dropout (kept entries
/// scaled by 1/(1−p)), as a sparse matrix, so the first layer costs nnz × hidden.
public struct AutoEncoderInput: Sendable {
    /// users × items, 1 where the user has the item in train.
    public let ratings: SparseMatrix

    /// Binary rows from the train matrix (duplicates count once, as RecBole's history matrix).
    public init(trainMatrix: SparseMatrix) { ratings = trainMatrix.binarized() }

    /// The raw binary rows of `users` (the reconstruction target).
    public func target(_ users: [Int32]) -> SparseMatrix {
        rows(users) { _, _ in 1 }
    }

    /// The encoder input of `users`: normalised rows, entries dropped with probability
    /// `dropout` (using `rng`) and the rest scaled by 1/(1−dropout).
    public func encoderInput(_ users: [Int32], dropout: Float, rng: inout SeededGenerator) -> SparseMatrix {
        let scale = dropout > 0 ? 1 / (1 - dropout) : 1
        // One draw per train entry, users in order, entries in order.
        return rows(users) { r, _ in
            if dropout > 0 && rng.nextUnitFloat() < dropout { return 0 }
            let norm = Float(ratings.entries(ofRow: Int(users[r])).count).squareRoot()
            return scale / max(norm, 1e-12)
        }
    }

    private func rows(_ users: [Int32], value: (Int, Int) -> Float) -> SparseMatrix {
        // The train rows are sorted and duplicate-free, so the result's rows are too.
        var starts = [0], c = [Int32](), v = [Float]()
        let capacity = users.reduce(0) { $0 + ratings.entries(ofRow: Int($1)).count }
        starts.reserveCapacity(users.count + 1); c.reserveCapacity(capacity); v.reserveCapacity(capacity)
        for (row, u) in users.enumerated() {
            for (k, e) in ratings.entries(ofRow: Int(u)).enumerated() {
                let x = value(row, k)
                if x != 0 { c.append(ratings.columnIndices[e]); v.append(x) }
            }
            starts.append(c.count)
        }
        return SparseMatrix(rows: users.count, columns: ratings.columns, rowStarts: starts, columnIndices: c, values: v)
    }
}

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

extension Tape {
    /// Every parameter as a leaf: trainable when `trainable(name)`, else constant.
    public func leaves(_ parameters: Parameters, trainable: (String) -> Bool = { _ in true }) -> [String: Variable] {
        Dictionary(uniqueKeysWithValues: parameters.names.map { ($0, trainable($0) ? parameter(parameters[$0]) : constant(parameters[$0])) })
    }
}

/// The gradients of the trainable leaves.
public func gradients(_ leaves: [String: Variable]) -> [String: Matrix] {
    var g: [String: Matrix] = [:]
    for (name, v) in leaves where v.requiresGrad {
        g[name] = v.grad ?? Matrix(rows: v.value.rows, columns: v.value.columns)
    }
    return g
}

/// Hyperparameters the auto-encoders share, declared once (one config drives them all, so
/// their meaning must not drift between model files).
public enum AutoEncoderParameters {
    /// Encoder hidden layer sizes (mirrored in the decoder): MultiDAE, MultiVAE.
    public static let hiddenSizes = ConfigKey("mlp_hidden_size", "list of int", .list([.int(600)]),
                                              "MultiDAE / MultiVAE: hidden layer sizes of the encoder (mirrored in the decoder).")
    /// Input dropout: MultiDAE, MultiVAE, RecVAE.
    public static let dropout = ConfigKey("dropout_prob", "float", .double(0.5), "MultiDAE / MultiVAE / RecVAE: input dropout.")
}
