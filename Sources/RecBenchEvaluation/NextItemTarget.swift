import Linalg
import RecBenchSupport
import RecBenchData
import RecBenchContract

extension EvaluationTarget {
    /// RecBole's sequential evaluation of `part`: one row per example of the part (every
    /// interaction of the part but a user's first), whose one positive is the example's
    /// item and whose input is the user's items before it. Metrics average over examples.
    ///
    /// RecBole masks nothing here; with `maskSeen` every item the user had before the
    /// example is masked (`history_mask: seen`). Otherwise the history holds only the
    /// example's item when the user had it before, which is all the repeat analyses read,
    /// so no row stores the user's whole past.
    public static func nextItem(_ part: SplitPart, sequences: SequenceData, trainCounts: [Float], maskSeen: Bool) -> EvaluationTarget {
        let log = sequences.log
        let examples = log.examples(of: part)
        var seen = [Int32](repeating: -1, count: log.itemCount)   // the last user who had the item
        var historyRows: [Int32] = [], historyItems: [Int32] = []
        var repeats = [Int32](repeating: 0, count: examples.count)
        var row = 0
        for u in 0..<log.userCount {
            for p in log.userStarts[u]..<log.userStarts[u + 1] {
                let item = Int(log.items[p])
                if row < examples.count && Int(examples[row]) == p {
                    let isRepeat = seen[item] == Int32(u)
                    if isRepeat { repeats[row] = 1 }
                    if maskSeen {
                        for q in log.userStarts[u]..<p {
                            historyRows.append(Int32(row)); historyItems.append(log.items[q])
                        }
                    } else if isRepeat {
                        historyRows.append(Int32(row)); historyItems.append(Int32(item))
                    }
                    row += 1
                }
                seen[item] = Int32(u)
            }
        }
        let rows = examples.count
        var target = EvaluationTarget(
            part: part,
            positives: SparseMatrix(rows: rows, columns: log.itemCount, rowIndices: (0..<Int32(rows)).map { $0 },
                                    columnIndices: examples.map { log.items[Int($0)] }),
            history: SparseMatrix(rows: rows, columns: log.itemCount, rowIndices: historyRows, columnIndices: historyItems).binarized(),
            users: (0..<Int32(rows)).map { $0 }, itemCount: log.itemCount, trainCounts: trainCounts, repeatCounts: repeats)
        target.evaluationProtocol = .nextItem
        target.queries = SequenceQueries(sequences: sequences, users: examples.map { log.users[Int($0)] }, ends: examples)
        return target
    }
}
