import RecBenchSupport
import RecBenchData
import RecBenchContract
/// A metric at a cutoff, written `ndcg@10`: the one place such keys are printed and parsed
/// (results, tables and `valid_metric` all use this spelling).
public struct MetricKey: Hashable, Sendable, CustomStringConvertible {
    /// The metric's name, lower case (`ndcg`, `users_with_hit`).
    public let name: String
    /// The cutoff K.
    public let k: Int

    /// `name` at cutoff `k` (the name is lower-cased).
    public init(_ name: String, k: Int) {
        self.name = name.lowercased()
        self.k = k
    }

    /// Parses `NAME@K` (any case); nil when the text has no positive integer cutoff.
    public init?(parsing text: String) {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, let k = Int(parts[1]), k > 0 else { return nil }
        self.init(String(parts[0]), k: k)
    }

    /// `name@k`.
    public var description: String { "\(name)@\(k)" }
}
