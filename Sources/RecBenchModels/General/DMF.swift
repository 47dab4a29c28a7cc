import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// DMF (Xue et al. 2017, "Deep Matrix Factorization Models for Recommender Systems"), as
/// RecBole 1.2.1 builds it: a user's whole row and an item's whole column of the binary
/// train matrix, each through its own tower.
///
///     p_u = MLP_u(R_u · W_u)        (R_u: the user's train items, 0/1; W_u: items × d, no bias)
///     q_i = MLP_i(R_iᵀ · W_i)       (R_i: the item's train users; W_i: users × d)
///     MLP: linear layers (`*_hidden_size_list`), ReLU after every one, the last included
///     z(u, i) = ⟨p_u, q_i⟩           (an inner product, as RecBole; the paper's cosine is not used)
///     loss = BCE(σ(z), label) over positives and drawn negatives (uniform by default) (mean)
///     score(u, ·) = p_u · Qᵀ  (every item's tower once per evaluation pass)
///
/// Linear weights N(0, 0.01²), biases 0 (RecBole's init). RecBole's `embedding_size` key is
/// not read by its DMF, so recbench does not declare it.
public struct DMF: PointwiseModel, ScoresWhenPrepared {
    public static let name = "DMF"
    public static let summary = "Two MLP towers over a user's row and an item's column of the interaction matrix (Xue et al. 2017)"
    public static let kind = ModelKind.factorisation
    public static let parameters: [ConfigKey] = [
        ConfigKey("user_embedding_size", "int", .int(64), "DMF: width of the user tower's input layer (over the user's row of items)."),
        ConfigKey("item_embedding_size", "int", .int(64), "DMF: width of the item tower's input layer (over the item's column of users)."),
        ConfigKey("user_hidden_size_list", "list of int", .list([.int(64), .int(64)]), "DMF: widths of the user tower's layers after its input layer."),
        ConfigKey("item_hidden_size_list", "list of int", .list([.int(64), .int(64)]),
                  "DMF: widths of the item tower's layers after its input layer (the last as wide as the user tower's)."),
        ConfigKey("inter_matrix_type", "01", .string("01"),
                  "DMF: what the towers read: 01, the binary train matrix (RecBole's `rating` needs explicit ratings, which recbench does not load)."),
    ]
    public static let testSettings: [[String: ConfigValue]] = [
        // Wide enough that ReLU on the towers' last layer leaves some outputs non-zero for random weights.
        ["user_embedding_size": .int(8), "item_embedding_size": .int(10), "user_hidden_size_list": .list([.int(6)]),
         "item_hidden_size_list": .list([.int(8), .int(6)])],
    ]

    let userWidths: [Int], itemWidths: [Int]
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var sampler: PointwiseSampler?
    private var rows = SparseMatrix(rows: 0, columns: 0), columns = SparseMatrix(rows: 0, columns: 0)

    public init(parameters: ModelParameters) throws {
        userWidths = [try parameters.int("user_embedding_size", in: 1...65536)] + (try parameters.intList("user_hidden_size_list", in: 1...65536))
        itemWidths = [try parameters.int("item_embedding_size", in: 1...65536)] + (try parameters.intList("item_hidden_size_list", in: 1...65536))
        guard userWidths.last == itemWidths.last else {
            throw parameters.invalid("item_hidden_size_list", "must end as wide as user_hidden_size_list (\(userWidths.last!)), got \(itemWidths.last!)")
        }
        guard try parameters.choice("inter_matrix_type", of: ["01", "rating"]) == "01" else {
            throw parameters.invalid("inter_matrix_type", "recbench reads implicit feedback only: use 01 (RecBole's rating needs explicit ratings)")
        }
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        prepareSampler(data, context: context)
        rows = data.trainMatrix.binarized()
        columns = rows.transposed()
        var initial = Parameters()
        initial.add("user_linear", Initializer.normal(rows: data.itemCount, columns: userWidths[0], std: 0.01, rng: &rng))
        initial.add("item_linear", Initializer.normal(rows: data.userCount, columns: itemWidths[0], std: 0.01, rng: &rng))
        for (tower, widths) in [("user_fc", userWidths), ("item_fc", itemWidths)] {
            for (l, (input, output)) in zip(widths, widths.dropFirst()).enumerated() {
                initial.add("\(tower).\(l).weight", Initializer.normal(rows: input, columns: output, std: 0.01, rng: &rng))
                initial.add("\(tower).\(l).bias", Matrix(rows: 1, columns: output))
            }
        }
        return initial
    }

    /// ⟨p_u, q_i⟩ for each listed pair (no dropout in DMF). Each distinct user's and item's
    /// tower runs once: a batch lists every user twice (a positive and its negative) and
    /// popular items many times, whose columns are the longest.
    public func logits(users: [Int32], items: [Int32], _ p: [String: Variable], tape: Tape, dropout: inout SeededGenerator?) -> Variable {
        let (distinctUsers, userSlots) = DMF.distinct(users), (distinctItems, itemSlots) = DMF.distinct(items)
        return tape.rowDot(tower(rows.selectingRows(distinctUsers), "user", p, tape: tape), rows: userSlots,
                           tower(columns.selectingRows(distinctItems), "item", p, tape: tape), rows: itemSlots)
    }

    /// The distinct ids in first-seen order, and each listed id's position among them.
    static func distinct(_ ids: [Int32]) -> (ids: [Int32], slots: [Int32]) {
        var position: [Int32: Int32] = [:], order: [Int32] = []
        let slots = ids.map { id in
            if let p = position[id] { return p }
            position[id] = Int32(order.count); order.append(id)
            return Int32(order.count - 1)
        }
        return (order, slots)
    }

    /// MLP(x · W): the input layer as a sparse product, then ReLU after every linear layer.
    func tower(_ x: SparseMatrix, _ side: String, _ p: [String: Variable], tape: Tape) -> Variable {
        var h = tape.matmul(x, p["\(side)_linear"]!, transposed: x.transposed())
        for l in 0..<((side == "user" ? userWidths : itemWidths).count - 1) {
            h = tape.relu(tape.linear(h, p["\(side)_fc.\(l).weight"]!, p["\(side)_fc.\(l).bias"]!))
        }
        return h
    }

    /// Per training row both towers forward and backward (input layers sparse); validation:
    /// every user's and item's tower once, then users × items × d.
    public func cost(_ s: WorkShape) -> ModelCost? {
        func weights(_ w: [Int]) -> Double { zip(w, w.dropFirst()).map { Double($0 * $1) }.reduce(0, +) }
        let dense = Double(s.items * userWidths[0] + s.users * itemWidths[0])
        let tower = weights(userWidths) + weights(itemWidths)
        let rowsTrained = s.pointwiseRows
        let scoring = 2 * Double(s.users) * Double(s.items) * Double(userWidths.last!)
        let sparseInput = 2 * Double(s.trainPairs) / Double(max(1, s.users)) * Double(userWidths[0]) * 2
        return ModelCost(nominal: rowsTrained * 6 * (dense + tower) + scoring, executed: rowsTrained * 6 * tower + rowsTrained * 3 * sparseInput + scoring,
                         scoringInner: userWidths.last!)
    }

    /// Every user's and every item's tower output, once per evaluation pass.
    public func preparedForScoring(compute: Compute) -> any Scorer {
        let tape = Tape(compute: compute)
        let p = tape.leaves(parameters) { _ in false }
        return FactorScores(users: tower(rows, "user", p, tape: tape).value, items: tower(columns, "item", p, tape: tape).value)
    }
}
