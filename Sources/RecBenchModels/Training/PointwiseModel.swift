import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// A model trained pointwise on positives and sampled negatives (NeuMF, FM, FFM, DeepFM):
/// it keeps its sampler and defines per-pair logits; batching and the loss are shared.
public protocol PointwiseModel: LearnedModel, PairScorer {
    /// The labelled examples (set while preparing).
    var sampler: PointwiseSampler? { get set }
    /// z(u, i) for each listed pair; `dropout` draws masks while training (nil: evaluation).
    func logits(users: [Int32], items: [Int32], _ p: [String: Variable], tape: Tape, dropout: inout SeededGenerator?) -> Variable
    /// A regularisation term added to every batch's loss (default none).
    func penalty(_ p: [String: Variable], tape: Tape) -> Variable?
}

extension PointwiseModel {
    public func exampleCount(_ data: TrainingData) -> Int { sampler!.count }

    public func examplesPerBatch(_ training: TrainingSettings) -> Int { sampler!.positivesPerBatch(training.batchSize) }

    public func penalty(_ p: [String: Variable], tape: Tape) -> Variable? { nil }

    /// BCE of the batch's positives and their drawn negatives (dropout drawn after them), plus
    /// the model's penalty.
    public func loss(_ batch: TrainingBatch, _ p: [String: Variable], tape: Tape, rng: inout SeededGenerator) -> Variable {
        let b = sampler!.batch(batch.examples, from: batch.negativeItems, rng: &rng)
        var draws: SeededGenerator? = rng
        defer { rng = draws! }
        let loss = tape.binaryCrossEntropy(logits: logits(users: b.users, items: b.items, p, tape: tape, dropout: &draws), labels: b.labels)
        return penalty(p, tape: tape).map { tape.add(loss, $0) } ?? loss
    }

    /// λ Σ ‖W‖ over `names` (unsquared Frobenius norms, RecBole's `RegLoss`); nil when λ is 0.
    public func normPenalty(_ names: [String], weight: Float, _ p: [String: Variable], tape: Tape) -> Variable? {
        normPenalty(names.map { p[$0]! }, weight: weight, tape: tape)
    }

    /// λ Σ ‖W‖ over `tensors` (whole parameters or row subsets of one); nil when λ is 0.
    public func normPenalty(_ tensors: [Variable], weight: Float, tape: Tape) -> Variable? {
        guard weight > 0, !tensors.isEmpty else { return nil }
        let norms = tensors.map { tape.norm($0) }
        return tape.affine(norms.dropFirst().reduce(norms[0]) { tape.add($0, $1) }, scale: weight)
    }

    /// z(u, i) for each listed pair without dropout (the reference of the fast scorers).
    public func logits(users: [Int32], items: [Int32], _ p: [String: Variable], tape: Tape) -> Variable {
        var none: SeededGenerator? = nil
        return logits(users: users, items: items, p, tape: tape, dropout: &none)
    }

    /// The per-pair logits of listed pairs without dropout, 4,096 pairs to a tape: what labelled
    /// evaluation reads (the fast scorers equal these to 1e-5, `ContextScorerTests`).
    public func pairScores(users: [Int32], items: [Int32], compute: Compute) -> [Float] {
        var out: [Float] = []
        out.reserveCapacity(users.count)
        for start in stride(from: 0, to: users.count, by: 4096) {
            let end = min(users.count, start + 4096), tape = Tape(compute: compute)
            out += logits(users: Array(users[start..<end]), items: Array(items[start..<end]), tape.leaves(parameters) { _ in false }, tape: tape).value.values
        }
        return out
    }

    /// A sampler over `data`'s train pairs: on labelled data with no negatives asked for, its rows with
    /// their labels (RecBole's labelled training); otherwise positives and drawn negatives, with a note
    /// when the config asks for no negatives on unlabelled data.
    public mutating func prepareSampler(_ data: TrainingData, context: FitContext) {
        let labelled = data.dataset.interactions.labels != nil && context.training.negativesPerPositive == 0
        sampler = PointwiseSampler(data, negatives: labelled ? 0 : context.negativesDrawn(model: Self.name, loss: "pointwise"), labelled: labelled)
        if let labels = sampler?.labels {
            let note = "\(Self.name): trains on each train row's label (\(labels.filter { $0 == 1 }.count) of \(labels.count) labelled 1), "
                + "drawing no negatives (train_neg_sample_args is null), as RecBole does"
            context.logger.notice("\(note)")
        }
    }
}

/// Pointwise training examples as RecBole's context-aware models see them: every train
/// interaction is a positive (label 1) and brings `negatives` drawn items the user has not
/// had in train (label 0) — whatever a labelled row's own label, as RecBole overwrites it then.
/// Labelled data with no negatives trains each row on its own label instead.
public struct PointwiseSampler: Sendable {
    let users: [Int32], items: [Int32]
    /// Each train row's label (labelled training), else nil: every row a positive.
    let labels: [Float]?
    let history: PatternSet
    let negatives: Int

    /// `data`'s train rows, `negatives` draws each; `labelled`: their own labels (no draws).
    public init(_ data: TrainingData, negatives: Int, labelled: Bool = false) {
        precondition(!labelled || (negatives == 0 && data.dataset.interactions.labels != nil), "PointwiseSampler: labelled rows draw no negatives")
        let inter = data.dataset.interactions
        let rows = data.split.trainRowsInTimeOrder()
        users = rows.map { inter.users[$0] }
        items = rows.map { inter.items[$0] }
        labels = labelled ? rows.map { inter.labels![$0] } : nil
        history = PatternSet(data.trainMatrix)
        self.negatives = negatives
    }

    /// Number of positives (the examples a pass shuffles).
    public var count: Int { users.count }

    /// Positives per batch of `batchSize` rows: RecBole's loader counts the negatives in
    /// `train_batch_size` (4096 rows with one negative each = 2048 positives).
    public func positivesPerBatch(_ batchSize: Int) -> Int { TrainingSettings.examplesPerBatch(batchSize, rowsEach: 1 + negatives) }

    /// The batch's positives, then per positive its negatives (`from` draws), with labels.
    public func batch(_ examples: ArraySlice<Int>, from: NegativeItems = .uniform,
                      rng: inout SeededGenerator) -> (users: [Int32], items: [Int32], labels: [Float]) {
        var u = examples.map { users[$0] }, i = examples.map { items[$0] }
        var labels = self.labels.map { own in examples.map { own[$0] } } ?? [Float](repeating: 1, count: examples.count)
        for k in examples {
            for _ in 0..<negatives {
                u.append(users[k]); i.append(from.draw(for: Int(users[k]), history: history, rng: &rng)); labels.append(0)
            }
        }
        return (u, i, labels)
    }
}
