import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// NNCF (Bai et al. 2017, "A Neural Collaborative Filtering Model with Interaction-based
/// Neighborhood"), as RecBole 1.2.1 trains it: NCF's MLP over the user-item product and a
/// convolution of each side's neighbourhood.
///
///     N(u): `neigh_num` of u's train items drawn uniformly with replacement, once (`neigh_info_method: random`);
///           N(i) likewise from i's users; no train interaction: the padding row, `neigh_num` times
///     c_u = flatten(ReLU(maxpool_P(Conv1d_k(M_U[N(u)]))))        (channels `num_conv_kernel`, kernel k, pool P)
///     c_i = the same over M_I[N(i)] with its own convolution
///     z(u, i) = w · MLP(dropout([e_u ⊙ e_i | c_u | c_i])) + b    (ReLU after every hidden layer; dropout before each)
///     loss = BCE(σ(z), label) over positives and drawn negatives (uniform by default)
///
/// Embeddings N(0, 0.01²), the padding rows included (trainable, as in RecBole); convolutions
/// and linear layers as torch initialises them. Full ranking: each side's convolution once
/// per user and item, the first layer split by part, the rest as GEMMs over item tiles.
public struct NNCF: PointwiseModel, ScoresWhenPrepared {
    public static let name = "NNCF"
    public static let summary = "Neural CF with convolved neighbourhood embeddings of the user and the item (Bai et al. 2017)"
    public static let kind = ModelKind.convolutional
    public static let parameters: [ConfigKey] = [
        ConfigKey("ui_embedding_size", "int", .int(64), "NNCF: width of the user and item embeddings whose product enters the MLP."),
        ConfigKey("neigh_embedding_size", "int", .int(32), "NNCF: width of the neighbour embeddings (the convolution's input channels)."),
        ConfigKey("num_conv_kernel", "int", .int(128), "NNCF: the convolution's output channels."),
        ConfigKey("conv_kernel_size", "int", .int(5), "NNCF: the convolution's width, in neighbours."),
        ConfigKey("pool_kernel_size", "int", .int(5), "NNCF: the max-pooling window and stride (a last partial window is dropped)."),
        SharedKeys.mlpHiddenSize([128, 64, 32, 16]),
        ConfigKey("neigh_num", "int", .int(20),
                  "NNCF: neighbours per user and item, drawn with replacement (so more than a history holds is allowed); "
                      + "at least conv_kernel_size + pool_kernel_size − 1."),
        ConfigKey("dropout", "float", .double(0.5), "NNCF: dropout before each of the MLP's layers, while training.")
            .searched(.uniform(low: 0, high: 0.7)),
        ConfigKey("neigh_info_method", "random", .string("random"),
                  "NNCF: how neighbours are chosen; only random (RecBole's default) runs: RecBole 1.2.1's knn raises a TypeError, louvain is not built."),
        ConfigKey("resolution", "float", .double(1), "NNCF: the Louvain algorithm's resolution, read only by neigh_info_method louvain (not built)."),
    ]
    public static let testSettings: [[String: ConfigValue]] = [
        ["ui_embedding_size": .int(3), "neigh_embedding_size": .int(2), "num_conv_kernel": .int(3), "conv_kernel_size": .int(2),
         "pool_kernel_size": .int(2), "neigh_num": .int(5), "mlp_hidden_size": .list([.int(4), .int(3)]), "dropout": .double(0.2)],
        ["ui_embedding_size": .int(2), "neigh_embedding_size": .int(3), "num_conv_kernel": .int(2), "conv_kernel_size": .int(3),
         "pool_kernel_size": .int(1), "neigh_num": .int(4), "mlp_hidden_size": .list([.int(3)]), "dropout": .double(0)],
    ]

    let width: Int, neighbourWidth: Int, channels: Int, kernel: Int, pool: Int, hidden: [Int], neighbours: Int, dropout: Float
    /// Pooled windows per side: ⌊(neigh_num − kernel + 1) / pool⌋.
    var windows: Int { (neighbours - kernel + 1) / pool }
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var sampler: PointwiseSampler?
    /// Each user's neighbour items and each item's neighbour users (`neigh_num` per row).
    var userNeighbours: [Int32] = [], itemNeighbours: [Int32] = []

    public init(parameters: ModelParameters) throws {
        width = try parameters.int("ui_embedding_size", in: 1...4096)
        neighbourWidth = try parameters.int("neigh_embedding_size", in: 1...4096)
        channels = try parameters.int("num_conv_kernel", in: 1...4096)
        kernel = try parameters.int("conv_kernel_size", in: 1...1024)
        pool = try parameters.int("pool_kernel_size", in: 1...1024)
        hidden = try parameters.intList("mlp_hidden_size", in: 1...65536)
        guard !hidden.isEmpty else { throw parameters.invalid("mlp_hidden_size", "needs at least one layer") }
        neighbours = try parameters.int("neigh_num", in: 1...100_000)
        guard neighbours >= kernel + pool - 1 else {
            throw parameters.invalid("neigh_num", "is \(neighbours), but the convolution (conv_kernel_size \(kernel)) and pooling (pool_kernel_size \(pool)) "
                + "need at least \(kernel + pool - 1) neighbours to leave one pooled value, as in RecBole")
        }
        dropout = Float(try parameters.double("dropout", in: 0...0.99))
        switch try parameters.choice("neigh_info_method", of: ["random", "knn", "louvain"]) {
        case "knn": throw parameters.invalid("neigh_info_method", "knn cannot run in RecBole 1.2.1 (it passes the method name to ComputeSimilarity "
            + "as its block size and raises a TypeError), so there is nothing to match; use random")
        case "louvain": throw parameters.invalid("neigh_info_method", "louvain (community detection) is not built in recbench; use random")
        default: break
        }
        _ = try parameters.double("resolution", in: .leastNonzeroMagnitude...1e6)   // louvain's, checked as RecBole's yaml types it
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        prepareSampler(data, context: context)
        var draws = SeededGenerator(seed: rng.next())
        userNeighbours = Self.draw(data.trainMatrix, count: neighbours, padding: Int32(data.itemCount), rng: &draws)
        itemNeighbours = Self.draw(data.trainMatrix.transposed(), count: neighbours, padding: Int32(data.userCount), rng: &draws)
        var initial = Parameters()
        for (name, rows, columns) in [("user_embedding", data.userCount, width), ("item_embedding", data.itemCount, width),
                                      ("user_neigh_embedding", data.itemCount + 1, neighbourWidth),
                                      ("item_neigh_embedding", data.userCount + 1, neighbourWidth)] {
            initial.add(name, Initializer.normal(rows: rows, columns: columns, std: 0.01, rng: &rng))
        }
        for side in ["user_conv", "item_conv"] {
            initial.add("\(side).weight", Initializer.torchLinear(fanIn: kernel * neighbourWidth, rows: kernel * neighbourWidth, columns: channels, rng: &rng))
            initial.add("\(side).bias", Initializer.torchLinear(fanIn: kernel * neighbourWidth, rows: 1, columns: channels, rng: &rng))
        }
        let widths = [width + 2 * windows * channels] + hidden + [1]
        for (l, (input, output)) in zip(widths, widths.dropFirst()).enumerated() {
            initial.add("mlp.\(l).weight", Initializer.torchLinear(fanIn: input, rows: input, columns: output, rng: &rng))
            initial.add("mlp.\(l).bias", Initializer.torchLinear(fanIn: input, rows: 1, columns: output, rng: &rng))
        }
        return initial
    }

    /// `count` of each row's columns, uniformly with replacement; an empty row gets `padding`.
    static func draw(_ m: SparseMatrix, count: Int, padding: Int32, rng: inout SeededGenerator) -> [Int32] {
        var out: [Int32] = []
        out.reserveCapacity(m.rows * count)
        for r in 0..<m.rows {
            let columns = m.columns(ofRow: r)
            for _ in 0..<count { out.append(columns.isEmpty ? padding : columns[columns.startIndex + rng.nextInt(below: columns.count)]) }
        }
        return out
    }

    /// Scoring convolves every user's and every item's neighbours at once: per id, its windows'
    /// stacked rows (kernel × width floats each, gathered and then concatenated) and the
    /// convolution's output before and after pooling. `neigh_num` may exceed any history.
    public func memory(_ shape: WorkShape) -> MemoryEstimate? {
        let ids = shape.users + shape.items, positions = windows * pool
        let bytes = 4 * Double(ids) * Double(positions) * Double(2 * kernel * neighbourWidth + 2 * channels)
        return MemoryEstimate(bytes: bytes, what: "the convolution's \(ids) × \(positions) neighbour windows (neigh_num \(neighbours))")
    }

    /// c for the listed ids of one side: the convolution over their neighbours' embeddings as
    /// one GEMM of the windows' stacked rows (im2col), max-pooled, ReLU, flattened per id.
    func convolved(_ ids: [Int32], neighbours table: [Int32], embedding: Variable, side: String, _ p: [String: Variable], tape: Tape) -> Variable {
        let positions = windows * pool
        let columns = (0..<kernel).map { k in
            tape.gather(embedding, rows: ids.flatMap { id in (0..<positions).map { table[Int(id) * neighbours + $0 + k] } })
        }
        let conv = tape.linear(kernel == 1 ? columns[0] : tape.concatColumns(columns), p["\(side).weight"]!, p["\(side).bias"]!)
        let rows = ids.count * windows
        let bags = SparseMatrix(rows: rows, columns: conv.value.rows, rowIndices: (0..<rows).flatMap { repeatElement(Int32($0), count: pool) },
                                columnIndices: (0..<Int32(rows * pool)).map { $0 }, values: nil)
        let pooled = tape.relu(tape.pooledMax(conv, bags: bags, rows: (0..<Int32(rows)).map { $0 }, empty: 0))
        return tape.reshaped(pooled, rows: ids.count, columns: windows * channels)
    }

    public func logits(users: [Int32], items: [Int32], _ p: [String: Variable], tape: Tape, dropout rng: inout SeededGenerator?) -> Variable {
        // Each side's convolution once per distinct id of the batch, then gathered per pair.
        let (us, uIndex) = Self.firstSeen(users), (its, iIndex) = Self.firstSeen(items)
        let cu = convolved(us, neighbours: userNeighbours, embedding: p["user_neigh_embedding"]!, side: "user_conv", p, tape: tape)
        let ci = convolved(its, neighbours: itemNeighbours, embedding: p["item_neigh_embedding"]!, side: "item_conv", p, tape: tape)
        let mf = tape.mul(tape.gather(p["user_embedding"]!, rows: users), tape.gather(p["item_embedding"]!, rows: items))
        var h = tape.concatColumns([mf, tape.gather(cu, rows: uIndex), tape.gather(ci, rows: iIndex)])
        for l in 0...hidden.count {
            if l < hidden.count { h = Dropout.apply(h, rate: dropout, tape: tape, rng: &rng) }
            h = tape.linear(h, p["mlp.\(l).weight"]!, p["mlp.\(l).bias"]!)
            if l < hidden.count { h = tape.relu(h) }
        }
        return h
    }

    /// The distinct ids in first-seen order, and each listed id's position among them.
    static func firstSeen(_ ids: [Int32]) -> ([Int32], [Int32]) {
        var position: [Int32: Int32] = [:], unique: [Int32] = []
        let index = ids.map { id in
            if let k = position[id] { return k }
            position[id] = Int32(unique.count); unique.append(id)
            return Int32(unique.count - 1)
        }
        return (unique, index)
    }

    /// Per training row: the MLP forward and backward (6 FLOPs per weight); the convolutions
    /// per distinct id of a batch are left out (at most users + items per batch). Validation:
    /// each side's convolution once, the product term (width × first layer) and the rest of
    /// the MLP per pair.
    public func cost(_ s: WorkShape) -> ModelCost? {
        let widths = [Double(width + 2 * windows * channels)] + hidden.map(Double.init) + [1]
        let weights = zip(widths, widths.dropFirst()).map { $0 * $1 }.reduce(0, +)
        let conv = Double(windows * pool * kernel * neighbourWidth * channels) * Double(s.users + s.items)
        let pairs = Double(s.users) * Double(s.items)
        let flops = s.pointwiseRows * 6 * weights + 2 * conv + 2 * pairs * (weights - widths[0] * widths[1] + Double(width) * widths[1])
        return ModelCost(nominal: flops, executed: flops)
    }
}

extension NNCF {
    /// Each side's convolution once for every user and item; the first layer split into its
    /// product, user and item parts; per user, the product part is one GEMM of the item
    /// embeddings with diag(e_u) W_mf, added to the items' part, then the rest of the MLP.
    public func preparedForScoring(compute: Compute) -> any Scorer {
        let tape = Tape(compute: compute)
        let p = tape.leaves(parameters) { _ in false }
        let users = Int32(parameters["user_embedding"].rows), items = Int32(parameters["item_embedding"].rows)
        let cu = convolved(Array(0..<users), neighbours: userNeighbours, embedding: p["user_neigh_embedding"]!, side: "user_conv", p, tape: tape).value
        let ci = convolved(Array(0..<items), neighbours: itemNeighbours, embedding: p["item_neigh_embedding"]!, side: "item_conv", p, tape: tape).value
        let w1 = parameters["mlp.0.weight"], part = windows * channels
        let userHalf = BLAS.gemm(cu, w1.rows(width..<width + part), compute: compute)
        let itemHalf = BLAS.gemm(ci, w1.rows(width + part..<width + 2 * part), compute: compute)
        let product = w1.rows(0..<width)
        let network = SplitMLP(firstBias: parameters["mlp.0.bias"],
                               layers: (1...hidden.count).map { (parameters["mlp.\($0).weight"], parameters["mlp.\($0).bias"]) })
        return PreparedScores { [parameters] users, block, compute in
            for i in 0..<block.values.count { block.values[i] = 0 }
            let embeddings = parameters["item_embedding"], list = Array(users)
            // Per user, the GMF part crosses the split: E_items · diag(e_u) · W₁[GMF rows] joins the item half.
            network.addScores(userHalf: RowKernels.gather(userHalf, rows: list), itemHalf: itemHalf, into: &block, compute: compute) { row, items in
                BLAS.gemm(embeddings, product.scalingRows(by: parameters["user_embedding"].row(Int(list[row]))), alpha: 1, beta: 1, into: &items,
                          compute: .serial)
            }
        }
    }
}
