import Foundation
import Linalg
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// Item2vec (Barkan & Koenigstein 2016): word2vec's skip-gram with negative sampling
/// (Mikolov et al. 2013) where items are the words and a purchase session is the sentence.
///
///     sessions  = each user's train items in time order, cut at gaps > session_gap, deduplicated
///     per epoch, sessions in corpus order; items of a session kept with word2vec's probability
///       (√(f / (s·N)) + 1) · s·N / f   when subsample s > 0
///     for every centre w and every other item c of the session (or within `window`):
///       η = linear decay from sgns_learning_rate to sgns_min_learning_rate over all epochs
///       for (t, label) in [(w, 1)] + [(n_k, 0) for k < negatives],  n_k ~ count^ns_exponent, n_k ≠ w:
///         f = ⟨v_c, u_t⟩;  skip if |f| ≥ 6                   (word2vec's table range)
///         g = η (label − σ(f));  e += g u_t;  u_t += g v_c
///       v_c += e
///     score(u, j) = Σ_{i ∈ u's distinct train items} cos(v_i, v_j)
///
/// v (input) starts uniform in ±0.5/d and u (output) at zero, as in word2vec. Items in no
/// session keep their random v: they score 0 and add 0 (their normalised vector is zero).
/// Training runs on one thread and is reproducible; `hogwild: true` makes it lock-free on
/// every thread (Hogwild!, as word2vec and gensim do), faster but not reproducible.
public struct Item2vec: LearnedModel, ScoresWhenPrepared {
    public static let name = "Item2vec"
    public static let summary = "Skip-gram with negative sampling over purchase sessions; scores by cosine to the user's items"
    public static let kind = ModelKind.embedding
    public static let parameters: [ConfigKey] = [
        SharedKeys.embeddingSize(64),
        ConfigKey("session_gap", "float", .double(2_592_000),
                  "Item2vec: largest gap in seconds between two interactions of one session (0: equal timestamps only, one basket; "
                      + "default 30 days, chosen by valid MRR@10 on ml-100k and the Mart sample: README, Item2vec)."),
        ConfigKey("window", "int", .int(0),
                  "Item2vec: 0 pairs every two items of a session (set semantics); k > 0 only items at most k positions apart in time order."),
        ConfigKey("negatives", "int", .int(5), "Item2vec: negative items per (item, context) pair."),
        ConfigKey("ns_exponent", "float", .double(0.75), "Item2vec: negatives are drawn with probability ∝ count^ns_exponent."),
        ConfigKey("subsample", "float", .double(0), "Item2vec: word2vec's down-sampling threshold for frequent items (0: off)."),
        SharedKeys.hogwild(false),
        ConfigKey("sgns_learning_rate", "float", .double(0.025), "Item2vec: initial SGD step, decaying linearly over all epochs."),
        ConfigKey("sgns_min_learning_rate", "float", .double(0.0001), "Item2vec: SGD step at the end of the last epoch."),
    ]

    let embeddingSize: Int, window: Int, negatives: Int
    let sessionGap: Double, nsExponent: Double, subsample: Double
    let learningRate: Float, minLearningRate: Float
    let hogwild: Bool
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    private var sessions: [[Int32]] = []
    private var noise: AliasTable?
    private var keep: [Float] = []
    private var userItems = SparseMatrix(rows: 0, columns: 0)
    /// Whether each item occurs in a session (the others keep their random vector: score 0).
    private var inSession: [Bool] = []
    /// (centre, context) pairs per epoch before subsampling.
    public private(set) var pairsPerEpoch = 0

    public init(parameters: ModelParameters) throws {
        embeddingSize = try parameters.int("embedding_size", in: 1...4096)
        sessionGap = try parameters.double("session_gap", in: 0...Double.greatestFiniteMagnitude)
        window = try parameters.int("window", in: 0...1_000_000)
        negatives = try parameters.int("negatives", in: 0...100)
        nsExponent = try parameters.double("ns_exponent", in: -10...10)
        subsample = try parameters.double("subsample", in: 0...1)
        learningRate = Float(try parameters.double("sgns_learning_rate", in: 0...10))
        minLearningRate = Float(try parameters.double("sgns_min_learning_rate", in: 0...10))
        hogwild = try parameters.bool("hogwild")
    }

    public var passes: [TrainingPass] { [TrainingPass("sgns", method: .custom)] }
    public var stepSizeKey: String { "sgns_learning_rate" }

    public var fitSteps: [String: Double] {
        ["sessions": Double(sessions.count), "pairs_per_epoch": Double(pairsPerEpoch), "flops_per_pair": flopsPerPair]
    }

    /// FLOPs of one (centre, context) pair: 1 + `negatives` terms of a dot and two axpys of
    /// length d, and the context row's update.
    public var flopsPerPair: Double { Double(1 + negatives) * 6 * Double(embeddingSize) + 2 * Double(embeddingSize) }

    public func exampleCount(_ data: TrainingData) -> Int { sessions.count }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        let inter = data.dataset.interactions
        let timeIsInput = data.dataset.timeField.map { data.dataset.isModelInput($0, of: "inter") } ?? false
        let times = timeIsInput ? inter.timestamps : nil
        if times == nil {
            let why = inter.timestamps == nil ? "the data has no time column" : "the time column is in unused_col"
            context.logger.notice("Item2vec: \(why), so sessions cannot be cut by time: each user's train history is one session")
        }
        sessions = Sessions.build(users: inter.users, items: inter.items, timestamps: times, rows: data.split.trainRowsInTimeOrder(),
                                  userCount: data.userCount, gap: times == nil ? nil : sessionGap)
        var counts = [Double](repeating: 0, count: data.itemCount)
        for s in sessions { for i in s { counts[Int(i)] += 1 } }
        noise = counts.contains { $0 > 0 } ? AliasTable(weights: counts.map { $0 > 0 ? Foundation.pow($0, nsExponent) : 0 }) : nil
        let total = counts.reduce(0, +), threshold = subsample * total
        keep = counts.map { f in subsample == 0 || f == 0 ? 1 : Float(min(1, (Foundation.sqrt(f / threshold) + 1) * threshold / f)) }
        pairsPerEpoch = sessions.reduce(0) { $0 + Sessions.pairCount(sessionLength: $1.count, window: window) }
        userItems = data.trainMatrix.binarized()
        inSession = counts.map { $0 > 0 }
        let d = embeddingSize, bound = 0.5 / Float(d)
        var input = Matrix(rows: data.itemCount, columns: d)
        for k in input.values.indices { input.values[k] = (rng.nextUnitFloat() * 2 - 1) * bound }
        var initial = Parameters()
        initial.add("input", input)
        initial.add("output", Matrix(rows: data.itemCount, columns: d))
        let message = "Item2vec: \(sessions.count) sessions, \(pairsPerEpoch) pairs per epoch, "
            + "\(counts.filter { $0 > 0 }.count) of \(data.itemCount) items in a session"
        context.logger.info("\(message)")
        if pairsPerEpoch == 0 {   // a run would end with its initial vectors and a table as if trained
            context.logger.warning("Item2vec: no session holds two items (session_gap \(sessionGap), or one train item per user): nothing is learned")
        }
        return initial
    }

    /// One epoch of SGNS over the sessions in corpus order (users in id order, each one's
    /// sessions in time order), as word2vec and gensim go through their sentences (shuffling
    /// them every epoch measured worse), Hogwild on every worker. The sessions
    /// are cut into runs of equal pair counts (lengths vary a lot, and pairs grow with their
    /// square): one run on one thread, eight per thread on several, so a thread that starts
    /// late or is preempted does not leave the other idle at the end. Each run has its own
    /// random stream; η decays with the run's position in the epoch. Returns the mean loss
    /// −log σ(f⁺) − Σ log σ(−f⁻) over a sample of the pairs (every 16th).
    public mutating func customPass(_ pass: TrainingPass, index: Int, parameters: inout Parameters, context: FitContext) -> Double {
        guard let noise else { return 0 }
        let sessions = self.sessions, keep = self.keep, window = self.window
        let pairs = sessions.map { Sessions.pairCount(sessionLength: $0.count, window: window) }
        let workers = hogwild ? context.compute.activeWorkers : 1
        let chunks = Self.balancedChunks(pairs, parts: workers > 1 ? 8 * workers : 1)
        let totalPairs = Float(max(1, pairs.reduce(0, +)))
        let v = SharedMatrix(parameters["input"]), u = SharedMatrix(parameters["output"])
        let step = SGNSStep(dimension: embeddingSize, negatives: negatives, noise: noise)
        let epochs = Float(max(1, context.training.epochs)), (start, end) = (learningRate, minLearningRate)
        let results = Hogwild.slices(count: chunks.count, workers: chunks.count, seed: context.seed, epoch: index) { slice, rng in
            var sampled = SGNSStep.LossSample()
            var kept: [Int32] = []
            let chunk = chunks[slice.lowerBound]
            var done = pairs[..<chunk.lowerBound].reduce(0, +)
            for k in chunk {
                let rate = start - (start - end) * min(1, (Float(index) + Float(done) / totalPairs) / epochs)
                done += pairs[k]
                kept.removeAll(keepingCapacity: true)
                for i in sessions[k] where keep[Int(i)] >= 1 || rng.nextUnitFloat() < keep[Int(i)] { kept.append(i) }
                for a in kept.indices {
                    let low = window > 0 ? max(0, a - window) : 0, high = window > 0 ? min(kept.count - 1, a + window) : kept.count - 1
                    step.withLocalRow(Int(kept[a]), of: u) { centre in
                        for b in low...high where b != a {
                            step(centre: Int(kept[a]), context: Int(kept[b]), rate: rate, v, u, centreRow: centre, &rng, &sampled)
                        }
                    }
                }
            }
            return sampled
        }
        parameters["input"] = v.matrix
        parameters["output"] = u.matrix
        context.onBatch?(1, 1)
        let sampled = results.reduce(into: SGNSStep.LossSample()) { $0.sum += $1.sum; $0.count += $1.count }
        return sampled.count == 0 ? 0 : sampled.sum / Double(sampled.count)
    }

    /// Cuts `0..<work.count` into at most `parts` contiguous ranges of about equal total work.
    static func balancedChunks(_ work: [Int], parts: Int) -> [Range<Int>] {
        let total = work.reduce(0, +), parts = max(1, min(parts, work.count))
        var chunks: [Range<Int>] = [], start = 0, sum = 0
        for (k, w) in work.enumerated() {
            sum += w
            if chunks.count < parts - 1 && sum * parts >= total * (chunks.count + 1) {
                chunks.append(start..<(k + 1)); start = k + 1
            }
        }
        chunks.append(start..<work.count)
        return chunks
    }

    /// Per pair: (1 + negatives) terms of a d-long dot and two d-long axpys, plus the context
    /// row's update; validation U·n·d·2 and the user sums.
    public func cost(_ s: WorkShape) -> ModelCost? {
        let d = Double(embeddingSize)
        let training = Double(pairsPerEpoch) * flopsPerPair
        let scoring = 2 * Double(s.users) * Double(s.items) * d + 2 * Double(s.trainInteractions) * d
        return ModelCost(nominal: training + scoring, executed: training + scoring)
    }

    /// X_bin · V̂ · V̂ᵀ for the batch: one sparse × dense product and one GEMM.
    /// The unit-length item vectors, computed once for a whole evaluation pass.
    public func preparedForScoring(compute: Compute) -> any Scorer {
        let unit = Self.unitRows(parameters["input"], inSession: inSession), userItems = self.userItems
        return PreparedScores { users, block, compute in
            var profile = Matrix(rows: users.count, columns: unit.columns)
            userItems.multiply(rows: users, by: unit, into: &profile, compute: compute)
            BLAS.gemm(profile, unit, transposeB: true, into: &block, compute: compute)
        }
    }

    /// Rows scaled to unit length; rows of items in no session (and zero rows) become zero.
    static func unitRows(_ m: Matrix, inSession: [Bool]) -> Matrix {
        var out = m
        let d = m.columns
        for r in 0..<m.rows {
            let row = out.values[(r * d)..<((r + 1) * d)]
            let norm = row.reduce(0) { $0 + $1 * $1 }.squareRoot()
            let scale: Float = inSession[r] && norm > 0 ? 1 / norm : 0
            for j in 0..<d { out.values[r * d + j] *= scale }
        }
        return out
    }
}

/// One skip-gram negative-sampling update on shared vectors (word2vec's inner loop): the
/// context's input vector v_c is trained to predict the centre w against `negatives` draws.
public struct SGNSStep: Sendable {
    public let dimension: Int, negatives: Int, noise: AliasTable
    /// word2vec's σ table: 1,000 steps over [−6, 6); dot products outside are skipped.
    let sigmoid: [Float] = (0..<1000).map { i in
        let e = Foundation.exp((Double(i) / 1000 * 2 - 1) * 6)
        return Float(e / (e + 1))
    }

    /// A step for `dimension`-wide vectors with `negatives` draws from `noise`.
    public init(dimension: Int, negatives: Int, noise: AliasTable) {
        self.dimension = dimension; self.negatives = negatives; self.noise = noise
    }

    /// Runs `body` with a thread-local copy of row `r` of `shared`, then adds the copy's
    /// change to the shared row. A centre's output row takes one step per context of its
    /// session (hundreds on long sessions): stepping a local copy keeps the sequential SGD
    /// of this thread exact, and adding the change back (not overwriting) keeps the other
    /// threads' updates of that row, while the shared row is touched twice instead of once
    /// per context (the hot rows of popular items were what the threads fought over).
    @inline(__always)
    public func withLocalRow(_ r: Int, of shared: SharedMatrix, _ body: (UnsafeMutablePointer<Float>) -> Void) {
        let d = dimension
        withUnsafeTemporaryAllocation(of: Float.self, capacity: 2 * d) { buffer in
            let local = buffer.baseAddress!, start = local + d, row = shared.row(r)
            local.update(from: row, count: d)
            start.update(from: local, count: d)
            body(local)
            for f in stride(from: 0, to: d, by: 8) {
                (Lanes.load(row, f, count: d) + (Lanes.load(local, f, count: d) - Lanes.load(start, f, count: d))).store(row, f, count: d)
            }
        }
    }

    /// The loss of every 16th pair (a log per term would cost as much as the update).
    public struct LossSample: Sendable {
        public var sum = 0.0, count = 0, seen = 0
        public init() {}
    }

    /// Updates v_c, the centre's output row (`centreRow`: row w of `u`, or a local copy of
    /// it) and the output rows of the drawn negatives.
    @inline(__always)
    public func callAsFunction(centre w: Int, context c: Int, rate: Float, _ v: SharedMatrix, _ u: SharedMatrix,
                               centreRow: UnsafeMutablePointer<Float>, _ rng: inout SeededGenerator, _ loss: inout LossSample) {
        let d = dimension
        loss.seen += 1
        let sampling = loss.seen & 15 == 0
        sigmoid.withUnsafeBufferPointer { sigmoid in
            withUnsafeTemporaryAllocation(of: Float.self, capacity: d) { buffer in
                let e = buffer.baseAddress!, vc = v.row(c)
                for f in stride(from: 0, to: d, by: 8) { Lanes(repeating: 0).store(e, f, count: d) }
                var pairLoss = 0.0
                for t in 0...negatives {
                    let target = t == 0 ? w : Int(noise.draw(&rng))
                    if t > 0 && target == w { continue }
                    let label: Float = t == 0 ? 1 : 0
                    let ut = t == 0 ? centreRow : u.row(target)
                    var dot = Lanes()
                    for f in stride(from: 0, to: d, by: 8) { dot += Lanes.load(vc, f, count: d) * Lanes.load(ut, f, count: d) }
                    let x = dot.total
                    if sampling {
                        let margin = Double(t == 0 ? x : -x)   // loss log(1 + e^{−margin}), stably
                        pairLoss += max(-margin, 0) + Foundation.log1p(Foundation.exp(-abs(margin)))
                    }
                    if x <= -6 || x >= 6 { continue }
                    let g = (label - sigmoid[Int((x + 6) * (1000 / 12))]) * rate
                    for f in stride(from: 0, to: d, by: 8) {
                        let ul = Lanes.load(ut, f, count: d)
                        (Lanes.load(e, f, count: d) + g * ul).store(e, f, count: d)
                        (ul + g * Lanes.load(vc, f, count: d)).store(ut, f, count: d)
                    }
                }
                for f in stride(from: 0, to: d, by: 8) { (Lanes.load(vc, f, count: d) + Lanes.load(e, f, count: d)).store(vc, f, count: d) }
                if sampling { loss.sum += pairLoss; loss.count += 1 }
            }
        }
    }
}
