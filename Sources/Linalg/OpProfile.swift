import Foundation


/// Where training time goes, per op: a tape with a profile charges each recorded op the time
/// since the previous op was recorded (its forward, with any glue that prepared its inputs)
/// and each pullback its own time; the trainer charges its phases (optimizer step,
/// validation, …) by name. One profile per run, shared by its tapes, never process-wide.
public final class OpProfile: @unchecked Sendable {   // `entries` guarded by `lock`
    private let lock = NSLock()
    private var entries: [String: OpProfileEntry] = [:]

    /// An empty profile.
    public init() {}

    /// Adds one call of `op` that took `forward` and `backward` seconds.
    public func charge(_ op: String, forward: Double = 0, backward: Double = 0, calls: Int = 1) {
        lock.lock(); defer { lock.unlock() }
        entries[op, default: OpProfileEntry(op: op)].add(forward: forward, backward: backward, calls: calls)
    }

    /// Runs `body` and charges its time to `phase` as forward time.
    @discardableResult
    public func time<T>(_ phase: String, _ body: () throws -> T) rethrows -> T {
        let start = ContinuousClock.now
        defer { charge(phase, forward: (ContinuousClock.now - start).seconds) }
        return try body()
    }

    /// The entries, most time first.
    public var summary: [OpProfileEntry] {
        lock.lock(); defer { lock.unlock() }
        return entries.values.sorted { ($0.totalSeconds, $1.op) > ($1.totalSeconds, $0.op) }
    }

    /// An op's name from a `#function` string: "linear(_:_:_:)" → "linear".
    package static func opName(_ function: String) -> String {
        String(function.prefix { $0 != "(" })
    }
}

/// One op's or phase's share of a profiled run.
public struct OpProfileEntry: Sendable, Codable, Equatable {
    /// The op (a tape method's name) or trainer phase.
    public let op: String
    /// How often it ran.
    public var calls = 0
    /// Seconds in its forward (for a phase: all of it) and in its pullbacks.
    public var forwardSeconds = 0.0, backwardSeconds = 0.0

    /// An entry with nothing charged yet.
    public init(op: String) { self.op = op }

    /// Forward and backward together.
    public var totalSeconds: Double { forwardSeconds + backwardSeconds }

    mutating func add(forward: Double, backward: Double, calls: Int) {
        forwardSeconds += forward; backwardSeconds += backward; self.calls += calls
    }

    enum CodingKeys: String, CodingKey {
        case op, calls, forwardSeconds = "forward_seconds", backwardSeconds = "backward_seconds"
    }
}
