import Foundation
import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// BPR (Rendle et al. 2009, "BPR: Bayesian Personalized Ranking from Implicit Feedback"),
/// as RecBole 1.2.1 trains it.
///
///     for each train (u, i), draw j (uniformly by default) among items u has not had in train (`sample_num` draws)
///     x̂_uij = ⟨p_u, q_i⟩ − ⟨p_u, q_j⟩
///     loss = −mean log σ(x̂_uij)                   (Adam, no explicit regulariser)
///     score(u, ·) = p_u · Qᵀ
///
/// With `hogwild: true`, Rendle's LearnBPR instead, on all cores without locks (as the
/// `implicit` library trains it): for each train (u, i) in shuffled order and a drawn j,
///     z = σ(−x̂_uij)
///     p_u += η (z (q_i − q_j) − λ p_u),  q_i += η (z p_u − λ q_i),  q_j += η (−z p_u − λ q_j)
public struct BPR: PairwiseModel {
    public static let name = "BPR"
    public static let summary = "Matrix factorisation trained on pairwise ranking against sampled negatives"
    public static let kind = ModelKind.factorisation
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(64),
        SharedKeys.hogwild(false),
        ConfigKey("hogwild_learning_rate", "float", .double(0.05), "BPR with hogwild: SGD step size η."),
        ConfigKey("hogwild_regularization", "float", .double(0.01), "BPR with hogwild: L2 weight λ on the embeddings a step touches."),
    ]
    public static let testSettings: [[String: ConfigValue]] = [["embedding_size": .int(3)]]

    let embeddingSize: Int
    let hogwild: Bool, hogwildRate: Float, hogwildRegularization: Float
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    private var history = PatternSet(SparseMatrix(rows: 0, columns: 0))
    private var pairs: (users: [Int32], items: [Int32]) = ([], [])
    private var negatives = 1
    private var negativeItems = NegativeItems.uniform

    public init(parameters: ModelParameters) throws {
        embeddingSize = try parameters.int("embedding_size", in: 1...4096)
        hogwild = try parameters.bool("hogwild")
        hogwildRate = Float(try parameters.double("hogwild_learning_rate", in: 0...100))
        hogwildRegularization = Float(try parameters.double("hogwild_regularization", in: 0...100))
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        var initial = Parameters()
        initial.add("user_embedding", Initializer.xavierNormal(fanIn: data.userCount, fanOut: embeddingSize, rng: &rng))
        initial.add("item_embedding", Initializer.xavierNormal(fanIn: data.itemCount, fanOut: embeddingSize, rng: &rng))
        history = PatternSet(data.trainMatrix)
        let inter = data.dataset.interactions
        let rows = data.split.trainRowsInTimeOrder()
        pairs = (rows.map { inter.users[$0] }, rows.map { inter.items[$0] })
        negatives = context.pairwiseNegatives(model: Self.name)
        negativeItems = NegativeItems(context.training.negativeDistribution, data: data)
        let workers = context.compute.activeWorkers
        if hogwild && workers > 1 {
            let message = "BPR: hogwild on \(workers) threads updates without locks, "
                + "so reruns give somewhat different metrics; threads: 1 makes them identical"
            context.logger.notice("\(message)")
        }
        return initial
    }

    public var passes: [TrainingPass] { [hogwild ? TrainingPass("hogwild", method: .custom) : .all] }
    public var stepSizeKey: String { hogwild ? "hogwild_learning_rate" : "learning_rate" }

    public func exampleCount(_ data: TrainingData) -> Int { pairs.users.count }

    /// −mean log σ(⟨p_u, q_i⟩ − ⟨p_u, q_j⟩) over the batch's pairs, `negatives` draws each.
    public func loss(_ batch: TrainingBatch, _ p: [String: Variable], tape: Tape, rng: inout SeededGenerator) -> Variable {
        let (users, positives, drawn) = Sampling.triples(batch.examples, pairs: pairs, negatives: negatives, from: negativeItems,
                                                         history: history, rng: &rng)
        let (userTable, itemTable) = (p["user_embedding"]!, p["item_embedding"]!)
        let difference = tape.sub(tape.rowDot(userTable, rows: users, itemTable, rows: positives),
                                  tape.rowDot(userTable, rows: users, itemTable, rows: drawn))
        return tape.affine(tape.mean(tape.logSigmoid(difference)), scale: -1)
    }

    /// One pass of LearnBPR over the shuffled train pairs (one step per drawn negative, as
    /// many as `train_neg_sample_args` asks), on every worker at once. Returns the mean
    /// −log σ(x̂_uij) seen before each step.
    public mutating func customPass(_ pass: TrainingPass, index: Int, parameters: inout Parameters, context: FitContext) -> Double {
        let count = pairs.users.count
        let order = Sampling.shuffledBatches(count: count, batchSize: max(1, count), seed: context.seed, epoch: index, purpose: 1).first ?? []
        let p = SharedMatrix(parameters["user_embedding"]), q = SharedMatrix(parameters["item_embedding"])
        let pairs = self.pairs, history = self.history, negatives = self.negatives, negativeItems = self.negativeItems
        let step = HogwildStep(rate: hogwildRate, regularization: hogwildRegularization, dimension: embeddingSize)
        let workers = context.compute.activeWorkers
        let total = Hogwild.run(count: order.count, workers: workers, seed: context.seed, epoch: index) { slice, rng in
            var loss = 0.0
            for k in slice {
                let pair = order[order.startIndex + k]
                let u = Int(pairs.users[pair]), i = Int(pairs.items[pair])
                for _ in 0..<negatives {
                    let j = Int(negativeItems.draw(for: u, history: history, rng: &rng))
                    loss += step(user: u, positive: i, negative: j, p, q)
                }
            }
            return loss
        }
        parameters["user_embedding"] = p.matrix
        parameters["item_embedding"] = q.matrix
        context.onBatch?(1, 1)
        return total / Double(max(1, count * negatives))
    }

    /// Per pair and negative: two dot products forward and their gradients (d each) ≈ 12·d; validation U·n·d·2.
    public func cost(_ s: WorkShape) -> ModelCost? {
        let d = Double(embeddingSize)
        let flops = 12 * Double(s.trainInteractions * s.negatives) * d + 2 * Double(s.users) * Double(s.items) * d
        return ModelCost(nominal: flops, executed: flops, scoringInner: embeddingSize)
    }

    public func scores(for users: ArraySlice<Int32>, into block: inout Matrix, compute: Compute) {
        FactorScores(users: parameters["user_embedding"], items: parameters["item_embedding"]).scores(for: users, into: &block, compute: compute)
    }
}

/// One LearnBPR update on shared embeddings; returns −log σ(x̂_uij) before the update.
/// The three rows are read into local buffers, updated eight lanes at a time, and written back.
public struct HogwildStep: Sendable {
    public let rate: Float, regularization: Float, dimension: Int

    /// A step of size `rate` with L2 weight `regularization` on `dimension`-wide embeddings.
    public init(rate: Float, regularization: Float, dimension: Int) {
        self.rate = rate; self.regularization = regularization; self.dimension = dimension
    }

    /// Updates p_u, q_i and q_j for the triple (u, i, j).
    public func callAsFunction(user u: Int, positive i: Int, negative j: Int, _ p: SharedMatrix, _ q: SharedMatrix) -> Double {
        let d = dimension, width = d + d % 2   // SharedMatrix rows are read in pairs
        return withUnsafeTemporaryAllocation(of: Float.self, capacity: 3 * width) { rows in
            let pu = rows.baseAddress!, qi = pu + width, qj = qi + width
            p.read(row: u, into: pu); q.read(row: i, into: qi); q.read(row: j, into: qj)
            var dot = Lanes()
            for f in stride(from: 0, to: d, by: 8) {
                dot += Lanes.load(pu, f, count: d) * (Lanes.load(qi, f, count: d) - Lanes.load(qj, f, count: d))
            }
            let x = dot.total
            let z = 1 / (1 + Foundation.exp(x))   // σ(−x)
            let (η, λ) = (rate, regularization)
            for f in stride(from: 0, to: d, by: 8) {
                let a = Lanes.load(pu, f, count: d), b = Lanes.load(qi, f, count: d), c = Lanes.load(qj, f, count: d)
                (a + η * (z * (b - c) - λ * a)).store(pu, f, count: d)
                (b + η * (z * a - λ * b)).store(qi, f, count: d)
                (c + η * (-z * a - λ * c)).store(qj, f, count: d)
            }
            p.write(row: u, from: pu); q.write(row: i, from: qi); q.write(row: j, from: qj)
            return Double(max(-x, 0) + Foundation.log1p(Foundation.exp(-abs(x))))   // log(1 + e^{−x}), stably
        }
    }
}
