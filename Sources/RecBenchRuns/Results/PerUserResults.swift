import Foundation
import RecBenchSupport
import RecBenchData
import RecBenchContract
import RecBenchEvaluation
import RecBenchModels

/// Per-user (per-example, under next-item evaluation) metric values of one run, keyed by the original user token. Stored beside the
/// run record (`<record>.peruser.json`) for significance tests, and exported on request as
/// CSV and JSON lines (one row per split, user and metric).
public struct PerUserResults: Codable, Sendable {
    /// Per split ("valid", "test"): user tokens and, per metric key, values aligned with them.
    public struct Split: Codable, Sendable {
        public var users: [String]
        public var values: [String: [Double]]
    }
    public var runKey: String
    public var splits: [String: Split]
    /// The order exported files list the splits in.
    static let splitOrder = ["valid", "test"]

    enum CodingKeys: String, CodingKey { case runKey = "run_key", splits }

    /// Collects the per-row values of `evaluations`, each evaluated on its target, rows named by `rowNames`.
    public init(runKey: String, dataset: Dataset, evaluations: [(result: EvaluationResult, target: EvaluationTarget)]) {
        self.runKey = runKey
        var splits: [String: Split] = [:]
        for (e, target) in evaluations {
            splits[e.part.name] = Split(users: PerUserResults.rowNames(e, target: target, dataset: dataset), values: e.perUser)
        }
        self.splits = splits
    }

    /// The names of `e`'s rows: the user's token, or under next-item evaluation the token and the example's position
    /// in the user's sequence ("196#17").
    static func rowNames(_ e: EvaluationResult, target: EvaluationTarget, dataset: Dataset) -> [String] {
        guard target.evaluationProtocol == .nextItem, let queries = target.queries else { return e.users.map { dataset.userTokens[Int($0)] } }
        let starts = queries.sequences.log.userStarts
        return e.users.map { row in
            let u = Int(queries.users[Int(row)])
            return "\(dataset.userTokens[u])#\(Int(queries.ends[Int(row)]) - starts[u])"
        }
    }

    /// Rows `split,user,metric,value` with a header, in split, user, metric-key order.
    public func csv(keys: [String]) -> String {
        var lines = ["split,user,metric,value"]
        for name in Self.splitOrder {
            guard let s = splits[name] else { continue }
            for (i, user) in s.users.enumerated() {
                for key in keys { if let v = s.values[key]?[i] { lines.append("\(name),\(CSVText.escape(user)),\(key),\(v)") } }
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The same rows as JSON lines.
    public func jsonLines(keys: [String]) throws -> String {
        var lines: [String] = []
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        struct Row: Encodable { let split: String, user: String, metric: String, value: Double }
        for name in Self.splitOrder {
            guard let s = splits[name] else { continue }
            for (i, user) in s.users.enumerated() {
                for key in keys {
                    if let v = s.values[key]?[i] {
                        lines.append(String(decoding: try encoder.encode(Row(split: name, user: user, metric: key, value: v)), as: UTF8.self))
                    }
                }
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

/// CSV quoting for values that contain a delimiter, quote or line break.
public enum CSVText {
    public static func escape(_ s: String) -> String {
        s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" })
            ? "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : s
    }
}
