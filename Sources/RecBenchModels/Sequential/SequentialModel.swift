import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// A learned model that reads each user's items in order: training examples are the
/// sequences' next items, and it scores a batch of input sequences against every item
/// (`SequenceScorer`); a user alone is scored by the sequence the model learned from.
public protocol SequentialModel: LearnedModel, SequenceScorer {
    /// The sequences of the last fit, kept so that a user can be scored by the whole sequence.
    var sequences: SequenceData? { get set }
}

/// A sequential model whose scores are one vector per sequence (`encode`) times one vector
/// per item: full ranking is a batch of queries encoded and scored in one GEMM.
public protocol EncodedSequentialModel: SequentialModel {
    /// One vector per row of `batch` (rows × w). `training` turns dropout on; `rng` is the
    /// batch's stream.
    func encode(_ batch: SequenceBatch, _ p: [String: Variable], tape: Tape, training: Bool, rng: inout SeededGenerator) -> Variable
    /// The vectors the encodings are scored against, one row per item (items × w).
    func itemVectors(_ parameters: Parameters, itemCount: Int) -> Matrix
}

extension SequentialModel {
    public static var family: ModelFamily { .sequential }

    /// Train examples: every train item that has an earlier item.
    public func exampleCount(_ data: TrainingData) -> Int { sequences?.trainExamples.count ?? 0 }

    /// The train examples (log positions) of a batch.
    public func examples(of batch: TrainingBatch) -> [Int32] { batch.examples.map { sequences!.trainExamples[$0] } }

    /// The first `count` rows of the parameter `name` (a table whose extra rows, such as a
    /// padding class, take part in training only).
    public func leadingRows(of name: String, _ count: Int) -> Matrix {
        let table = parameters[name]
        return table.rows == count ? table : Matrix(rows: count, columns: table.columns, values: Array(table.values.prefix(count * table.columns)))
    }

    /// A user's scores are those of the next item after the user's train sequence (what the
    /// model learned from, as a general model's scores; evaluations pass their own inputs).
    public func scores(for users: ArraySlice<Int32>, into block: inout Matrix, compute: Compute) {
        guard let sequences else {
            block.values.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
            return
        }
        let log = sequences.log
        let queries = SequenceQueries(sequences: sequences, users: Array(users), ends: users.map { Int32(log.end(of: Int($0), before: .valid)) })
        preparedSequenceScorer(compute: compute).scores(for: ArraySlice(0..<Int32(users.count)), of: queries, into: &block, compute: compute)
    }

    public func preparedForScoring(compute: Compute) -> any Scorer { preparedSequenceScorer(compute: compute) }
}

extension EncodedSequentialModel {
    public func preparedSequenceScorer(compute: Compute) -> any SequenceScorer {
        PreparedSequenceScores(model: self, items: itemVectors(parameters, itemCount: sequences?.log.itemCount ?? 0))
    }

    public func scores(for rows: ArraySlice<Int32>, of queries: SequenceQueries, into block: inout Matrix, compute: Compute) {
        preparedSequenceScorer(compute: compute).scores(for: rows, of: queries, into: &block, compute: compute)
    }
}

/// A sequential model trained by RecBole's `loss_type` (CE or BPR) on next-item examples.
public protocol NextItemLossModel: SequentialModel {
    /// `loss_type`.
    var lossType: NextItemLoss { get }
}

extension NextItemLossModel {
    /// RecBole's pairwise loader fits `train_batch_size` rows, one per negative, so a BPR batch
    /// holds batch size / `sample_num` examples; CE draws no negatives.
    public func examplesPerBatch(_ training: TrainingSettings) -> Int {
        lossType == .bpr ? training.pairsPerPairwiseBatch : training.batchSize
    }

    /// The batch's examples as the loss sees them: under BPR the whole batch once per negative
    /// (RecBole repeats the interactions `sample_num` times, one uniform draw each).
    public func lossExamples(of batch: TrainingBatch) -> [Int32] {
        lossType == .bpr ? batch.pairwiseRows.map { sequences!.trainExamples[$0] } : examples(of: batch)
    }

    /// One epoch's training FLOPs: each example's encoder (`encoder` FLOPs forward) and its
    /// output product at `width`, ×3 with the pullback. CE scores every row of the output table
    /// (items + 1); BPR a positive and a negative, once per negative (the batch repeated).
    public func trainingFLOPs(_ s: WorkShape, encoder: Double, width: Double) -> Double {
        let (copies, outputs) = lossType == .bpr ? (Double(s.negatives), 2.0) : (1.0, Double(s.items + 1))
        return Double(s.trainInteractions) * copies * 3 * (encoder + 2 * width * outputs)
    }

    /// Keeps the fit's sequences; a BPR loss on a config without negatives gets a note (RecBole
    /// 1.2.1 stops there: the batch has no negative item).
    public mutating func prepareSequences(_ data: TrainingData, context: FitContext) {
        sequences = data.sequenceData
        if lossType == .bpr { context.pairwiseNegatives(model: Self.name) }
    }
}

/// A sequential model whose item table `item_embedding` is both its input lookup and its
/// output layer (tied, as RecBole's GRU4Rec, NARM, STAMP and SASRec): its rows are the
/// items, then the padding class CE trains too. Loss and scoring are shared.
public protocol TiedNextItemModel: EncodedSequentialModel, NextItemLossModel {}

extension TiedNextItemModel {
    public func itemVectors(_ parameters: Parameters, itemCount: Int) -> Matrix { leadingRows(of: "item_embedding", itemCount) }

    /// The batch's examples encoded with dropout on, predicting their items.
    public func loss(_ batch: TrainingBatch, _ p: [String: Variable], tape: Tape, rng: inout SeededGenerator) -> Variable {
        let examples = SequenceBatch(examples: lossExamples(of: batch), of: sequences!)
        let encoded = encode(examples, p, tape: tape, training: true, rng: &rng)
        return lossType(encoded, p["item_embedding"]!, targets: examples.targets!,
                        items: sequences!.log.itemCount, negatives: batch.negativeItems, tape: tape, rng: &rng)
    }
}

/// RecBole's `loss_type` for next-item prediction.
public enum NextItemLoss: String, Sendable {
    /// Softmax cross-entropy over every row of the output table (RecBole's CE).
    case crossEntropy = "CE"
    /// −log σ(⟨h, e_i⟩ − ⟨h, e_j⟩) with j drawn among the other items (uniformly, or as `train_neg_sample_args` says).
    case bpr = "BPR"

    /// Reads `loss_type`.
    public init(_ parameters: ModelParameters) throws {
        self = NextItemLoss(rawValue: try parameters.choice("loss_type", of: ["CE", "BPR"]))!
    }

    /// The loss of `encoded` (rows × w) predicting `targets`: CE over every row of `table`
    /// (padding and other extra rows included, as RecBole's), or BPR against one `negatives`
    /// draw among the first `items` rows other than the target (RecBole's repeatable sampler).
    public func callAsFunction(_ encoded: Variable, _ table: Variable, targets: [Int32], items: Int, negatives: NegativeItems, tape: Tape,
                               rng: inout SeededGenerator) -> Variable {
        switch self {
        case .crossEntropy:
            return tape.softmaxCrossEntropy(encoded, table, targets: targets)
        case .bpr:
            let drawn = negatives.draw(otherThan: targets, items: items, rng: &rng)
            let rows = (0..<Int32(targets.count)).map { $0 }
            let difference = tape.sub(tape.rowDot(encoded, rows: rows, table, rows: targets), tape.rowDot(encoded, rows: rows, table, rows: drawn))
            return tape.affine(tape.mean(tape.logSigmoid(difference)), scale: -1)
        }
    }
}

extension TrainingData {
    /// The sequences of this data: the run's, or (for data built without them, as in
    /// tests) the split's interactions in time order at the default length.
    public var sequenceData: SequenceData {
        if let sequences { return sequences }
        let length = ConfigKeys.byName["MAX_ITEM_LIST_LENGTH"]?.defaultValue.intValue ?? 50
        let log = SequenceLog(dataset.interactions, userCount: userCount, itemCount: itemCount, parts: split.parts)
        return SequenceData(log: log, maxLength: length)
    }
}

/// A sequential model with its item vectors taken once per evaluation pass.
struct PreparedSequenceScores<M: EncodedSequentialModel>: SequenceScorer {
    let model: M
    let items: Matrix
    /// Sequences encoded at a time: an evaluation block holds thousands, and a whole block's
    /// activations (SASRec: 9,496 × 50 positions × 192 for one QKV) went to fresh pages in
    /// memory each pass, where a few hundred sequences' stay in cache.
    static var sequencesPerEncoding: Int { 256 }

    func scores(for rows: ArraySlice<Int32>, of queries: SequenceQueries, into block: inout Matrix, compute: Compute) {
        let leaves = { (tape: Tape) in tape.leaves(model.parameters, trainable: { _ in false }) }
        for start in stride(from: rows.startIndex, to: rows.endIndex, by: Self.sequencesPerEncoding) {
            let part = rows[start..<min(rows.endIndex, start + Self.sequencesPerEncoding)]
            let tape = Tape(compute: compute)
            var rng = SeededGenerator(seed: 0, stream: 0)   // nothing is drawn outside training
            let encoded = model.encode(SequenceBatch(rows: part, of: queries), leaves(tape), tape: tape, training: false, rng: &rng)
            BLAS.gemm(encoded.value, items, transposeB: true, into: &block, firstRow: start - rows.startIndex, compute: compute)
        }
    }

    func scores(for users: ArraySlice<Int32>, into block: inout Matrix, compute: Compute) {
        model.scores(for: users, into: &block, compute: compute)
    }
}
