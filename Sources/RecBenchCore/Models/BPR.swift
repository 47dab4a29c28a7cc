/// BPR (Rendle et al. 2009, "BPR: Bayesian Personalized Ranking from Implicit Feedback"),
/// as RecBole 1.2.1 trains it.
///
///     for each train (u, i), draw j uniformly among items u has not had in train
///     x̂_uij = ⟨p_u, q_i⟩ − ⟨p_u, q_j⟩
///     loss = −mean log σ(x̂_uij)                   (Adam, no explicit regulariser)
///     score(u, ·) = p_u · Qᵀ
public struct BPR: LearnedModel {
    public static let name = "BPR"
    public static let summary = "Matrix factorisation trained on pairwise ranking with one sampled negative per positive"
    public static let kind = ModelKind.factorisation
    public static let parameters: [ConfigKey] = [
        ConfigKey("embedding_size", "int", .int(64), "BPR: dimension of user and item embeddings."),
    ]

    public static let trainsWithLargeProducts = false

    let embeddingSize: Int
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    private var optimizer: (any Optimizer)?
    private var history = PatternSet(SparseMatrix(rows: 0, columns: 0))
    private var pairs: (users: [Int32], items: [Int32]) = ([], [])

    public init(parameters: ModelParameters) throws {
        embeddingSize = try parameters.int("embedding_size", in: 1...4096)
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext) {
        var rng = SeededGenerator(seed: context.seed, stream: 0x1417)
        parameters = Parameters()
        parameters.add("user_embedding", Initializer.xavierNormal(fanIn: data.userCount, fanOut: embeddingSize, rng: &rng))
        parameters.add("item_embedding", Initializer.xavierNormal(fanIn: data.itemCount, fanOut: embeddingSize, rng: &rng))
        optimizer = context.training.makeOptimizer()
        history = PatternSet(data.trainMatrix)
        let inter = data.dataset.interactions
        pairs = (data.split.trainRows.map { inter.users[$0] }, data.split.trainRows.map { inter.items[$0] })
    }

    public mutating func trainEpoch(_ epoch: Int, data: TrainingData, context: FitContext) throws -> Double {
        let negatives = max(1, context.training.negativesPerPositive)
        let batches = Sampling.shuffledBatches(count: pairs.users.count, batchSize: context.training.batchSize,
                                               seed: context.seed, epoch: epoch, purpose: 1)
        var rng = SeededGenerator(seed: context.seed, stream: UInt64(epoch) << 8 | 2)
        let model = lossModel, pairs = self.pairs, history = self.history
        var stepper = optimizer.take()   // not a copy: a shared optimizer would copy its moments on every step
        defer { optimizer = stepper }
        return optimize(batches, with: &stepper, context: context) { tape, p, batch in
            var users: [Int32] = [], positives: [Int32] = [], drawn: [Int32] = []
            users.reserveCapacity(batch.count * negatives); positives.reserveCapacity(batch.count * negatives)
            drawn.reserveCapacity(batch.count * negatives)
            for k in batch {
                for _ in 0..<negatives {
                    users.append(pairs.users[k]); positives.append(pairs.items[k])
                    drawn.append(Sampling.negative(for: Int(pairs.users[k]), history: history, rng: &rng))
                }
            }
            return model.lossGraph(tape, p, users: users, positives: positives, negatives: drawn)
        }
    }

    /// −mean log σ(⟨p_u, q_i⟩ − ⟨p_u, q_j⟩).
    func lossGraph(_ tape: Tape, _ p: [String: Variable], users: [Int32], positives: [Int32], negatives: [Int32]) -> Variable {
        let u = tape.gather(p["user_embedding"]!, rows: users)
        let difference = tape.sub(tape.rowDot(u, tape.gather(p["item_embedding"]!, rows: positives)),
                                  tape.rowDot(u, tape.gather(p["item_embedding"]!, rows: negatives)))
        return tape.affine(tape.mean(tape.logSigmoid(difference)), scale: -1)
    }

    public func gradientCheckLoss(_ data: TrainingData, tape: Tape, leaves: [String: Variable]) -> Variable {
        var rng = SeededGenerator(seed: 1)
        let k = min(8, pairs.users.count)
        let users = Array(pairs.users.prefix(k)), positives = Array(pairs.items.prefix(k))
        let negatives = users.map { Sampling.negative(for: Int($0), history: history, rng: &rng) }
        return lossGraph(tape, leaves, users: users, positives: positives, negatives: negatives)
    }

    public func scores(for users: ArraySlice<Int32>, into block: inout Matrix) {
        let table = parameters["user_embedding"], d = table.columns
        var rows = Matrix(rows: users.count, columns: d)
        for (r, u) in users.enumerated() { for j in 0..<d { rows.values[r * d + j] = table.values[Int(u) * d + j] } }
        BLAS.gemm(rows, parameters["item_embedding"], transposeB: true, into: &block)
    }
}
