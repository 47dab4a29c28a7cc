import Linalg
import RecBenchSupport
import RecBenchData

/// How an evaluation's rows are formed, recorded with every result.
public enum EvaluationProtocol: String, Sendable, Codable, CaseIterable {
    /// One row per user: the positives are all the user's items of the split, earlier items
    /// are masked by `history_mask` (general and context-aware models, RecBole's).
    case user
    /// One row per next-item example (RecBole's sequential evaluation): the user's items
    /// before the example predict its one item; metrics are averaged over examples.
    case nextItem = "next-item"
}

/// The sequences and their settings a sequential model reads.
public struct SequenceData: Sendable {
    /// Every user's items in time order, with parts.
    public let log: SequenceLog
    /// `MAX_ITEM_LIST_LENGTH`: the input holds at most this many latest items.
    public let maxLength: Int

    /// The train examples: positions of train items that have an earlier item.
    public let trainExamples: [Int32]

    /// Sequences over `log`, truncated to `maxLength`.
    public init(log: SequenceLog, maxLength: Int) {
        self.log = log; self.maxLength = maxLength
        trainExamples = log.examples(of: .train)
    }

    /// The mean input length of the train examples (what a model that skips padding computes per example).
    public var meanTrainInputLength: Double {
        let total = trainExamples.reduce(0) { sum, p in
            sum + log.window(of: Int(log.users[Int(p)]), endingAt: Int(p), maxLength: maxLength).count
        }
        return trainExamples.isEmpty ? 0 : Double(total) / Double(trainExamples.count)
    }
}

/// The inputs of an evaluation's rows: row `r` is user `users[r]`'s sequence up to (not
/// including) position `ends[r]` of the log.
public struct SequenceQueries: Sendable {
    public let sequences: SequenceData
    public let users: [Int32]
    public let ends: [Int32]

    /// Queries over `sequences`.
    public init(sequences: SequenceData, users: [Int32], ends: [Int32]) {
        precondition(users.count == ends.count, "SequenceQueries: users and ends differ in length")
        self.sequences = sequences; self.users = users; self.ends = ends
    }

    /// Row `r`'s input positions (at most `maxLength`, the latest).
    public func window(_ r: Int) -> Range<Int> {
        sequences.log.window(of: Int(users[r]), endingAt: Int(ends[r]), maxLength: sequences.maxLength)
    }

    /// A scorer of these rows: a sequence scorer reads each row's sequence; any other scorer
    /// scores the row's user (a general model under the next-item protocol).
    public func scorer(for base: any Scorer) -> any Scorer {
        if let sequential = base as? any SequenceScorer { return QueryScorer(base: sequential, queries: self) }
        return UserRowScorer(base: base, users: users)
    }
}

/// A scorer that reads sequences: scores every item for each listed query row.
public protocol SequenceScorer: Scorer {
    /// Writes the scores of every item for the listed rows of `queries` into the rows of
    /// `block` (`rows.count × itemCount`).
    func scores(for rows: ArraySlice<Int32>, of queries: SequenceQueries, into block: inout Matrix, compute: Compute)
    /// The same scorer with its shared work done (default: itself).
    func preparedSequenceScorer(compute: Compute) -> any SequenceScorer
}

extension SequenceScorer {
    public func preparedSequenceScorer(compute: Compute) -> any SequenceScorer { self }
}

/// A sequence scorer that decides per row between re-buying an item of the sequence and
/// exploring the catalogue (RepeatNet), and can say how likely it found a repeat.
public protocol RepeatModeSequenceScorer: SequenceScorer {
    /// Scores as `scores(for:of:into:compute:)` does, and writes each row's P(repeat), from
    /// the same forward pass, into `repeatModes` (`rows.count` entries).
    func scores(for rows: ArraySlice<Int32>, of queries: SequenceQueries, into block: inout Matrix,
                repeatModes: UnsafeMutableBufferPointer<Float>, compute: Compute)
}

/// A scorer whose rows may carry a repeat-mode probability.
public protocol RepeatModeReporting: Scorer {
    /// Whether the rows carry one (false: the model has no such mode).
    var reportsRepeatModes: Bool { get }
    /// Scores the rows and, when `reportsRepeatModes`, writes their P(repeat) into `repeatModes`.
    func scores(for rows: ArraySlice<Int32>, into block: inout Matrix, repeatModes: UnsafeMutableBufferPointer<Float>, compute: Compute)
}

/// Rows are queries; the model reads their sequences.
struct QueryScorer: RepeatModeReporting {
    let base: any SequenceScorer
    let queries: SequenceQueries

    var reportsRepeatModes: Bool { base is any RepeatModeSequenceScorer }

    func scores(for rows: ArraySlice<Int32>, into block: inout Matrix, repeatModes: UnsafeMutableBufferPointer<Float>, compute: Compute) {
        guard let reporting = base as? any RepeatModeSequenceScorer else { return scores(for: rows, into: &block, compute: compute) }
        reporting.scores(for: rows, of: queries, into: &block, repeatModes: repeatModes, compute: compute)
    }

    func scores(for users: ArraySlice<Int32>, into block: inout Matrix, compute: Compute) {
        base.scores(for: users, of: queries, into: &block, compute: compute)
    }

    func preparedForScoring(compute: Compute) -> any Scorer {
        QueryScorer(base: base.preparedSequenceScorer(compute: compute), queries: queries)
    }
}

/// Rows are examples of users; the model scores the users.
struct UserRowScorer: Scorer {
    let base: any Scorer
    let users: [Int32]

    func scores(for rows: ArraySlice<Int32>, into block: inout Matrix, compute: Compute) {
        base.scores(for: ArraySlice(rows.map { users[Int($0)] }), into: &block, compute: compute)
    }

    func preparedForScoring(compute: Compute) -> any Scorer {
        UserRowScorer(base: base.preparedForScoring(compute: compute), users: users)
    }
}
