import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// LINE (Tang et al. 2015, "LINE: Large-scale Information Network Embedding") on the
/// user-item graph, as RecBole 1.2.1 trains it: first-order proximity between a user's and
/// an item's vertex embeddings, second-order through context embeddings.
///
///     L(±, x) = −mean log σ(±x)
///     each batch of train pairs (u, i), each pair once per negative (`sample_num`), takes one of two sides, with probability ½ each:
///       items: j drawn among the items u has not had     users: v drawn among the users who have not had i
///       neg   = U_u · I_j                                 neg   = U_v · I_i
///       pos_c = U_u · Ic_i,  neg_c = U_u · Ic_j           pos_c = I_i · Uc_u,  neg_c = I_i · Uc_v
///     loss = L(+, U_u · I_i) + L(−, neg) + w₂ (L(+, pos_c) + L(−, neg_c))    (`order: 2`; `order: 1`: the first two)
///     score(u, ·) = U_u · Iᵀ
///
/// RecBole draws the negative users from a reshuffled cyclic list; recbench draws them
/// uniformly (with the same rejection of the item's own users).
public struct LINE: PairwiseModel {
    public static let name = "LINE"
    public static let summary = "First- and second-order proximity embeddings of the user-item graph (Tang et al. 2015)"
    public static let kind = ModelKind.factorisation
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(64),
        ConfigKey("order", "int", .int(2), "LINE: 1 (first-order proximity only) or 2 (also second-order, through context embeddings)."),
        ConfigKey("second_order_loss_weight", "float", .double(1), "LINE: weight w₂ of the second-order terms of the loss.")
            .searched(.loguniform(low: -2.302585092994046, high: 2.302585092994046)),   // 0.1 … 10
    ]
    public static let testSettings: [[String: ConfigValue]] = [["embedding_size": .int(4)], ["embedding_size": .int(3), "order": .int(1)]]

    let width: Int, secondOrder: Bool, secondOrderWeight: Float
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    private var itemsOfUsers = PatternSet(SparseMatrix(rows: 0, columns: 0))
    private var usersOfItems = PatternSet(SparseMatrix(rows: 0, columns: 0))
    private var pairs: (users: [Int32], items: [Int32]) = ([], [])

    public init(parameters: ModelParameters) throws {
        width = try parameters.int("embedding_size", in: 1...4096)
        secondOrder = try parameters.int("order", in: 1...2) == 2
        secondOrderWeight = Float(try parameters.double("second_order_loss_weight", in: 0...1e6))
    }

    /// Xavier-normal embeddings (RecBole's `xavier_normal_initialization`).
    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        var initial = Parameters()
        let tables = [("user_embedding", data.userCount), ("item_embedding", data.itemCount)]
            + (secondOrder ? [("user_context_embedding", data.userCount), ("item_context_embedding", data.itemCount)] : [])
        for (name, rows) in tables { initial.add(name, Initializer.xavierNormal(fanIn: rows, fanOut: width, rng: &rng)) }
        itemsOfUsers = PatternSet(data.trainMatrix)
        usersOfItems = PatternSet(data.trainMatrix.transposed())
        let inter = data.dataset.interactions
        let rows = data.split.trainRowsInTimeOrder()
        pairs = (rows.map { inter.users[$0] }, rows.map { inter.items[$0] })
        context.pairwiseNegatives(model: Self.name)
        return initial
    }

    public func exampleCount(_ data: TrainingData) -> Int { pairs.users.count }

    public func loss(_ batch: TrainingBatch, _ p: [String: Variable], tape: Tape, rng: inout SeededGenerator) -> Variable {
        let rows = batch.pairwiseRows
        let users = rows.map { pairs.users[$0] }, items = rows.map { pairs.items[$0] }
        let (U, I) = (p["user_embedding"]!, p["item_embedding"]!)
        func L(_ sign: Float, _ x: Variable) -> Variable { tape.affine(tape.mean(tape.logSigmoid(tape.affine(x, scale: sign))), scale: -1) }
        var loss = L(1, tape.rowDot(U, rows: users, I, rows: items))
        if rng.nextUnitFloat() < 0.5 {
            let drawn = users.map { batch.negativeItems.draw(for: Int($0), history: itemsOfUsers, rng: &rng) }
            loss = tape.add(loss, L(-1, tape.rowDot(U, rows: users, I, rows: drawn)))
            guard secondOrder else { return loss }
            let context = p["item_context_embedding"]!
            let terms = tape.add(L(1, tape.rowDot(U, rows: users, context, rows: items)), L(-1, tape.rowDot(U, rows: users, context, rows: drawn)))
            return tape.add(loss, tape.affine(terms, scale: secondOrderWeight))
        }
        let drawn = items.map { Sampling.negative(for: Int($0), history: usersOfItems, rng: &rng) }
        loss = tape.add(loss, L(-1, tape.rowDot(U, rows: drawn, I, rows: items)))
        guard secondOrder else { return loss }
        let context = p["user_context_embedding"]!
        let terms = tape.add(L(1, tape.rowDot(I, rows: items, context, rows: users)), L(-1, tape.rowDot(I, rows: items, context, rows: drawn)))
        return tape.add(loss, tape.affine(terms, scale: secondOrderWeight))
    }

    /// Per pair and negative: four dot products forward and their gradients (d each) ≈ 24·d; validation U·n·d·2.
    public func cost(_ s: WorkShape) -> ModelCost? {
        let flops = 24 * Double(s.trainInteractions * s.negatives) * Double(width) + 2 * Double(s.users) * Double(s.items) * Double(width)
        return ModelCost(nominal: flops, executed: flops, scoringInner: width)
    }

    public func scores(for users: ArraySlice<Int32>, into block: inout Matrix, compute: Compute) {
        FactorScores(users: parameters["user_embedding"], items: parameters["item_embedding"]).scores(for: users, into: &block, compute: compute)
    }
}
