import RecBenchSupport

/// One of N deterministic parts of a sweep or a search, for spreading it over machines (a
/// Slurm array task, a Ray task). A sweep plan's k-th run (0-based, in plan order, done runs
/// included), or a search's trial k, belongs to shard 1 + k mod N: the partition depends only on the plan, not on what is
/// already done, so resuming or resubmitting a shard redoes nothing, and the shards' run
/// counts differ by at most one.
public struct Shard: Sendable, Equatable, CustomStringConvertible {
    /// 1-based index of this shard.
    public let index: Int
    /// Number of shards.
    public let count: Int

    /// Parses `i/N` with 1 ≤ i ≤ N.
    public init(parsing text: String) throws {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let i = Int(parts[0]), let n = Int(parts[1]), n >= 1, (1...n).contains(i) else {
            throw RecBenchError(field: "--shard", "expected i/N with 1 ≤ i ≤ N (shard i of N), got '\(text)'")
        }
        index = i; count = n
    }

    /// The shard (1…count) of the plan's run at `position` (0-based).
    public static func of(position: Int, count: Int) -> Int { 1 + position % count }

    public var description: String { "\(index)/\(count)" }
}
