import Foundation
import RecBenchSupport
import RecBenchData
import RecBenchContract
import RecBenchEvaluation

/// How alike a group's models recommend (`report --overlap`): for each pair of runs on the same split, the mean over the
/// test rows both ranked of |A ∩ B| / |A ∪ B| of their top-K lists, read from the `.lists.csv` files `run --save-lists` writes.
/// Two models of equal accuracy may hit with the same items or with different ones; only the second pair gains from
/// being combined, and a cheap model whose lists equal a costly one's can replace it.
extension Report {
    /// One group's pairwise overlaps.
    public struct Overlap: Sendable {
        public let dataset: String
        public let historyMask: HistoryMask
        public let evaluationProtocol: EvaluationProtocol
        /// The runs with lists, in the table's order.
        public let labels: [String]
        /// jaccard[i][j] (i ≠ j): nil where the two runs were evaluated on different splits.
        public let jaccard: [[Double?]]
        /// The group's runs stored without lists.
        public let withoutLists: [String]
    }

    /// The header of a lists file (`RecommendationLists.csv`).
    static let listsHeader = ["split", "user", "rank", "item", "before", "hit"]

    /// Each ranking group's overlaps (groups with fewer than two runs with lists are left out).
    public func overlaps() throws -> [Overlap] {
        var out: [Overlap] = []
        for g in groups where !g.isLabeled {
            var withLists: [(entry: Entry, lists: [String: Set<String>])] = [], without: [String] = []
            for e in g.entries {
                let path = RunFiles(record: e.path).path(.lists)
                if FileManager.default.fileExists(atPath: path) { withLists.append((e, try Self.testLists(path, k: k))) } else { without.append(e.label) }
            }
            guard withLists.count >= 2 else { continue }
            let n = withLists.count
            var jaccard = [[Double?]](repeating: [Double?](repeating: nil, count: n), count: n)
            for i in 0..<n {
                for j in 0..<n where i != j && withLists[i].entry.result.splitFingerprint == withLists[j].entry.result.splitFingerprint {
                    jaccard[i][j] = Self.meanJaccard(withLists[i].lists, withLists[j].lists)
                }
            }
            out.append(Overlap(dataset: g.dataset, historyMask: g.historyMask, evaluationProtocol: g.evaluationProtocol,
                               labels: withLists.map(\.entry.label), jaccard: jaccard, withoutLists: without))
        }
        return out
    }

    /// Each test row's top `k` items in a lists file.
    static func testLists(_ path: String, k: Int) throws -> [String: Set<String>] {
        var reader = try CSVReader(path: path, delimiter: UInt8(ascii: ","))
        guard let header = try reader.next(), header.fields == listsHeader else {
            throw RecBenchError.file(path, line: 1, "is not a recbench lists file: expected the header \(listsHeader.joined(separator: ","))")
        }
        var lists: [String: Set<String>] = [:]
        while let (fields, line) = try reader.next() {
            guard fields.count == listsHeader.count, let rank = Int(fields[2]), rank >= 1 else {
                throw RecBenchError.file(path, line: line, "expected \(listsHeader.count) fields with a rank from 1: the file is cut short or was edited")
            }
            if fields[0] == "test" && rank <= k { lists[fields[1], default: []].insert(fields[3]) }
        }
        return lists
    }

    /// Mean Jaccard over the rows both ranked (0 when they share none).
    static func meanJaccard(_ a: [String: Set<String>], _ b: [String: Set<String>]) -> Double {
        var sum = 0.0, rows = 0
        for (row, x) in a {
            guard let y = b[row] else { continue }
            let union = x.union(y).count
            sum += union == 0 ? 1 : Double(x.intersection(y).count) / Double(union)
            rows += 1
        }
        return rows == 0 ? 0 : sum / Double(rows)
    }

    /// Markdown matrices, one per group, with the runs left out named under each.
    public func markdown(_ overlaps: [Overlap]) -> String {
        var out: [String] = []
        for o in overlaps {
            let rows = o.evaluationProtocol == .nextItem ? "next-item examples" : "users"
            out.append("### \(o.dataset) · history mask \(o.historyMask.rawValue) · overlap of the test top-\(k) lists "
                       + "(mean Jaccard over the \(rows) both ranked)\n")
            out += Self.matrix(o.labels) { i, j in o.jaccard[i][j].map { String(format: "%.3f", $0) } ?? "other split" }
            if !o.withoutLists.isEmpty {
                out.append("\nWithout lists (run again with `recbench run … --save-lists`): \(o.withoutLists.joined(separator: ", "))")
            }
            out.append("")
        }
        return out.joined(separator: "\n")
    }
}
